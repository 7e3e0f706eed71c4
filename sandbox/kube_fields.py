"""How the sandbox cluster writes a scenario's values as Kubernetes fields: quantities, the
deterministic ``metadata.uid``, owner references, a container's ``resources`` and a CronJob's
``schedule``. ``sandbox.cluster`` builds the objects from them; tests check them one by one."""

from __future__ import annotations

import uuid
from typing import Any

from sandbox.opencost.scenario import Container

Obj = dict[str, Any]

_UIDS = uuid.UUID("6f0c3f4e-8d2a-5b1e-9c47-0e5a2d7b9f13")  # namespace of the uuid5 object uids
_GIB = 1024**3


def cpu_quantity(cores: float) -> str:
    """Cores as a Kubernetes quantity: ``2``, ``500m``."""
    milli = round(cores * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def memory_quantity(gib: float) -> str:
    """GiB as a Kubernetes quantity in the largest exact binary unit: ``4Gi``, ``512Mi``, bytes."""
    size = round(gib * _GIB)
    for unit, factor in (("Gi", _GIB), ("Mi", 1024**2), ("Ki", 1024)):
        if size % factor == 0 and size:
            return f"{size // factor}{unit}"
    return str(size)


def object_uid(cluster: str, kind: str, namespace: str | None, name: str) -> str:
    """The deterministic ``metadata.uid`` of an object of the scenario's cluster."""
    return str(uuid.uuid5(_UIDS, f"{cluster}/{kind}/{namespace or ''}/{name}"))


def owner_reference(owner: Obj) -> Obj:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def container_resources(container: Container) -> Obj:
    """A container's ``resources``: its scenario requests and limits as quantities."""
    requests: dict[str, str] = {}
    if container.request.cpu:
        requests["cpu"] = cpu_quantity(container.request.cpu)
    if container.request.ram_gib:
        requests["memory"] = memory_quantity(container.request.ram_gib)
    if container.request.gpu:
        requests["nvidia.com/gpu"] = cpu_quantity(container.request.gpu)
    limits: dict[str, str] = {}
    if container.limit.cpu:
        limits["cpu"] = cpu_quantity(container.limit.cpu)
    if container.limit.ram_gib:
        limits["memory"] = memory_quantity(container.limit.ram_gib)
    resources: Obj = {"requests": requests} if requests else {}
    return {**resources, "limits": limits} if limits else resources


def cron_expression(every: int, offset: int) -> str:
    """A crontab line for runs at ``k * every + offset`` epoch seconds (``@every`` if none fits)."""
    off = offset % every
    if every % 60 or off % 60 or 86400 % every:
        return f"@every {every}s"
    minute, hour = (off // 60) % 60, off // 3600
    if every < 3600:
        return f"{minute}-59/{every // 60} * * * *"
    if every == 3600:
        return f"{minute} * * * *"
    return f"{minute} {hour}-23/{every // 3600} * * *" if every < 86400 else f"{minute} {hour} * * *"
