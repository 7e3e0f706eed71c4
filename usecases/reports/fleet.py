"""Reports across a fleet of clusters, read from the fleet bucket's hourly Parquet files
(``usecases.collect_allocations.fleet``) by DuckDB or ClickHouse's engine (chDB), both embedded
in the process, or a ClickHouse server (``infra.fleet``), not from PostgreSQL: the chargeback
(``fleet_chargeback``), the team report and the budgets (``FleetLedger``, the ledger they read),
and the FOCUS export (``fleet_focus_export``), all on the estimate.

Only the period's files are read (a file's path says its hour). The cost per cluster, namespace,
owner, cost centre and entry kind over the period, as PostgreSQL's rollups give it, then the same
policy code as every report (``finops.chargeback.allocate``). For the same final
hours the report is PostgreSQL's to the cent.

Coverage: every file is a final hour, so an hour without a file is *missing* here, whatever the
cluster's own ledger says (open, lost or not yet uploaded); the report's coverage says which, and
``--require-complete`` refuses a month with any. Currencies are refused as for every report.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Any

from finops.chargeback import CostRow, IdleRow, Report, allocate
from finops.coverage import (
    Coverage,
    LedgerRun,
    build_coverage,
    covered_clusters,
    require_complete,
    require_currency,
    require_priced,
)
from finops.errors import InvalidInput
from finops.focus import DEFAULT_ISSUER, DailyCost, FocusExport, build_focus
from finops.focus_rows import FocusVersion
from finops.hours import HOUR
from finops.lines import LineKey
from finops.money import format_amount
from finops.periods import Period
from finops.policy import Policy
from finops.reconcile_policy import Basis, parse_basis
from infra.fleet import FleetReader
from infra.fleet.clickhouse import ClickHouseReader, ClickHouseServerReader
from usecases.reports.service import ReportQuery, month_period


def fleet_reader(
    url: str,
    endpoint_url: str | None = None,
    *,
    engine: str = "duckdb",
    field: str = "--fleet",
    server: str | None = None,
    cluster: str | None = None,
) -> FleetReader:
    """The reader of the fleet bucket at ``url`` for ``engine``: DuckDB or chDB in process, or a
    ClickHouse ``server`` (``FLEET_CLICKHOUSE_URL``), spread over its ``cluster`` when named."""
    if engine == "clickhouse":
        if not server:
            raise InvalidInput("--engine clickhouse: set FLEET_CLICKHOUSE_URL to the server's HTTP interface")
        return ClickHouseServerReader(url, endpoint_url, field, server=server, cluster=cluster)
    return {"duckdb": FleetReader, "chdb": ClickHouseReader}[engine](url, endpoint_url, field)


def fleet_chargeback(
    url: str,
    policy: Policy,
    period: Period,
    *,
    endpoint_url: str | None = None,
    engine: str = "duckdb",
    field: str = "--fleet",
    by: LineKey | str = LineKey.TEAM,
    require_complete_period: bool = False,
    now: datetime | None = None,
    reader: FleetReader | None = None,
) -> Report:
    """The period's chargeback of every cluster in the fleet bucket (module docstring), computed by
    ``engine``: ``duckdb`` or ``chdb`` (ClickHouse's engine), the same answer; or by ``reader``
    (``fleet_reader``)."""
    reader = reader or fleet_reader(url, endpoint_url, engine=engine, field=field)
    found, hours = reader.rollup_and_hours(period)
    coverage = _coverage(hours, policy, period, require_complete_period, now)
    rows: list[CostRow] = []
    idle: list[IdleRow] = []
    for cluster, namespace, entry_kind, owner, cost_center, micros in found:
        if entry_kind == "idle":
            idle.append(IdleRow(cluster, micros))
        else:
            rows.append(CostRow(cluster, namespace, owner, cost_center, micros))
    report = allocate(rows, idle, policy, period=period, by=by, clusters=coverage.cluster_names)
    return replace(report, coverage=coverage)


def _coverage(
    hours: list[tuple[Any, ...]], policy: Policy, period: Period, require_complete_period: bool, now: datetime | None
) -> Coverage:
    """The files' coverage of ``period``, after every report's refusals (``finops.coverage``)."""
    runs = _runs(hours)
    clusters = covered_clusters(None, [r.cluster for r in runs], [f.cluster for f in policy.shared.fixed], "fleet")
    coverage = build_coverage(period, clusters, runs, now=now or datetime.now(UTC))
    require_currency(policy.currency, coverage)
    require_priced(coverage, policy.currency, {})
    if require_complete_period or policy.require_complete:
        require_complete(coverage)
    return coverage


@dataclass(frozen=True)
class FleetLedger:
    """The fleet bucket as the team report's and the budgets' ledger
    (``usecases.reports.service.Ledger``): every cluster, on the estimate."""

    reader: FleetReader

    def chargeback(
        self, policy: Policy, query: ReportQuery, by: LineKey | str = LineKey.TEAM, basis: Basis | str | None = None
    ) -> Report:
        _estimate_of_every_cluster(query.cluster, basis)
        return fleet_chargeback(
            self.reader.url, policy, query.period, by=by, require_complete_period=query.require_complete,
            now=query.now, reader=self.reader,
        )  # fmt: skip

    def owner_namespaces(self, query: ReportQuery) -> list[dict[str, Any]]:
        return self.reader.namespaces(query.period)

    def cost_days(self, query: ReportQuery) -> list[date]:
        return sorted({row["day"] for row in self.reader.daily(query.period)})


def _estimate_of_every_cluster(cluster: str | None, basis: Basis | str | None) -> None:
    if cluster is not None or (basis is not None and parse_basis(basis) is not Basis.ESTIMATE):
        raise InvalidInput("--fleet: a fleet report covers every cluster on the estimate (no --cluster, --basis)")


def fleet_focus_export(
    reader: FleetReader,
    policy: Policy,
    month: str,
    *,
    issuer: str = DEFAULT_ISSUER,
    version: FocusVersion = FocusVersion.V1_3,
    basis: Basis | str | None = None,
    require_complete_period: bool = False,
    now: datetime | None = None,
) -> FocusExport:
    """The month's FOCUS rows of every cluster in the fleet bucket, on the estimate: the rows
    ``finops export focus`` builds from one database holding the same final hours, without the
    cloud spend (a database's import, not the bucket's)."""
    _estimate_of_every_cluster(None, basis)
    period = month_period(month)
    _, hours = reader.rollup_and_hours(period)
    coverage = _coverage(hours, policy, period, require_complete_period, now)
    daily = [DailyCost(**row) for row in reader.daily(period)]
    export = build_focus(
        daily, policy, period=period, clusters=coverage.cluster_names, direct=[], issuer=issuer, version=version
    )
    report = replace(export.report, coverage=coverage, basis=Basis.ESTIMATE.value)
    return replace(export, report=report)


def _runs(hours: list[tuple[Any, ...]]) -> list[LedgerRun]:
    """The files' hours as the ledger's runs: consecutive final hours of one cluster and currency
    (an hour mixing currencies is split in two runs, which the currency check refuses)."""
    runs: list[LedgerRun] = []
    by_cluster: dict[str, list[tuple[datetime, str | None, int]]] = defaultdict(list)
    for cluster, hour, currency, other, count in hours:
        by_cluster[cluster].append((hour, currency, count))
        if other != currency:
            by_cluster[cluster].append((hour, other, 0))
    for cluster, entries in sorted(by_cluster.items()):
        for hour, currency, count in entries:
            last = runs[-1] if runs else None
            if last and last.cluster == cluster and last.currency == currency and last.last + HOUR == hour:
                runs[-1] = replace(last, last=hour, rows=last.rows + count)
            else:
                runs.append(
                    LedgerRun(cluster, "final", hour, hour, currency is None, currency, None, count)
                )  # fmt: skip
    return runs


def fleet_namespaces(
    url: str, period: Period, *, endpoint_url: str | None = None, field: str = "--fleet"
) -> list[dict[str, Any]]:
    """Every cluster's namespaces with their owner, cost centre and cost over ``period``, most
    expensive first (as a cluster's ``namespace_costs``, idle and unmounted cost left out)."""
    found, _ = FleetReader(url, endpoint_url, field).rollup_and_hours(period)
    namespaces: dict[tuple[str, str], dict[str, Any]] = {}
    for cluster, namespace, entry_kind, owner, cost_center, micros in found:
        if entry_kind == "idle" or not namespace:
            continue
        entry = namespaces.setdefault((cluster, namespace), {"owner": None, "cost_center": None, "micros": 0})
        entry["owner"] = max(filter(None, (entry["owner"], owner)), default=None)
        entry["cost_center"] = max(filter(None, (entry["cost_center"], cost_center)), default=None)
        entry["micros"] += micros
    ranked = sorted(namespaces.items(), key=lambda item: (-item[1]["micros"], item[0]))
    return [
        {
            "cluster": cluster,
            "namespace": namespace,
            "owner": entry["owner"],
            "costCenter": entry["cost_center"],
            "cost": format_amount(entry["micros"]),
        }
        for (cluster, namespace), entry in ranked
    ]
