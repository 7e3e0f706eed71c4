"""We test these aspects of the anomaly score, over real HTTP (``collect_allocations`` collects
from the sandbox OpenCost and records the daily history, ``backfill`` measures the applications,
``cost_api`` serves) with a real PostgreSQL:

- an anomalous day end to end: 14 whole days collected and recorded by the real pipeline, then
  today's hours of one application multiplied by 5; ``/actual`` carries its ``anomaly`` (score,
  run-rate, baseline of 14 days, ``anomalous: true``), the other applications score normally or
  say why they cannot be scored (an application started today: 0 days); every figure is
  checked against the test's own sums of the stored rows and its own median and MAD;
- crafted histories (recorded days written directly, in the application's current scope): one
  spike, one flat history (the 5 % floor), one with 5 days (``score: null`` and the reason), one
  whose days cost nothing; days of another scope and days before the series' first day with cost
  are not the baseline; ``/api/v1/anomalies`` ranks them, highest first, unscored after;
- authorization: ``/actual`` with another application's header is 403, the ranking needs the
  gate application and the proxy's secret; a bad ``limit`` is 400 naming it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import httpx
import pytest

from infra.postgres import Database
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import TOKEN, Pinger

PROXY = "test-proxy-token"
GATE = "argocd:cost-gate"
HISTORY_DAYS = 14


@pytest.fixture(scope="session")
def anomaly_api_url(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY) as url:
        yield url


@pytest.fixture(scope="session")
def anomaly_measure_url(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "backfill", BACKFILL_CONCURRENCY="2", OPENCOST_RETRIES="0") as url:
        yield url


def today() -> date:
    return datetime.now(UTC).date()


def midnight(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def get(url: str, path: str, app: str | None, token: str | None = PROXY, **params: str) -> httpx.Response:
    headers = {}
    if app is not None:
        headers["Argocd-Application-Name"] = app
    if token is not None:
        headers["X-Finops-Proxy-Token"] = token
    return httpx.get(url + path, headers=headers, params=params, timeout=60)


def collect(ping: Pinger, days: int) -> None:
    """``days`` whole days before today (a history load), then the hourly run (today's hours)."""
    body: dict[str, object] = {
        "from": midnight(today() - timedelta(days=days)).isoformat(),
        "to": midnight(today()).isoformat(),
    }
    for _ in range(10):  # a load bounded by COLLECT_BUDGET_SECONDS answers what remains; the next continues
        loaded = ping(body)
        assert loaded.status_code == 200, loaded.text
        if loaded.json()["remaining"] == 0:
            break
    else:
        raise AssertionError(f"the history load still has hours remaining: {loaded.text}")
    assert ping().status_code == 200


def measure(url: str) -> None:
    response = httpx.post(url, json={}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)
    assert response.status_code == 200 and response.json()["measured"] == 4, response.text


def ensure_final_hour_today(db: Database) -> None:
    """At least one hour of today final, whatever the time of day: the score reads final hours
    only, and the hourly run finalizes an hour once it is over. In the first hour of a UTC day
    none is yet, so today's first hour is stored as yesterday's last one (every sandbox hour is
    alike), final."""
    start = midnight(today())
    with db.connection() as conn:
        found = conn.execute(
            "SELECT count(*) AS n FROM allocation_hours WHERE state = 'final' AND hour >= %s", (start,)
        ).fetchone()
        assert found is not None
        if found["n"]:
            return
        for table in ("provider_allocations", "allocation_hours"):
            conn.execute(f"DELETE FROM {table} WHERE hour = %s", (start,))
            conn.execute(
                f"INSERT INTO {table} SELECT (jsonb_populate_record(NULL::{table},"
                " to_jsonb(t) || jsonb_build_object('hour', %s::timestamptz))).*"
                f" FROM {table} t WHERE hour = %s",
                (start, start - timedelta(hours=1)),
            )


def scope_condition(db: Database, app_ns: str, app: str) -> tuple[str, str, list[Any]]:
    """The test's own reading of the scope rule from the latest record: (namespace, SQL, params)."""
    with db.connection() as conn:
        rec = conn.execute(
            "SELECT * FROM cost_actuals WHERE app_namespace = %s AND app_name = %s ORDER BY measured_at DESC, id DESC",
            (app_ns, app),
        ).fetchone()
    assert rec is not None
    if rec["share"] is None:
        return rec["destination_namespace"], "TRUE", []
    selector = rec["share"]["selector"]
    condition = (
        "entry_kind = 'workload' AND ((controller IS NOT NULL AND "
        "concat(controller_kind, ':', controller) = ANY(%s)) OR pod = ANY(%s))"
    )
    return rec["destination_namespace"], condition, [selector["controllers"], selector["pods"]]


def own_days(db: Database, app_ns: str, app: str) -> dict[date, int]:
    """The application's cost per whole day before today, from its own hourly rows."""
    namespace, condition, params = scope_condition(db, app_ns, app)
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT (hour AT TIME ZONE 'UTC')::date AS day, sum(total_cost_micros) AS micros FROM provider_allocations"
            f" WHERE namespace = %s AND hour < %s AND {condition} GROUP BY 1",
            [namespace, midnight(today()), *params],
        ).fetchall()
    return {r["day"]: int(r["micros"]) for r in rows}


def own_today(db: Database, app_ns: str, app: str) -> tuple[int, int]:
    """(cost of the application's rows in today's final hours, final hours of today)."""
    namespace, condition, params = scope_condition(db, app_ns, app)
    with db.connection() as conn:
        hours = conn.execute(
            "SELECT count(*) AS n FROM allocation_hours WHERE state = 'final' AND hour >= %s", (midnight(today()),)
        ).fetchone()
        cost = conn.execute(
            "SELECT coalesce(sum(total_cost_micros), 0) AS micros FROM provider_allocations"
            f" WHERE namespace = %s AND hour >= %s AND is_finalized AND {condition}",
            [namespace, midnight(today()), *params],
        ).fetchone()
    assert hours is not None and cost is not None
    return int(cost["micros"]), int(hours["n"])


def expected_score(baseline: list[int], today_micros: int, today_hours: int) -> tuple[Fraction, str]:
    """The test's own robust z-score: statistics.median over exact fractions."""
    values = [Fraction(v) for v in baseline]
    centre = statistics.median(values)
    mad = statistics.median([abs(v - centre) for v in values])
    spread = max(mad * Fraction("1.4826"), centre * Fraction(5, 100))
    score = (Fraction(today_micros * 24, today_hours) - centre) / spread
    return score, str((Decimal(round(score * 100)) / 100).quantize(Decimal("0.01")))


def anomaly_of(url: str, app: str) -> dict[str, Any]:
    response = get(url, f"/api/v1/apps/{app.replace(':', '/')}/actual", app)
    assert response.status_code == 200, response.text
    return dict(response.json()["anomaly"])


def test_an_anomalous_day_over_the_real_pipeline(
    ping: Pinger, db: Database, anomaly_api_url: str, anomaly_measure_url: str
) -> None:
    collect(ping, HISTORY_DAYS)
    measure(anomaly_measure_url)
    recorded = ping()  # the hourly run records the daily history
    assert recorded.status_code == 200 and recorded.json()["daily_days_recorded"] == HISTORY_DAYS, recorded.text
    ensure_final_hour_today(db)
    with db.connection() as conn:  # argocd/web (deployment web in shop) costs 5x today
        changed = conn.execute(
            "UPDATE provider_allocations SET total_cost_micros = total_cost_micros * 5"
            " WHERE namespace = 'shop' AND controller = 'web' AND hour >= %s",
            (midnight(today()),),
        ).rowcount
    assert changed > 0
    first, last = today() - timedelta(days=HISTORY_DAYS), today() - timedelta(days=1)
    for app, anomalous in (("argocd:web", True), ("argocd:cart", False), ("team-apps:web", False)):
        body = anomaly_of(anomaly_api_url, app)
        days = own_days(db, *app.split(":"))
        assert sorted(days) == [first + timedelta(days=n) for n in range(HISTORY_DAYS)], app
        today_micros, today_hours = own_today(db, *app.split(":"))
        assert today_hours > 0 and today_micros > 0
        score, text = expected_score(list(days.values()), today_micros, today_hours)
        assert (body["score"], body["anomalous"], body["reason"]) == (text, anomalous, None), (app, body)
        assert (score >= Fraction(7, 2)) is anomalous
        assert body["baseline"]["days"] == HISTORY_DAYS
        assert (body["baseline"]["from"], body["baseline"]["to"]) == (first.isoformat(), last.isoformat())
        assert body["baseline"]["median"]["micros"] == round(statistics.median([Fraction(v) for v in days.values()]))
        assert body["runRatePerDay"]["micros"] == round(Fraction(today_micros * 24, today_hours))
        assert body["today"]["hours"] == today_hours and body["today"]["cost"]["micros"] == today_micros
        assert body["currency"] == "USD"
    # Started six hours ago in its own namespace: no recorded day yet (one, just after midnight).
    fresh = anomaly_of(anomaly_api_url, "argocd:fresh")
    has = len(own_days(db, "argocd", "fresh"))
    assert fresh["score"] is None and fresh["anomalous"] is False and has < 2
    assert fresh["reason"] == f"needs 7 days of history, has {has}" and fresh["baseline"]["days"] == has
    ranking = get(anomaly_api_url, "/api/v1/anomalies", GATE).json()
    names = [f"{a['app']['namespace']}:{a['app']['name']}" for a in ranking["applications"]]
    assert names[0] == "argocd:web" and names[-1] == "argocd:fresh" and ranking["anomalous"] == 1
    assert ranking["applications"][0]["anomaly"] == anomaly_of(anomaly_api_url, "argocd:web")


@pytest.fixture
def crafted(ping: Pinger, db: Database, anomaly_measure_url: str) -> dict[str, tuple[int, int]]:
    """Today's hours collected (some final), the applications measured, no day recorded by the
    pipeline: the tests write the recorded days. Answers today's (micros, final hours) per app."""
    assert ping().status_code == 200
    measure(anomaly_measure_url)
    ensure_final_hour_today(db)
    with db.connection() as conn:
        conn.execute("TRUNCATE app_daily_costs")
    return {app: own_today(db, *app.split(":")) for app in ("argocd:web", "argocd:cart", "team-apps:web")}


def write_days(db: Database, app: str, micros: list[int], *, hours: int = 24, fingerprint: str | None = None) -> None:
    """Recorded days ending yesterday, oldest first, in the application's current scope."""
    app_ns, name = app.split(":")
    with db.connection() as conn:
        scope = conn.execute(
            "SELECT * FROM finops_app_scopes('test') WHERE app_namespace = %s AND app_name = %s", (app_ns, name)
        ).fetchone()
        assert scope is not None
        for n, amount in enumerate(micros):
            day = today() - timedelta(days=len(micros) - n)
            conn.execute(
                "INSERT INTO app_daily_costs (cluster, app_namespace, app_name, day, scope, scope_fingerprint,"
                " aggregation, hours, cpu_cost_micros, gpu_cost_micros, ram_cost_micros, pv_cost_micros,"
                " network_cost_micros, lb_cost_micros, shared_cost_micros, external_cost_micros, total_cost_micros,"
                " idle_micros, currency)"
                " VALUES ('test', %s, %s, %s, %s, %s, 'namespace,controllerKind,controller,pod,container', %s,"
                " 0, 0, 0, 0, 0, 0, 0, 0, %s, 0, 'USD')"
                " ON CONFLICT (cluster, app_namespace, app_name, day) DO UPDATE SET"
                " total_cost_micros = EXCLUDED.total_cost_micros, scope_fingerprint = EXCLUDED.scope_fingerprint,"
                " hours = EXCLUDED.hours",
                (
                    app_ns,
                    name,
                    day,
                    scope["scope"],
                    fingerprint or scope["fingerprint"],
                    hours if amount else 0,
                    amount,
                ),
            )


def test_crafted_histories_are_scored_and_ranked(
    crafted: dict[str, tuple[int, int]], db: Database, anomaly_api_url: str
) -> None:
    # argocd/web: 14 days around a fifth of today's run-rate (spread by the MAD, above the 5 % floor),
    # one of them a spike: anomalous.
    web_micros, web_hours = crafted["argocd:web"]
    fifth = web_micros * 24 // web_hours // 5
    web_days = [fifth + (n % 5 - 2) * fifth // 10 for n in range(13)] + [fifth * 6]  # MAD: a tenth
    write_days(db, "argocd:web", web_days)
    # team-apps/web: flat at today's run-rate / 1.1 (MAD 0: the 5 % floor), after 3 days without
    # cost (its destination namespace's, before it ran) and one day of another scope.
    search_micros, search_hours = crafted["team-apps:web"]
    flat = Fraction(search_micros * 24, search_hours) / Fraction(11, 10)
    write_days(db, "team-apps:web", [0, 0, 0] + [round(flat)] * 7)
    write_days(db, "team-apps:web", [10**12] + [round(flat)] * 7, fingerprint="another scope")
    write_days(db, "team-apps:web", [round(flat)] * 7)  # the current scope again, 7 days
    # argocd/cart: 5 days only.
    write_days(db, "argocd:cart", [1_000_000] * 5)
    # argocd/fresh: 7 days that cost nothing (with hours: it ran, for free).
    write_days(db, "argocd:fresh", [0] * 7)
    with db.connection() as conn:
        conn.execute("UPDATE app_daily_costs SET hours = 24 WHERE app_name = 'fresh'")

    web = anomaly_of(anomaly_api_url, "argocd:web")
    score, text = expected_score(web_days, web_micros, web_hours)
    assert (web["score"], web["anomalous"], web["baseline"]["days"]) == (text, True, 14)
    assert web["baseline"]["median"]["micros"] == round(statistics.median([Fraction(v) for v in web_days]))
    assert web["baseline"]["spread"] == web["baseline"]["scaledMad"] != web["baseline"]["mad"]

    search = anomaly_of(anomaly_api_url, "team-apps:web")
    _, search_text = expected_score([round(flat)] * 7, search_micros, search_hours)
    assert search["baseline"]["days"] == 7 and search["baseline"]["mad"]["micros"] == 0
    assert search["baseline"]["spread"]["micros"] == round(Fraction(round(flat)) * Fraction(5, 100))
    assert search["score"] == search_text and Decimal(search_text) == pytest.approx(Decimal(2), abs=Decimal("0.01"))
    assert search["anomalous"] is False

    cart = anomaly_of(anomaly_api_url, "argocd:cart")
    assert (cart["score"], cart["reason"], cart["baseline"]["days"]) == (None, "needs 7 days of history, has 5", 5)
    assert cart["runRatePerDay"] is None and cart["baseline"]["median"] is None

    fresh = anomaly_of(anomaly_api_url, "argocd:fresh")
    assert fresh["score"] is None and fresh["baseline"]["days"] == 7
    assert fresh["reason"] == "the baseline days cost nothing: no spread to compare with"

    ranking = get(anomaly_api_url, "/api/v1/anomalies", GATE)
    assert ranking.status_code == 200, ranking.text
    body = ranking.json()
    names = [f"{a['app']['namespace']}:{a['app']['name']}" for a in body["applications"]]
    assert names == ["argocd:web", "team-apps:web", "argocd:cart", "argocd:fresh"]
    assert (body["anomalous"], body["scored"], body["threshold"]) == (1, 2, "3.50")
    assert [a["anomaly"] for a in body["applications"]] == [web, search, cart, fresh]
    limited = get(anomaly_api_url, "/api/v1/anomalies", GATE, limit="1").json()
    assert [a["app"]["name"] for a in limited["applications"]] == ["web"] and score > 0


@pytest.mark.parametrize("limit", ["0", "501", "abc", "-1"])
def test_a_bad_limit_is_400_naming_it(anomaly_api_url: str, db: Database, limit: str) -> None:
    response = get(anomaly_api_url, "/api/v1/anomalies", GATE, limit=limit)
    assert response.status_code == 400 and "limit" in response.json()["error"]


def test_authorization(crafted: dict[str, tuple[int, int]], db: Database, anomaly_api_url: str) -> None:
    write_days(db, "argocd:web", [1_000_000] * 14)
    assert "anomaly" in get(anomaly_api_url, "/api/v1/apps/argocd/web/actual", "argocd:web").json()
    for app, token in (
        ("argocd:cart", PROXY),  # another application's header on /actual
        ("argocd:web", None),  # no proxy secret
        ("argocd:web", "guess"),
    ):
        forged = get(anomaly_api_url, "/api/v1/apps/argocd/web/actual", app, token)
        assert forged.status_code == 403 and "anomaly" not in forged.text and "micros" not in forged.text
    cluster_cases: list[tuple[str | None, str | None]] = [("argocd:web", PROXY), (GATE, None), (GATE, "guess")]
    for who, token in [*cluster_cases, (None, PROXY)]:
        forged = get(anomaly_api_url, "/api/v1/anomalies", who, token)
        assert forged.status_code == 403 and "anomaly" not in forged.text and "micros" not in forged.text
    assert get(anomaly_api_url, "/api/v1/anomalies", GATE).status_code == 200
