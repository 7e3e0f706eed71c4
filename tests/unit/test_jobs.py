"""We test the hourly ping's jobs runner (usecases.jobs): jobs run in order, a failing job does not
stop the ones after it, the first failure is what the ping answers, and every job's outcome is in
the run's counts."""

from __future__ import annotations

import pytest

from finops.errors import InvalidInput, TemporaryError
from usecases.jobs import Done, run_jobs


def test_a_failing_job_does_not_stop_the_ones_after_it() -> None:
    ran: list[str] = []

    def job(name: str, error: Exception | None = None) -> Done:
        ran.append(name)
        if error is not None:
            raise error
        return Done({f"{name}_count": 1})

    jobs = run_jobs(
        [
            ("collect", lambda: job("collect")),
            ("app_history", lambda: job("app_history", TemporaryError("PostgreSQL is unavailable"))),
            ("redrive", lambda: job("redrive", InvalidInput("ON_SYNC_URL: not a URL"))),
            ("retention", lambda: job("retention")),
        ]
    )
    assert ran == ["collect", "app_history", "redrive", "retention"]
    assert jobs.outcome == "failed"
    assert jobs.counts() == {
        "collect_count": 1,
        "retention_count": 1,
        "jobs": {
            "collect": "success",
            "retention": "success",
            "app_history": "failed: PostgreSQL is unavailable",
            "redrive": "failed: ON_SYNC_URL: not a URL",
        },
    }
    with pytest.raises(TemporaryError, match="PostgreSQL is unavailable"):  # the first failure decides
        jobs.raise_first_failure()


def test_warnings_make_the_jobs_partial_and_nothing_is_raised() -> None:
    jobs = run_jobs([("collect", lambda: Done({"rows": 3}, ["2 hour(s) lost"])), ("retention", lambda: Done({}))])
    assert jobs.outcome == "partial"
    assert jobs.warnings == ["2 hour(s) lost"]
    assert jobs.counts()["jobs"] == {"collect": "partial", "retention": "success"}
    jobs.raise_first_failure()


def test_a_crashing_job_is_kept_as_an_internal_error() -> None:
    def crash() -> Done:
        raise ZeroDivisionError("division by zero")

    jobs = run_jobs([("app_history", crash), ("retention", lambda: Done({}))])
    assert jobs.counts()["jobs"] == {"retention": "success", "app_history": "failed: internal error: ZeroDivisionError"}
    with pytest.raises(ZeroDivisionError):
        jobs.raise_first_failure()
