"""We test these aspects of ``finops doctor``, run as a user runs it (its own process), against a
real PostgreSQL, the sandbox OpenCost and Kubernetes API over HTTP, and a real Prometheus:

- every check is OK on a working install with collected hours (and the owner-label share, with
  the scenario's unlabelled namespace ``legacy``, a WARN naming the share), exit 0;
- each check's FAIL: the database unreachable (named by host, port and database, never the
  password in its URL), the schema newer than the image, OpenCost unreachable or ignoring
  ``filter=`` while namespace shards are configured, Kubernetes unreachable, a verb denied by a
  ``SelfSubjectAccessReview`` (only the functions needing it fail), an invalid active PriceBook,
  no final hour; any FAIL exits 4; the other checks still run (the ones needing the failed part
  say ``skipped``, WARN);
- the WARNs: OpenCost ignoring ``filter=`` without shards, no PriceBook (unpriced), lost hours;
- the Prometheus source: its version, or a FAIL when it is down;
- ``--format json``: ``{"status", "checks": [{"name", "status", "detail"}]}``, the same checks;
- nothing is written: the tables hold the same rows after a run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

from finops.allocations import DEFAULT_AGGREGATION
from infra.kube import KubeClient
from infra.opencost import OpenCostClient
from infra.postgres import Database
from sandbox import kube as sandbox_kube
from sandbox.opencost import OpenCostServer, Scenario
from sandbox.opencost.server import VERSION, FilterIgnoringApp
from sandbox.prometheus import demo_world
from tests.e2e.cli_runner import Outcome, run_finops
from tests.net import refused_port
from tests.prometheus import real_prometheus
from usecases.collect_allocations.service import CollectOptions, collect_range

if TYPE_CHECKING:
    pass

FINOPS = "finops.stakater.com"
ACCOUNT = "system:serviceaccount:finops:"
PASSWORD = "doctor-secret-pw"


@pytest.fixture(scope="module")
def ignoring(scenario: Scenario) -> Iterator[OpenCostServer]:
    with OpenCostServer(FilterIgnoringApp(scenario)) as server:
        yield server


@pytest.fixture
def collected(db: Database, opencost: OpenCostServer, kube: sandbox_kube.KubeServer) -> Database:
    """The last three hours collected (final) up to the current one, cluster ``test``."""
    now = datetime.now(UTC)
    end = now.replace(minute=0, second=0, microsecond=0)
    client, kube_client = OpenCostClient(opencost.url, retries=0), KubeClient.from_url(kube.url)
    try:
        result = collect_range(
            db,
            client,
            kube_client,
            CollectOptions("test", DEFAULT_AGGREGATION, 0, "team", "cost-center"),
            start=end - timedelta(hours=3),
            end=end,
            now=now,
            run_id=str(uuid.uuid4()),
        )
    finally:
        client.close()
        kube_client.close()
    assert len(result.hours_written) == 3, result.warnings
    return db


@pytest.fixture
def kube_access(kube: sandbox_kube.KubeServer) -> Iterator[sandbox_kube.KubeServer]:
    yield kube
    kube.store.access.reset()


def with_password(url: str) -> str:
    return psycopg.conninfo.make_conninfo(url, password=PASSWORD)


def doctor(env: dict[str, str], *args: str) -> tuple[Outcome, dict[str, tuple[str, str]]]:
    """Run ``finops doctor --format json``: the outcome and each check's (status, detail)."""
    outcome = run_finops("doctor", "--format", "json", *args, env=env)
    assert "Traceback" not in outcome.stderr, outcome.stderr
    document = json.loads(outcome.stdout)
    checks = {c["name"]: (c["status"], c["detail"]) for c in document["checks"]}
    assert document["status"] == worst(s for s, _ in checks.values())
    assert all(set(c) == {"name", "status", "detail"} for c in document["checks"])
    assert outcome.returncode == (4 if document["status"] == "FAIL" else 0), outcome
    return outcome, checks


def worst(statuses: Iterable[str]) -> str:
    found = set(statuses)
    return next(s for s in ("FAIL", "WARN", "OK") if s in found)


@pytest.fixture
def env(database_url: str, opencost: OpenCostServer, kube: sandbox_kube.KubeServer) -> dict[str, str]:
    return {
        "DATABASE_URL": with_password(database_url),
        "CLUSTER_ID": "test",
        "OPENCOST_URL": opencost.url,
        "OPENCOST_RETRIES": "0",
        "KUBE_API_URL": kube.url,
    }


def rows(db: Database) -> dict[str, Any]:
    with db.connection() as conn:
        return {
            table: conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone()
            for table in ("allocation_hours", "provider_allocations", "allocation_daily", "pricebooks", "job_runs")
        }


def test_a_working_install_is_ok(collected: Database, env: dict[str, str], kube: sandbox_kube.KubeServer) -> None:
    before, revision = rows(collected), kube.store.list_in(kube.store.registry.by_plural("", "pods"), "v1", None)[1]
    # A read-only session: any write the doctor tried would fail its check.
    read_only = psycopg.conninfo.make_conninfo(env["DATABASE_URL"], options="-c default_transaction_read_only=on")
    outcome, checks = doctor({**env, "DATABASE_URL": read_only})
    assert outcome.returncode == 0
    assert set(checks) == {
        "database",
        "schema",
        "opencost",
        "kubernetes",
        *(f"rbac {t}" for t in ("collect_allocations", "on_sync", "backfill", "cost_api", "collect_charges")),
        "rbac reconcile",
        "pricing",
        "ledger",
        "owner labels",
    }
    assert all(status == "OK" for name, (status, _) in checks.items() if name != "owner labels"), checks
    where = psycopg.conninfo.conninfo_to_dict(env["DATABASE_URL"])
    assert checks["database"][1] == f"PostgreSQL at {where['host']}:{where.get('port') or 5432}/{where['dbname']}"
    assert PASSWORD not in outcome.stdout + outcome.stderr
    assert checks["opencost"][1] == f"OpenCost {VERSION} at {env['OPENCOST_URL']}, filter= honoured"
    assert checks["kubernetes"][1] == "API server v1.33.0-sandbox"
    assert checks["rbac collect_allocations"][1] == f"{ACCOUNT}collect-allocations has all 4 permissions"
    assert checks["pricing"][1] == "PriceBook finops/standard, currency USD"
    assert checks["ledger"][1].endswith("(0 h behind), no lost hours")
    status, detail = checks["owner labels"]  # the scenario's namespace legacy has no owner label
    assert status == "WARN" and "% of the last 7 days' cost is in 1 namespaces without the owner label" in detail
    assert rows(collected) == before  # read-only
    assert kube.store.list_in(kube.store.registry.by_plural("", "pods"), "v1", None)[1] == revision


def test_text_output_is_one_line_per_check(collected: Database, env: dict[str, str]) -> None:
    outcome = run_finops("doctor", env=env)
    assert outcome.returncode == 0, outcome
    lines = outcome.stdout.splitlines()
    assert len(lines) == 13
    assert [line.split()[0] for line in lines[:3]] == ["OK", "OK", "OK"]
    assert lines[0].split()[1] == "database"


def test_an_unreachable_database_fails_naming_it_without_the_password(db: Database, env: dict[str, str]) -> None:
    with refused_port() as port:
        outcome, checks = doctor({**env, "DATABASE_URL": f"postgresql://finops:{PASSWORD}@127.0.0.1:{port}/finance"})
    status, detail = checks["database"]
    assert status == "FAIL" and detail.startswith(f"PostgreSQL at 127.0.0.1:{port}/finance is unavailable: ")
    assert PASSWORD not in outcome.stdout + outcome.stderr
    assert checks["schema"] == ("WARN", "skipped: database check failed")
    assert checks["ledger"] == ("WARN", "skipped: schema check failed")
    assert checks["opencost"][0] == "OK" and checks["pricing"][0] == "OK"  # the others still run


def test_a_schema_newer_than_the_image_fails(db: Database, env: dict[str, str]) -> None:
    with db.connection() as conn:
        conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES (999, 'future', 'x')")
    try:
        _, checks = doctor(env)
    finally:
        with db.connection() as conn:
            conn.execute("DELETE FROM schema_migrations WHERE version = 999")
    status, detail = checks["schema"]
    assert status == "FAIL" and "newer than this code knows" in detail
    assert checks["ledger"] == ("WARN", "skipped: schema check failed")


def test_no_final_hour_fails_the_ledger(db: Database, env: dict[str, str]) -> None:
    _, checks = doctor(env)
    assert checks["ledger"] == ("FAIL", "no hour of cluster test is final: has collect_allocations run?")
    assert checks["owner labels"] == ("WARN", "no cost in the last 7 days to measure")


def test_lost_hours_are_a_warning(collected: Database, env: dict[str, str]) -> None:
    with collected.connection() as conn:
        conn.execute(
            "INSERT INTO allocation_hours (cluster, aggregation, hour, state, reason, row_count)"
            " VALUES ('test', %s, now() - interval '30 days', 'lost', 'beyond OpenCost''s retention', 0)",
            (DEFAULT_AGGREGATION,),
        )
    _, checks = doctor(env)
    status, detail = checks["ledger"]
    assert status == "WARN" and "; 1 lost hours, their cost in no report (newest " in detail
    assert detail.endswith(": beyond OpenCost's retention)")


def test_opencost_unreachable_fails(db: Database, env: dict[str, str]) -> None:
    with refused_port() as port:
        _, checks = doctor({**env, "OPENCOST_URL": f"http://127.0.0.1:{port}"})
    status, detail = checks["opencost"]
    assert status == "FAIL" and "is unreachable: ConnectError" in detail
    assert checks["database"][0] == "OK" and checks["kubernetes"][0] == "OK"


def test_opencost_ignoring_the_filter_warns_and_fails_with_shards(
    db: Database, env: dict[str, str], ignoring: OpenCostServer
) -> None:
    _, checks = doctor({**env, "OPENCOST_URL": ignoring.url})
    status, detail = checks["opencost"]
    assert (
        status == "WARN" and "ignores filter= (versions before 1.115 do): keep OPENCOST_SHARD_NAMESPACES at 0" in detail
    )
    _, checks = doctor({**env, "OPENCOST_URL": ignoring.url, "OPENCOST_SHARD_NAMESPACES": "8"})
    status, detail = checks["opencost"]
    assert status == "FAIL" and "OPENCOST_SHARD_NAMESPACES=8 needs it" in detail


def test_a_denied_verb_fails_the_function_whose_account_lacks_it(
    db: Database, env: dict[str, str], kube_access: sandbox_kube.KubeServer
) -> None:
    kube_access.store.access.deny("list", FINOPS, "pricebooks", user=f"{ACCOUNT}collect-allocations")
    kube_access.store.access.deny("patch", "apps", "deployments", "opencost", user=f"{ACCOUNT}reconcile")
    kube_access.store.access.deny("get", FINOPS, "finopsproviders", user=f"{ACCOUNT}reconcile")
    _, checks = doctor(env)
    assert checks["rbac collect_allocations"] == (
        "FAIL",
        f"{ACCOUNT}collect-allocations lacks 1 of 4: list pricebooks ({FINOPS})",
    )
    status, detail = checks["rbac reconcile"]
    assert status == "FAIL" and detail.startswith(f"{ACCOUNT}reconcile lacks 2 of ")
    assert detail.endswith(
        f": get finopsproviders 'default' ({FINOPS}); patch deployments 'opencost' in namespace 'opencost' (apps)"
    )
    assert checks["rbac collect_charges"][0] == "OK"  # lists PriceBooks and patches OpenCost too, as itself
    assert checks["rbac on_sync"] == ("OK", f"{ACCOUNT}on-sync has all 3 permissions")


def test_kubernetes_unreachable_fails_and_skips_what_needs_it(db: Database, env: dict[str, str]) -> None:
    with refused_port() as port:
        _, checks = doctor({**env, "KUBE_API_URL": f"http://127.0.0.1:{port}"})
    assert checks["kubernetes"][0] == "FAIL" and "cannot reach the Kubernetes API" in checks["kubernetes"][1]
    assert checks["rbac backfill"] == ("WARN", "skipped: kubernetes check failed")
    assert checks["pricing"] == ("WARN", "skipped: kubernetes check failed")
    assert checks["database"][0] == "OK"


def test_no_pricebook_warns_and_an_invalid_active_one_fails(db: Database, env: dict[str, str]) -> None:
    with sandbox_kube.serve() as empty:
        _, checks = doctor({**env, "KUBE_API_URL": empty.url})
    assert checks["pricing"] == ("WARN", "no PriceBook in the cluster: rows are stored unpriced")
    bad = {
        "apiVersion": f"{FINOPS}/v1alpha1",
        "kind": "PriceBook",
        "metadata": {"name": "bad", "namespace": "finops", "labels": {f"{FINOPS}/active": "true"}},
        "spec": {"currency": "usd", "rates": {"cpuHour": "0.03"}},
    }
    with sandbox_kube.serve(objects=[bad]) as invalid:
        _, checks = doctor({**env, "KUBE_API_URL": invalid.url})
    status, detail = checks["pricing"]
    assert status == "FAIL" and detail.startswith("the active PriceBook finops/bad: spec.currency must be")


def test_unset_variables_fail_their_own_checks(db: Database, env: dict[str, str]) -> None:
    outcome, checks = doctor({k: v for k, v in env.items() if k not in ("DATABASE_URL", "OPENCOST_URL")})
    assert checks["database"][0] == "FAIL" and "DATABASE_URL is not set" in checks["database"][1]
    assert checks["allocation source"][0] == "FAIL" and "OPENCOST_URL is required" in checks["allocation source"][1]
    assert checks["kubernetes"][0] == "OK"
    assert outcome.returncode == 4


def test_the_prometheus_source_reports_its_version_or_fails(db: Database, env: dict[str, str]) -> None:
    prometheus = {**env, "ALLOCATION_SOURCE": "prometheus"}
    with real_prometheus(demo_world(datetime(2026, 11, 2, tzinfo=UTC), hours=1)) as url:
        _, checks = doctor({**prometheus, "PROMETHEUS_URL": url})
    status, detail = checks["prometheus"]
    assert status == "OK" and detail.startswith("Prometheus ") and detail.endswith(f" at {url}")
    with refused_port() as port:
        _, checks = doctor({**prometheus, "PROMETHEUS_URL": f"http://127.0.0.1:{port}"})
    assert checks["prometheus"][0] == "FAIL" and "ConnectError" in checks["prometheus"][1]


def test_opencost_prices_report_who_declared_them_and_the_currency(db: Database, env: dict[str, str]) -> None:
    with sandbox_kube.serve() as empty:
        _, checks = doctor({**env, "KUBE_API_URL": empty.url, "PRICING_SOURCE": "opencost", "PRICING_CURRENCY": "EUR"})
    assert checks["pricing"] == ("OK", "OpenCost's own prices, declared by PRICING_SOURCE, currency EUR")
