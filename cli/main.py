"""The ``finops`` command: run the local stack, serve or invoke a function, migrate, list runs.

Its commands and exit statuses are its ``--help``: ``DESCRIPTION`` and each subcommand's help, those
of ``cli.ops``, ``cli.reports`` and ``cli.ledger`` included.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import httpx

from cli import arguments, exits
from cli.doctor import add_commands as add_doctor_commands
from cli.ledger import add_commands as add_ledger_commands
from cli.ops import add_commands as add_ops_commands
from cli.ops import bearer_post, ping_token
from cli.reports import add_commands as add_report_commands
from finops.errors import FinOpsError, IncompleteData, InvalidInput, PermanentError, TemporaryError
from infra.logs import configure_cli, one_line
from infra.serving import TARGETS, functions_framework_command
from infra.settings import ConfigError
from usecases.reports.text_table import render


def cmd_migrate(_: argparse.Namespace) -> int:
    from cli.database import migrate

    print(migrate())
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    from cli.database import open_database

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
    command = functions_framework_command(args.target, args.port)
    os.execv(command[0], command)  # noqa: S606 - replaces this process, as the image's CMD does


def cmd_invoke(args: argparse.Namespace) -> int:
    token = ping_token(args.target)
    try:
        body = json.loads(args.data) if args.data else {}
    except ValueError as exc:
        raise InvalidInput(f"--data is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidInput("--data must be a JSON object")
    if args.scheduled_time:
        body["scheduledTime"] = args.scheduled_time.isoformat()
    answer = bearer_post(token)(args.url, body, 600.0)
    print(json.dumps(answer.body, indent=2))
    return exits.OK if answer.ok else exits.UNAVAILABLE


def cmd_run(options: list[str]) -> int:
    """The local demo stack (``sandbox.run``): part of a checkout, never of the wheel or image, so
    this process becomes ``python -m sandbox.run`` in the checkout this CLI was installed from (the
    same process: a signal or a kill reaches the demo, and the stack it starts dies with it)."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "sandbox" / "run.py").is_file():
        raise ConfigError("finops run is the local demo: it needs a checkout of the repository (make run)")
    os.chdir(root)
    os.execv(sys.executable, [sys.executable, "-m", "sandbox.run", *options])  # noqa: S606 - our own module


DESCRIPTION = """\
Kubernetes cost allocation, showback and chargeback: run the local demo, serve or ping a
function, migrate the database, load history, check the ledger, and make reports and exports.

The commands that touch the database read DATABASE_URL (and the functions' DATABASE_* settings)
and, but for migrate, first check that it holds this image's schema ("run `finops migrate`").
Every failure is one line on stderr, "finops: <what failed>", redacted (no password, token or URL
userinfo), never a traceback (FINOPS_DEBUG=1 shows it); a policy file's errors are one line each.

Exit status, the same for every command: 0 success; 1 internal error, a bug (report it with
FINOPS_DEBUG=1's traceback); 2 usage or bad input: an argument, the configuration, a policy or
input file, a database without this image's schema; 3 a dependency is unavailable: PostgreSQL,
OpenCost, Prometheus, Kubernetes, S3, a function; 4 the data cannot give the answer: a refused or
incomplete period, hours left unloaded, a failed check (verify); 130 interrupted (Ctrl-C, SIGTERM).

Run "finops COMMAND --help" for the options of a command."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (their line breaks and examples kept); help lines wrapped."""


def plain_help(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` and every subcommand's parser formatted by ``HelpFormatter``, a subcommand
    without a description described by its help line (argparse passes neither down)."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                sub = action.choices[choice.dest]
                if sub.description is None and choice.help:
                    sub.description = f"{choice.help[0].upper()}{choice.help[1:]}."
                plain_help(sub)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = arguments.Parser(prog="finops", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="one of:")
    # `finops run ...` is handed to the demo whole (main), which parses its own options
    sub.add_parser("run", help="the local demo stack and the main job on embedded defaults (finops run --help)")
    serve = sub.add_parser("serve", help="serve one function under functions-framework, as the image does")
    serve.add_argument("target", choices=TARGETS, help="the function to serve")
    serve.add_argument(
        "--port",
        type=arguments.port,
        default=int(os.environ.get("PORT", "8080")),
        help="port to listen on (default: PORT, 8080)",
    )
    serve.set_defaults(func=cmd_serve)
    invoke = sub.add_parser("invoke", help="ping a function once (bearer token from PING_TOKEN) and print its answer")
    invoke.add_argument("target", choices=TARGETS, help="the function pinged (names the ping in messages)")
    invoke.add_argument("--url", required=True, type=arguments.http_url, help="the function's URL")
    invoke.add_argument("--data", type=arguments.text, help="JSON object sent as the body (default: {})")
    invoke.add_argument(
        "--scheduled-time",
        type=arguments.moment,
        help="RFC 3339 time pinning the run's hour (the body's scheduledTime)",
    )
    invoke.set_defaults(func=cmd_invoke)
    migrate = sub.add_parser("migrate", help="apply pending migrations to DATABASE_URL")
    migrate.set_defaults(func=cmd_migrate)
    runs = sub.add_parser("runs", help="recent run outcomes from job_runs, newest first")
    runs.add_argument("--function", choices=TARGETS, help="only this function's runs (default: all)")
    runs.add_argument("--limit", type=arguments.count(10_000), default=20, help="at most this many runs (default: 20)")
    runs.set_defaults(func=cmd_runs)

    def render_costjobs(args: argparse.Namespace) -> int:
        from cli.costjob_cronjobs import render_files

        print(render_files(args.files), end="")
        return 0

    render_cmd = sub.add_parser("render", help="render manifests")
    render_kinds = render_cmd.add_subparsers(dest="render", required=True, metavar="KIND", help="one of:")
    costjob = render_kinds.add_parser("costjob", help="the operator's CostJobs as CronJobs pinging the functions")
    costjob.add_argument("files", nargs="+", type=arguments.text, help="YAML files holding CostJob manifests")
    costjob.set_defaults(func=render_costjobs)
    add_report_commands(sub)
    add_ledger_commands(sub)
    add_ops_commands(sub)
    add_doctor_commands(sub)
    return plain_help(parser)


def _fail(message: str, code: int) -> int:
    """``message`` on stderr, one ``finops: ...`` line per line it has (a policy's every error)."""
    for line in message.splitlines() or [""]:
        if line.strip():
            print(f"finops: {one_line(line)}", file=sys.stderr)
    return code


def exit_status(exc: BaseException) -> int:
    """The exit status of a failure, by the rule of ``DESCRIPTION`` (``cli.exits``)."""
    from infra.postgres.migrations import SchemaBehind

    if isinstance(exc, IncompleteData):
        return exits.NO_ANSWER
    if isinstance(exc, (PermanentError, SchemaBehind)):  # SchemaBehind: the operator's setup, not an outage
        return exits.USAGE
    if isinstance(exc, (TemporaryError, httpx.HTTPError)):
        return exits.UNAVAILABLE
    if isinstance(exc, OSError):  # a file the user named, else the network
        return exits.USAGE if exc.filename else exits.UNAVAILABLE
    return exits.BUG


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure is one redacted line on stderr and an exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        try:
            return cmd_run(argv[1:])
        except PermanentError as exc:
            return _fail(exc.message, exits.USAGE)
    args = build_parser().parse_args(argv)  # usage errors: argparse's own message, exit 2
    configure_cli()
    if os.environ.get("FINOPS_DEBUG"):
        return int(args.func(args))
    try:
        return int(args.func(args))
    except FinOpsError as exc:
        return _fail(exc.message, exit_status(exc))
    except httpx.HTTPError as exc:
        where = f" {exc.request.url}" if _has_request(exc) else ""
        return _fail(f"request to{where} failed: {type(exc).__name__}: {exc}", exits.UNAVAILABLE)
    except OSError as exc:
        message = f"{exc.filename}: {exc.strerror}" if exc.filename else f"{type(exc).__name__}: {exc}"
        return _fail(message, exit_status(exc))
    except KeyboardInterrupt:
        return _fail("interrupted", exits.INTERRUPTED)
    except Exception as exc:  # a bug: still one line; FINOPS_DEBUG=1 shows the traceback
        return _fail(f"internal error: {type(exc).__name__}: {exc} (FINOPS_DEBUG=1 shows the traceback)", exits.BUG)


def _has_request(exc: httpx.HTTPError) -> bool:
    try:
        exc.request  # noqa: B018 - raises RuntimeError when the error carries no request
    except RuntimeError:
        return False
    return True
