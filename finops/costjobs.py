"""CostJobs, the operator's scheduling resource: intervals to cron schedules, and timeouts.

The operator matched ``spec.interval`` (a Go duration, parsed) against six values and silently
ran anything else daily. Here every interval that maps cleanly onto cron gets its schedule (every
N minutes where N divides 60, every N hours where N divides 24, daily), and any other interval is
refused with a clear error, never a silent daily run. ``60m`` is ``1h``: the match is on the
parsed duration.

Of the CostJob's timeouts, five are honoured by the function for runs pinged on the CostJob's
behalf; ``databaseViewsRefreshTimeout`` (a no-op since the operator dropped its view) and
``httpClientTimeout`` (never used by the operator) are accepted and reported as ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from finops.errors import InvalidInput

_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 0.000001, "µs": 0.000001, "ns": 0.000000001}
_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")

HONOURED_TIMEOUTS = (
    "databaseInitTimeout",
    "kubernetesOperationTimeout",
    "openCostFetchTimeout",
    "databaseInsertTimeout",
    "statusUpdateTimeout",
)
IGNORED_TIMEOUTS = ("databaseViewsRefreshTimeout", "httpClientTimeout")
TYPES = {"ResourceCostCollection": "collect-allocations", "SubscriptionChargeCollection": "collect-charges"}


def parse_duration(value: object, *, field: str) -> float:
    """A Go duration (``1h``, ``90m``, ``1h30m``, ``2m30s``) in seconds; ``field`` names it in errors."""
    if not isinstance(value, str) or not value or _PART.sub("", value) != "":
        raise InvalidInput(f"{field}: {value!r} is not a duration such as 1h, 30m or 1h30m")
    return sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(value))


def schedule_for(interval: str, *, field: str = "spec.interval") -> str:
    """The cron schedule of an interval, or ``InvalidInput`` when cron cannot express it."""
    seconds = parse_duration(interval, field=field)
    if seconds <= 0 or seconds % 60:
        raise InvalidInput(f"{field}: {interval!r} is not a whole number of minutes; cron runs at most once a minute")
    minutes = int(seconds // 60)
    if minutes == 1:
        return "* * * * *"
    if minutes < 60 and 60 % minutes == 0:
        return f"*/{minutes} * * * *"
    if minutes % 60 == 0:
        hours = minutes // 60
        if hours == 1:
            return "0 * * * *"
        if hours == 24:
            return "0 0 * * *"
        if hours < 24 and 24 % hours == 0:
            return f"0 */{hours} * * *"
    raise InvalidInput(
        f"{field}: {interval!r} cannot be scheduled evenly with cron (use minutes that divide 60, "
        "hours that divide 24, or 24h); it is refused rather than run daily"
    )


@dataclass(frozen=True)
class CostJobSpec:
    namespace: str
    name: str
    type: str
    interval: str
    schedule: str
    timeouts: Mapping[str, float] = field(default_factory=dict)  # honoured, in seconds
    ignored: tuple[str, ...] = ()  # present but not honoured (reported)
    resources: Mapping[str, Any] | None = None

    @property
    def target_service(self) -> str:
        return TYPES[self.type]


def parse_costjob(obj: Mapping[str, Any]) -> CostJobSpec:
    """Validate a CostJob object; errors name the field."""
    meta = obj.get("metadata") or {}
    where = f"CostJob {meta.get('namespace', '')}/{meta.get('name', '')}"
    spec = obj.get("spec") or {}
    kind = spec.get("type", "ResourceCostCollection")
    if kind not in TYPES:
        raise InvalidInput(f"{where}: spec.type {kind!r} is not one of {', '.join(TYPES)}")
    interval = spec.get("interval", "24h")
    try:
        schedule = schedule_for(str(interval))
        timeouts = {
            name: parse_duration(spec[name], field=f"spec.{name}") for name in HONOURED_TIMEOUTS if name in spec
        }
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc.message}") from exc
    resources = spec.get("resources")
    if resources is not None and not isinstance(resources, Mapping):
        raise InvalidInput(f"{where}: spec.resources must be a ResourceRequirements object")
    return CostJobSpec(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        type=kind,
        interval=str(interval),
        schedule=schedule,
        timeouts=timeouts,
        ignored=tuple(name for name in IGNORED_TIMEOUTS if name in spec),
        resources=resources,
    )
