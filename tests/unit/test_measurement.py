"""We test these aspects of measuring an application's cost (the domain):

- monthly figures come from the measured period: $1 over 6 h is $120, $5 over 24 h is $150;
- workload idle is cost x (request - usage) / request per resource, zero above the request;
- ownership follows controller ownerReferences: Deployment -> ReplicaSet -> Pod,
  CronJob -> Job -> Pod, Rollout -> ReplicaSet -> Pod; other apps' pods are not taken;
- Argo CD Applications: local or remote, valid destination, resources of the destination only;
- the retry schedule is 1, 2, 4, 8 minutes, then give up.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from finops.applications import next_retry, parse_application
from finops.measurement import PodCost, figures_of, monthly
from finops.ownership import owned_pods


@pytest.mark.parametrize(
    ("cost", "hours", "expected"),
    [(1_000_000, "6", 120_000_000), (5_000_000, "24", 150_000_000), (0, "0", 0), (1, "720", 1)],
    ids=["young-namespace", "full-day", "nothing-measured", "tiny"],
)
def test_monthly_projects_from_the_measured_period(cost: int, hours: str, expected: int) -> None:
    assert monthly(cost, Decimal(hours)) == expected


def pod(name: str, cpu_cost: int, req: str, use: str, ram_cost: int = 0, minutes: int = 60) -> PodCost:
    return PodCost(
        pod=name,
        minutes=Decimal(minutes),
        costs={"cpu": cpu_cost, "ram": ram_cost},
        total_micros=cpu_cost + ram_cost,
        cpu_request=Decimal(req),
        cpu_usage=Decimal(use),
        ram_request=Decimal(1),
        ram_usage=Decimal(1),
    )


def test_workload_idle_and_efficiency() -> None:
    half_idle = pod("a", 1_000_000, "1", "0.25")  # 75 % of the request unused
    bursting = pod("b", 2_000_000, "1", "1.5")  # above its request: no idle
    figures = figures_of([half_idle, bursting])
    assert figures.idle_micros == 750_000
    assert figures.cost_micros == 3_000_000 and figures.breakdown["cpu"] == 3_000_000
    assert figures.cpu_efficiency == Decimal("0.8750")  # (0.25 + 1.5) / 2 requested, minute-weighted
    assert figures.pods == ["a", "b"]
    assert figures_of([]).cpu_efficiency is None  # not measured, never 0


def obj(kind: str, name: str, owner: tuple[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{kind}-{name}"}
    if owner:
        meta["ownerReferences"] = [
            {"kind": owner[0], "name": owner[1], "uid": f"uid-{owner[0]}-{owner[1]}", "controller": True}
        ]
    return {"kind": kind, "metadata": meta}


def test_ownership_walks_controllers_to_the_listed_resources() -> None:
    owners = [
        obj("ReplicaSet", "web-5d4f", ("Deployment", "web")),
        obj("ReplicaSet", "canary-7c8", ("Rollout", "canary")),
        obj("Job", "report-2917", ("CronJob", "report")),
        obj("ReplicaSet", "other-1a2", ("Deployment", "other")),
    ]
    pods = [
        obj("Pod", "web-5d4f-x1", ("ReplicaSet", "web-5d4f")),
        obj("Pod", "canary-7c8-y2", ("ReplicaSet", "canary-7c8")),
        obj("Pod", "report-2917-z3", ("Job", "report-2917")),
        obj("Pod", "db-0", ("StatefulSet", "db")),
        obj("Pod", "other-1a2-q", ("ReplicaSet", "other-1a2")),
        obj("Pod", "lonely"),
    ]
    wanted = [("Deployment", "web"), ("Rollout", "canary"), ("CronJob", "report"), ("StatefulSet", "db")]
    assert owned_pods(wanted, pods, owners) == {"web-5d4f-x1", "canary-7c8-y2", "report-2917-z3", "db-0"}
    assert owned_pods([("Pod", "lonely")], pods, owners) == {"lonely"}
    assert owned_pods([], pods, owners) == set()


def app(server: str | None = "https://kubernetes.default.svc", ns: str | None = "shop", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "argocd", "name": "web"},
        "spec": {"destination": {"server": server, "namespace": ns, **extra}},
        "status": {
            "resources": [
                {"kind": "Deployment", "name": "web", "namespace": "shop"},
                {"kind": "ConfigMap", "name": "cfg", "namespace": "elsewhere"},
            ],
            "operationState": {"syncResult": {"revision": "abc123"}},
        },
    }


def test_applications_are_classified() -> None:
    local = parse_application(app())
    assert local.local and local.destination_namespace == "shop" and local.revision == "abc123"
    assert local.resources == (("Deployment", "web"),)
    assert parse_application(app(server=None, name="in-cluster")).local
    assert not parse_application(app(server="https://remote.example:6443")).local
    assert not parse_application(app(server=None, name="prod-us")).local
    assert parse_application(app(ns=None)).destination_namespace is None
    assert parse_application(app(ns="Not_Valid")).destination_namespace is None


def test_retry_schedule() -> None:
    assert [next_retry(n) for n in range(1, 6)] == [
        timedelta(minutes=1),
        timedelta(minutes=2),
        timedelta(minutes=4),
        timedelta(minutes=8),
        None,
    ]
