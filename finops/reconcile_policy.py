"""The policy's ``reconciliation`` section: which figures a report stands on, and how the cloud
bill's lines are given to clusters.

::

    reconciliation:
      basis: estimate            # the reports' default basis: estimate | billed | amortised
      discounts: proportional    # discount and credit lines: proportional (to reconciled cost) | shared
      cluster_tags: [eks:cluster-name, aws:eks:cluster-name, cluster]   # tags naming a line's cluster
      accounts:                  # optional: the only accounts whose lines may be a cluster's
        prod-eu: ["111122223333"]
      commitments: [...]         # optional: the terms of the commitments the bill applies
                                 # (Savings Plans, reservations): finops.commitments

``estimate`` is OpenCost's figure (list prices or the PriceBook); ``billed`` replaces it, for the
days the imported bill covers, by what the bill charged (FOCUS ``BilledCost``, CUR unblended
cost); ``amortised`` by the amortised view (FOCUS ``EffectiveCost``, CUR's amortised columns:
commitments spread over the usage they cover). A report can override the default
(``--basis``, ``?basis=``).

A bill line is a cluster's when its resource id matches one of the cluster's nodes, volumes or
load balancers (``finops.reconciliation``), or when one of ``cluster_tags`` has the cluster's
name as its value, or the line carries the tag ``kubernetes.io/cluster/<name>`` (what EKS and
the cloud controllers put on what they create). With ``accounts`` set for a cluster, a line of
another account is never that cluster's by tag (a copied tag in a sandbox account must not land
on production's chargeback). Tag keys are matched as written; the bill parser already keeps
CUR 2.0's ``user_`` form and FOCUS's ``Tags`` map as they are, so list every spelling in use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from finops.commitments import Commitment, parse_commitments
from finops.errors import InvalidInput

DEFAULT_CLUSTER_TAGS = ("eks:cluster-name", "aws:eks:cluster-name", "cluster", "user:cluster", "user_cluster")
_K8S_TAG = "kubernetes.io/cluster/"
_KEYS = ("basis", "discounts", "cluster_tags", "accounts", "commitments")
_ACCOUNT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$")


class Basis(StrEnum):
    """What a report's figures stand on."""

    ESTIMATE = "estimate"  # OpenCost's measurement at the PriceBook's (or list) prices
    BILLED = "billed"  # the invoice: BilledCost / unblended cost
    AMORTISED = "amortised"  # the amortised view: EffectiveCost / CUR's amortised cost


class DiscountRule(StrEnum):
    """How a cluster's discount and credit lines (savings-plan negation, credits) are spread."""

    PROPORTIONAL = "proportional"  # over the cluster's reconciled cost, each line by its share
    SHARED = "shared"  # into the cluster's shared pool, split as ``shared.split`` says


@dataclass(frozen=True)
class Reconciliation:
    basis: Basis = Basis.ESTIMATE
    discounts: DiscountRule = DiscountRule.PROPORTIONAL
    cluster_tags: tuple[str, ...] = DEFAULT_CLUSTER_TAGS
    accounts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    commitments: tuple[Commitment, ...] = ()

    def cluster_of_tags(self, tags: Mapping[str, str], account: str | None, clusters: frozenset[str]) -> str | None:
        """The cluster a bill line's tags name, among ``clusters``; None when none does."""
        named = {tags[key] for key in self.cluster_tags if tags.get(key)}
        named |= {key.removeprefix(_K8S_TAG) for key in tags if key.startswith(_K8S_TAG)}
        found = sorted(name for name in named & clusters if self.account_allowed(name, account))
        return found[0] if len(found) == 1 else None

    def account_allowed(self, cluster: str, account: str | None) -> bool:
        allowed = self.accounts.get(cluster)
        return allowed is None or account in allowed

    def as_document(self) -> dict[str, object]:
        return {
            "basis": self.basis.value,
            "discounts": self.discounts.value,
            "cluster_tags": list(self.cluster_tags),
            "accounts": {name: list(ids) for name, ids in sorted(self.accounts.items())},
            "commitments": [commitment.as_document() for commitment in self.commitments],
        }


def parse_basis(value: object, field: str = "basis") -> Basis:
    for member in Basis:
        if value == member.value:
            return member
    raise InvalidInput(f"{field}: {value!r} is not one of {', '.join(member.value for member in Basis)}")


def parse_reconciliation(value: object, path: str = "policy.reconciliation") -> Reconciliation:
    if value is None:
        return Reconciliation()
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{path}: must be a mapping, got {value!r}")
    for key in value:
        if key not in _KEYS:
            raise InvalidInput(f"{path}.{key}: unknown key (expected one of {', '.join(_KEYS)})")
    basis = parse_basis(value.get("basis") or Basis.ESTIMATE.value, f"{path}.basis")
    discounts_text = value.get("discounts") or DiscountRule.PROPORTIONAL.value
    rules = {rule.value: rule for rule in DiscountRule}
    if discounts_text not in rules:
        raise InvalidInput(f"{path}.discounts: {discounts_text!r} is not one of {', '.join(rules)}")
    tags = value.get("cluster_tags")
    cluster_tags = DEFAULT_CLUSTER_TAGS if tags is None else _names(tags, f"{path}.cluster_tags")
    return Reconciliation(
        basis,
        rules[discounts_text],
        cluster_tags,
        _accounts(value.get("accounts"), path),
        parse_commitments(value.get("commitments"), f"{path}.commitments"),
    )


def _names(value: object, path: str) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InvalidInput(f"{path}: must be a list of tag keys, got {value!r}")
    names: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise InvalidInput(f"{path}[{i}]: {item!r} is not a tag key")
        if item in names:
            raise InvalidInput(f"{path}[{i}]: {item!r} is listed twice")
        names.append(item)
    return tuple(names)


def _accounts(value: object, path: str) -> dict[str, tuple[str, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{path}.accounts: must map a cluster to its account ids, got {value!r}")
    accounts: dict[str, tuple[str, ...]] = {}
    for cluster, ids in value.items():
        where = f"{path}.accounts.{cluster}"
        if not isinstance(cluster, str) or not cluster.strip():
            raise InvalidInput(f"{path}.accounts: {cluster!r} is not a cluster name")
        if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple)) or not ids:
            raise InvalidInput(f"{where}: must be a non-empty list of account ids, got {ids!r}")
        for i, account in enumerate(ids):
            # YAML reads 111122223333 unquoted as an integer; an account id is text, and a leading
            # zero would already be lost, so refuse it rather than guess.
            if not isinstance(account, str) or not _ACCOUNT.fullmatch(account):
                raise InvalidInput(f'{where}[{i}]: {account!r} is not an account id (quote it: "111122223333")')
        accounts[cluster] = tuple(ids)
    return accounts
