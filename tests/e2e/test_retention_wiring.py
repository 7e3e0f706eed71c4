"""We test that the served ``collect_allocations`` applies row retention after its run (the
defaults: ``job_runs`` older than 90 days go, younger ones stay), not only the retention function
on its own (tests/integration/test_schema_and_retention.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from infra.postgres import Database
from tests.e2e.conftest import Pinger


def job_run(db: Database, cluster: str, days_ago: int) -> str:
    run_id = str(uuid.uuid4())
    started = datetime.now(UTC) - timedelta(days=days_ago)
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO job_runs (run_id, function, cluster, trigger, started_at, finished_at, duration_ms, outcome,"
            " http_status) VALUES (%s, 'collect_allocations', %s, 'cron', %s, %s, 1, 'success', 200)",
            (run_id, cluster, started, started),
        )
    return run_id


def test_the_hourly_run_deletes_job_runs_beyond_their_retention(db: Database, ping: Pinger) -> None:
    first = ping()
    assert first.status_code == 200, first.text
    with db.connection() as conn:
        cluster = conn.execute("SELECT cluster FROM job_runs LIMIT 1").fetchone()
    assert cluster is not None
    old, young = job_run(db, cluster["cluster"], 91), job_run(db, cluster["cluster"], 89)
    assert ping().status_code == 200
    with db.connection() as conn:
        kept = {str(row["run_id"]) for row in conn.execute("SELECT run_id FROM job_runs").fetchall()}
    assert young in kept and old not in kept
