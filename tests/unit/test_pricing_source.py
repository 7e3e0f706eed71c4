"""We test these aspects of declaring where prices come from (``finops.pricing``) and of the
settings that declare it without a FinOpsProvider (``PRICING_SOURCE``, ``PRICING_CURRENCY``):

- the FinOpsProvider ``default`` decides when it exists: ``Pricebook`` keeps the PriceBook path
  (whatever the settings say), any other block (an empty one too) means OpenCost's prices in the
  block's ``currency``; with none, the settings decide, ``pricebook`` by default;
- a missing or malformed currency, or a provider with no or two blocks, is one line naming the
  field or variable;
- an OpenCost-priced version's fingerprint changes with the currency, and only with the source
  and the currency;
- the settings refuse ``PRICING_SOURCE=opencost`` without a currency, a malformed currency, and
  the Prometheus allocation source with OpenCost's prices, naming the variables.
"""

from __future__ import annotations

from typing import Any

import pytest

from finops.errors import InvalidInput
from finops.pricing import Declaration, Setting, declare
from infra.settings import CollectAllocationsSettings, ConfigError, ReconcileSettings, load

OPENCOST_EUR = Setting("opencost", "EUR")
BASE = {"DATABASE_URL": "postgresql://x@db/finops", "PING_TOKEN": "t", "OPENCOST_URL": "http://opencost:9003"}


def provider(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "default", "uid": "u-1"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "setting", "expected"),
    [
        ({"awsoptions": {"pricingModelSource": "Pricebook"}}, OPENCOST_EUR, ("pricebook", None)),
        ({"gcpoptions": {"pricingModelSource": "OnDemand", "currency": "EUR"}}, Setting(), ("opencost", "EUR")),
        ({"azureoptions": {"currency": "GBP"}}, Setting(), ("opencost", "GBP")),
        ({"onpremoptions": {"pricingModelSource": "custom", "currency": "CHF"}}, Setting(), ("opencost", "CHF")),
    ],
    ids=["pricebook-overrides-settings", "gcp-on-demand", "azure-no-model", "onprem-custom-file"],
)
def test_the_finopsprovider_decides_when_it_exists(
    spec: dict[str, Any], setting: Setting, expected: tuple[str, str | None]
) -> None:
    declared = declare(provider(spec), setting)
    assert (declared.source, declared.currency, declared.declared_by) == (*expected, "FinOpsProvider default")


@pytest.mark.parametrize(
    ("setting", "expected"),
    [(Setting(), ("pricebook", None)), (OPENCOST_EUR, ("opencost", "EUR"))],
    ids=["default-pricebook", "opencost"],
)
def test_the_settings_decide_without_a_finopsprovider(setting: Setting, expected: tuple[str, str | None]) -> None:
    declared = declare(None, setting)
    assert (declared.source, declared.currency, declared.declared_by) == (*expected, "PRICING_SOURCE")


@pytest.mark.parametrize(
    ("obj", "setting", "message"),
    [
        (provider({"awsoptions": {}}), Setting(), "FinOpsProvider default: spec.awsoptions.currency: required"),
        (
            provider({"gcpoptions": {"pricingModelSource": "OnDemand", "currency": "eur"}}),
            Setting(),
            "FinOpsProvider default: spec.gcpoptions.currency: not a three-letter ISO 4217 currency code",
        ),
        (provider({}), Setting(), "FinOpsProvider default: spec must set exactly one of awsoptions"),
        (
            provider({"awsoptions": {"currency": "EUR"}, "gcpoptions": {"currency": "EUR"}}),
            Setting(),
            "spec must set exactly one of",
        ),
        (provider({"awsoptions": "EUR"}), Setting(), "FinOpsProvider default: spec.awsoptions must be an object"),
        (None, Setting("opencost"), "PRICING_CURRENCY: required"),
        (None, Setting("opencost", "EURO"), "PRICING_CURRENCY: not a three-letter"),
        (None, Setting("opencosts"), "PRICING_SOURCE: 'opencosts' is not one of pricebook, opencost"),
    ],
    ids=["no-currency", "lowercase", "no-block", "two-blocks", "not-an-object", "setting-no", "setting-bad", "source"],
)
def test_an_unusable_declaration_names_its_field(obj: dict[str, Any] | None, setting: Setting, message: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        declare(obj, setting)
    assert message in raised.value.message and "\n" not in raised.value.message


def test_a_new_currency_or_source_is_a_new_version_and_nothing_else_is() -> None:
    eur = Declaration("opencost", "EUR", "PRICING_SOURCE")
    assert eur.fingerprint == Declaration("opencost", "EUR", "FinOpsProvider default").fingerprint
    assert eur.fingerprint != Declaration("opencost", "USD", "PRICING_SOURCE").fingerprint
    assert eur.fingerprint != Declaration("pricebook", "EUR", "PRICING_SOURCE").fingerprint


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PRICING_SOURCE": "opencost"}, "PRICING_CURRENCY is required when PRICING_SOURCE is opencost"),
        ({"PRICING_SOURCE": "opencost", "PRICING_CURRENCY": "eur"}, "PRICING_CURRENCY: not a three-letter"),
        ({"PRICING_SOURCE": "cloud"}, "PRICING_SOURCE: Input should be 'pricebook' or 'opencost'"),
        (
            {
                "PRICING_SOURCE": "opencost",
                "PRICING_CURRENCY": "EUR",
                "ALLOCATION_SOURCE": "prometheus",
                "PROMETHEUS_URL": "http://prometheus:9090",
            },
            "PRICING_SOURCE opencost needs ALLOCATION_SOURCE opencost",
        ),
    ],
    ids=["no-currency", "lowercase", "unknown-source", "prometheus"],
)
def test_the_settings_refuse_an_unusable_declaration(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(CollectAllocationsSettings, {**BASE, **env})
    assert message in raised.value.message and "\n" not in raised.value.message


def test_the_settings_default_to_the_pricebook_and_carry_a_declared_currency() -> None:
    assert load(CollectAllocationsSettings, BASE).PRICING_SOURCE == "pricebook"
    s = load(ReconcileSettings, {**BASE, "PRICING_SOURCE": "opencost", "PRICING_CURRENCY": "JPY"})
    assert (s.PRICING_SOURCE, s.PRICING_CURRENCY) == ("opencost", "JPY")
