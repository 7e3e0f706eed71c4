"""We test how ``load`` reads the process environment and what it says when a variable is bad:
each class finds its variables by its own pydantic-settings configuration.

- ``ServingSettings`` and ``CommonSettings`` are ``case_sensitive`` and ``env_ignore_empty``: a
  lower-case name is not theirs, an empty value counts as unset.
- A class combining several (``OnSyncSettings``) inherits the configuration pydantic merged for it
  (the last base's ``BaseSettings`` defaults): names match without case, an empty value is kept.
- A bad variable, read from the environment or from a given mapping, is a one-line ``ConfigError``
  naming it (every missing one too), and a secret's value never shows in a message or a repr.
"""

from __future__ import annotations

import pytest

from infra.settings import CommonSettings, ConfigError, OnSyncSettings, ServingSettings, environment, load

BASE = {
    "DATABASE_URL": "postgresql://finops@db.example:5432/finops",
    "WEBHOOK_TOKEN": "hook",
    "OPENCOST_URL": "http://opencost.opencost:9003",
}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A process environment holding none of the settings' variables but ``BASE``."""
    for name in {*OnSyncSettings.model_fields, *ServingSettings.model_fields}:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in BASE.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_case_sensitive_classes_ignore_other_cases_and_empty_values(env: pytest.MonkeyPatch) -> None:
    env.setenv("threads", "5")
    env.setenv("BODY_READ_TIMEOUT_SECONDS", "")
    serving = load(ServingSettings)
    assert serving.THREADS != 5
    assert serving.BODY_READ_TIMEOUT_SECONDS == 10
    env.setenv("CLUSTER_ID", "")
    env.setenv("cluster_id", "prod")
    assert load(CommonSettings).CLUSTER_ID == "default"


def test_combined_classes_match_names_without_case_and_keep_empty_values(env: pytest.MonkeyPatch) -> None:
    env.setenv("database_pool_max", "5")
    env.setenv("K_SINK", "")
    settings = load(OnSyncSettings)
    assert settings.DATABASE_POOL_MAX == 5
    assert settings.K_SINK == ""
    assert environment(OnSyncSettings)["DATABASE_POOL_MAX"] == "5"


def test_a_bad_variable_in_the_environment_is_named(env: pytest.MonkeyPatch) -> None:
    env.setenv("DATABASE_POOL_MAX", "70")
    with pytest.raises(ConfigError) as raised:
        load(OnSyncSettings)
    message = raised.value.message
    assert "\n" not in message
    assert message.startswith("invalid configuration of OnSyncSettings: DATABASE_POOL_MAX:")
    env.delenv("WEBHOOK_TOKEN")
    env.delenv("DATABASE_POOL_MAX")
    with pytest.raises(ConfigError, match="WEBHOOK_TOKEN: required"):
        load(OnSyncSettings)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DATABASE_POOL_MAX", "65", "DATABASE_POOL_MAX: Input should be less than or equal to 64"),
        ("MAX_IN_FLIGHT", "x", "MAX_IN_FLIGHT: Input should be a valid integer, unable to parse string as an integer"),
        ("LOG_LEVEL", "debug", "LOG_LEVEL: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'"),
        ("CLUSTER_ID", "Prod", "CLUSTER_ID: "),
        ("OPENCOST_URL", "ftp://user:hunter2@oc", "OPENCOST_URL: 'ftp://***@oc' is not an http(s) URL"),
    ],
)
def test_a_bad_given_variable_is_named_on_one_line(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(OnSyncSettings, {**BASE, variable: value})
    assert raised.value.message.startswith(f"invalid configuration of OnSyncSettings: {message}")
    assert "\n" not in raised.value.message and "hunter2" not in raised.value.message


def test_missing_variables_are_all_named() -> None:
    with pytest.raises(ConfigError) as raised:
        load(OnSyncSettings, {"DATABASE_POOL_MAX": "0"})
    assert raised.value.message == (
        "invalid configuration of OnSyncSettings: OPENCOST_URL: required; DATABASE_URL: required; "
        "DATABASE_POOL_MAX: Input should be greater than or equal to 1; WEBHOOK_TOKEN: required"
    )


def test_secrets_stay_hidden() -> None:
    loaded = load(OnSyncSettings, {**BASE, "DATABASE_URL": "postgresql://finops:hunter2@db.example:5432/finops"})
    assert loaded.WEBHOOK_TOKEN.get_secret_value() == "hook"
    assert "hunter2" not in repr(loaded) and "hook" not in repr(loaded)
    assert str(loaded.DATABASE_URL) == "**********"
