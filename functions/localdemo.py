"""What ``finops run`` adds for the Argo CD UI extension: cost records for the demo applications,
and the page standing in for Argo CD's host (``sandbox/argocd_host``).

The tab shows an application's latest record and its change since the previous *sync* record, so
the demo needs both: ``backfill`` measures every local application once ("measured at install"),
then two webhooks per application in ``DEMO_SYNCS`` (as Argo CD Notifications sends them, built
from the sandbox's Application objects) give each a sync record and a trend. The daily chart
reads the hours ``collect_allocations`` stored (``finops run --hours N``: N hours of history).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx

from functions.localstack import ROOT, Stack
from infra.postgres import connect

DEMO_SYNCS = (("argocd", "web"), ("argocd", "payments-gateway"), ("argocd", "catalog"), ("team-apps", "web"))
DEMO_POLICY = ROOT / "sandbox" / "demo" / "policy.yaml"
APPLICATION = "{kube}/apis/argoproj.io/v1alpha1/namespaces/{namespace}/applications/{name}"


def backfill(url: str, token: str, invocations: int = 10) -> dict[str, Any]:
    """Invoke ``backfill`` until nothing remains (as the install Job does); its last answer."""
    payload: dict[str, Any] = {}
    for _ in range(invocations):
        response = httpx.post(url, json={}, headers={"Authorization": f"Bearer {token}"}, timeout=300)
        payload = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        if response.status_code >= 300 or not payload.get("remaining"):
            break
    return payload


def webhook_body(application: dict[str, Any], revision: str) -> dict[str, Any]:
    """The body the Argo CD Notifications template (knative/argocd/notifications.yaml) sends."""
    spec, status = application.get("spec") or {}, application.get("status") or {}
    destination = spec.get("destination") or {}
    return {
        "app": application["metadata"]["name"],
        "appNamespace": application["metadata"]["namespace"],
        "project": spec.get("project", "default"),
        "destinationNamespace": destination.get("namespace"),
        "destinationServer": destination.get("server"),
        "destinationName": destination.get("name"),
        "syncResult": "Succeeded",
        "revision": revision,
        "revisions": None,
        "finishedAt": datetime.now(UTC).isoformat(),
        "resources": status.get("resources") or [],
    }


def _sync_records(database_url: str) -> dict[tuple[str, str], int]:
    db = connect(database_url)
    try:
        with db.connection() as conn:
            rows = conn.execute(
                "SELECT app_namespace, app_name, count(*) AS n FROM cost_actuals"
                " WHERE measured_on = 'sync' GROUP BY app_namespace, app_name"
            ).fetchall()
    finally:
        db.close()
    return {(r["app_namespace"], r["app_name"]): int(r["n"]) for r in rows}


def _wait_for_records(database_url: str, wanted: int, deadline: float) -> bool:
    while time.monotonic() < deadline:
        counts = _sync_records(database_url)
        if all(counts.get(app, 0) >= wanted for app in DEMO_SYNCS):
            return True
        time.sleep(0.5)
    return False


def measure_demo_apps(stack: Stack, token: str, timeout: float = 120.0) -> list[str]:
    """Backfill, then two syncs of each ``DEMO_SYNCS`` application; lines to print. A failure is a
    line too: the demo's records are for the UI extension, never a reason to stop the stack."""
    try:
        return _measure(stack, token, timeout)
    except httpx.HTTPError as exc:
        return [f"  could not measure the demo applications: {type(exc).__name__}: {exc}"]


def _measure(stack: Stack, token: str, timeout: float) -> list[str]:
    lines = []
    result = backfill(stack.function_urls["backfill"], stack.ping_token)
    lines.append(
        f"  backfill: {result.get('outcome')}, {result.get('measured', '-')} application(s) measured at install"
    )
    deadline = time.monotonic() + timeout
    for n, revision in enumerate(("demo-sync-1", "demo-sync-2"), start=1):
        for namespace, name in DEMO_SYNCS:
            app = httpx.get(APPLICATION.format(kube=stack.kube_url, namespace=namespace, name=name), timeout=10)
            app.raise_for_status()
            httpx.post(
                stack.function_urls["on_sync"],
                json=webhook_body(app.json(), revision),
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            ).raise_for_status()
        if not _wait_for_records(stack.database_url, n, deadline):
            lines.append(f"  sync {n} of {', '.join(f'{a}/{b}' for a, b in DEMO_SYNCS)}: not all measured in time")
            return lines
    lines.append(f"  two syncs measured for {', '.join(f'{a}/{b}' for a, b in DEMO_SYNCS)}")
    return lines


@contextlib.contextmanager
def ui_host(stack: Stack) -> Iterator[str | None]:
    """The Argo CD stand-in page proxying to the served ``cost_api``; yields its URL, or None (and
    prints why) when React's files are not installed (``make ui``)."""
    from sandbox.argocd_host import ReactMissing, serve

    try:
        host = serve(
            kube_url=stack.kube_url, cost_api_url=stack.function_urls["cost_api"], proxy_token=stack.ping_token
        )
    except ReactMissing as exc:
        print(f"  Argo CD UI extension: not available: {exc}")
        yield None
        return
    with host:
        yield host.url
