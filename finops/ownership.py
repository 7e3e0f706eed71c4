"""Which pods an application owns: walk each pod's controller ownerReferences up to its root.

A Deployment owns its ReplicaSets' pods, a CronJob its Jobs' pods, an Argo Rollout its
ReplicaSets' pods; StatefulSets, DaemonSets and Jobs own their pods directly. A pod belongs to
the application when any object on its chain is a resource the application's sync listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Ref = tuple[str, str]  # (kind, name); everything is in one namespace


def _controller(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def owner_chain(pod: Mapping[str, Any], by_uid: Mapping[str, Mapping[str, Any]]) -> list[Ref]:
    """(kind, name) of the pod and each controller above it, nearest first."""
    meta = pod.get("metadata") or {}
    chain: list[Ref] = [("Pod", str(meta.get("name", "")))]
    current: Mapping[str, Any] = pod
    for _ in range(8):  # ownership is shallow; a cycle in bad data cannot loop forever
        ref = _controller(current)
        if ref is None:
            break
        chain.append((str(ref.get("kind", "")), str(ref.get("name", ""))))
        parent = by_uid.get(str(ref.get("uid", "")))
        if parent is None:
            break
        current = parent
    return chain


def owned_pods(
    resources: Iterable[Ref], pods: Iterable[Mapping[str, Any]], owners: Iterable[Mapping[str, Any]]
) -> set[str]:
    """Names of the ``pods`` whose ownership chain reaches one of ``resources``.

    ``owners`` are the intermediate objects (ReplicaSets, Jobs) of the same namespace, so the
    chain can be followed past them to Deployments, Rollouts and CronJobs.
    """
    wanted = set(resources)
    by_uid = {str((o.get("metadata") or {}).get("uid")): o for o in owners}
    return {chain[0][1] for pod in pods if wanted.intersection(chain := owner_chain(pod, by_uid))}
