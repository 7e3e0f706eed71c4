"""Subscriptions: the four activation gates, activation once, and terminal deactivation.

Gates run in order on every reconcile; the first failure is the ``Ready=False`` reason:

1. the Offering exists and is ready (``OfferingNotFound``, ``OfferingNotReady``);
2. the parent exists, is not deactivated and is ready (``ParentSubscriptionNotFound``,
   ``ParentSubscriptionDeactivated``, ``ParentSubscriptionNotReady``);
3. the Offering's required offerings are covered by an active member of the same family (same
   ``compatibilityRoot``), excluding this Subscription and its descendants
   (``CompatibilityRequirementNotMet``);
4. the target exists, and is not the Subscription itself (``TargetNotFound``,
   ``TargetIsSelfReference``).

``activatedAt`` is set once. An active Subscription with a transient failure (an Offering or parent
that is not ready) keeps billing; deactivation is terminal and has one of four causes:
``ParentDeactivated`` (unless the lifecycle says ``Orphan``), ``CompatibilityRequirementNotMet``,
``TargetNotFound``, ``MarkedForDeletion``. ``deactivatedAt`` is the raw instant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

FINALIZER = "subscriptions.finops.stakater.com/finalizer"
DEACTIVATING = frozenset({"ParentDeactivated", "CompatibilityRequirementNotMet", "TargetNotFound"})

Ref = tuple[str, str]  # (namespace, name)
Obj = Mapping[str, Any]


def meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def ref_of(obj: Obj) -> Ref:
    return (str(meta(obj).get("namespace", "")), str(meta(obj).get("name", "")))


def reference(spec_ref: Mapping[str, Any] | None, default_namespace: str) -> Ref | None:
    """A ``{name, namespace}`` reference; an absent namespace is the referring object's."""
    if not spec_ref or not spec_ref.get("name"):
        return None
    return (str(spec_ref.get("namespace") or default_namespace), str(spec_ref["name"]))


def is_ready(obj: Obj | None) -> bool:
    if obj is None:
        return False
    status = obj.get("status") or {}
    if status.get("ready") in ("True", True):  # the CRDs' string; a boolean from older writers
        return True
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def is_active(sub: Obj) -> bool:
    status = sub.get("status") or {}
    return bool(status.get("activatedAt")) and not status.get("deactivatedAt")


@dataclass(frozen=True)
class Gate:
    ok: bool
    reason: str
    message: str


PASS = Gate(True, "ActivationSucceeded", "all activation gates passed")


@dataclass
class World:
    """The objects the gates look at, indexed by (namespace, name). ``subscriptions`` needs to hold
    a Subscription's parent chain and, when its Offering requires others, its family (every
    Subscription under the same top of the chain); the indexes below are built once, so the gates
    of every Subscription of a cluster cost linear time, not quadratic."""

    offerings: Mapping[Ref, Obj]
    subscriptions: Mapping[Ref, Obj]
    target_exists: Callable[[Mapping[str, Any]], bool]
    _roots: dict[Ref, str] = field(default_factory=dict, init=False, repr=False)
    _children: dict[Ref, list[Ref]] | None = field(default=None, init=False, repr=False)
    _families: dict[str, list[Ref]] | None = field(default=None, init=False, repr=False)

    def parent_of(self, sub: Obj) -> Ref | None:
        parent = ((sub.get("spec") or {}).get("parent") or {}).get("subscriptionRef")
        return reference(parent, ref_of(sub)[0])

    def root_uid(self, sub: Obj) -> str:
        """The uid of the top of the parent chain (the family)."""
        mine = ref_of(sub)
        if mine in self._roots and self.subscriptions.get(mine) is sub:
            return self._roots[mine]
        current, seen = sub, set()
        while (parent := self.parent_of(current)) is not None and parent in self.subscriptions and parent not in seen:
            seen.add(parent)
            current = self.subscriptions[parent]
        root = str(meta(current).get("uid", ""))
        if self.subscriptions.get(mine) is sub:
            self._roots[mine] = root
        return root

    def family(self, root: str) -> list[Ref]:
        """Every Subscription whose chain tops at ``root``."""
        if self._families is None:
            self._families = {}
            for ref, other in self.subscriptions.items():
                self._families.setdefault(self.root_uid(other), []).append(ref)
        return self._families.get(root, [])

    def descendants(self, sub: Obj) -> set[Ref]:
        if self._children is None:
            self._children = {}
            for ref, other in self.subscriptions.items():
                if (parent := self.parent_of(other)) is not None:
                    self._children.setdefault(parent, []).append(ref)
        found: set[Ref] = set()
        todo = list(self._children.get(ref_of(sub), []))
        while todo:
            ref = todo.pop()
            if ref not in found:
                found.add(ref)
                todo.extend(self._children.get(ref, []))
        return found


def gates(sub: Obj, world: World) -> Gate:
    """The first failing gate, or ``PASS``."""
    namespace = ref_of(sub)[0]
    spec = sub.get("spec") or {}
    offering_ref = reference(spec.get("offeringRef"), namespace)
    offering = world.offerings.get(offering_ref) if offering_ref else None
    if offering is None:
        return Gate(False, "OfferingNotFound", f"Offering {_show(offering_ref)} not found")
    if not is_ready(offering):
        return Gate(False, "OfferingNotReady", f"Offering {_show(offering_ref)} is not ready")
    parent_ref = world.parent_of(sub)
    if parent_ref is not None:
        parent = world.subscriptions.get(parent_ref)
        if parent is None:
            return Gate(False, "ParentSubscriptionNotFound", f"parent Subscription {_show(parent_ref)} not found")
        if (parent.get("status") or {}).get("deactivatedAt"):
            return Gate(
                False, "ParentSubscriptionDeactivated", f"parent Subscription {_show(parent_ref)} is deactivated"
            )
        if not is_ready(parent):
            return Gate(False, "ParentSubscriptionNotReady", f"parent Subscription {_show(parent_ref)} is not ready")
    required = ((offering.get("spec") or {}).get("compatibility") or {}).get("requiredOfferings") or []
    if required:
        root = world.root_uid(sub)
        excluded = world.descendants(sub) | {ref_of(sub)}
        covered = {
            reference((world.subscriptions[ref].get("spec") or {}).get("offeringRef"), ref[0])
            for ref in world.family(root)
            if ref not in excluded and is_active(world.subscriptions[ref])
        }
        for need in required:
            wanted = reference(need, namespace)
            if wanted not in covered:
                return Gate(
                    False,
                    "CompatibilityRequirementNotMet",
                    f"required Offering {_show(wanted)} has no active Subscription in this family",
                )
    target = (spec.get("lifecycle") or {}).get("targetRef")
    if target:
        target_ns = str(target.get("namespace") or namespace)
        if target.get("kind") == "Subscription" and (target_ns, target.get("name")) == ref_of(sub):
            return Gate(False, "TargetIsSelfReference", "the target is the Subscription itself")
        if not world.target_exists({**target, "namespace": target_ns}):
            return Gate(
                False, "TargetNotFound", f"target {target.get('kind')} {target_ns}/{target.get('name')} not found"
            )
    return PASS


def deactivation_cause(sub: Obj, gate: Gate, world: World) -> str | None:
    """Why an active Subscription deactivates now, or None (it keeps billing)."""
    if meta(sub).get("deletionTimestamp"):
        return "MarkedForDeletion"
    if gate.ok or gate.reason not in DEACTIVATING | {"ParentSubscriptionDeactivated"}:
        return None
    if gate.reason == "ParentSubscriptionDeactivated":
        return None if _orphans(sub, world) else "ParentDeactivated"
    return gate.reason


def _orphans(sub: Obj, world: World) -> bool:
    """``onParentDeactivate: Orphan`` on the Subscription, else on its Offering (default Deactivate)."""
    own = ((sub.get("spec") or {}).get("lifecycle") or {}).get("onParentDeactivate")
    if own:
        return bool(own == "Orphan")
    offering_ref = reference((sub.get("spec") or {}).get("offeringRef"), ref_of(sub)[0])
    offering = world.offerings.get(offering_ref) if offering_ref else None
    lifecycle = ((offering or {}).get("spec") or {}).get("lifecycle") or {}
    return bool(lifecycle.get("onParentDeactivate") == "Orphan")


def _show(ref: Ref | None) -> str:
    return "<unset>" if ref is None else f"{ref[0]}/{ref[1]}"
