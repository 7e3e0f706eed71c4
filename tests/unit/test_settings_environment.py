"""We test how ``load`` reads the process environment now that pydantic-settings is not imported
(issue 17, cold start): each class finds its variables as pydantic-settings did, by its own
configuration, and the webhook's cold start imports neither pydantic-settings nor the settings
modules it does not use.

- ``ServingSettings`` and ``CommonSettings`` are ``case_sensitive`` and ``env_ignore_empty``: a
  lower-case name is not theirs, an empty value counts as unset.
- A class combining several (``OnSyncSettings``) inherits the configuration pydantic merged for it
  (the last base's ``BaseSettings`` defaults): names match without case, an empty value is kept.
- A bad variable read from the environment is a one-line ``ConfigError`` naming it.
- ``import functions.on_sync.main`` imports no pydantic-settings and no settings module but
  ``infra.settings.plain`` (a fresh interpreter; its webhook body is a pydantic model).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infra.settings import CommonSettings, ConfigError, OnSyncSettings, ServingSettings, load
from infra.settings.plain import environment

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


def test_the_webhook_imports_only_the_settings_it_uses() -> None:
    code = (
        "import json, sys; import functions.on_sync.main; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('pydantic_settings', 'infra.settings')))))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == ["infra.settings", "infra.settings.plain"]
