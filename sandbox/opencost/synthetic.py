"""A large scenario built in code, for benchmarks and load tests.

Deterministic: the same arguments give the same scenario, so byte-identical responses.

Shape: Deployments of 5 replicas * 2 containers (a last, smaller Deployment makes the count exact),
spread round-robin over ``namespaces`` namespaces labelled with 10 teams and cost centres, on nodes
of 64 cores / 256 GiB (one per 100 containers). Usage follows a 24-hour profile shifted per workload;
every 7th workload mounts a PV, every 13th has a load balancer, every 3rd reports network traffic.
Every 4th workload carries OpenCost cost adjustments (reconciliation with the bill): a credit on
CPU and RAM for half of them, a surcharge on CPU, PV, network and load balancer for the other half.

With ``gpu_containers`` (a multiple of 5), every node also has one time-sliced GPU (an NVIDIA L4 at
0.80 an hour) and that many app containers, one per pod, take turns on their node's GPU at 2 to 8 %
engine activity each. The GPU workloads come in runs of ``nodes / 5`` consecutive workloads, whose
pods go round the nodes once, so every GPU is shared by as many pods (10 at 20,000 containers with
2,000 on GPUs); the pods' placement is the same as without GPUs.
"""

from __future__ import annotations

import math
from typing import Any

from sandbox.opencost.scenario import Scenario, parse_scenario

_DAY_SHAPE = [
    0.3,
    0.25,
    0.2,
    0.2,
    0.25,
    0.3,
    0.45,
    0.6,
    0.8,
    0.95,
    1.0,
    1.05,
    1.1,
    1.05,
    1.0,
    0.95,
    0.9,
    0.85,
    0.8,
    0.7,
    0.6,
    0.5,
    0.4,
    0.35,
]


def synthetic(containers: int, *, namespaces: int = 50, cluster: str = "bench", gpu_containers: int = 0) -> Scenario:
    """A scenario with exactly ``containers`` always-running containers, ``gpu_containers`` of them
    on their node's time-sliced GPU."""
    if containers < 1 or namespaces < 1:
        raise ValueError("containers and namespaces must be >= 1")
    gpu_workloads = gpu_containers // 5  # a GPU workload: 5 pods, each with one GPU container
    if gpu_containers < 0 or gpu_containers % 5 or gpu_workloads > containers // 10:
        raise ValueError(f"gpu_containers must be a multiple of 5 up to {containers // 10 * 5}")
    node_count = max(1, math.ceil(containers / 100))
    gpu = {"gpus": 1, "gpuHourly": "0.80", "gpuModel": "NVIDIA L4", "gpuSharing": "time-sliced"}
    doc: dict[str, Any] = {
        "cluster": cluster,
        "nodes": [
            {"name": f"node-{i:04d}", "cpuCores": 64, "ramGiB": 256, **(gpu if gpu_containers else {})}
            for i in range(node_count)
        ],
        "namespaces": [
            {"name": f"ns-{i:03d}", "labels": {"team": f"team-{i % 10}", "cost-center": f"cc-{100 + i % 10}"}}
            for i in range(namespaces)
        ],
        "workloads": [],
    }
    run = max(1, node_count // 5)  # workloads whose pods go round the nodes once
    period = (containers // 10) // gpu_workloads if gpu_workloads else 0  # one GPU run in this many
    index, given = 0, 0
    remaining = containers
    while remaining > 0:
        replicas, per_pod = (5, 2) if remaining >= 10 else (remaining, 1)
        on_gpu = per_pod == 2 and given < gpu_workloads and (index // run) % period == 0
        doc["workloads"].append(_workload(index, namespaces, replicas, per_pod, on_gpu))
        given += on_gpu
        remaining -= replicas * per_pod
        index += 1
    if given != gpu_workloads:
        raise ValueError(f"{gpu_containers} GPU containers do not fit {containers} containers' workloads")
    source = f"synthetic({containers}" + (f", {gpu_containers} on GPUs)" if gpu_containers else ")")
    return parse_scenario(doc, source=source)


def _workload(index: int, namespaces: int, replicas: int, per_pod: int, on_gpu: bool = False) -> dict[str, Any]:
    request_cpu = 0.1 + (index % 8) * 0.05
    request_ram = 0.25 + (index % 4) * 0.25
    scale = 0.4 + (index % 5) * 0.3  # some under-use their requests, some burst above them
    shift = index % 24
    profile = [round(request_cpu * scale * _DAY_SHAPE[(h + shift) % 24], 4) for h in range(24)]
    workload: dict[str, Any] = {
        "namespace": f"ns-{index % namespaces:03d}",
        "kind": "Deployment",
        "name": f"app-{index:05d}",
        "replicas": replicas,
        "containers": [
            {
                "name": "app" if c == 0 else "sidecar",
                "request": {"cpu": request_cpu if c == 0 else 0.05, "ramGiB": request_ram if c == 0 else 0.125},
                "usage": {"cpu": profile if c == 0 else 0.02, "ramGiB": round(request_ram * scale * 0.8, 4)},
            }
            for c in range(per_pod)
        ],
    }
    if on_gpu:  # the app container asks for a turn on its node's GPU and keeps it 2 to 8 % busy
        app = workload["containers"][0]
        app["request"]["gpu"] = 1
        app["usage"]["gpu"] = round(0.02 + (index % 5) * 0.015, 3)
    if index % 7 == 0:
        workload["pvs"] = [{"name": f"pvc-app-{index:05d}", "sizeGiB": 10 + index % 50}]
    if index % 13 == 0:
        workload["loadBalancers"] = [{"name": f"lb-{index:05d}", "hourly": "0.025"}]
    if index % 3 == 0:
        workload["networkBytesPerHour"] = {"transfer": 5_000_000 * (1 + index % 4), "receive": 8_000_000}
    if index % 8 == 1:
        workload["costAdjustment"] = {"cpu": -0.12, "ram": -0.05}
    elif index % 8 == 5:
        workload["costAdjustment"] = {"cpu": 0.03, "pv": 0.1, "network": 0.2, "loadBalancer": 0.04}
    return workload
