"""The demo's generated cloud bill (``finops run``): it parses as FOCUS and bills what the
module says: the first node at 72 %, the second at list price, the rest missing, volumes at 90 %,
a NAT line and 5 % tax per day, tagged with the cluster."""

from __future__ import annotations

import csv
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from finops.cloudspend import parse_cloud_costs
from infra.postgres import Database
from sandbox.demo_bill import write_bill

HOURS = [datetime(2026, 11, 20, tzinfo=UTC) + timedelta(hours=n) for n in range(48)]


def test_the_demo_bill_bills_the_stored_assets(db: Database, tmp_path: Path) -> None:
    with db.connection() as conn:
        for hour in HOURS:
            for kind, name, provider_id, micros in (
                ("node", "node-a", "aws:///eu-west-1a/i-1", 1_000_000),
                ("node", "node-b", "aws:///eu-west-1b/i-2", 2_000_000),
                ("node", "node-gpu", "aws:///eu-west-1a/i-3", 9_000_000),
                ("disk", "pvc-1", "vol-1", 100_000),
            ):
                conn.execute(
                    "INSERT INTO cluster_assets (cluster, aggregation, hour, kind, name, provider_id, cpu_cost_micros, "
                    "total_cost_micros) VALUES ('demo', 'a', %s, %s, %s, %s, %s, %s)",
                    (hour, kind, name, provider_id, micros if kind == "node" else 0, micros),
                )
    path = write_bill(db, "demo", date(2026, 11, 20), date(2026, 11, 21), "USD", tmp_path / "bill.csv")
    with path.open() as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames is not None
        _, lines = parse_cloud_costs(reader.fieldnames, reader)
    by_resource = {(line.resource_id, line.category.value): line.billed_micros for line in lines}
    assert by_resource == {
        ("aws:///eu-west-1a/i-1", "usage"): 17_280_000,  # 24 h x 1.00 x 0.72
        ("aws:///eu-west-1b/i-2", "usage"): 48_000_000,  # list price
        ("vol-1", "usage"): 2_160_000,  # 90 %
        ("nat-demo", "usage"): 1_080_000,
        (None, "tax"): int((Decimal("68.52") * Decimal("0.05")).quantize(Decimal("0.01")) * 1_000_000),
    }
    assert all(line.tags == {"eks:cluster-name": "demo"} for line in lines if line.category.value == "tax")
    assert {line.start.date() for line in lines} == {date(2026, 11, 20)}  # the second day is not billed
