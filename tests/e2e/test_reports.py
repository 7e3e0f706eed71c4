"""We test these aspects of showback and chargeback, through the ``finops`` CLI and ``cost_api``
over HTTP, against a real PostgreSQL holding daily rollups:

- the method's worked example: 10,000 a month (8,000 nodes incl. 1,000 idle, 2,000 shared),
  option A and option B, line by line, adding up to the bill to the cent (JSON, CSV, table);
- an invalid policy or a currency that differs from the data gives a clear error and no report;
- the team report (total, change against the previous month, top namespaces, requests against
  usage, share of idle and shared), the daily view and the unlabelled namespaces;
- the cluster views of cost_api need the gate application and the proxy secret; the OpenAPI
  document lists exactly the routes served;
- every report carries its ``coverage`` (here no hour ledger is seeded, so every hour is missing;
  ``test_report_coverage.py`` tests coverage itself).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.postgres import Database
from sandbox.localstack import Stack, serve_function

PROXY = "test-proxy-token"
POLICY = """
owner_label: team
idle: {idle}
idle_owner: platform
shared:
  namespaces: [kube-system]
  split: proportional
currency: USD
"""


def day_row(day: str, namespace: str, team: str, dollars: int, kind: str = "workload", **extra: Any) -> dict[str, Any]:
    micros = dollars * 1_000_000
    row = {
        "cluster": "test",
        "aggregation": "namespace,controllerKind,controller,pod,container",
        "day": day,
        "namespace": namespace,
        "entry_kind": kind,
        "team": team,
        "cost_center": extra.get("cc", ""),
        "currency": "USD",
        "hours": 24,
        "cpu_cost_micros": micros,
        "gpu_cost_micros": 0,
        "ram_cost_micros": 0,
        "pv_cost_micros": 0,
        "lb_cost_micros": 0,
        "network_cost_micros": 0,
        "total_cost_micros": micros,
        "billed_core_hours": extra.get("billed", 0),
        "requested_core_hours": extra.get("requested", 0),
        "used_core_hours": extra.get("used", 0),
        "billed_gib_hours": 0,
        "requested_gib_hours": 0,
        "used_gib_hours": 0,
    }
    return row


def seed(db: Database, rows: list[dict[str, Any]]) -> None:
    columns = list(rows[0])
    with db.connection() as conn:
        db.copy_rows(conn, "allocation_daily", columns, [tuple(r[c] for c in columns) for r in rows])


@pytest.fixture
def example(db: Database) -> Database:
    """The method page's cluster: Payments 4,000, Catalog 2,000, Analytics 1,000, idle 1,000,
    shared 2,000 (kube-system) in October; a smaller September; an unlabelled namespace."""
    seed(
        db,
        [
            day_row("2026-10-15", "payments-api", "payments", 3_000, billed=2_000, requested=2_000, used=600),
            day_row("2026-10-16", "payments-worker", "payments", 1_000, billed=500, requested=400, used=450),
            day_row("2026-10-15", "catalog", "catalog", 2_000),
            day_row("2026-10-15", "analytics", "analytics", 1_000),
            day_row("2026-10-15", "", "", 1_000, kind="idle"),
            day_row("2026-10-15", "kube-system", "platform", 2_000),
            day_row("2026-09-15", "payments-api", "payments", 2_500),
            day_row("2026-09-15", "legacy", "", 0),
            day_row("2026-10-20", "legacy", "", 0),
        ],
    )
    return db


def finops(database_url: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    binary = os.path.join(os.path.dirname(sys.executable), "finops")
    env = {**os.environ, "DATABASE_URL": database_url}
    return subprocess.run([binary, *args], env=env, capture_output=True, text=True, check=check)


@pytest.fixture
def policy_file(tmp_path: Path) -> Any:
    def write(idle: str = "separate", text: str | None = None) -> str:
        path = tmp_path / f"policy-{idle}.yaml"
        path.write_text(text if text is not None else POLICY.format(idle=idle))
        return str(path)

    return write


def lines(document: dict[str, Any]) -> dict[str, str]:
    return {line["owner"]: line["total"] for line in document["lines"]}


def test_option_b_the_worked_example_to_the_cent(example: Database, database_url: str, policy_file: Any) -> None:
    out = finops(
        database_url, "report", "chargeback", "--month", "2026-10", "--policy", policy_file(), "--format", "json"
    )
    document = json.loads(out.stdout)
    assert lines(document) == {
        "payments": "5142.86",
        "catalog": "2571.43",
        "analytics": "1285.71",
        "platform": "1000.00",
        "__unallocated__": "0.00",  # legacy has no owner label: published, even when it costs nothing
    }
    assert document["total"] == "10000.00" and document["currency"] == "USD"
    assert document["period"] == {"start": "2026-10-01T00:00:00Z", "end": "2026-11-01T00:00:00Z"}
    assert set(document) == {
        *("period", "currency", "policy", "by", "lines", "total", "coverage", "basis", "reconciliation", "carbon")
    }
    assert document["by"] == "team"  # the default: each line's owner is a team
    assert document["basis"] == "estimate" and document["reconciliation"] is None
    assert document["coverage"]["complete"] is False and document["coverage"]["hours"] == 744
    assert document["coverage"]["clusters"]["test"]["missing"] == 744  # rollups, but no hour ledger
    assert sum(Decimal(t) for t in lines(document).values()) == Decimal(document["total"])
    idle = [li for li in document["lines"] if li["idle"] != "0.00"]
    assert [(li["owner"], li["idle"]) for li in idle] == [("platform", "1000.00")]


def test_option_a_the_worked_example_and_csv(example: Database, database_url: str, policy_file: Any) -> None:
    path = policy_file("distribute")
    document = json.loads(
        finops(database_url, "report", "chargeback", "--month", "2026-10", "--policy", path, "--format", "json").stdout
    )
    assert lines(document) == {
        "payments": "5714.29",
        "catalog": "2857.14",
        "analytics": "1428.57",
        "__unallocated__": "0.00",
    }
    assert document["total"] == "10000.00"
    rows = list(
        csv.DictReader(
            io.StringIO(
                finops(
                    database_url, "report", "chargeback", "--month", "2026-10", "--policy", path, "--format", "csv"
                ).stdout
            )
        )
    )
    body, total = rows[:-1], rows[-1]
    assert total["owner"] == "TOTAL" and sum(Decimal(r["total"]) for r in body) == Decimal(total["total"]) == 10_000
    table = finops(database_url, "report", "chargeback", "--month", "2026-10", "--policy", path).stdout
    assert "5714.29" in table and "TOTAL" in table


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("currency: USD\nidle: sometimes\n", "policy.idle"),
        ("currency: USD\nshared:\n  fixed:\n    - {name: cp, amount: '7x'}\n", "policy.shared.fixed[0].amount"),
        ("currency: USD\nowner: team\n", "policy.owner"),
        ("idle: separate\n", "policy.currency"),
        ("currency: EUR\n", "EUR"),  # valid policy, but the data is priced in USD
        ("[not, a, mapping]\n", "mapping"),
    ],
    ids=["bad-idle", "bad-amount", "unknown-key", "no-currency", "currency-mismatch", "not-a-mapping"],
)
def test_an_invalid_policy_gives_no_report(
    example: Database, database_url: str, policy_file: Any, text: str, named: str
) -> None:
    out = finops(
        database_url,
        "report",
        "chargeback",
        "--month",
        "2026-10",
        "--policy",
        policy_file(text=text),
        "--format",
        "json",
        check=False,
    )
    assert out.returncode == 2 and named in out.stderr and out.stdout == ""


def test_team_report_daily_view_and_unlabelled(example: Database, database_url: str, policy_file: Any) -> None:
    team = json.loads(
        finops(
            database_url,
            "report",
            "team",
            "--team",
            "payments",
            "--month",
            "2026-10",
            "--policy",
            policy_file(),
            "--format",
            "json",
        ).stdout
    )
    assert (team["total"], team["previous_total"], team["change"]) == ("5142.86", "2500.00", "2642.86")
    assert [n["namespace"] for n in team["top_namespaces"]] == ["payments-api", "payments-worker"]
    cpu = team["requests_vs_usage"]["cpu"]
    assert (cpu["billed_core_hours"], cpu["used_core_hours"], cpu["used_of_billed"]) == ("2500.00", "1050.00", "0.42")
    assert team["idle_share"] == "0.00" and team["shared_share"] == "1142.86"
    assert team["coverage"]["clusters"]["test"]["hours"] == 744
    assert team["previous_coverage"]["clusters"]["test"]["hours"] == 720  # September
    out = finops(database_url, "report", "unlabelled", "--month", "2026-10", "--format", "json")
    unlabelled = json.loads(out.stdout)
    assert [r["namespace"] for r in unlabelled["namespaces"]] == ["legacy"]
    assert unlabelled["coverage"]["complete"] is False


@pytest.fixture(scope="session")
def api(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    policy = tmp_path_factory.mktemp("policy") / "policy.yaml"
    policy.write_text(POLICY.format(idle="separate"))
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, POLICY_PATH=str(policy)) as url:
        yield url


def get(url: str, path: str, app: str = "argocd:cost-gate", token: str = PROXY) -> httpx.Response:
    headers = {"Argocd-Application-Name": app, "X-Finops-Proxy-Token": token}
    return httpx.get(url + path, headers=headers, timeout=30)  # a loaded machine: the first answer is slow


def test_cluster_views_need_the_gate_app_and_the_secret(example: Database, api: str) -> None:
    response = get(api, "/api/v1/chargeback?month=2026-10")
    assert response.status_code == 200, response.text
    assert lines(response.json())["payments"] == "5142.86"
    by_cc = get(api, "/api/v1/chargeback?month=2026-10&by=cost-center").json()
    assert by_cc["total"] == "10000.00"
    for forged in (
        get(api, "/api/v1/chargeback?month=2026-10", app="argocd:web"),
        get(api, "/api/v1/chargeback?month=2026-10", token="guess"),
    ):
        assert forged.status_code == 403 and "5142" not in forged.text
    assert get(api, "/api/v1/chargeback?month=October").status_code == 400


def test_openapi_lists_exactly_the_routes_served(api: str, db: Database) -> None:
    document = httpx.get(api + "/api/v1/openapi.json", timeout=30).json()
    assert document["openapi"].startswith("3.")
    documented = set(document["paths"])
    served = {
        "/api/v1/apps/{appNamespace}/{appName}/actual",
        "/api/v1/apps/{appNamespace}/{appName}/trend",
        "/api/v1/apps/{appNamespace}/{appName}/daily",
        "/api/v1/namespaces",
        "/api/v1/namespaces/{namespace}",
        "/api/v1/chargeback",
        "/api/v1/budgets",
        "/api/v1/idle-ranking",
        "/api/v1/anomalies",
        "/api/v1/apps/{appNamespace}/{appName}/cloud-estimate",  # GET (proxy) and POST (CI_TOKEN)
        "/api/v1/data-quality",
        "/api/v1/config",
        "/api/v1/apps/{appNamespace}/{appName}/rightsizing",
        "/api/v1/apps/{appNamespace}/{appName}/orphaned-pods",
        "/api/v1/orphaned-pods",
        "/api/v1/namespaces/{namespace}/orphaned-pods",
        "/api/v1/apps/{appNamespace}/{appName}/gpus",
        "/api/v1/apps/{appNamespace}/{appName}/carbon",
        "/api/v1/gpus",
        "/api/v1/carbon",
    }
    assert documented == served
    for template in documented:
        path = template.replace("{appNamespace}", "argocd").replace("{appName}", "web").replace("{namespace}", "shop")
        app = "argocd:web" if "/apps/" in template else "argocd:cost-gate"
        assert get(api, path, app=app).status_code in (200, 404)  # routed (404 only means "no data yet")
        assert get(api, path, app=app, token="guess").status_code == 403
    assert get(api, "/api/v1/undocumented").status_code == 404


def test_clusters_settle_their_own_overhead_and_cluster_narrows(
    example: Database, database_url: str, policy_file: Any
) -> None:
    other = [day_row("2026-10-15", "payments-api", "payments", 500), day_row("2026-10-15", "", "", 300, kind="idle")]
    for row in other:
        row["cluster"] = "other"
    seed(example, other)
    run = ["report", "chargeback", "--month", "2026-10", "--policy", policy_file(), "--format", "json"]
    both = json.loads(finops(database_url, *run).stdout)
    only = json.loads(finops(database_url, *run, "--cluster", "test").stdout)
    assert both["total"] == "10800.00" and only["total"] == "10000.00"
    # kube-system's shared 2,000 is test's: other's payments (500) receives none of it.
    assert lines(both)["payments"] == "5642.86" and lines(both)["platform"] == "1300.00"


def test_daily_view(example: Database, database_url: str) -> None:
    from datetime import UTC, date, datetime

    from finops.periods import Period
    from usecases.reports.service import ReportQuery, daily_view

    document = daily_view(
        example, ReportQuery(Period(datetime(2026, 10, 14, tzinfo=UTC), datetime(2026, 10, 17, tzinfo=UTC)))
    )
    assert document.body["coverage"]["hours"] == 72 and document.coverages[0].clusters[0].missing == 72
    view = document.body["days"]
    assert [d["day"] for d in view] == ["2026-10-15", "2026-10-16"]
    assert view[0]["owners"]["payments"] == "3000.00" and view[0]["owners"]["(idle)"] == "1000.00"
    assert view[1]["owners"] == {"payments": "1000.00"}
    assert date.fromisoformat(view[1]["day"]) > date.fromisoformat(view[0]["day"])
