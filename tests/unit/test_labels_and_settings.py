"""We test these aspects of names, labels and configuration:

- namespaces and label keys are validated before they reach an OpenCost filter;
- ownership accepts the label key as written or in OpenCost's sanitised form;
- a bad or missing environment variable is named in the configuration error; secrets stay hidden.
"""

from __future__ import annotations

import pytest

from finops.allocations import EntryKind, entry_kind, parse_aggregation
from finops.errors import InvalidInput
from finops.labels import owner_label, sanitize_label_key, validate_label_key, validate_namespace
from infra.opencost import namespace_filter
from infra.settings import CollectAllocationsSettings, ConfigError, load

GOOD_ENV = {"DATABASE_URL": "postgresql://u:hunter2@db/x", "PING_TOKEN": "t0k", "OPENCOST_URL": "http://oc:9003/"}


@pytest.mark.parametrize("bad", ['shop"', "Shop", "-shop", "a" * 64, 'a",namespace:"b', "", "shop/../x"])
def test_namespace_filter_refuses_anything_but_a_namespace(bad: str) -> None:
    with pytest.raises(InvalidInput, match="namespace"):
        namespace_filter([bad])


def test_namespace_filter_quotes_each_name() -> None:
    assert namespace_filter(["shop", "kube-system"]) == 'namespace:"shop","kube-system"'
    assert validate_namespace("a-1") == "a-1"


def test_label_keys_and_sanitised_ownership() -> None:
    assert validate_label_key("finops.stakater.com/team") == "finops.stakater.com/team"
    with pytest.raises(InvalidInput):
        validate_label_key("bad key")
    assert sanitize_label_key("cost-center") == "cost_center"
    assert owner_label({"cost_center": "cc-1"}, "cost-center") == "cc-1"
    assert owner_label({"cost-center": "cc-2"}, "cost-center") == "cc-2"
    assert owner_label({}, "team") is None and owner_label(None, "team") is None


def test_entry_kinds() -> None:
    assert entry_kind("__idle__") is EntryKind.IDLE
    assert entry_kind("shop/__unmounted__/__unmounted__/__unmounted__/__unmounted__") is EntryKind.UNMOUNTED
    assert entry_kind("shop/__unallocated__/__unallocated__/lonely/app") is EntryKind.WORKLOAD
    assert parse_aggregation(" namespace , label:team ") == "namespace,label:team"
    with pytest.raises(InvalidInput, match="deployments"):
        parse_aggregation("namespace,deployments")


def test_settings_load_and_hide_secrets() -> None:
    settings = load(CollectAllocationsSettings, GOOD_ENV)
    assert settings.OPENCOST_URL == "http://oc:9003" and settings.HOURS_LOOKBACK == 5
    assert "hunter2" not in repr(settings) and "t0k" not in repr(settings)


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ({"DATABASE_URL": ""}, "DATABASE_URL: required"),
        ({"PING_TOKEN": ""}, "PING_TOKEN: required"),
        ({"OPENCOST_URL": "opencost:9003"}, "OPENCOST_URL"),
        ({"HOURS_LOOKBACK": "-1"}, "HOURS_LOOKBACK"),
        ({"CLUSTER_ID": "Prod_EU"}, "CLUSTER_ID"),
        ({"SCHEDULED_TIMESTAMP": "soon"}, "SCHEDULED_TIMESTAMP"),
        ({"OPENCOST_AGGREGATE": "namespace,foo"}, "OPENCOST_AGGREGATE"),
        ({"OWNER_LABEL": "bad key"}, "OWNER_LABEL"),
    ],
)
def test_bad_settings_name_the_variable(override: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load(CollectAllocationsSettings, {**GOOD_ENV, **override})
