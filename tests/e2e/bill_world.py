"""The demo cluster's November and its cloud bill, for the reconciliation tests.

The sandbox OpenCost serves ``sandbox/demo/scenario.yaml`` with its clock at 1 December 00:00, so
the demo's relative times (workloads started "6 hours ago") fall on 30 November, and without the
demo's 15-day retention (a Prometheus setting of the live demo), so the whole month is there.
``collect_allocations`` loads the 720 hours as a history load.

The bill is built from what was collected, as a cloud provider would bill the same machines:
each node's day at its estimated asset cost (CPU + RAM + GPU and OpenCost's adjustment,
``cluster_assets``) times its
factor, rounded to micros; disks and the load balancer likewise; one node is missing, a NAT
gateway tagged with the cluster matches none of its resources, a savings plan covers half of a
node (CUR: covered usage and its negation; FOCUS: commitment-covered usage billed 0), and a
credit and a tax line carry the cluster's tag. The late bill lacks the month's last two days.
The tests read everything they expect from the generated lines and from SQL, never from the
reconciliation they check.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from infra.postgres import Database
from tests.bills import BillLine, cur2_csv, focus_csv

ROOT = Path(__file__).resolve().parents[2]
DEMO_SCENARIO = ROOT / "sandbox" / "demo" / "scenario.yaml"
DEMO_KUBE = ROOT / "sandbox" / "demo" / "kube"
CLUSTER = "demo"
MONTH = "2026-11"
FIRST = datetime(2026, 11, 1, tzinfo=UTC)
DAYS = [(FIRST + timedelta(days=n)).date() for n in range(30)]  # collected: all of November
CLOCK = FIRST + timedelta(days=30)  # the sandbox's "now"
LATE = 2  # days the late bill does not have yet
SHARED_NAMESPACES = ("kube-system", "monitoring", "ingress-nginx")

# What the cloud charged against OpenCost's estimate; node-gpu is missing from the bill.
NODE_FACTORS = {"node-a": Fraction(8, 10), "node-b": Fraction(11, 10)}
MISSING_NODE = "node-gpu"
DISK_FACTOR = Fraction(9, 10)
LB_FACTOR = Fraction(12, 10)
SP_NODE = "node-b"  # half of its usage is covered by a savings plan
SP_SHARE = Fraction(1, 2)
SP_RATE = Fraction(72, 100)  # the plan's rate against on-demand (the amortised cost)
NAT_DAILY = Decimal("1.080000")
NAT_ID = "nat-0f1e2d3c4b5a69788"
CREDIT = Decimal("-7.500000")
TAX_RATE = Fraction(8, 100)
ACCOUNT = "111122223333"
TAGS = {"eks:cluster-name": CLUSTER}

POLICY = """
owner_label: team
cost_center_label: cost-center
idle: {idle}
idle_owner: platform
shared:
  namespaces: [kube-system, monitoring, ingress-nginx]
  split: proportional
currency: USD
reconciliation:
  discounts: {discounts}
"""


def day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def money(micros: int) -> Decimal:
    return Decimal(micros).scaleb(-6)


def micros(amount: Decimal) -> int:
    return int(amount.scaleb(6))


def cents(exact_micros: Fraction | int) -> Decimal:
    """A micros amount rounded half-even to cents, as the report rounds its grand total."""
    return Decimal(round(Fraction(exact_micros) / 10_000)).scaleb(-2)


@dataclass(frozen=True)
class AssetDay:
    kind: str
    name: str
    provider_id: str
    day: date
    estimate: int  # micros: a node's CPU + RAM + GPU + adjustment, a disk's or load balancer's total


def asset_days(db: Database) -> list[AssetDay]:
    """The demo's assets per UTC day, as the collector stored them."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT kind, name, max(provider_id) AS provider_id, (hour AT TIME ZONE 'UTC')::date AS day,"
            " sum(CASE WHEN kind = 'node' THEN cpu_cost_micros + ram_cost_micros + gpu_cost_micros + adjustment_micros"
            "          ELSE total_cost_micros END) AS estimate"
            " FROM cluster_assets WHERE cluster = %s GROUP BY kind, name, day ORDER BY kind, name, day",
            (CLUSTER,),
        ).fetchall()
    return [AssetDay(r["kind"], r["name"], r["provider_id"], r["day"], int(r["estimate"])) for r in rows]


def instance_id(provider_id: str) -> str:
    """``aws:///eu-west-1a/i-0abc`` is billed as ``i-0abc``."""
    return provider_id.rpartition("/")[2]


@dataclass(frozen=True)
class Bill:
    """The generated lines, and which of them are the cluster's (every line but the plan's fee)."""

    fmt: str  # focus | cur2
    lines: tuple[BillLine, ...]
    cluster_lines: tuple[BillLine, ...]
    billed_days: tuple[date, ...]

    def csv(self) -> str:
        return focus_csv(self.lines) if self.fmt == "focus" else cur2_csv(self.lines)

    def cluster_total(self, amortised: bool = False) -> int:
        """The cluster's lines added up (micros), billed or amortised."""
        return sum(micros(line.amortised if amortised else line.billed) for line in self.cluster_lines)

    def usage_of(self, resource_id: str, day: date, amortised: bool = False) -> int:
        """What the bill charged ``resource_id`` on ``day`` as usage (micros)."""
        return sum(
            micros(line.amortised if amortised else line.billed)
            for line in self.cluster_lines
            if line.category == "usage" and line.resource_id == resource_id and line.start.date() == day
        )


def demo_bill(assets: list[AssetDay], fmt: str, late: int = LATE) -> Bill:
    """The cloud's bill of the demo's week, in ``fmt``, without its last ``late`` days."""
    billed_days = tuple(DAYS[: len(DAYS) - late])
    mine: list[BillLine] = []
    other: list[BillLine] = []
    node_usage = 0
    for asset in assets:
        if asset.day not in billed_days or asset.name == MISSING_NODE:
            continue
        start = day_start(asset.day)
        line: dict[str, Any] = dict(
            start=start, end=start + timedelta(days=1), account=ACCOUNT, tags=TAGS, currency="USD"
        )
        if asset.kind != "node":
            factor = DISK_FACTOR if asset.kind == "disk" else LB_FACTOR
            mine.append(BillLine(billed=money(round(asset.estimate * factor)), resource_id=asset.provider_id, **line))
            continue
        cost = round(asset.estimate * NODE_FACTORS[asset.name])
        node_usage += cost
        resource = instance_id(asset.provider_id)
        if asset.name != SP_NODE:
            mine.append(BillLine(billed=money(cost), resource_id=resource, **line))
            continue
        covered = round(cost * SP_SHARE)
        plan = round(covered * SP_RATE)
        mine.append(BillLine(billed=money(cost - covered), resource_id=resource, **line))
        if fmt == "cur2":  # CUR: the covered usage at on-demand, cancelled by the plan's negation
            mine.append(
                BillLine(
                    billed=money(covered),
                    effective=money(plan),
                    kind="SavingsPlanCoveredUsage",
                    resource_id=resource,
                    **line,
                )
            )
            mine.append(
                BillLine(
                    billed=money(-covered),
                    effective=Decimal(0),
                    category="discount",
                    kind="SavingsPlanNegation",
                    resource_id=resource,
                    **line,
                )
            )
        else:  # FOCUS: commitment-covered usage is billed 0, its effective cost is the plan's rate
            mine.append(
                BillLine(
                    billed=Decimal(0),
                    effective=money(plan),
                    kind="SavingsPlanCoveredUsage",
                    resource_id=resource,
                    **line,
                )
            )
        # The plan's fee is the account's, not the cluster's (no resource, no cluster tag).
        other.append(
            BillLine(
                start=start,
                end=start + timedelta(days=1),
                billed=money(plan),
                effective=Decimal(0),
                category="purchase",
                kind="SavingsPlanRecurringFee",
                account=ACCOUNT,
                currency="USD",
            )
        )
    for day in billed_days:
        start = day_start(day)
        mine.append(
            BillLine(
                start=start,
                end=start + timedelta(days=1),
                billed=NAT_DAILY,
                resource_id=NAT_ID,
                account=ACCOUNT,
                tags=TAGS,
                currency="USD",
            )
        )
    if billed_days:
        period: dict[str, Any] = dict(
            start=day_start(billed_days[0]), end=day_start(billed_days[-1]) + timedelta(days=1)
        )
        mine.append(BillLine(billed=CREDIT, category="discount", kind="Credit", tags=TAGS, currency="USD", **period))
        tax = money(round(node_usage * TAX_RATE))
        mine.append(BillLine(billed=tax, category="tax", tags=TAGS, currency="USD", **period))
    return Bill(fmt, tuple(mine + other), tuple(mine), billed_days)


@dataclass(frozen=True)
class RowCost:
    """The estimate of one (day, node, namespace, owner, kind) group of ``provider_allocations``."""

    day: date
    node: str
    namespace: str
    owner: str | None
    entry_kind: str
    total: int
    pv: int
    lb: int
    other: int

    @property
    def compute(self) -> int:
        return self.total - self.pv - self.lb - self.other


def row_costs(db: Database) -> list[RowCost]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT (hour AT TIME ZONE 'UTC')::date AS day, coalesce(node, '') AS node, namespace, entry_kind,"
            " nullif(team, '') AS owner, sum(coalesce(total_cost_micros, 0)) AS total,"
            " sum(coalesce(pv_cost_micros, 0)) AS pv, sum(coalesce(lb_cost_micros, 0)) AS lb,"
            " sum(coalesce(network_cost_micros, 0) + coalesce(shared_cost_micros, 0)"
            "     + coalesce(external_cost_micros, 0)) AS other"
            " FROM provider_allocations WHERE cluster = %s GROUP BY 1, 2, 3, 4, 5",
            (CLUSTER,),
        ).fetchall()
    return [
        RowCost(r["day"], r["node"], r["namespace"], r["owner"], r["entry_kind"], *(int(r[k]) for k in KEYS))
        for r in rows
    ]


KEYS = ("total", "pv", "lb", "other")


def estimate_of(rows: list[RowCost], days: set[date]) -> int:
    """The cluster's estimate (idle included) over ``days``, micros."""
    return sum(row.total for row in rows if row.day in days)


def expected_allocated(rows: list[RowCost], assets: list[AssetDay], bill: Bill) -> dict[str, Fraction]:
    """Each owner's allocated cost on the billed basis, from the method's rule (the issue's item 2)
    applied here by hand: on a billed day a row's compute scales by its node's bill over the
    node's estimate, its storage by the disks' bill over the day's storage, its load balancer cost
    likewise, and what has no bill counterpart (network) is 0; other days stay at estimate. Shared
    namespaces are left out (they are the shared pool), unlabelled ones are ``__unallocated__``."""
    estimate = {(a.kind, a.name, a.day): a.estimate for a in assets}
    provider = {a.name: a.provider_id for a in assets}
    storage: dict[date, Fraction] = {}
    balancer: dict[date, Fraction] = {}
    for day in bill.billed_days:
        disks = sum(bill.usage_of(a.provider_id, day) for a in assets if a.kind == "disk" and a.day == day)
        lbs = sum(bill.usage_of(a.provider_id, day) for a in assets if a.kind == "load_balancer" and a.day == day)
        storage[day] = Fraction(disks, sum(r.pv for r in rows if r.day == day))
        balancer[day] = Fraction(lbs, sum(r.lb for r in rows if r.day == day))
    owners: dict[str, Fraction] = defaultdict(Fraction)
    for row in rows:
        if row.entry_kind == "idle" or row.namespace in SHARED_NAMESPACES:
            continue
        owner = row.owner or "__unallocated__"
        if row.day not in bill.billed_days:
            owners[owner] += row.total
            continue
        node_share = Fraction(0)
        if row.compute:
            billed = bill.usage_of(instance_id(provider[row.node]), row.day)
            node_share = Fraction(row.compute * billed, estimate[("node", row.node, row.day)])
        owners[owner] += node_share + row.pv * storage[row.day] + row.lb * balancer[row.day]
    return dict(owners)
