"""The ``finops`` commands over reports: ``report``, ``import``, ``export`` and ``policy check``.

Each reads the policy (when it takes one) before connecting, so a bad policy is reported as such
even without a database; the report's coverage warning goes with a table on stdout, and to stderr
for JSON and CSV so stdout stays parseable.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from cli import arguments, carbon_report, exits, gpu_report
from cli.report_help import (
    BASES,
    BASIS_HELP,
    BY_HELP,
    CHARGEBACK_EXAMPLES,
    CLUSTER_HELP,
    EXPORT_DESCRIPTION,
    FLEET_HELP,
    FOCUS_EXAMPLES,
    FORMAT_HELP,
    FORMATS,
    LAST_MONTH_HELP,
    MONTH_HELP,
    REPORT_DESCRIPTION,
    REQUIRE_COMPLETE,
    S3_HELP,
)
from finops.focus_rows import FocusVersion


def _report_db(cluster: str | None = None, policy: Any = None) -> Any:
    """The database, its schema checked and ``cluster`` (when named) known to it."""
    from cli.database import open_database, require_known_cluster

    db = open_database()
    try:
        fixed = [entry.cluster for entry in policy.shared.fixed if entry.cluster] if policy else []
        require_known_cluster(db, cluster, [*fixed, _default_cluster()])
    except BaseException:
        db.close()
        raise
    return db


def _default_cluster() -> str:
    """The cluster a report covers when nothing names one: ``CLUSTER_ID``, as the functions use it."""
    from usecases.reports.service import DEFAULT_CLUSTER

    return os.environ.get("CLUSTER_ID") or DEFAULT_CLUSTER


def cmd_report(args: argparse.Namespace) -> int:
    from datetime import date

    from usecases.reports import formats as out
    from usecases.reports import service

    if args.report == "carbon":
        return _carbon_report(args)
    if args.report == "gpus":
        return _gpu_report(args)
    # The policy first: a bad one is reported as such, even without a database to connect to.
    policy = out.load_policy(args.policy) if args.report in ("chargeback", "team", "budgets") else None
    if getattr(args, "fleet", None):
        assert policy is not None  # chargeback, team and budgets require --policy
        return _fleet_report(args, policy)
    db = _report_db(args.cluster, policy)
    options: Any = {"require_complete": args.require_complete, "default_cluster": _default_cluster()}
    try:
        if args.report == "budgets":
            from usecases.reports.budgets import budgets_report

            assert policy is not None  # budgets require --policy
            document = budgets_report(
                db, policy, args.month, basis=args.basis, cluster=args.cluster, default_cluster=_default_cluster()
            )
            _print(args.format, document, *out.budgets_rows(document.body))
            return exits.OK
        if args.report == "daily":
            query = service.ReportQuery(service.last_days(args.days, date.today()), args.cluster, **options)
            document = service.daily_view(db, query)
            _print(args.format, document, *out.daily_rows(document.body))
            return exits.OK
        query = service.ReportQuery(service.month_period(args.month), args.cluster, **options)
        if args.report == "unlabelled":
            document = service.unlabelled(db, query)
            _print(args.format, document, *out.unlabelled_rows(document.body))
            return exits.OK
        assert policy is not None  # chargeback and team require --policy
        if args.report == "team":
            document = service.team_report(db, policy, query, args.team, basis=args.basis)
            _print(args.format, document, *out.team_rows(document.body))
            return exits.OK
        _print_chargeback(args.format, service.chargeback(db, policy, query, args.by, args.basis))
        return exits.OK
    finally:
        db.close()


def _carbon_report(args: argparse.Namespace) -> int:
    window = carbon_report.period(args)  # before connecting: bad flags are refused as such
    db = _report_db(args.cluster)
    try:
        return carbon_report.run(args, window, db, _default_cluster(), _print)
    finally:
        db.close()


def _gpu_report(args: argparse.Namespace) -> int:
    db = _report_db(args.cluster)
    try:
        return gpu_report.run(args, db, _default_cluster(), _print)
    finally:
        db.close()


def _fleet_report(args: argparse.Namespace, policy: Any) -> int:
    """``finops report chargeback|team|budgets --fleet URL``: every cluster's final hours from the
    fleet bucket (``usecases.reports.fleet``), on the estimate; no database."""
    from usecases.reports import formats as out
    from usecases.reports import service
    from usecases.reports.budgets import budgets_report
    from usecases.reports.fleet import FleetLedger

    ledger = FleetLedger(_fleet_reader(args))
    if args.report == "budgets":
        document = budgets_report(ledger, policy, args.month, basis=args.basis, cluster=args.cluster)
        _print(args.format, document, *out.budgets_rows(document.body))
        return exits.OK
    query = service.ReportQuery(service.month_period(args.month), args.cluster, require_complete=args.require_complete)
    if args.report == "team":
        document = service.team_report(ledger, policy, query, args.team, basis=args.basis)
        _print(args.format, document, *out.team_rows(document.body))
        return exits.OK
    _print_chargeback(args.format, ledger.chargeback(policy, query, args.by, args.basis))
    return exits.OK


def _fleet_reader(args: argparse.Namespace) -> Any:
    """The ``--fleet`` bucket's reader for ``--engine`` (``FLEET_CLICKHOUSE_*`` for a server)."""
    from infra.settings import FleetReportSettings, load
    from usecases.reports.fleet import fleet_reader

    settings = load(FleetReportSettings, os.environ)
    server = settings.FLEET_CLICKHOUSE_URL.get_secret_value() if settings.FLEET_CLICKHOUSE_URL else None
    return fleet_reader(
        args.fleet,
        args.s3_endpoint,
        engine=getattr(args, "engine", "duckdb"),
        server=server,
        cluster=settings.FLEET_CLICKHOUSE_CLUSTER,
    )


def _print_chargeback(form: str, report: Any) -> None:
    from usecases.reports import formats as out

    if form != "table" and (warned := out.chargeback_warnings(report)):
        print(warned, file=sys.stderr)  # stdout stays parseable; the table prints its own warnings
    print(
        {
            "json": lambda: out.as_json(report.to_document()),
            "csv": lambda: out.chargeback_csv(report),
            "table": lambda: out.chargeback_table(report),
        }[form]().rstrip("\n")
    )


def _print(form: str, document: Any, title: str, headers: list[str], rows: list[tuple[object, ...]]) -> None:
    """A report (``service.ReportDocument``) on stdout as ``form``: JSON (the document's body),
    CSV (``headers`` and ``rows``) or a table under ``title``. The coverage warning goes above
    the table, and to stderr with JSON and CSV so stdout stays parseable."""
    from usecases.reports import formats as out

    warned = out.warning(document.coverages)
    if form == "table":
        print((f"{warned}\n" if warned else "") + out.titled_table(title, headers, rows))
        return
    if warned:
        print(warned, file=sys.stderr)
    print(out.as_json(document.body) if form == "json" else out.rows_csv(headers, rows).rstrip("\n"))


def cmd_policy_check(args: argparse.Namespace) -> int:
    """Validate a policy as the reports would, without a database: exit 2 naming each bad key."""
    from usecases.reports.formats import load_policy

    policy = load_policy(args.file)  # InvalidInput: every error, one line each (exit 2)
    fixed = len(policy.shared.fixed)
    print(
        f"policy OK: {args.file} (currency {policy.currency}, owner label {policy.owner_label}, "
        f"idle {policy.idle.value} to {policy.idle_owner}, {len(policy.shared.namespaces)} shared namespace(s), "
        f"{fixed} fixed cost(s), require_complete {str(policy.require_complete).lower()})"
    )
    return exits.OK


def cmd_export(args: argparse.Namespace) -> int:
    from usecases.reports import exports
    from usecases.reports.formats import load_policy

    policy = load_policy(args.policy)  # before connecting: a bad policy fails on its own
    options: dict[str, Any] = {
        "cluster": args.cluster,
        "s3_endpoint": args.s3_endpoint,
        "require_complete": args.require_complete,
        "default_cluster": _default_cluster(),
    }
    if args.export == "focus":
        from usecases.reports.focus_files import FileFormat

        options |= {"version": FocusVersion(args.focus_version), "fmt": FileFormat(args.format), "basis": args.basis}
        if args.fleet:
            return _fleet_focus(args, policy, options)
        return exports.export_focus_command(_report_db(args.cluster, policy), policy, args.month, args.to, **options)
    return exports.export_chargeback_csv_command(
        _report_db(args.cluster, policy), policy, args.month, args.to, by=args.by, basis=args.basis, **options
    )


def _fleet_focus(args: argparse.Namespace, policy: Any, options: dict[str, Any]) -> int:
    """``finops export focus --fleet URL``: every cluster's month from the fleet bucket, on the
    estimate, through DuckDB; no database."""
    from finops.errors import InvalidInput
    from finops.focus import DEFAULT_ISSUER
    from infra.objectstore import ObjectStore
    from usecases.reports import exports
    from usecases.reports.fleet import fleet_focus_export

    if args.cluster:
        raise InvalidInput("--fleet: a fleet export covers every cluster (no --cluster)")
    export = fleet_focus_export(
        _fleet_reader(args),
        policy,
        args.month,
        issuer=os.environ.get("FOCUS_INVOICE_ISSUER") or DEFAULT_ISSUER,
        version=options["version"],
        basis=args.basis,
        require_complete_period=args.require_complete,
    )
    store = ObjectStore(endpoint_url=args.s3_endpoint)
    result = exports.write_focus(
        export, args.month, args.to, store, cluster=None, fmt=options["fmt"], currency=policy.currency
    )
    return exports.print_export(result)


def _export_parser(
    kinds: Any,
    name: str,
    text: str,
    *,
    to_help: str,
    cluster_help: str = "one cluster (default: all)",
    epilog: str | None = None,
) -> Any:
    """An ``export`` subcommand with the options every export takes."""
    parser = kinds.add_parser(name, help=text, epilog=epilog)
    parser.add_argument("--month", required=True, type=arguments.month, help=MONTH_HELP)
    parser.add_argument("--policy", required=True, type=arguments.text, help="the chargeback policy YAML")
    parser.add_argument("--to", required=True, type=arguments.text, metavar="PATH|s3://bucket/prefix/", help=to_help)
    parser.add_argument("--cluster", type=arguments.cluster, help=cluster_help)
    parser.add_argument("--s3-endpoint", type=arguments.http_url, help=S3_HELP)
    parser.add_argument("--require-complete", action="store_true", help=REQUIRE_COMPLETE)
    return parser


def _fleet_arguments(parser: Any, *, engines: bool) -> None:
    """``--fleet`` and ``--s3-endpoint``; with ``engines``, ``--engine`` (the chargeback's)."""
    parser.add_argument("--fleet", type=arguments.text, metavar="s3://bucket/prefix/", help=FLEET_HELP)
    parser.add_argument("--s3-endpoint", type=arguments.http_url, help=S3_HELP)
    if not engines:
        return
    parser.add_argument(
        "--engine",
        choices=("duckdb", "chdb", "clickhouse"),
        default="duckdb",
        help="with --fleet: DuckDB (default), ClickHouse's engine in process (chDB, an extra package), or "
        "the ClickHouse server of FLEET_CLICKHOUSE_URL (and its FLEET_CLICKHOUSE_CLUSTER)",
    )


def add_commands(sub: Any) -> None:
    report = sub.add_parser(
        "report", help="showback and chargeback reports from DATABASE_URL", description=REPORT_DESCRIPTION
    )
    kinds = report.add_subparsers(dest="report", required=True, metavar="REPORT", help="one of:")
    for name, text in (
        ("chargeback", "a month's cost per owner: allocated, idle, shared; lines add up to the bill"),
        ("team", "one team's monthly report: total and change, top namespaces, requests against usage"),
        ("daily", "cost per day and owner for the last days"),
        ("unlabelled", "namespaces without the owner label, with their cost"),
    ):
        kind = kinds.add_parser(name, help=text, epilog=CHARGEBACK_EXAMPLES if name == "chargeback" else None)
        kind.add_argument("--cluster", type=arguments.cluster, help=CLUSTER_HELP)
        kind.add_argument("--require-complete", action="store_true", help=REQUIRE_COMPLETE)
        kind.add_argument("--format", choices=FORMATS, default="table", help=FORMAT_HELP)
        if name == "daily":
            kind.add_argument(
                "--days", type=arguments.count(3660), default=30, help="UTC days ending today (default: 30)"
            )
            continue
        kind.add_argument("--month", type=arguments.month, default="last", help=LAST_MONTH_HELP)
        if name in ("chargeback", "team"):
            kind.add_argument("--policy", required=True, type=arguments.text, help="the chargeback policy YAML")
            kind.add_argument("--basis", choices=BASES, help=BASIS_HELP)
        if name == "chargeback":
            kind.add_argument("--by", choices=("team", "cost-center", "namespace"), default="team", help=BY_HELP)
        if name in ("chargeback", "team"):
            _fleet_arguments(kind, engines=name == "chargeback")
        if name == "team":
            kind.add_argument(
                "--team",
                required=True,
                type=arguments.label_value,
                help="the team: a value of the policy's owner label",
            )
    carbon_report.add_parser(kinds)
    gpu_report.add_parser(kinds, cluster_help=CLUSTER_HELP, require_complete=REQUIRE_COMPLETE, formats=FORMATS)
    budgets = kinds.add_parser("budgets", help="the policy's budgets: month to date, month-end forecast, percent used")
    budgets.add_argument("--month", type=arguments.month, default="current", help=f"{MONTH_HELP} (default: current)")
    budgets.add_argument(
        "--policy", required=True, type=arguments.text, help="the chargeback policy YAML, with its budgets"
    )
    budgets.add_argument("--cluster", type=arguments.cluster, help=CLUSTER_HELP)
    budgets.add_argument("--format", choices=FORMATS, default="table", help=FORMAT_HELP)
    budgets.add_argument("--basis", choices=BASES, help=BASIS_HELP)
    _fleet_arguments(budgets, engines=False)
    budgets.set_defaults(require_complete=False)  # the policy's require_complete applies
    report.set_defaults(func=cmd_report)

    def import_cloud(args: argparse.Namespace) -> int:
        from usecases.reports.cloud import import_command

        return import_command(_report_db(), args.source, s3_endpoint=args.s3_endpoint)

    imports = sub.add_parser("import", help="import cost data into DATABASE_URL")
    import_kinds = imports.add_subparsers(dest="kind", required=True, metavar="KIND", help="one of:")
    cloud = import_kinds.add_parser("cloud", help="a FOCUS or AWS CUR 2.0 CSV of cloud spend outside the clusters")
    cloud.add_argument(
        "--from",
        dest="source",
        required=True,
        type=arguments.text,
        metavar="PATH|s3://bucket/key",
        help="CSV, gzip too",
    )
    cloud.add_argument("--s3-endpoint", type=arguments.http_url, help=S3_HELP)
    cloud.set_defaults(func=import_cloud)
    export = sub.add_parser(
        "export", help="export a month's chargeback to a file or S3", description=EXPORT_DESCRIPTION
    )
    export_kinds = export.add_subparsers(dest="export", required=True, metavar="FORMAT", help="one of:")
    focus = _export_parser(
        export_kinds,
        "focus",
        "FOCUS 1.3 (split cost allocation) or 1.2, as CSV or Parquet",
        to_help="a file, or a folder (ending /)",
        cluster_help="one cluster (default: all, with the month's cloud spend)",
        epilog=FOCUS_EXAMPLES,
    )
    focus.add_argument(
        "--focus-version",
        choices=[v.value for v in FocusVersion],
        default=FocusVersion.V1_3.value,
        help="the FOCUS version whose columns the file has (default: 1.3)",
    )
    focus.add_argument(
        "--format",
        choices=("csv", "parquet"),
        default="csv",
        help="csv (default) or parquet (typed columns: decimals, UTC timestamps)",
    )
    csv = _export_parser(export_kinds, "chargeback-csv", "the chargeback report as CSV", to_help="a file or a folder")
    csv.add_argument("--by", choices=("team", "cost-center", "namespace"), default="team", help=BY_HELP)
    focus.add_argument("--fleet", type=arguments.text, metavar="s3://bucket/prefix/", help=FLEET_HELP)
    for parser in (focus, csv):
        parser.add_argument("--basis", choices=BASES, help=BASIS_HELP)
        parser.set_defaults(func=cmd_export)

    policy = sub.add_parser("policy", help="chargeback policy files")
    policy_kinds = policy.add_subparsers(dest="policy_command", required=True, metavar="ACTION", help="one of:")
    policy_check = policy_kinds.add_parser(
        "check", help="validate a policy file (exit 2 naming every bad key, one per line)"
    )
    policy_check.add_argument("file", type=arguments.text, help="the chargeback policy YAML")
    policy_check.set_defaults(func=cmd_policy_check)
