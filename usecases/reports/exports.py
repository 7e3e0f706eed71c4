"""Exports of a month's chargeback to files: FOCUS (``finops export focus``) and the chargeback CSV.

The FOCUS rows (1.3 or 1.2) are built by the domain (``finops.focus``: what each row and column
means); this module reads the daily rollups and streams the rows as CSV or Parquet
(``usecases.reports.focus_files``) through ``infra.objectstore`` to a local path or
``s3://bucket/key``. A target ending in ``/`` (or an existing local directory) is a folder: the
file is named ``focus-<cluster|all>-<month>.csv`` (``.parquet``).

Without ``--cluster`` the export covers every cluster and the month's cloud spend
(``cloud_costs``, see ``usecases.reports.cloud``), so the sum of ``BilledCost`` is the month's
chargeback total with its direct costs; with ``--cluster`` it covers that cluster only, and no
cloud spend, which belongs to no cluster.

On a bill basis (``--basis billed|amortised``, FOCUS 1.3 only; default the policy's basis) the
clusters are reconciled to the imported bill (``usecases.reports.reconciled``) and each row is split
from one of its lines; when rows name commitments, the Contract Commitment dataset is written
beside the file, same format: ``focus-all-2026-11.contract-commitment.csv``.

The provider and invoice issuer the rows name is ``FOCUS_INVOICE_ISSUER`` (e.g. the platform
team's name), read by the command; unset, ``Kubernetes``.

Each file gets a sidecar, written just before it (after the Contract Commitment dataset, so the
data file never appears without either): the same name with ``.coverage.json`` for
``.csv`` or ``.parquet`` (``focus-all-2026-10.coverage.json``), holding ``{"file", "period",
"currency", "total", "coverage"}`` (the report's ``"coverage"`` object). The file itself stays
plain, one header and rows, as finance tools ingest it; a comment line would break most of them.
An incomplete month is exported with a warning on stderr, or refused with ``require_complete``
(nothing is written).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, BinaryIO

from finops.allocations import DEFAULT_AGGREGATION
from finops.chargeback import Report
from finops.coverage import Coverage
from finops.focus import DEFAULT_ISSUER, DailyCost, FocusExport, build_focus
from finops.focus_origins import DailyExtra, with_extras
from finops.focus_rows import FocusVersion
from finops.policy import Policy
from finops.reconcile_policy import Basis, parse_basis
from infra.objectstore import ObjectStore, resolve_target
from infra.postgres import Database
from usecases.reports import focus_files, reconciled
from usecases.reports.focus_files import FileFormat
from usecases.reports.formats import chargeback_csv, chargeback_warnings, warning
from usecases.reports.service import DEFAULT_CLUSTER, ReportQuery, chargeback, month_period, period_coverage


@dataclass(frozen=True)
class ExportResult:
    url: str
    rows: int
    total: Decimal
    currency: str
    coverage: Coverage
    coverage_url: str
    note: str | None = None
    commitments_url: str | None = None  # the Contract Commitment dataset, when rows name commitments

    def as_document(self) -> dict[str, Any]:
        document = {
            "url": self.url,
            "rows": self.rows,
            "total": str(self.total),
            "currency": self.currency,
            "coverage_url": self.coverage_url,
            "coverage": self.coverage.as_document(),
        }
        if self.commitments_url:
            document["commitments_url"] = self.commitments_url
        return document | ({"note": self.note} if self.note else {})


def coverage_target(url: str) -> str:
    """The sidecar of the file at ``url``: ``.csv`` or ``.parquet`` replaced by ``.coverage.json``
    (else appended)."""
    stem = next((url.removesuffix(suffix) for suffix in (".csv", ".parquet") if url.endswith(suffix)), url)
    return stem + ".coverage.json"


def commitment_target(url: str, fmt: FileFormat) -> str:
    """The Contract Commitment dataset beside the file at ``url``:
    ``focus-all-2026-11.contract-commitment.csv`` (``.parquet``)."""
    return url.removesuffix(f".{fmt.value}") + f".contract-commitment.{fmt.value}"


def write_with_coverage(
    store: ObjectStore,
    url: str,
    content_type: str,
    report: Report,
    write: Callable[[BinaryIO], object],
    note: str | None = None,
) -> str:
    """Write the report's coverage sidecar (with ``note``, when the file has one to give), then the
    file (``write`` fills it), so a file never appears without it; returns the sidecar's URL."""
    sidecar = {
        "file": url,
        "period": report.period.as_document(),
        "currency": report.currency,
        "total": str(report.total),
        "basis": report.basis,
        "coverage": report.coverage.as_document() if report.coverage else None,
        "reconciliation": report.reconciliation,
    }
    if note:
        sidecar["note"] = note
    written = store.write_bytes(coverage_target(url), json.dumps(sidecar, indent=2).encode(), "application/json")
    with store.writer(url, content_type) as out:
        write(out)
    return written


def focus_file_name(month: str, cluster: str | None, fmt: FileFormat = FileFormat.CSV) -> str:
    return f"focus-{cluster or 'all'}-{month}.{fmt.value}"


def focus_export(
    db: Database,
    policy: Policy,
    month: str,
    *,
    cluster: str | None = None,
    aggregation: str = DEFAULT_AGGREGATION,
    require_complete: bool = False,
    default_cluster: str = DEFAULT_CLUSTER,
    issuer: str = DEFAULT_ISSUER,
    version: FocusVersion = FocusVersion.V1_3,
    basis: Basis | str | None = None,
) -> FocusExport:
    """The month's FOCUS rows from the daily rollups (and the month's cloud spend when the export
    covers every cluster); its report carries the month's coverage, after the same refusals as
    every report (``usecases.reports.service.period_coverage``). On a bill basis (``basis``,
    default the policy's for 1.3, the estimate for 1.2) the clusters are reconciled to the
    imported bill and split from its lines (``usecases.reports.reconciled``)."""
    if basis is None:  # the policy's, as for every report; 1.2 has no bill basis to default to
        basis = policy.reconciliation.basis if version is FocusVersion.V1_3 else Basis.ESTIMATE
    basis = parse_basis(basis)
    period = month_period(month)
    query = ReportQuery(period, cluster, aggregation, require_complete, default_cluster)
    coverage = period_coverage(db, query, policy)
    if basis is not Basis.ESTIMATE:
        bill = reconciled.read(db, policy, period, coverage.cluster_names, basis, aggregation=aggregation)
        direct = [] if cluster is not None else bill.direct
        export = build_focus(
            (), policy, period=period, clusters=coverage.cluster_names, direct=direct, issuer=issuer,
            version=version, reconciled=bill.clusters,
        )  # fmt: skip
        summary = reconciled.document(bill, export.report, None)
        report = replace(export.report, coverage=coverage, basis=basis.value, reconciliation=summary)
        return replace(export, report=report)
    daily: list[DailyCost] = []
    for row in db.fetch_all("focus_daily_rows", **query.params()):
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
    window: dict[str, Any] = {"aggregation": aggregation, "cluster": cluster, "start": period.start, "end": period.end}
    extras = [_extra(r) for r in db.fetch_all("focus_daily_extras", **window)]
    daily = with_extras(daily, extras)
    direct = [] if cluster is not None else reconciled.direct_costs(db, policy, period, coverage.cluster_names)
    export = build_focus(
        daily, policy, period=period, clusters=coverage.cluster_names, direct=direct, issuer=issuer, version=version
    )
    return replace(export, report=replace(export.report, coverage=coverage))


def _extra(r: dict[str, Any]) -> DailyExtra:
    """A ``focus_daily_extras`` row."""
    hours = None if r["gpu_hours"] is None else Decimal(r["gpu_hours"])
    grams = None if r["grams"] is None else int(r["grams"])
    where = (r["day"], r["cluster"], r["namespace"], r["owner"], r["cost_center"], r["is_idle"], r["gpu_model"])
    return DailyExtra(*where, hours, int(r["idle_micros"] or 0), grams)


def export_focus(
    db: Database,
    policy: Policy,
    month: str,
    target: str,
    store: ObjectStore,
    *,
    cluster: str | None = None,
    require_complete: bool = False,
    default_cluster: str = DEFAULT_CLUSTER,
    issuer: str = DEFAULT_ISSUER,
    version: FocusVersion = FocusVersion.V1_3,
    fmt: FileFormat = FileFormat.CSV,
    basis: Basis | str | None = None,
) -> ExportResult:
    """Write the month's FOCUS file (``version``, ``fmt``), and its coverage sidecar, to
    ``target`` (a path, ``s3://bucket/key`` or a folder); when the rows name commitments, the
    Contract Commitment dataset beside it (``commitment_target``), written before the file."""
    export = focus_export(
        db,
        policy,
        month,
        cluster=cluster,
        require_complete=require_complete,
        default_cluster=default_cluster,
        issuer=issuer,
        version=version,
        basis=basis,
    )
    return write_focus(export, month, target, store, cluster=cluster, fmt=fmt, currency=policy.currency)


def write_focus(
    export: FocusExport, month: str, target: str, store: ObjectStore, *, cluster: str | None, fmt: FileFormat,
    currency: str,
) -> ExportResult:  # fmt: skip
    """Write ``export`` to ``target`` (``export_focus``): the Contract Commitment dataset when the
    rows name commitments, then the coverage sidecar, then the file."""
    url = resolve_target(target, focus_file_name(month, cluster, fmt))
    commitments = export.commitments()  # an unlisted commitment fails here, before any write
    commitments_url = None
    if commitments.commitments:
        commitments_url = commitment_target(url, fmt)
        with store.writer(commitments_url, fmt.content_type) as out:
            focus_files.write(commitments, out, fmt)
    sidecar = write_with_coverage(
        store, url, fmt.content_type, export.report, lambda out: focus_files.write(export, out, fmt), export.note
    )
    assert export.report.coverage is not None  # focus_export always sets it
    return ExportResult(
        url=url,
        rows=len(export.drafts),
        total=export.report.total,
        currency=currency,
        coverage=export.report.coverage,
        coverage_url=sidecar,
        note=export.note,
        commitments_url=commitments_url,
    )


def export_focus_command(
    db: Database,
    policy: Policy,
    month: str,
    target: str,
    *,
    cluster: str | None,
    s3_endpoint: str | None,
    require_complete: bool = False,
    default_cluster: str = DEFAULT_CLUSTER,
    version: FocusVersion = FocusVersion.V1_3,
    fmt: FileFormat = FileFormat.CSV,
    basis: str | None = None,
) -> int:
    """``finops export focus``: write the file, print where and what (JSON); closes ``db``. The
    policy is loaded (``load_policy``) by the caller before it connects: a bad policy fails first."""
    try:
        result = export_focus(
            db,
            policy,
            month,
            target,
            ObjectStore(endpoint_url=s3_endpoint),
            cluster=cluster,
            require_complete=require_complete,
            default_cluster=default_cluster,
            issuer=os.environ.get("FOCUS_INVOICE_ISSUER") or DEFAULT_ISSUER,
            version=version,
            fmt=fmt,
            basis=basis,
        )
    finally:
        db.close()
    return print_export(result)


def print_export(result: ExportResult) -> int:
    """An export's warnings on stderr, and where and what it wrote (JSON) on stdout."""
    if warned := warning([result.coverage]):
        print(warned, file=sys.stderr)
    if result.note:
        print(f"warning: {result.note}", file=sys.stderr)
    print(json.dumps(result.as_document(), indent=2))
    return 0


def export_chargeback_csv_command(
    db: Database,
    policy: Policy,
    month: str,
    target: str,
    *,
    cluster: str | None,
    by: str,
    s3_endpoint: str | None,
    require_complete: bool = False,
    default_cluster: str = DEFAULT_CLUSTER,
    basis: str | None = None,
) -> int:
    """``finops export chargeback-csv``: the chargeback report as CSV, and its coverage sidecar,
    to a path or S3. The policy is loaded before connecting, as for ``export_focus_command``."""
    try:
        query = ReportQuery(
            month_period(month), cluster, require_complete=require_complete, default_cluster=default_cluster
        )
        report = chargeback(db, policy, query, by, basis)
    finally:
        db.close()
    url = resolve_target(target, f"chargeback-{cluster or 'all'}-{month}.csv")
    data = chargeback_csv(report).encode()
    sidecar = write_with_coverage(
        ObjectStore(endpoint_url=s3_endpoint), url, "text/csv", report, lambda out: out.write(data)
    )
    if warned := chargeback_warnings(report):
        print(warned, file=sys.stderr)
    coverage = report.coverage.as_document() if report.coverage else None
    print(
        json.dumps(
            {
                "url": url,
                "lines": len(report.lines),
                "total": str(report.total),
                "currency": report.currency,
                "coverage_url": sidecar,
                "coverage": coverage,
            }
        )
    )
    return 0
