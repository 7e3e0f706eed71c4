"""``finops install`` and ``finops ping``: what the install Job and the hourly CronJobs run
(knative/install-job.yaml, knative/cronjobs.yaml), as tested commands instead of shell in YAML.

What each does is its ``--help``: ``INSTALL_DESCRIPTION``, ``PING_DESCRIPTION`` and the options'
help, which name the environment variable each option falls back to and its default. A missing or
invalid setting is a one-line error naming the variable (exit 2). A ping answered with work
``remaining`` (left by the function's time budget) is sent again with the same body.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
from pydantic import ValidationError

from cli import arguments
from finops.errors import InvalidInput, TemporaryError
from finops.hours import truncate_to_hour
from infra.logs import one_line, redact, register_secret
from infra.settings import ConfigError

# Not routable yet (Knative answers 404 until its route is ready), busy, or a replica restarting.
RETRYABLE = frozenset({404, 429, 502, 503, 504})
# The variables each command reads (tests/deploy checks the manifests pass only these).
INSTALL_ENV = frozenset(
    {"BACKFILL_URL", "PING_TOKEN", "DATABASE_URL", "REQUEST_TIMEOUT_SECONDS", "MAX_INVOCATIONS", "RETRY_SECONDS"}
)
PING_ENV = frozenset({"FUNCTION_URL", "PING_TOKEN", "CRONJOB", "JOB_NAME", "MAX_TIME", "MAX_PINGS", "COST_JOB"})
_DIGITS = re.compile(r"[0-9]+")


class CallFailed(TemporaryError):
    """The function refused the call or never finished its work."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: dict[str, Any]
    headers: Mapping[str, str]

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def error_line(self) -> str:
        """The answer's own account of what failed, on one redacted line."""
        for key in ("error", "reason", "message", "body"):
            if self.body.get(key):
                return one_line(str(self.body[key]))[:300]
        return one_line(json.dumps(self.body))[:300]


Post = Callable[[str, dict[str, Any], float], Answer]
Sleep = Callable[[float], None]
Out = Callable[[str], None]


def bearer_post(token: str) -> Post:
    """POST a JSON body with ``Authorization: Bearer <token>``; the answer's JSON object (else its
    text as ``{"body": ...}``)."""

    def post(url: str, body: dict[str, Any], timeout: float) -> Answer:
        response = httpx.post(url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            payload = {"body": response.text[:500]}
        return Answer(response.status_code, payload, response.headers)

    return post


def _print(line: str) -> None:
    print(redact(line), flush=True)


# ---- settings: a flag, else the environment variable, else the default -------------------------

T = TypeVar("T", int, float)


def _number(flag: T | None, variable: str, default: T, kind: type[T], *, minimum: T) -> T:
    if flag is not None:
        value, source = flag, f"--{variable.lower().replace('_', '-')}"
    else:
        text = os.environ.get(variable, "").strip()
        if not text:
            return default
        source = variable
        try:
            value = kind(text)
        except ValueError:
            raise ConfigError(f"{variable} must be a {'whole ' if kind is int else ''}number, not {text!r}") from None
    if not value >= minimum or value != value:  # NaN included
        raise ConfigError(f"{source} must be at least {minimum}, not {value}")
    return value


def _url(flag: str | None, variable: str) -> str:
    url = (flag or os.environ.get(variable, "")).strip()
    if not url:
        raise ConfigError(f"{variable} is not set (or --url): the function's URL; nothing sent")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{variable} must be an http:// or https:// URL, not {redact(url)!r}")
    return url


def ping_token(what: str) -> str:
    token = os.environ.get("PING_TOKEN", "").strip()
    if not token:
        raise ConfigError(f"PING_TOKEN is not set: {what} requires it in the Authorization header; nothing sent")
    register_secret(token)
    return token


def _wait(answer: Answer, default: float) -> float:
    """Seconds to wait before the next call: the answer's ``retry_after_seconds`` (a 2xx answer),
    else its ``Retry-After`` header (seconds), else ``default``."""
    for value in (answer.body.get("retry_after_seconds") if answer.ok else None, answer.headers.get("Retry-After")):
        try:
            seconds = float(value) if value is not None else None
        except (TypeError, ValueError):  # an HTTP date or garbage: the default
            seconds = None
        if seconds is not None and seconds == seconds:
            return min(max(seconds, 0.0), 3600.0)
    return default


# ---- finops install ------------------------------------------------------------------------------


def call_backfill(
    post: Post, *, url: str, timeout: float, max_invocations: int, retry_seconds: float, sleep: Sleep, out: Out
) -> None:
    """Call backfill until it answers ``"remaining": 0``; raises ``CallFailed`` when it refuses
    the call or still has work after ``max_invocations`` calls."""
    for attempt in range(1, max_invocations + 1):
        wait = retry_seconds
        try:
            answer = post(url, {"trigger": "install"}, timeout)
        except httpx.HTTPError as exc:
            out(f"backfill #{attempt}: {url} unreachable ({type(exc).__name__}: {exc})")
        else:
            out(f"backfill #{attempt}: HTTP {answer.status} {json.dumps(answer.body)}")
            if answer.ok and answer.body.get("remaining") == 0:
                return
            if not answer.ok and answer.status not in RETRYABLE:
                raise CallFailed(f"backfill refused the call: HTTP {answer.status}: {answer.error_line()}")
            wait = _wait(answer, retry_seconds)
        if attempt < max_invocations:
            sleep(wait)
    raise CallFailed(f"backfill still had work after {max_invocations} invocation(s); giving up")


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def cmd_install(args: argparse.Namespace) -> int:
    url = _url(args.url, "BACKFILL_URL")
    token = ping_token("backfill")
    timeout = _number(args.request_timeout_seconds, "REQUEST_TIMEOUT_SECONDS", 350.0, float, minimum=1.0)
    invocations = _number(args.max_invocations, "MAX_INVOCATIONS", 100, int, minimum=1)
    retry = _number(args.retry_seconds, "RETRY_SECONDS", 10.0, float, minimum=0.0)
    if not args.skip_migrations:
        from cli.database import migrate

        _print(migrate())
    call_backfill(
        bearer_post(token),
        url=url,
        timeout=timeout,
        max_invocations=invocations,
        retry_seconds=retry,
        sleep=_sleep,
        out=_print,
    )
    _print("backfill: nothing remains")
    return 0


# ---- finops ping ---------------------------------------------------------------------------------


def scheduled_time(job_name: str, cronjob: str, now: datetime) -> tuple[datetime, str | None]:
    """The instant the CronJob scheduled this Job, from the Job's name ``<cronjob>-<minutes since
    the epoch>``; for a Job named otherwise, the current hour and a note saying so."""
    if job_name:
        if not cronjob:
            raise ConfigError("CRONJOB is not set: it is needed to read the scheduled time from JOB_NAME")
        minutes = job_name.removeprefix(f"{cronjob}-")
        if job_name.startswith(f"{cronjob}-") and _DIGITS.fullmatch(minutes):
            try:
                return datetime.fromtimestamp(int(minutes) * 60, UTC), None
            except (OverflowError, OSError, ValueError):
                raise InvalidInput(f"JOB_NAME {job_name!r}: {minutes} minutes since the epoch is not a time") from None
    hour = truncate_to_hour(now)
    named = f"job {job_name}" if job_name else "no JOB_NAME:"
    by = f" was not scheduled by {cronjob}:" if job_name else ""
    return hour, f"{named}{by} pinning the current hour {_rfc3339(hour)}"


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ping_body(scheduled: datetime, cost_job: str) -> dict[str, Any]:
    body: dict[str, Any] = {"scheduledTime": _rfc3339(scheduled), "trigger": "cron"}
    if cost_job:
        from usecases.costjob_status import CostJobRef

        namespace, _, name = cost_job.partition("/")
        try:
            ref = CostJobRef(namespace=namespace, name=name)
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ConfigError(f"COST_JOB must be namespace/name, not {cost_job!r}: {problem}") from None
        body.update(trigger="costjob", costJob={"namespace": ref.namespace, "name": ref.name})
    return body


def ping_until_done(
    post: Post, *, url: str, body: dict[str, Any], timeout: float, max_pings: int, sleep: Sleep, out: Out
) -> None:
    """POST ``body`` until the answer leaves nothing ``remaining`` (at most ``max_pings`` times);
    raises ``CallFailed`` on a non-2xx answer."""
    remaining = 0
    for n in range(1, max_pings + 1):
        answer = post(url, body, timeout)
        out(f"ping #{n}: HTTP {answer.status} {json.dumps(answer.body)}")
        if not answer.ok:
            raise CallFailed(f"{url} answered HTTP {answer.status}: {answer.error_line()}")
        remaining = answer.body.get("remaining") or 0
        if not isinstance(remaining, int) or isinstance(remaining, bool) or remaining <= 0:
            return
        if n < max_pings:
            out(f"{remaining} remaining: pinging again")
            sleep(_wait(answer, 0.0))
    out(f"{remaining} still remaining after {max_pings} ping(s): the next scheduled ping continues")


def cmd_ping(args: argparse.Namespace) -> int:
    url = _url(args.url, "FUNCTION_URL")
    token = ping_token(url)
    timeout = _number(args.max_time, "MAX_TIME", 650.0, float, minimum=1.0)
    max_pings = _number(args.max_pings, "MAX_PINGS", 4, int, minimum=1)
    job_name = (args.job_name if args.job_name is not None else os.environ.get("JOB_NAME", "")).strip()
    cronjob = (args.cronjob if args.cronjob is not None else os.environ.get("CRONJOB", "")).strip()
    cost_job = (args.cost_job if args.cost_job is not None else os.environ.get("COST_JOB", "")).strip()
    scheduled, note = scheduled_time(job_name, cronjob, datetime.now(UTC))
    body = ping_body(scheduled, cost_job)
    if note:
        _print(note)
    _print(f"POST {url} {json.dumps(body)}")
    ping_until_done(
        bearer_post(token), url=url, body=body, timeout=timeout, max_pings=max_pings, sleep=_sleep, out=_print
    )
    return 0


INSTALL_DESCRIPTION = """\
What the install Job runs: apply the migrations to DATABASE_URL, then call backfill until it
answers "remaining": 0, retrying while its Service is not routable. Each option falls back to an
environment variable; PING_TOKEN (required) is read from the environment only.

Retried: connection errors and HTTP 404, 429, 502, 503 and 504 (a Knative route not ready, a busy
lock, a replica restarting), after the answer's retry_after_seconds or Retry-After. Any other
non-2xx answer fails at once (exit 3), as does work left after the last invocation."""

PING_DESCRIPTION = """\
What the hourly CronJobs run: POST the scheduled time to a collector and ping again while it
answers "remaining" > 0, at most MAX_PINGS times; what is still left then is the next scheduled
ping's (exit 0). Each option falls back to an environment variable; PING_TOKEN (required) is read
from the environment only and never printed.

The CronJob controller names each Job <cronjob>-<scheduled time in minutes since the epoch>; a Job
named otherwise (kubectl create job --from=cronjob/...), or no JOB_NAME, pins the current hour.
A non-2xx answer or a connection error fails (exit 3, the answer's error on stderr)."""


def add_commands(sub: Any) -> None:
    """Register ``install`` and ``ping`` on the ``finops`` parser's subcommands."""
    install = sub.add_parser(
        "install",
        help="migrate, then call backfill until nothing remains (the install Job)",
        description=INSTALL_DESCRIPTION,
    )
    install.add_argument("--url", type=arguments.http_url, help="backfill's URL (default: BACKFILL_URL)")
    install.add_argument(
        "--request-timeout-seconds",
        type=arguments.seconds(1.0),
        help="per call (default: REQUEST_TIMEOUT_SECONDS, 350)",
    )
    install.add_argument(
        "--max-invocations",
        type=arguments.count(10_000),
        help="at most this many calls (default: MAX_INVOCATIONS, 100)",
    )
    install.add_argument(
        "--retry-seconds",
        type=arguments.seconds(0.0),
        help="wait when an answer names none (default: RETRY_SECONDS, 10)",
    )
    install.add_argument("--skip-migrations", action="store_true", help="only call backfill")
    install.set_defaults(func=cmd_install)
    ping = sub.add_parser(
        "ping",
        help="the hourly ping of a collector (the CronJobs); bearer token from PING_TOKEN",
        description=PING_DESCRIPTION,
    )
    ping.add_argument("--url", type=arguments.http_url, help="the function's URL (default: FUNCTION_URL)")
    ping.add_argument(
        "--job-name",
        type=arguments.text,
        help="the Job's name, <cronjob>-<minutes since the epoch> (default: JOB_NAME)",
    )
    ping.add_argument("--cronjob", type=arguments.text, help="the CronJob's name (default: CRONJOB)")
    ping.add_argument(
        "--cost-job", type=arguments.text, help="namespace/name of the CostJob to record the run on (default: COST_JOB)"
    )
    ping.add_argument(
        "--max-time", type=arguments.seconds(1.0), help="seconds to wait for one answer (default: MAX_TIME, 650)"
    )
    ping.add_argument(
        "--max-pings", type=arguments.count(1000), help="pings while work remains (default: MAX_PINGS, 4)"
    )
    ping.set_defaults(func=cmd_ping)
