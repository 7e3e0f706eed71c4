"""Exact money: integer micros (10^-6 of a currency unit) and Decimal, never float.

OpenCost sends costs as JSON numbers rounded to five decimals; they are parsed straight into
``Decimal`` (never through ``float``), so converting them to micros is exact. PriceBook rates are
decimal strings. Anything with more than six decimals is rounded half-even, once, here.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from finops.errors import InvalidInput

MICROS_PER_UNIT = 1_000_000
# Largest amount a PostgreSQL bigint holds in micros: about 9.2e12 currency units.
MAX_MICROS = 2**63 - 1

_RATE_PATTERN = re.compile(r"^([0-9]+(\.[0-9]+)?)?$")


def to_micros(amount: Decimal | int) -> int:
    """An exact decimal amount as integer micros, rounded half-even beyond six decimals."""
    # round() of a Decimal rounds half-even to an int; scaleb is exact. Both are hot (ingest).
    micros = round(amount.scaleb(6)) if isinstance(amount, Decimal) else amount * MICROS_PER_UNIT
    if not -MAX_MICROS <= micros <= MAX_MICROS:
        raise InvalidInput(f"amount {amount} is too large to store in micros")
    return micros


def cost_micros(amount: Decimal | None, adjustment: Decimal | None = None) -> int | None:
    """A measured cost plus its adjustment, in micros; None when the cost was not measured
    (OpenCost sends NaN as null), so "unknown" never turns into 0."""
    if amount is None:
        return None
    return to_micros(amount + adjustment if adjustment else amount)


def from_micros(micros: int) -> Decimal:
    """Integer micros back to a Decimal amount (exact)."""
    return Decimal(micros).scaleb(-6)


def parse_rate(field: str, value: object) -> int:
    """A PriceBook rate (a decimal string such as ``"0.031611"``; empty means unset) in micros.

    Raises ``InvalidInput`` naming ``field`` for anything else: negative numbers, exponents,
    floats given as YAML numbers that lost precision are all refused rather than guessed at.
    """
    if value is None or value == "":
        return 0
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidInput(f'{field}: must be a decimal string such as "0.031611", got {value!r}')
    text = str(value).strip()
    if not _RATE_PATTERN.match(text):
        raise InvalidInput(f"{field}: {text!r} is not a non-negative decimal string")
    try:
        return to_micros(Decimal(text))
    except (InvalidOperation, InvalidInput) as exc:
        raise InvalidInput(f"{field}: {text!r} is too large to store in micros") from exc


def format_amount(micros: int, places: int = 2) -> str:
    """Micros as a decimal string rounded half-even to ``places`` (for display only)."""
    quantum = Decimal(1).scaleb(-places)
    return str(from_micros(micros).quantize(quantum, rounding=ROUND_HALF_EVEN))
