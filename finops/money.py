"""Exact money: integer micros (10^-6 of a currency unit) and Decimal, never float.

OpenCost sends costs as JSON numbers rounded to five decimals; they are parsed straight into
``Decimal`` (never through ``float``), so converting them to micros is exact. Anything with more
than six decimals is rounded half-even, once, here.

PriceBook rates are the exception: they are never rounded. OpenCost prices with the full value
(storage at 0.00005479452 per GiB-hour), so a rate kept in micros (55) would make metered billing
disagree with showback. ``parse_rate`` keeps the exact ``Decimal``, in currency units per unit;
the only rounding is of each charged amount (``finops.usage``).
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Decimal

from finops.errors import InvalidInput

MICROS_PER_UNIT = 1_000_000
# Largest amount a PostgreSQL bigint holds in micros: about 9.2e12 currency units.
MAX_MICROS = 2**63 - 1

# The largest PriceBook rate: 12 integer digits and 15 decimal places (27 significant digits, so a
# rate is exact in PostgreSQL numeric, in Decimal's default 28-digit context and as micros, < 10^18).
RATE_MAX_INTEGER_DIGITS = 12
RATE_MAX_PLACES = 15
_RATE_PATTERN = re.compile(r"^([0-9]+)(?:\.([0-9]+))?$")


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


def parse_rate(field: str, value: object) -> Decimal:
    """A PriceBook rate (a decimal string such as ``"0.00005479452"``; empty means unset, 0) as an
    exact ``Decimal`` in currency units per unit. Never rounded.

    Representable: a non-negative decimal string (or an int) with at most
    ``RATE_MAX_INTEGER_DIGITS`` (12) integer digits and ``RATE_MAX_PLACES`` (15) decimal places;
    leading zeros of the integer part and trailing zeros of the decimals do not count, since they
    change nothing. Anything else raises ``InvalidInput`` naming ``field``: negative numbers,
    exponents, floats (YAML numbers, which may already have lost precision), other types, and
    rates beyond those limits are refused rather than guessed at.
    """
    if value is None or value == "":
        return Decimal(0)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidInput(f'{field}: must be a decimal string such as "0.031611", got {value!r}')
    text = str(value).strip()
    match = _RATE_PATTERN.fullmatch(text)
    if not match:
        raise InvalidInput(f"{field}: {text!r} is not a non-negative decimal string")
    digits, places = match[1].lstrip("0"), (match[2] or "").rstrip("0")
    if len(digits) > RATE_MAX_INTEGER_DIGITS:
        raise InvalidInput(f"{field}: {text!r} has more than {RATE_MAX_INTEGER_DIGITS} integer digits")
    if len(places) > RATE_MAX_PLACES:
        raise InvalidInput(f"{field}: {text!r} has more than {RATE_MAX_PLACES} decimal places")
    return Decimal(text)  # from text: exact, whatever the context


def rate_text(rate: Decimal) -> str:
    """A rate's canonical decimal string: no exponent, no trailing zeros ("0.10" and "0.1" agree)."""
    text = f"{rate:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_amount(micros: int, places: int = 2) -> str:
    """Micros as a decimal string rounded half-even to ``places`` (for display only)."""
    quantum = Decimal(1).scaleb(-places)
    return str(from_micros(micros).quantize(quantum, rounding=ROUND_HALF_EVEN))
