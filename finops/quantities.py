"""Kubernetes resource quantities (``"250m"``, ``"512Mi"``, ``"1.5Gi"``, ``"1e3"``), parsed exactly.

A quantity is what the API server and controllers such as the VerticalPodAutoscaler write for CPU
and memory. Rounding one through ``float`` would make a recommendation of ``"100Mi"`` come out a
byte off, so the value is a ``Fraction``: a signed decimal number, then at most one suffix, either
binary (``Ki`` = 1024 ... ``Ei`` = 1024^6), decimal SI (``n``, ``u``, ``m``, ``""``, ``k``, ``M``,
``G``, ``T``, ``P``, ``E``) or a decimal exponent (``e3``, ``E-2``), as
``k8s.io/apimachinery/pkg/api/resource`` defines them. Anything else is refused naming the field.
"""

from __future__ import annotations

import re
from fractions import Fraction

from finops.errors import InvalidInput

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exponent>[+-]?[0-9]+)|(?P<decimal>[numkMGTPE]?))"
)
MIB = 1024**2


def parse_quantity(field: str, value: object) -> Fraction:
    """``value`` (a quantity string, or an int) as an exact ``Fraction`` of its base unit (cores,
    bytes); ``InvalidInput`` naming ``field`` when it is not a Kubernetes quantity."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidInput(f"{field}: {value!r} is not a Kubernetes quantity such as '250m' or '512Mi'")
    text = str(value).strip()
    found = _QUANTITY.fullmatch(text)
    if found is None:
        raise InvalidInput(f"{field}: {text!r} is not a Kubernetes quantity such as '250m' or '512Mi'")
    number = Fraction(found["number"])
    if found["binary"]:
        return number * Fraction(1024) ** _BINARY[found["binary"]]
    if found["exponent"] is not None:
        exponent = int(found["exponent"])
        if abs(exponent) > 30:
            raise InvalidInput(f"{field}: {text!r} has an exponent beyond any resource quantity")
        return number * Fraction(10) ** exponent
    return number * Fraction(10) ** _DECIMAL[found["decimal"] or ""]
