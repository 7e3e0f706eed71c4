"""We test these aspects of importing cloud spend (``usecases.reports.cloud``) into PostgreSQL,
from a local file and from S3 (moto's server over HTTP, never real AWS):

- a FOCUS file and an AWS CUR 2.0 file (plain and gzip) are stored row by row, tags resolved;
- importing the same file again replaces its rows (no duplicates), in one transaction;
- a file with a bad row is refused naming the file, row and column, and nothing of it is stored:
  an earlier import of the same source stays as it was;
- the chargeback's direct costs: the period's charges (partial overlaps prorated), on the tagged
  owner's line, untagged spend on ``__unallocated__``, no idle or shared cost; a charge in another
  currency than the policy's is refused;
- the charge category (usage, discount, purchase, tax, support) is stored with each row, from
  FOCUS and CUR 2.0 bills made by ``tests/bills.py``;
- ``finops import cloud --from ... [--s3-endpoint ...]``; on a database that was never migrated
  it fails with one line saying to run ``finops migrate`` (no traceback, nothing created).
"""

from __future__ import annotations

import gzip
import json
import shutil
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest

from cli.main import main
from finops.chargeback import CostRow, IdleRow, allocate
from finops.errors import InvalidInput, NotFound
from finops.policy import Policy, parse_policy
from infra.objectstore import ObjectStore
from infra.postgres import Database, connect
from sandbox.postgres import scratch_database
from tests.bills import BillLine, cur2_csv, focus_csv
from usecases.reports.cloud import import_cloud_costs, source_of
from usecases.reports.reconciled import direct_costs
from usecases.reports.service import month_period

DATA = Path(__file__).resolve().parents[1] / "data" / "cloud"
BUCKET = "billing"


@pytest.fixture(scope="module")
def s3_endpoint(moto_s3: str) -> str:
    """The session's moto S3 server, with this module's bucket."""
    endpoint = moto_s3
    s3(endpoint).create_bucket(Bucket=BUCKET)
    return endpoint


def s3(endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")


def documents(text: str) -> list[Any]:
    """The JSON documents printed one after the other."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text.rstrip()):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
        while at < len(text) and text[at].isspace():
            at += 1
    return found


def _rows(db: Database) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return list(conn.execute("SELECT * FROM cloud_costs ORDER BY source, row_number").fetchall())


def test_a_focus_file_from_a_local_path(db: Database, tmp_path: Path) -> None:
    path = tmp_path / "focus.csv"
    shutil.copy(DATA / "focus-2026-10.csv", path)
    result = import_cloud_costs(db, str(path), ObjectStore())
    assert result.as_document() == {
        "source": str(path),
        "format": "focus",
        "rows": 8,
        "replaced": 0,
        "untagged": 2,
        "first_charge": "2026-09-30T12:00:00+00:00",
        "last_charge": "2026-11-02T00:00:00+00:00",
    }
    rows = _rows(db)
    assert len(rows) == 8
    first = rows[0]
    assert (first["source"], first["row_number"], first["format"], first["currency"]) == (str(path), 1, "focus", "EUR")
    assert (first["billed_cost_micros"], first["effective_cost_micros"]) == (310_000_000, 280_500_000)
    assert (first["team"], first["cost_center"], first["account"]) == ("payments", "cc-100", "111111111111")
    assert first["tags"] == {"team": "payments", "cost-center": "cc-100"}
    assert first["service"] == "Amazon Relational Database Service"
    assert [(r["team"], r["effective_cost_micros"]) for r in rows if r["team"] is None] == [
        (None, 40_100_000),
        (None, None),
    ]


def test_a_cur_2_file_from_s3_plain_and_gzip(db: Database, s3_endpoint: str) -> None:
    text = (DATA / "cur2-2026-10.csv").read_bytes()
    s3(s3_endpoint).put_object(Bucket=BUCKET, Key="cur/2026-10/part-0.csv", Body=text)
    s3(s3_endpoint).put_object(Bucket=BUCKET, Key="cur/2026-10/part-1.csv.gz", Body=gzip.compress(text))
    store = ObjectStore(endpoint_url=s3_endpoint)
    plain = import_cloud_costs(db, f"s3://{BUCKET}/cur/2026-10/part-0.csv", store)
    zipped = import_cloud_costs(db, f"s3://{BUCKET}/cur/2026-10/part-1.csv.gz", store)
    assert (plain.format.value, plain.rows, plain.untagged) == ("cur2", 4, 2)
    assert (zipped.rows, zipped.source) == (4, f"s3://{BUCKET}/cur/2026-10/part-1.csv.gz")
    rows = _rows(db)
    assert [(r["team"], r["cost_center"], r["billed_cost_micros"]) for r in rows[:4]] == [
        ("payments", "cc-100", 10_000_000),
        ("catalog", None, 240_000),
        (None, None, 3_333_333),
        (None, None, 1_500_000),
    ]


def test_importing_the_same_file_again_replaces_it(db: Database, tmp_path: Path) -> None:
    path = tmp_path / "focus.csv"
    shutil.copy(DATA / "focus-2026-10.csv", path)
    import_cloud_costs(db, str(path), ObjectStore())
    again = import_cloud_costs(db, str(tmp_path / "." / "focus.csv"), ObjectStore())  # the same file, spelt differently
    assert (again.rows, again.replaced) == (8, 8)
    assert len(_rows(db)) == 8
    period = month_period("2026-10")
    assert sum(c.within(period) for c in direct_costs(db, Policy(currency="EUR"), period, ())) == 347_845_678


def test_a_bad_row_is_named_and_nothing_is_imported(db: Database, tmp_path: Path) -> None:
    path = tmp_path / "spend.csv"
    good = (DATA / "focus-bad-row.csv").read_text().splitlines()
    path.write_text("\n".join(good[:3]) + "\n")  # the first two rows only: a good file
    import_cloud_costs(db, str(path), ObjectStore())
    shutil.copy(DATA / "focus-bad-row.csv", path)
    with pytest.raises(InvalidInput, match=rf"^{path}: row 3, column BilledCost: '12,50' is not a decimal amount"):
        import_cloud_costs(db, str(path), ObjectStore())
    assert [r["row_number"] for r in _rows(db)] == [1, 2]  # the earlier import, untouched


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty file"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"\x1f\x8b\x08garbage", "not a readable gzip file"),
        (b"date,cost\n2026-10-01,1\n", "neither a FOCUS report"),
    ],
)
def test_a_file_that_is_not_a_report(db: Database, tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "spend.csv"
    path.write_bytes(content)
    with pytest.raises(InvalidInput, match=reason):
        import_cloud_costs(db, str(path), ObjectStore())


def test_a_missing_file_is_not_found(db: Database, tmp_path: Path, s3_endpoint: str) -> None:
    with pytest.raises(NotFound, match="no such file"):
        import_cloud_costs(db, str(tmp_path / "missing.csv"), ObjectStore())
    with pytest.raises(NotFound, match=rf"s3://{BUCKET}/missing.csv: no such object"):
        import_cloud_costs(db, f"s3://{BUCKET}/missing.csv", ObjectStore(endpoint_url=s3_endpoint))


def test_the_chargeback_with_cloud_spend(db: Database, tmp_path: Path) -> None:
    import_cloud_costs(db, str(DATA / "focus-2026-10.csv"), ObjectStore())
    import_cloud_costs(db, str(DATA / "cur2-2026-10.csv"), ObjectStore())
    period = month_period("2026-10")
    direct = direct_costs(db, Policy(currency="EUR"), period, ())
    cluster = [CostRow("prod", "shop", "payments", "cc-100", 1000 * 10**6), CostRow("prod", "tmp", None, None, 0)]
    policy = parse_policy({"currency": "EUR", "shared": {"fixed": [{"name": "control plane", "amount": "100.00"}]}})
    report = allocate(cluster, [IdleRow("prod", 50 * 10**6)], policy, period=period, direct=direct)
    assert [(li.owner, str(li.allocated), str(li.idle), str(li.shared), str(li.total)) for li in report.lines] == [
        # 1,000 in the cluster, RDS 280.50 effective + half of the S3 charge 12.00 - 5.00 credit, CUR RDS 9.00
        # the CUR tax line (1.50, untagged) is shared over the lines by allocated cost: 1.50 x 1296.50 / 1360.42
        ("payments", "1296.50", "0.00", "101.43", "1397.93"),
        ("catalog", "12.59", "0.00", "0.01", "12.60"),  # 12.345678 + 0.24
        ("search", "7.50", "0.00", "0.01", "7.51"),
        ("__unallocated__", "43.83", "0.00", "0.05", "43.88"),  # 40.10 + 0.40 + 3.333333: untagged
        ("platform", "0.00", "50.00", "0.00", "50.00"),
    ]
    assert report.total == Decimal("1511.92")  # 1,150 + 347.845678 + 14.073333, rounded once
    november = direct_costs(db, Policy(currency="EUR"), month_period("2026-11"), ())
    assert [(c.owner, c.label, c.amount_micros) for c in november] == [
        ("payments", "Amazon Relational Database Service", 99_000_000)
    ]


def test_a_currency_other_than_the_policys_is_refused(db: Database) -> None:
    import_cloud_costs(db, str(DATA / "cur2-2026-10.csv"), ObjectStore())
    with pytest.raises(
        InvalidInput, match=r"policy.currency is USD but cloud costs imported from .*cur2-2026-10.csv are in EUR"
    ):
        direct_costs(db, Policy(currency="USD"), month_period("2026-10"), ())
    # nothing of that period: nothing to refuse
    assert direct_costs(db, Policy(currency="USD"), month_period("2027-01"), ()) == []


def test_the_command(
    db: Database,
    database_url: str,
    s3_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", database_url)
    s3(s3_endpoint).put_object(Bucket=BUCKET, Key="focus/2026-10.csv", Body=(DATA / "focus-2026-10.csv").read_bytes())
    argv = ["import", "cloud", "--from", f"s3://{BUCKET}/focus/2026-10.csv", "--s3-endpoint", s3_endpoint]
    assert main(argv) == 0
    assert main(argv) == 0
    outputs = documents(capsys.readouterr().out)
    assert [(o["rows"], o["replaced"], o["format"]) for o in outputs] == [(8, 0, "focus"), (8, 8, "focus")]
    assert len(_rows(db)) == 8
    assert main(["import", "cloud", "--from", str(DATA / "focus-bad-row.csv")]) == 2
    assert "row 3, column BilledCost" in capsys.readouterr().err


def test_the_command_on_a_database_never_migrated(
    pg_server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with scratch_database(pg_server, prefix="finops_unmigrated") as dsn:
        monkeypatch.setenv("DATABASE_URL", dsn)
        assert main(["import", "cloud", "--from", str(DATA / "focus-2026-10.csv")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("finops: the database has no schema: run `finops migrate`")
        assert err.count("\n") == 1 and "Traceback" not in err
        empty = connect(dsn)
        try:
            with empty.connection() as conn:
                assert conn.execute("SELECT to_regclass('cloud_costs') AS t").fetchone() == {"t": None}
        finally:
            empty.close()


def test_sources_are_urls_or_absolute_paths() -> None:
    assert source_of("s3://b/k.csv") == "s3://b/k.csv"
    assert source_of("spend.csv") == str(Path("spend.csv").resolve())
    assert source_of("file:///tmp/x/../spend.csv") == "/tmp/spend.csv"


@pytest.mark.parametrize("fmt", ["focus", "cur2"])
def test_the_charge_category_is_stored(db: Database, tmp_path: Path, fmt: str) -> None:
    start = datetime(2026, 10, 1, tzinfo=UTC)
    hour = start + timedelta(hours=1)
    lines = [
        BillLine(start, hour, Decimal("10"), Decimal("6.5"), kind="SavingsPlanCoveredUsage", tags={"team": "a"}),
        BillLine(start, hour, Decimal("-10"), Decimal(0), category="discount", kind="SavingsPlanNegation"),
        BillLine(start, hour, Decimal("10"), Decimal("2"), category="purchase", kind="SavingsPlanRecurringFee"),
        BillLine(start, start, Decimal("4.2"), category="tax"),
        BillLine(start, hour, Decimal("100"), category="support"),
    ]
    path = tmp_path / f"bill-{fmt}.csv"
    path.write_text(focus_csv(lines) if fmt == "focus" else cur2_csv(lines))
    import_cloud_costs(db, str(path), ObjectStore())
    stored = [(r["charge_category"], r["billed_cost_micros"], r["effective_cost_micros"]) for r in _rows(db)]
    assert stored == [
        ("usage", 10_000_000, 6_500_000),
        ("discount", -10_000_000, 0),
        ("purchase", 10_000_000, 2_000_000),
        ("tax", 4_200_000, 4_200_000),
        ("support", 100_000_000, 100_000_000),
    ]
    period = month_period("2026-10")
    direct = direct_costs(db, Policy(currency="EUR"), period, ())
    assert sum(c.within(period) for c in direct) == 112_700_000  # every category, as before
