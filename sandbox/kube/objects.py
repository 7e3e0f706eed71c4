"""The apiserver's rules for how an object may change, as pure functions over dicts.

Controllers in the product rely on apiserver invariants, not just on storage: ``generation``
moves only when the desired state changes (and once when deletion starts), so
``status.observedGeneration`` means something;
the main resource cannot overwrite ``status`` and the ``/status`` subresource cannot
overwrite anything else, so a reconciler and a user never clobber each other; fields the
server owns (``uid``, ``creationTimestamp``, ``deletionTimestamp``) cannot be forged; and once
deletion has started, finalizers may only be removed.
"""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from typing import Any

from sandbox.kube import errors
from sandbox.kube.resources import ResourceType

Obj = dict[str, Any]

# Metadata fields only the server writes; a client's values are ignored on every write.
SERVER_OWNED_METADATA = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
)
_NOT_DESIRED_STATE = ("apiVersion", "kind", "metadata", "status")


def check_identity(resource: ResourceType, namespace: str | None, name: str, body: Obj) -> None:
    """A body may omit its name and namespace but must not contradict the URL (422)."""
    meta = body.get("metadata") or {}
    body_name = meta.get("name")
    if body_name and body_name != name:
        why = f"metadata.name: Invalid value: {body_name!r}: does not match the name in the URL"
        raise errors.invalid(resource.group, resource.plural, name, why)
    body_namespace = meta.get("namespace")
    if namespace and body_namespace and body_namespace != namespace and resource.namespaced is not False:
        why = f"metadata.namespace: Invalid value: {body_namespace!r}: does not match the namespace in the URL"
        raise errors.invalid(resource.group, resource.plural, name, why)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def metadata(obj: Obj) -> Obj:
    """The object's metadata, created if missing (for writing)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    return meta


def desired_state(obj: Obj) -> Obj:
    """Everything ``generation`` tracks: the object minus metadata, status and type."""
    return {k: v for k, v in obj.items() if k not in _NOT_DESIRED_STATE}


def finalizers(obj: Obj) -> list[str]:
    found = (obj.get("metadata") or {}).get("finalizers") or []
    return [str(f) for f in found]


def is_deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def initialise(obj: Obj, resource_version: str, *, keep_identity: bool = False) -> Obj:
    """Fill in the server-owned metadata of a newly created object (in place).

    ``keep_identity`` (seeding only, never a client's request) keeps a given ``uid`` and
    ``creationTimestamp``, so seeded objects can name each other in ``ownerReferences``.
    """
    meta = metadata(obj)
    kept = {f: meta[f] for f in ("uid", "creationTimestamp") if keep_identity and isinstance(meta.get(f), str)}
    for field in SERVER_OWNED_METADATA:
        meta.pop(field, None)
    meta["uid"] = kept.get("uid") or str(uuid.uuid4())
    meta["creationTimestamp"] = kept.get("creationTimestamp") or now_rfc3339()
    meta["resourceVersion"] = resource_version
    meta["generation"] = 1
    return obj


def stale_precondition(candidate: Obj, stored: Obj) -> bool:
    """True when the client named a resourceVersion and it is not the stored one."""
    wanted = (candidate.get("metadata") or {}).get("resourceVersion")
    return bool(wanted) and str(wanted) != stored["metadata"]["resourceVersion"]


def merge_main(stored: Obj, candidate: Obj) -> Obj:
    """The result of writing ``candidate`` to the main resource over ``stored``.

    The client owns everything except ``status`` and the server-owned metadata.
    """
    result = copy.deepcopy(candidate)
    meta = metadata(result)
    old_meta = stored["metadata"]
    for field in (*SERVER_OWNED_METADATA, "name", "namespace"):
        if field in old_meta:
            meta[field] = copy.deepcopy(old_meta[field])
        else:
            meta.pop(field, None)
    if "status" in stored:
        result["status"] = copy.deepcopy(stored["status"])
    else:
        result.pop("status", None)
    result["apiVersion"], result["kind"] = stored["apiVersion"], stored["kind"]
    if desired_state(result) != desired_state(stored):
        meta["generation"] = int(old_meta.get("generation", 1)) + 1
    return result


def merge_status(stored: Obj, candidate: Obj) -> Obj:
    """The result of writing ``candidate`` to the ``/status`` subresource over ``stored``."""
    result = copy.deepcopy(stored)
    if "status" in candidate:
        result["status"] = copy.deepcopy(candidate["status"])
    else:
        result.pop("status", None)
    return result


def added_finalizers(stored: Obj, result: Obj) -> list[str]:
    before = set(finalizers(stored))
    return [f for f in finalizers(result) if f not in before]


def mark_deleting(obj: Obj) -> Obj:
    """Start graceful deletion: the object stays until its finalizers are gone.

    Like the apiserver (``BeforeDelete``, and ``markAsDeleting`` in the generic registry), the
    start of deletion bumps ``generation`` of an object that has one, so a controller comparing
    ``status.observedGeneration`` sees that there is something new to act on.
    """
    meta = metadata(obj)
    if not is_deleting(obj) and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    meta["deletionTimestamp"] = now_rfc3339()
    meta["deletionGracePeriodSeconds"] = 0
    return obj


def strip_for_create(obj: Obj, *, keep_status: bool) -> Obj:
    """A deep copy of a create body with the fields a client may not set removed."""
    result = copy.deepcopy(obj)
    if not keep_status:
        result.pop("status", None)
    return result
