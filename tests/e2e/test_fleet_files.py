"""We test writing the fleet bucket (``FLEET_BUCKET``, ``usecases.collect_allocations.fleet``):
``collect_allocations`` against the sandbox OpenCost and Kubernetes API, a real PostgreSQL and
moto's S3 server:

- each final hour is one Parquet file at ``cluster=<id>/date=<YYYY-MM-DD>/hour=<HH>.parquet``
  holding exactly the hour's stored rows (read back from PostgreSQL here), typed: micros as
  integers, times in UTC, quantities as exact strings; the open hour has no file;
- the store unreachable, the bucket missing, every PUT answered 503, the connection dropped
  halfway through the body, or the store hanging halfway through it past the upload's timeout
  (``FLEET_TIMEOUT_SECONDS``): the run stays ``partial`` with a warning naming the hours left, they
  stay marked, and the next run uploads them, ending as one clean pass's bucket byte for byte;
- a run killed with SIGKILL at three points (between an upload and its ledger update too), then the
  next run, leaves the bucket exactly as an uninterrupted run's, byte for byte;
- ``FLEET_BUCKET`` that is not a folder URL is refused naming the variable.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from infra.fleet import COLUMNS
from infra.postgres import Database
from infra.settings import CollectAllocationsSettings
from tests.e2e.fleet_world import AGGREGATION, BUCKET, EARLIER, NEXT, SCHEDULED, files, final_hours, run
from tests.net import FaultProxy, refused_port


def test_each_final_hour_is_one_file_of_its_stored_rows(
    db: Database, fleet_env: dict[str, str], fleet_s3: Any, moto_s3: str
) -> None:
    prefix = "layout/"
    for scheduled in (EARLIER, SCHEDULED):
        done = run(fleet_env, "prod", scheduled, f"s3://{BUCKET}/{prefix}", moto_s3)
        assert done.returncode == 0, done.stderr[-2000:]
    hours = final_hours(db, "prod")
    written = files(fleet_s3, prefix)
    assert sorted(written) == [f"cluster=prod/date={h:%Y-%m-%d}/hour={h:%H}.parquet" for h in hours]
    with db.connection() as conn:
        open_hours = conn.execute("SELECT count(*) AS n FROM allocation_hours WHERE state = 'open'").fetchone()
    assert open_hours is not None and open_hours["n"] >= 1  # the pinned hour: open, no file
    for hour in hours:
        table = pq.read_table(io.BytesIO(written[f"cluster=prod/date={hour:%Y-%m-%d}/hour={hour:%H}.parquet"]))
        assert table.schema.names == list(COLUMNS)
        types = {field.name: str(field.type) for field in table.schema}
        assert types["total_cost_micros"] == "int64" and types["hour"] == "timestamp[us, tz=UTC]"
        assert types["cpu_core_hours"] == "string"
        with db.connection() as conn:
            stored = conn.execute(
                "SELECT namespace, name, entry_kind, team, cost_center, total_cost_micros, cpu_core_hours::text AS q,"
                " currency, source FROM provider_allocations WHERE cluster = 'prod' AND hour = %s"
                " ORDER BY namespace, name",
                (hour,),
            ).fetchall()
        found = table.to_pylist()
        assert [tuple(r.values()) for r in stored] == [
            (f["namespace"], f["name"], f["entry_kind"], f["team"], f["cost_center"], f["total_cost_micros"],
             f["cpu_core_hours"], f["currency"], f["source"]) for f in found
        ]  # fmt: skip
        assert {f["hour"] for f in found} == {hour}


def test_a_failed_upload_is_retried_by_the_next_run(
    db: Database, fleet_env: dict[str, str], fleet_s3: Any, moto_s3: str
) -> None:
    prefix = f"s3://{BUCKET}/retried/"
    with refused_port() as port:  # nothing listens: connection refused
        down = run(fleet_env, "prod", EARLIER, prefix, f"http://127.0.0.1:{port}")
    assert down.returncode == 0, down.stderr[-2000:]
    missing = run(fleet_env, "prod", SCHEDULED, "s3://no-such-bucket/x/", moto_s3)
    assert missing.returncode == 0, missing.stderr[-2000:]
    with db.connection() as conn:
        pending = conn.execute(
            "SELECT count(*) AS n FROM allocation_hours WHERE state = 'final' AND fleet_uploaded_at IS NULL"
        ).fetchone()
    assert pending is not None and pending["n"] == len(final_hours(db, "prod")) > 0
    assert files(fleet_s3, "retried/") == {}
    run(fleet_env, "prod", NEXT, prefix, moto_s3)
    assert len(files(fleet_s3, "retried/")) == len(final_hours(db, "prod"))


def test_the_warning_names_the_hours_left(db: Database, fleet_s3: Any, moto_s3: str, tmp_path: Path) -> None:
    # In process, to read the run's result: the store refuses, the hours stay marked; then a
    # healthy store, and a local folder (the hour's date folder made for it).
    from infra.objectstore import ObjectStore
    from usecases.collect_allocations.fleet import upload_final_hours

    db.execute("ensure_allocation_partition", hour=datetime(2026, 11, 1, tzinfo=UTC))
    with db.connection() as conn:
        for hour in ("2026-11-01T00:00Z", "2026-11-01T01:00Z"):
            conn.execute(
                "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, run_id)"
                " VALUES ('c', 'a', %s, 'final', 1, gen_random_uuid())",
                (hour,),
            )
            conn.execute(
                "INSERT INTO provider_allocations (cluster, namespace, name, aggregation, hour, entry_kind,"
                " is_finalized, total_cost_micros) VALUES ('c', 'shop', 'shop', 'a', %s, 'workload', true, 1)",
                (hour,),
            )
        # An hour whose rows retention dropped has nothing to write: never a file, never pending.
        conn.execute(
            "INSERT INTO allocation_hours (cluster, aggregation, hour, state, row_count, run_id)"
            " VALUES ('c', 'a', '2026-10-01T00:00Z', 'final', 1, gen_random_uuid())"
        )
    with refused_port() as port:
        store = ObjectStore(endpoint_url=f"http://127.0.0.1:{port}")
        result = upload_final_hours(db, store, f"s3://{BUCKET}/w/", "c", "a", deadline=float("inf"))
    assert (result.uploaded, result.pending) == ([], 2)
    assert result.error is not None and "s3://fleet-files/w/cluster=c/date=2026-11-01/hour=00.parquet" in result.error
    done = upload_final_hours(db, ObjectStore(endpoint_url=moto_s3), f"s3://{BUCKET}/w/", "c", "a", deadline=0)
    assert len(done.uploaded) == 1 and done.pending == 1  # the deadline passed: the first one still goes
    local = upload_final_hours(db, ObjectStore(), f"{tmp_path}/fleet/", "c", "a", deadline=float("inf"))
    assert local.uploaded and (tmp_path / "fleet/cluster=c/date=2026-11-01/hour=01.parquet").exists()


def test_a_run_killed_at_any_point_leaves_the_files_of_an_uninterrupted_one(
    db: Database, fleet_env: dict[str, str], fleet_s3: Any, moto_s3: str
) -> None:
    def bucket(name: str) -> str:
        return f"s3://{BUCKET}/{name}/"

    def forget() -> None:  # the cluster starts again: same rows, same files
        with db.connection() as conn:
            for table in ("provider_allocations", "allocation_hours", "allocation_daily", "allocation_dirty_days"):
                conn.execute(f"DELETE FROM {table} WHERE cluster = 'killed'")

    for scheduled in (EARLIER, SCHEDULED, NEXT):
        assert run(fleet_env, "killed", scheduled, bucket("clean"), moto_s3).returncode == 0
    expected = files(fleet_s3, "clean/")
    assert expected
    forget()
    assert run(fleet_env, "killed", EARLIER, bucket("count"), moto_s3).returncode == 0
    total = int(run(fleet_env, "killed", SCHEDULED, bucket("count"), moto_s3, count=True).stdout.strip())
    # Between the last upload and its mark, between two uploads, and in the middle of the run.
    for point in sorted({total - 1, total - 3, total // 2}):
        forget()
        name = f"killed-{point}"
        assert run(fleet_env, "killed", EARLIER, bucket(name), moto_s3).returncode == 0
        killed = run(fleet_env, "killed", SCHEDULED, bucket(name), moto_s3, kill_at=point)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        assert run(fleet_env, "killed", NEXT, bucket(name), moto_s3).returncode == 0
        assert files(fleet_s3, f"{name}/") == expected, f"killed before statement {point} of {total}"


@pytest.mark.parametrize("value", ["s3://bucket/prefix", "relative/folder/", "s3:///x/", "https://x/"])
def test_a_bad_bucket_is_refused_naming_the_variable(value: str) -> None:
    base = {"DATABASE_URL": "postgresql://x@localhost/x", "CLUSTER_ID": "c", "OPENCOST_URL": "http://opencost:9003"}
    with pytest.raises(ValueError, match="FLEET_BUCKET"):
        CollectAllocationsSettings.model_validate({**base, "FLEET_BUCKET": value})


@pytest.mark.parametrize("fault", ["503", "drop", "stall"])
def test_uploads_that_fail_midway_are_retried_and_end_as_an_uninterrupted_runs(
    db: Database, fleet_env: dict[str, str], fleet_s3: Any, moto_s3: str, fault: str
) -> None:
    from infra.objectstore import ObjectStore
    from usecases.collect_allocations.fleet import upload_final_hours

    proxy = FaultProxy(moto_s3)
    prefix = f"s3://{BUCKET}/faults-{fault}/"
    try:
        proxy.mode = fault
        failed = run(fleet_env, "prod", SCHEDULED, prefix, proxy.url, fleet_timeout=1)  # stall: 3 x 1 s
        assert failed.returncode == 0, failed.stderr[-2000:]
        assert files(fleet_s3, f"faults-{fault}/") == {}  # nothing half-written
        proxy.mode = "pass"
        assert run(fleet_env, "prod", NEXT, prefix, proxy.url).returncode == 0
    finally:
        proxy.close()
    with db.connection() as conn:  # the reference: every final hour uploaded by one clean pass
        conn.execute("UPDATE allocation_hours SET fleet_uploaded_at = NULL")
    clean = upload_final_hours(db, ObjectStore(endpoint_url=moto_s3), f"s3://{BUCKET}/ref-{fault}/", "prod",
                               AGGREGATION, deadline=float("inf"))  # fmt: skip
    assert clean.uploaded and files(fleet_s3, f"faults-{fault}/") == files(fleet_s3, f"ref-{fault}/")
