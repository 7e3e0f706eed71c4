"""We test the fleet reports (``usecases.reports.fleet``): two clusters' two days collected as
history into their own PostgreSQL and into the fleet bucket (moto's S3), then:

- the fleet chargeback through DuckDB and through chDB equals PostgreSQL's, line by line, under
  two policies and three line keys; a local copy of the bucket gives the same report;
- the command's JSON, its warning for an incomplete month, ``--require-complete`` (exit 4),
  another currency (exit 2), a missing prefix, and a bad ``--fleet`` URL, each in one line;
- only the prefix's own files are read, not another fleet nested under it;
- the same report from a ClickHouse server, reached with clickhouse-connect over ClickHouse's HTTP
  interface (chDB behind it: no server can be installed here, ``tests/clickhouse_http.py``),
  from code and from the command (``--engine clickhouse``, ``FLEET_CLICKHOUSE_URL``); a wrong
  password, no server set, and a local folder are refused in one line, never showing the password;
  with ``FLEET_CLICKHOUSE_CLUSTER`` the query reads through ``s3Cluster`` (its text only: no
  ClickHouse cluster here);
- a central ``cost_api`` with ``FLEET_BUCKET`` serves the fleet's chargeback and namespaces;
- the team report, the budgets and the FOCUS export (1.3 and 1.2) from the bucket equal those
  from the database, field for field and row for row, and their commands write them; a
  ``--cluster`` or a bill ``--basis`` is refused in one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from finops.errors import InvalidInput
from finops.focus_rows import FocusVersion
from finops.money import format_amount
from finops.periods import Period
from finops.policy import parse_policy
from infra.kube import KubeClient
from infra.opencost import OpenCostClient
from infra.postgres import apply_migrations, connect
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.postgres import scratch_database
from tests.clickhouse_http import PASSWORD, USER, chdb_over_http
from tests.e2e.cli_runner import one_line_error, run_finops
from tests.e2e.fleet_world import AGGREGATION, BUCKET, files
from usecases.collect_allocations.service import CollectOptions, FleetBucket, collect_range
from usecases.reports.budgets import budgets_report
from usecases.reports.exports import focus_export
from usecases.reports.fleet import FleetLedger, fleet_chargeback, fleet_focus_export, fleet_reader
from usecases.reports.service import ReportQuery, chargeback, month_period, team_report

FIRST = datetime(2026, 11, 19, tzinfo=UTC)
TWO_DAYS = Period(FIRST, FIRST + timedelta(days=2))
POLICIES = {
    "separate": {"currency": "USD", "idle": "separate"},
    "distribute-even": {
        "currency": "USD",
        "idle": "distribute",
        "shared": {
            "namespaces": ["kube-system", "monitoring"],
            "split": "even",
            "fixed": [{"name": "control-plane", "amount": "73.00"}],
        },
    },
}


@dataclass(frozen=True)
class Fleet:
    prefix: str  # the fleet bucket
    dsn: str  # the database the same hours were collected into


@pytest.fixture(scope="module")
def fleet(pg_server: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer,
          fleet_s3: Any, moto_s3: str) -> Iterator[Fleet]:  # fmt: skip
    """Two clusters' two whole days loaded as history (every hour final) into a database of their
    own, and into the fleet bucket."""
    prefix = f"s3://{BUCKET}/fleet/"
    with scratch_database(pg_server, prefix="finops_fleet") as dsn:
        db = connect(dsn)
        try:
            apply_migrations(db)
            for cluster in ("prod", "dev"):
                options = CollectOptions(
                    cluster, AGGREGATION, 0, "team", "cost-center", fleet=FleetBucket(prefix, moto_s3)
                )
                source, kubernetes = OpenCostClient(opencost.url), KubeClient.from_url(kube.url)
                now, run = datetime.now(UTC), str(uuid4())
                done = collect_range(
                    db, source, kubernetes, options, start=FIRST, end=TWO_DAYS.end, now=now, run_id=run
                )
                assert done.fleet is not None and len(done.fleet.uploaded) == 48 and not done.warnings, done.warnings
        finally:
            db.close()
        yield Fleet(prefix, dsn)


@pytest.mark.parametrize("engine", ["duckdb", "chdb"])
@pytest.mark.parametrize("by", ["team", "cost-center", "namespace"])
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_the_fleet_report_is_postgresqls_to_the_cent(
    fleet: Fleet, moto_s3: str, name: str, by: str, engine: str
) -> None:
    policy = parse_policy(POLICIES[name])
    db = connect(fleet.dsn)
    try:
        expected = chargeback(db, policy, ReportQuery(TWO_DAYS, None), by)
    finally:
        db.close()
    found = fleet_chargeback(fleet.prefix, policy, TWO_DAYS, endpoint_url=moto_s3, by=by, engine=engine)
    assert expected.lines and found.lines == expected.lines and found.total == expected.total
    assert found.clusters == expected.clusters == ("dev", "prod")
    assert found.coverage is not None and found.coverage.complete
    assert [(c.cluster, c.final) for c in found.coverage.clusters] == [("dev", 48), ("prod", 48)]


def test_the_command_and_its_refusals(fleet: Fleet, moto_s3: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("currency: USD\nidle: separate\n")
    args = ["report", "chargeback", "--month", "2026-11", "--policy", str(policy), "--fleet", fleet.prefix,
            "--s3-endpoint", moto_s3, "--format", "json"]  # fmt: skip
    done = run_finops(*args)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    month = fleet_chargeback(
        fleet.prefix, parse_policy({"currency": "USD"}), month_period("2026-11"), endpoint_url=moto_s3
    )
    assert document["total"] == str(month.total) and document["coverage"]["complete"] is False
    assert "WARNING" in done.stderr  # a month of which two days are in the bucket
    refused = run_finops(*args, "--require-complete")
    assert refused.returncode == 4 and "missing" in refused.stderr
    policy.write_text("currency: EUR\n")
    other = run_finops(*args)
    assert other.returncode == 2
    assert other.stderr.strip().splitlines()[-1].startswith("finops: policy.currency is EUR but cluster dev's")
    missing = run_finops(*args[:7], f"s3://{BUCKET}/nowhere/", *args[8:])
    assert missing.returncode != 0 and "nowhere" in missing.stderr and "Traceback" not in missing.stderr


def test_a_local_copy_of_the_bucket_gives_the_same_report(
    fleet: Fleet, fleet_s3: Any, moto_s3: str, tmp_path: Path
) -> None:
    # A local folder is read by DuckDB's own Parquet reader, the bucket through pyarrow's S3.
    for key, body in files(fleet_s3, "fleet/").items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(body)
    policy = parse_policy(POLICIES["distribute-even"])
    local = fleet_chargeback(f"{tmp_path}/", policy, TWO_DAYS)
    remote = fleet_chargeback(fleet.prefix, policy, TWO_DAYS, endpoint_url=moto_s3)
    assert local.lines == remote.lines and local.total == remote.total and local.lines
    assert local.coverage is not None and remote.coverage is not None
    assert local.coverage.clusters == remote.coverage.clusters


def test_a_central_cost_api_serves_the_fleets_chargeback_and_namespaces(
    fleet: Fleet, stack: Any, moto_s3: str, tmp_path: Path
) -> None:
    import httpx

    from sandbox.localstack import serve_function

    policy = tmp_path / "policy.yaml"
    policy.write_text("currency: USD\nidle: separate\n")
    central = replace(stack, database_url=fleet.dsn)  # its own database: the namespaces come from the bucket
    env = {"PROXY_TOKEN": "fleet", "POLICY_PATH": str(policy), "FLEET_BUCKET": fleet.prefix,
           "FLEET_S3_ENDPOINT_URL": moto_s3}  # fmt: skip
    headers = {"Argocd-Application-Name": "argocd:cost-gate", "X-Finops-Proxy-Token": "fleet"}
    with serve_function(central, "cost_api", **env) as url:
        chargeback_ = httpx.get(f"{url}/api/v1/chargeback?month=2026-11", headers=headers, timeout=60)
        days = (datetime.now(UTC).date() - FIRST.date()).days + 1  # back to the first loaded day, whenever run
        namespaces = httpx.get(f"{url}/api/v1/namespaces?days={days}", headers=headers, timeout=60)
        billed = httpx.get(f"{url}/api/v1/chargeback?month=2026-11&basis=billed", headers=headers, timeout=60)
    assert chargeback_.status_code == 200, chargeback_.text
    expected = fleet_chargeback(
        fleet.prefix, parse_policy({"currency": "USD"}), month_period("2026-11"), endpoint_url=moto_s3
    )
    assert chargeback_.json()["total"] == str(expected.total)
    assert sorted(chargeback_.json()["coverage"]["clusters"]) == ["dev", "prod"]
    assert billed.status_code == 400 and "basis" in billed.json()["error"]
    # The namespaces of both clusters, each as the cluster's own database gives them.
    db = connect(fleet.dsn)
    try:
        today = datetime.now(UTC).date()
        window = {"start": FIRST.date(), "end": today + timedelta(days=1), "aggregation": AGGREGATION}
        rows = [
            r for c in ("dev", "prod") for r in db.fetch_all("namespace_costs", cluster=c, namespace=None, **window)
        ]
    finally:
        db.close()
    found = {
        (n["cluster"], n["namespace"]): (n["owner"], n["costCenter"], n["cost"])
        for n in namespaces.json()["namespaces"]
    }
    assert (
        found
        == {
            (r["cluster"], r["namespace"]): (r["owner"], r["cost_center"], format_amount(int(r["micros"])))
            for r in rows
        }
        and found
    )


def test_only_the_prefixs_own_files_are_read(fleet: Fleet, fleet_s3: Any, moto_s3: str) -> None:
    # A second fleet nested under the first one's prefix is not the first fleet's.
    for key, body in files(fleet_s3, "fleet/").items():
        fleet_s3.put_object(Bucket=BUCKET, Key=f"fleet/staging/{key.replace('cluster=', 'cluster=stg-')}", Body=body)
    try:
        policy = parse_policy({"currency": "USD"})
        for engine in ("duckdb", "chdb"):
            found = fleet_chargeback(fleet.prefix, policy, TWO_DAYS, endpoint_url=moto_s3, engine=engine)
            assert found.coverage is not None and found.coverage.cluster_names == ("dev", "prod"), engine
    finally:
        for key in files(fleet_s3, "fleet/staging/"):
            fleet_s3.delete_object(Bucket=BUCKET, Key=f"fleet/staging/{key}")


@pytest.mark.parametrize("url", ["gs://bucket/prefix/", "s3:///", "s3://bucket/prefix", "relative/"])
def test_a_bad_fleet_url_is_one_line(url: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("currency: USD\n")
    done = run_finops("report", "chargeback", "--month", "2026-11", "--policy", str(policy), "--fleet", url)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip().splitlines()[-1].endswith("is not s3://bucket/prefix/ or an absolute folder, ending in /")
    )


def test_a_clickhouse_server_gives_postgresqls_report(fleet: Fleet, moto_s3: str, tmp_path: Path) -> None:
    policy = parse_policy(POLICIES["distribute-even"])
    db = connect(fleet.dsn)
    try:
        expected = chargeback(db, policy, ReportQuery(TWO_DAYS, None), "cost-center")
    finally:
        db.close()
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text("currency: USD\nidle: separate\n")
    args = ["report", "chargeback", "--month", "2026-11", "--policy", str(policy_file), "--fleet", fleet.prefix,
            "--s3-endpoint", moto_s3, "--format", "json", "--engine", "clickhouse"]  # fmt: skip
    with chdb_over_http() as url:
        server = url.replace("http://", f"http://{USER}:{PASSWORD}@")
        reader = fleet_reader(fleet.prefix, moto_s3, engine="clickhouse", server=server)
        found = fleet_chargeback(fleet.prefix, policy, TWO_DAYS, by="cost-center", reader=reader)
        assert expected.lines and found.lines == expected.lines and found.total == expected.total
        assert found.coverage is not None and found.coverage.complete
        done = run_finops(*args, FLEET_CLICKHOUSE_URL=server)
        wrong = run_finops(*args, FLEET_CLICKHOUSE_URL=url.replace("http://", f"http://{USER}:not-the-password@"))
    assert done.returncode == 0, done.stderr
    month = fleet_chargeback(fleet.prefix, parse_policy({"currency": "USD"}), month_period("2026-11"),
                             endpoint_url=moto_s3)  # fmt: skip
    assert json.loads(done.stdout)["total"] == str(month.total)
    assert wrong.returncode == 2 and "Authentication failed" in one_line_error(wrong)
    assert "not-the-password" not in wrong.stderr + wrong.stdout
    with pytest.raises(InvalidInput, match="set FLEET_CLICKHOUSE_URL"):
        fleet_reader(fleet.prefix, moto_s3, engine="clickhouse")
    with pytest.raises(InvalidInput, match="give s3://bucket/prefix/"):
        fleet_reader(f"{tmp_path}/", engine="clickhouse", server=server)


def test_a_clickhouse_cluster_reads_through_s3cluster() -> None:
    from infra.fleet.clickhouse import ClickHouseServerReader

    cluster = ClickHouseServerReader(f"s3://{BUCKET}/fleet/", None, "--fleet", server="http://ch:8123", cluster="fleet")
    one = ClickHouseServerReader(f"s3://{BUCKET}/fleet/", None, "--fleet", server="http://ch:8123")
    days = "date={2026-11-19,2026-11-20}"
    assert cluster._source(TWO_DAYS) == (
        f"s3Cluster('fleet', 'https://{BUCKET}.s3.amazonaws.com/fleet/cluster=*/{days}/hour=*.parquet', 'Parquet')"
    )
    assert (
        one._source(TWO_DAYS)
        == f"s3('https://{BUCKET}.s3.amazonaws.com/fleet/cluster=*/{days}/hour=*.parquet', 'Parquet')"
    )


def unpriced(body: Any) -> Any:
    """``body`` without the coverages' pricing versions: the files name no PriceBook (their
    ``pricebook_id`` is a row of the cluster's own database), so the fleet's coverage lists none."""
    if isinstance(body, dict):
        return {key: unpriced(value) for key, value in body.items() if key != "pricing"}
    return [unpriced(value) for value in body] if isinstance(body, list) else body


BUDGETS = {
    "currency": "USD",
    "idle": "distribute",
    "budgets": [{"owner": "checkout", "amount": "20.00"}, {"cost_center": "cc-200", "amount": "30.00"}],
}


def test_the_team_report_budgets_and_focus_from_the_bucket_are_the_databases(
    fleet: Fleet, fleet_s3: Any, tmp_path: Path
) -> None:
    bucket = tmp_path / "bucket"  # a local copy: DuckDB's own reader (S3 reads are tested above)
    for key, body in files(fleet_s3, "fleet/").items():
        (bucket / key).parent.mkdir(parents=True, exist_ok=True)
        (bucket / key).write_bytes(body)
    now = FIRST + timedelta(days=20)  # a fixed present: both coverages say the same of the month's end
    policy = parse_policy({**POLICIES["distribute-even"], "budgets": BUDGETS["budgets"]})
    # An empty month names one cluster as missing: the fleet's placeholder is "fleet".
    query = ReportQuery(month_period("2026-11"), None, default_cluster="fleet", now=now)
    ledger = FleetLedger(fleet_reader(f"{bucket}/"))
    db = connect(fleet.dsn)
    try:
        teams = [line.owner for line in chargeback(db, policy, query).lines if line.kind.value == "owner"]
        assert len(teams) >= 2
        for team in teams[:2]:
            expected = unpriced(team_report(db, policy, query, team).body)
            assert unpriced(team_report(ledger, policy, query, team).body) == expected, team
            assert expected["top_namespaces"] and expected["requests_vs_usage"]["cpu"]["used_core_hours"] != "0.00"
        found_budgets = unpriced(budgets_report(ledger, policy, "2026-11", now).body)
        assert found_budgets == unpriced(budgets_report(db, policy, "2026-11", now).body)
        for version in FocusVersion:
            expected_focus = focus_export(db, policy, "2026-11", version=version, basis="estimate")
            found = fleet_focus_export(ledger.reader, policy, "2026-11", version=version, now=now)
            assert list(found.rows()) == list(expected_focus.rows()) and found.drafts, version
            assert found.report.total == expected_focus.report.total
    finally:
        db.close()
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(json.dumps(BUDGETS))
    fleet_args = ["--policy", str(policy_file), "--fleet", f"{bucket}/"]
    team = run_finops("report", "team", "--month", "2026-11", "--team", teams[0], *fleet_args, "--format", "json")
    assert team.returncode == 0, team.stderr
    assert json.loads(team.stdout)["team"] == teams[0] and json.loads(team.stdout)["total"] != "0.00"
    budgets = run_finops("report", "budgets", "--month", "2026-11", *fleet_args, "--format", "json")
    assert budgets.returncode == 0 and len(json.loads(budgets.stdout)["budgets"]) == 2, budgets.stderr
    written = run_finops("export", "focus", "--month", "2026-11", *fleet_args, "--to", f"{tmp_path}/")
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "focus-all-2026-11.csv").read_text().count("\n") > 10
    refused = run_finops("report", "team", "--month", "2026-11", "--team", teams[0], *fleet_args, "--cluster", "prod")
    assert refused.returncode == 2 and "covers every cluster on the estimate" in one_line_error(refused)
    with pytest.raises(InvalidInput, match="covers every cluster on the estimate"):
        ledger.chargeback(policy, query, basis="billed")
