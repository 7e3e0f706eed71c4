"""Amounts as the cost_api views show them: ``{"amount": "-2.73", "micros": -2731190}``."""

from __future__ import annotations

from typing import Any

from finops.money import format_amount


def money(micros: int) -> dict[str, Any]:
    """Exact integer micros and their display (two places, half-even)."""
    return {"amount": format_amount(micros), "micros": micros}
