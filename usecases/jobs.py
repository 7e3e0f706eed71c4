"""Jobs that one ping runs in order, each its own use case with its own outcome, each failing on
its own: a job that raises does not stop the ones after it. The first failure is raised again once
all have run, so the ping's status is that failure's (the CronJob retries; every job is
idempotent), and the counts of the jobs that did run are kept with it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from finops.errors import FinOpsError

log = logging.getLogger("finops.jobs")


@dataclass(frozen=True)
class Done:
    """A job's counts, and what needs attention (which makes it ``partial``)."""

    counts: Mapping[str, Any]
    warnings: Sequence[str] = ()

    @property
    def outcome(self) -> str:
        return "partial" if self.warnings else "success"


Job = tuple[str, Callable[[], Done]]


@dataclass
class Jobs:
    """What the jobs of one ping did: ``done`` in order, and the failures by job."""

    done: dict[str, Done] = field(default_factory=dict)
    failed: dict[str, Exception] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        if self.failed:
            return "failed"
        return "partial" if self.warnings else "success"

    @property
    def warnings(self) -> list[str]:
        return [warning for done in self.done.values() for warning in done.warnings]

    def counts(self) -> dict[str, Any]:
        """Every job's counts, and ``jobs``: each job's outcome (a failure with its message)."""
        outcomes = {name: done.outcome for name, done in self.done.items()}
        outcomes |= {name: f"failed: {_message(exc)}" for name, exc in self.failed.items()}
        merged: dict[str, Any] = {}
        for done in self.done.values():
            merged |= done.counts
        return {**merged, "jobs": outcomes}

    def raise_first_failure(self) -> None:
        for exc in self.failed.values():
            raise exc


def run_jobs(jobs: Sequence[Job]) -> Jobs:
    """Run ``jobs`` in order; each one's error is kept (and logged, naming the job), not raised."""
    result = Jobs()
    for name, job in jobs:
        try:
            result.done[name] = job()
        except Exception as exc:
            result.failed[name] = exc
            if isinstance(exc, FinOpsError):
                log.warning("job failed", extra={"fields": {"job": name, "error": exc.message}})
            else:
                log.exception("job crashed", extra={"fields": {"job": name}})
    return result


def _message(exc: Exception) -> str:
    return exc.message if isinstance(exc, FinOpsError) else f"internal error: {type(exc).__name__}"
