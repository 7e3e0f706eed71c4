"""The fleet bucket tests' shared parts (the bucket's fixtures are in ``tests/e2e/conftest.py``):
the collector driver with a fleet bucket, and reading the bucket back."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.postgres import Database

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "fleet-files"
AGGREGATION = "namespace,controllerKind,controller,pod,container"
EARLIER = "2026-11-20T20:00:00Z"
SCHEDULED = "2026-11-21T03:00:00Z"
NEXT = "2026-11-21T04:00:00Z"


def run(env: dict[str, str], cluster: str, scheduled: str, prefix: str, endpoint: str, **flags: Any) -> Any:
    argv = [sys.executable, "-m", "tests.e2e.collect_driver", "--cluster", cluster, "--scheduled", scheduled,
            "--fleet-bucket", prefix, "--fleet-endpoint", endpoint]  # fmt: skip
    for flag, value in flags.items():
        argv += [f"--{flag.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def files(s3: Any, prefix: str) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"].removeprefix(prefix): s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}


def final_hours(db: Database, cluster: str) -> list[datetime]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT hour FROM allocation_hours WHERE cluster = %s AND state = 'final' ORDER BY hour", (cluster,)
        ).fetchall()
    return [row["hour"].astimezone(UTC) for row in rows]
