"""We test these aspects of the FOCUS export (``finops export focus``), from the daily rollups in
PostgreSQL to a CSV in S3 (moto's server over HTTP, dummy credentials) or a local file:

- the file read back has the FOCUS columns and its ``BilledCost`` adds up to the month's chargeback
  total to the cent (``usecases.reports.service.chargeback``); grouped by line it gives the
  report's lines;
- a folder target (``s3://bucket/prefix/`` or a local directory) gets ``focus-<cluster|all>-<month>.csv``;
  ``--cluster`` exports one cluster, settled as the chargeback of that cluster;
- with cloud spend imported, the all-clusters export adds it (and still adds up to everything,
  exactly, rounded once); one cluster's export leaves it out;
- allocations or cloud spend in another currency than the policy's are refused;
- every file written conforms to its FOCUS version, 1.3 or 1.2 (``tests/focus_conformance.py``):
  Mandatory columns, allowed values, formats, nullability and cost rules, read back from the CSV;
- both versions in both formats pass the FinOps Foundation's validator (``tests/focus_validator.py``)
  on a month with cloud spend; the Parquet file holds the CSV's rows, typed (decimal128 money and
  quantities, UTC timestamps), read back with pyarrow; in 1.3 every cluster-day's split rows add
  up to the day's cost in the rollups;
- the command line, end to end (``--focus-version``, ``--format``, to S3);
  ``FOCUS_INVOICE_ISSUER`` names the provider and invoice issuer.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from datetime import date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import boto3
import pyarrow.parquet as pq
import pytest

from cli.main import main
from finops.errors import InvalidInput
from finops.focus import COLUMNS
from finops.focus_rows import FocusVersion
from finops.policy import Policy, parse_policy
from infra.objectstore import ObjectStore
from infra.postgres import Database
from tests.focus_conformance import check_rows
from tests.focus_validator import decimal_rules, failed_rules
from tests.unit.test_focus_files import typed
from usecases.reports.cloud import import_cloud_costs
from usecases.reports.exports import export_focus
from usecases.reports.focus_files import FileFormat
from usecases.reports.service import ReportQuery, chargeback, month_period

DATA = Path(__file__).resolve().parents[1] / "data" / "cloud"
BUCKET = "finops-exports"
AGGREGATION = "namespace,controllerKind,controller,pod,container"
OCTOBER = [date(2026, 10, 1) + timedelta(days=n) for n in range(31)]
POLICY = {
    "currency": "EUR",
    "idle": "separate",
    "shared": {"namespaces": ["kube-system"], "fixed": [{"name": "control plane", "amount": "73.00"}]},
}
COLUMNS_DAILY = (
    "cluster",
    "aggregation",
    "day",
    "namespace",
    "entry_kind",
    "team",
    "cost_center",
    "currency",
    "hours",
    "cpu_cost_micros",
    "gpu_cost_micros",
    "ram_cost_micros",
    "pv_cost_micros",
    "lb_cost_micros",
    "network_cost_micros",
    "total_cost_micros",
    "billed_core_hours",
    "requested_core_hours",
    "used_core_hours",
    "billed_gib_hours",
    "requested_gib_hours",
    "used_gib_hours",
)


@pytest.fixture(scope="module")
def s3_endpoint(moto_s3: str) -> str:
    """The session's moto S3 server, with this module's bucket."""
    endpoint = moto_s3
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
    return endpoint


def daily_rows(currency: str = "EUR") -> list[tuple[Any, ...]]:
    """October in two clusters: teams, an unlabelled namespace, a relabelled one, kube-system
    (shared), volumes without a namespace, and idle; amounts with odd micros."""
    rows: list[tuple[Any, ...]] = []

    def add(cluster: str, day: date, namespace: str, kind: str, team: str, cc: str, micros: int, cores: str) -> None:
        rows.append(
            (
                cluster,
                AGGREGATION,
                day,
                namespace,
                kind,
                team,
                cc,
                currency,
                24,
                micros,
                0,
                0,
                0,
                0,
                0,
                micros,
                Decimal(cores),
                Decimal(cores),
                Decimal(0),
                0,
                0,
                0,
            )
        )

    for n, day in enumerate(OCTOBER):
        add("prod", day, "shop", "workload", "payments" if n < 15 else "checkout", "cc-100", 100_123_457 + n, "48.5")
        add("prod", day, "search-api", "workload", "catalog", "cc-200", 50_000_001, "24")
        add("prod", day, "scratch", "workload", "", "", 3_333_333, "1.25")
        add("prod", day, "kube-system", "workload", "platform", "", 20_000_003, "8")
        add("prod", day, "", "unmounted", "", "", 1_100_000, "0")
        add("prod", day, "", "idle", "", "", 30_500_001 - 1000 * n, "36")
        add("dev", day, "shop-dev", "workload", "payments", "cc-100", 7_770_007, "4")
        add("dev", day, "", "idle", "", "", 2_000_000, "12")
    return rows


def load(db: Database, currency: str = "EUR") -> list[tuple[Any, ...]]:
    rows = daily_rows(currency)
    with db.connection() as conn:
        db.copy_rows(conn, "allocation_daily", COLUMNS_DAILY, rows)
    return rows


def read_csv(data: bytes) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of an exported file, after checking that it conforms to its FOCUS
    version (1.3 has ServiceProviderName)."""
    reader = csv.DictReader(io.StringIO(data.decode()))
    header, rows = list(reader.fieldnames or []), list(reader)
    version = "1.3" if "ServiceProviderName" in header else "1.2"
    assert check_rows(header, rows, version)[:10] == []
    return header, rows


def span(row: dict[str, str]) -> timedelta:
    return datetime.fromisoformat(row["ChargePeriodEnd"]) - datetime.fromisoformat(row["ChargePeriodStart"])


def billed(rows: list[dict[str, str]]) -> Decimal:
    return sum((Decimal(r["BilledCost"]) for r in rows), Decimal(0))


def assert_lines_match(rows: list[dict[str, str]], db: Database, policy: Policy, cluster: str | None) -> None:
    report = chargeback(db, policy, ReportQuery(month_period("2026-10"), cluster))
    assert billed(rows) == report.total
    totals: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    for row in rows:
        totals[(row["x_LineKind"], row["x_Owner"])] += Decimal(row["BilledCost"])
    assert dict(totals) == {(line.kind.value, line.owner): line.total for line in report.lines if line.total}


def test_export_to_an_s3_folder(db: Database, s3_endpoint: str) -> None:
    load(db)
    policy = parse_policy(POLICY)
    store = ObjectStore(endpoint_url=s3_endpoint)
    result = export_focus(db, policy, "2026-10", f"s3://{BUCKET}/focus/", store, version=FocusVersion.V1_2)
    assert result.url == f"s3://{BUCKET}/focus/focus-all-2026-10.csv"
    client = boto3.client("s3", endpoint_url=s3_endpoint)
    obj = client.get_object(Bucket=BUCKET, Key="focus/focus-all-2026-10.csv")
    assert obj["ContentType"] == "text/csv; charset=utf-8"
    header, rows = read_csv(obj["Body"].read())
    assert header == list(COLUMNS[FocusVersion.V1_2])
    assert result.rows == len(rows)
    assert_lines_match(rows, db, policy, None)
    # 31 days x (shop, search-api, scratch, unmounted in prod; shop-dev in dev), idle per day in
    # both clusters, and the overhead of each receiving line of each cluster for the month.
    daily = [r for r in rows if span(r) == timedelta(days=1)]
    assert len([r for r in daily if r["x_LineKind"] != "idle"]) == 31 * 5
    assert len([r for r in rows if r["x_LineKind"] == "idle"]) == 31 * 2
    overhead = sorted((r["x_Cluster"], r["x_Owner"]) for r in rows if r["ResourceId"].endswith("/__overhead__"))
    assert overhead == [
        ("dev", "payments"),
        ("prod", "__unallocated__"),
        ("prod", "catalog"),
        ("prod", "checkout"),
        ("prod", "payments"),
    ]
    assert not [r for r in rows if "kube-system" in r["ResourceId"]]
    shop = next(r for r in rows if r["ResourceId"] == "prod/shop" and r["ChargePeriodStart"] == "2026-10-16T00:00:00Z")
    assert (shop["x_Owner"], json.loads(shop["Tags"]), shop["x_CoreHours"]) == (
        "checkout",
        {"team": "checkout", "cost-center": "cc-100", "namespace": "shop"},
        "48.5",
    )
    for row in rows:
        parts = sum(Decimal(row[c]) for c in ("x_AllocatedCost", "x_IdleCost", "x_SharedCost"))
        assert parts == Decimal(row["BilledCost"])
        assert row["BillingCurrency"] == "EUR"
        assert row["ChargeCategory"] == ("Adjustment" if row["ResourceId"].endswith("/__overhead__") else "Usage")
        assert row["BillingAccountId"] == row["x_Cluster"] and row["InvoiceIssuerName"] == "Kubernetes"


@pytest.mark.parametrize("idle", ["separate", "distribute"])
def test_export_one_cluster_to_a_local_folder(db: Database, tmp_path: Path, idle: str) -> None:
    load(db)
    policy = parse_policy({**POLICY, "idle": idle})
    result = export_focus(db, policy, "2026-10", str(tmp_path), ObjectStore(), cluster="prod")
    assert result.url == str(tmp_path / "focus-prod-2026-10.csv")
    header, rows = read_csv((tmp_path / "focus-prod-2026-10.csv").read_bytes())
    assert header == list(COLUMNS[FocusVersion.V1_3])
    assert {r["x_Cluster"] for r in rows} == {"prod"}
    assert_lines_match(rows, db, policy, "prod")
    assert str(result.total) == str(billed(rows))


def test_export_with_cloud_spend(db: Database, tmp_path: Path) -> None:
    daily = load(db)
    import_cloud_costs(db, str(DATA / "focus-2026-10.csv"), ObjectStore())
    policy = parse_policy(POLICY)
    export_focus(db, policy, "2026-10", str(tmp_path / "all.csv"), ObjectStore())
    _, rows = read_csv((tmp_path / "all.csv").read_bytes())
    exact = sum(row[15] for row in daily) + 2 * 73_000_000 + 347_845_678  # clusters, two fees, October's cloud
    assert billed(rows) * 100 == round(Fraction(exact, 10_000))
    cloud = [r for r in rows if r["ServiceCategory"] == "Other"]
    assert sorted((r["x_Owner"], r["ServiceName"], r["BilledCost"]) for r in cloud) == [
        ("__unallocated__", "AWS CloudTrail", "0.40"),
        ("__unallocated__", "AWS Data Transfer", "40.10"),
        ("catalog", "Amazon Elastic Block Store", "12.35"),
        ("payments", "Amazon Relational Database Service", "275.50"),  # 280.50 effective, -5.00 credit
        ("payments", "Amazon Simple Storage Service", "12.00"),  # half of the charge is in October
        ("search", "Amazon OpenSearch Service", "7.50"),
    ]
    export_focus(db, policy, "2026-10", str(tmp_path / "prod.csv"), ObjectStore(), cluster="prod")
    _, prod = read_csv((tmp_path / "prod.csv").read_bytes())
    assert not [r for r in prod if r["ServiceCategory"] == "Other"]  # cloud spend belongs to no cluster
    assert_lines_match(prod, db, policy, "prod")


@pytest.mark.parametrize("version", list(FocusVersion))
def test_both_formats_pass_the_validator_and_agree(db: Database, tmp_path: Path, version: FocusVersion) -> None:
    load(db)
    import_cloud_costs(db, str(DATA / "focus-2026-10.csv"), ObjectStore())
    policy = parse_policy(POLICY)
    written = {
        fmt: export_focus(db, policy, "2026-10", f"{tmp_path}/", ObjectStore(), version=version, fmt=fmt)
        for fmt in FileFormat
    }
    csv_file, parquet_file = Path(written[FileFormat.CSV].url), Path(written[FileFormat.PARQUET].url)
    assert (csv_file.name, parquet_file.name) == ("focus-all-2026-10.csv", "focus-all-2026-10.parquet")
    assert (tmp_path / "focus-all-2026-10.coverage.json").exists()
    header, rows = read_csv(csv_file.read_bytes())
    assert header == list(COLUMNS[version])
    assert failed_rules(csv_file, tmp_path) == []
    assert failed_rules(parquet_file, tmp_path) == decimal_rules()  # the validator's float-only check

    table = pq.read_table(parquet_file)
    assert table.schema.names == header
    types = {field.name: str(field.type) for field in table.schema}
    assert types["BilledCost"] == types["x_CoreHours"] == "decimal128(38, 6)"
    assert types["ChargePeriodStart"] == "timestamp[ms, tz=UTC]"
    assert types["Tags"] == types["ChargeCategory"] == "string"
    assert [{c: typed(c, row[c]) for c in header} for row in rows] == table.to_pylist()
    assert sum(table.column("BilledCost").to_pylist()) == written[FileFormat.PARQUET].total
    assert_lines_match(rows, db, policy, None)
    if version is FocusVersion.V1_3:  # each cluster-day is split into rows adding up to its cost
        days: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
        for row in rows:
            if row["ResourceId"] in ("prod", "dev"):
                days[(row["ResourceId"], row["ChargePeriodStart"][:10])] += Decimal(row["BilledCost"])
        exact: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
        for daily in daily_rows():
            exact[(daily[0], daily[2].isoformat())] += Fraction(daily[15], 10_000)
        assert days.keys() == exact.keys() and len(days) == 62
        assert all(abs(Fraction(days[key]) * 100 - exact[key]) < 1 for key in days)


def test_other_currencies_are_refused(db: Database, tmp_path: Path) -> None:
    load(db, currency="USD")
    with pytest.raises(InvalidInput, match=r"policy\.currency is EUR but cluster .*'s allocations are priced in USD"):
        export_focus(db, parse_policy(POLICY), "2026-10", str(tmp_path / "x.csv"), ObjectStore())
    import_cloud_costs(db, str(DATA / "cur2-2026-10.csv"), ObjectStore())  # in EUR
    with pytest.raises(InvalidInput, match=r"policy\.currency is USD but cloud costs imported from .* are in EUR"):
        export_focus(db, parse_policy({**POLICY, "currency": "USD"}), "2026-10", str(tmp_path / "x.csv"), ObjectStore())
    assert not (tmp_path / "x.csv").exists()


def test_the_command(
    db: Database,
    database_url: str,
    s3_endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    load(db)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("FOCUS_INVOICE_ISSUER", "Platform Team")
    (tmp_path / "policy.yaml").write_text(json.dumps(POLICY))  # JSON is YAML
    argv = ["export", "focus", "--month", "2026-10", "--policy", str(tmp_path / "policy.yaml"), "--cluster", "dev"]
    assert main([*argv, "--to", f"s3://{BUCKET}/cli/", "--s3-endpoint", s3_endpoint]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["url"] == f"s3://{BUCKET}/cli/focus-dev-2026-10.csv"
    body = boto3.client("s3", endpoint_url=s3_endpoint).get_object(Bucket=BUCKET, Key="cli/focus-dev-2026-10.csv")[
        "Body"
    ]
    _, rows = read_csv(body.read())
    assert (printed["rows"], printed["total"], printed["currency"]) == (len(rows), str(billed(rows)), "EUR")
    assert {(r["ProviderName"], r["PublisherName"], r["InvoiceIssuerName"]) for r in rows} == {
        ("Platform Team", "Kubernetes", "Platform Team")
    }
    assert {(r["ServiceProviderName"], r["HostProviderName"]) for r in rows} == {("Platform Team", "Platform Team")}
    parquet = [*argv, "--format", "parquet", "--focus-version", "1.2", "--s3-endpoint", s3_endpoint]
    assert main([*parquet, "--to", f"s3://{BUCKET}/cli/"]) == 0
    assert json.loads(capsys.readouterr().out)["url"] == f"s3://{BUCKET}/cli/focus-dev-2026-10.parquet"
    obj = boto3.client("s3", endpoint_url=s3_endpoint).get_object(Bucket=BUCKET, Key="cli/focus-dev-2026-10.parquet")
    assert obj["ContentType"] == "application/vnd.apache.parquet"
    table = pq.read_table(io.BytesIO(obj["Body"].read()))
    assert table.schema.names == list(COLUMNS[FocusVersion.V1_2]) and table.num_rows == len(rows)
    assert sum(table.column("BilledCost").to_pylist()) == billed(rows)
    assert main([*argv, "--to", str(tmp_path / "missing" / "x.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # argparse's usage error, naming the option
        main(["export", "focus", "--month", "October", "--policy", str(tmp_path / "policy.yaml"), "--to", "x"])
    assert usage.value.code == 2
    assert "argument --month: 'October' is not a month" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--to", "x", "--focus-version", "1.1"])
    assert "argument --focus-version: invalid choice: '1.1'" in capsys.readouterr().err


def test_the_chargeback_csv_export_to_s3_adds_up(
    db: Database,
    database_url: str,
    s3_endpoint: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    load(db)
    monkeypatch.setenv("DATABASE_URL", database_url)
    (tmp_path / "policy.yaml").write_text(json.dumps(POLICY))
    argv = ["export", "chargeback-csv", "--month", "2026-10", "--policy", str(tmp_path / "policy.yaml")]
    assert main([*argv, "--to", f"s3://{BUCKET}/csv/", "--s3-endpoint", s3_endpoint]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["url"] == f"s3://{BUCKET}/csv/chargeback-all-2026-10.csv"
    body = boto3.client("s3", endpoint_url=s3_endpoint).get_object(Bucket=BUCKET, Key="csv/chargeback-all-2026-10.csv")
    rows = list(csv.DictReader(io.StringIO(body["Body"].read().decode())))
    lines, total = rows[:-1], rows[-1]
    assert total["owner"] == "TOTAL" and total["total"] == printed["total"]
    assert sum(Decimal(r["total"]) for r in lines) == Decimal(total["total"])
    report = chargeback(db, parse_policy(POLICY), ReportQuery(month_period("2026-10"), None))
    assert Decimal(total["total"]) == report.total
