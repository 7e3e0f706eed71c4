"""We test ``GET /metrics``' GPU and emission families end to end: ``finops collect`` from the
sandbox OpenCost worlds of ``test_gpu_chargeback`` and ``test_carbon`` (their docstrings compute
each hour by hand) into a real PostgreSQL, then the exposition ``cost_api`` builds for the cluster,
parsed with ``prometheus_client``'s own parser:

- GPUs, per hour under ``GPU_BASIS=request``: research (namespace ml) 3.00 for 1 GPU-hour,
  serving (infer) 0.30 + 0.15 + 0.06 = 0.51 for 0.85 GPU-hours; idle A100 3.00 and 1 GPU-hour,
  idle T4 0.09 and 0.15: the namespaces and the idle add up to the GPUs' 6.60 and 3 GPU-hours;
- grams, per hour: checkout (shop) 150, discovery (search) 129, legacy (no owner) 40, idle 137:
  the piles add up to the nodes' and disks' 456 g;
- an hour stored without emissions (the GPU world's OpenCost has no carbon estimates) says so
  (``finops_cost_hour_emissions_measured`` 0) and has no grams series, never 0 g.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from functions.cost_api.metrics import families
from infra.postgres import Database
from infra.settings import CostApiSettings, load
from sandbox import kube as sandbox_kube
from sandbox import opencost as sandbox_opencost
from tests.e2e import test_carbon, test_gpu_chargeback

A100, T4 = test_gpu_chargeback.A100, test_gpu_chargeback.T4
Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]


@pytest.fixture(scope="module")
def gpu_opencost() -> Iterator[sandbox_opencost.OpenCostServer]:
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(test_gpu_chargeback.SCENARIO)) as server:
        yield server


@pytest.fixture(scope="module")
def carbon_opencost() -> Iterator[sandbox_opencost.OpenCostServer]:
    with sandbox_opencost.serve(sandbox_opencost.parse_scenario(test_carbon.SCENARIO)) as server:
        yield server


def scrape(db: Database, database_url: str, cluster: str) -> Samples:
    """The exposition of ``cluster``'s cost_api, parsed; every sample by family and sorted labels."""
    settings = load(CostApiSettings, {"DATABASE_URL": database_url, "PROXY_TOKEN": "-", "CLUSTER_ID": cluster})
    text = generate_latest(_Registry(families(db, settings))).decode()
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = dict(sample.labels)
            assert labels.pop("cluster") == cluster
            found.setdefault(sample.name, {})[tuple(sorted(labels.items()))] = sample.value
    return found


class _Registry:
    def __init__(self, found: list[Any]) -> None:
        self.found = found

    def collect(self) -> Iterator[Any]:
        return iter(self.found)


def test_gpu_cost_and_hours_per_namespace_owner_and_idle_model_are_the_hand_figures(
    db: Database,
    database_url: str,
    gpu_opencost: sandbox_opencost.OpenCostServer,
    kube: sandbox_kube.KubeServer,
) -> None:
    test_gpu_chargeback.collect(database_url, gpu_opencost.url, kube, "gpus-metrics", "request")
    found = scrape(db, database_url, "gpus-metrics")
    none = "__unallocated__"
    assert found["finops_namespace_gpu_cost_per_hour"] == {
        (("cost_center", none), ("currency", "USD"), ("namespace", "infer"), ("owner", "serving")): 0.51,
        (("cost_center", none), ("currency", "USD"), ("namespace", "ml"), ("owner", "research")): 3.0,
    }
    assert found["finops_namespace_gpu_hours"] == {
        (("cost_center", none), ("namespace", "infer"), ("owner", "serving")): 0.85,
        (("cost_center", none), ("namespace", "ml"), ("owner", "research")): 1.0,
    }
    assert found["finops_owner_gpu_cost_per_hour"] == {
        (("cost_center", none), ("currency", "USD"), ("owner", "research")): 3.0,
        (("cost_center", none), ("currency", "USD"), ("owner", "serving")): 0.51,
    }
    assert found["finops_owner_gpu_hours"] == {
        (("cost_center", none), ("owner", "research")): 1.0,
        (("cost_center", none), ("owner", "serving")): 0.85,
    }
    assert found["finops_gpu_idle_cost_per_hour"] == {
        (("currency", "USD"), ("gpu_model", A100)): 3.0,
        (("currency", "USD"), ("gpu_model", T4)): 0.09,
    }
    assert found["finops_gpu_idle_hours"] == {(("gpu_model", A100),): 1.0, (("gpu_model", T4),): 0.15}
    # The namespaces' GPU cost and the idle add up to the GPUs' cost (in micros, exactly), and
    # their GPU-hours to the three GPUs' hour.
    cost = [*found["finops_namespace_gpu_cost_per_hour"].values(), *found["finops_gpu_idle_cost_per_hour"].values()]
    assert sum(round(value * 1_000_000) for value in cost) == 6_600_000
    hours = [*found["finops_namespace_gpu_hours"].values(), *found["finops_gpu_idle_hours"].values()]
    assert sum(round(value * 1_000_000) for value in hours) == 3_000_000
    # No carbon estimates from this OpenCost: the hour says so, and no grams are made up.
    assert found["finops_cost_hour_emissions_measured"] == {(): 0.0}
    assert not any(name.endswith("_co2e_grams") for name in found)


def test_grams_per_namespace_owner_and_pile_are_the_hand_figures_and_add_up(
    db: Database,
    database_url: str,
    carbon_opencost: sandbox_opencost.OpenCostServer,
    kube: sandbox_kube.KubeServer,
) -> None:
    test_carbon.collect(database_url, carbon_opencost.url, kube, "carbon-metrics")
    found = scrape(db, database_url, "carbon-metrics")
    none = "__unallocated__"
    assert found["finops_cost_hour_emissions_measured"] == {(): 1.0}
    assert found["finops_namespace_co2e_grams"] == {
        (("cost_center", none), ("namespace", "legacy"), ("owner", none)): 40.0,
        (("cost_center", none), ("namespace", "search"), ("owner", "discovery")): 129.0,
        (("cost_center", none), ("namespace", "shop"), ("owner", "checkout")): 150.0,
    }
    assert found["finops_owner_co2e_grams"] == {
        (("cost_center", none), ("owner", "__unallocated__")): 40.0,
        (("cost_center", none), ("owner", "checkout")): 150.0,
        (("cost_center", none), ("owner", "discovery")): 129.0,
    }
    piles = found["finops_cluster_co2e_grams"]
    assert piles == {(("kind", "allocated"),): 279.0, (("kind", "unallocated"),): 40.0, (("kind", "idle"),): 137.0}
    with db.connection() as conn:
        (stored,) = conn.execute(
            "SELECT grams FROM emission_hours WHERE cluster = 'carbon-metrics' ORDER BY hour DESC LIMIT 1"
        ).fetchall()
    assert sum(piles.values()) == stored["grams"] == 456  # the nodes' and disks' grams of the hour
    assert not found.get("finops_namespace_gpu_cost_per_hour")  # no GPU in this world: no GPU series
