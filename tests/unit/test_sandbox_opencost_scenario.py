"""Scenario loading and validation for the OpenCost sandbox: errors must name the bad key."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sandbox.opencost import ScenarioError, load_scenario, parse_scenario, synthetic
from sandbox.opencost.model import Cluster, hour_of_day_seconds
from sandbox.opencost.scenario import TimeSpec

DEMO = Path(__file__).resolve().parents[2] / "sandbox" / "demo" / "scenario.yaml"


def base() -> dict[str, Any]:
    return {
        "cluster": "c",
        "nodes": [{"name": "n1", "cpuCores": 4, "ramGiB": 16}],
        "namespaces": [{"name": "shop"}],
        "workloads": [{"namespace": "shop", "kind": "Deployment", "name": "web", "containers": [{"name": "app"}]}],
    }


def error_for(doc: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(doc)
    return str(caught.value)


def test_prices_default_to_opencost_defaults_and_accept_strings() -> None:
    doc = base()
    doc["nodes"][0]["cpuHourly"] = "0.05"
    node = parse_scenario(doc).nodes[0]
    assert (node.cpu_hourly, node.ram_gib_hourly, node.gpu_hourly) == (0.05, 0.004237, 0.95)


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d["nodes"][0].update(cpuHourly="cheap"), "nodes[0].cpuHourly"),
        (lambda d: d["nodes"][0].update(cpuHourly="-1"), "nodes[0].cpuHourly"),
        (lambda d: d["workloads"][0].update(replica=3), "workloads[0].replica"),
        (lambda d: d["workloads"][0].update(kind="Rollout"), "workloads[0].kind"),
        (lambda d: d["workloads"][0].update(node="n9"), "workloads[0].node: unknown node 'n9'"),
        (lambda d: d["workloads"][0].update(namespace="ghost"), "workloads[0].namespace: unknown namespace"),
        (lambda d: d["workloads"][0].update(start="yesterday-ish"), "workloads[0].start"),
        (lambda d: d["workloads"][0].update(schedule={"every": "1h"}), "workloads[0].schedule"),
        (
            lambda d: d["workloads"][0]["containers"][0].update(usage={"cpu": []}),
            "workloads[0].containers[0].usage.cpu",
        ),
        (lambda d: d["workloads"][0]["containers"][0].update(request={"cpu": -1}), "containers[0].request.cpu"),
        (lambda d: d["workloads"][0].update(start="-1h", end="-2h"), "workloads[0].end: must be after start"),
        (lambda d: d["nodes"].append({"name": "n1", "cpuCores": 1, "ramGiB": 1}), "nodes: duplicate name 'n1'"),
        (lambda d: d.pop("cluster"), "cluster"),
        (lambda d: d["workloads"][0].update(costAdjustment={"cpu": -1.5}), "workloads[0].costAdjustment.cpu"),
        (lambda d: d["workloads"][0].update(costAdjustment={"disk": 0.1}), "workloads[0].costAdjustment.disk"),
        (lambda d: d.update(unmountedPVs=[{"name": "x", "sizeGiB": 1, "namespace": "nope"}]), "unmountedPVs[0]"),
    ],
)
def test_errors_name_the_bad_key(mutate: Any, needle: str) -> None:
    doc = base()
    mutate(doc)
    assert needle in error_for(doc)


def test_load_scenario_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "cluster: c\nnodes: [{name: n1, cpuCores: 2, ramGiB: 8}]\nnamespaces: [{name: shop}]\n"
        "workloads:\n  - {namespace: shop, kind: Job, name: j, start: 2026-01-01T06:30:00Z, end: '+2h',\n"
        "     containers: [{name: c}]}\n"
    )
    scenario = load_scenario(path)
    workload = scenario.workloads[0]
    assert workload.start == TimeSpec(absolute=1767249000)
    assert workload.end == TimeSpec(relative=7200) and scenario.has_relative_times
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("cluster: [unclosed")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(tmp_path / "bad.yaml")


def test_demo_scenario_covers_the_demo_story() -> None:
    scenario = load_scenario(DEMO)
    assert scenario.cluster == "demo" and len(scenario.nodes) == 3
    labels = {ns.name: ns.labels for ns in scenario.namespaces}
    assert {labels[n].get("team") for n in ("kube-system", "monitoring", "ingress-nginx")} == {"platform"}
    assert [n for n, lab in labels.items() if lab.get("team") == "payments"] == ["payments-api", "payments-worker"]
    assert labels["legacy"] == {}
    kinds = {w.kind for w in scenario.workloads}
    assert {"CronJob", "Pod", "StatefulSet", "DaemonSet"} <= kinds
    assert any(c.request.gpu for w in scenario.workloads for c in w.containers)
    assert any(w.load_balancers for w in scenario.workloads) and scenario.unmounted_pvs
    assert all(w.start is None or w.start.is_relative for w in scenario.workloads)
    Cluster(scenario)  # compiles: no pod-name clashes


def test_synthetic_has_exactly_the_requested_containers() -> None:
    for count in (1, 9, 10, 1234):
        cluster = Cluster(synthetic(count, namespaces=7))
        assert sum(len(spec.pods) * len(spec.containers) for spec in cluster.workloads) == count
    assert synthetic(50).model_dump() == synthetic(50).model_dump()


def test_synthetic_gpu_containers_share_every_node_s_gpu_alike_on_the_same_nodes() -> None:
    def placed(cluster: Cluster) -> list[tuple[str, int | None]]:
        return [(pod.node.name, gpu) for spec in cluster.workloads for pod in spec.pods for gpu in pod.gpus]

    plain, shared = Cluster(synthetic(20_000)), Cluster(synthetic(20_000, gpu_containers=2_000))
    assert [node for node, _ in placed(plain)] == [node for node, _ in placed(shared)]  # the same placement
    assert all(gpu is None for _, gpu in placed(plain))
    on_gpu = Counter(node for node, gpu in placed(shared) if gpu is not None)
    assert len(on_gpu) == 200 and set(on_gpu.values()) == {10}  # every node's one GPU, 10 pods each
    assert {(n.gpus, n.gpu_shared) for n in shared.nodes} == {(1, True)}
    for wrong in (3, 2_005, -5):
        with pytest.raises(ValueError, match="multiple of 5"):
            synthetic(100, gpu_containers=wrong)


def test_hour_of_day_seconds() -> None:
    day = 86400
    start = 1767225600 + 1800  # 2026-01-01T00:30Z
    assert hour_of_day_seconds(start, start + 3600) == [(0, 1800), (1, 1800)]
    spans = hour_of_day_seconds(start, start + 10 * day + 600)
    assert sum(s for _, s in spans) == 10 * day + 600
    assert dict(spans)[0] == 1800 + 9 * 3600 + 2400 and dict(spans)[5] == 10 * 3600


def test_cronjob_runs_one_pod_per_run() -> None:
    doc = base()
    doc["workloads"][0].update(kind="CronJob", schedule={"every": "1h", "runFor": "15m", "offset": "10m"})
    cluster = Cluster(parse_scenario(doc))
    start = 1767225600
    allocs = cluster.compute((start, start + 3 * 3600), start, start + 3 * 3600, start)
    assert len(allocs) == 3
    assert [(a.start - start, a.end - start) for a in allocs] == [(600, 1500), (4200, 5100), (7800, 8700)]
    assert {a.props.controller_kind for a in allocs} == {"job"} and allocs[0].props.controller == "web"
    assert allocs[0].props.pod.startswith(f"web-{(start + 600) // 60}-")
