"""Exports of a month's chargeback to files: FOCUS CSV (``finops export focus``).

The rows are built by the domain (``finops.focus``, which documents what each row stands for);
this module reads the daily rollups, writes the CSV with the ``csv`` module and uploads it through
``infra.objectstore`` to a local path or ``s3://bucket/key``. A target ending in ``/`` (or an
existing local directory) is a folder: the file is named ``focus-<cluster|all>-<month>.csv``.

Without ``--cluster`` the export covers every cluster and the month's cloud spend
(``cloud_costs``, see ``functions.reports.cloud``), so the sum of ``BilledCost`` is the month's
chargeback total with its direct costs; with ``--cluster`` it covers that cluster only, and no
cloud spend, which belongs to no cluster.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.errors import InvalidInput
from finops.focus import COLUMNS, DailyCost, FocusExport, build_focus
from finops.policy import Policy
from functions.reports.cloud import direct_costs
from functions.reports.render import chargeback_csv, load_policy
from functions.reports.service import ReportQuery, chargeback, month_period
from infra.objectstore import ObjectStore, resolve_target
from infra.postgres import Database

CONTENT_TYPE = "text/csv; charset=utf-8"


@dataclass(frozen=True)
class ExportResult:
    url: str
    rows: int
    total: Decimal
    currency: str

    def as_document(self) -> dict[str, Any]:
        return {"url": self.url, "rows": self.rows, "total": str(self.total), "currency": self.currency}


def focus_file_name(month: str, cluster: str | None) -> str:
    return f"focus-{cluster or 'all'}-{month}.csv"


def focus_export(
    db: Database,
    policy: Policy,
    month: str,
    *,
    cluster: str | None = None,
    aggregation: str = DEFAULT_AGGREGATION,
) -> FocusExport:
    """The month's FOCUS rows from the daily rollups (and the month's cloud spend when the export
    covers every cluster)."""
    period = month_period(month)
    params: dict[str, Any] = {
        "aggregation": aggregation,
        "start": period.start.date(),
        "end": period.end.date(),
        "cluster": cluster,
    }
    daily: list[DailyCost] = []
    for row in db.fetch_all("focus_daily_rows", **params):
        for currency in {row["currency"], row["min_currency"]} - {None}:
            if currency.strip() != policy.currency:
                raise InvalidInput(
                    f"policy.currency is {policy.currency} but cluster {row['cluster']}'s allocations are priced "
                    f"in {currency.strip()}; exports never convert currencies"
                )
        daily.append(
            DailyCost(
                day=row["day"],
                cluster=row["cluster"],
                namespace=row["namespace"],
                owner=row["owner"],
                cost_center=row["cost_center"],
                micros=int(row["micros"]),
                core_hours=Decimal(row["core_hours"]),
                is_idle=row["is_idle"],
            )
        )
    direct = [] if cluster is not None else direct_costs(db, period, policy.currency)
    clusters = None if cluster is None else [cluster]
    return build_focus(daily, policy, period=period, clusters=clusters, direct=direct)


def focus_csv(export: FocusExport) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(export.rows)
    return out.getvalue().encode()


def export_focus(
    db: Database,
    policy: Policy,
    month: str,
    target: str,
    store: ObjectStore,
    *,
    cluster: str | None = None,
) -> ExportResult:
    """Write the month's FOCUS CSV to ``target`` (a path, ``s3://bucket/key`` or a folder)."""
    export = focus_export(db, policy, month, cluster=cluster)
    url = store.write_bytes(resolve_target(target, focus_file_name(month, cluster)), focus_csv(export), CONTENT_TYPE)
    return ExportResult(url=url, rows=len(export.rows), total=export.report.total, currency=policy.currency)


def export_focus_command(
    db: Database, policy_path: str, month: str, target: str, *, cluster: str | None, s3_endpoint: str | None
) -> int:
    """``finops export focus``: write the file, print where and what (JSON); closes ``db``."""
    try:
        result = export_focus(
            db, load_policy(policy_path), month, target, ObjectStore(endpoint_url=s3_endpoint), cluster=cluster
        )
    finally:
        db.close()
    print(json.dumps(result.as_document(), indent=2))
    return 0


def export_chargeback_csv_command(
    db: Database,
    policy_path: str,
    month: str,
    target: str,
    *,
    cluster: str | None,
    by: str,
    s3_endpoint: str | None,
) -> int:
    """``finops export chargeback-csv``: the chargeback report as CSV, to a path or S3."""
    try:
        policy = load_policy(policy_path)
        report = chargeback(db, policy, ReportQuery(month_period(month), cluster), by)
    finally:
        db.close()
    name = f"chargeback-{cluster or 'all'}-{month}.csv"
    url = ObjectStore(endpoint_url=s3_endpoint).write_bytes(
        resolve_target(target, name), chargeback_csv(report).encode(), "text/csv"
    )
    print(json.dumps({"url": url, "lines": len(report.lines), "total": str(report.total), "currency": report.currency}))
    return 0
