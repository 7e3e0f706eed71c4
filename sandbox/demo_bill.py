"""The cloud bill ``finops run`` writes for the demo cluster's loaded days, to import and show the
month's chargeback on the ``billed`` basis (``sandbox.localdemo.demo_bill``).

The bill is made from what the collector stored (``cluster_assets``): each node's cost per UTC
day times ``DEMO_FACTORS`` (a savings plan on the first node, list price on the second, the GPU
node missing from the bill), its volumes at 90 %, plus a NAT gateway line and tax, both tagged
with the cluster. The last loaded day is left out, as a bill arrives late. So the printed report
shows every part of the method: a node billed below its estimate, one above, one missing, the
``__unreconciled__`` line, tax in the shared column and the days still on estimate.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

from finops.money import from_micros
from infra.postgres import Database

DEMO_FACTORS = (Decimal("0.72"), Decimal("1.00"))  # nodes in name order; the ones after: not billed
VOLUME_FACTOR = Decimal("0.90")
NAT_PER_DAY = Decimal("1.08")
TAX_RATE = Decimal("0.05")
COLUMNS = (
    "BilledCost",
    "EffectiveCost",
    "BillingCurrency",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ServiceName",
    "ResourceId",
    "SubAccountId",
    "Tags",
)


def write_bill(db: Database, cluster: str, first: date, last: date, currency: str, path: Path) -> Path:
    """A FOCUS CSV billing the cluster's days ``[first, last)`` at ``path``."""
    start, end = (datetime.combine(day, time(), UTC) for day in (first, last))
    assets = db.fetch_all("demo_asset_days", cluster=cluster, start=start, end=end)
    nodes = sorted({row["name"] for row in assets if row["kind"] == "node"})
    factors = dict(zip(nodes, DEMO_FACTORS, strict=False))
    tag = json.dumps({"eks:cluster-name": cluster})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    daily: dict[date, Decimal] = {}
    for row in assets:
        factor = VOLUME_FACTOR if row["kind"] == "disk" else factors.get(row["name"])
        if factor is None:
            continue  # the node the bill forgot
        amount = (from_micros(int(row["micros"])) * factor).quantize(Decimal("0.000001"))
        service = "Amazon Elastic Compute Cloud" if row["kind"] == "node" else "Amazon Elastic Block Store"
        writer.writerow(_line(row["day"], amount, currency, "Usage", service, row["provider_id"], "{}"))
        daily[row["day"]] = daily.get(row["day"], Decimal(0)) + amount
    for day, amount in sorted(daily.items()):
        writer.writerow(_line(day, NAT_PER_DAY, currency, "Usage", "Amazon VPC", f"nat-{cluster}", tag))
        tax = ((amount + NAT_PER_DAY) * TAX_RATE).quantize(Decimal("0.01"))
        writer.writerow(_line(day, tax, currency, "Tax", "Tax", "", tag))
    path.write_text(out.getvalue())
    return path


def _line(
    day: date, amount: Decimal, currency: str, category: str, service: str, resource: str, tags: str
) -> list[str]:
    start = datetime.combine(day, time(), UTC)
    moment = "%Y-%m-%dT%H:%M:%SZ"
    end = start + timedelta(days=1)
    return [str(amount), str(amount), currency, f"{start:{moment}}", f"{end:{moment}}", category, service, resource,
            "111122223333", tags]  # fmt: skip
