"""We test these aspects of reconciliation to the cloud bill, on the demo cluster's November
collected by ``collect_allocations`` from the sandbox OpenCost (allocations and assets, over HTTP)
into a real PostgreSQL, with FOCUS 1.2 and CUR 2.0 bills generated for its nodes
(``tests/e2e/bill_world.py``) and imported with ``finops import cloud``:

- on ``--basis billed``, under both idle options, the cluster's total is the sum of its bill
  lines plus the estimate of the two days the late bill does not cover, to the cent; with a bill
  covering the whole month it is the bill's cluster total, and the all-cluster report (the plan's
  fee, the account's, included) is the whole invoice;
- every team line changes by its share: allocated cost scales by its nodes' bill over their
  estimate (the unlabelled namespace runs on one node: its ratio is that node's), disks and load
  balancer likewise; the variance lists every node with estimate, bill and status (the node
  missing from the bill is ``missing``); the NAT gateway is the ``__unreconciled__`` line; the
  late days are ``estimated_days`` and a report of those days alone is the estimate's;
- the CLI table says the basis, the billed days and the variance per node; the JSON has
  ``basis`` and ``reconciliation``; ``cost_api`` answers the CLI's total for ``?basis=billed``
  and a 400 naming ``basis`` for a basis it does not know;
- ``--basis amortised`` stands on EffectiveCost: the savings plan's covered usage at its rate.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest

from finops.chargeback import Period, Report
from finops.lines import LineKind
from infra.postgres import Database, apply_migrations, connect
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.cluster import cluster_objects
from sandbox.localstack import Stack, serve_function
from sandbox.postgres import scratch_database
from tests.bills import SAVINGS_PLAN_ARN
from tests.e2e.bill_world import (
    ACCOUNT,
    CLOCK,
    CLUSTER,
    DAYS,
    DEMO_KUBE,
    DEMO_SCENARIO,
    FIRST,
    MISSING_NODE,
    MONTH,
    NAT_DAILY,
    NODE_FACTORS,
    POLICY,
    SP_NODE,
    AssetDay,
    Bill,
    RowCost,
    asset_days,
    cents,
    day_start,
    demo_bill,
    estimate_of,
    expected_allocated,
    instance_id,
    micros,
    row_costs,
)
from tests.e2e.cli_runner import run_finops
from tests.focus_conformance import check_commitments, check_rows
from tests.focus_validator import decimal_rules, failed_rules
from tests.logs import LOG_DIR as TEST_LOGS
from usecases.reports.formats import load_policy
from usecases.reports.service import ReportQuery, chargeback

TOKEN = "test-bill-token"
PROXY = "test-bill-proxy"
FORMATS = ["focus", "cur2"]


@dataclass
class World:
    """The collected month in its own database, and the bill imported last (one at a time)."""

    dsn: str
    db: Database
    stack: Stack
    assets: list[AssetDay]
    rows: list[RowCost]
    folder: Path
    imported: tuple[str, int] | None = None

    def bill(self, fmt: str, late: int = 2) -> Bill:
        """The bill in ``fmt`` without its last ``late`` days, imported (alone) with the CLI."""
        bill = demo_bill(self.assets, fmt, late)
        if self.imported != (fmt, late):
            path = self.folder / f"bill-{fmt}-{late}.csv"
            path.write_text(bill.csv())
            with self.db.connection() as conn:
                conn.execute("DELETE FROM cloud_costs")
            done = run_finops("import", "cloud", "--from", str(path), DATABASE_URL=self.dsn)
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout)["rows"] == len(bill.lines)
            self.imported = (fmt, late)
        return bill

    def policy(self, idle: str = "separate", discounts: str = "proportional") -> str:
        path = self.folder / f"policy-{idle}-{discounts}.yaml"
        path.write_text(POLICY.format(idle=idle, discounts=discounts))
        return str(path)

    def chargeback(self, policy: str, basis: str, period: Period | None = None, by: str = "team") -> Report:
        """The cluster's chargeback, in this process."""
        query = ReportQuery(period or Period(FIRST, CLOCK), CLUSTER)
        return chargeback(self.db, load_policy(policy), query, by, basis=basis)

    def report(self, policy: str, basis: str, *more: str, fmt: str = "json") -> Any:
        args = ["report", "chargeback", "--month", MONTH, "--policy", policy, "--basis", basis, "--format", fmt]
        done = run_finops(*args, *more, DATABASE_URL=self.dsn)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if fmt == "json" else done.stdout


def load_month(url: str) -> None:
    """November as a history load, continued until nothing remains."""
    body = {"from": FIRST.isoformat(), "to": CLOCK.isoformat()}
    for _ in range(20):
        loaded = httpx.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=600)
        assert loaded.status_code == 200, loaded.text
        if loaded.json()["remaining"] == 0:
            return
    raise AssertionError(f"the history load still has hours remaining: {loaded.text}")


@pytest.fixture(scope="module")
def world(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    # The live demo keeps 15 days (its Prometheus retention); this month is older than that.
    scenario = sandbox_opencost.load_scenario(DEMO_SCENARIO).model_copy(update={"retention": None})
    with (
        scratch_database(pg_server, prefix="finops_bills") as dsn,
        sandbox_opencost.serve(scenario, clock=lambda: CLOCK) as opencost,
        sandbox_kube.serve(seed_dir=DEMO_KUBE, objects=cluster_objects(scenario)) as kube,
    ):
        db = connect(dsn)
        apply_migrations(db)
        stack = Stack(
            database_url=dsn,
            opencost_url=opencost.url,
            kube_url=kube.url,
            ping_token=TOKEN,
            cluster=CLUSTER,
            log_dir=TEST_LOGS,
        )
        with serve_function(stack, "collect_allocations") as url:
            load_month(url)
        with db.connection() as conn:
            hours = conn.execute("SELECT count(*) AS n FROM allocation_hours WHERE state = 'final'").fetchone()
        assert hours is not None and hours["n"] == 24 * len(DAYS)
        assets, rows = asset_days(db), row_costs(db)
        assert {a.day for a in assets} == set(DAYS) == {r.day for r in rows}
        assert {a.name for a in assets if a.kind == "node"} == {*NODE_FACTORS, MISSING_NODE}
        try:
            yield World(dsn, db, stack, assets, rows, tmp_path_factory.mktemp("bills"))
        finally:
            db.close()


@pytest.fixture(scope="module")
def cost_api(world: World) -> Iterator[str]:
    with serve_function(world.stack, "cost_api", PROXY_TOKEN=PROXY, POLICY_PATH=world.policy()) as url:
        yield url


def get(url: str, path: str) -> httpx.Response:
    return httpx.get(
        url + path, headers={"Argocd-Application-Name": "argocd:cost-gate", "X-Finops-Proxy-Token": PROXY}, timeout=60
    )


def late_days(bill: Bill) -> set[Any]:
    return set(DAYS) - set(bill.billed_days)


def cluster_of(document: dict[str, Any]) -> dict[str, Any]:
    (found,) = document["reconciliation"]["clusters"]
    assert found["cluster"] == CLUSTER
    return dict(found)


@pytest.mark.parametrize("late", [2, 0], ids=["late-bill", "whole-month"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_billed_total_is_the_bill_plus_the_estimate_of_days_without_one(world: World, fmt: str, late: int) -> None:
    bill = world.bill(fmt, late)
    uncovered = late_days(bill)
    assert len(uncovered) == late
    # The test's reading of the estimate (SQL over the collected rows) is the estimate report's.
    estimate = world.chargeback(world.policy(), "estimate").total
    assert estimate == cents(estimate_of(world.rows, set(DAYS)))
    expected = cents(bill.cluster_total() + estimate_of(world.rows, uncovered))
    if late == 0:
        assert expected == cents(bill.cluster_total())  # the month's bill for the cluster, exactly
    for idle in ("separate", "distribute"):
        document = world.report(world.policy(idle), "billed", "--cluster", CLUSTER)
        assert document["basis"] == "billed"
        assert document["total"] == str(expected), (fmt, late, idle)
        assert sum(Decimal(line["total"]) for line in document["lines"]) == expected
        assert cluster_of(document)["total"] == str(expected)
        assert Decimal(document["total"]) != estimate  # the bill differs from the estimate
    if late == 0:
        # All clusters: the cluster's lines plus the savings plan's fee, the account's: the invoice.
        whole = world.report(world.policy(), "billed")
        assert whole["total"] == str(cents(sum(micros(line.billed) for line in bill.lines)))
        assert bill.cluster_total() != sum(micros(line.billed) for line in bill.lines)


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_team_line_changes_by_its_share(world: World, fmt: str) -> None:
    bill = world.bill(fmt)
    # Discounts to the shared pool: a line's allocated cost is its own rows' reconciled cost only.
    policy = world.policy("separate", "shared")
    report = world.chargeback(policy, "billed")
    owners = {
        line.owner: line.allocated for line in report.lines if line.kind in (LineKind.OWNER, LineKind.UNALLOCATED)
    }
    expected = expected_allocated(world.rows, world.assets, bill)
    assert set(owners) == set(expected)
    for owner, amount in owners.items():
        assert abs(Fraction(amount) * 1_000_000 - expected[owner]) <= 10_000, (owner, amount, float(expected[owner]))

    # legacy (unlabelled) runs on node-b only: on the billed days its cost moves by node-b's ratio.
    billed = set(bill.billed_days)
    legacy = [r for r in world.rows if r.namespace == "legacy"]
    assert {r.node for r in legacy} == {SP_NODE} and all(r.total == r.compute for r in legacy)
    node_b = [a for a in world.assets if a.name == SP_NODE and a.day in billed]
    resource = instance_id(node_b[0].provider_id)
    ratio = Fraction(sum(bill.usage_of(resource, a.day) for a in node_b), sum(a.estimate for a in node_b))
    assert ratio == pytest.approx(NODE_FACTORS[SP_NODE] * (1 if fmt == "cur2" else Fraction(1, 2)), abs=1e-6)
    on_bill = sum(r.total for r in legacy if r.day in billed) * ratio
    on_estimate = sum(r.total for r in legacy if r.day not in billed)
    (line,) = [line for line in world.chargeback(policy, "billed", by="namespace").lines if line.owner == "legacy"]
    assert abs(Fraction(line.allocated) * 1_000_000 - on_bill - on_estimate) <= 10_000

    found = cluster_of({"reconciliation": report.reconciliation})
    nodes = {r["name"]: r for r in found["resources"] if r["kind"] == "node"}
    assert set(nodes) == {*NODE_FACTORS, MISSING_NODE}
    for name, node in nodes.items():
        mine = [a for a in world.assets if a.name == name and a.day in billed]
        assert node["estimate"] == str(cents(sum(a.estimate for a in mine))), name
        assert node["billed"] == str(cents(sum(bill.usage_of(instance_id(a.provider_id), a.day) for a in mine)))
        assert node["status"] == ("missing" if name == MISSING_NODE else "matched"), name
    assert nodes[MISSING_NODE]["billed"] == "0.00" and Decimal(nodes[MISSING_NODE]["estimate"]) > 0
    assert {r["kind"] for r in found["resources"]} == {"node", "disk", "load_balancer"}
    assert found["unreconciled"] == str(cents(micros(NAT_DAILY) * len(billed)))
    assert len(found["unreconciled_lines"]) == len(billed)
    assert found["estimated_days"] == [{"start": "2026-11-29", "end": "2026-12-01"}]
    assert (found["billed_hours"], found["estimated_hours"]) == (24 * 28, 48)
    unreconciled = [line for line in report.lines if line.kind is LineKind.UNRECONCILED]
    assert [(line.owner, line.total) for line in unreconciled] == [("__unreconciled__", Decimal(found["unreconciled"]))]

    # The days without a bill stay on estimate, line by line.
    late = Period(day_start(DAYS[-2]), CLOCK)
    unbilled, estimated = world.chargeback(policy, "billed", late), world.chargeback(policy, "estimate", late)
    assert [(li.owner, li.total) for li in unbilled.lines] == [(li.owner, li.total) for li in estimated.lines]
    assert cluster_of({"reconciliation": unbilled.reconciliation})["billed_days"] == []


def test_the_cli_table_json_and_cost_api_show_the_basis_and_variance(world: World, cost_api: str) -> None:
    world.bill("cur2")
    policy = world.policy()
    table = world.report(policy, "billed", "--cluster", CLUSTER, fmt="table")
    assert "basis billed" in table
    assert "billed days 2026-11-01..2026-11-29; on estimate 2026-11-29..2026-12-01" in table
    rows = {line.split()[1]: line.split() for line in table.splitlines() if line.startswith("node ")}
    assert set(rows) == {*NODE_FACTORS, MISSING_NODE}
    assert rows[MISSING_NODE][-1] == "missing" and rows["node-a"][-1] == rows["node-b"][-1] == "matched"
    assert all(row[2].startswith("aws:///eu-west-1") for row in rows.values())
    assert "__unreconciled__" in table

    document = world.report(policy, "billed", "--cluster", CLUSTER)
    assert document["basis"] == "billed" and set(cluster_of(document)) >= {"billed_days", "resources"}
    answer = get(cost_api, f"/api/v1/chargeback?month={MONTH}&basis=billed")
    assert answer.status_code == 200, answer.text
    assert answer.json()["total"] == document["total"] and answer.json()["basis"] == "billed"
    assert answer.json()["reconciliation"] == document["reconciliation"]
    # Per line: the estimate beside the bill is the estimate report's line.
    before = {line.owner: str(line.total) for line in world.chargeback(policy, "estimate").lines}
    after = {line["owner"]: line["estimate"] for line in document["reconciliation"]["lines"]}
    assert after == {**before, "__unreconciled__": "0.00"}
    default = get(cost_api, f"/api/v1/chargeback?month={MONTH}").json()  # the policy's basis: estimate
    assert default["basis"] == "estimate" and default["total"] != document["total"]
    refused = get(cost_api, f"/api/v1/chargeback?month={MONTH}&basis=nonsense")
    assert refused.status_code == 400 and "basis" in refused.json()["error"], refused.text


@pytest.mark.parametrize("fmt", FORMATS)
def test_amortised_stands_on_effective_cost(world: World, fmt: str) -> None:
    bill = world.bill(fmt)
    expected = cents(bill.cluster_total(amortised=True) + estimate_of(world.rows, late_days(bill)))
    assert bill.cluster_total(amortised=True) != bill.cluster_total()
    document = world.report(world.policy(), "amortised", "--cluster", CLUSTER)
    assert document["basis"] == "amortised" and document["total"] == str(expected)
    # node-b: its on-demand half at the bill, its covered half at the plan's rate, in both formats.
    node_b = next(r for r in cluster_of(document)["resources"] if r["name"] == SP_NODE)
    mine = [a for a in world.assets if a.name == SP_NODE and a.day in bill.billed_days]
    effective = sum(bill.usage_of(instance_id(a.provider_id), a.day, amortised=True) for a in mine)
    assert node_b["billed"] == str(cents(effective))
    assert Fraction(node_b["billed"]) < Fraction(node_b["estimate"]) * NODE_FACTORS[SP_NODE]  # the plan saves


def test_settled_days_per_node_are_stored_once_and_read_back_unchanged(world: World) -> None:
    world.bill("cur2", 2)
    with world.db.connection() as conn:
        conn.execute("DELETE FROM allocation_node_daily")
        conn.execute("DELETE FROM allocation_node_days")
    live = world.chargeback(world.policy(), "billed").to_document()  # reads the hourly rows, stores the days
    with world.db.connection() as conn:
        stored = conn.execute("SELECT day FROM allocation_node_days ORDER BY day").fetchall()
        differing = conn.execute(
            """SELECT count(*) AS n FROM (
                 (SELECT day, node, namespace, entry_kind, team, cost_center, total_micros, pv_micros, lb_micros,
                         other_micros FROM allocation_node_daily)
                 EXCEPT
                 (SELECT (hour AT TIME ZONE 'UTC')::date, coalesce(node, ''), namespace, entry_kind,
                         coalesce(team, ''), coalesce(cost_center, ''), sum(total_cost_micros), sum(pv_cost_micros),
                         sum(lb_cost_micros),
                         sum(network_cost_micros + shared_cost_micros + coalesce(external_cost_micros, 0))
                  FROM provider_allocations GROUP BY 1, 2, 3, 4, 5, 6)) AS d"""
        ).fetchone()
    assert [row["day"] for row in stored] == DAYS  # every hour of the month is final: every day stored
    assert differing is not None and differing["n"] == 0
    assert world.chargeback(world.policy(), "billed").to_document() == live  # read back: the same report


PLAN_ARN = SAVINGS_PLAN_ARN.format(account=ACCOUNT)
COMMITMENTS = f"""  commitments:
    - id: "{PLAN_ARN}"
      contract: aws-enterprise-2026
      category: spend
      type: Compute Savings Plan
      start: 2026-01-01T00:00:00Z
      end: 2029-01-01T00:00:00Z
      cost: "26280.00"
      description: 3-year compute plan, no upfront
"""


def with_commitments(world: World, idle: str) -> str:
    """The policy with ``idle``, and the savings plan's terms listed."""
    path = world.folder / f"policy-{idle}-commitments.yaml"
    path.write_text(Path(world.policy(idle)).read_text() + COMMITMENTS)
    return str(path)


def export(world: World, policy: str, basis: str, fmt: str = "csv", *more: str) -> dict[str, Any]:
    args = ["export", "focus", "--month", MONTH, "--policy", policy, "--basis", basis, "--format", fmt]
    (world.folder / basis).mkdir(exist_ok=True)
    done = run_finops(*args, "--to", f"{world.folder}/{basis}/", *more, DATABASE_URL=world.dsn)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def origins_of(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], list[dict[str, str]]]:
    """The rows by origin charge: its resource, charge period and description."""
    found: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        found[(row["ResourceId"], row["ChargePeriodStart"], row["ChargeDescription"])].append(row)
    return found


def applied(row: dict[str, str]) -> Decimal:
    """The row's cost the savings plan covered, from ContractApplied (JSON numbers read exactly)."""
    if not row["ContractApplied"]:
        return Decimal(0)
    (element,) = json.loads(row["ContractApplied"], parse_float=Decimal)["Elements"]
    assert (element["ContractID"], element["ContractCommitmentID"]) == ("aws-enterprise-2026", PLAN_ARN)
    return Decimal(element["ContractCommitmentAppliedCost"])


@pytest.mark.parametrize("basis", ["billed", "amortised"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_focus_on_the_bill_splits_each_billed_charge_exactly(world: World, fmt: str, basis: str) -> None:
    bill = world.bill(fmt)
    amortised = basis == "amortised"
    policy = with_commitments(world, "distribute")
    result = export(world, policy, basis)
    _, rows = read_focus(Path(result["url"]))
    assert result["rows"] == len(rows) and "note" not in result

    # Each node's billed day is an origin: its rows add up to the bill's usage of that node that day.
    nodes = {a.provider_id: a.name for a in world.assets if a.kind == "node"}
    days = origins_of([row for row in rows if row["ResourceType"] == "Kubernetes Node"])
    expected = {
        (a.provider_id, day_start(a.day)): bill.usage_of(instance_id(a.provider_id), a.day, amortised)
        for a in world.assets
        if a.kind == "node" and a.day in bill.billed_days and a.name != MISSING_NODE
    }
    assert {(key[0], datetime.fromisoformat(key[1])) for key in days} == set(expected)
    for (resource, start, _), mine in days.items():
        exact = Fraction(expected[(resource, datetime.fromisoformat(start))], 10_000)  # in cents
        total = sum(Decimal(row["BilledCost"]) for row in mine) * 100
        assert abs(Fraction(total) - exact) < 1, (nodes[resource], start)
        assert all(row["ChargeCategory"] == "Usage" and row["ResourceName"] == nodes[resource] for row in mine)
        ratios = [json.loads(r["AllocatedMethodDetails"], parse_float=Decimal)["Elements"][0] for r in mine]
        assert sum(element["AllocatedRatio"] for element in ratios) == 1
        # The savings plan covered half of node-b: ContractApplied shares what it covered that day.
        covered = sum(applied(row) for row in mine) * 100
        if nodes[resource] == SP_NODE:
            plan = [line for line in bill.cluster_lines if line.kind == "SavingsPlanCoveredUsage"
                    and line.start == datetime.fromisoformat(start)]  # fmt: skip
            want = sum(Fraction(micros(line.amortised if amortised else line.billed)) for line in plan) / 10_000
            assert abs(Fraction(covered) - want) < 1 and all(row["ContractApplied"] for row in mine)
        else:
            assert covered == 0 and not any(row["ContractApplied"] for row in mine)
    # The late days stay on estimate: one origin per day; the tax, credit and NAT lines are origins.
    estimated = origins_of([row for row in rows if row["ResourceType"] == "Kubernetes Cluster"])
    assert sorted(key[1][:10] for key in estimated) == sorted(day.isoformat() for day in late_days(bill))
    categories = {row["ChargeCategory"] for row in rows if row["ChargeDescription"].startswith("Bill line")}
    assert {"Tax", "Credit"} <= categories

    # Grouped by line the rows are the chargeback on that basis, to the cent; the total is its.
    report = chargeback(world.db, load_policy(policy), ReportQuery(Period(FIRST, CLOCK)), basis=basis)
    totals: dict[tuple[str, str], list[Decimal]] = defaultdict(lambda: [Decimal(0)] * 3)
    for row in rows:
        for k, column in enumerate(("x_AllocatedCost", "x_IdleCost", "x_SharedCost")):
            totals[(row["x_LineKind"], row["x_Owner"])][k] += Decimal(row[column])
    lines = {(line.kind.value, line.owner): [line.allocated, line.idle, line.shared] for line in report.lines}
    assert {key: value for key, value in totals.items() if any(value)} == {k: v for k, v in lines.items() if any(v)}
    assert sum(Decimal(row["BilledCost"]) for row in rows) == report.total == Decimal(result["total"])
    if fmt == "cur2" and not amortised:  # the negation's rows give the plan back: applied nets to zero
        assert sum(applied(row) for row in rows) == 0

    # The Contract Commitment dataset: the plan, as the policy lists it.
    dataset = Path(result["commitments_url"])
    assert dataset.name == "focus-all-2026-11.contract-commitment.csv"
    with dataset.open() as handle:
        reader = csv.DictReader(handle)
        commitments = list(reader)
        assert check_commitments(reader.fieldnames or [], commitments) == []
    assert [(c["ContractCommitmentId"], c["ContractId"], c["ContractCommitmentCost"]) for c in commitments] == [
        (PLAN_ARN, "aws-enterprise-2026", "26280.00")
    ]
    # The FinOps Foundation's validator runs on the billed month in test_the_demo_month_validates_in_both_formats.


@pytest.mark.parametrize("basis", ["estimate", "billed"])
def test_the_demo_month_validates_in_both_formats(world: World, basis: str) -> None:
    world.bill("cur2")
    policy = with_commitments(world, "separate")
    versions = ["1.2", "1.3"] if basis == "estimate" else ["1.3"]
    for version in versions:
        written = {fmt: export(world, policy, basis, fmt, "--focus-version", version) for fmt in ("csv", "parquet")}
        csv_file, parquet_file = Path(written["csv"]["url"]), Path(written["parquet"]["url"])
        header, rows = read_focus(csv_file)
        assert failed_rules(csv_file, world.folder) == [], version
        assert failed_rules(parquet_file, world.folder) == decimal_rules(), version
        table = pq.read_table(parquet_file)
        assert table.schema.names == header and table.num_rows == len(rows)
        assert sum(table.column("BilledCost").to_pylist()) == Decimal(written["csv"]["total"])
        if basis == "billed":
            assert pq.read_table(Path(written["parquet"]["commitments_url"])).num_rows == 1


def test_an_unlisted_commitment_is_refused_before_anything_is_written(world: World, tmp_path: Path) -> None:
    world.bill("focus")
    policy = world.policy()  # without the plan's terms
    args = ["export", "focus", "--month", MONTH, "--policy", policy, "--basis", "billed"]
    done = run_finops(*args, "--to", f"{tmp_path}/", DATABASE_URL=world.dsn)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"finops: policy.reconciliation.commitments: the bill applies commitment '{PLAN_ARN}', which is not listed; "
        "add it with its term (start, end), category, type and amount"
    )
    assert list(tmp_path.iterdir()) == []
    refused = run_finops(*args, "--focus-version", "1.2", "--to", f"{tmp_path}/", DATABASE_URL=world.dsn)
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith("(--basis estimate): a bill basis needs --focus-version 1.3")


def read_focus(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """A CSV export's header and rows, after checking they conform to their FOCUS version."""
    with path.open() as handle:
        reader = csv.DictReader(handle)
        header, rows = list(reader.fieldnames or []), list(reader)
    assert check_rows(header, rows, "1.3" if "ServiceProviderName" in header else "1.2")[:10] == []
    return header, rows
