"""``finops report gpus``: GPU-hours, GPU cost and measured use per team, namespace or workload
(``usecases.reports.gpus``); ``--rank`` orders the workloads by what a busy GPU-hour cost them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli import arguments, exits

HELP = "GPU-hours, GPU cost and measured use per team, namespace or workload; idle per GPU model"


def add_parser(kinds: Any, *, cluster_help: str, require_complete: str, formats: tuple[str, ...]) -> None:
    gpus = kinds.add_parser("gpus", help=HELP)
    gpus.add_argument("--month", type=arguments.month, default="last", help="a UTC month, YYYY-MM (default: last)")
    gpus.add_argument(
        "--by",
        choices=("team", "namespace", "workload"),
        default="team",
        help="one line per team (the owner label), namespace or workload (namespace/controller; default: team)",
    )
    gpus.add_argument(
        "--rank",
        action="store_true",
        help="only the measured lines, dearest per busy GPU-hour first (GPU cost over DCGM's measured use)",
    )
    gpus.add_argument("--cluster", type=arguments.cluster, help=cluster_help)
    gpus.add_argument("--require-complete", action="store_true", help=require_complete)
    gpus.add_argument("--format", choices=formats, default="table", help="table, json or csv (default: table)")


def run(args: argparse.Namespace, db: Any, default_cluster: str, show: Any) -> int:
    from usecases.reports import formats as out
    from usecases.reports import service
    from usecases.reports.gpus import csv_rows, gpu_report, gpu_rows, ranking

    query = service.ReportQuery(
        service.month_period(args.month),
        args.cluster,
        require_complete=args.require_complete,
        default_cluster=default_cluster,
    )
    document = gpu_report(db, query, args.by)
    if args.rank:
        document.body["lines"] = ranking(document.body)
    if args.format == "csv":
        if warned := out.warning(document.coverages):
            print(warned, file=sys.stderr)
        headers = ["cluster", args.by, "kind", "gpu_hours", "cost", "currency", "busy_gpu_hours", "per_busy_gpu_hour"]
        print(out.rows_csv(headers, list(csv_rows(document.body))).rstrip("\n"))
        return exits.OK
    show(args.format, document, *gpu_rows(document.body))
    return exits.OK
