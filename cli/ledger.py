"""``finops collect`` (history loads: ``COLLECT_DESCRIPTION``) and ``finops verify`` (the
consistency check: ledger and rows, rollups and rows, applications' recorded days and their rows;
exit 0 when they agree, 4 listing every difference).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from cli import arguments, exits
from cli.ops import CallFailed
from finops.errors import InvalidInput
from finops.hours import Hour
from infra.settings import ConfigError

DATE_HELP = "a UTC date (2026-10-01) or an RFC 3339 time"


class ProgressBar:
    """One line redrawn on a terminal; nothing when stderr is not one (logs stay clean)."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()

    def __call__(self, done: int, total: int, hour: Hour) -> None:
        if self.enabled:
            filled = 30 * done // max(total, 1)
            sys.stderr.write(f"\r[{'#' * filled}{' ' * (30 - filled)}] {done}/{total} hours  {hour}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


def cmd_collect(args: argparse.Namespace) -> int:
    start, end = args.from_, args.to
    if start >= end:
        raise InvalidInput(f"--from {start:%Y-%m-%dT%H:%M:%SZ} is not before --to {end:%Y-%m-%dT%H:%M:%SZ}")
    totals: dict[str, int] = {"hours_written": 0, "hours_skipped": 0, "hours_empty": 0, "hours_lost": 0}
    warnings: list[str] = []
    bar = ProgressBar()
    remaining_after: int | None = None
    try:
        while True:  # each invocation is bounded by the time budget; call again while it progresses
            counts = _collect_once(args, start, end, bar)
            for key in totals:
                if key != "hours_skipped" or remaining_after is None:  # skipped: final before the load
                    totals[key] += int(counts.get(key) or 0)
            warnings = list(counts.get("warnings") or [])
            if not counts["remaining"] or counts["remaining"] == remaining_after:
                remaining_after = counts["remaining"]
                break
            remaining_after = counts["remaining"]
    finally:
        bar.close()
    print(", ".join(f"{key.removeprefix('hours_')}={value}" for key, value in totals.items()))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    complete = not (totals["hours_empty"] or totals["hours_lost"] or remaining_after)
    return exits.OK if complete else exits.NO_ANSWER


def _collect_once(args: argparse.Namespace, start: datetime, end: datetime, bar: ProgressBar) -> dict[str, Any]:
    if args.url:
        token = os.environ.get("PING_TOKEN")
        if not token:
            raise ConfigError("PING_TOKEN is not set (the function requires it in the Authorization header)")
        body = {"from": start.isoformat(), "to": end.isoformat(), "trigger": "history"}
        response = httpx.post(args.url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=600)
        answer: dict[str, Any] = (
            response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        )
        if response.status_code != 200:
            raise CallFailed(f"{args.url} answered {response.status_code}: {answer.get('error', response.text)}")
        return answer
    return _collect_here(start, end, bar)


def _collect_here(start: datetime, end: datetime, bar: ProgressBar) -> dict[str, Any]:
    from infra.clients import database_from, kube_from
    from infra.settings import CollectAllocationsSettings, load
    from usecases.collect_allocations.hourly import allocation_source, options_from
    from usecases.collect_allocations.service import collect_range

    # The CLI is not pinged: the ping token the settings require is not used here.
    settings = load(CollectAllocationsSettings, {"PING_TOKEN": "unused-by-the-cli", **os.environ})
    db = database_from(settings)
    result = collect_range(
        db,
        allocation_source(settings),  # OpenCost, or Prometheus (ALLOCATION_SOURCE)
        kube_from(settings),
        options_from(settings),
        start=start,
        end=end,
        now=datetime.now(UTC),
        run_id=str(uuid.uuid4()),
        progress=bar,
    )
    return {**result.counts(), "warnings": result.warnings}


def cmd_verify(args: argparse.Namespace) -> int:
    from cli.database import open_database, require_known_cluster
    from usecases.verify import verify

    db = open_database()
    try:
        require_known_cluster(db, args.cluster)
        problems = verify(db, args.cluster)
    finally:
        db.close()
    for problem in problems:
        print(problem)
    print(
        f"{len(problems)} problem(s)" if problems else "ledger, rows, rollups and applications' days agree",
        file=sys.stderr,
    )
    return exits.NO_ANSWER if problems else exits.OK


COLLECT_DESCRIPTION = """\
Load every hour of [--from, --to) that is not final, oldest first: in this process, with the
collect_allocations environment (DATABASE_URL, OPENCOST_URL or ALLOCATION_SOURCE=prometheus and
PROMETHEUS_URL, ...), or through a deployed collect_allocations with --url (pinged as its CronJob
does, bearer token from PING_TOKEN). Each invocation is bounded by COLLECT_BUDGET_SECONDS and the
command calls again while hours remain, so it is resumable: run it again after any failure and it
continues. Exit 0 when every hour is final, 4 otherwise (hours empty, lost or left)."""

COLLECT_EXAMPLES = """\
examples:
  finops collect --from 2026-10-01 --to 2026-11-01
      load October in this process
  finops collect --from 2026-10-01T06:00:00Z --to 2026-10-01T12:00:00Z
      six hours, given as RFC 3339 times
  PING_TOKEN=... finops collect --from 2026-10-01 --to 2026-10-08 \\
      --url http://collect-allocations.finops.svc.cluster.local
      a week, loaded by the deployed function"""


def add_commands(sub: Any) -> None:
    collect = sub.add_parser(
        "collect",
        help="load allocation history hour by hour (resumable)",
        description=COLLECT_DESCRIPTION,
        epilog=COLLECT_EXAMPLES,
    )
    collect.add_argument("--from", dest="from_", required=True, type=arguments.moment, help=DATE_HELP)
    collect.add_argument("--to", required=True, type=arguments.moment, help=f"{DATE_HELP} (exclusive)")
    collect.add_argument(
        "--url",
        type=arguments.http_url,
        help="a deployed collect_allocations to ping instead of loading in this process",
    )
    collect.set_defaults(func=cmd_collect)
    check = sub.add_parser("verify", help="check that ledger, rows, rollups and applications' days agree")
    check.add_argument("--cluster", type=arguments.cluster, help="only this cluster")
    check.set_defaults(func=cmd_verify)
