"""We test these aspects of budgets and forecasts, on the sandbox cluster collected by
``collect_allocations`` (history loads over real HTTP) into a real PostgreSQL, plus a second
cluster's rollups that make the days differ (so a wrong window shows in the rate):

- a budget's month-to-date is exactly its chargeback line's total over the month's full days
  (by team for an owner, by cost centre for a cost centre); the idle owner, whose only line is
  the idle line, is at 0 (idle is not its consumption);
- forecast = month-to-date + (the window's line total / its hours) x hours left, recomputed here
  from the chargeback of the window the method names, with the percentages and the flag;
- a younger month and younger data read fewer days and say so;
- ``finops report budgets`` (JSON and table) for a month that is over: the forecast is the
  month's chargeback line; a future month or a bad one is refused naming ``month``;
- ``GET /api/v1/budgets`` answers the report's figures behind the gate application and the
  proxy's secret (403 otherwise, 400 naming ``month``), and ``/metrics``' budget gauges equal
  the API's figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from finops.lines import LineKind
from finops.periods import Period
from infra.postgres import Database
from infra.settings import CostApiSettings
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import Pinger
from tests.e2e.test_reports import POLICY, PROXY, day_row, finops, get, seed
from usecases.cost_api.budget_views import budget_families
from usecases.reports.budgets import budgets_report
from usecases.reports.formats import load_policy
from usecases.reports.service import ReportQuery, chargeback

METRICS = "test-metrics-token"
BUDGETS = """
budgets:
  - {owner: checkout, amount: "20.00"}
  - {owner: discovery, amount: "500.00"}
  - {cost_center: cc-200, amount: "30.00"}
  - {owner: platform, amount: "10.00"}  # idle_owner: its idle line is not its consumption
"""


def nov(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def load(ping: Pinger, start: datetime, end: datetime) -> None:
    """The sandbox's hours [start, end) as a history load (continued until nothing remains)."""
    for _ in range(20):
        loaded = ping({"from": start.isoformat(), "to": end.isoformat()})
        assert loaded.status_code == 200, loaded.text
        if loaded.json()["remaining"] == 0:
            return
    raise AssertionError(f"the history load still has hours remaining: {loaded.text}")


@pytest.fixture
def policy_path(tmp_path: Path) -> str:
    path = tmp_path / "budgets.yaml"
    path.write_text(POLICY.format(idle="separate") + BUDGETS)
    return str(path)


@pytest.fixture
def november(ping: Pinger, db: Database) -> Database:
    """The sandbox's 1-9 November, and cluster ``other``: checkout 100 on the 8th (inside the
    run-rate window), discovery 5 on the 2nd (before it)."""
    load(ping, nov(1), nov(10))
    extra = [day_row("2026-11-08", "shop", "checkout", 100, cc="cc-100"), day_row("2026-11-02", "x", "discovery", 5)]
    for row in extra:
        row["cluster"] = "other"
    seed(db, extra)
    return db


def line_totals(db: Database, path: str, period: Period, now: datetime, by: str, **query: Any) -> dict[str, Decimal]:
    report = chargeback(db, load_policy(path), ReportQuery(period, now=now, **query), by)
    return {line.owner: line.total for line in report.lines if line.kind is LineKind.OWNER}


def cents(value: Fraction) -> Decimal:
    return Decimal(round(value * 100)).scaleb(-2)  # round() of a Fraction is half-even


def percent(part: Decimal, whole: Decimal) -> str:
    return str((part * 100 / whole).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN))


def expected(
    db: Database, path: str, month_to_date: Period, window: Period | None, now: datetime, left: int, **query: Any
) -> list[dict[str, Any]]:
    """The test's own reading of the method, from the chargeback of the periods it names."""
    amounts = {"checkout": "20.00", "discovery": "500.00", "cc-200": "30.00", "platform": "10.00"}
    found = []
    for key, name in (("owner", "checkout"), ("owner", "discovery"), ("cost_center", "cc-200"), ("owner", "platform")):
        by = "team" if key == "owner" else "cost-center"
        mtd = line_totals(db, path, month_to_date, now, by, **query).get(name, Decimal("0.00"))
        if window is None:
            forecast = Fraction(mtd)
        else:
            hours = (window.end - window.start) // timedelta(hours=1)
            rate = Fraction(line_totals(db, path, window, now, by, **query).get(name, Decimal(0))) / hours
            forecast = Fraction(mtd) + rate * left
        amount = Decimal(amounts[name])
        found.append(
            {
                key: name,
                "amount": amounts[name],
                "month_to_date": str(mtd),
                "forecast": str(cents(forecast)),
                "percent_used": percent(mtd, amount),
                "percent_forecast": percent(cents(forecast), amount),
                "over_budget_forecast": cents(forecast) > amount,
            }
        )
    return found


def figures(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in b.items() if k != "run_rate_per_hour"} for b in document["budgets"]]


def test_month_to_date_is_the_chargeback_line_and_the_forecast_its_stated_method(
    november: Database, policy_path: str
) -> None:
    now = nov(10, 9, 30)
    body = budgets_report(november, load_policy(policy_path), "2026-11", now).body
    assert figures(body) == expected(november, policy_path, Period(nov(1), nov(10)), Period(nov(3), nov(10)), now, 504)
    assert "2026-11-03..2026-11-09, 168 hours) x 504 hours left from 2026-11-10T00:00Z" in body["method"]
    assert body["run_rate_window"] == {"start": "2026-11-03T00:00:00Z", "end": "2026-11-10T00:00:00Z"}
    assert body["month_to_date"] == {"start": "2026-11-01T00:00:00Z", "end": "2026-11-10T00:00:00Z"}
    checkout, discovery, cost_centre, platform = body["budgets"]
    assert checkout["over_budget_forecast"] is True and discovery["over_budget_forecast"] is False
    assert Decimal(checkout["month_to_date"]) > 100  # the other cluster's 100 on the 8th counts
    assert platform["month_to_date"] == "0.00" and platform["forecast"] == "0.00"  # idle is not counted
    assert cost_centre["cost_center"] == "cc-200" and Decimal(cost_centre["month_to_date"]) > 0
    assert set(body["coverage"]["clusters"]) == {"other", "test"} and body["hours_left"] == 504
    assert body["coverage"]["clusters"]["test"]["final"] == 216  # 1-9 November: the hours read


def test_a_younger_month_and_younger_data_read_fewer_days(november: Database, policy_path: str) -> None:
    policy = load_policy(policy_path)
    early = nov(4, 12)
    body = budgets_report(november, policy, "2026-11", early).body
    assert "last 3 full days (2026-11-01..2026-11-03, 72 hours) (the month is younger)" in body["method"]
    assert figures(body) == expected(november, policy_path, Period(nov(1), nov(4)), Period(nov(1), nov(4)), early, 648)
    # Cluster "other" has rows on the 2nd and the 8th only: its window starts on the 8th.
    late = nov(10, 1)
    other = budgets_report(november, policy, "2026-11", late, cluster="other").body
    assert "last 2 full days (2026-11-08..2026-11-09, 48 hours) (the data is younger)" in other["method"]
    window = Period(nov(8), nov(10))
    assert figures(other) == expected(
        november, policy_path, Period(nov(1), nov(10)), window, late, 504, cluster="other"
    )


def test_the_cli_for_a_month_that_is_over(november: Database, database_url: str, policy_path: str) -> None:
    out = finops(database_url, "report", "budgets", "--month", "2026-11", "--policy", policy_path, "--format", "json")
    body = json.loads(out.stdout)
    assert "the month is over" in body["method"] and body["hours_left"] == 0 and body["run_rate_window"] is None
    month = Period(nov(1), datetime(2026, 12, 1, tzinfo=UTC))
    assert figures(body) == expected(november, policy_path, month, None, datetime.now(UTC), 0)
    assert "WARNING:" in out.stderr  # 21 November days missing: said, on stderr beside JSON
    table = finops(database_url, "report", "budgets", "--month", "2026-11", "--policy", policy_path).stdout
    assert "owner checkout" in table and "cost centre cc-200" in table and "OVER" in table
    assert "method: the month is over" in table and table.startswith("WARNING:")
    for month_text, said in (("2999-01", "month: 2999-01 has not started yet"), ("November", "month: 'November'")):
        refused = finops(database_url, "report", "budgets", "--month", month_text, "--policy", policy_path, check=False)
        assert refused.returncode == 2 and said in refused.stderr and refused.stdout == ""


def test_the_metric_families_are_the_reports_figures(november: Database, database_url: str, policy_path: str) -> None:
    now = nov(10, 9, 30)
    settings = CostApiSettings(
        DATABASE_URL=SecretStr(database_url), PROXY_TOKEN=SecretStr("x"), CLUSTER_ID="test", POLICY_PATH=policy_path
    )
    found = {
        (family.name, sample.labels["owner"], sample.labels["cost_center"]): sample.value
        for family in budget_families(november, settings, now)
        for sample in family.samples
        if sample.labels["cluster"] == "test" and sample.labels["currency"] == "USD"
    }
    body = budgets_report(november, load_policy(policy_path), "2026-11", now, cluster="test").body
    wanted = {}
    for budget in body["budgets"]:
        owner, cost_centre = budget.get("owner", ""), budget.get("cost_center", "")
        for name, field in (("amount", "amount"), ("month_to_date", "month_to_date"), ("forecast", "forecast")):
            wanted[(f"finops_budget_{name}", owner, cost_centre)] = float(Decimal(budget[field]))
    assert found == wanted and len(wanted) == 12
    assert found[("finops_budget_forecast", "checkout", "")] > found[("finops_budget_amount", "checkout", "")]


@pytest.fixture(scope="module")
def budgets_api(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    policy = tmp_path_factory.mktemp("budgets") / "policy.yaml"
    policy.write_text(POLICY.format(idle="separate") + BUDGETS)
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, METRICS_TOKEN=METRICS, POLICY_PATH=str(policy)) as url:
        yield url


def gauges(url: str) -> dict[str, dict[tuple[str, str], float]]:
    text = httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {METRICS}"}, timeout=60).text
    found: dict[str, dict[tuple[str, str], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("finops_budget_"):
                assert sample.labels["cluster"] == "test" and sample.labels["currency"] == "USD"
                key = (sample.labels["owner"], sample.labels["cost_center"])
                found.setdefault(sample.name, {})[key] = sample.value
    return found


def test_the_api_and_the_metrics_give_the_reports_figures(
    ping: Pinger, db: Database, budgets_api: str, policy_path: str
) -> None:
    today = midnight(datetime.now(UTC))
    load(ping, today - timedelta(days=3), today)  # whatever the date: the current month or the last
    response = get(budgets_api, "/api/v1/budgets")
    assert response.status_code == 200, response.text
    body = response.json()
    own = budgets_report(db, load_policy(policy_path), None, cluster="test").body
    assert (body["budgets"], body["method"], body["cluster"]) == (own["budgets"], own["method"], "test")
    assert get(budgets_api, "/api/v1/budgets?month=2026-11").json()["month"]["start"] == "2026-11-01T00:00:00Z"
    metrics = gauges(budgets_api)
    for budget in body["budgets"]:
        key = (budget.get("owner", ""), budget.get("cost_center", ""))
        assert metrics["finops_budget_amount"][key] == float(Decimal(budget["amount"]))
        assert metrics["finops_budget_month_to_date"][key] == float(Decimal(budget["month_to_date"]))
        forecasts = metrics.get("finops_budget_forecast", {})
        assert forecasts.get(key) == (None if budget["forecast"] is None else float(Decimal(budget["forecast"])))
    assert len(metrics["finops_budget_amount"]) == 4
    for forged in (
        get(budgets_api, "/api/v1/budgets", app="argocd:web"),
        get(budgets_api, "/api/v1/budgets", token="x"),
    ):
        assert forged.status_code == 403 and "checkout" not in forged.text
    bad = get(budgets_api, "/api/v1/budgets?month=October")
    assert bad.status_code == 400 and "month" in bad.json()["error"]
    assert "has not started" in get(budgets_api, "/api/v1/budgets?month=2999-01").json()["error"]
