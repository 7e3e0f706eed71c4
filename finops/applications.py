"""Argo CD Applications as the backfill sees them, and its retry schedule."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from finops.errors import InvalidInput
from finops.labels import is_object_name, validate_namespace
from finops.ownership import Ref

LOCAL_SERVERS = frozenset({"", "https://kubernetes.default.svc"})
LOCAL_NAMES = frozenset({"", "in-cluster"})
RETRY_DELAYS = (timedelta(minutes=1), timedelta(minutes=2), timedelta(minutes=4), timedelta(minutes=8))


@dataclass(frozen=True)
class Application:
    namespace: str
    name: str
    destination_namespace: str | None  # None: missing or not a valid namespace
    local: bool
    resources: tuple[Ref, ...]
    revision: str | None

    @property
    def identity(self) -> tuple[str, str]:
        return (self.namespace, self.name)


def is_local(server: str | None, name: str | None) -> bool:
    """Deploys to this cluster: server empty or the in-cluster URL, and name empty or ``in-cluster``."""
    return (server or "") in LOCAL_SERVERS and (name or "") in LOCAL_NAMES


def parse_application(obj: Mapping[str, Any]) -> Application:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    destination = spec.get("destination") or {}
    raw_ns = destination.get("namespace")
    try:
        dest_ns: str | None = validate_namespace(raw_ns) if raw_ns else None
    except InvalidInput:
        dest_ns = None
    resources = tuple(
        (r["kind"], r["name"])
        for r in status.get("resources") or []
        if isinstance(r, Mapping)
        and isinstance(r.get("kind"), str)
        and is_object_name(r["kind"], r.get("name"))  # an entry we cannot use is skipped
        and (r.get("namespace") or dest_ns) == dest_ns
    )
    revision = ((status.get("operationState") or {}).get("syncResult") or {}).get("revision") or (
        (status.get("sync") or {}).get("revision")
    )
    return Application(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        destination_namespace=dest_ns,
        local=is_local(destination.get("server"), destination.get("name")),
        resources=resources,
        revision=revision if isinstance(revision, str) else None,
    )


def next_retry(attempts: int) -> timedelta | None:
    """The wait before retry number ``attempts`` (1, 2, 4, 8 minutes), or None: give up."""
    return RETRY_DELAYS[attempts - 1] if 1 <= attempts <= len(RETRY_DELAYS) else None
