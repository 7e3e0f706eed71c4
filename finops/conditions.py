"""Kubernetes status conditions: set one, keeping ``lastTransitionTime`` when its status holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any


def rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_status(value: bool) -> str:
    """A condition's (and the CRDs' ``status.ready``) string form: ``True`` or ``False``."""
    return "True" if value else "False"


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    type_: str,
    status: bool,
    reason: str,
    message: str,
    *,
    now: datetime,
    generation: int | None = None,
) -> list[dict[str, Any]]:
    """The conditions with ``type_`` set; others unchanged, order kept."""
    value = condition_status(status)
    result: list[dict[str, Any]] = []
    found = False
    for condition in conditions or []:
        if condition.get("type") != type_:
            result.append(dict(condition))
            continue
        found = True
        same = condition.get("status") == value
        result.append(
            _condition(
                type_, value, reason, message, condition.get("lastTransitionTime") if same else None, now, generation
            )
        )
    if not found:
        result.append(_condition(type_, value, reason, message, None, now, generation))
    return result


def _condition(
    type_: str, value: str, reason: str, message: str, since: Any, now: datetime, generation: int | None
) -> dict[str, Any]:
    condition: dict[str, Any] = {
        "type": type_,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since or rfc3339(now),
    }
    if generation is not None:
        condition["observedGeneration"] = generation
    return condition


def get_condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_:
            return condition  # type: ignore[no-any-return]
    return None
