"""We test these aspects of ``cost_api``'s ``GET /metrics``, served by functions-framework over HTTP
on the demo cluster (sandbox/demo) collected by ``collect_allocations`` and measured by ``backfill``:

- every family is there and parses with ``prometheus_client``'s own parser;
- every value equals what SQL written here, independently of the product's queries, computes
  from the stored rows: per namespace (cost and workload idle), per owner and cost centre, the
  cluster's three piles adding up to the hour, the month so far per owner (from the hourly rows,
  so the rollups are checked too), per Argo CD application and resource, and the health
  families (runs, ledger, sync events waiting, Subscriptions priced), and the GPU families (the
  namespaces' GPU cost and the idle per model adding up to the hour's GPU cost);
- "the last complete hour" skips an open hour fetched before it ended.

Who may scrape is tested in test_metrics_auth.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from finops.hours import truncate_to_hour
from finops.measurement import PodCost
from infra.postgres import Database, connect
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from sandbox.cluster import cluster_objects
from sandbox.localstack import DEMO, Stack, serve_function
from tests.conftest import TABLES
from tests.e2e.conftest import TOKEN
from tests.logs import LOG_DIR as TEST_LOGS

METRICS = "test-metrics-token"
CLUSTER = "demo"
Labels = tuple[tuple[str, str], ...]


@pytest.fixture(scope="module")
def pinned() -> datetime:
    """The hour the collection pins, read once: every fixture of the module agrees on it."""
    return truncate_to_hour(datetime.now(UTC))


@pytest.fixture(scope="module")
def world(database_url: str, pinned: datetime) -> Iterator[Stack]:
    scenario = sandbox_opencost.load_scenario(DEMO / "scenario.yaml")

    def clock() -> datetime:
        """OpenCost's clock stands at least at the end of the pinned hour: run in the first seconds
        of an hour, the pinned hour would otherwise have no data yet, and the collection would end
        ``partial`` (the hour "answered empty"), which the health families' test does not expect."""
        return max(datetime.now(UTC), pinned + timedelta(minutes=59))

    with (
        sandbox_opencost.serve(scenario, clock=clock) as opencost,
        sandbox_kube.serve(seed_dir=DEMO / "kube", objects=cluster_objects(scenario)) as kube,
    ):
        yield Stack(
            database_url=database_url,
            opencost_url=opencost.url,
            kube_url=kube.url,
            ping_token=TOKEN,
            cluster=CLUSTER,
            log_dir=TEST_LOGS,
        )


@pytest.fixture(scope="module")
def metrics_url(world: Stack) -> Iterator[str]:
    with serve_function(world, "cost_api", METRICS_TOKEN=METRICS) as url:
        yield url


@pytest.fixture(scope="module")
def collected(world: Stack, metrics_url: str, pinned: datetime) -> Iterator[Database]:
    """The demo's last hours collected, every Application measured (and one namespace-scoped), a
    sync waiting, a Subscription priced and one not."""
    db = connect(world.database_url, max_size=4)
    with db.connection() as conn:
        tables = conn.execute(TABLES).fetchone()
        assert tables is not None
        conn.execute(f"TRUNCATE {next(iter(tables.values()))} RESTART IDENTITY CASCADE")
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with serve_function(world, "collect_allocations") as collect, serve_function(world, "backfill") as backfill:
        assert httpx.post(collect, json={"scheduledTime": pinned.isoformat()}, headers=headers, timeout=120).is_success
        for _ in range(10):  # the backfill answers "remaining" until every namespace is measured
            answer = httpx.post(backfill, json={}, headers=headers, timeout=300)
            assert answer.status_code == 200, answer.text
            if answer.json()["remaining"] == 0:
                break
    # A failed run of a made-up function, a sync waiting for its measurement, a priced Subscription.
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO job_runs (run_id, function, cluster, trigger, started_at, finished_at, duration_ms,"
            " outcome, http_status) VALUES (gen_random_uuid(), 'collect_charges', %s, 'cron',"
            " now() - interval '2 minutes', now() - interval '1 minute', 60000, 'failed', 503)",
            (CLUSTER,),
        )
        conn.execute(
            "INSERT INTO sync_events (cluster, app_namespace, app_name, destination_namespace, revision,"
            " finished_at, received_at) VALUES (%s, 'argocd', 'catalog', 'catalog', 'abc', now(),"
            " now() - interval '20 minutes')",
            (CLUSTER,),
        )
        _priced_subscription(conn, pinned - timedelta(hours=3))
        # An application measured without resources: its scope is its whole destination namespace.
        conn.execute(
            "INSERT INTO cost_actuals (cluster, app_namespace, app_name, destination_namespace, measured_on, scope,"
            " measured_at, window_start, window_end, measured_hours, cost_micros, monthly_micros, breakdown)"
            " VALUES (%s, 'argocd', 'legacy', 'legacy', 'sync', 'namespace', now(), now(), now(), 24, 1, 30, '{}')",
            (CLUSTER,),
        )
    yield db
    db.close()


def _priced_subscription(conn: Any, through: datetime) -> None:
    """One active Subscription with final fee charges through ``through`` and one never priced."""
    offering = conn.execute(
        "INSERT INTO offering_versions (cluster, uid, namespace, name, generation, fingerprint, spec)"
        " VALUES (%s, 'o1', 'billing', 'gold', 1, 'f', '{}') RETURNING id",
        (CLUSTER,),
    ).fetchone()["id"]
    for uid, name in (("s1", "acme"), ("s2", "globex")):
        version = conn.execute(
            "INSERT INTO subscription_versions (cluster, uid, namespace, name, generation, fingerprint, spec,"
            " activated_at) VALUES (%s, %s, 'billing', %s, 1, 'f', '{}', %s) RETURNING id",
            (CLUSTER, uid, name, through - timedelta(hours=5)),
        ).fetchone()["id"]
        conn.execute(
            "INSERT INTO subscription_index (cluster, uid, namespace, name, offering_namespace, offering_name,"
            " root_uid) VALUES (%s, %s, 'billing', %s, 'billing', 'gold', %s)",
            (CLUSTER, uid, name, uid),
        )
        if uid == "s1":
            for hours_back in (2, 1, 0):
                conn.execute(
                    "INSERT INTO subscription_charges (cluster, subscription_uid, hour, source, namespace, name,"
                    " offering_version_id, subscription_version_id, quantity, amount_micros, currency,"
                    " is_finalized) VALUES (%s, 's1', %s, 'fee', 'billing', 'acme', %s, %s, 1, 1000000, 'EUR', true)",
                    (CLUSTER, through - timedelta(hours=hours_back), offering, version),
                )


def scrape(url: str, token: str | None = METRICS, **headers: str) -> httpx.Response:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.get(url + "/metrics", headers=headers, timeout=30)


def samples(url: str) -> dict[str, dict[Labels, float]]:
    """Every sample of the exposition, by family and sorted labels (``cluster`` checked and dropped)."""
    response = scrape(url)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    found: dict[str, dict[Labels, float]] = defaultdict(dict)
    for family in text_string_to_metric_families(response.text):
        assert family.type == "gauge", family.name
        for sample in family.samples:
            assert sample.labels.pop("cluster") == CLUSTER
            found[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
    return found


def micros(value: float) -> int:
    return round(Decimal(repr(value)) * 1_000_000)


def rows(db: Database, query: str, *params: Any) -> list[dict[str, Any]]:
    with db.connection() as conn:
        return list(conn.execute(query, params).fetchall())


def newest_final_hour(db: Database) -> datetime:
    (row,) = rows(db, "SELECT max(hour) AS hour FROM allocation_hours WHERE cluster = %s AND state = 'final'", CLUSTER)
    return row["hour"]  # type: ignore[no-any-return]


def last_complete_hour(db: Database) -> datetime:
    """The hour the per-hour families describe, by the rule the module documents: the newest hour
    that is over, with rows, final or open but fetched after it ended. Usually the newest final
    hour; the pinned hour itself when the module ran across an hour and its run wrote it after the
    hour turned (``collected_at`` is the write's time)."""
    (row,) = rows(
        db,
        "SELECT max(hour) AS hour FROM allocation_hours WHERE cluster = %s AND row_count > 0"
        " AND hour + interval '1 hour' <= now() AND (state = 'final' OR collected_at >= hour + interval '1 hour')",
        CLUSTER,
    )
    return row["hour"]  # type: ignore[no-any-return]


def hour_rows(db: Database, hour: datetime) -> list[dict[str, Any]]:
    return rows(db, "SELECT * FROM provider_allocations WHERE cluster = %s AND hour = %s", CLUSTER, hour)


def owner(value: str | None) -> str:
    return value or "__unallocated__"


def test_every_family_is_exposed_for_the_demo(collected: Database, metrics_url: str) -> None:
    names = set(samples(metrics_url))
    assert names == {
        "finops_cost_hour_timestamp_seconds",
        "finops_namespace_cost_per_hour",
        "finops_namespace_workload_idle_cost_per_hour",
        "finops_owner_cost_per_hour",
        "finops_owner_workload_idle_cost_per_hour",
        "finops_cluster_cost_per_hour",
        "finops_owner_cost_month_to_date",
        "finops_application_cost_per_hour",
        "finops_job_runs",
        "finops_job_run_last_finished_timestamp_seconds",
        "finops_ledger_hours",
        "finops_newest_final_hour_end_timestamp_seconds",
        "finops_sync_events_open",
        "finops_sync_event_oldest_open_timestamp_seconds",
        "finops_subscriptions_active",
        "finops_subscriptions_priced",
        "finops_subscriptions_priced_through_oldest_timestamp_seconds",
        "finops_metrics_scrape_duration_seconds",
        # The demo's GPU node (test_gpu_carbon_metrics.py checks these by hand); its OpenCost has no
        # carbon estimates, so no *_co2e_grams, and the hour says so.
        "finops_namespace_gpu_cost_per_hour",
        "finops_namespace_gpu_hours",
        "finops_owner_gpu_cost_per_hour",
        "finops_owner_gpu_hours",
        "finops_gpu_idle_cost_per_hour",
        "finops_gpu_idle_hours",
        "finops_cost_hour_emissions_measured",
    }


def test_namespace_owner_and_cluster_figures_equal_the_hours_rows(collected: Database, metrics_url: str) -> None:
    found = samples(metrics_url)
    hour = last_complete_hour(collected)
    assert found["finops_cost_hour_timestamp_seconds"] == {(): hour.timestamp()}
    the_rows = hour_rows(collected, hour)
    cost: dict[Labels, int] = defaultdict(int)
    idle: dict[Labels, Decimal] = defaultdict(Decimal)
    owners: dict[Labels, int] = defaultdict(int)
    owners_idle: dict[Labels, Decimal] = defaultdict(Decimal)
    piles: dict[Labels, int] = defaultdict(int)
    for r in the_rows:
        currency, total = r["currency"] or "", r["total_cost_micros"] or 0
        kind = "idle" if r["entry_kind"] == "idle" else ("allocated" if r["team"] else "unallocated")
        piles[(("currency", currency), ("kind", kind))] += total
        if kind == "idle":
            continue
        pod_idle = PodCost(
            pod=r["pod"] or "",
            minutes=r["minutes"] or Decimal(0),
            costs={"cpu": r["cpu_cost_micros"] or 0, "ram": r["ram_cost_micros"] or 0},
            total_micros=total,
            cpu_request=r["cpu_core_request_avg"],
            cpu_usage=r["cpu_core_usage_avg"],
            ram_request=r["ram_byte_request_avg"],
            ram_usage=r["ram_byte_usage_avg"],
        ).idle
        who = (("cost_center", owner(r["cost_center"])), ("currency", currency), ("owner", owner(r["team"])))
        owners[who] += total
        owners_idle[who] += pod_idle
        if r["namespace"]:  # namespace-less entries (a released volume) are in their owner's and pile only
            where = (who[0], who[1], ("namespace", r["namespace"]), who[2])
            cost[where] += total
            idle[where] += pod_idle
    assert {k: micros(v) for k, v in found["finops_namespace_cost_per_hour"].items()} == cost
    assert {k: micros(v) for k, v in found["finops_owner_cost_per_hour"].items()} == owners
    assert {k: micros(v) for k, v in found["finops_cluster_cost_per_hour"].items()} == piles
    assert sum(piles.values()) == sum(r["total_cost_micros"] or 0 for r in the_rows)
    assert found["finops_namespace_workload_idle_cost_per_hour"].keys() == idle.keys()
    for key, value in idle.items():
        assert found["finops_namespace_workload_idle_cost_per_hour"][key] == pytest.approx(float(value) / 1e6)
    for key, value in owners_idle.items():
        assert found["finops_owner_workload_idle_cost_per_hour"][key] == pytest.approx(float(value) / 1e6)
    # The demo has what the families must tell apart: owners, an unlabelled namespace, idle, workload idle.
    assert {k[1] for k in piles} == {("kind", "allocated"), ("kind", "unallocated"), ("kind", "idle")}
    assert all(v > 0 for v in piles.values()) and sum(idle.values()) > 0


def test_gpu_families_equal_the_hours_rows_and_add_up_to_the_gpus(collected: Database, metrics_url: str) -> None:
    found = samples(metrics_url)
    the_rows = hour_rows(collected, last_complete_hour(collected))
    cost: dict[Labels, int] = defaultdict(int)
    idle: dict[Labels, int] = defaultdict(int)
    for r in the_rows:
        gpu = r["gpu_cost_micros"] or 0
        if r["entry_kind"] == "idle" and (gpu or r["name"].startswith("__idle__/gpu:")):
            idle[(("currency", r["currency"] or ""), ("gpu_model", r["gpu_model"] or ""))] += gpu
        elif (gpu or r["gpu_hours"]) and r["namespace"]:
            who = (("cost_center", owner(r["cost_center"])), ("currency", r["currency"] or ""))
            cost[(*who, ("namespace", r["namespace"]), ("owner", owner(r["team"])))] += gpu
    assert cost and idle  # the demo's GPU node: a GPU workload, and a GPU nobody requested
    assert {k: micros(v) for k, v in found["finops_namespace_gpu_cost_per_hour"].items()} == cost
    assert {k: micros(v) for k, v in found["finops_gpu_idle_cost_per_hour"].items()} == idle
    assert sum(cost.values()) + sum(idle.values()) == sum(r["gpu_cost_micros"] or 0 for r in the_rows)


def test_month_to_date_per_owner_equals_the_months_hourly_rows(collected: Database, metrics_url: str) -> None:
    found = samples(metrics_url)["finops_owner_cost_month_to_date"]
    expected = rows(
        collected,
        "SELECT team, cost_center, coalesce(currency, '') AS currency, sum(total_cost_micros)::bigint AS micros"
        " FROM provider_allocations WHERE cluster = %s AND entry_kind <> 'idle'"
        " AND hour >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
        " GROUP BY team, cost_center, currency",
        CLUSTER,
    )
    assert {k: micros(v) for k, v in found.items()} == {
        (("cost_center", owner(r["cost_center"])), ("currency", r["currency"]), ("owner", owner(r["team"]))): r[
            "micros"
        ]
        for r in expected
    }


RESOURCES = ("cpu", "ram", "gpu", "pv", "network", "lb", "shared", "external")


def test_application_costs_by_resource_equal_their_scopes_rows(collected: Database, metrics_url: str) -> None:
    """Which rows an application owns is the application history's rule (``finops_app_allocations``,
    tested with it); here: each application's figures are exactly its scope's rows of the hour, by
    resource, and a namespace-scoped one is its whole destination namespace, counted from the rows."""
    found = samples(metrics_url)["finops_application_cost_per_hour"]
    hour = last_complete_hour(collected)
    owned = rows(
        collected,
        "SELECT * FROM finops_app_allocations(%s, 'namespace,controllerKind,controller,pod,container', %s, %s)",
        CLUSTER,
        hour,
        hour + timedelta(hours=1),
    )
    expected: dict[Labels, int] = defaultdict(int)
    for row in owned:
        for resource in RESOURCES:
            key = (
                ("currency", row["currency"] or ""),
                ("dest_namespace", row["namespace"]),
                ("name", row["app_name"]),
                ("namespace", row["app_namespace"]),
                ("resource", resource),
                ("scope", row["scope"]),
            )
            expected[key] += row[f"{resource}_cost_micros"] or 0
    assert {k: micros(v) for k, v in found.items()} == expected
    scopes = {(dict(k)["namespace"], dict(k)["name"]): dict(k)["scope"] for k in found}
    assert scopes[("argocd", "legacy")] == "namespace" and scopes[("team-apps", "web")] == "application"
    # The namespace-scoped application, from the rows alone: every non-idle row of its namespace.
    legacy = [r for r in hour_rows(collected, hour) if r["namespace"] == "legacy" and r["entry_kind"] != "idle"]
    for resource in RESOURCES:
        exposed = [v for k, v in found.items() if dict(k)["name"] == "legacy" and dict(k)["resource"] == resource]
        assert [micros(v) for v in exposed] == [sum(r[f"{resource}_cost_micros"] or 0 for r in legacy)]
    # An application-scoped one is part of its namespace: never more than the namespace's cost.
    namespaces = samples(metrics_url)["finops_namespace_cost_per_hour"]
    shop = sum(micros(v) for k, v in namespaces.items() if dict(k)["namespace"] == "shop")
    web = sum(micros(v) for k, v in found.items() if dict(k)["name"] == "web" and dict(k)["namespace"] == "argocd")
    assert 0 < web < shop


def test_health_families_equal_the_tables(collected: Database, metrics_url: str) -> None:
    found = samples(metrics_url)
    runs = rows(
        collected,
        "SELECT function, outcome, count(*) AS n, max(finished_at) AS last FROM job_runs WHERE cluster = %s"
        " GROUP BY function, outcome",
        CLUSTER,
    )
    assert found["finops_job_runs"] == {(("function", r["function"]), ("outcome", r["outcome"])): r["n"] for r in runs}
    assert found["finops_job_run_last_finished_timestamp_seconds"] == {
        (("function", r["function"]), ("outcome", r["outcome"])): r["last"].timestamp() for r in runs
    }
    assert {("collect_allocations", "success"), ("backfill", "success"), ("collect_charges", "failed")} <= {
        (r["function"], r["outcome"]) for r in runs
    }
    states = {
        r["state"]: r["n"] for r in rows(collected, "SELECT state, count(*) AS n FROM allocation_hours GROUP BY 1")
    }
    assert found["finops_ledger_hours"] == {(("state", s),): states.get(s, 0) for s in ("open", "final", "lost")}
    assert found["finops_newest_final_hour_end_timestamp_seconds"] == {
        (): (newest_final_hour(collected) + timedelta(hours=1)).timestamp()
    }
    (event,) = rows(collected, "SELECT received_at FROM sync_events WHERE status = 'pending'")
    assert found["finops_sync_events_open"] == {(("status", "measuring"),): 0, (("status", "pending"),): 1}
    assert found["finops_sync_event_oldest_open_timestamp_seconds"] == {(): event["received_at"].timestamp()}
    (charged,) = rows(collected, "SELECT max(hour) AS hour FROM subscription_charges WHERE is_finalized")
    assert found["finops_subscriptions_active"] == {(): 2}
    assert found["finops_subscriptions_priced"] == {(): 1}
    assert found["finops_subscriptions_priced_through_oldest_timestamp_seconds"] == {
        (): (charged["hour"] + timedelta(hours=1)).timestamp()
    }


def test_an_open_hour_fetched_before_its_end_is_not_the_last_complete_hour(
    collected: Database, metrics_url: str
) -> None:
    final = last_complete_hour(collected)
    (before,) = rows(
        collected, "SELECT state, collected_at FROM allocation_hours WHERE cluster = %s AND hour = %s", CLUSTER, final
    )
    with collected.connection() as conn:  # as if the run pinned it at :05 and nothing fetched it since
        conn.execute(
            "UPDATE allocation_hours SET state = 'open', collected_at = hour + interval '5 minutes'"
            " WHERE cluster = %s AND hour = %s",
            (CLUSTER, final),
        )
    try:
        found = samples(metrics_url)
        assert found["finops_cost_hour_timestamp_seconds"] == {(): (final - timedelta(hours=1)).timestamp()}
        with collected.connection() as conn:  # fetched again after it ended: complete, though still open
            conn.execute(
                "UPDATE allocation_hours SET collected_at = hour + interval '65 minutes'"
                " WHERE cluster = %s AND hour = %s",
                (CLUSTER, final),
            )
        assert samples(metrics_url)["finops_cost_hour_timestamp_seconds"] == {(): final.timestamp()}
    finally:
        with collected.connection() as conn:
            conn.execute(
                "UPDATE allocation_hours SET state = %s, collected_at = %s WHERE cluster = %s AND hour = %s",
                (before["state"], before["collected_at"], CLUSTER, final),
            )
