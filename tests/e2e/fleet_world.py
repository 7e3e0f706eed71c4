"""The fleet bucket tests' shared parts (the bucket's fixtures are in ``tests/e2e/conftest.py``):
the collector driver with a fleet bucket, and reading the bucket back."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from infra.postgres import Database
from tests.e2e.collect_driver import run_driver

BUCKET = "fleet-files"
AGGREGATION = "namespace,controllerKind,controller,pod,container"
EARLIER = "2026-11-20T20:00:00Z"
SCHEDULED = "2026-11-21T03:00:00Z"
NEXT = "2026-11-21T04:00:00Z"


def run(env: dict[str, str], cluster: str, scheduled: str, prefix: str, endpoint: str, **flags: Any) -> Any:
    """One collector run with a fleet bucket, in a process of its own (``tests/e2e/collect_driver.py``)."""
    return run_driver(env, "--cluster", cluster, "--scheduled", scheduled, "--fleet-bucket", prefix,
                      "--fleet-endpoint", endpoint, **flags)  # fmt: skip


def files(s3: Any, prefix: str) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"].removeprefix(prefix): s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}


def final_hours(db: Database, cluster: str) -> list[datetime]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT hour FROM allocation_hours WHERE cluster = %s AND state = 'final' ORDER BY hour", (cluster,)
        ).fetchall()
    return [row["hour"].astimezone(UTC) for row in rows]
