"""We test these aspects of the selector a measurement stores in an application's share:

- the pods' OpenCost controllers (``<controllerKind>:<controller>``), once each, and the bare
  pods (no controller) by name, so the daily history can select the application's hourly rows;
- the per-pod breakdown's properties give each pod its controller (none for a bare pod); an Argo
  Rollout's pods, which OpenCost names after their ReplicaSet, are keyed on the Rollout.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from finops.measurement import PodCost, figures_of
from infra.opencost.models import Allocation, AllocationProperties
from usecases.appcost.measure import pod_cost


def pod(name: str, controller: str | None) -> PodCost:
    return PodCost(pod=name, minutes=Decimal(60), costs={"cpu": 1}, total_micros=1, controller=controller)


def test_the_selector_names_each_controller_once_and_the_bare_pods() -> None:
    figures = figures_of(
        [
            pod("web-1", "deployment:web"),
            pod("web-2", "deployment:web"),
            pod("lonely", None),
            pod("idx-0", "statefulset:idx"),
        ]
    )
    document = figures.as_document(Decimal(24))
    assert document["selector"] == {"controllers": ["deployment:web", "statefulset:idx"], "pods": ["lonely"]}
    assert document["pods"] == ["idx-0", "lonely", "web-1", "web-2"]


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({"namespace": "shop", "pod": "web-1", "controllerKind": "deployment", "controller": "web"}, "deployment:web"),
        ({"namespace": "shop", "pod": "job-1", "controller": "nightly"}, ":nightly"),
        ({"namespace": "legacy", "pod": "lonely"}, None),
        (
            {
                "namespace": "shop",
                "pod": "web-6d9f8c7b5-x2k4p",
                "controllerKind": "rollout",
                "controller": "web-6d9f8c7b5",
            },
            "rollout:web",
        ),
    ],
    ids=["controller", "controller-without-kind", "bare-pod", "rollout-replicaset"],
)
def test_a_pods_controller_comes_from_the_breakdowns_properties(
    properties: AllocationProperties, expected: str | None
) -> None:
    allocation: Allocation = {"name": str(properties.get("pod")), "properties": properties, "totalCost": Decimal(1)}
    assert pod_cost(allocation).controller == expected
