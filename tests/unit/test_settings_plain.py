"""We test the settings read without pydantic (``infra.settings.plain``: the webhook's cold start)
against the pydantic classes they replace, which stay the reference:

- ``OnSyncSettings`` declares exactly the variables, defaults and bounds of the pydantic classes
  it was composed of (``EventReceiverSettings``, ``KubeSettings``, ``OpenCostSettings``,
  ``CommonSettings``), in pydantic's order, and its own fields;
- for any environment (generated: plain, unusual and bad spellings of every variable), ``load``
  gives the plain class the values the pydantic class gets, or the same one-line ``ConfigError``
  naming the same variables; likewise ``ServingSettings``;
- a secret's value never shows in a repr or a message.
"""

from __future__ import annotations

import os
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, SecretStr

from infra.settings import (
    CommonSettings,
    ConfigError,
    EventReceiverSettings,
    KubeSettings,
    OnSyncSettings,
    OpenCostSettings,
    ServingSettings,
    load,
)
from infra.settings.base import Settings, SettingsConfig
from infra.settings.plain import PlainSettings, Secret, Setting


class PydanticOnSync(CommonSettings, OpenCostSettings, KubeSettings, EventReceiverSettings):
    """The pydantic ``OnSyncSettings`` as it was."""

    WEBHOOK_TOKEN: SecretStr
    MEASURE_SETTLE_SECONDS: float = Field(default=5, ge=0, le=300)
    MAX_IN_FLIGHT: int = Field(default=20, ge=1, le=1000)
    CLUSTER_SCOPE_APP: str = "argocd:cost-gate"
    K_SINK: str | None = None
    PORT: int = 8080


class PydanticServing(Settings):
    """The pydantic ``ServingSettings`` as it was."""

    model_config = SettingsConfig(env_ignore_empty=True, extra="ignore", case_sensitive=True, defer_build=True)

    THREADS: int = Field(default_factory=lambda: (os.cpu_count() or 1) * 4, ge=1, le=1024)
    WORKERS: int = Field(default=1, ge=1, le=64)
    HEALTH_RESERVED_THREADS: int = Field(default=2, ge=1, le=64)
    BODY_READ_TIMEOUT_SECONDS: float = Field(default=10, gt=0, le=300)


PAIRS = [(OnSyncSettings, PydanticOnSync), (ServingSettings, PydanticServing)]


def _annotation(annotation: Any) -> Any:
    return {Secret: SecretStr, Secret | None: SecretStr | None}.get(annotation, annotation)


@pytest.mark.parametrize(("plain", "reference"), PAIRS, ids=["on_sync", "serving"])
def test_the_declarations_are_the_pydantic_fields(plain: type[PlainSettings], reference: type[Settings]) -> None:
    assert list(plain.model_fields) == list(reference.model_fields)
    for name, rule in plain.model_fields.items():
        field = reference.model_fields[name]
        assert _annotation(rule.annotation) == field.annotation, name
        assert rule.is_required() == field.is_required(), name
        if not rule.is_required() and rule.default_factory is None:
            assert rule.default == field.default, name
        bounds = {key: getattr(m, key) for m in field.metadata for key in ("gt", "ge", "le") if hasattr(m, key)}
        assert bounds == {k: getattr(rule, k) for k in ("gt", "ge", "le") if getattr(rule, k) is not None}, name
    for key in ("case_sensitive", "env_ignore_empty"):
        assert plain.model_config[key] == reference.model_config.get(key, False)


NUMBERS = ["0", "1", "5", "8", "08", "64", "65", "1000", "300.0", "0.5", " 8 ", "+8", "8.0", "8.5", "1_000", "1e3"]
TEXTS = ["", "x", "inf", "nan", "-1", "true", "True", "yes", "off", "0", "1", " true", "DEBUG", "debug", "null"]
URLS = ["http://opencost:9003/", "https://oc", "ftp://oc", "http://user:pw@oc:1/x", "oc:9003", "http://a b"]
NAMES = ["default", "prod-1", "Prod", "a" * 64, "-x", "shop\n"]


def usual(rule: Setting) -> st.SearchStrategy[str]:
    """Texts of the plain forms converted without pydantic (some out of bounds)."""
    kind = rule.base
    if kind is bool:
        return st.sampled_from(["true", "false", "1", "0"])
    if kind is int or kind is float:
        low = int(rule.ge if rule.ge is not None else (rule.gt or 0))
        high = int(rule.le if rule.le is not None else 100_000)
        numbers = st.integers(max(0, low - 1), high + 1).map(str)
        return numbers | numbers.map(lambda n: f"{n}.5") if kind is float else numbers
    if kind in (str, Secret):
        return st.sampled_from(NAMES[:2] + URLS[:2])
    return st.sampled_from(typing.get_args(kind))


def values(plain: type[PlainSettings]) -> st.SearchStrategy[dict[str, str]]:
    """Mostly plain forms, so a single unusual or bad value is judged among plain ones."""
    text = st.sampled_from(NUMBERS + TEXTS + URLS + NAMES) | st.text(max_size=6)
    fields = {name: usual(rule) | usual(rule) | usual(rule) | text for name, rule in plain.model_fields.items()}
    return st.fixed_dictionaries({}, optional=fields)


def outcome(cls: type[Any], env: dict[str, str]) -> tuple[str, Any]:
    try:
        loaded = load(cls, env)
    except ConfigError as exc:
        return "error", exc.message.split(": ", 1)[1]
    out = {}
    for name in cls.model_fields:
        value = getattr(loaded, name)
        secret = isinstance(value, Secret | SecretStr)
        out[name] = ("secret", value.get_secret_value()) if secret else (value, type(value))
    return "ok", out


REQUIRED = {"DATABASE_URL": "postgresql://u:hunter2@db/x", "WEBHOOK_TOKEN": "hook", "OPENCOST_URL": "http://oc:9003"}


@pytest.mark.parametrize(("plain", "reference"), PAIRS, ids=["on_sync", "serving"])
def test_load_gives_the_values_and_messages_of_pydantic(plain: type[PlainSettings], reference: type[Settings]) -> None:
    @settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
    @given(env=values(plain), base=st.booleans())
    def check(env: dict[str, str], base: bool) -> None:
        env = {**REQUIRED, **env} if base and plain is OnSyncSettings else env
        assert outcome(plain, env) == outcome(reference, env), env

    check()


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("DATABASE_POOL_MAX", " 8 ", 8),
        ("DATABASE_POOL_MAX", "1_0", 10),
        ("MIGRATE_ON_START", "yes", True),
        ("MIGRATE_ON_START", "0", False),
        ("EVENTS_PER_SECOND", "1e3", 1000.0),
        ("OPENCOST_URL", "http://oc:9003///", "http://oc:9003"),
        ("LOG_LEVEL", "DEBUG", "DEBUG"),
    ],
)
def test_unusual_spellings_read_as_pydantic_reads_them(variable: str, value: str, expected: object) -> None:
    loaded = load(OnSyncSettings, {**REQUIRED, variable: value})
    assert getattr(loaded, variable) == expected
    assert type(getattr(loaded, variable)) is type(expected)


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
def test_a_bad_variable_is_named_on_one_line(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load(OnSyncSettings, {**REQUIRED, variable: value})
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
    loaded = load(OnSyncSettings, REQUIRED)
    assert loaded.WEBHOOK_TOKEN.get_secret_value() == "hook"
    assert "hunter2" not in repr(loaded) and "hook" not in repr(loaded)
    assert str(loaded.DATABASE_URL) == "**********"
