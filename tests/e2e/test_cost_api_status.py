"""We test these aspects of ``/api/v1/data-quality`` and ``/api/v1/config`` (``cost_api``), over
real HTTP against a served function:

- data quality reads the hour ledger (newest final hour, open and lost counts with the most recent
  and their reasons), the current month's unpriced share by cost (rollups) and by hours (ledger),
  the namespaces without an owner label, and the pricing source (the PriceBook version the newest
  stored hour was priced with; none: null with the reason);
- OpenCost's reachability is probed: reachable (the sandbox), unreachable (a closed port: still a
  200, ``reachable: false`` with the reason, a warning) and unknown without ``OPENCOST_URL``;
- any application's identity may read both (not only the gate); without the proxy's secret it is
  403; config carries the labels and currency of the policy, and no secret, DSN, path or address.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from finops.hours import truncate_to_hour
from infra.postgres import Database
from sandbox.localstack import Stack, serve_function
from tests.e2e.test_cost_api_apps import PROXY
from tests.net import refused_port

AGG = "namespace,controllerKind,controller,pod,container"
CI = "status-ci-token"


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("policy") / "policy.yaml"
    path.write_text("owner_label: owner\ncost_center_label: cc\nidle: separate\nidle_owner: platform\ncurrency: EUR\n")
    return path


@pytest.fixture(scope="module")
def api(stack: Stack, policy: Path) -> Iterator[str]:
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, CI_TOKEN=CI, POLICY_PATH=str(policy), THREADS="4") as url:
        yield url


@pytest.fixture(scope="module")
def api_opencost_down(stack: Stack) -> Iterator[str]:
    with (
        refused_port() as closed,
        serve_function(
            stack, "cost_api", PROXY_TOKEN=PROXY, OPENCOST_URL=f"http://127.0.0.1:{closed}", THREADS="4"
        ) as url,
    ):
        yield url


@pytest.fixture(scope="module")
def api_no_opencost(stack: Stack) -> Iterator[str]:
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, OPENCOST_URL="", THREADS="4") as url:
        yield url


def get(url: str, path: str, app: str | None = "shop:web", token: str | None = PROXY) -> httpx.Response:
    headers = {}
    if app is not None:
        headers["Argocd-Application-Name"] = app
    if token is not None:
        headers["X-Finops-Proxy-Token"] = token
    return httpx.get(url + path, headers=headers, timeout=30)


def _base() -> datetime:
    """The hour a test's ledger counts back from, read once per test, so that seeding and asserting
    agree when the test runs across an hour. In a month's first hour it is the month's start plus
    an hour: the newest seeded hour (an hour back) is then in the month whose unpriced share
    data-quality reports, not in the previous one."""
    now = truncate_to_hour(datetime.now(UTC))
    return max(now, now.replace(day=1, hour=1))


def _hour(base: datetime, hours_ago: int) -> datetime:
    return base - timedelta(hours=hours_ago)


def seed(db: Database, base: datetime, *, priced_newest: bool) -> dict[str, Any]:
    """A ledger of 6 final hours, 2 open, 3 lost before ``base``; rollups of its day with an unowned
    namespace and some unpriced cost; a PriceBook that priced everything but (optionally) the
    newest hour."""
    today = base.date()
    with db.connection() as conn:
        book = conn.execute(
            "INSERT INTO pricebooks (cluster, namespace, name, uid, fingerprint, currency, valuation_mode, cpu_hour,"
            " spot_cpu_hour, ram_gb_hour, spot_ram_gb_hour, pv_gb_hour, gpu_hour, network_gib)"
            " VALUES ('test', 'finops', 'standard', 'u1', 'f00d', 'USD', 'currency', 0.5, 0, 0, 0, 0, 0, 0)"
            " RETURNING id"
        ).fetchone()
        assert book is not None
        states = {**{h: "lost" for h in (30, 29, 28)}, **{h: "final" for h in range(8, 2, -1)}, 2: "open", 1: "open"}
        for ago, state in states.items():
            newest = ago == 1
            priced = not newest or priced_newest
            conn.execute(
                "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, pricebook_id, currency,"
                " reason) VALUES ('test', %s, %s, %s, %s, %s, %s, %s)",
                (
                    AGG,
                    _hour(base, ago),
                    state,
                    0 if state == "lost" else 4,
                    book["id"] if priced and state != "lost" else None,
                    "USD" if priced and state != "lost" else None,
                    "older than OPENCOST_HISTORY_HOURS (360 h): OpenCost no longer has it" if state == "lost" else None,
                ),
            )
        for namespace, team, currency, micros in [
            ("shop", "shop", "USD", 30_000_000),
            ("legacy", "", "USD", 6_000_000),
            ("orphans", "", None, 4_000_000),
        ]:
            conn.execute(
                "INSERT INTO allocation_daily (cluster, aggregation, day, namespace, entry_kind, team, cost_center,"
                " currency, hours, cpu_cost_micros, gpu_cost_micros, ram_cost_micros, pv_cost_micros, lb_cost_micros,"
                " network_cost_micros, total_cost_micros, billed_core_hours, requested_core_hours, used_core_hours,"
                " billed_gib_hours, requested_gib_hours, used_gib_hours)"
                " VALUES ('test', %s, %s, %s, 'workload', %s, '', %s, 24, %s, 0, 0, 0, 0, 0, %s, 0, 0, 0, 0, 0, 0)",
                (AGG, today, namespace, team, currency, micros, micros),
            )
    return {"book": book["id"]}


def test_data_quality_reports_the_ledger_prices_and_owners(api: str, db: Database) -> None:
    base = _base()
    seed(db, base, priced_newest=True)
    answer = get(api, "/api/v1/data-quality")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    ledger = body["ledger"]
    assert ledger["newestFinalHour"] == _hour(base, 3).strftime("%Y-%m-%dT%H:%MZ")
    assert (ledger["final"], ledger["open"], ledger["lost"]) == (6, 2, 3)
    assert [h["hour"] for h in ledger["recentLost"]] == [
        _hour(base, a).strftime("%Y-%m-%dT%H:%MZ") for a in (28, 29, 30)
    ]
    assert "OPENCOST_HISTORY_HOURS" in ledger["recentLost"][0]["reason"]
    assert len(ledger["recentOpen"]) == 2
    by_cost = body["unpriced"]["byCost"]
    assert (by_cost["unpriced"], by_cost["total"], by_cost["share"]) == ("4.00", "40.00", "0.1000")
    assert [n["namespace"] for n in body["unownedNamespaces"]["namespaces"]] == ["legacy", "orphans"]
    assert body["pricing"]["pricebook"]["name"] == "standard" and body["pricing"]["pricebook"]["version"] == "f00d"
    assert body["pricing"]["pricebook"]["currency"] == "USD" and body["pricing"]["reason"] is None
    assert body["pricing"]["pricebook"]["source"] == "pricebook"
    assert body["opencost"]["reachable"] is True
    assert any("3 hours are lost" in w for w in body["warnings"])


def test_opencost_prices_are_named_as_such(api: str, db: Database) -> None:
    seed(db, _base(), priced_newest=True)
    with db.connection() as conn:
        conn.execute("UPDATE pricebooks SET source = 'opencost', namespace = '', name = 'PRICING_SOURCE'")
    pricing = get(api, "/api/v1/data-quality").json()["pricing"]
    assert (pricing["pricebook"]["source"], pricing["pricebook"]["name"]) == ("opencost", "PRICING_SOURCE")


def test_an_unpriced_newest_hour_is_named(api: str, db: Database) -> None:
    seed(db, _base(), priced_newest=False)
    body = get(api, "/api/v1/data-quality").json()
    assert "was collected with no active PriceBook" in body["pricing"]["reason"]
    assert body["unpriced"]["byHours"]["unpriced"] >= 1
    assert body["unpriced"]["byHours"]["share"] is not None


def test_an_empty_database_says_why_figures_are_missing(api: str, db: Database) -> None:
    body = get(api, "/api/v1/data-quality").json()
    assert body["ledger"]["newestFinalHour"] is None
    assert body["pricing"] == {"pricebook": None, "reason": "no PriceBook was ever active: rows are stored unpriced"}
    assert body["unpriced"]["byCost"]["share"] is None
    assert any("no hour is final yet" in w for w in body["warnings"])


def test_opencost_down_is_reported_never_a_5xx(api_opencost_down: str, db: Database) -> None:
    answer = get(api_opencost_down, "/api/v1/data-quality")
    assert answer.status_code == 200, answer.text
    opencost = answer.json()["opencost"]
    assert opencost["reachable"] is False and opencost["reason"]
    assert "127.0.0.1" not in answer.text  # the address is never shown
    assert any(w.startswith("OpenCost is not reachable") for w in answer.json()["warnings"])


def test_without_opencost_url_reachability_is_unknown(api_no_opencost: str, db: Database) -> None:
    opencost = get(api_no_opencost, "/api/v1/data-quality").json()["opencost"]
    assert opencost == {"reachable": None, "reason": "OPENCOST_URL not set"}
    assert get(api_no_opencost, "/api/v1/config").json()["opencost"] == {"configured": False}


def test_config_is_non_secret_and_follows_the_policy(api: str, stack: Stack, policy: Path, db: Database) -> None:
    answer = get(api, "/api/v1/config")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["cluster"] == "test" and body["currency"] == "EUR"
    assert body["labels"] == {"owner": "owner", "costCenter": "cc", "source": "policy"}
    assert body["clusterScopeApp"] == "argocd:cost-gate" and body["chargeback"]["enabled"] is True
    assert body["cloudEstimates"]["enabled"] is True and body["cloudEstimates"]["maxBodyBytes"] == 10 * 1024 * 1024
    for secret in (PROXY, CI, stack.database_url, stack.ping_token, stack.opencost_url, str(policy)):
        assert secret not in answer.text


@pytest.mark.parametrize("path", ["/api/v1/data-quality", "/api/v1/config"])
def test_any_application_may_read_but_only_through_the_proxy(api: str, db: Database, path: str) -> None:
    assert get(api, path, app="team-apps:billing").status_code == 200
    assert get(api, path, app="argocd:cost-gate").status_code == 200
    assert get(api, path, token=None).status_code == 403
    assert get(api, path, token="guess").status_code == 403
    assert get(api, path, app=None).status_code == 403
    ci = httpx.get(api + path, headers={"Authorization": f"Bearer {CI}"})
    assert ci.status_code == 403
