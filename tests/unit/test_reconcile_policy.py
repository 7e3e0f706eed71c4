"""The policy's ``reconciliation`` section (finops.reconcile_policy). We test these aspects:

- parsing: defaults when the section or a key is absent, each accepted value, and every refusal
  naming its key path in full (``policy.reconciliation.accounts.prod[1]``) and the values allowed;
- ``cluster_of_tags``: the configured tag keys, the ``kubernetes.io/cluster/<name>`` keys EKS puts
  on what it creates, ambiguity (two clusters named: none), clusters not in the report, and the
  account restriction.
"""

from __future__ import annotations

import re

import pytest

from finops.commitments import parse_commitments
from finops.errors import InvalidInput
from finops.reconcile_policy import (
    DEFAULT_CLUSTER_TAGS,
    Basis,
    DiscountRule,
    Reconciliation,
    parse_basis,
    parse_reconciliation,
)

CLUSTERS = frozenset({"prod", "staging"})


def refused(value: object, message: str) -> None:
    """``value`` is refused with exactly ``message`` (the whole text: the key path comes first)."""
    with pytest.raises(InvalidInput, match=f"^{re.escape(message)}$"):
        parse_reconciliation(value)


@pytest.mark.parametrize("value", [None, {}, {"basis": None, "discounts": None, "cluster_tags": None}])
def test_an_absent_section_or_key_takes_the_default(value: object) -> None:
    policy = parse_reconciliation(value)
    assert policy == Reconciliation()
    assert policy.basis is Basis.ESTIMATE and policy.discounts is DiscountRule.PROPORTIONAL
    assert policy.cluster_tags == DEFAULT_CLUSTER_TAGS and policy.accounts == {}


RESERVATION = {
    "id": "arn:aws:ec2:eu-west-1:111122223333:reserved-instances/ri-1",
    "category": "usage",
    "type": "Reserved Instance",
    "start": "2026-01-01T01:00:00+01:00",
    "end": "2027-01-01T00:00:00Z",
    "quantity": "8760",
    "unit": "Hours",
}


def test_every_key_is_read() -> None:
    policy = parse_reconciliation(
        {
            "basis": "amortised",
            "discounts": "shared",
            "cluster_tags": ["team-cluster", "kube"],
            "accounts": {"prod": ["111122223333", "acct-2"], "staging": ("444455556666",)},
            "commitments": [RESERVATION],
        }
    )
    assert policy == Reconciliation(
        Basis.AMORTISED,
        DiscountRule.SHARED,
        ("team-cluster", "kube"),
        {"prod": ("111122223333", "acct-2"), "staging": ("444455556666",)},
        parse_commitments([RESERVATION], "commitments"),
    )
    assert policy.as_document() == {
        "basis": "amortised",
        "discounts": "shared",
        "cluster_tags": ["team-cluster", "kube"],
        "accounts": {"prod": ["111122223333", "acct-2"], "staging": ["444455556666"]},
        "commitments": [RESERVATION | {"start": "2026-01-01T00:00:00Z", "end": "2027-01-01T00:00:00Z"}
                        | {"contract_start": "2026-01-01T00:00:00Z", "contract_end": "2027-01-01T00:00:00Z"}
                        | {"contract": RESERVATION["id"]}],
    }  # fmt: skip


def test_an_empty_tag_list_is_kept_empty() -> None:
    assert parse_reconciliation({"cluster_tags": []}).cluster_tags == ()


@pytest.mark.parametrize("name", ["estimate", "billed", "amortised"])
def test_parse_basis_reads_each_basis(name: str) -> None:
    assert parse_basis(name) is Basis(name)


def test_parse_basis_names_its_field() -> None:
    allowed = "is not one of estimate, billed, amortised"
    with pytest.raises(InvalidInput, match=f"^basis: 'net' {allowed}$"):
        parse_basis("net")
    with pytest.raises(InvalidInput, match=f"^query.basis: 'BILLED' {allowed}$"):
        parse_basis("BILLED", "query.basis")


def test_the_section_must_be_a_mapping() -> None:
    refused(["billed"], "policy.reconciliation: must be a mapping, got ['billed']")
    with pytest.raises(InvalidInput, match=r"^spec.reconciliation: must be a mapping, got 'billed'$"):
        parse_reconciliation("billed", "spec.reconciliation")


def test_an_unknown_key_is_refused_with_the_keys_allowed() -> None:
    refused(
        {"basis": "billed", "discount": "shared"},
        "policy.reconciliation.discount: unknown key "
        "(expected one of basis, discounts, cluster_tags, accounts, commitments)",
    )


def test_basis_and_discounts_name_their_key_and_the_values_allowed() -> None:
    refused({"basis": "net"}, "policy.reconciliation.basis: 'net' is not one of estimate, billed, amortised")
    refused({"discounts": "even"}, "policy.reconciliation.discounts: 'even' is not one of proportional, shared")


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ("cluster", "policy.reconciliation.cluster_tags: must be a list of tag keys, got 'cluster'"),
        ({"cluster": "x"}, "policy.reconciliation.cluster_tags: must be a list of tag keys, got {'cluster': 'x'}"),
        (5, "policy.reconciliation.cluster_tags: must be a list of tag keys, got 5"),
        (["cluster", 7], "policy.reconciliation.cluster_tags[1]: 7 is not a tag key"),
        (["cluster", "  "], "policy.reconciliation.cluster_tags[1]: '  ' is not a tag key"),
        (["a", "b", "a"], "policy.reconciliation.cluster_tags[2]: 'a' is listed twice"),
    ],
    ids=["text", "mapping", "number", "not-text", "blank", "twice"],
)
def test_cluster_tags_errors_name_the_item(tags: object, message: str) -> None:
    refused({"cluster_tags": tags}, message)


@pytest.mark.parametrize(
    ("accounts", "message"),
    [
        (["prod"], "policy.reconciliation.accounts: must map a cluster to its account ids, got ['prod']"),
        ({"  ": ["111"]}, "policy.reconciliation.accounts: '  ' is not a cluster name"),
        ({5: ["111"]}, "policy.reconciliation.accounts: 5 is not a cluster name"),
        ({"prod": "111"}, "policy.reconciliation.accounts.prod: must be a non-empty list of account ids, got '111'"),
        ({"prod": 111}, "policy.reconciliation.accounts.prod: must be a non-empty list of account ids, got 111"),
        ({"prod": []}, "policy.reconciliation.accounts.prod: must be a non-empty list of account ids, got []"),
        (
            {"prod": {"111": 1}},
            "policy.reconciliation.accounts.prod: must be a non-empty list of account ids, got {'111': 1}",
        ),
        (
            {"prod": ["111", 111122223333]},
            'policy.reconciliation.accounts.prod[1]: 111122223333 is not an account id (quote it: "111122223333")',
        ),
        (
            {"prod": ["111", "bad id"]},
            "policy.reconciliation.accounts.prod[1]: 'bad id' is not an account id (quote it: \"111122223333\")",
        ),
    ],
    ids=["list", "blank-cluster", "number-cluster", "text", "number", "empty", "mapping", "unquoted", "bad-id"],
)
def test_accounts_errors_name_the_cluster_and_item(accounts: object, message: str) -> None:
    refused({"accounts": accounts}, message)


def test_errors_under_another_path_name_it() -> None:
    with pytest.raises(InvalidInput, match=r"^doc.rec.accounts.prod\[0\]: "):
        parse_reconciliation({"accounts": {"prod": [1]}}, "doc.rec")
    with pytest.raises(InvalidInput, match=r"^doc.rec.cluster_tags\[0\]: "):
        parse_reconciliation({"cluster_tags": [""]}, "doc.rec")
    with pytest.raises(InvalidInput, match=r"^doc.rec.basis: "):
        parse_reconciliation({"basis": "x"}, "doc.rec")


def test_a_configured_tag_names_the_cluster() -> None:
    policy = Reconciliation(cluster_tags=("cluster", "eks:cluster-name"))
    assert policy.cluster_of_tags({"cluster": "prod", "team": "x"}, None, CLUSTERS) == "prod"
    assert policy.cluster_of_tags({"eks:cluster-name": "staging"}, "1", CLUSTERS) == "staging"
    assert policy.cluster_of_tags({"cluster": "prod", "eks:cluster-name": "prod"}, None, CLUSTERS) == "prod"
    assert policy.cluster_of_tags({"owner-cluster": "prod"}, None, CLUSTERS) is None  # not a configured key
    assert policy.cluster_of_tags({"cluster": "dev"}, None, CLUSTERS) is None  # not a cluster of the report
    assert policy.cluster_of_tags({"cluster": ""}, None, CLUSTERS) is None
    assert policy.cluster_of_tags({}, None, CLUSTERS) is None


def test_the_kubernetes_cluster_tag_names_the_cluster_by_its_key() -> None:
    policy = Reconciliation(cluster_tags=())
    assert policy.cluster_of_tags({"kubernetes.io/cluster/prod": "owned"}, None, CLUSTERS) == "prod"
    assert policy.cluster_of_tags({"kubernetes.io/cluster/prod": ""}, None, CLUSTERS) == "prod"
    assert policy.cluster_of_tags({"kubernetes.io/cluster/dev": "owned"}, None, CLUSTERS) is None
    assert policy.cluster_of_tags({"example.com/kubernetes.io/cluster/prod": "owned"}, None, CLUSTERS) is None


@pytest.mark.parametrize(
    "tags",
    [
        {"cluster": "prod", "eks:cluster-name": "staging"},
        {"cluster": "prod", "kubernetes.io/cluster/staging": "owned"},
        {"kubernetes.io/cluster/prod": "owned", "kubernetes.io/cluster/staging": "shared"},
    ],
    ids=["two-tags", "tag-and-key", "two-keys"],
)
def test_a_line_naming_two_clusters_is_none_of_them(tags: dict[str, str]) -> None:
    assert Reconciliation().cluster_of_tags(tags, None, CLUSTERS) is None


def test_an_account_restriction_keeps_other_accounts_out() -> None:
    policy = Reconciliation(accounts={"prod": ("111", "222")})
    tags = {"cluster": "prod"}
    assert policy.cluster_of_tags(tags, "222", CLUSTERS) == "prod"
    assert policy.cluster_of_tags(tags, "999", CLUSTERS) is None
    assert policy.cluster_of_tags(tags, None, CLUSTERS) is None
    assert policy.cluster_of_tags({"kubernetes.io/cluster/prod": "owned"}, "999", CLUSTERS) is None
    assert policy.cluster_of_tags({"cluster": "staging"}, "999", CLUSTERS) == "staging"  # unrestricted
    # a line of another account naming two clusters is the one it may belong to
    both = {"cluster": "prod", "kubernetes.io/cluster/staging": "owned"}
    assert policy.cluster_of_tags(both, "999", CLUSTERS) == "staging"
    assert policy.cluster_of_tags(both, "111", CLUSTERS) is None
