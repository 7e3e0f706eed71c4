"""We test the fleet bucket (``FLEET_BUCKET``, ``usecases.collect_allocations.fleet``):
``collect_allocations`` against the sandbox OpenCost and Kubernetes API, a real PostgreSQL and
moto's S3 server:

- each final hour is one Parquet file at ``cluster=<id>/date=<YYYY-MM-DD>/hour=<HH>.parquet``
  holding exactly the hour's stored rows (read back from PostgreSQL here), typed: micros as
  integers, times in UTC, quantities as exact strings; the open hour has no file;
- the store unreachable, or the bucket missing: the run is ``partial`` with a warning naming the
  hours left, they stay marked, and the next run uploads them;
- a run killed with SIGKILL at any point (between an upload and its ledger update too), then the
  next run, leaves the bucket exactly as an uninterrupted run's, byte for byte;
- ``FLEET_BUCKET`` that is not a folder URL is refused naming the variable.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import boto3
import pyarrow.parquet as pq
import pytest

from finops.money import format_amount
from finops.periods import Period
from finops.policy import parse_policy
from infra.fleet import COLUMNS
from infra.kube import KubeClient
from infra.opencost import OpenCostClient
from infra.postgres import Database, apply_migrations, connect
from infra.settings import CollectAllocationsSettings
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.postgres import scratch_database
from tests.e2e.cli_runner import run_finops
from tests.net import FaultProxy, refused_port
from usecases.collect_allocations.service import CollectOptions, FleetBucket, collect_range
from usecases.reports.fleet import fleet_chargeback
from usecases.reports.service import ReportQuery, chargeback, month_period

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "fleet-files"
AGGREGATION = "namespace,controllerKind,controller,pod,container"
EARLIER = "2026-11-20T20:00:00Z"
SCHEDULED = "2026-11-21T03:00:00Z"
NEXT = "2026-11-21T04:00:00Z"


@pytest.fixture(scope="module")
def s3(moto_s3: str) -> Any:
    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    return client


def run(env: dict[str, str], cluster: str, scheduled: str, prefix: str, endpoint: str, **flags: Any) -> Any:
    argv = [sys.executable, "-m", "tests.e2e.collect_driver", "--cluster", cluster, "--scheduled", scheduled,
            "--fleet-bucket", prefix, "--fleet-endpoint", endpoint]  # fmt: skip
    for flag, value in flags.items():
        argv += [f"--{flag.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def env(database_url: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": database_url, "OPENCOST_URL": opencost.url, "KUBE_API_URL": kube.url}


def files(s3: Any, prefix: str) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"].removeprefix(prefix): s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}


def final_hours(db: Database, cluster: str) -> list[datetime]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT hour FROM allocation_hours WHERE cluster = %s AND state = 'final' ORDER BY hour", (cluster,)
        ).fetchall()
    return [row["hour"].astimezone(UTC) for row in rows]


def test_each_final_hour_is_one_file_of_its_stored_rows(
    db: Database, env: dict[str, str], s3: Any, moto_s3: str
) -> None:
    prefix = "layout/"
    for scheduled in (EARLIER, SCHEDULED):
        done = run(env, "prod", scheduled, f"s3://{BUCKET}/{prefix}", moto_s3)
        assert done.returncode == 0, done.stderr[-2000:]
    hours = final_hours(db, "prod")
    written = files(s3, prefix)
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


def test_a_failed_upload_is_retried_by_the_next_run(db: Database, env: dict[str, str], s3: Any, moto_s3: str) -> None:
    prefix = f"s3://{BUCKET}/retried/"
    with refused_port() as port:  # nothing listens: connection refused
        down = run(env, "prod", EARLIER, prefix, f"http://127.0.0.1:{port}")
    assert down.returncode == 0, down.stderr[-2000:]
    missing = run(env, "prod", SCHEDULED, "s3://no-such-bucket/x/", moto_s3)
    assert missing.returncode == 0, missing.stderr[-2000:]
    with db.connection() as conn:
        pending = conn.execute(
            "SELECT count(*) AS n FROM allocation_hours WHERE state = 'final' AND fleet_uploaded_at IS NULL"
        ).fetchone()
    assert pending is not None and pending["n"] == len(final_hours(db, "prod")) > 0
    assert files(s3, "retried/") == {}
    run(env, "prod", NEXT, prefix, moto_s3)
    assert len(files(s3, "retried/")) == len(final_hours(db, "prod"))


def test_the_warning_names_the_hours_left(db: Database, s3: Any, moto_s3: str) -> None:
    # In process, to read the run's result: the store refuses, the hours stay marked.
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


def test_a_run_killed_at_any_point_leaves_the_files_of_an_uninterrupted_one(
    db: Database, env: dict[str, str], s3: Any, moto_s3: str
) -> None:
    def bucket(name: str) -> str:
        return f"s3://{BUCKET}/{name}/"

    def forget() -> None:  # the cluster starts again: same rows, same files
        with db.connection() as conn:
            for table in ("provider_allocations", "allocation_hours", "allocation_daily", "allocation_dirty_days"):
                conn.execute(f"DELETE FROM {table} WHERE cluster = 'killed'")

    for scheduled in (EARLIER, SCHEDULED, NEXT):
        assert run(env, "killed", scheduled, bucket("clean"), moto_s3).returncode == 0
    expected = files(s3, "clean/")
    assert expected
    forget()
    assert run(env, "killed", EARLIER, bucket("count"), moto_s3).returncode == 0
    total = int(run(env, "killed", SCHEDULED, bucket("count"), moto_s3, count=True).stdout.strip())
    for point in sorted({total - 1, total - 2, total - 3, total - 5, total // 2}):
        forget()
        name = f"killed-{point}"
        assert run(env, "killed", EARLIER, bucket(name), moto_s3).returncode == 0
        killed = run(env, "killed", SCHEDULED, bucket(name), moto_s3, kill_at=point)
        assert killed.returncode == -9, (point, killed.stderr[-2000:])
        assert run(env, "killed", NEXT, bucket(name), moto_s3).returncode == 0
        assert files(s3, f"{name}/") == expected, f"killed before statement {point} of {total}"


@pytest.mark.parametrize("value", ["s3://bucket/prefix", "relative/folder/", "s3:///x/", "https://x/"])
def test_a_bad_bucket_is_refused_naming_the_variable(value: str) -> None:
    base = {"DATABASE_URL": "postgresql://x@localhost/x", "CLUSTER_ID": "c", "OPENCOST_URL": "http://opencost:9003"}
    with pytest.raises(ValueError, match="FLEET_BUCKET"):
        CollectAllocationsSettings.model_validate({**base, "FLEET_BUCKET": value})


FIRST = datetime(2026, 11, 19, tzinfo=UTC)
TWO_DAYS = Period(FIRST, FIRST + timedelta(days=2))
POLICIES = {
    "separate": {"currency": "USD", "idle": "separate"},
    "distribute-even": {
        "currency": "USD",
        "idle": "distribute",
        "shared": {
            "namespaces": ["kube-system", "monitoring"],
            "split": "even",
            "fixed": [{"name": "control-plane", "amount": "73.00"}],
        },
    },
}


@dataclass(frozen=True)
class Fleet:
    prefix: str  # the fleet bucket
    dsn: str  # the database the same hours were collected into


@pytest.fixture(scope="module")
def fleet(pg_server: str, opencost: sandbox_opencost.OpenCostServer, kube: sandbox_kube.KubeServer,
          s3: Any, moto_s3: str) -> Iterator[Fleet]:  # fmt: skip
    """Two clusters' two whole days loaded as history (every hour final) into a database of their
    own, and into the fleet bucket."""
    prefix = f"s3://{BUCKET}/fleet/"
    with scratch_database(pg_server, prefix="finops_fleet") as dsn:
        db = connect(dsn)
        try:
            apply_migrations(db)
            for cluster in ("prod", "dev"):
                options = CollectOptions(
                    cluster, AGGREGATION, 0, "team", "cost-center", fleet=FleetBucket(prefix, moto_s3)
                )
                source, kubernetes = OpenCostClient(opencost.url), KubeClient.from_url(kube.url)
                now, run = datetime.now(UTC), str(uuid4())
                done = collect_range(
                    db, source, kubernetes, options, start=FIRST, end=TWO_DAYS.end, now=now, run_id=run
                )
                assert done.fleet is not None and len(done.fleet.uploaded) == 48 and not done.warnings, done.warnings
        finally:
            db.close()
        yield Fleet(prefix, dsn)


@pytest.mark.parametrize("engine", ["duckdb", "chdb"])
@pytest.mark.parametrize("by", ["team", "cost-center", "namespace"])
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_the_fleet_report_is_postgresqls_to_the_cent(
    fleet: Fleet, moto_s3: str, name: str, by: str, engine: str
) -> None:
    policy = parse_policy(POLICIES[name])
    db = connect(fleet.dsn)
    try:
        expected = chargeback(db, policy, ReportQuery(TWO_DAYS, None), by)
    finally:
        db.close()
    found = fleet_chargeback(fleet.prefix, policy, TWO_DAYS, endpoint_url=moto_s3, by=by, engine=engine)
    assert expected.lines and found.lines == expected.lines and found.total == expected.total
    assert found.clusters == expected.clusters == ("dev", "prod")
    assert found.coverage is not None and found.coverage.complete
    assert [(c.cluster, c.final) for c in found.coverage.clusters] == [("dev", 48), ("prod", 48)]


def test_the_command_and_its_refusals(fleet: Fleet, moto_s3: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("currency: USD\nidle: separate\n")
    args = ["report", "chargeback", "--month", "2026-11", "--policy", str(policy), "--fleet", fleet.prefix,
            "--s3-endpoint", moto_s3, "--format", "json"]  # fmt: skip
    done = run_finops(*args)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    month = fleet_chargeback(
        fleet.prefix, parse_policy({"currency": "USD"}), month_period("2026-11"), endpoint_url=moto_s3
    )
    assert document["total"] == str(month.total) and document["coverage"]["complete"] is False
    assert "WARNING" in done.stderr  # a month of which two days are in the bucket
    refused = run_finops(*args, "--require-complete")
    assert refused.returncode == 4 and "missing" in refused.stderr
    policy.write_text("currency: EUR\n")
    other = run_finops(*args)
    assert other.returncode == 2
    assert other.stderr.strip().splitlines()[-1].startswith("finops: policy.currency is EUR but cluster dev's")
    missing = run_finops(*args[:7], f"s3://{BUCKET}/nowhere/", *args[8:])
    assert missing.returncode != 0 and "nowhere" in missing.stderr and "Traceback" not in missing.stderr


def test_a_local_copy_of_the_bucket_gives_the_same_report(fleet: Fleet, s3: Any, moto_s3: str, tmp_path: Path) -> None:
    # A local folder is read by DuckDB's own Parquet reader, the bucket through pyarrow's S3.
    for key, body in files(s3, "fleet/").items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(body)
    policy = parse_policy(POLICIES["distribute-even"])
    local = fleet_chargeback(f"{tmp_path}/", policy, TWO_DAYS)
    remote = fleet_chargeback(fleet.prefix, policy, TWO_DAYS, endpoint_url=moto_s3)
    assert local.lines == remote.lines and local.total == remote.total and local.lines
    assert local.coverage is not None and remote.coverage is not None
    assert local.coverage.clusters == remote.coverage.clusters


@pytest.mark.parametrize("fault", ["503", "drop"])
def test_uploads_that_fail_midway_are_retried_and_end_as_an_uninterrupted_runs(
    db: Database, env: dict[str, str], s3: Any, moto_s3: str, fault: str
) -> None:
    from infra.objectstore import ObjectStore
    from usecases.collect_allocations.fleet import upload_final_hours

    proxy = FaultProxy(moto_s3)
    prefix = f"s3://{BUCKET}/faults-{fault}/"
    try:
        proxy.mode = fault
        failed = run(env, "prod", SCHEDULED, prefix, proxy.url)
        assert failed.returncode == 0, failed.stderr[-2000:]
        assert files(s3, f"faults-{fault}/") == {}  # nothing half-written
        proxy.mode = "pass"
        assert run(env, "prod", NEXT, prefix, proxy.url).returncode == 0
    finally:
        proxy.close()
    with db.connection() as conn:  # the reference: every final hour uploaded by one clean pass
        conn.execute("UPDATE allocation_hours SET fleet_uploaded_at = NULL")
    clean = upload_final_hours(db, ObjectStore(endpoint_url=moto_s3), f"s3://{BUCKET}/ref-{fault}/", "prod",
                               AGGREGATION, deadline=float("inf"))  # fmt: skip
    assert clean.uploaded and files(s3, f"faults-{fault}/") == files(s3, f"ref-{fault}/")


def test_a_central_cost_api_serves_the_fleets_chargeback_and_namespaces(
    fleet: Fleet, stack: Any, moto_s3: str, tmp_path: Path
) -> None:
    import httpx

    from sandbox.localstack import serve_function

    policy = tmp_path / "policy.yaml"
    policy.write_text("currency: USD\nidle: separate\n")
    central = replace(stack, database_url=fleet.dsn)  # its own database: the namespaces come from the bucket
    env = {"PROXY_TOKEN": "fleet", "POLICY_PATH": str(policy), "FLEET_BUCKET": fleet.prefix,
           "FLEET_S3_ENDPOINT_URL": moto_s3}  # fmt: skip
    headers = {"Argocd-Application-Name": "argocd:cost-gate", "X-Finops-Proxy-Token": "fleet"}
    with serve_function(central, "cost_api", **env) as url:
        chargeback_ = httpx.get(f"{url}/api/v1/chargeback?month=2026-11", headers=headers, timeout=60)
        days = (datetime.now(UTC).date() - FIRST.date()).days + 1  # back to the first loaded day, whenever run
        namespaces = httpx.get(f"{url}/api/v1/namespaces?days={days}", headers=headers, timeout=60)
        billed = httpx.get(f"{url}/api/v1/chargeback?month=2026-11&basis=billed", headers=headers, timeout=60)
    assert chargeback_.status_code == 200, chargeback_.text
    expected = fleet_chargeback(
        fleet.prefix, parse_policy({"currency": "USD"}), month_period("2026-11"), endpoint_url=moto_s3
    )
    assert chargeback_.json()["total"] == str(expected.total)
    assert sorted(chargeback_.json()["coverage"]["clusters"]) == ["dev", "prod"]
    assert billed.status_code == 400 and "basis" in billed.json()["error"]
    # The namespaces of both clusters, each as the cluster's own database gives them.
    db = connect(fleet.dsn)
    try:
        today = datetime.now(UTC).date()
        window = {"start": FIRST.date(), "end": today + timedelta(days=1), "aggregation": AGGREGATION}
        rows = [
            r for c in ("dev", "prod") for r in db.fetch_all("namespace_costs", cluster=c, namespace=None, **window)
        ]
    finally:
        db.close()
    found = {
        (n["cluster"], n["namespace"]): (n["owner"], n["costCenter"], n["cost"])
        for n in namespaces.json()["namespaces"]
    }
    assert (
        found
        == {
            (r["cluster"], r["namespace"]): (r["owner"], r["cost_center"], format_amount(int(r["micros"])))
            for r in rows
        }
        and found
    )


def test_only_the_prefixs_own_files_are_read(fleet: Fleet, s3: Any, moto_s3: str) -> None:
    # A second fleet nested under the first one's prefix is not the first fleet's.
    for key, body in files(s3, "fleet/").items():
        s3.put_object(Bucket=BUCKET, Key=f"fleet/staging/{key.replace('cluster=', 'cluster=stg-')}", Body=body)
    try:
        policy = parse_policy({"currency": "USD"})
        for engine in ("duckdb", "chdb"):
            found = fleet_chargeback(fleet.prefix, policy, TWO_DAYS, endpoint_url=moto_s3, engine=engine)
            assert found.coverage is not None and found.coverage.cluster_names == ("dev", "prod"), engine
    finally:
        for key in files(s3, "fleet/staging/"):
            s3.delete_object(Bucket=BUCKET, Key=f"fleet/staging/{key}")


@pytest.mark.parametrize("url", ["gs://bucket/prefix/", "s3:///", "s3://bucket/prefix", "relative/"])
def test_a_bad_fleet_url_is_one_line(url: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("currency: USD\n")
    done = run_finops("report", "chargeback", "--month", "2026-11", "--policy", str(policy), "--fleet", url)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip().splitlines()[-1].endswith("is not s3://bucket/prefix/ or an absolute folder, ending in /")
    )
