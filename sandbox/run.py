"""The local demo behind ``make run`` (``finops run``), on ``sandbox.localstack``: ``DESCRIPTION``.

Run from the checkout: ``python -m sandbox.run [--once] [--hours 24] [--source opencost|prometheus]
[--pricing pricebook|opencost]``.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from types import FrameType
from urllib.parse import urlsplit

from finops.allocations import DEFAULT_AGGREGATION
from finops.hours import truncate_to_hour
from finops.money import format_amount
from infra.logs import redact
from infra.postgres import connect
from infra.serving import TARGETS
from sandbox.localdemo import HISTORY_DAYS, cost_api_env, demo_bill, load_history, measure_demo_apps, post, ui_host
from sandbox.localstack import local_stack, serve_function
from usecases.reports.text_table import render


def _shown_dsn(dsn: str) -> str:
    """The DSN as printed: as is when it holds no password (the embedded server's, to copy),
    else redacted (a ``DATABASE_URL`` the user set)."""
    try:
        password = urlsplit(dsn).password
    except ValueError:
        password = None
    return redact(dsn) if password or "password" in dsn.lower() else dsn


def print_cost_table(database_url: str, cluster: str, start: datetime, end: datetime) -> None:
    db = connect(database_url)
    rows = db.fetch_all("cost_by_owner", cluster=cluster, aggregation=DEFAULT_AGGREGATION, start=start, end=end)
    db.close()
    total = sum(r["total_micros"] for r in rows)
    currency = next((r["currency"] for r in rows if r["currency"]), None) or "(unpriced)"
    table = [
        (
            r["team"],
            r["namespace"],
            r["hours"],
            format_amount(r["cpu_gpu_micros"]),
            format_amount(r["ram_micros"]),
            format_amount(r["other_micros"]),
            format_amount(r["total_micros"]),
        )
        for r in rows
    ]
    table.append(("TOTAL", "", "", "", "", "", format_amount(total)))
    print(
        f"\nCost per team and namespace, cluster {cluster}, {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC "
        f"({currency})"
    )
    print(render(["team", "namespace", "hours", "cpu+gpu", "ram", "pv+lb+net", "total"], table, right=(2, 3, 4, 5, 6)))
    unlabelled = sorted({r["namespace"] for r in rows if r["team"] == "__unallocated__"})
    print(
        f"\n(idle) is node capacity no namespace requested or used. "
        f"Unallocated namespaces (no owner label): {', '.join(unlabelled) or 'none'}"
    )


def run(args: argparse.Namespace) -> int:
    last = truncate_to_hour(datetime.now(UTC))  # pinned once: a run across an hour pings the same hours
    first = last - timedelta(hours=args.hours - 1)
    with (
        local_stack(first, args.hours, source=args.source, pricing=args.pricing) as stack,
        contextlib.ExitStack() as functions,
    ):
        for target in sorted(TARGETS, key=lambda t: t != "on_sync"):  # on_sync first: others re-drive to it
            # The sandbox OpenCost has a synced pod's figures at once: on_sync measures without
            # MEASURE_SETTLE_SECONDS' wait for new metrics (5 s a sync in a cluster).
            redrive = {"ON_SYNC_URL": stack.function_urls["on_sync"]} if target != "on_sync" else {}
            if target == "on_sync":
                redrive["MEASURE_SETTLE_SECONDS"] = "0"
            if target == "cost_api":  # the UI extension's chargeback (demo policy), CI's estimates
                redrive.update(cost_api_env(stack))
            functions.enter_context(serve_function(stack, target, **redrive))
        ui_url = functions.enter_context(ui_host(stack))
        print("Local stack is up:")
        print(f"  PostgreSQL           {_shown_dsn(stack.database_url)}")
        print(f"  OpenCost (sandbox)   {stack.opencost_url}")
        if stack.prometheus_url:
            print(f"  Prometheus (Debian)  {stack.prometheus_url}  (generated series; collect_allocations' source)")
        print(f"  Kubernetes (sandbox) {stack.kube_url}")
        for target, url in stack.function_urls.items():
            print(f"  {target:<20} {url}")
        print(f"  function logs        {stack.log_dir}")
        if ui_url:
            print(f"  Argo CD UI extension: {ui_url}")
        failures = 0
        if args.source == "opencost":  # history for the UI's 30-day chart and the anomaly baseline
            print(f"\nLoading the {HISTORY_DAYS} days before them from OpenCost (a history load: finops collect):")
            print(load_history(stack, first))
        print(f"\nPinging collect_allocations for the last {args.hours} scheduled hours, as the CronJob would:")
        for n in range(args.hours):
            scheduled = first + timedelta(hours=n)
            status, payload = post(stack, "collect_allocations", {"scheduledTime": scheduled.isoformat()})
            failures += status >= 300
            print(
                f"  {scheduled:%Y-%m-%dT%H:%MZ}  HTTP {status}  {payload.get('outcome')}  "
                f"rows={payload.get('rows_written', '-')}  {payload.get('error') or ''}".rstrip()
            )
        print_cost_table(stack.database_url, stack.cluster, first, last + timedelta(hours=1))
        print("\nMeasuring the demo applications (install backfill, two syncs each, daily history) for the UI:")
        print("\n".join(measure_demo_apps(stack, last)))
        if args.source == "opencost":  # the loaded days, billed by a generated cloud bill
            print("\nReconciling the loaded days to a generated cloud bill (finops import cloud, --basis billed):")
            print("\n".join(demo_bill(stack, first)))
        if ui_url:
            print(f"\nArgo CD UI extension: {ui_url} (Cost tab: ?app=argocd/web; cluster view: ?view=finops)")
        if failures:
            print(f"\n{failures} ping(s) failed; see {stack.log_dir}", file=sys.stderr)
        if args.once:
            return 3 if failures else 0  # a function failed: a dependency, by the CLI rule
        try:  # from the announcement on, a signal is the demo's normal end, however soon it comes
            print(
                "\nServing until interrupted (Ctrl-C). Try: "
                f"PING_TOKEN={stack.ping_token} DATABASE_URL='{_shown_dsn(stack.database_url)}' finops runs"
            )
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("\nstopping")
    return 0


DESCRIPTION = """\
The local demo (make run): PostgreSQL (DATABASE_URL, else an embedded server), a sandbox OpenCost
and Kubernetes API, every function served under functions-framework, the last hours collected as
the CronJob would, the demo applications measured, history loaded and a cloud bill reconciled;
it prints every URL (the Argo CD UI extension's when it can be served) and serves until Ctrl-C
or SIGTERM, which stop it cleanly (exit 0; 130 when it is interrupted before it serves). It needs a
checkout of the repository and leaves nothing in /tmp."""

EXAMPLES = """\
examples:
  finops run
      the demo; serves until Ctrl-C
  finops run --once
      the same steps, then stop instead of serving (exit 3 if a ping failed)
  finops run --hours 6 --source prometheus
      six hours computed from Prometheus series instead of OpenCost (needs prometheus installed)
  finops run --once --pricing opencost
      no PriceBook in the cluster: priced with OpenCost's own (list) prices, declared in USD"""


MAX_HOURS = 168  # a week of pings: the demo's OpenCost holds more, a longer demo shows nothing new


def _hours(text: str) -> int:
    """``--hours``: a whole number of hours from 1 to ``MAX_HOURS``, else argparse's usage error."""
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_HOURS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {MAX_HOURS}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="finops run",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--once", action="store_true", help="stop once the steps are done instead of serving")
    parser.add_argument(
        "--hours", type=_hours, default=24, help=f"scheduled hours to ping, 1 to {MAX_HOURS} (default: 24)"
    )
    parser.add_argument(
        "--source",
        choices=("opencost", "prometheus"),
        default="opencost",
        help="collect_allocations' ALLOCATION_SOURCE (default: opencost)",
    )
    parser.add_argument(
        "--pricing",
        choices=("pricebook", "opencost"),
        default="pricebook",
        help="PRICING_SOURCE: the demo's active PriceBook, or no PriceBook and OpenCost's own prices "
        "(default: pricebook)",
    )
    return parser


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM (``docker stop``, ``kill``, a supervisor) stops the demo as Ctrl-C does: as a
    ``KeyboardInterrupt``, so every context of the stack exits and its processes are stopped. A
    second signal while it stops is ignored: the cleanup is bounded (``sandbox.processes.stop``)
    and must not itself be cut short, leaving servers behind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    """The demo; Ctrl-C or SIGTERM while it serves is its normal end (exit 0), before that an
    interruption (exit 130); either way the stack is stopped and nothing is left behind."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.pricing == "opencost" and args.source == "prometheus":  # PRICING_SOURCE's own rule
        parser.error("--pricing opencost needs --source opencost: Prometheus has no prices of its own")
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, _interrupt)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("\ninterrupted; the stack is stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
