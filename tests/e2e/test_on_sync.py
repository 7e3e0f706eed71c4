"""We test these aspects of ``on_sync``, served by functions-framework over HTTP against the
sandbox OpenCost and Kubernetes API and a real PostgreSQL:

- a sync is accepted with 202, persisted, then measured in a request of its own: the monthly
  figure is projected from the period OpenCost measured (a young namespace is not a full day);
- the application's share is its own pods; an app owning every pod of its namespace has the
  namespace's cost; two apps named ``web`` in different app namespaces never mix;
- replayed and concurrent identical webhooks give one event and one record;
- served by two worker processes as in the Service (``WORKERS=2``), a burst of distinct and
  identical webhooks gives each event once, measured once, every run recorded;
- skips (not Succeeded, remote cluster, gate app) answer 200 and store nothing;
- a 21st concurrent measurement gets 429;
- a measurement lost after the 202 (dead sink, killed pod) is re-driven by the hourly run, which
  sends it to on-sync as an event (measured there, not in the hourly run), stored exactly once;
- a measurement delivered before the settle time is answered 503 with ``Retry-After`` (no thread
  sleeps) and measured on a later delivery.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from infra.postgres import Database
from sandbox import opencost as sandbox_opencost
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import HOOK_TOKEN, TOKEN


def hook(app: str = "web", app_ns: str = "argocd", dest: str = "shop", **extra: Any) -> dict[str, Any]:
    resources = {
        ("argocd", "web"): [
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"}
        ],
        ("argocd", "cart"): [
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "cart"}
        ],
        ("team-apps", "web"): [
            {"group": "apps", "version": "v1", "kind": "StatefulSet", "namespace": "search", "name": "index"}
        ],
        ("argocd", "fresh"): [
            {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "young", "name": "fresh"}
        ],
    }.get((app_ns, app), [])
    body = {
        "app": app,
        "appNamespace": app_ns,
        "project": "default",
        "destinationNamespace": dest,
        "destinationServer": "https://kubernetes.default.svc",
        "destinationName": "",
        "syncResult": "Succeeded",
        "revision": "abc123",
        "revisions": None,
        "finishedAt": "2026-11-29T10:00:00Z",
        "resources": resources,
    }
    body.update(extra)
    return body


def post(url: str, body: object, token: str = HOOK_TOKEN) -> httpx.Response:
    return httpx.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def records(db: Database, app_ns: str | None = None, app: str | None = None) -> list[dict[str, Any]]:
    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM cost_actuals ORDER BY id").fetchall()
    return [
        r for r in rows if (app_ns is None or r["app_namespace"] == app_ns) and (app is None or r["app_name"] == app)
    ]


def events(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute("SELECT * FROM sync_events ORDER BY id").fetchall()


def wait_for(predicate: Any, timeout: float = 20.0, seen: Any = None) -> None:
    """Poll ``predicate``; when it is not reached, the failure shows what ``seen()`` returns."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time" + (f"; saw {seen()}" if seen is not None else ""))


def wait_measured(db: Database, n: int, deliveries: int | None = None) -> None:
    """``n`` records, and the run of each of the test's measurement deliveries (``deliveries``,
    ``n`` unless replays sent more) recorded in ``job_runs``. A measurement stores its record
    before its run: a test on the session's shared on-sync server that stopped at the records
    would leave a run to land in the next test's emptied tables."""
    expected = n if deliveries is None else deliveries

    def done() -> bool:
        runs = [r for r in on_sync_runs(db) if r["trigger"] == "event"]
        return len(runs) == expected and sum(r["outcome"] == "success" for r in runs) == n and len(records(db)) == n

    wait_for(done, timeout=30, seen=lambda: on_sync_runs(db))


def namespace_truth(scenario: sandbox_opencost.Scenario, record: dict[str, Any]) -> tuple[Decimal, Decimal]:
    """What OpenCost itself said of the record's namespace over the record's window, asked of an
    OpenCost whose clock stands at the window's end: the scenario's relative starts ("-6h") count
    from the hour of the query, and a test asking after the hour turned would get the next hour's."""
    window = f"{record['window_start']:%Y-%m-%dT%H:%M:%SZ},{record['window_end']:%Y-%m-%dT%H:%M:%SZ}"
    ns = record["destination_namespace"]
    with sandbox_opencost.serve(scenario, clock=lambda: record["window_end"]) as at_measurement:
        data = httpx.get(
            f"{at_measurement.url}/allocation",
            params={"window": window, "aggregate": "namespace", "accumulate": "true"},
        ).json(parse_float=Decimal)["data"][0][ns]
    return Decimal(str(data["totalCost"])), Decimal(str(data["minutes"])) / 60


def test_a_sync_is_accepted_fast_then_measured_with_the_right_monthly_figure(
    on_sync_url: str, db: Database, scenario: sandbox_opencost.Scenario
) -> None:
    response = post(on_sync_url, hook())
    assert response.status_code == 202, response.text
    assert response.json()["outcome"] == "accepted"
    wait_measured(db, 1)
    (record,) = records(db)
    assert (record["app_namespace"], record["app_name"], record["measured_on"], record["scope"]) == (
        "argocd",
        "web",
        "sync",
        "application",
    )
    cost, hours = namespace_truth(scenario, record)
    assert record["cost_micros"] == int(cost * 1_000_000)
    assert record["measured_hours"] == hours
    assert record["monthly_micros"] == round(Decimal(record["cost_micros"]) * 720 / hours)
    share = record["share"]
    assert all(p.startswith("web-") for p in share["pods"]) and len(share["pods"]) == 2
    assert 0 < share["cost_micros"] < record["cost_micros"]  # cart's pod is the namespace's too
    assert record["efficiency"]["cpu"] is not None and record["idle_micros"] > 0
    assert events(db)[0]["status"] == "measured"


def test_a_young_namespace_projects_from_its_hours_not_a_day(
    on_sync_url: str, db: Database, scenario: sandbox_opencost.Scenario
) -> None:
    assert post(on_sync_url, hook("fresh", dest="young")).status_code == 202
    wait_measured(db, 1)
    (record,) = records(db)
    _, hours = namespace_truth(scenario, record)
    assert Decimal(6) <= hours < Decimal(7)  # started 6 h before the current hour
    assert record["monthly_micros"] == round(Decimal(record["cost_micros"]) * 720 / hours)
    assert record["monthly_micros"] > record["cost_micros"] * 100  # not x 30 of a full day


def test_an_app_owning_every_pod_has_the_namespace_cost_and_same_names_never_mix(
    on_sync_url: str, db: Database
) -> None:
    assert post(on_sync_url, hook("web", "team-apps", dest="search")).status_code == 202
    assert post(on_sync_url, hook("web", "argocd", dest="shop")).status_code == 202
    assert post(on_sync_url, hook("fresh", dest="young")).status_code == 202
    wait_measured(db, 3)
    (team,) = records(db, "team-apps", "web")
    (argo,) = records(db, "argocd", "web")
    (fresh,) = records(db, "argocd", "fresh")
    assert team["destination_namespace"] == "search" and argo["destination_namespace"] == "shop"
    assert set(team["share"]["pods"]).isdisjoint(argo["share"]["pods"])
    # fresh owns every pod of young: its share is the namespace, to the micro.
    assert fresh["share"]["cost_micros"] == fresh["cost_micros"] and fresh["share"]["breakdown"] == fresh["breakdown"]
    # search also pays for an unmounted volume no pod uses: the share is only the pods'.
    unmounted_pv = team["breakdown"]["pv"] - team["share"]["breakdown"]["pv"]
    # (OpenCost rounds each figure to 5 decimals on its own: totals agree within 10 micros per figure.)
    assert unmounted_pv > 0 and abs(team["cost_micros"] - team["share"]["cost_micros"] - unmounted_pv) <= 20


def test_replayed_and_concurrent_identical_webhooks_give_one_record(on_sync_url: str, db: Database) -> None:
    answers: list[httpx.Response] = []
    threads = [threading.Thread(target=lambda: answers.append(post(on_sync_url, hook()))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [a.status_code for a in answers] == [202] * 6
    # Each webhook that found the event pending sent a delivery; one measured it, the rest skipped.
    wait_measured(db, 1, deliveries=sum(a.json()["status"] == "pending" for a in answers))
    retry = post(on_sync_url, hook())  # an Argo CD retry, later: the event is measured, nothing sent
    assert retry.status_code == 202 and retry.json()["status"] == "measured"
    assert len(events(db)) == 1 and len(records(db)) == 1


def test_two_worker_processes_store_and_measure_a_burst_once(stack: Stack, db: Database) -> None:
    with serve_function(
        replace(stack),
        "on_sync",
        WEBHOOK_TOKEN=HOOK_TOKEN,
        MEASURE_SETTLE_SECONDS="0",
        WORKERS="2",
        THREADS="48",
        MAX_IN_FLIGHT="48",  # 24 a worker: the burst's measurements never fill it
    ) as url:
        statuses: list[int] = []
        bodies = [hook(revision=f"burst{n % 12}") for n in range(36)]  # each event three times
        threads = [threading.Thread(target=lambda b=b: statuses.append(post(url, b).status_code)) for b in bodies]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert statuses == [202] * 36
        wait_for(lambda: len(records(db)) == 12, timeout=60)
    assert sorted(e["revision"] for e in events(db)) == sorted(f"burst{n}" for n in range(12))
    assert all(e["status"] == "measured" for e in events(db))
    with db.connection() as conn:
        runs = conn.execute("SELECT counts FROM job_runs WHERE function = 'on_sync' AND trigger = 'argocd'").fetchall()
    assert len(runs) == 36 and sum(not r["counts"]["replay"] for r in runs) == 12


@pytest.mark.parametrize(
    "body",
    [
        hook(syncResult="Failed"),
        hook(destinationServer="https://remote.example:6443"),
        hook(destinationServer="", destinationName="prod-us"),
        hook("cost-gate", dest="argocd"),
    ],
    ids=["not-succeeded", "remote-server", "remote-name", "gate-app"],
)
def test_skips_answer_200_and_store_nothing(on_sync_url: str, db: Database, body: dict[str, Any]) -> None:
    response = post(on_sync_url, body)
    assert response.status_code == 200 and response.json()["outcome"] == "skipped"
    assert events(db) == [] and records(db) == []


def test_the_21st_concurrent_measurement_gets_429(
    on_sync_url: str, db: Database, opencost: sandbox_opencost.OpenCostServer
) -> None:
    # Every OpenCost answer is held until the reset: measurements pile up, and none can end (and
    # free its place) between the 20th being counted and the 21st webhook, however slow the machine.
    opencost.delay_next(50.0, times=200)
    try:
        for n in range(20):
            assert post(on_sync_url, hook(revision=f"rev{n}")).status_code == 202
        wait_for(lambda: sum(e["status"] == "measuring" for e in events(db)) == 20)
        response = post(on_sync_url, hook(revision="rev20"))
        assert response.status_code == 429, response.text
        assert response.headers["Retry-After"]
        assert len(events(db)) == 20  # the 21st was not accepted
    finally:
        opencost.reset()
    wait_measured(db, 20)


def test_a_lost_measurement_is_redriven_by_the_hourly_run_exactly_once(
    stack: Stack, db: Database, on_sync_url: str
) -> None:
    # A replica whose sink is unreachable: the event is accepted, then the measurement is lost.
    with serve_function(
        replace(stack), "on_sync", WEBHOOK_TOKEN=HOOK_TOKEN, MEASURE_SETTLE_SECONDS="0", K_SINK="http://127.0.0.1:9/"
    ) as lonely:
        assert post(lonely, hook()).status_code == 202
    assert [e["status"] for e in events(db)] == ["pending"] and records(db) == []
    # Another event whose measuring pod died mid-way (claimed, never finished).
    assert post_and_kill(stack, db) == "measuring"
    with db.connection() as conn:
        conn.execute(
            "UPDATE sync_events SET received_at = now() - interval '11 minutes', "
            "claimed_at = CASE WHEN claimed_at IS NULL THEN NULL ELSE now() - interval '11 minutes' END"
        )
    ping = {"scheduledTime": "2026-11-20T10:00:00Z"}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    # The hourly run sends each overdue event to on-sync (ON_SYNC_URL), measured there.
    with serve_function(stack, "collect_allocations", HOURS_LOOKBACK="0", ON_SYNC_URL=on_sync_url) as hourly:
        first = httpx.post(hourly, json=ping, headers=headers, timeout=60).json()
        assert first["redrive_dispatched"] == 2, first
        wait_for(lambda: {e["status"] for e in events(db)} == {"measured"}, seen=lambda: events(db))
        assert len(records(db)) == 2 and {r["measured_on"] for r in records(db)} == {"sync"}
        again = httpx.post(hourly, json=ping, headers=headers, timeout=60).json()
        assert again["redrive_dispatched"] == 0 and len(records(db)) == 2
    # No measurement ran in the hourly run's process: each came through on-sync as an event.
    wait_for(lambda: measurement_runs(db) == 2, seen=lambda: on_sync_runs(db))


def on_sync_runs(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT trigger, outcome, http_status, error, counts FROM job_runs"
            " WHERE function = 'on_sync' ORDER BY started_at"
        ).fetchall()


def measurement_runs(db: Database) -> int:
    """on_sync runs triggered by a CloudEvent that stored a record."""
    return sum(r["trigger"] == "event" and r["outcome"] == "success" for r in on_sync_runs(db))


def test_a_measurement_before_the_settle_time_is_answered_503(stack: Stack, db: Database) -> None:
    # No request thread sleeps meanwhile: the Broker's Trigger retries the 503 in a cluster, and
    # without a sink on_sync's own timer delivers the event once settled (tested on a clock the
    # test moves: tests/integration/test_event_sender.py), so nothing here waits for the settle.
    with serve_function(replace(stack), "on_sync", WEBHOOK_TOKEN=HOOK_TOKEN, MEASURE_SETTLE_SECONDS="300") as url:
        accepted = post(url, hook())
        assert accepted.status_code == 202, accepted.text
        event_id = accepted.json()["sync_event"]
        ce = {"ce-specversion": "1.0", "ce-type": "dev.finops.sync.accepted", "ce-id": "early", "ce-source": "/t"}
        not_before = (datetime.now(UTC) + timedelta(seconds=60)).isoformat()
        early = httpx.post(url, json={"syncEventId": event_id, "notBefore": not_before}, headers=ce, timeout=30)
        assert early.status_code == 503, early.text
        assert 59 <= int(early.headers["Retry-After"]) <= 60 and early.json()["outcome"] == "skipped"
        assert [(e["status"], e["attempts"]) for e in events(db)] == [("pending", 0)]  # not even claimed
        # Without notBefore the event's receipt decides: claimed, released, answered 503.
        bare = httpx.post(url, json={"syncEventId": event_id}, headers=ce, timeout=30)
        assert bare.status_code == 503 and 290 <= int(bare.headers["Retry-After"]) <= 300, bare.text
        assert events(db)[0]["status"] == "pending" and records(db) == []


def post_and_kill(stack: Stack, db: Database) -> str:
    """Accept an event, then mark it claimed as a measurement that died would leave it."""
    with serve_function(replace(stack), "on_sync", WEBHOOK_TOKEN=HOOK_TOKEN, K_SINK="http://127.0.0.1:9/") as lonely:
        assert post(lonely, hook("cart")).status_code == 202
    with db.connection() as conn:
        conn.execute(
            "UPDATE sync_events SET status = 'measuring', claimed_at = now(), attempts = 1 WHERE app_name = 'cart'"
        )
        row = conn.execute("SELECT status FROM sync_events WHERE app_name = 'cart'").fetchone()
    assert row is not None
    return str(row["status"])
