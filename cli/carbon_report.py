"""``finops report carbon``: grams CO2e per team, cost centre, namespace or Argo CD application over
a month or ``--from``/``--to`` (``usecases.reports.carbon``). Its own module, as ``gpu_report`` is:
``cli.reports`` holds the money reports and the parsers they share.

The period is checked before the database is opened, so a bad ``--from``/``--to``/``--month``
combination is refused as such even without a database.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli import arguments, exits
from cli.report_help import CLUSTER_HELP, FORMAT_HELP, FORMATS, MONTH_HELP, REQUIRE_COMPLETE
from finops.chargeback import Period

HELP = "grams CO2e per team, cost centre, namespace or application; lines add up to the nodes' emissions"


def add_parser(kinds: Any) -> None:
    carbon = kinds.add_parser("carbon", help=HELP)
    carbon.add_argument("--month", type=arguments.month, help=f"{MONTH_HELP} (default: last, unless --from/--to)")
    carbon.add_argument(
        "--from", dest="from_", metavar="FROM", type=arguments.moment, help="start: a UTC date or RFC 3339 time"
    )
    carbon.add_argument("--to", type=arguments.moment, help="end (excluded): a UTC date or RFC 3339 time")
    carbon.add_argument(
        "--by",
        choices=("team", "cost-center", "namespace", "application"),
        default="team",
        help="one line per team (the owner label), cost centre, namespace or Argo CD application (default: team)",
    )
    carbon.add_argument("--cluster", type=arguments.cluster, help=CLUSTER_HELP)
    carbon.add_argument("--require-complete", action="store_true", help=REQUIRE_COMPLETE)
    carbon.add_argument("--format", choices=FORMATS, default="table", help=FORMAT_HELP)


def period(args: argparse.Namespace) -> Period:
    """``--from``/``--to`` (both, and not with ``--month``), else ``--month`` (default: last)."""
    from finops.errors import InvalidInput
    from usecases.reports import service

    if args.from_ is not None or args.to is not None:
        if args.month is not None or args.from_ is None or args.to is None:
            raise InvalidInput("--from and --to: give both, and not with --month")
        return Period(args.from_, args.to)
    return service.month_period(args.month or arguments.month("last"))


def run(args: argparse.Namespace, window: Period, db: Any, default_cluster: str, show: Any) -> int:
    from usecases.reports import formats as out
    from usecases.reports import service
    from usecases.reports.carbon import carbon_report, carbon_rows, csv_rows

    query = service.ReportQuery(
        window, args.cluster, require_complete=args.require_complete, default_cluster=default_cluster
    )
    document = carbon_report(db, query, args.by)
    if args.format == "csv":
        if warned := out.warning(document.coverages):
            print(warned, file=sys.stderr)
        print(out.rows_csv(["cluster", args.by, "grams", "kg_co2e"], list(csv_rows(document.body))).rstrip("\n"))
        return exits.OK
    show(args.format, document, *carbon_rows(document.body))
    return exits.OK
