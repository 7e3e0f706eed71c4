"""We test these aspects of the chargeback policy document:

- the defaults, and a full document as written in the configuration;
- every bad value is refused with an ``InvalidInput`` naming its key path;
- ``as_document`` is JSON-able and reads back into the same policy (round trip).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from finops.errors import InvalidInput
from finops.policy import (
    FixedCost,
    IdlePolicy,
    Policy,
    SharedCosts,
    SharedSplit,
    format_policy_amount,
    parse_policy,
    parse_policy_amount,
)

FULL = {
    "owner_label": "team",
    "cost_center_label": "cost-center",
    "idle": "separate",
    "idle_owner": "platform",
    "shared": {
        "namespaces": ["kube-system", "monitoring", "ingress-nginx"],
        "fixed": [{"name": "control-plane", "amount": "73.00", "cluster": "prod-eu"}],
        "split": "proportional",
    },
    "currency": "EUR",
    "require_complete": True,
    "reconciliation": {
        "basis": "billed",
        "discounts": "shared",
        "cluster_tags": ["eks:cluster-name"],
        "accounts": {"prod-eu": ["111122223333"]},
        "commitments": [
            {
                "id": "arn:aws:savingsplans::111122223333:savingsplan/plan-1",
                "contract": "enterprise-2026",
                "category": "spend",
                "type": "Compute Savings Plan",
                "start": "2026-01-01T00:00:00Z",
                "end": "2029-01-01T00:00:00Z",
                "contract_start": "2025-12-01T00:00:00Z",
                "contract_end": "2029-12-01T00:00:00Z",
                "cost": "26280.00",
                "description": "3-year compute plan",
            }
        ],
    },
    "budgets": [],
}


def test_only_the_currency_is_required() -> None:
    assert parse_policy({"currency": "EUR"}) == Policy(
        currency="EUR",
        owner_label="team",
        cost_center_label="cost-center",
        idle=IdlePolicy.SEPARATE,
        idle_owner="platform",
        shared=SharedCosts(namespaces=(), fixed=(), split=SharedSplit.PROPORTIONAL),
        require_complete=False,
    )


def test_a_full_document() -> None:
    policy = parse_policy(FULL)
    assert policy.shared.namespaces == ("kube-system", "monitoring", "ingress-nginx")
    assert policy.shared.fixed == (FixedCost(name="control-plane", amount_micros=73_000_000, cluster="prod-eu"),)
    assert policy.require_complete is True
    assert policy.as_document() == FULL


def test_null_values_count_as_absent() -> None:
    doc = {"currency": "EUR", "idle": None, "shared": {"namespaces": None, "fixed": None, "split": None}}
    assert parse_policy(doc) == parse_policy({"currency": "EUR"})
    assert parse_policy({"currency": "EUR", "shared": None}) == parse_policy({"currency": "EUR"})


def test_the_sanitised_label_keys_are_accepted() -> None:
    policy = parse_policy({"currency": "EUR", "owner_label": "example.com/team", "cost_center_label": "cost_center"})
    assert (policy.owner_label, policy.cost_center_label) == ("example.com/team", "cost_center")


def test_an_int_amount_and_six_decimals() -> None:
    doc = {"currency": "USD", "shared": {"fixed": [{"name": "lb", "amount": 12}, {"name": "x", "amount": "0.000001"}]}}
    assert [f.amount_micros for f in parse_policy(doc).shared.fixed] == [12_000_000, 1]


def with_shared(**shared: object) -> dict[str, object]:
    return {"currency": "EUR", "shared": shared}


def with_fixed(**entry: object) -> dict[str, object]:
    return with_shared(fixed=[{"name": "control-plane", "amount": "1", **entry}])


BAD = [
    ({}, r"^policy\.currency: required"),
    ({"currency": "eur"}, r'^policy\.currency: "eur" is not a currency code'),
    ({"currency": "EURO"}, r"^policy\.currency: "),
    ({"currency": 978}, r"^policy\.currency: 978 "),
    ({"currency": "EUR", "colour": "red"}, r"^policy\.colour: unknown key"),
    ({"currency": "EUR", "idle": "both"}, r'^policy\.idle: "both" is not one of separate, distribute'),
    ({"currency": "EUR", "idle": True}, r"^policy\.idle: true is not one of"),
    ({"currency": "EUR", "require_complete": "yes"}, r'^policy\.require_complete: "yes" is not true or false'),
    ({"currency": "EUR", "require_complete": 1}, r"^policy\.require_complete: 1 is not true or false"),
    ({"currency": "EUR", "idle_owner": "Platform Team"}, r"^policy\.idle_owner: "),
    ({"currency": "EUR", "idle_owner": "__unallocated__"}, r"^policy\.idle_owner: "),
    ({"currency": "EUR", "owner_label": "team name"}, r"^policy\.owner_label: "),
    ({"currency": "EUR", "owner_label": ""}, r"^policy\.owner_label: "),
    ({"currency": "EUR", "cost_center_label": ["x"]}, r"^policy\.cost_center_label: "),
    ({"currency": "EUR", "cost_center_label": "Bad_Prefix!/x"}, r"^policy\.cost_center_label: "),
    ({"currency": "EUR", "shared": ["kube-system"]}, r"^policy\.shared: must be a mapping"),
    (with_shared(splitt="even"), r"^policy\.shared\.splitt: unknown key"),
    (with_shared(split="usage"), r'^policy\.shared\.split: "usage" is not one of proportional, even'),
    (with_shared(namespaces="kube-system"), r"^policy\.shared\.namespaces: must be a list"),
    (with_shared(namespaces=["kube-system", "Kube_System"]), r"^policy\.shared\.namespaces\[1\]: "),
    (with_shared(namespaces=[7]), r"^policy\.shared\.namespaces\[0\]: 7 is not a namespace"),
    (with_shared(namespaces=["a", "a"]), r'^policy\.shared\.namespaces\[1\]: "a" is listed twice'),
    (with_shared(fixed={"name": "x"}), r"^policy\.shared\.fixed: must be a list"),
    (with_shared(fixed=["control-plane"]), r"^policy\.shared\.fixed\[0\]: must be a mapping"),
    (with_fixed(amount="7x"), r'^policy\.shared\.fixed\[0\]\.amount: "7x" is not a decimal amount$'),
    (with_fixed(amount="-1"), r"^policy\.shared\.fixed\[0\]\.amount: .* negative"),
    (with_fixed(amount=-1), r"^policy\.shared\.fixed\[0\]\.amount: .* negative"),
    (with_fixed(amount=73.5), r'^policy\.shared\.fixed\[0\]\.amount: 73\.5 .*quote it \("73\.5"\)'),
    (with_fixed(amount=True), r"^policy\.shared\.fixed\[0\]\.amount: true is not a decimal amount"),
    (with_fixed(amount="1e3"), r"^policy\.shared\.fixed\[0\]\.amount: "),
    (with_fixed(amount=""), r"^policy\.shared\.fixed\[0\]\.amount: "),
    (with_fixed(amount="0.1234567"), r"^policy\.shared\.fixed\[0\]\.amount: .* more than 6 decimals"),
    (with_fixed(amount="9" * 20), r"^policy\.shared\.fixed\[0\]\.amount: .* too large"),
    (with_fixed(amount=None), r"^policy\.shared\.fixed\[0\]\.amount: required"),
    (with_shared(fixed=[{"amount": "1"}]), r"^policy\.shared\.fixed\[0\]\.name: required"),
    (with_fixed(name=" "), r"^policy\.shared\.fixed\[0\]\.name: "),
    (with_fixed(cluster=""), r"^policy\.shared\.fixed\[0\]\.cluster: "),
    (with_fixed(cluster=3), r"^policy\.shared\.fixed\[0\]\.cluster: "),
    (with_fixed(owner="x"), r"^policy\.shared\.fixed\[0\]\.owner: unknown key"),
    (
        with_shared(
            fixed=[
                {"name": "cp", "amount": "1"},
                {"name": "cp", "amount": "2", "cluster": "a"},
                {"name": "cp", "amount": 3},
            ]
        ),
        r'^policy\.shared\.fixed\[2\]\.name: "cp" is listed twice for all clusters',
    ),
]


@pytest.mark.parametrize(("doc", "message"), BAD, ids=[m.split(":")[0].lstrip("^").replace("\\", "") for _, m in BAD])
def test_bad_documents_name_the_key_path(doc: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_policy(doc)


def test_a_document_must_be_a_mapping() -> None:
    with pytest.raises(InvalidInput, match=r"^policy: must be a mapping"):
        parse_policy(["currency", "EUR"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("micros", "text"),
    [(73_000_000, "73.00"), (1, "0.000001"), (0, "0.00"), (1_250_000, "1.25"), (1_234_500, "1.2345")],
)
def test_amounts_read_back_as_the_shortest_decimal(micros: int, text: str) -> None:
    assert format_policy_amount(micros) == text
    assert parse_policy_amount("amount", text) == micros


label_values = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?\Z")
fixed_costs = st.builds(
    FixedCost,
    name=st.text(min_size=1, max_size=12).filter(str.strip),
    amount_micros=st.integers(0, 10**15),
    cluster=st.none() | label_values,
)
policies = st.builds(
    Policy,
    currency=st.from_regex(r"\A[A-Z]{3}\Z"),
    owner_label=label_values,
    cost_center_label=label_values,
    idle=st.sampled_from(IdlePolicy),
    idle_owner=label_values,
    require_complete=st.booleans(),
    shared=st.builds(
        SharedCosts,
        namespaces=st.lists(label_values, unique=True, max_size=4).map(tuple),
        fixed=st.lists(fixed_costs, max_size=4, unique_by=lambda f: (f.name, f.cluster)).map(tuple),
        split=st.sampled_from(SharedSplit),
    ),
)


@given(policies)
def test_any_policy_round_trips_through_its_document(policy: Policy) -> None:
    document = json.loads(json.dumps(policy.as_document()))
    assert parse_policy(document) == policy
