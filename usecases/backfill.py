"""The install-time backfill: measure every Argo CD Application that has no record yet.

One replica at a time (a lease row in PostgreSQL, which works through PgBouncer's transaction
pooling; a replica that waited measures only what is still missing, so OpenCost is asked once
per namespace). Each destination namespace is measured once, at most ``concurrency`` at a
time, and each of its applications gets its own share. A namespace without data yet is
retried after 1, 2, 4, 8 minutes, then left for the next sync.

A Knative request must end inside its timeout, so the backfill is resumable: an invocation works
for at most ``budget`` seconds, records what is left (``backfill_namespaces``) and answers with
``remaining`` and ``retry_after_seconds``; the caller (the install Job, or the next invocation)
continues. An invocation that finds another replica running it does not wait: it answers 503
with ``Retry-After`` (``BUSY_RETRY_SECONDS``) and ``retry_after_seconds``, and the caller calls
again. The whole backfill ends ``deadline`` after its first invocation.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from finops.applications import Application, next_retry, parse_application
from finops.errors import FinOpsError, TemporaryError
from infra.opencost import OpenCostClient
from infra.postgres import Database
from infra.postgres.leases import Lease, held
from usecases.appcost.measure import KubeLister, Measurement, measure_namespace, with_share

log = logging.getLogger(__name__)

ARGO = ("argoproj.io", "v1alpha1", "applications")
LEASE_SECONDS = 60.0  # renewed every 20 s while held; a replica that died frees it after this


BUSY_RETRY_SECONDS = 5  # Retry-After of an invocation that found another replica running it


class BackfillBusy(TemporaryError):
    """Another replica is running the backfill; call again after ``retry_after_seconds``."""

    retry_after_seconds = BUSY_RETRY_SECONDS


@dataclass(frozen=True)
class BackfillOptions:
    cluster: str
    concurrency: int
    budget_seconds: float
    deadline_seconds: float
    prune_remote: bool
    gate_app: tuple[str, str] | None = None


@dataclass
class BackfillResult:
    measured: int = 0  # applications whose install record was stored
    skipped: int = 0  # applications with a record, remote, or without a valid destination
    failed: int = 0  # namespaces given up on (no data after every retry, or the deadline)
    remaining: int = 0  # namespaces still to measure in a later invocation
    pruned: int = 0
    retry_after_seconds: int = 0
    namespaces_measured: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        if self.remaining or self.failed:
            return "partial"
        return "success" if self.measured or self.pruned else "skipped"

    def counts(self) -> dict[str, Any]:
        return {
            "measured": self.measured,
            "skipped": self.skipped,
            "failed": self.failed,
            "remaining": self.remaining,
            "pruned": self.pruned,
            "retry_after_seconds": self.retry_after_seconds,
        }


def backfill(db: Database, opencost: OpenCostClient, kube: KubeLister, options: BackfillOptions) -> BackfillResult:
    started = time.monotonic()
    # A lease row, not a session advisory lock: it holds through PgBouncer's transaction pooling.
    lease = Lease(db, f"backfill:{options.cluster}", LEASE_SECONDS)
    if not lease.claim():  # answered at once (503, Retry-After): no request thread waits for it
        raise BackfillBusy("another replica is running the backfill; call again later")
    with held(lease):
        return _run(db, opencost, kube, options, started)


def _run(
    db: Database, opencost: OpenCostClient, kube: KubeLister, options: BackfillOptions, started: float
) -> BackfillResult:
    now = datetime.now(UTC)
    cluster = options.cluster
    result = BackfillResult()
    progress = db.fetch_one("backfill_progress", cluster=cluster)
    if progress is None or progress["finished_at"] is not None:
        db.execute("start_backfill", cluster=cluster, now=now)
        db.execute("reset_backfill_namespaces", cluster=cluster)
        began = now
    else:
        began = progress["started_at"]
    past_deadline = now - began > timedelta(seconds=options.deadline_seconds)

    apps = [parse_application(obj) for obj in kube.list_objects(*ARGO)]
    if options.prune_remote:
        result.pruned = _prune_remote(db, cluster, apps)
    recorded = {(r["app_namespace"], r["app_name"]) for r in db.fetch_all("applications_with_records", cluster=cluster)}
    todo: dict[str, list[Application]] = defaultdict(list)
    for app in apps:
        if (
            app.identity in recorded
            or app.identity == options.gate_app
            or not app.local
            or app.destination_namespace is None
        ):
            result.skipped += 1
        else:
            todo[app.destination_namespace].append(app)

    states = {r["namespace"]: r for r in db.fetch_all("backfill_namespace_states", cluster=cluster)}
    due: list[str] = []
    waiting: list[datetime] = []
    for namespace in sorted(todo):
        state = states.get(namespace)
        if state is not None and state["status"] == "gave_up":
            result.failed += 1
        elif past_deadline:
            _save_state(db, cluster, namespace, state, "gave_up", "the backfill's deadline passed")
            result.failed += 1
        elif state is None or state["next_attempt_at"] <= now:
            due.append(namespace)
        else:  # waiting for its next retry
            waiting.append(state["next_attempt_at"])
            result.remaining += 1

    def work(namespace: str) -> tuple[str, Measurement | None, str | None]:
        if time.monotonic() - started > options.budget_seconds:
            return namespace, None, None  # out of budget: left for the next invocation
        try:
            return namespace, measure_namespace(opencost, namespace, now=datetime.now(UTC)), None
        except FinOpsError as exc:
            return namespace, None, exc.message

    with ThreadPoolExecutor(max(1, options.concurrency), thread_name_prefix="backfill") as pool:
        for namespace, measurement, error in pool.map(work, due):
            if measurement is None and error is None:
                result.remaining += 1
                continue
            if measurement is None:
                retry = _retry(db, cluster, namespace, states.get(namespace), error or "")
                if retry is None:
                    result.failed += 1
                else:
                    result.remaining += 1
                    waiting.append(retry)
                continue
            for app in todo[namespace]:
                result.measured += _store(db, cluster, app, with_share(measurement, kube, app.resources))
            _save_state(db, cluster, namespace, states.get(namespace), "done", None)
            result.namespaces_measured.append(namespace)
            log.info(
                "backfill progress",
                extra={"fields": {"namespace": namespace, "applications": len(todo[namespace])}},
            )

    if waiting:
        result.retry_after_seconds = max(1, int((min(waiting) - datetime.now(UTC)).total_seconds()) + 1)
    if not result.remaining:
        db.execute("finish_backfill", cluster=cluster, now=datetime.now(UTC))
    return result


def _retry(db: Database, cluster: str, namespace: str, state: dict[str, Any] | None, error: str) -> datetime | None:
    """Schedule the next attempt (1, 2, 4, 8 minutes); None when the namespace is given up."""
    attempts = (state["attempts"] if state else 0) + 1
    delay = next_retry(attempts)
    if delay is None:
        _save_state(db, cluster, namespace, state, "gave_up", error, attempts=attempts)
        log.warning("backfill gave up on a namespace", extra={"fields": {"namespace": namespace, "error": error}})
        return None
    at = datetime.now(UTC) + delay
    _save_state(db, cluster, namespace, state, "pending", error, attempts=attempts, next_attempt_at=at)
    log.info("backfill will retry a namespace", extra={"fields": {"namespace": namespace, "at": at, "error": error}})
    return at


def _save_state(
    db: Database,
    cluster: str,
    namespace: str,
    state: dict[str, Any] | None,
    status: str,
    error: str | None,
    *,
    attempts: int | None = None,
    next_attempt_at: datetime | None = None,
) -> None:
    db.execute(
        "upsert_backfill_namespace",
        cluster=cluster,
        namespace=namespace,
        attempts=attempts if attempts is not None else (state["attempts"] if state else 0),
        next_attempt_at=next_attempt_at or datetime.now(UTC),
        status=status,
        last_error=error,
    )


def _store(db: Database, cluster: str, app: Application, measurement: Measurement) -> int:
    """Conditional insert under the application's lock: never over a record a sync stored meanwhile."""
    with db.connection() as conn:
        db.execute("lock_application", conn, cluster=cluster, app_namespace=app.namespace, app_name=app.name)
        row = db.fetch_one(
            "insert_install_cost_actual",
            conn,
            cluster=cluster,
            app_namespace=app.namespace,
            app_name=app.name,
            revision=app.revision,
            **measurement.record(),
        )
    return 1 if row is not None else 0


def _prune_remote(db: Database, cluster: str, apps: list[Application]) -> int:
    """Delete the records of applications that now deploy to another cluster (live list only)."""
    pruned = 0
    for app in apps:
        if not app.local:
            pruned += db.execute(
                "delete_application_records", cluster=cluster, app_namespace=app.namespace, app_name=app.name
            )
    return pruned
