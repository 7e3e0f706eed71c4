"""The ``finops`` command: run the local stack, serve or invoke a function, migrate, list runs.

finops run [--once] [--hours 24] [--source opencost|prometheus]
                                     the main job on embedded defaults (``make run``)
finops serve TARGET [--port 8080]    one function under functions-framework, as in production
finops invoke TARGET --url URL       ping a function the way its CronJob does
finops migrate                       apply pending migrations to DATABASE_URL
finops install / finops ping         what the install Job and the hourly CronJobs run (cli_ops)
finops runs [--function F] [--limit N]   recent run outcomes, newest first
finops collect --from D --to D       load allocation history hour by hour (resumable)
finops verify [--cluster C]          check that the hour ledger, rows, rollups and app days agree
finops report ... / finops export ...   exit 1 when the period is refused (unpriced hours, or
                                     incomplete under --require-complete), 2 for bad input or policy
finops policy check FILE             validate a chargeback policy (no database needed)

Every failure is one line on stderr, ``finops: <what failed>``, redacted (no password, token or
URL userinfo), never a traceback (``FINOPS_DEBUG=1`` shows it): exit 2 for bad usage, input,
configuration or policy; 1 when the work failed (a dependency unavailable, a refused period, a
failed check).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx

from finops.errors import FinOpsError, IncompleteData, InvalidInput, PermanentError
from finops.hours import truncate_to_hour
from finops.money import format_amount
from functions.cli_ledger import add_commands as add_ledger_commands
from functions.cli_ops import add_commands as add_ops_commands
from functions.cli_reports import add_commands as add_report_commands
from functions.targets import TARGETS
from functions.text_table import render
from infra.logs import configure_cli, one_line, redact
from infra.settings import ConfigError


def cmd_migrate(_: argparse.Namespace) -> int:
    from functions.cli_database import open_database
    from infra.postgres import apply_migrations

    db = open_database()  # as the install Job passes it (DATABASE_POOL=null behind PgBouncer)
    applied = apply_migrations(db)
    db.close()
    print(f"applied migrations: {', '.join(f'{v:03d}' for v in applied)}" if applied else "schema is up to date")
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from functions.cli_database import open_database

    db = open_database()
    rows = db.fetch_all("recent_job_runs", function=args.function, limit=args.limit)
    db.close()
    table = [
        (
            r["started_at"].strftime("%Y-%m-%d %H:%M:%S"),
            r["function"],
            r["trigger"],
            r["outcome"],
            r["http_status"],
            r["duration_ms"],
            ", ".join(f"{k}={v}" for k, v in (r["counts"] or {}).items()),
            one_line(r["error"] or "")[:80],  # rows written before redaction existed, too
        )
        for r in rows
    ]
    print(
        render(
            ["started (UTC)", "function", "trigger", "outcome", "http", "ms", "counts", "error"], table, right=(4, 5)
        )
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from functions.localstack import functions_framework_command

    command = functions_framework_command(args.target, args.port)
    os.execv(command[0], command)  # noqa: S606 - replaces this process, as the image's CMD does


def ping(url: str, token: str, body: dict[str, Any], timeout: float = 600.0) -> tuple[int, dict[str, Any]]:
    response = httpx.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
    try:
        payload = response.json()
    except ValueError:
        payload = {"body": response.text}
    return response.status_code, payload


def cmd_invoke(args: argparse.Namespace) -> int:
    token = os.environ.get("PING_TOKEN", "").strip()
    if not token:
        raise ConfigError(f"PING_TOKEN is not set: {args.target} requires it in the Authorization header; nothing sent")
    try:
        body = json.loads(args.data) if args.data else {}
    except ValueError as exc:
        raise InvalidInput(f"--data is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidInput("--data must be a JSON object")
    if args.scheduled_time:
        body["scheduledTime"] = args.scheduled_time
    status, payload = ping(args.url, token, body)
    print(json.dumps(payload, indent=2))
    return 0 if status < 300 else 1


def _shown_dsn(dsn: str) -> str:
    """The DSN as printed: as is when it holds no password (the embedded server's, to copy),
    else redacted (a ``DATABASE_URL`` the user set)."""
    try:
        password = urlsplit(dsn).password
    except ValueError:
        password = None
    return redact(dsn) if password or "password" in dsn.lower() else dsn


def print_cost_table(database_url: str, cluster: str, start: datetime, end: datetime) -> None:
    from finops.allocations import DEFAULT_AGGREGATION
    from infra.postgres import connect

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


def cmd_run(args: argparse.Namespace) -> int:
    from functions.localdemo import HISTORY_DAYS, cost_api_env, demo_bill, load_history, measure_demo_apps, ui_host
    from functions.localstack import local_stack, serve_function

    with local_stack(source=args.source, hours=args.hours) as stack:
        import contextlib

        with contextlib.ExitStack() as functions:
            for target in sorted(TARGETS, key=lambda t: t != "on_sync"):  # on_sync first: others re-drive to it
                redrive = {"ON_SYNC_URL": stack.function_urls["on_sync"]} if target != "on_sync" else {}
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
            now = datetime.now(UTC)
            first = truncate_to_hour(now) - timedelta(hours=args.hours - 1)
            url = stack.function_urls["collect_allocations"]
            failures = 0
            if args.source == "opencost":  # history for the UI's 30-day chart and the anomaly baseline
                print(f"\nLoading the {HISTORY_DAYS} days before them from OpenCost (a history load: finops collect):")
                print(load_history(stack, first))
            print(f"\nPinging collect_allocations for the last {args.hours} scheduled hours, as the CronJob would:")
            for n in range(args.hours):
                scheduled = first + timedelta(hours=n)
                status, payload = ping(url, stack.ping_token, {"scheduledTime": scheduled.isoformat()})
                failures += status >= 300
                print(
                    f"  {scheduled:%Y-%m-%dT%H:%MZ}  HTTP {status}  {payload.get('outcome')}  "
                    f"rows={payload.get('rows_written', '-')}  {payload.get('error') or ''}".rstrip()
                )
            print_cost_table(stack.database_url, stack.cluster, first, truncate_to_hour(now) + timedelta(hours=1))
            print("\nMeasuring the demo applications (install backfill, two syncs each, daily history) for the UI:")
            print("\n".join(measure_demo_apps(stack, stack.ping_token)))
            if args.source == "opencost":  # the loaded days, billed by a generated cloud bill
                print("\nReconciling the loaded days to a generated cloud bill (finops import cloud, --basis billed):")
                print("\n".join(demo_bill(stack, first)))
            if ui_url:
                print(f"\nArgo CD UI extension: {ui_url} (Cost tab: ?app=argocd/web; cluster view: ?view=finops)")
            if failures:
                print(f"\n{failures} ping(s) failed; see {stack.log_dir}", file=sys.stderr)
            if args.once:
                return 1 if failures else 0
            print(
                "\nServing until interrupted (Ctrl-C). Try: "
                f"PING_TOKEN={stack.ping_token} DATABASE_URL='{_shown_dsn(stack.database_url)}' finops runs"
            )
            try:
                while True:
                    import time

                    time.sleep(3600)
            except KeyboardInterrupt:
                print("\nstopping")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="finops", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the local stack and the main job on embedded defaults")
    run.add_argument("--once", action="store_true", help="exit after printing the table")
    run.add_argument("--hours", type=int, default=24, help="scheduled hours to ping (default 24)")
    run.add_argument(
        "--source",
        choices=("opencost", "prometheus"),
        default="opencost",
        help="collect_allocations' source: the sandbox OpenCost, or Debian's Prometheus over generated series",
    )
    run.set_defaults(func=cmd_run)
    serve = sub.add_parser("serve", help="serve one function under functions-framework")
    serve.add_argument("target", choices=TARGETS)
    serve.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8080")))
    serve.set_defaults(func=cmd_serve)
    invoke = sub.add_parser("invoke", help="ping a function (bearer token from PING_TOKEN)")
    invoke.add_argument("target", choices=TARGETS)
    invoke.add_argument("--url", required=True, help="the function's URL")
    invoke.add_argument("--data", help="JSON body")
    invoke.add_argument("--scheduled-time", help="RFC 3339 time pinning the run's hour")
    invoke.set_defaults(func=cmd_invoke)
    migrate = sub.add_parser("migrate", help="apply pending migrations to DATABASE_URL")
    migrate.set_defaults(func=cmd_migrate)
    runs = sub.add_parser("runs", help="recent run outcomes from job_runs, newest first")
    runs.add_argument("--function", choices=TARGETS)
    runs.add_argument("--limit", type=int, default=20)
    runs.set_defaults(func=cmd_runs)

    def render_costjobs(args: argparse.Namespace) -> int:
        from functions.costjob_cronjobs import render_files

        print(render_files(args.files), end="")
        return 0

    render_cmd = sub.add_parser("render", help="render manifests")
    render_kinds = render_cmd.add_subparsers(dest="render", required=True)
    costjob = render_kinds.add_parser("costjob", help="the operator's CostJobs as CronJobs pinging the functions")
    costjob.add_argument("files", nargs="+", help="YAML files holding CostJob manifests")
    costjob.set_defaults(func=render_costjobs)
    add_report_commands(sub)
    add_ledger_commands(sub)
    add_ops_commands(sub)
    return parser


def _fail(message: str, code: int) -> int:
    print(f"finops: {one_line(message)}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure is one redacted line on stderr and an exit status."""
    args = build_parser().parse_args(argv)  # usage errors: argparse's own message, exit 2
    configure_cli()
    if os.environ.get("FINOPS_DEBUG"):
        return int(args.func(args))
    try:
        return int(args.func(args))
    except IncompleteData as exc:  # the data cannot make the report: 1, like a failed check
        return _fail(exc.message, 1)
    except PermanentError as exc:  # bad input, configuration or policy
        return _fail(exc.message, 2)
    except FinOpsError as exc:  # a dependency is unavailable: the work failed
        return _fail(exc.message, 1)
    except httpx.HTTPError as exc:
        where = f" {exc.request.url}" if _has_request(exc) else ""
        return _fail(f"request to{where} failed: {type(exc).__name__}: {exc}", 1)
    except OSError as exc:
        return _fail(f"{exc.filename}: {exc.strerror}" if exc.filename else f"{type(exc).__name__}: {exc}", 1)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except SystemExit as exc:  # a command's own "finops: ..." exit
        if isinstance(exc.code, str):
            return _fail(exc.code.removeprefix("finops: "), 1)
        raise
    except Exception as exc:  # a bug: still one line; FINOPS_DEBUG=1 shows the traceback
        return _fail(f"internal error: {type(exc).__name__}: {exc} (FINOPS_DEBUG=1 shows the traceback)", 1)


def _has_request(exc: httpx.HTTPError) -> bool:
    try:
        exc.request  # noqa: B018 - raises RuntimeError when the error carries no request
    except RuntimeError:
        return False
    return True
