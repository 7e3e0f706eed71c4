"""Which allocation rows a Subscription's ``usageSources`` select.

Fields AND within an entry, entries OR. ``Pod`` matches the pod's name and adds no kind filter;
other kinds match OpenCost's controller kind and name (OpenCost reports a CronJob's pods as
``job`` with the CronJob's name). An entry without a namespace means the Subscription's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

KINDS = {
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "DaemonSet": "daemonset",
    "Job": "job",
    "CronJob": "job",
    "ReplicaSet": "replicaset",
}


def namespaces(sources: Sequence[Mapping[str, Any]], default: str) -> list[str]:
    return sorted({str(s.get("namespace") or default) for s in sources})


def matches(row: Mapping[str, Any], sources: Sequence[Mapping[str, Any]], default: str) -> bool:
    for source in sources:
        if row.get("namespace") != (source.get("namespace") or default):
            continue
        kind, name = source.get("resourceType"), source.get("name")
        if kind == "Pod":
            if name is None or row.get("pod") == name:
                return True
            continue
        if kind is not None and row.get("controller_kind") != KINDS.get(str(kind)):
            continue
        if name is not None and row.get("controller") != name:
            continue
        return True
    return False
