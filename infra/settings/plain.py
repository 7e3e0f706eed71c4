"""Settings read without pydantic: the classes a webhook's cold start needs (``OnSyncSettings``,
``ServingSettings``), and ``load``, which reads every class from the environment.

``on_sync`` scales to zero and the first Argo CD webhook waits for its cold start; importing
pydantic cost about 30 ms of it, and its settings were the last pydantic on that path. A class
here declares each variable as a ``setting`` (its type, default and bounds, as the pydantic field
had them) and is filled by ``load`` the way pydantic filled it, in two steps:

1. Every value in its plain form (an int of digits, a float of digits with an optional fraction,
   ``true``/``false``/``1``/``0``, one of a ``Literal``'s choices, any text) is converted here.
2. Anything else, and any value out of bounds or refused by a field's check, is judged by pydantic
   itself, imported then: a model built from the same declarations (``_pydantic_twin``) parses
   the values, so an unusual spelling (`` 8 ``, ``1_000``, ``yes``) gives the value pydantic gave,
   and a bad one the one-line ``ConfigError`` naming the variable, in pydantic's words.

So the parsing is pydantic's by construction; step 1 only accepts what pydantic reads the same
way. The other functions keep pydantic classes (``infra.settings.base``); ``load`` reads both.
"""

from __future__ import annotations

import functools
import os
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from finops.errors import InvalidInput, PermanentError
from finops.labels import validate_namespace
from infra.logs import redact


class ConfigError(PermanentError):
    """The function's configuration is invalid."""


class Secret:
    """A secret's text, shown as ``**********`` (pydantic's ``SecretStr`` without pydantic)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __str__(self) -> str:
        return "**********" if self._value else ""

    def __repr__(self) -> str:
        return f"Secret('{self}')"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


class SecretLike(Protocol):
    """``Secret`` or pydantic's ``SecretStr``."""

    def get_secret_value(self) -> str: ...


_REQUIRED: Any = object()


@dataclass(frozen=True)
class Setting:
    """One variable: its type (``int``, ``float``, ``bool``, ``str``, ``Secret``, a ``Literal``, or
    one of them ``| None``), its default (or ``default_factory``; neither: required), bounds, and
    a check run on its text (raising ``ValueError`` with the reason; it may return a new text)."""

    annotation: Any
    default: Any = _REQUIRED
    default_factory: Callable[[], Any] | None = None
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    check: Callable[[str], str] | None = None

    def is_required(self) -> bool:
        return self.default is _REQUIRED and self.default_factory is None

    @property
    def base(self) -> Any:
        """The type without ``| None``."""
        if isinstance(self.annotation, types.UnionType):
            return next(arg for arg in typing.get_args(self.annotation) if arg is not type(None))
        return self.annotation

    def initial(self) -> Any:
        """The default, as pydantic validated it (``validate_default``: ``float`` fields hold floats)."""
        value = self.default_factory() if self.default_factory is not None else self.default
        return float(value) if self.base is float and isinstance(value, int) else value

    def within(self, number: float) -> bool:
        return (
            (self.gt is None or number > self.gt)
            and (self.ge is None or number >= self.ge)
            and (self.le is None or number <= self.le)
        )


def setting(annotation: Any, default: Any = _REQUIRED, **rules: Any) -> Any:
    """A ``Setting`` declared as a class attribute (typed ``Any`` so the annotation types it)."""
    return Setting(annotation, default, **rules)


_DIGITS = re.compile(r"[0-9]{1,9}")
_DECIMAL = re.compile(r"[0-9]{1,9}(?:\.[0-9]{1,9})?")
_BOOLS = {"true": True, "false": False, "1": True, "0": False}


class _Unusual(Exception):
    """A value step 1 does not convert: pydantic judges it."""


def _plain(rule: Setting, text: str) -> Any:
    """``text`` converted as pydantic converts it, or ``_Unusual``."""
    kind = rule.base
    if kind is str or kind is Secret:
        if rule.check is not None:
            try:
                text = rule.check(text)
            except ValueError:
                raise _Unusual from None
        return Secret(text) if kind is Secret else text
    if kind is bool:
        if text in _BOOLS:
            return _BOOLS[text]
        raise _Unusual
    if kind is int or kind is float:
        if not (_DIGITS if kind is int else _DECIMAL).fullmatch(text):
            raise _Unusual
        number = kind(text)
        if not rule.within(number):
            raise _Unusual
        return number
    if text in typing.get_args(kind):  # a Literal of strings
        return text
    raise _Unusual


class PlainSettings:
    """The root of the classes read without pydantic. ``model_fields`` maps each variable to its
    ``Setting`` (bases first, as pydantic ordered a class's fields); ``model_config`` says how
    ``load`` finds the variables (``case_sensitive``, ``env_ignore_empty``)."""

    model_config: ClassVar[dict[str, Any]] = {"case_sensitive": False, "env_ignore_empty": False}
    model_fields: ClassVar[dict[str, Setting]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: dict[str, Setting] = {}
        for klass in reversed(cls.__mro__):
            fields.update({name: rule for name, rule in vars(klass).items() if isinstance(rule, Setting)})
        cls.model_fields = fields

    def __init__(self, **values: Any) -> None:
        for name, rule in self.model_fields.items():
            setattr(self, name, values[name] if name in values else rule.initial())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.model_fields)
        return f"{type(self).__name__}({shown})"

    @classmethod
    def from_values(cls, values: dict[str, str]) -> typing.Self:
        """The settings of ``values`` (variable texts), or ``ConfigError`` naming every bad one."""
        try:
            converted = {name: _plain(cls.model_fields[name], text) for name, text in values.items()}
        except _Unusual:
            return cls._from_pydantic(values)
        if any(rule.is_required() and name not in converted for name, rule in cls.model_fields.items()):
            return cls._from_pydantic(values)  # the message names every missing and bad variable
        return cls(**converted)

    @classmethod
    def _from_pydantic(cls, values: dict[str, str]) -> typing.Self:
        from pydantic import SecretStr, ValidationError

        try:
            model = _pydantic_twin(cls).model_validate(values)  # type: ignore[arg-type]  # a class is hashable
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration of {cls.__name__}: {problems(exc)}") from exc
        fields = {name: getattr(model, name) for name in cls.model_fields}
        return cls(**{k: Secret(v.get_secret_value()) if isinstance(v, SecretStr) else v for k, v in fields.items()})


@functools.cache
def _pydantic_twin(cls: type[PlainSettings]) -> Any:
    """A pydantic model of ``cls``'s declarations, with the root configuration of the pydantic
    settings classes (``infra.settings.base.Settings``)."""
    from pydantic import AfterValidator, Field, SecretStr, create_model

    from infra.settings.base import Settings

    def pydantic_type(annotation: Any) -> Any:
        if annotation is Secret:
            return SecretStr
        if isinstance(annotation, types.UnionType):
            return functools.reduce(lambda a, b: a | b, [pydantic_type(arg) for arg in typing.get_args(annotation)])
        return annotation

    fields: dict[str, Any] = {}
    for name, rule in cls.model_fields.items():
        annotation = pydantic_type(rule.annotation)
        if rule.check is not None:
            check = rule.check
            annotation = typing.Annotated[annotation, AfterValidator(lambda v, c=check: v if v is None else c(v))]
        default: Any = ... if rule.default is _REQUIRED else rule.default
        bounds = {key: getattr(rule, key) for key in ("gt", "ge", "le") if getattr(rule, key) is not None}
        if rule.default_factory is not None:
            fields[name] = (annotation, Field(default_factory=rule.default_factory, **bounds))
        else:
            fields[name] = (annotation, Field(default=default, **bounds))
    return create_model(cls.__name__, __base__=Settings, **fields)


def problems(exc: Any) -> str:
    """``NAME: why; NAME: why`` of a pydantic ``ValidationError`` (``required`` if missing)."""
    out = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"]) or "settings"
        message = "required" if error["type"] == "missing" else error["msg"].removeprefix("Value error, ")
        out.append(f"{name}: {message}")
    return "; ".join(out)


def cluster_name(value: str) -> str:
    """``CLUSTER_ID``: a Kubernetes namespace-like name."""
    try:
        result = validate_namespace(value, field="CLUSTER_ID")
    except InvalidInput as exc:
        raise ValueError(exc.message.removeprefix("CLUSTER_ID: ")) from exc
    return result if isinstance(result, str) else value


_HTTP_URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")


def opencost_url(value: str) -> str:
    """``OPENCOST_URL``: an http(s) URL, without a trailing slash."""
    if not _HTTP_URL.fullmatch(value):
        raise ValueError(f"{redact(value)!r} is not an http(s) URL such as http://opencost.opencost:9003")
    return value.rstrip("/")


LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]


class ServingSettings(PlainSettings):
    """How the served function protects its threads (read at import, before the target's settings)."""

    model_config: ClassVar[dict[str, Any]] = {"case_sensitive": True, "env_ignore_empty": True}

    THREADS: int = setting(int, default_factory=lambda: (os.cpu_count() or 1) * 4, ge=1, le=1024)
    """gunicorn's threads (functions-framework reads the same variable; its default is 4 per CPU)."""

    WORKERS: int = setting(int, 1, ge=1, le=64)
    """gunicorn's worker processes (functions-framework reads the same variable; its default is 1);
    each holds its share of the per-replica limits (``functions.limits``)."""

    HEALTH_RESERVED_THREADS: int = setting(int, 2, ge=1, le=64)
    """Threads never spent receiving request bodies (at most half of ``THREADS``): ``/healthz`` and
    bodiless requests always find one, however many uploads stall; a body arriving while all the
    others are receiving one gets 503 at once."""

    BODY_READ_TIMEOUT_SECONDS: float = setting(float, 10, gt=0, le=300)
    """A request body must arrive within this long of its headers, else 408 and the connection is
    closed (a stalled upload frees its thread)."""


class OnSyncSettings(PlainSettings):
    """``on_sync``: the Argo CD Notifications webhook and the measurement it triggers. Its variables
    are those of ``EventReceiverSettings``, ``KubeSettings``, ``OpenCostSettings`` and
    ``CommonSettings`` (``infra.settings.base``; a test keeps them equal), then its own; names
    match without case and empty values are kept (the configuration pydantic merged for it)."""

    EVENT_TOKEN: Secret | None = setting(Secret | None, None)
    EVENTS_PER_SECOND: float = setting(float, 20, gt=0, le=10_000)
    EVENTS_BURST: int = setting(int, 50, ge=1, le=100_000)
    KUBE_API_URL: str | None = setting(str | None, None)
    KUBE_TIMEOUT_SECONDS: float = setting(float, 10, gt=0, le=120)
    OPENCOST_URL: str = setting(str, check=opencost_url)
    OPENCOST_TIMEOUT_SECONDS: float = setting(float, 60, gt=0, le=600)
    OPENCOST_RETRIES: int = setting(int, 3, ge=0, le=10)
    DATABASE_URL: Secret = setting(Secret)
    CLUSTER_ID: str = setting(str, "default", check=cluster_name)
    LOG_LEVEL: LogLevel = setting(LogLevel, "INFO")
    DATABASE_POOL: Literal["pool", "null"] = setting(Literal["pool", "null"], "pool")
    DATABASE_POOL_MAX: int = setting(int, 8, ge=1, le=64)
    DATABASE_CONNECT_TIMEOUT_SECONDS: float = setting(float, 10, gt=0, le=120)
    MIGRATE_ON_START: bool = setting(bool, False)
    DATABASE_LOCK_TIMEOUT_SECONDS: float = setting(float, 30, ge=0, le=3600)
    DATABASE_STATEMENT_TIMEOUT_SECONDS: float = setting(float, 300, ge=0, le=86_400)
    SECRETS_DIR: str | None = setting(str | None, None)

    WEBHOOK_TOKEN: Secret = setting(Secret)
    """Bearer token Argo CD Notifications sends (``argocd-notifications-secret``). Required; a secret."""

    MEASURE_SETTLE_SECONDS: float = setting(float, 5, ge=0, le=300)
    """Wait after the sync before measuring, so the new pods' metrics are recorded."""

    MAX_IN_FLIGHT: int = setting(int, 20, ge=1, le=1000)
    """Measurements in flight per replica; a webhook beyond that gets 429."""

    CLUSTER_SCOPE_APP: str = setting(str, "argocd:cost-gate")
    """The gate application (``namespace:name``) that authorises cluster-wide reads; its syncs are
    not measured. ``off`` disables cluster-wide reads."""

    K_SINK: str | None = setting(str | None, None)
    """Where accepted sync events go (injected by a Knative SinkBinding). Unset: delivered to
    this function's own URL (the local stack)."""

    PORT: int = setting(int, 8080)
    """The port functions-framework serves on (set by Knative); the local delivery target."""


T = TypeVar("T")


def database_url() -> str:
    """``DATABASE_URL`` for the ``finops`` commands, or a ``ConfigError`` saying it is unset."""
    url = os.environ.get("DATABASE_URL")
    if not url:
        raise ConfigError("DATABASE_URL is not set (e.g. postgresql://finops@db.example:5432/finops)")
    return url


def environment(settings_class: type[Any], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``environ`` (the process environment) that are fields of ``settings_class``,
    found as pydantic-settings found them: by exact name if the class is ``case_sensitive``, else
    without regard to case; empty ones left out if it is ``env_ignore_empty``."""
    config = settings_class.model_config
    sensitive = bool(config.get("case_sensitive", False))
    ignore_empty = bool(config.get("env_ignore_empty", False))
    source = os.environ if environ is None else environ
    found = dict(source) if sensitive else {name.lower(): value for name, value in source.items()}
    values = {}
    for field in settings_class.model_fields:
        value = found.get(field if sensitive else field.lower())
        if value is not None and not (ignore_empty and value == ""):
            values[field] = value
    return values


def load(settings_class: type[T], environ: dict[str, str] | None = None) -> T:
    """Build ``settings_class`` from the environment (or ``environ``), or raise a ``ConfigError``
    whose message names every bad variable, e.g. ``DATABASE_URL: required``."""
    fields: dict[str, Any] = settings_class.model_fields  # type: ignore[attr-defined]
    if environ is None:
        values = environment(settings_class)
    else:  # only the given mapping (tests and the CLI must not pick up the caller's environment)
        values = {k: v for k, v in environ.items() if k in fields and v != ""}
    if issubclass(settings_class, PlainSettings):
        return settings_class.from_values(values)
    from infra.settings.base import validate

    return validate(settings_class, values)  # type: ignore[type-var]  # a pydantic class
