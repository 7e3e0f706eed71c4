"""OpenCost's special allocation names, and how we classify a stored allocation row."""

from __future__ import annotations

from enum import StrEnum

from finops.errors import InvalidInput
from finops.labels import validate_label_key

IDLE = "__idle__"
UNALLOCATED = "__unallocated__"
UNMOUNTED = "__unmounted__"

DEFAULT_AGGREGATION = "namespace,controllerKind,controller,pod,container"

# One container, (namespace, pod, container): the key of the figures the Prometheus source reads
# per container (its series' labels) and the collector joins to the hour's rows.
Container = tuple[str, str, str]


class EntryKind(StrEnum):
    """What one allocation row stands for."""

    WORKLOAD = "workload"  # cost of pods and containers
    IDLE = "idle"  # node capacity nobody requested or used (OpenCost's ``__idle__``)
    UNMOUNTED = "unmounted"  # volumes and load balancers no pod uses


def entry_kind(name: str) -> EntryKind:
    """Classify an allocation by its aggregation key (e.g. ``shop/__unmounted__/...``)."""
    parts = name.split("/")
    if IDLE in parts:
        return EntryKind.IDLE
    if UNMOUNTED in parts:
        return EntryKind.UNMOUNTED
    # A bare pod's ``__unallocated__`` controller is still a workload's cost.
    return EntryKind.WORKLOAD


AGGREGATION_FIELDS = frozenset(
    {"cluster", "node", "namespace", "controllerKind", "controller", "service", "pod", "container"}
)


def parse_aggregation(value: str) -> str:
    """Validate an ``aggregate`` setting; returns it normalised (no spaces)."""
    fields = [part.strip() for part in value.split(",") if part.strip()]
    if not fields:
        raise InvalidInput("aggregation: must name at least one field")
    for item in fields:
        if item.startswith("label:"):
            validate_label_key(item.removeprefix("label:"), field=f"aggregation {item!r}")
        elif item not in AGGREGATION_FIELDS:
            raise InvalidInput(
                f"aggregation: {item!r} is not one of {', '.join(sorted(AGGREGATION_FIELDS))} or label:<key>"
            )
    return ",".join(fields)
