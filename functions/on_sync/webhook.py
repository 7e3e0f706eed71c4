"""The webhook body our Argo CD Notifications template sends (``knative/argocd/``), validated.

Field names are exactly the template's; extra fields are ignored. Validation is total: any body
is either a ``SyncWebhook`` or a ``WebhookInvalid`` (a 400) naming the bad field, never an
exception of another kind.

- The application's names are checked against Kubernetes rules (with ``fullmatch``: a name
  ending in a newline is refused) and every stored text is free of what PostgreSQL cannot
  store (NUL, lone surrogates).
- ``resources`` is judged entry by entry. An entry we cannot use (a name invalid for its kind,
  a bad namespace, a NUL) is dropped and noted in ``skipped``; it never fails the webhook,
  because Argo CD Notifications does not retry a 4xx and the sync would never be measured.
  Names follow their kind's rule: RBAC objects allow ``:`` (``system:controller:foo``).
- ``finishedAt`` must lie in ``[2000-01-01, 2100-01-01)``: outside, converting it to UTC can
  overflow, and no real sync finished there.

The models are ``msgspec`` structs filled by the checks below, not pydantic models: the webhook
is the path a scale-to-zero cold start waits for, and importing pydantic and building the models
cost about 35 ms of it. The checks run field by field in the order pydantic ran them, and each
problem reads as pydantic's did (``app: Field required``, ``revisions.3: Input should be a valid
string``, ``finishedAt: Value error, ...``): the first problem is the one reported.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import msgspec

from finops.applications import is_local
from finops.errors import InvalidInput
from finops.hours import parse_timestamp
from finops.labels import is_label, is_subdomain, validate_namespace, validate_object_name

_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_REVISION = re.compile(r"[\x21-\x7e]{1,256}")  # printable, no spaces: a SHA, tag or chart version
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")  # PostgreSQL text refuses NUL; UTF-8 has no surrogates

MAX_RESOURCES = 2000
MAX_REVISION_KEY = 2000  # the joined revisions are part of a unique index (btree rows: about 2.7 kB)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
REQUIRED = "Field required"
NOT_TEXT = "Input should be a valid string"
NOT_LIST = "Input should be a valid list"

Loc = tuple[str | int, ...]


class Problem(Exception):
    """One value refused: where (``("revisions", 3)``) and why."""

    def __init__(self, loc: Loc, msg: str) -> None:
        super().__init__(msg)
        self.loc, self.msg = loc, msg


class WebhookInvalid(InvalidInput):
    """The body is not a usable webhook: ``loc`` names the bad field (``()``: the body itself)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(f"{'.'.join(str(part) for part in problem.loc) or 'body'}: {problem.msg}")
        self.loc = problem.loc


def _value_error(loc: Loc, why: str) -> Problem:
    return Problem(loc, f"Value error, {why}")


def _text(data: dict[str, Any], key: str, default: Any = ..., loc: Loc = ()) -> Any:
    """``data[key]`` if a string (or the default when absent, or ``None`` when allowed)."""
    if key not in data:
        if default is ...:
            raise Problem((*loc, key), REQUIRED)
        return default
    value = data[key]
    if isinstance(value, str) or (value is None and default is None):
        return value
    raise Problem((*loc, key), NOT_TEXT)


def _stored(data: dict[str, Any], key: str, max_length: int) -> str | None:
    """An optional text that is stored: at most ``max_length`` characters, no NUL or surrogate."""
    value = _text(data, key, None)
    if value is not None:
        if _UNSTORABLE.search(value):
            raise _value_error((key,), "contains a NUL character or a lone surrogate, which cannot be stored")
        if len(value) > max_length:  # pydantic's wording: its limit applied after the check above
            raise Problem((key,), f"Value should have at most {max_length} items after validation, not {len(value)}")
    return value  # type: ignore[no-any-return]


def _name(value: str, key: str) -> str:
    if not is_subdomain(value):
        raise _value_error((key,), f"{value[:80]!r} is not a valid Kubernetes name (DNS-1123 subdomain)")
    return value


def _namespace(value: str, loc: Loc) -> str:
    try:
        return validate_namespace(value)
    except InvalidInput as exc:
        raise _value_error(loc, f"{value[:80]!r} is not a valid namespace (DNS-1123 label)") from exc


class Resource(msgspec.Struct, frozen=True):
    """One entry of ``.app.status.resources``; its name is checked against its kind's rule."""

    kind: str
    name: str
    group: str = ""
    version: str = ""
    namespace: str = ""

    @classmethod
    def parse(cls, entry: object) -> Resource:
        """The entry as a ``Resource``, or the ``Problem`` with it (``loc`` within the entry)."""
        if not isinstance(entry, dict):
            raise Problem((), "Input should be a valid dictionary or instance of Resource")
        group = _text(entry, "group", "")
        if group and not is_subdomain(group):
            raise _value_error(("group",), f"{group[:80]!r} is not an API group (DNS-1123 subdomain)")
        version = _text(entry, "version", "")
        if version and not is_label(version):
            raise _value_error(("version",), f"{version[:80]!r} is not an API version")
        kind = _text(entry, "kind")
        if not _KIND.fullmatch(kind):
            raise _value_error(("kind",), f"{kind[:80]!r} is not a Kubernetes kind")
        namespace = _text(entry, "namespace", "")
        if namespace:
            _namespace(namespace, ("namespace",))
        name = _text(entry, "name")
        try:
            validate_object_name(kind, name)
        except InvalidInput as exc:
            raise _value_error((), exc.message) from exc
        return cls(kind=kind, name=name, group=group, version=version, namespace=namespace)

    def as_dict(self) -> dict[str, str]:
        """``{"group", "version", "kind", "namespace", "name"}``, as stored in the event."""
        return {
            "group": self.group,
            "version": self.version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
        }


def _problem(index: int, problem: Problem) -> str:
    """``resources[3].name: why``, the note for a dropped entry."""
    where = "".join(f".{part}" if isinstance(part, str) else f"[{part}]" for part in problem.loc)
    return f"resources[{index}]{where}: {problem.msg}"


def _revisions(data: dict[str, Any]) -> list[str] | None:
    value = data.get("revisions")
    if value is None:
        return None
    if not isinstance(value, list):
        raise Problem(("revisions",), NOT_LIST)
    if len(value) > 64:
        raise Problem(("revisions",), f"List should have at most 64 items after validation, not {len(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise Problem(("revisions", index), NOT_TEXT)
    for item in value:
        if not _REVISION.fullmatch(item):
            why = "every revision must be printable, without spaces, at most 256 characters"
            raise _value_error(("revisions",), why)
    if value and len(",".join(value)) > MAX_REVISION_KEY:
        raise _value_error(("revisions",), f"the revisions joined must be at most {MAX_REVISION_KEY} characters")
    return list(value)


def _finished(data: dict[str, Any]) -> datetime:
    if "finishedAt" not in data:
        raise Problem(("finishedAt",), REQUIRED)
    value = data["finishedAt"]
    if not isinstance(value, str):
        raise _value_error(("finishedAt",), "must be an RFC 3339 timestamp string")
    try:
        moment = parse_timestamp(value, field="finishedAt")
    except InvalidInput as exc:
        raise _value_error(("finishedAt",), exc.message.removeprefix("finishedAt: ")) from exc
    except OverflowError as exc:  # e.g. 9999-12-31T23:59:59-01:00 is past year 9999 in UTC
        raise _value_error(("finishedAt",), f"{value[:40]!r} is out of range") from exc
    if not EARLIEST <= moment < LATEST:
        raise _value_error(("finishedAt",), f"{value[:40]!r} is out of range (2000-01-01 to 2100-01-01)")
    return moment


def _resources(data: dict[str, Any], notes: list[str]) -> list[Resource] | None:
    entries = data.get("resources")
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise Problem(("resources",), NOT_LIST)
    if len(entries) > MAX_RESOURCES:
        raise Problem(
            ("resources",), f"List should have at most {MAX_RESOURCES} items after validation, not {len(entries)}"
        )
    kept: list[Resource] = []
    for index, entry in enumerate(entries):
        try:
            kept.append(Resource.parse(entry))
        except Problem as problem:
            notes.append(_problem(index, problem))
    return kept


class SyncWebhook(msgspec.Struct, frozen=True):
    """``{"app", "appNamespace", "project", "destinationNamespace", "destinationServer",
    "destinationName", "syncResult", "revision", "revisions", "finishedAt", "resources"}``."""

    app: str
    appNamespace: str
    finishedAt: datetime
    project: str | None = None
    destinationNamespace: str | None = None
    destinationServer: str | None = None
    destinationName: str | None = None
    syncResult: str | None = None
    revision: str | None = None
    revisions: list[str] | None = None
    resources: list[Resource] | None = None
    notes: tuple[str, ...] = ()  # not read from the body: the entries of resources dropped, and why

    @classmethod
    def parse(cls, data: object) -> SyncWebhook:
        """``data`` (a JSON value) as a webhook, or ``WebhookInvalid`` naming its first problem."""
        try:
            return cls._parse(data)
        except Problem as problem:
            raise WebhookInvalid(problem) from None

    @classmethod
    def _parse(cls, data: object) -> SyncWebhook:
        if not isinstance(data, dict):
            raise Problem((), "Input should be a valid dictionary or instance of SyncWebhook")
        app = _name(_text(data, "app"), "app")
        app_namespace = _namespace(_text(data, "appNamespace"), ("appNamespace",))
        project = _text(data, "project", None)
        project = _name(project, "project") if project else None  # an AppProject is a Kubernetes object
        destination = _text(data, "destinationNamespace", None)
        destination = _namespace(destination, ("destinationNamespace",)) if destination else None
        server = _stored(data, "destinationServer", 2048)
        destination_name = _stored(data, "destinationName", 253)
        sync_result = _stored(data, "syncResult", 64)
        revision = _text(data, "revision", None)
        if revision and not _REVISION.fullmatch(revision):
            raise _value_error(("revision",), "must be a printable revision without spaces, at most 256 characters")
        revisions = _revisions(data)
        finished = _finished(data)
        notes: list[str] = []
        resources = _resources(data, notes)
        return cls(
            app=app,
            appNamespace=app_namespace,
            project=project,
            destinationNamespace=destination,
            destinationServer=server,
            destinationName=destination_name,
            syncResult=sync_result,
            revision=revision or None,
            revisions=revisions,
            finishedAt=finished,
            resources=resources,
            notes=tuple(notes),
        )

    @property
    def skipped(self) -> list[str]:
        """``resources[i]...: why`` for every entry dropped as unusable."""
        return list(self.notes)

    @property
    def is_local(self) -> bool:
        """Deploys to this cluster: server empty or the in-cluster URL, and name empty or ``in-cluster``."""
        return is_local(self.destinationServer, self.destinationName)

    @property
    def identity(self) -> str:
        """``namespace:name``, the form of Argo CD's ``Argocd-Application-Name`` header."""
        return f"{self.appNamespace}:{self.app}"

    @property
    def revision_key(self) -> str:
        if self.revisions:
            return ",".join(self.revisions)
        return self.revision or ""


BODY_FIELDS = tuple(name for name in SyncWebhook.__struct_fields__ if name != "notes")
"""The fields read from the body (the template's)."""
