"""What a line of a chargeback report stands for: the key (``--by``), the kind, and their order."""

from __future__ import annotations

from enum import StrEnum

from finops.errors import InvalidInput

SHARED = "__shared__"
CLOUD = "__cloud__"  # the one line of direct costs in a report by namespace


class LineKey(StrEnum):
    """What one line of the report stands for (``--by``)."""

    TEAM = "team"
    COST_CENTER = "cost-center"
    NAMESPACE = "namespace"


class LineKind(StrEnum):
    """Owner lines, and the three lines the method keeps visible beside them."""

    OWNER = "owner"
    UNALLOCATED = "unallocated"
    SHARED = "shared"
    IDLE = "idle"
    CLOUD = "cloud"  # direct costs in a report by namespace
    UNRECONCILED = "unreconciled"  # bill lines of a cluster matching none of its resources


KIND_ORDER = {
    LineKind.OWNER: 0,
    LineKind.UNALLOCATED: 1,
    LineKind.UNRECONCILED: 2,
    LineKind.CLOUD: 3,
    LineKind.SHARED: 4,
    LineKind.IDLE: 5,
}
RECEIVERS = (LineKind.OWNER, LineKind.UNALLOCATED, LineKind.CLOUD)
LineId = tuple[LineKind, str]  # a line as (kind, owner): what a ``Line`` of the report stands for


def parse_line_key(value: str) -> LineKey:
    """``--by``: team, cost-center or namespace."""
    for key in LineKey:
        if value == key.value:
            return key
    raise InvalidInput(f"by: {value!r} is not one of {', '.join(key.value for key in LineKey)}")
