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

from finops.errors import InvalidInput
from infra.logs import one_line
from usecases.reports.text_table import render


def _report_db() -> Any:
    from cli.database import open_database

    return open_database()


def _default_cluster() -> str:
    """The cluster a report covers when nothing names one: ``CLUSTER_ID``, as the functions use it."""
    from usecases.reports.service import DEFAULT_CLUSTER

    return os.environ.get("CLUSTER_ID") or DEFAULT_CLUSTER


def cmd_report(args: argparse.Namespace) -> int:
    from datetime import date

    from usecases.reports import formats as out
    from usecases.reports import service

    # The policy first: a bad one is reported as such, even without a database to connect to.
    policy = out.load_policy(args.policy) if args.report in ("chargeback", "team", "budgets") else None
    db = _report_db()
    options: Any = {"require_complete": args.require_complete, "default_cluster": _default_cluster()}
    try:
        if args.report == "budgets":
            assert policy is not None  # budgets require --policy
            _print_budgets(db, policy, args)
            return 0
        if args.report == "daily":
            query = service.ReportQuery(service.last_days(args.days, date.today()), args.cluster, **options)
            _print_document(service.daily_view(db, query))
            return 0
        query = service.ReportQuery(service.month_period(args.month), args.cluster, **options)
        if args.report == "unlabelled":
            listing = service.unlabelled(db, query)
            if args.format == "json":
                _print_document(listing)
            else:  # the warning travels with the table, on stdout
                warned = out.warning(listing.coverages)
                table = [(r["cluster"], r["namespace"], r["cost"]) for r in listing.body["namespaces"]]
                print((f"{warned}\n" if warned else "") + render(["cluster", "namespace", "cost"], table, right=(2,)))
            return 0
        assert policy is not None  # chargeback and team require --policy
        if args.report == "team":
            _print_document(service.team_report(db, policy, query, args.team, basis=args.basis))
            return 0
        report = service.chargeback(db, policy, query, args.by, args.basis)
        if args.format != "table" and (warned := out.warning([report.coverage])):
            print(warned, file=sys.stderr)  # stdout stays parseable; the table prints its own warning
        print(
            {
                "json": lambda: out.as_json(report.to_document()),
                "csv": lambda: out.chargeback_csv(report),
                "table": lambda: out.chargeback_table(report),
            }[args.format]().rstrip("\n")
        )
        return 0
    finally:
        db.close()


def _print_budgets(db: Any, policy: Any, args: argparse.Namespace) -> None:
    from usecases.reports import formats as out
    from usecases.reports.budgets import budgets_report, budgets_table

    document = budgets_report(
        db, policy, args.month, basis=args.basis, cluster=args.cluster, default_cluster=_default_cluster()
    )
    if args.format == "json":
        _print_document(document)
    else:  # the warning travels with the table, on stdout
        warned = out.warning(document.coverages)
        print((f"{warned}\n" if warned else "") + budgets_table(document.body))


def _print_document(document: Any) -> None:
    """A JSON report (``service.ReportDocument``) on stdout, its warning (if any) on stderr."""
    from usecases.reports import formats as out

    if warned := out.warning(document.coverages):
        print(warned, file=sys.stderr)
    print(out.as_json(document.body))


BASES = ("estimate", "billed", "amortised")
BASIS_HELP = (
    "what the figures stand on (default: the policy's reconciliation.basis); billed and amortised reconcile "
    "the days an imported bill covers to it"
)
REQUIRE_COMPLETE = "refuse (exit 1) unless every hour of the period is final and priced in every cluster"


def cmd_policy_check(args: argparse.Namespace) -> int:
    """Validate a policy as the reports would, without a database: exit 1 naming the key path."""
    from usecases.reports.formats import load_policy

    try:
        policy = load_policy(args.file)
    except InvalidInput as exc:  # "policy file F: policy.shared.fixed[0].amount: ..."
        print(f"finops: {one_line(exc.message)}", file=sys.stderr)
        return 1
    fixed = len(policy.shared.fixed)
    print(
        f"policy OK: {args.file} (currency {policy.currency}, owner label {policy.owner_label}, "
        f"idle {policy.idle.value} to {policy.idle_owner}, {len(policy.shared.namespaces)} shared namespace(s), "
        f"{fixed} fixed cost(s), require_complete {str(policy.require_complete).lower()})"
    )
    return 0


S3_HELP = "an S3-compatible endpoint URL (default: AWS's)"
FORMAT_HELP = "output format (default: table)"
BY_HELP = "one line per team (the owner label), cost centre or namespace (default: team)"
REPORT_DESCRIPTION = """\
Showback and chargeback reports from DATABASE_URL. A report that takes --policy reads it first,
so a bad policy is reported as such even without a database. Exit 1 when the period is refused
(unpriced hours, or hours not final under --require-complete), 2 for bad input or policy. With
--format json or csv the coverage warning goes to stderr, so stdout stays parseable."""
EXPORT_DESCRIPTION = """\
Export a month's chargeback to a local file or to S3 (s3://bucket/key, or a prefix ending /, where
the file is named for the cluster and month). Exit 1 when the month is refused (unpriced hours, or
hours not final under --require-complete), 2 for bad input or policy."""
CHARGEBACK_EXAMPLES = """\
examples:
  finops report chargeback --month 2026-10 --policy policy.yaml
      October per team, as a table: allocated, idle and shared lines adding up to the bill
  finops report chargeback --month 2026-10 --policy policy.yaml --by cost-center --format csv > 2026-10.csv
      per cost centre, as CSV
  finops report chargeback --month 2026-10 --policy policy.yaml --basis billed --require-complete
      reconciled to the imported cloud bill; refused unless every hour is final and priced"""
FOCUS_EXAMPLES = """\
examples:
  finops export focus --month 2026-10 --policy policy.yaml --to focus-2026-10.csv
      every cluster and the month's cloud spend, to a local file
  finops export focus --month 2026-10 --policy policy.yaml --cluster prod --to s3://billing/focus/
      one cluster, to S3 as s3://billing/focus/focus-prod-2026-10.csv
  finops export focus --month 2026-10 --policy policy.yaml --to s3://billing/focus/ \\
      --s3-endpoint http://minio.storage:9000 --require-complete
      to an S3-compatible store; refused unless every hour is final and priced"""


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
        return exports.export_focus_command(_report_db(), policy, args.month, args.to, **options)
    return exports.export_chargeback_csv_command(
        _report_db(), policy, args.month, args.to, by=args.by, basis=args.basis, **options
    )


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
    parser.add_argument("--month", required=True, help="e.g. 2026-10")
    parser.add_argument("--policy", required=True, help="the chargeback policy YAML")
    parser.add_argument("--to", required=True, metavar="PATH|s3://bucket/prefix/", help=to_help)
    parser.add_argument("--cluster", help=cluster_help)
    parser.add_argument("--s3-endpoint", help=S3_HELP)
    parser.add_argument("--require-complete", action="store_true", help=REQUIRE_COMPLETE)
    return parser


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
        kind.add_argument("--cluster", help="one cluster (default: all, each settled on its own first)")
        kind.add_argument("--require-complete", action="store_true", help=REQUIRE_COMPLETE)
        if name == "daily":
            kind.add_argument("--days", type=int, default=30, help="UTC days ending today (default: 30)")
            continue
        kind.add_argument("--month", required=True, help="e.g. 2026-10")
        kind.add_argument("--format", choices=("table", "json", "csv"), default="table", help=FORMAT_HELP)
        if name in ("chargeback", "team"):
            kind.add_argument("--policy", required=True, help="the chargeback policy YAML")
            kind.add_argument("--basis", choices=BASES, help=BASIS_HELP)
        if name == "chargeback":
            kind.add_argument("--by", choices=("team", "cost-center", "namespace"), default="team", help=BY_HELP)
        if name == "team":
            kind.add_argument("--team", required=True, help="the team: a value of the policy's owner label")
    budgets = kinds.add_parser("budgets", help="the policy's budgets: month to date, month-end forecast, percent used")
    budgets.add_argument("--month", help="e.g. 2026-11 (default: the current UTC month)")
    budgets.add_argument("--policy", required=True, help="the chargeback policy YAML, with its budgets")
    budgets.add_argument("--cluster", help="one cluster (default: all, each settled on its own first)")
    budgets.add_argument("--format", choices=("table", "json"), default="table", help=FORMAT_HELP)
    budgets.add_argument("--basis", choices=BASES, help=BASIS_HELP)
    budgets.set_defaults(require_complete=False)  # the policy's require_complete applies
    report.set_defaults(func=cmd_report)

    def import_cloud(args: argparse.Namespace) -> int:
        from usecases.reports.cloud import import_command

        return import_command(_report_db(), args.source, s3_endpoint=args.s3_endpoint)

    imports = sub.add_parser("import", help="import cost data into DATABASE_URL")
    import_kinds = imports.add_subparsers(dest="kind", required=True, metavar="KIND", help="one of:")
    cloud = import_kinds.add_parser("cloud", help="a FOCUS or AWS CUR 2.0 CSV of cloud spend outside the clusters")
    cloud.add_argument("--from", dest="source", required=True, metavar="PATH|s3://bucket/key", help="CSV, gzip too")
    cloud.add_argument("--s3-endpoint", help=S3_HELP)
    cloud.set_defaults(func=import_cloud)
    export = sub.add_parser(
        "export", help="export a month's chargeback to a file or S3", description=EXPORT_DESCRIPTION
    )
    export_kinds = export.add_subparsers(dest="export", required=True, metavar="FORMAT", help="one of:")
    focus = _export_parser(
        export_kinds,
        "focus",
        "FOCUS 1.2 CSV: a row per day, owner and namespace",
        to_help="a file, or a folder (ending /)",
        cluster_help="one cluster (default: all, with the month's cloud spend)",
        epilog=FOCUS_EXAMPLES,
    )
    csv = _export_parser(export_kinds, "chargeback-csv", "the chargeback report as CSV", to_help="a file or a folder")
    csv.add_argument("--by", choices=("team", "cost-center", "namespace"), default="team", help=BY_HELP)
    csv.add_argument("--basis", choices=BASES, help=BASIS_HELP)
    for parser in (focus, csv):
        parser.set_defaults(func=cmd_export)

    policy = sub.add_parser("policy", help="chargeback policy files")
    policy_kinds = policy.add_subparsers(dest="policy_command", required=True, metavar="ACTION", help="one of:")
    policy_check = policy_kinds.add_parser("check", help="validate a policy file (exit 1 naming the bad key)")
    policy_check.add_argument("file", help="the chargeback policy YAML")
    policy_check.set_defaults(func=cmd_policy_check)
