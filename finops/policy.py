"""The chargeback policy: who owns what, and what happens to idle and shared costs.

The method (docs/explanation/money-rules.md, "Idle and shared cost") asks for the idle/shared
policy to be agreed and written down before the first report, so it is a small document kept with
the platform's configuration::

    owner_label: team              # namespace label naming the owner (OpenCost's sanitised form works too)
    cost_center_label: cost-center
    idle: separate                 # separate (option B: own line) | distribute (option A)
    idle_owner: platform           # owner of the idle line when idle is separate
    shared:
      namespaces: [kube-system, monitoring, ingress-nginx]   # their allocated cost is shared cost
      fixed:                       # costs outside the nodes, per calendar month
        - {name: control-plane, amount: "73.00", cluster: prod-eu}
      split: proportional          # proportional (to allocated cost) | even
    currency: EUR
    require_complete: false        # true: refuse a period whose hours are not all final and priced
    reconciliation:                # the invoice: finops.reconcile_policy
      basis: estimate              # estimate | billed | amortised
    budgets:                       # per owner or cost centre, per month: finops.budgets
      - {owner: search, amount: "4000.00"}

The YAML is parsed at the edge; ``parse_policy`` validates the resulting plain dict. It reports
every error it finds at once, not only the first: one ``InvalidInput`` whose message has a line per
error, each starting with the key path (``policy.shared.fixed[0].amount``).
Rules worth knowing:

- unknown keys are refused at every level (a misspelt ``splitt`` must not silently mean the default);
- a key set to null (``fixed:`` with nothing after it) counts as absent, so its default applies;
- ``currency`` is required: three capital letters (ISO 4217 style); the other keys have defaults;
- an ``amount`` is a non-negative decimal string (``"73.00"``) or an integer, with at most six
  decimals (micros, the precision of every stored cost). YAML floats (``73.5`` unquoted) are
  refused, as PriceBook rates are: a float may already have lost the amount's precision;
- a fixed entry without ``cluster`` is charged once per cluster the report covers (a per-cluster
  fee written once); a cost to be paid once across all clusters names one cluster;
- the same fixed ``name`` may appear once per cluster; a namespace may be listed once;
- ``require_complete`` is a YAML boolean (``true``/``false``), default false: with true, every
  report under this policy refuses a period its hour ledger does not cover completely
  (``finops.coverage``), as ``--require-complete`` does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from functools import partial
from typing import TypeVar

from finops.budgets import Budget, parse_budgets
from finops.errors import InvalidInput
from finops.labels import validate_label_key, validate_namespace
from finops.money import from_micros, to_micros
from finops.reconcile_policy import Reconciliation, parse_reconciliation

_AMOUNT = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")
# A Kubernetes label value that is not empty: what an owner is called on the namespace.
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_MAX_DECIMALS = 6

_TOP_KEYS = (
    "owner_label",
    "cost_center_label",
    "idle",
    "idle_owner",
    "shared",
    "currency",
    "require_complete",
    "reconciliation",
    "budgets",
)
_SHARED_KEYS = ("namespaces", "fixed", "split")
_FIXED_KEYS = ("name", "amount", "cluster")

_Choice = TypeVar("_Choice", bound=StrEnum)
_Value = TypeVar("_Value")
_Fallback = TypeVar("_Fallback")


class IdlePolicy(StrEnum):
    """What happens to the capacity nobody requested or used."""

    SEPARATE = "separate"  # option B: its own line, owned by ``idle_owner``
    DISTRIBUTE = "distribute"  # option A: spread over the owners in proportion to allocated cost


class SharedSplit(StrEnum):
    """How the shared pool of a cluster is spread over the lines that have cost there."""

    PROPORTIONAL = "proportional"  # in proportion to each line's allocated cost
    EVEN = "even"  # the same amount to each line


@dataclass(frozen=True)
class FixedCost:
    """A shared cost outside the nodes (control-plane fee, a load balancer), per calendar month."""

    name: str
    amount_micros: int
    cluster: str | None = None  # None: charged once in every cluster the report covers

    def applies_to(self, cluster: str) -> bool:
        return self.cluster is None or self.cluster == cluster


@dataclass(frozen=True)
class SharedCosts:
    """What becomes shared cost, and how it is split."""

    namespaces: tuple[str, ...] = ()
    fixed: tuple[FixedCost, ...] = ()
    split: SharedSplit = SharedSplit.PROPORTIONAL


@dataclass(frozen=True)
class Policy:
    """A validated chargeback policy (see the module docstring for the document it comes from)."""

    currency: str
    owner_label: str = "team"
    cost_center_label: str = "cost-center"
    idle: IdlePolicy = IdlePolicy.SEPARATE
    idle_owner: str = "platform"
    shared: SharedCosts = SharedCosts()
    require_complete: bool = False  # refuse a period whose hours are not all final and priced
    reconciliation: Reconciliation = field(default_factory=Reconciliation)  # the basis and how bill lines find clusters
    budgets: tuple[Budget, ...] = ()  # monthly budgets per owner or cost centre

    def as_document(self) -> dict[str, object]:
        """The normalised policy as JSON-able data; ``parse_policy`` reads it back unchanged."""
        fixed: list[dict[str, str]] = []
        for entry in self.shared.fixed:
            item = {"name": entry.name, "amount": format_policy_amount(entry.amount_micros)}
            if entry.cluster is not None:
                item["cluster"] = entry.cluster
            fixed.append(item)
        return {
            "owner_label": self.owner_label,
            "cost_center_label": self.cost_center_label,
            "idle": self.idle.value,
            "idle_owner": self.idle_owner,
            "shared": {"namespaces": list(self.shared.namespaces), "fixed": fixed, "split": self.shared.split.value},
            "currency": self.currency,
            "require_complete": self.require_complete,
            "reconciliation": self.reconciliation.as_document(),
            "budgets": [budget.as_document() for budget in self.budgets],
        }


class _Errors:
    """The errors found so far: each part of a document is checked even when another failed, so
    a policy with three mistakes says all three (``raise_any``: one per line)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def attempt(self, parse: Callable[[], _Value], fallback: _Fallback) -> _Value | _Fallback:
        """``parse()``, or ``fallback`` with its error noted."""
        try:
            return parse()
        except InvalidInput as exc:
            self.lines.extend(exc.message.splitlines())
            return fallback

    def raise_any(self) -> None:
        if self.lines:
            raise InvalidInput("\n".join(self.lines))


def parse_policy(doc: Mapping[str, object]) -> Policy:
    """Validate a policy document (already parsed from YAML) into a ``Policy``; every error found
    is a line of the one ``InvalidInput``."""
    errors = _Errors()
    top = _mapping(doc, "policy", _TOP_KEYS, errors)
    currency = errors.attempt(lambda: _currency(top.get("currency")), "XXX")
    owner_label = errors.attempt(lambda: _label_key(top, "owner_label", "team"), "team")
    cost_center_label = errors.attempt(lambda: _label_key(top, "cost_center_label", "cost-center"), "cost-center")
    idle = errors.attempt(lambda: _choice(top, "policy.idle", IdlePolicy, IdlePolicy.SEPARATE), IdlePolicy.SEPARATE)
    idle_owner = errors.attempt(lambda: _idle_owner(top.get("idle_owner", "platform")), "platform")
    require_complete = errors.attempt(lambda: _boolean(top.get("require_complete", False)), False)
    shared = errors.attempt(lambda: _shared(top.get("shared")), SharedCosts())
    reconciliation = errors.attempt(lambda: parse_reconciliation(top.get("reconciliation")), Reconciliation())
    budgets = errors.attempt(lambda: parse_budgets(top.get("budgets")), None) or ()
    errors.raise_any()
    return Policy(
        currency=currency,
        owner_label=owner_label,
        cost_center_label=cost_center_label,
        idle=idle,
        idle_owner=idle_owner,
        shared=shared,
        require_complete=require_complete,
        reconciliation=reconciliation,
        budgets=budgets,
    )


def _currency(value: object) -> str:
    if value is None:
        raise InvalidInput("policy.currency: required (a currency code such as EUR)")
    if not isinstance(value, str) or not _CURRENCY.fullmatch(value):
        raise InvalidInput(f"policy.currency: {_show(value)} is not a currency code (e.g. EUR)")
    return value


def _idle_owner(value: object) -> str:
    if not isinstance(value, str) or not _LABEL_VALUE.fullmatch(value):
        raise InvalidInput(f"policy.idle_owner: {_show(value)} is not a valid owner name (a label value)")
    return value


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"policy.require_complete: {_show(value)} is not true or false")
    return value


def parse_policy_amount(field: str, value: object) -> int:
    """A fixed amount in micros: a non-negative decimal string or integer, six decimals at most."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        hint = f'; quote it ("{value}") so YAML keeps it exact' if isinstance(value, float) else ""
        raise InvalidInput(f"{field}: {_show(value)} is not a decimal amount{hint}")
    text = str(value).strip()
    if text.startswith("-"):
        raise InvalidInput(f"{field}: {_show(value)} is negative; a cost is zero or more")
    if not _AMOUNT.fullmatch(text):
        raise InvalidInput(f"{field}: {_show(value)} is not a decimal amount")
    _, _, decimals = text.partition(".")
    if len(decimals) > _MAX_DECIMALS:
        raise InvalidInput(f"{field}: {_show(value)} has more than {_MAX_DECIMALS} decimals")
    try:
        return to_micros(Decimal(text))
    except InvalidInput:
        raise InvalidInput(f"{field}: {_show(value)} is too large to store in micros") from None


def format_policy_amount(micros: int) -> str:
    """Micros as the shortest decimal string with at least two decimals (``"73.00"``)."""
    text = f"{from_micros(micros):f}"
    whole, _, decimals = text.partition(".")
    return f"{whole}.{decimals.rstrip('0').ljust(2, '0')}"


def _shared(value: object) -> SharedCosts:
    if value is None:
        return SharedCosts()
    errors = _Errors()
    shared = _mapping(value, "policy.shared", _SHARED_KEYS, errors)
    namespaces: list[str] = []
    listed = errors.attempt(lambda: _sequence(shared.get("namespaces"), "policy.shared.namespaces"), None)
    for i, item in enumerate(listed or []):
        if (name := errors.attempt(partial(_namespace, i, item, namespaces), None)) is not None:
            namespaces.append(name)
    fixed: list[FixedCost] = []
    entries = errors.attempt(lambda: _sequence(shared.get("fixed"), "policy.shared.fixed"), None)
    for i, item in enumerate(entries or []):
        if (entry := errors.attempt(partial(_fixed, item, f"policy.shared.fixed[{i}]"), None)) is None:
            continue
        if any(other.name == entry.name and other.cluster == entry.cluster for other in fixed):
            where = f"cluster {entry.cluster}" if entry.cluster else "all clusters"
            errors.lines.append(f"policy.shared.fixed[{i}].name: {_show(entry.name)} is listed twice for {where}")
        fixed.append(entry)
    split = errors.attempt(
        lambda: _choice(shared, "policy.shared.split", SharedSplit, SharedSplit.PROPORTIONAL), SharedSplit.PROPORTIONAL
    )
    errors.raise_any()
    return SharedCosts(namespaces=tuple(namespaces), fixed=tuple(fixed), split=split)


def _namespace(i: int, item: object, seen: list[str]) -> str:
    field = f"policy.shared.namespaces[{i}]"
    if not isinstance(item, str):
        raise InvalidInput(f"{field}: {_show(item)} is not a namespace name")
    validate_namespace(item, field=field)
    if item in seen:
        raise InvalidInput(f"{field}: {_show(item)} is listed twice")
    return item


def _fixed(value: object, path: str) -> FixedCost:
    errors = _Errors()
    entry = _mapping(value, path, _FIXED_KEYS, errors)
    name = entry.get("name")
    if name is None:
        errors.lines.append(f"{path}.name: required")
    elif not isinstance(name, str) or not name.strip():
        errors.lines.append(f"{path}.name: {_show(name)} must be a non-empty string")
    amount = 0
    if "amount" not in entry:
        errors.lines.append(f'{path}.amount: required (a decimal string such as "73.00")')
    else:
        amount = errors.attempt(lambda: parse_policy_amount(f"{path}.amount", entry["amount"]), 0)
    cluster = entry.get("cluster")
    if cluster is not None and (not isinstance(cluster, str) or not cluster.strip()):
        errors.lines.append(f"{path}.cluster: {_show(cluster)} must be a non-empty cluster name")
    errors.raise_any()
    assert isinstance(name, str) and (cluster is None or isinstance(cluster, str))  # checked above
    return FixedCost(name=name, amount_micros=amount, cluster=cluster)


def _mapping(value: object, path: str, known: tuple[str, ...], errors: _Errors) -> dict[str, object]:
    """``value`` as a dict without null values and without unknown keys, each of which is an
    error noted in ``errors``; not a mapping at all is raised at once."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{path}: must be a mapping, got {_show(value)}")
    result: dict[str, object] = {}
    for key, item in value.items():
        if key not in known:
            errors.lines.append(f"{path}.{key}: unknown key (expected one of {', '.join(known)})")
        elif item is not None:
            result[key] = item
    return result


def _sequence(value: object, path: str) -> list[object]:
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise InvalidInput(f"{path}: must be a list, got {_show(value)}")
    return list(value)


def _label_key(top: Mapping[str, object], key: str, default: str) -> str:
    value = top.get(key, default)
    if not isinstance(value, str):
        raise InvalidInput(f"policy.{key}: {_show(value)} is not a label key")
    return validate_label_key(value, field=f"policy.{key}")


def _choice(values: Mapping[str, object], path: str, enum: type[_Choice], default: _Choice) -> _Choice:
    value = values.get(path.rpartition(".")[2], default)
    for member in enum:
        if isinstance(value, str) and value == member.value:
            return member
    allowed = ", ".join(member.value for member in enum)
    raise InvalidInput(f"{path}: {_show(value)} is not one of {allowed}")


def _show(value: object) -> str:
    """A value as it would read in JSON (``"7x"``, ``12.5``, ``null``), for error messages."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
