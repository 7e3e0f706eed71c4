"""Which cluster, and which of its resources, a bill line is (step 1 of ``finops.reconciliation``).

A usage line whose resource id matches the ``providerID`` of one of a cluster's nodes, disks or
load balancers is that resource's. Ids match when equal after dropping a scheme (``aws://``),
leading slashes and case, or when one ends with ``/`` + the other (``aws:///eu-west-1a/i-0abc`` is
billed as ``i-0abc``). Other lines are the cluster's their tags name (``Reconciliation.
cluster_of_tags``); lines of no cluster stay direct costs.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping

from finops.reconcile_policy import Reconciliation
from finops.reconciliation import Asset, BillCharge

_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def normalise_id(value: str) -> str:
    return _SCHEME.sub("", value.strip()).lstrip("/").lower()


def ids_match(provider_id: str, billed_id: str) -> bool:
    a, b = normalise_id(provider_id), normalise_id(billed_id)
    return bool(a and b) and (a == b or a.endswith("/" + b) or b.endswith("/" + a))


class ResourceIndex:
    """The resources of every cluster, found by a bill line's resource id."""

    def __init__(self, assets: Mapping[str, Iterable[Asset]]) -> None:
        self._by_tail: dict[str, list[tuple[str, str, str, str]]] = defaultdict(list)
        seen: set[tuple[str, str, str, str]] = set()
        for cluster, items in assets.items():
            for asset in items:
                entry = (cluster, asset.kind, asset.name, asset.provider_id)
                if asset.provider_id and entry not in seen:
                    seen.add(entry)
                    self._by_tail[normalise_id(asset.provider_id).rpartition("/")[2]].append(entry)

    def find(self, resource_id: str | None) -> tuple[str, str, str] | None:
        """(cluster, kind, name) of the resource billed as ``resource_id``; None when unknown."""
        if not resource_id:
            return None
        for cluster, kind, name, provider_id in self._by_tail.get(normalise_id(resource_id).rpartition("/")[2], ()):
            if ids_match(provider_id, resource_id):
                return cluster, kind, name
        return None


def assign(
    charges: Iterable[BillCharge], index: ResourceIndex, policy: Reconciliation, clusters: frozenset[str]
) -> tuple[dict[str, list[tuple[BillCharge, tuple[str, str] | None]]], list[BillCharge]]:
    """Each line to its cluster, with the (kind, name) of the resource it bills when it bills one;
    lines of no cluster are returned apart (they stay direct costs)."""
    mine: dict[str, list[tuple[BillCharge, tuple[str, str] | None]]] = defaultdict(list)
    direct: list[BillCharge] = []
    for charge in charges:
        found = index.find(charge.resource_id)
        if found is not None and found[0] in clusters:
            mine[found[0]].append((charge, (found[1], found[2]) if charge.category == "usage" else None))
            continue
        cluster = policy.cluster_of_tags(charge.tags, charge.account, clusters)
        if cluster is None:
            direct.append(charge)
        else:
            mine[cluster].append((charge, None))
    return mine, direct
