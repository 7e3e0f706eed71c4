"""We test these aspects of the daily cost history per application, over real HTTP (the hourly
``collect_allocations`` ping records it, ``backfill`` measures the applications, ``cost_api``
serves it) against the sandbox OpenCost and Kubernetes API and a real PostgreSQL:

- every recorded day equals the sum of the application's own ``provider_allocations`` rows that
  day, computed here with the test's own SQL from the record's share; applications that own every
  pod of a namespace add up to the namespace's workload rows; the measurement stores the selector;
- only days that are over with 24 final hours are recorded (a lost hour keeps its day out until
  it is final);
- ``/daily`` serves the stored days plus today's partial day (summed from today's hours), oldest
  first without gaps, bounded by ``days`` (400 naming ``days`` when bad), 403 for another
  application's header, 200 saying "no record yet" before any record (not an error: the tab
  asks for every application);
- a replay leaves the table unchanged, and two recorders at once (two pings, two threads) end
  with the same table as one;
- a scope change (the latest record loses its share) rebuilds the series in the new scope;
- ``finops verify`` finds nothing in a recorded history, names each day whose stored hours or costs
  differ from its rows, and a series still in an application's previous scope until it is rebuilt;
- days older than ``DAILY_HISTORY_DAYS`` are deleted, and a backfill goes no further back;
  history loaded later (further back than the series' first day) is recorded too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import httpx
import pytest

from infra.postgres import Database
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import TOKEN, Pinger
from usecases.app_history.recorder import RecorderOptions, record_daily
from usecases.app_history.scope import app_hourly_costs
from usecases.verify import verify

PROXY = "test-proxy-token"
AGGREGATION = "namespace,controllerKind,controller,pod,container"
HISTORY_DAYS = 2  # whole days loaded before today


@pytest.fixture(scope="session")
def daily_api_url(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY) as url:
        yield url


@pytest.fixture(scope="session")
def measure_url(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "backfill", BACKFILL_CONCURRENCY="2", OPENCOST_RETRIES="0") as url:
        yield url


def midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def today() -> date:
    return datetime.now(UTC).date()


def load_hours(ping: Pinger) -> None:
    """Whole days before today (a history load), then the hourly run (today's hours, the current one open)."""
    start = midnight(today() - timedelta(days=HISTORY_DAYS))
    loaded = ping({"from": start.isoformat(), "to": midnight(today()).isoformat()})
    assert loaded.status_code == 200 and loaded.json()["remaining"] == 0, loaded.text
    hourly = ping()
    assert hourly.status_code == 200, hourly.text


def measure(url: str) -> None:
    response = httpx.post(url, json={}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
    assert response.status_code == 200 and response.json()["measured"] == 4, response.text


def record(ping: Pinger) -> dict[str, Any]:
    response = ping()
    assert response.status_code == 200, response.text
    return dict(response.json())


def stored(db: Database, *, with_recorded_at: bool = True) -> list[dict[str, Any]]:
    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM app_daily_costs ORDER BY cluster, app_namespace, app_name, day").fetchall()
    if not with_recorded_at:
        for row in rows:
            row.pop("recorded_at")
    return rows


def latest(db: Database, app_ns: str, app: str) -> dict[str, Any]:
    with db.connection() as conn:
        row = conn.execute(
            "SELECT * FROM cost_actuals WHERE app_namespace = %s AND app_name = %s ORDER BY measured_at DESC, id DESC",
            (app_ns, app),
        ).fetchone()
    assert row is not None
    return row


PARTS = ("cpu", "gpu", "ram", "pv", "network", "lb", "shared", "external")


def own_rows(db: Database, app_ns: str, app: str) -> dict[date, dict[str, int]]:
    """The test's own reading of the scope rule: hours, total and parts per day from the hourly rows."""
    rec = latest(db, app_ns, app)
    condition, params = "TRUE", []
    if rec["share"] is not None:
        selector = rec["share"]["selector"]
        condition = (
            "entry_kind = 'workload' AND ((controller IS NOT NULL AND "
            "concat(controller_kind, ':', controller) = ANY(%s)) OR pod = ANY(%s))"
        )
        params = [selector["controllers"], selector["pods"]]
    parts = ", ".join(f"coalesce(sum({p}_cost_micros), 0) AS {p}" for p in PARTS)
    idle = " + ".join(
        f"coalesce({r}_cost_micros * (CASE WHEN {q}_request_avg > 0 AND {q}_usage_avg < {q}_request_avg"
        f" THEN ({q}_request_avg - greatest({q}_usage_avg, 0)) / {q}_request_avg ELSE 0 END), 0)"
        for r, q in (("cpu", "cpu_core"), ("ram", "ram_byte"))
    )
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT (hour AT TIME ZONE 'UTC')::date AS day, count(DISTINCT hour) AS hours,"
            f" coalesce(sum(total_cost_micros), 0) AS micros, {parts}, coalesce(sum({idle}), 0) AS idle"
            " FROM provider_allocations"
            f" WHERE cluster = 'test' AND namespace = %s AND {condition} GROUP BY 1",
            [rec["destination_namespace"], *params],
        ).fetchall()
    # Workload idle is rounded once per day, half-even.
    return {
        r.pop("day"): {k: int(Decimal(v).quantize(Decimal(1), ROUND_HALF_EVEN)) for k, v in r.items()} for r in rows
    }


def own_days(db: Database, app_ns: str, app: str) -> dict[date, tuple[int, int]]:
    """(hours, micros) per day of the application's own rows."""
    return {day: (r["hours"], r["micros"]) for day, r in own_rows(db, app_ns, app).items()}


def namespace_workload_days(db: Database, namespace: str) -> dict[date, int]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT (hour AT TIME ZONE 'UTC')::date AS day, sum(total_cost_micros) AS micros FROM provider_allocations"
            " WHERE namespace = %s AND entry_kind = 'workload' GROUP BY 1",
            (namespace,),
        ).fetchall()
    return {r["day"]: int(r["micros"]) for r in rows}


def series(db: Database, app_ns: str, app: str) -> dict[date, dict[str, Any]]:
    return {r["day"]: r for r in stored(db) if (r["app_namespace"], r["app_name"]) == (app_ns, app)}


def get(url: str, path: str, app: str, **params: str) -> httpx.Response:
    headers = {"Argocd-Application-Name": app, "X-Finops-Proxy-Token": PROXY}
    return httpx.get(url + path, headers=headers, params=params, timeout=30)


@pytest.fixture
def world(ping: Pinger, measure_url: str, db: Database) -> Pinger:
    """Two whole days and today collected, the applications measured (before any day is recorded)."""
    load_hours(ping)
    measure(measure_url)
    return ping


def test_recorded_days_equal_the_hourly_rows_of_the_applications_own_scope(world: Pinger, db: Database) -> None:
    counts = record(world)
    # The days before the one the run recorded on (its pinned hour's), back to the first loaded: one
    # more than HISTORY_DAYS when midnight passed between the load and the run.
    recorded_on = datetime.fromisoformat(counts["hour"]).date()
    with db.connection() as conn:
        loaded = conn.execute("SELECT min(hour AT TIME ZONE 'UTC')::date AS day FROM allocation_hours").fetchone()
    assert loaded is not None
    first: date = loaded["day"]
    complete = {first + timedelta(days=n) for n in range((recorded_on - first).days)}
    assert len(complete) in (HISTORY_DAYS, HISTORY_DAYS + 1)
    assert counts["daily_days_recorded"] == len(complete) and counts["daily_days_remaining"] == 0
    web = latest(db, "argocd", "web")
    assert web["scope"] == "application"
    assert web["share"]["selector"] == {"controllers": ["deployment:web"], "pods": []}
    for app_ns, app in (("argocd", "web"), ("argocd", "cart"), ("team-apps", "web")):
        days = series(db, app_ns, app)
        assert set(days) == complete, (app, sorted(days))  # today is not over; nothing before the first day
        truth = own_rows(db, app_ns, app)
        for day, row in days.items():
            assert (row["hours"], row["total_cost_micros"]) == (truth[day]["hours"], truth[day]["micros"]), (app, day)
            assert {p: row[f"{p}_cost_micros"] for p in PARTS} == {p: truth[day][p] for p in PARTS}
            assert row["idle_micros"] == truth[day]["idle"]
            assert row["hours"] == 24 and row["total_cost_micros"] > 0 and row["scope"] == "application"
    # The scope API other readers use (per application and hour) agrees with the stored days.
    per_day: dict[tuple[str, str, date], int] = {}
    for r in app_hourly_costs(db, "test", AGGREGATION, midnight(min(complete)), midnight(recorded_on)):
        key = (r["app_namespace"], r["app_name"], r["hour"].date())
        per_day[key] = per_day.get(key, 0) + r["micros"]
    assert per_day == {(r["app_namespace"], r["app_name"], r["day"]): r["total_cost_micros"] for r in stored(db)}
    # Independent of the selector rule: web and cart own every pod of shop, index every pod of search.
    shop, search = namespace_workload_days(db, "shop"), namespace_workload_days(db, "search")
    for day in complete:
        web_day, cart_day = series(db, "argocd", "web")[day], series(db, "argocd", "cart")[day]
        assert web_day["total_cost_micros"] + cart_day["total_cost_micros"] == shop[day]
        assert series(db, "team-apps", "web")[day]["total_cost_micros"] == search[day]
        assert 0 < web_day["idle_micros"] < web_day["total_cost_micros"]
    assert verify(db) == []


def test_a_day_with_an_hour_not_final_is_not_recorded_until_it_is(world: Pinger, db: Database) -> None:
    held = today() - timedelta(days=2)
    with db.connection() as conn:  # lost: settled, so the hourly run does not fetch it again
        conn.execute(
            "UPDATE allocation_hours SET state = 'lost', reason = 'test' WHERE hour = %s",
            (midnight(held) + timedelta(hours=5),),
        )
    record(world)
    assert held not in series(db, "argocd", "web") and today() - timedelta(days=1) in series(db, "argocd", "web")
    with db.connection() as conn:
        conn.execute("UPDATE allocation_hours SET state = 'final', reason = NULL WHERE state = 'lost'")
    assert record(world)["daily_days_recorded"] == 1
    assert held in series(db, "argocd", "web")


def test_the_route_serves_stored_days_and_todays_partial_day(world: Pinger, db: Database, daily_api_url: str) -> None:
    path = "/api/v1/apps/argocd/web/daily"
    assert get(daily_api_url, path, "argocd:web").status_code == 200  # before recording: today only
    record(world)
    before = today()
    body = get(daily_api_url, path, "argocd:web", days="5").json()
    answered = date.fromisoformat(body["to"])
    assert answered in (before, today())  # today, read before and after the request (it may cross midnight)
    assert body["app"] == {"namespace": "argocd", "name": "web"} and body["scope"] == "application"
    assert body["destinationNamespace"] == "shop" and body["currency"] == "USD"
    expected_days = [(answered - timedelta(days=n)).isoformat() for n in range(4, -1, -1)]
    assert [d["day"] for d in body["days"]] == expected_days and (body["from"], body["to"]) == (
        expected_days[0],
        expected_days[-1],
    )
    stored_days = series(db, "argocd", "web")
    truth = own_days(db, "argocd", "web")
    for entry in body["days"][:-1]:
        day = date.fromisoformat(entry["day"])
        if day in stored_days:
            assert entry["final"] is True and entry["hours"] == 24
            assert entry["cost"]["micros"] == stored_days[day]["total_cost_micros"]
        else:  # before the namespace's first day with cost: known to have none
            assert entry["cost"] == {"amount": "0.00", "micros": 0} and entry["hours"] == 0
    partial = body["days"][-1]
    # In a day's first seconds OpenCost has nothing of its open hour yet: today has no rows, no hour.
    assert partial["final"] is False and (partial["hours"], partial["cost"]["micros"]) == truth.get(answered, (0, 0))
    assert body["total"]["micros"] == sum(d["cost"]["micros"] for d in body["days"])
    assert len(get(daily_api_url, path, "argocd:web").json()["days"]) == 30


def test_a_bad_days_is_400_naming_it(world: Pinger, daily_api_url: str) -> None:
    for days in ("0", "401", "abc", "-1", "3.5"):  # one world for all: building it is most of the time
        response = get(daily_api_url, "/api/v1/apps/argocd/web/daily", "argocd:web", days=days)
        assert response.status_code == 400 and "days" in response.json()["error"], (days, response.text)


def test_another_applications_header_is_403_and_no_record_is_said(
    ping: Pinger, db: Database, daily_api_url: str, measure_url: str
) -> None:
    before = get(daily_api_url, "/api/v1/apps/argocd/web/daily", "argocd:web")
    assert before.status_code == 200 and before.json()["recorded"] is False and "days" not in before.json()
    load_hours(ping)
    measure(measure_url)
    record(ping)
    forged = get(daily_api_url, "/api/v1/apps/argocd/web/daily", "argocd:cart")
    assert forged.status_code == 403 and "micros" not in forged.text
    assert get(daily_api_url, "/api/v1/apps/argocd/nope/daily", "argocd:nope").json()["recorded"] is False


def test_replays_and_concurrent_recorders_end_with_the_same_table(world: Pinger, db: Database) -> None:
    record(world)
    once = stored(db)
    assert once
    assert record(world)["daily_rows_written"] == 0 and stored(db) == once  # a replay rewrites nothing
    for concurrent in ("pings", "threads"):
        with db.connection() as conn:
            conn.execute("TRUNCATE app_daily_costs, app_daily_scopes")
        barrier = threading.Barrier(2)
        errors: list[BaseException] = []

        def run(
            kind: str = concurrent, barrier: threading.Barrier = barrier, errors: list[BaseException] = errors
        ) -> None:
            try:
                barrier.wait()
                if kind == "pings":
                    assert world().status_code == 200
                else:
                    record_daily(db, RecorderOptions("test", AGGREGATION), today=today())
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert stored(db, with_recorded_at=False) == [{k: v for k, v in r.items() if k != "recorded_at"} for r in once]


def test_verify_names_a_recorded_day_that_differs_from_its_rows(world: Pinger, db: Database) -> None:
    record(world)
    assert verify(db) == []
    days = sorted(series(db, "argocd", "web"))
    changes = {  # a day and what differs in it: every compared figure is caught alone
        days[0]: "total_cost_micros = total_cost_micros + 1",
        days[1]: "ram_cost_micros = ram_cost_micros - 1, cpu_cost_micros = cpu_cost_micros + 1",
    }
    for day, change in changes.items():
        with db.connection() as conn:
            conn.execute(
                f"UPDATE app_daily_costs SET {change} WHERE app_name = 'web' AND app_namespace = 'argocd' AND day = %s",
                (day,),
            )
        found = verify(db)
        assert len(found) == 1 and f"{day}: application argocd/web: differs from its rows summed again" in found[0], (
            found
        )
        with db.connection() as conn:  # put it back
            conn.execute(
                "DELETE FROM app_daily_costs WHERE day = %s AND app_name = 'web' AND app_namespace = 'argocd'", (day,)
            )
        record(world)
        assert verify(db) == []
    for column, value in (("hours", "23"), ("currency", "'EUR'"), ("gpu_cost_micros", "1")):
        with db.connection() as conn:
            conn.execute(
                f"UPDATE app_daily_costs SET {column} = {value} WHERE app_name = 'cart' AND day = %s", (days[0],)
            )
        found = verify(db)
        assert len(found) == 1 and "application argocd/cart: differs" in found[0], (column, found)
        with db.connection() as conn:
            conn.execute("DELETE FROM app_daily_costs WHERE app_name = 'cart' AND day = %s", (days[0],))
        record(world)
    # A row of the application's scope changed after its day was recorded.
    with db.connection() as conn:
        conn.execute(
            "UPDATE provider_allocations SET total_cost_micros = total_cost_micros + 5"
            " WHERE namespace = 'search' AND hour >= %(start)s AND hour < %(end)s AND ctid = ("
            " SELECT ctid FROM provider_allocations WHERE namespace = 'search' AND entry_kind = 'workload'"
            " AND hour >= %(start)s AND hour < %(end)s LIMIT 1)",
            {"start": midnight(days[1]), "end": midnight(days[1]) + timedelta(days=1)},
        )
    found = [line for line in verify(db) if "application" in line]
    assert len(found) == 1 and f"{days[1]}: application team-apps/web: differs" in found[0], found
    assert "recorded 24 hour(s)" in found[0] and "its rows now 24 hour(s)" in found[0]


def test_a_scope_change_rebuilds_the_series_in_the_new_scope(world: Pinger, db: Database, daily_api_url: str) -> None:
    record(world)
    before = series(db, "argocd", "web")
    web = latest(db, "argocd", "web")
    with db.connection() as conn:  # a newer record without a share: namespace scope
        conn.execute(
            "INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,"
            " measured_at, window_start, window_end, measured_hours, cost_micros, monthly_micros, breakdown, share)"
            " VALUES ('test', 'argocd', 'web', 'shop', 'install', 'namespace', %s, %s, %s, 24, 1, 30, %s, NULL)",
            (web["measured_at"] + timedelta(seconds=1), web["window_start"], web["window_end"], json.dumps({"cpu": 1})),
        )
    stale = verify(db)
    assert len(stale) == len(before) and all(
        "application argocd/web: recorded in a scope that is no longer" in p for p in stale
    )
    served_between = get(daily_api_url, "/api/v1/apps/argocd/web/daily", "argocd:web", days="3").json()
    assert served_between["scope"] == "namespace"  # never the old scope's days
    assert all(d["final"] is False for d in served_between["days"])
    counts = record(world)
    assert counts["daily_series_rebuilt"] == 1
    after = series(db, "argocd", "web")
    truth = own_days(db, "argocd", "web")
    assert set(after) == set(before) and {r["scope"] for r in after.values()} == {"namespace"}
    for day, row in after.items():
        assert (row["hours"], row["total_cost_micros"]) == truth[day]
        assert row["total_cost_micros"] > before[day]["total_cost_micros"]  # cart's pod and volumes too
        assert row["scope_fingerprint"] != before[day]["scope_fingerprint"]
    cart = series(db, "argocd", "cart")
    assert {r["scope"] for r in cart.values()} == {"application"}  # another application keeps its series
    assert verify(db) == []


def test_days_older_than_the_history_are_deleted_and_never_backfilled(world: Pinger, db: Database) -> None:
    record(world)
    web = next(iter(series(db, "argocd", "web").values()))
    old = today() - timedelta(days=401)
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO app_daily_costs SELECT cluster, app_namespace, app_name, %s, scope, scope_fingerprint,"
            " aggregation, hours, cpu_cost_micros, gpu_cost_micros, ram_cost_micros, pv_cost_micros,"
            " network_cost_micros, lb_cost_micros, shared_cost_micros, external_cost_micros, total_cost_micros,"
            " idle_micros, currency, recorded_at FROM app_daily_costs"
            " WHERE app_namespace = 'argocd' AND app_name = 'web' AND day = %s",
            (old, web["day"]),
        )
    assert record(world)["daily_rows_expired"] == 1 and old not in series(db, "argocd", "web")
    with db.connection() as conn:
        conn.execute("TRUNCATE app_daily_costs, app_daily_scopes")
    result = record_daily(db, RecorderOptions("test", AGGREGATION, history_days=1), today=today())
    assert result.days_recorded == 1 and {r["day"] for r in stored(db)} == {today() - timedelta(days=1)}


def test_history_loaded_later_is_recorded_back_to_its_first_day(world: Pinger, db: Database) -> None:
    record(world)
    earlier = today() - timedelta(days=HISTORY_DAYS + 1)
    assert earlier not in series(db, "argocd", "web")
    loaded = world({"from": midnight(earlier).isoformat(), "to": midnight(earlier + timedelta(days=1)).isoformat()})
    assert loaded.status_code == 200 and loaded.json()["remaining"] == 0, loaded.text
    assert record(world)["daily_days_recorded"] == 1
    assert series(db, "argocd", "web")[earlier]["total_cost_micros"] == own_days(db, "argocd", "web")[earlier][1]
