"""Which REST resource an ``apiVersion`` + ``kind`` names, asked of the API server's discovery.

A reference such as a Subscription's ``spec.lifecycle.targetRef`` names an object by
``apiVersion``/``kind``/``name``, but a request needs the resource's plural and whether it is
namespaced. Neither can be guessed: ``NetworkPolicy`` is ``networkpolicies``, ``Endpoints`` is
``endpoints``, and a CRD chooses its own plural and scope. The API server publishes both in the
APIResourceList of each group/version (``/api/v1``, ``/apis/{group}/{version}``), so
``resolve`` reads that list, once per group/version, through ``KubeClient.api_resources``.

Behaviour, in short:

- ``resolve("apps/v1", "Deployment")`` is ``ApiResource("apps", "v1", "deployments",
  "Deployment", True)``; the core group is ``""`` (``resolve("v1", "Namespace")``).
- A kind the group/version does not serve, and a group/version the server does not serve at
  all (404), are ``None``: not an error, since a CRD may be installed later.
- A malformed ``apiVersion`` (empty, more than one ``/``, not a DNS group or version) or an
  empty ``kind`` raises ``InvalidInput`` naming the field: no server could ever resolve it, so
  the caller should report it rather than wait for it to appear.
- Failures to reach or read the server (``KubernetesUnavailable``, ``PermanentError`` for a
  401/403) propagate and are not cached.
- Subresources (``pods/status``, ``deployments/scale``) are not resources of their own and are
  skipped.

Caching: each group/version's list is kept for the life of the ``Discovery`` (use
``discovery_for(kube)``: one per ``KubeClient`` for the whole process, which is how the
functions hold their client). A kind found stays found. A kind not found triggers one re-fetch
of its list, but only when the cached list is at least ``RECHECK_SECONDS`` (60 s) old, so a CRD
installed after the first look is found within a minute, while a reference to a kind that
never exists costs at most one request a minute. A kind removed later keeps resolving; the
request made with it then answers 404 (``NotFound``), which callers handle anyway. The cache is
a dict under a lock; the request itself is made outside the lock, so two threads missing the
same group/version at once may both fetch it (harmless: the lists are equal).

Discovery needs no Role rule (``infra.kube.operations``): RBAC grants it to every
authenticated user through the built-in ClusterRole ``system:discovery``.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from finops.errors import InvalidInput
from infra.kube.client import API_GROUP, API_VERSION

log = logging.getLogger(__name__)

RECHECK_SECONDS = 60.0


class ApiResourceSource(Protocol):
    """What ``Discovery`` needs of a client: ``KubeClient.api_resources``."""

    def api_resources(self, group: str, version: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class ApiResource:
    """A REST resource: where objects of ``kind`` live and whether they are namespaced."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` → ``("apps", "v1")``, ``"v1"`` → ``("", "v1")``; ``InvalidInput`` if malformed."""
    if not isinstance(api_version, str) or not api_version:
        raise InvalidInput(f"apiVersion is empty: expected 'v1' (core group) or 'group/version', got {api_version!r}")
    if api_version.count("/") > 1:
        raise InvalidInput(f"apiVersion {api_version!r} has more than one '/': expected 'v1' or 'group/version'")
    group, _, version = api_version.rpartition("/")
    if "/" in api_version and not API_GROUP.fullmatch(group):
        raise InvalidInput(f"apiVersion {api_version!r}: the API group {group!r} is not a DNS subdomain")
    if not API_VERSION.fullmatch(version):
        raise InvalidInput(f"apiVersion {api_version!r}: the version {version!r} is not a DNS label such as 'v1'")
    return group, version


@dataclass(frozen=True)
class _Listing:
    by_kind: dict[str, ApiResource]
    fetched_at: float


class Discovery:
    """``resolve(api_version, kind)`` through one client, each group/version's list fetched once."""

    def __init__(
        self,
        kube: ApiResourceSource,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kube = kube
        self._clock = clock
        self._lock = threading.Lock()
        self._listings: dict[tuple[str, str], _Listing] = {}

    def resolve(self, api_version: str, kind: str) -> ApiResource | None:
        """The resource serving ``kind`` at ``api_version``; ``None`` if the server has none.

        ``InvalidInput`` for a malformed ``apiVersion`` or an empty ``kind``; the client's errors
        (``KubernetesUnavailable``, ``PermanentError``) when discovery itself fails.
        """
        group, version = split_api_version(api_version)
        if not isinstance(kind, str) or not kind:
            raise InvalidInput(f"kind is empty (apiVersion {api_version!r}): name the kind of the object")
        with self._lock:
            listing = self._listings.get((group, version))
        if listing is not None:
            found = listing.by_kind.get(kind)
            if found is not None or self._clock() - listing.fetched_at < RECHECK_SECONDS:
                return found
        return self._fetch(group, version).by_kind.get(kind)

    def forget(self) -> None:
        """Drop every cached list (the next ``resolve`` of each group/version asks again)."""
        with self._lock:
            self._listings.clear()

    def _fetch(self, group: str, version: str) -> _Listing:
        entries = self._kube.api_resources(group, version)
        by_kind: dict[str, ApiResource] = {}
        for entry in entries:
            name, kind = entry.get("name"), entry.get("kind")
            if not isinstance(name, str) or not isinstance(kind, str) or not name or not kind or "/" in name:
                continue  # a subresource (pods/status) or an entry we cannot use
            by_kind.setdefault(kind, ApiResource(group, version, name, kind, entry.get("namespaced") is True))
        listing = _Listing(by_kind, self._clock())
        with self._lock:
            self._listings[(group, version)] = listing
        log.debug("kubernetes discovery: %d resources in %s", len(by_kind), f"{group}/{version}".lstrip("/"))
        return listing


_shared_lock = threading.Lock()
_shared: weakref.WeakKeyDictionary[Any, Discovery] = weakref.WeakKeyDictionary()


def discovery_for(kube: ApiResourceSource) -> Discovery:
    """The process's ``Discovery`` for ``kube`` (one per client object, dropped with the client).

    ``kube`` must be hashable and weak-referenceable, as ``KubeClient`` is; build a ``Discovery``
    directly around anything else.
    """
    with _shared_lock:
        found = _shared.get(kube)
        if found is None:
            found = _shared[kube] = Discovery(kube)
        return found


def resolve(kube: ApiResourceSource, api_version: str, kind: str) -> ApiResource | None:
    """``discovery_for(kube).resolve(api_version, kind)``: the cached, process-wide lookup."""
    return discovery_for(kube).resolve(api_version, kind)
