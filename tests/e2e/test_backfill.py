"""We test these aspects of ``backfill``, served by functions-framework over HTTP:

- every local Application without a record is measured once (``measured_on = 'install'``),
  remote ones, ones without a valid destination, and ones with a record are skipped;
- two replicas at once: one answers 503 with ``Retry-After`` at once (no request thread waits
  for the other), the caller calls again, and OpenCost is asked once per namespace;
- a sync record is never overwritten by the backfill's conditional insert;
- a namespace without data is retried after 1, 2, 4, 8 minutes across invocations, then given up;
- ``PRUNE_REMOTE_COST=true`` deletes records of applications now deploying elsewhere;
- ``BACKFILL_CONCURRENCY=0`` disables it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import TOKEN

BACKFILL_BUDGET = 240  # BACKFILL_BUDGET_SECONDS (the default) of the served backfill
LOCAL_APPS = {("argocd", "web"), ("argocd", "cart"), ("team-apps", "web"), ("argocd", "fresh"), ("argocd", "ghost")}


@pytest.fixture(scope="session")
def backfill_url(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "backfill", BACKFILL_CONCURRENCY="2", OPENCOST_RETRIES="0") as url:
        yield url


def invoke(url: str, busy: list[float] | None = None) -> dict[str, Any]:
    """As the install Job: a 503 (another replica runs it) is called again after its Retry-After."""
    deadline = time.monotonic() + BACKFILL_BUDGET
    while True:
        response = httpx.post(url, json={}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
        if response.status_code != 503 or busy is None:
            break
        busy.append(float(response.headers["Retry-After"]))
        assert time.monotonic() < deadline, f"still busy after {BACKFILL_BUDGET} s: {response.text}"
        time.sleep(busy[-1])
    assert response.status_code == 200, response.text
    return dict(response.json())


def records(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute("SELECT * FROM cost_actuals ORDER BY id").fetchall()


def cost_queries(opencost: sandbox_opencost.OpenCostServer, since: int) -> Counter[str]:
    """Namespace cost queries (aggregate=namespace on /allocation) per filtered namespace."""
    return Counter(
        q.get("filter", "")
        for q in opencost.requests[since:]
        if q.get("aggregate") == "namespace" and "filter" in q and "summary" not in q.get("_path", "")
    )


def test_two_replicas_measure_each_namespace_once(
    backfill_url: str, db: Database, opencost: sandbox_opencost.OpenCostServer
) -> None:
    before = len(opencost.requests)
    answers: list[dict[str, Any]] = []
    busy: list[float] = []
    threads = [threading.Thread(target=lambda: answers.append(invoke(backfill_url, busy))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stored = {(r["app_namespace"], r["app_name"]) for r in records(db)}
    # ghost deploys to a namespace OpenCost has no data for: retried later, not stored yet.
    assert stored == LOCAL_APPS - {("argocd", "ghost")}
    assert {r["measured_on"] for r in records(db)} == {"install"}
    assert sorted(a["measured"] for a in answers) == [0, 4]
    queries = cost_queries(opencost, before)
    assert queries and max(queries.values()) == 1, queries  # once per namespace, both replicas together
    # Apps sharing a namespace got their own shares from the one measurement.
    by_app = {(r["app_namespace"], r["app_name"]): r for r in records(db)}
    web, cart = by_app[("argocd", "web")], by_app[("argocd", "cart")]
    assert web["cost_micros"] == cart["cost_micros"] and set(web["share"]["pods"]).isdisjoint(cart["share"]["pods"])


def test_a_replica_that_finds_the_backfill_running_answers_503_at_once(backfill_url: str, db: Database) -> None:
    from infra.postgres.leases import Lease
    from usecases.backfill import BUSY_RETRY_SECONDS

    other = Lease(db, "backfill:test", 60)  # another replica holds it
    assert other.claim()
    try:
        started = time.monotonic()
        response = httpx.post(backfill_url, json={}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"] == str(BUSY_RETRY_SECONDS) and response.json()["retry"] is True
        assert time.monotonic() - started < BACKFILL_BUDGET  # answered, not waited for the budget
    finally:
        other.release()
    assert invoke(backfill_url)["measured"] == 4


def test_a_sync_record_is_never_overwritten_and_skips_count(backfill_url: str, db: Database) -> None:
    from finops.applications import parse_application
    from finops.measurement import Figures
    from usecases.appcost.measure import Measurement
    from usecases.backfill import _store

    invoke(backfill_url)
    (web,) = [r for r in records(db) if (r["app_namespace"], r["app_name"]) == ("argocd", "web")]
    with db.connection() as conn:  # a sync lands: the install record is superseded by a sync one
        conn.execute("UPDATE cost_actuals SET measured_on = 'sync' WHERE id = %s", (web["id"],))
    app = parse_application(
        {"metadata": {"namespace": "argocd", "name": "web"}, "spec": {"destination": {"namespace": "shop"}}}
    )
    now = datetime.now(UTC)
    late = Measurement("shop", now, now, now, web["measured_hours"], Figures(1, {}, 0, None, None), False, None, None)
    assert _store(db, "test", app, late) == 0  # the backfill's late save does not land
    assert [r["measured_on"] for r in records(db) if r["app_name"] == "web" and r["app_namespace"] == "argocd"] == [
        "sync"
    ]
    second = invoke(backfill_url)
    assert second["measured"] == 0 and second["skipped"] >= 6


def test_a_namespace_without_data_is_retried_then_given_up(backfill_url: str, db: Database) -> None:
    first = invoke(backfill_url)  # ghost-town has no OpenCost data
    assert first["remaining"] == 1 and 55 <= first["retry_after_seconds"] <= 61
    delays = []
    for _ in range(4):
        with db.connection() as conn:
            row = conn.execute(
                "SELECT attempts, next_attempt_at - now() AS wait FROM backfill_namespaces "
                "WHERE namespace = 'ghost-town'"
            ).fetchone()
            assert row is not None
            delays.append(round(row["wait"].total_seconds() / 60))
            conn.execute("UPDATE backfill_namespaces SET next_attempt_at = now() WHERE namespace = 'ghost-town'")
        answer = invoke(backfill_url)
    assert delays == [1, 2, 4, 8]
    assert (answer["remaining"], answer["failed"], answer["outcome"]) == (0, 1, "partial")


def test_prune_remote_cost_and_disabled_backfill(stack: Stack, db: Database, kube: sandbox_kube.KubeServer) -> None:
    with db.connection() as conn:  # a record from when argocd/faraway still deployed here
        conn.execute(
            "INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,"
            " measured_at, window_start, window_end, measured_hours, cost_micros, monthly_micros, breakdown)"
            " VALUES ('test', 'argocd', 'faraway', 'shop', 'sync', 'namespace', now(), now(), now(), 24, 1, 30, '{}')"
        )
    with serve_function(stack, "backfill", PRUNE_REMOTE_COST="true") as url:
        assert invoke(url)["pruned"] == 1
    assert [r for r in records(db) if r["app_name"] == "faraway"] == []
    with serve_function(stack, "backfill", BACKFILL_CONCURRENCY="0") as url:
        answer = invoke(url)
    assert answer["outcome"] == "skipped" and "disabled" in answer["reason"]
