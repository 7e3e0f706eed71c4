"""What ``finops run`` adds for the Argo CD UI extension, each step returning lines to print:
``load_history`` (past days for the 30-day chart and an anomaly baseline), ``measure_demo_apps``
(cost records, sync trends and a cloud estimate for the demo applications), ``demo_bill`` (a
generated FOCUS bill reconciled) and ``ui_host`` (the page standing in for Argo CD's host,
``sandbox/argocd_host``). The first sync of ``argocd/payments-gateway`` lacks the
``gateway-canary`` Deployment (``FIRST_SYNC_WITHOUT``), so its trend is not +0.00.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from datetime import time as day_time
from typing import Any

import httpx

from infra.postgres import connect
from sandbox.localstack import ROOT, Stack

DEMO_SYNCS = (("argocd", "web"), ("argocd", "payments-gateway"), ("argocd", "catalog"), ("team-apps", "web"))
FIRST_SYNC_WITHOUT = {("argocd", "payments-gateway"): ("Deployment", "gateway-canary")}
DEMO_POLICY = ROOT / "sandbox" / "demo" / "policy.yaml"
DEMO_ESTIMATE = ROOT / "sandbox" / "demo" / "infracost.json"
ESTIMATE_APP = ("argocd", "web")
GATE = "argocd:cost-gate"
HISTORY_DAYS = 9  # whole days loaded before the pinged hours: 7 make an anomaly baseline
APPLICATION = "{kube}/apis/argoproj.io/v1alpha1/namespaces/{namespace}/applications/{name}"


def cost_api_env(stack: Stack) -> dict[str, str]:
    """``cost_api``'s settings in the demo: the chargeback policy, and CI's token for estimates."""
    return {"POLICY_PATH": str(DEMO_POLICY), "CI_TOKEN": stack.ping_token}


def post(stack: Stack, target: str, body: dict[str, Any], timeout: float = 600) -> tuple[int, dict[str, Any]]:
    """POST ``body`` to a served function with the ping token: the status and the JSON body ({} if none)."""
    response = httpx.post(
        stack.function_urls[target], json=body, headers={"Authorization": f"Bearer {stack.ping_token}"}, timeout=timeout
    )
    payload = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    return response.status_code, dict(payload)


def _ping(stack: Stack, body: dict[str, Any]) -> dict[str, Any]:
    status, payload = post(stack, "collect_allocations", body)
    if status >= 300:
        raise httpx.HTTPError(f"HTTP {status}: {payload.get('error')}")
    return payload


def load_history(stack: Stack, until: datetime) -> str:
    """Load the ``HISTORY_DAYS`` whole UTC days before ``until``'s day, up to ``until`` (the first pinged
    hour), as ``finops collect`` does; one line to print."""
    start = datetime.combine(until.date() - timedelta(days=HISTORY_DAYS), day_time(0), tzinfo=UTC)
    began, written = time.monotonic(), 0
    try:
        for _ in range(20):  # each invocation is bounded by COLLECT_BUDGET_SECONDS; the next continues
            payload = _ping(stack, {"from": start.isoformat(), "to": until.isoformat()})
            written += int(payload.get("hours_written") or 0)
            if not payload.get("remaining"):
                break
    except httpx.HTTPError as exc:
        return f"  history load failed: {type(exc).__name__}: {exc}"
    return f"  {start:%Y-%m-%d} to {until:%Y-%m-%dT%H:%MZ}: {written} hours loaded in {time.monotonic() - began:.1f} s"


def webhook_body(
    application: dict[str, Any], revision: str, *, without: tuple[str, str] | None = None
) -> dict[str, Any]:
    """The body the Argo CD Notifications template (knative/argocd/notifications.yaml) sends;
    ``without``: a (kind, name) the sync did not deploy yet."""
    spec, status = application.get("spec") or {}, application.get("status") or {}
    destination = spec.get("destination") or {}
    resources = [r for r in status.get("resources") or [] if (r.get("kind"), r.get("name")) != without]
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
        "resources": resources,
    }


def _sync_records(database_url: str, cluster: str) -> dict[tuple[str, str], int]:
    db = connect(database_url)
    try:
        rows = db.fetch_all("demo_sync_records", cluster=cluster)
    finally:
        db.close()
    return {(r["app_namespace"], r["app_name"]): int(r["n"]) for r in rows}


def _wait_for_records(stack: Stack, wanted: int, deadline: float) -> bool:
    while time.monotonic() < deadline:
        counts = _sync_records(stack.database_url, stack.cluster)
        if all(counts.get(app, 0) >= wanted for app in DEMO_SYNCS):
            return True
        time.sleep(0.5)
    return False


def measure_demo_apps(stack: Stack, hour: datetime) -> list[str]:
    """Backfill, two syncs of each ``DEMO_SYNCS`` application, the daily history (a ping of
    ``hour``, the last pinged one: a run that crosses an hour collects no hour it did not ping),
    the cloud estimate; lines to print. A failure is a line too: the demo's records are for the UI
    extension, never a reason to stop the stack."""
    try:
        lines = _measure(stack)
        lines += _record_days(stack, hour)
        lines += _push_estimate(stack)
        lines += _show(stack)
    except httpx.HTTPError as exc:
        return [f"  could not measure the demo applications: {type(exc).__name__}: {exc}"]
    return lines


def _measure(stack: Stack) -> list[str]:
    for _ in range(10):  # until nothing remains, as the install Job does
        status, result = post(stack, "backfill", {}, timeout=300)
        if status >= 300 or not result.get("remaining"):
            break
    lines = [f"  backfill: {result.get('outcome')}, {result.get('measured', '-')} application(s) measured at install"]
    deadline = time.monotonic() + 120
    for n, revision in enumerate(("demo-sync-1", "demo-sync-2"), start=1):
        for namespace, name in DEMO_SYNCS:
            app = httpx.get(APPLICATION.format(kube=stack.kube_url, namespace=namespace, name=name), timeout=10)
            app.raise_for_status()
            without = FIRST_SYNC_WITHOUT.get((namespace, name)) if n == 1 else None
            status, payload = post(stack, "on_sync", webhook_body(app.json(), revision, without=without), timeout=30)
            if status >= 300:
                raise httpx.HTTPError(f"on_sync of {namespace}/{name}: HTTP {status}: {payload.get('error')}")
        if not _wait_for_records(stack, n, deadline):
            lines.append(f"  sync {n} of {', '.join(f'{a}/{b}' for a, b in DEMO_SYNCS)}: not all measured in time")
            return lines
    lines.append(f"  two syncs measured for {', '.join(f'{a}/{b}' for a, b in DEMO_SYNCS)}")
    for (namespace, name), (kind, resource) in FIRST_SYNC_WITHOUT.items():
        lines.append(
            f"  ({namespace}/{name}: demo-sync-1 deployed it without its {kind} {resource}; demo-sync-2 added it)"
        )
    return lines


def _record_days(stack: Stack, hour: datetime) -> list[str]:
    payload = _ping(stack, {"scheduledTime": hour.isoformat()})
    return [
        f"  daily history: {payload.get('daily_rows_written', 0)} days recorded for "
        f"{payload.get('daily_applications', 0)} application(s)"
    ]


def _push_estimate(stack: Stack) -> list[str]:
    namespace, name = ESTIMATE_APP
    response = httpx.post(
        f"{stack.function_urls['cost_api']}/api/v1/apps/{namespace}/{name}/cloud-estimate",
        content=DEMO_ESTIMATE.read_bytes(),
        headers={"Authorization": f"Bearer {stack.ping_token}", "Content-Type": "application/json"},
        timeout=30,
    )
    if response.status_code != 200:
        return [f"  cloud estimate of {namespace}/{name}: HTTP {response.status_code}: {response.text[:200]}"]
    body = response.json()
    monthly = (body.get("monthly") or {}).get("amount")
    return [f"  cloud estimate of {namespace}/{name} pushed as CI would: {monthly} {body.get('currency')} a month"]


def _read(stack: Stack, path: str, app: str) -> dict[str, Any]:
    response = httpx.get(
        f"{stack.function_urls['cost_api']}/api/v1{path}",
        headers={"X-Finops-Proxy-Token": stack.ping_token, "Argocd-Application-Name": app},
        timeout=30,
    )
    response.raise_for_status()
    return dict(response.json())


def _show(stack: Stack) -> list[str]:
    lines = []
    for namespace, name in FIRST_SYNC_WITHOUT:
        trend = _read(stack, f"/apps/{namespace}/{name}/trend", f"{namespace}:{name}")
        change = str((trend.get("change") or {}).get("amount"))
        signed = change if change.startswith("-") else f"+{change}"
        currency = trend.get("currency") or "(currency unknown: no stored rows of its namespace)"
        lines.append(f"  trend of {namespace}/{name}: {signed} {currency} a month since demo-sync-1")
    ranking = _read(stack, "/anomalies?limit=5", GATE)
    lines.append(
        f"  anomaly scores (today against the recorded days; anomalous from {ranking['threshold']}): "
        f"{ranking['anomalous']} anomalous of {ranking['scored']} scored"
    )
    for entry in ranking["applications"]:
        anomaly = entry["anomaly"]
        shown = anomaly["reason"] if anomaly["score"] is None else f"score {anomaly['score']}"
        flag = " (anomalous)" if anomaly["anomalous"] else ""
        lines.append(f"    {entry['app']['namespace']}/{entry['app']['name']}: {shown}{flag}")
    return lines


def demo_bill(stack: Stack, until: datetime) -> list[str]:
    """The loaded days billed by a generated FOCUS bill (``sandbox.demo_bill``), imported, and the
    month's chargeback on both bases as ``cost_api`` answers it; lines to print. The last loaded
    day is left out of the bill (it arrives late). A failure is a line, as for the other steps."""
    import tempfile
    from pathlib import Path

    from infra.objectstore import ObjectStore
    from sandbox.demo_bill import write_bill
    from usecases.reports.cloud import import_cloud_costs
    from usecases.reports.formats import load_policy

    currency = load_policy(str(DEMO_POLICY)).currency
    first = until.date() - timedelta(days=HISTORY_DAYS)
    billed_until = until.date() - timedelta(days=1)
    db = connect(stack.database_url, max_size=1)
    try:  # the bill's folder goes once it is imported: a run leaves nothing in /tmp
        with tempfile.TemporaryDirectory(prefix="finops-bill-") as folder:
            path = Path(folder) / "demo-bill.focus.csv"
            write_bill(db, stack.cluster, first, billed_until, currency, path)
            imported = import_cloud_costs(db, str(path), ObjectStore())
        month = f"{first:%Y-%m}"
        billed = _read(stack, f"/chargeback?month={month}&basis=billed", GATE)
        estimate = _read(stack, f"/chargeback?month={month}&basis=estimate", GATE)
    except (httpx.HTTPError, OSError) as exc:
        return [f"  could not reconcile the demo bill: {type(exc).__name__}: {exc}"]
    finally:
        db.close()
    cluster = billed["reconciliation"]["clusters"][0]
    lines = [
        f"  cloud bill: {imported.rows} FOCUS lines from a generated {path.name} "
        f"({first} to {billed_until}; the last day is late)",
        f"  chargeback {month}: {estimate['total']} {currency} on estimate, {billed['total']} billed; "
        f"unreconciled {cluster['unreconciled']}; billed days {_days(cluster['billed_days'])}, "
        f"on estimate {_days(cluster['estimated_days'])}",
    ]
    for item in cluster["resources"]:
        if item["kind"] == "node":
            lines.append(f"    {item['name']}: estimate {item['estimate']}, billed {item['billed']} ({item['status']})")
    return lines


def _days(ranges: list[dict[str, str]]) -> str:
    return ", ".join(f"{r['start']}..{r['end']}" for r in ranges) or "none"


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
