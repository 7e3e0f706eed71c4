"""We test these aspects of report coverage, through the ``finops`` CLI and ``cost_api`` over HTTP,
against a real PostgreSQL holding daily rollups and the hour ledger (``allocation_hours``):

- October with one week of its 744 hours final: the JSON says ``complete: false`` and exactly 576
  missing hours as one range; the table opens with a WARNING naming them; CSV stays plain (the
  warning goes to stderr); ``--require-complete`` and the policy's ``require_complete`` refuse it
  with exit 4 and one line naming the cluster and the range; a complete month passes;
- a lost hour is listed with its reason;
- a month without data still bills the policy's fixed costs on ``__shared__``: in the clusters
  they name, else in ``CLUSTER_ID``'s, else in ``default``;
- unpriced hours (ledger) or unpriced rollup days refuse every report and export, always,
  naming the hours and the fix;
- exports write a ``.coverage.json`` sidecar beside a plain CSV, and write nothing when refused;
- cost_api's chargeback carries ``coverage``, answers 409 with ``require_complete=true`` (and
  the coverage), 409 for unpriced hours, 400 for a bad switch;
- with the ledger written by ``collect_allocations`` itself: its final and open hours are
  counted, and hours it stored without a PriceBook refuse the report.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox.localstack import Stack, serve_function
from tests.e2e.conftest import Pinger
from tests.e2e.test_reports import POLICY, PROXY, day_row, get, lines, seed

AGGREGATION = "namespace,controllerKind,controller,pod,container"
MONTH = ("--month", "2026-10")
WEEK_MISSING = "2026-10-08T00:00Z..2026-10-31T23:00Z missing"
LOST = "OpenCost no longer has this hour"


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 10, day, hour, tzinfo=UTC)


def ledger(
    db: Database,
    first: datetime,
    last: datetime,
    state: str = "final",
    *,
    cluster: str = "test",
    currency: str | None = "USD",
    reason: str | None = None,
) -> None:
    """Ledger rows for every hour from ``first`` to ``last`` (included), 10 rows each."""
    hours = [first + timedelta(hours=n) for n in range((last - first) // timedelta(hours=1) + 1)]
    columns = ("cluster", "aggregation", "hour", "state", "row_count", "currency", "reason")
    with db.connection() as conn:
        db.copy_rows(
            conn, "allocation_hours", columns, [(cluster, AGGREGATION, h, state, 10, currency, reason) for h in hours]
        )


def finops(database_url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    binary = os.path.join(os.path.dirname(sys.executable), "finops")
    environment = {k: v for k, v in os.environ.items() if k != "CLUSTER_ID"} | {"DATABASE_URL": database_url, **env}
    return subprocess.run([binary, *args], env=environment, capture_output=True, text=True, check=False)


@pytest.fixture
def policy(tmp_path: Path) -> Any:
    def write(extra: str = "") -> str:
        path = tmp_path / f"policy-{len(list(tmp_path.iterdir()))}.yaml"
        path.write_text(POLICY.format(idle="separate") + extra)
        return str(path)

    return write


@pytest.fixture
def october(db: Database) -> Database:
    """The worked example's October rollups (cluster ``test``, USD)."""
    seed(
        db,
        [
            day_row("2026-10-15", "payments-api", "payments", 3_000),
            day_row("2026-10-15", "catalog", "catalog", 2_000),
            day_row("2026-10-15", "", "", 1_000, kind="idle"),
            day_row("2026-10-15", "kube-system", "platform", 2_000),
            day_row("2026-10-20", "legacy", "", 10),
        ],
    )
    return db


@pytest.fixture
def one_week(october: Database) -> Database:
    """October's first week final in the ledger (168 of 744 hours), nothing after."""
    ledger(october, at(1), at(7, 23))
    return october


def chargeback(database_url: str, policy: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return finops(database_url, "report", "chargeback", *MONTH, "--policy", policy, *args, **env)


def test_a_week_of_october_is_576_missing_hours_and_warns(one_week: Database, database_url: str, policy: Any) -> None:
    out = chargeback(database_url, policy(), "--format", "json")
    assert out.returncode == 0, out.stderr
    coverage = json.loads(out.stdout)["coverage"]
    assert (coverage["complete"], coverage["period_over"], coverage["hours"]) == (False, True, 744)
    test = coverage["clusters"]["test"]
    assert (test["final"], test["open"], test["lost"], test["missing"], test["unpriced"]) == (168, 0, 0, 576, 0)
    assert test["incomplete"] == [WEEK_MISSING] and test["currencies"] == ["USD"]
    assert out.stderr.startswith("WARNING: ") and WEEK_MISSING in out.stderr  # stdout stays JSON
    assert json.loads(out.stdout)["total"] == "8010.00"  # the figures are the collected ones

    table = chargeback(database_url, policy()).stdout.splitlines()
    assert table[0].startswith("WARNING: 2026-10-01T00:00Z..2026-11-01T00:00Z is incomplete; ")
    assert f"cluster test: 576 missing of 744 hours ({WEEK_MISSING})" in table[0]
    assert table[1].startswith("Chargeback ")

    plain = chargeback(database_url, policy(), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(plain.stdout)))
    assert rows[0]["owner"] == "payments" and rows[-1]["owner"] == "TOTAL" and "WARNING" in plain.stderr


@pytest.mark.parametrize("how", ["flag", "policy"])
def test_require_complete_refuses_naming_the_cluster_and_hours(
    one_week: Database, database_url: str, policy: Any, how: str
) -> None:
    args = ("--require-complete",) if how == "flag" else ()
    out = chargeback(database_url, policy("require_complete: true\n" if how == "policy" else ""), *args)
    assert out.returncode == 4 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith("finops: refused (require_complete): 2026-10-01T00:00Z..2026-11-01T00:00Z")
    assert f"cluster test: 576 missing of 744 hours ({WEEK_MISSING})" in out.stderr


def test_a_complete_month_passes_and_a_lost_hour_is_named_with_its_reason(
    october: Database, database_url: str, policy: Any
) -> None:
    ledger(october, at(1), at(31, 23))
    out = chargeback(database_url, policy(), "--require-complete")
    assert out.returncode == 0 and out.stdout.startswith("Chargeback ") and out.stderr == ""
    assert json.loads(chargeback(database_url, policy(), "--format", "json").stdout)["coverage"]["complete"] is True

    with october.connection() as conn:
        conn.execute("UPDATE allocation_hours SET state = 'lost', reason = %s WHERE hour = %s", (LOST, at(3, 5)))
    test = json.loads(chargeback(database_url, policy(), "--format", "json").stdout)["coverage"]["clusters"]["test"]
    assert (test["final"], test["lost"], test["lost_reasons"]) == (743, 1, {LOST: 1})
    assert test["incomplete"] == [f"2026-10-03T05:00Z lost: {LOST}"]
    refused = chargeback(database_url, policy(), "--require-complete")
    assert refused.returncode == 4 and f"1 lost of 744 hours (2026-10-03T05:00Z lost: {LOST})" in refused.stderr


FIXED = """shared:
  namespaces: [kube-system]
  fixed:
    - {name: control-plane, amount: "73.00"}
"""


@pytest.mark.parametrize(
    ("fixed", "env", "cluster", "shared"),
    [
        (FIXED + '    - {name: lb, amount: "20.00", cluster: prod-eu}\n', {}, "prod-eu", "93.00"),
        (FIXED, {"CLUSTER_ID": "edge-1"}, "edge-1", "73.00"),
        (FIXED, {}, "default", "73.00"),
    ],
    ids=["cluster-named-by-the-policy", "cluster-id", "no-cluster-known"],
)
def test_a_month_without_data_still_bills_the_fixed_overhead(
    db: Database, database_url: str, tmp_path: Path, fixed: str, env: dict[str, str], cluster: str, shared: str
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("currency: USD\n" + fixed)
    out = chargeback(database_url, str(path), "--format", "json", **env)
    assert out.returncode == 0, out.stderr
    document = json.loads(out.stdout)
    assert lines(document) == {"__shared__": shared, "platform": "0.00"} and document["total"] == shared
    assert list(document["coverage"]["clusters"]) == [cluster]
    assert document["coverage"]["clusters"][cluster]["has_data"] is False
    assert document["coverage"]["clusters"][cluster]["missing"] == 744
    assert f"cluster {cluster}: no data, 744 missing of 744 hours" in out.stderr


@pytest.mark.parametrize(
    "report",
    [
        ("report", "chargeback", *MONTH, "--format", "json"),
        ("report", "team", "--team", "payments", *MONTH),
        ("report", "unlabelled", *MONTH),
        ("report", "daily", "--days", "400"),
        ("export", "chargeback-csv", *MONTH),
        ("export", "focus", *MONTH),
    ],
    ids=lambda args: "-".join(args[:2]),
)
def test_unpriced_hours_refuse_every_report(
    october: Database, database_url: str, policy: Any, tmp_path: Path, report: tuple[str, ...]
) -> None:
    ledger(october, at(1), at(2, 23))
    ledger(october, at(3), at(3, 5), currency=None)  # collected while no PriceBook was active
    ledger(october, at(3, 6), at(31, 23))
    args = list(report)
    if report[0] == "export":
        args += ["--to", f"{tmp_path}/"]
    if report[1] in ("chargeback", "team") or report[0] == "export":
        args += ["--policy", policy()]
    out = finops(database_url, *args)
    assert out.returncode == 4 and out.stdout == "" and list(tmp_path.glob("*.csv")) == []
    assert "cluster test: 6 hours 2026-10-03T00:00Z..2026-10-03T05:00Z" in out.stderr
    assert "Activate a PriceBook" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_unpriced_rollups_refuse_even_without_ledger_rows(db: Database, database_url: str, policy: Any) -> None:
    unpriced = day_row("2026-10-15", "payments-api", "payments", 3_000)
    unpriced["currency"] = None
    seed(db, [day_row("2026-10-14", "catalog", "catalog", 10), unpriced])
    out = chargeback(database_url, policy(), "--format", "json")
    assert out.returncode == 4 and "cluster test: cost without a currency on 2026-10-15T00:00Z" in out.stderr


def test_exports_write_a_coverage_sidecar_and_nothing_when_refused(
    one_week: Database, database_url: str, policy: Any, tmp_path: Path
) -> None:
    out = finops(database_url, "export", "chargeback-csv", *MONTH, "--policy", policy(), "--to", f"{tmp_path}/")
    assert out.returncode == 0 and WEEK_MISSING in out.stderr
    printed = json.loads(out.stdout)
    assert printed["coverage_url"] == f"{tmp_path}/chargeback-all-2026-10.coverage.json"
    assert (tmp_path / "chargeback-all-2026-10.csv").read_text().startswith("owner,allocated,")
    sidecar = json.loads((tmp_path / "chargeback-all-2026-10.coverage.json").read_text())
    assert sidecar["file"] == printed["url"] and sidecar["total"] == printed["total"]
    assert sidecar["coverage"]["clusters"]["test"]["missing"] == 576 and sidecar["coverage"] == printed["coverage"]

    focus = finops(database_url, "export", "focus", *MONTH, "--policy", policy(), "--to", f"{tmp_path}/focus.csv")
    assert focus.returncode == 0 and (tmp_path / "focus.coverage.json").exists()
    refused = tmp_path / "refused"
    refused.mkdir()
    for kind in ("chargeback-csv", "focus"):
        out = finops(
            database_url, "export", kind, *MONTH, "--policy", policy(), "--to", f"{refused}/", "--require-complete"
        )
        assert out.returncode == 4 and WEEK_MISSING in out.stderr
    assert list(refused.iterdir()) == []


@pytest.fixture(scope="module")
def api(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    policy = tmp_path_factory.mktemp("policy") / "policy.yaml"
    policy.write_text(POLICY.format(idle="separate"))
    with serve_function(stack, "cost_api", PROXY_TOKEN=PROXY, POLICY_PATH=str(policy)) as url:
        yield url


def test_cost_api_chargeback_carries_coverage_and_refuses_when_asked(one_week: Database, api: str) -> None:
    answer = get(api, "/api/v1/chargeback?month=2026-10")
    assert answer.status_code == 200, answer.text
    assert answer.json()["coverage"]["clusters"]["test"]["missing"] == 576
    refused = get(api, "/api/v1/chargeback?month=2026-10&require_complete=true")
    assert refused.status_code == 409
    assert WEEK_MISSING in refused.json()["error"] and "cluster test" in refused.json()["error"]
    assert refused.json()["coverage"]["clusters"]["test"]["final"] == 168 and "lines" not in refused.json()
    assert get(api, "/api/v1/chargeback?month=2026-10&require_complete=yes").status_code == 400
    document = httpx.get(api + "/api/v1/openapi.json").json()["paths"]["/api/v1/chargeback"]["get"]
    assert "409" in document["responses"] and "require_complete" in {p["name"] for p in document["parameters"]}


def test_cost_api_refuses_unpriced_hours_always(october: Database, api: str) -> None:
    ledger(october, at(1), at(31, 23), currency=None)
    refused = get(api, "/api/v1/chargeback?month=2026-10")
    assert refused.status_code == 409 and "2026-10-01T00:00Z..2026-10-31T23:00Z" in refused.json()["error"]


NOVEMBER = ("report", "chargeback", "--month", "2026-11", "--format", "json")


def test_the_collectors_ledger_is_what_reports_count(ping: Pinger, database_url: str, policy: Any) -> None:
    assert ping({"scheduledTime": "2026-11-20T10:07:00Z"}).status_code == 200  # 07..09 final, 10 open
    out = finops(database_url, *NOVEMBER, "--policy", policy())
    assert out.returncode == 0, out.stderr
    test = json.loads(out.stdout)["coverage"]["clusters"]["test"]
    assert (test["hours"], test["final"], test["open"], test["missing"], test["unpriced"]) == (720, 3, 1, 716, 0)
    assert test["incomplete"][0] == "2026-11-01T00:00Z..2026-11-20T06:00Z missing"
    assert test["incomplete"][1].startswith("2026-11-20T10:00Z open")
    assert test["incomplete"][2] == "2026-11-20T11:00Z..2026-11-30T23:00Z missing"


def test_hours_the_collector_stored_without_a_pricebook_refuse_the_report(
    ping: Pinger, database_url: str, policy: Any, kube: sandbox_kube.KubeServer
) -> None:
    books = kube.store.list("finops.stakater.com/v1alpha1", "pricebooks")
    for book in books:
        meta = book["metadata"]
        kube.store.delete("finops.stakater.com/v1alpha1", "pricebooks", meta["namespace"], meta["name"])
    try:
        assert ping({"scheduledTime": "2026-11-20T10:07:00Z"}).json()["outcome"] == "partial"
    finally:
        kube.store.apply_manifests(books)
    out = finops(database_url, *NOVEMBER, "--policy", policy())
    assert out.returncode == 4 and out.stdout == ""
    assert "cluster test: 4 hours 2026-11-20T07:00Z..2026-11-20T10:00Z" in out.stderr
