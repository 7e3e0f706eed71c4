"""Run outcomes: exactly one ``run_outcome`` log line and one ``job_runs`` row per invocation.

The HTTP status follows the outcome (2xx done, 4xx bad input, 503 retry later), so the CronJob,
Argo CD's retries and ``kn func invoke`` all see what happened. The ``job_runs`` row is how the
history outlives the pod (``finops runs``); when PostgreSQL itself is what failed, the log line
is the only record and says so. The error is stored and logged redacted, on one line
(``infra.logs.one_line``): ``job_runs`` is read by people who do not hold the secrets.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from finops.errors import FinOpsError
from infra.logs import current_run_id, one_line
from infra.postgres.common import Statements

log = logging.getLogger("finops.runs")


@dataclass
class Run:
    """A run in progress; the work sets ``outcome``, ``counts`` and, for partial runs, ``error``."""

    function: str
    cluster: str
    trigger: str = "unknown"
    run_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    outcome: str = "success"
    http_status: int = 200
    counts: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    duration_ms: int = 0
    db: Statements | None = None
    """Where the run is recorded; left None until the caller is authenticated and the database
    is reachable, so unauthenticated noise never fills ``job_runs``."""
    afterwards: list[Callable[[Run], None]] = field(default_factory=list)
    """Called by the edge once the run is finished and answered, whatever its outcome (a
    CostJob's execution record); each must not raise."""
    recorded: bool = False
    """Already in ``job_runs``, stored by the work itself in the statement of its own write (the
    webhook's 202: one round trip for the event and its run, ``record_of``). The run's end then
    only logs, unless the run fails after all: its record is then replaced with the failure."""


@contextmanager
def recorded_run(function: str, cluster: str) -> Iterator[Run]:
    """Run the body as one recorded run. Errors are classified, logged and re-raised."""
    run = Run(function=function, cluster=cluster)
    token = current_run_id.set(run.run_id)
    clock = time.monotonic()
    try:
        yield run
    except FinOpsError as exc:  # classified: 4xx bad input, 429/503 retry later
        run.outcome, run.http_status, run.error = "failed", exc.http_status, exc.message
        run.recorded = False
        raise
    except Exception as exc:
        run.outcome, run.http_status, run.recorded = "failed", 500, False
        run.error = f"internal error: {type(exc).__name__}: {exc}"
        log.exception("run crashed")
        raise
    finally:
        run.duration_ms = int((time.monotonic() - clock) * 1000)
        _finish(run)
        current_run_id.reset(token)


def record_of(run: Run, duration_ms: int | None = None) -> dict[str, Any]:
    """The ``job_runs`` row of ``run`` as it stands, finished now (``duration_ms`` by default: the
    time since it started)."""
    finished_at = datetime.now(UTC)
    if duration_ms is None:
        duration_ms = int((finished_at - run.started_at).total_seconds() * 1000)
    return {
        "run_id": run.run_id,
        "function": run.function,
        "cluster": run.cluster,
        "trigger": run.trigger,
        "started_at": run.started_at,
        "finished_at": finished_at,
        "duration_ms": duration_ms,
        "outcome": run.outcome,
        "http_status": run.http_status,
        "counts": run.counts,
        "error": one_line(run.error) if run.error else None,
    }


def _finish(run: Run) -> None:
    record = record_of(run, run.duration_ms)
    stored = run.db is not None
    if run.db is not None and not run.recorded:
        try:
            run.db.execute("insert_job_run", **record)
        except FinOpsError as exc:
            stored = False
            log.warning("run not recorded in job_runs", extra={"fields": {"error": exc.message}})
    severity = {"success": logging.INFO, "skipped": logging.INFO, "partial": logging.WARNING}.get(
        run.outcome, logging.ERROR
    )
    fields = {
        "event": "run_outcome",
        "outcome": run.outcome,
        "duration_ms": run.duration_ms,
        "trigger": run.trigger,
        "cluster": run.cluster,
        "http_status": run.http_status,
        "error": record["error"],
        "recorded": stored,
        **run.counts,
    }
    log.log(severity, "run finished", extra={"fields": fields})
