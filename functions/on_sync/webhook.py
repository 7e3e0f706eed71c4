"""The webhook body our Argo CD Notifications template sends (``knative/argocd/``), validated.

Field names are exactly the template's; extra fields are ignored. Validation is total: any body
is either a ``SyncWebhook`` or a ``WebhookInvalid`` (a 400) naming the first bad field as
pydantic words it (``revisions.3: Input should be a valid string``), never an exception of
another kind.

- The application's names are checked against Kubernetes rules (with ``fullmatch``: a name
  ending in a newline is refused) and every stored text is free of what PostgreSQL cannot
  store (NUL, lone surrogates).
- ``resources`` is judged entry by entry. An entry we cannot use (a name invalid for its kind,
  a bad namespace, a NUL) is dropped and noted in ``skipped``; it never fails the webhook,
  because Argo CD Notifications does not retry a 4xx and the sync would never be measured.
  Names follow their kind's rule: RBAC objects allow ``:`` (``system:controller:foo``).
- ``finishedAt`` must lie in ``[2000-01-01, 2100-01-01)``: outside, converting it to UTC can
  overflow, and no real sync finished there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from finops.applications import is_local
from finops.errors import InvalidInput
from finops.hours import parse_timestamp
from finops.labels import is_label, is_subdomain, validate_object_name
from functions.edge import validation_message
from usecases.appcost.syncs import SyncEvent

__all__ = ["BODY_FIELDS", "Resource", "SyncWebhook", "WebhookInvalid"]

_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_REVISION = re.compile(r"[\x21-\x7e]{1,256}")  # printable, no spaces: a SHA, tag or chart version
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")  # PostgreSQL text refuses NUL; UTF-8 has no surrogates

MAX_RESOURCES = 2000
MAX_NOTES = 10  # reasons for dropped resources echoed in a response
MAX_REVISION_KEY = 2000  # the joined revisions are part of a unique index (btree rows: about 2.7 kB)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


class WebhookInvalid(InvalidInput):
    """The body is not a usable webhook: ``loc`` names the bad field (``()``: the body itself)."""

    def __init__(self, exc: ValidationError) -> None:
        super().__init__(validation_message(exc))
        self.loc: tuple[str | int, ...] = tuple(exc.errors(include_url=False)[0]["loc"])


def _storable(value: str) -> str:
    if _UNSTORABLE.search(value):
        raise ValueError("contains a NUL character or a lone surrogate, which cannot be stored")
    return value


Text = Annotated[str, AfterValidator(_storable)]


def _rule(ok: Callable[[str], object], what: str, *, optional: bool = False) -> AfterValidator:
    """The value when ``ok`` accepts it (or, ``optional``, it is empty), else ``'value' is not <what>``."""

    def check(value: str) -> str:
        if not (optional and not value) and not ok(value):
            raise ValueError(f"{value[:80]!r} is not {what}")
        return value

    return AfterValidator(check)


NAMESPACE = "a valid namespace (DNS-1123 label)"
Name = Annotated[str, _rule(is_subdomain, "a valid Kubernetes name (DNS-1123 subdomain)")]
Namespace = Annotated[str, _rule(is_label, NAMESPACE)]
Revision = Annotated[str, _rule(_REVISION.fullmatch, "a printable revision without spaces, at most 256 characters")]
_EMPTY_IS_NONE = BeforeValidator(lambda value: None if value == "" else value)


class Resource(BaseModel):
    """One entry of ``.app.status.resources``; its name is checked against its kind's rule."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    group: Annotated[str, _rule(is_subdomain, "an API group (DNS-1123 subdomain)", optional=True)] = ""
    version: Annotated[str, _rule(is_label, "an API version", optional=True)] = ""
    kind: Annotated[str, _rule(_KIND.fullmatch, "a Kubernetes kind")]
    namespace: Annotated[str, _rule(is_label, NAMESPACE, optional=True)] = ""
    name: str

    @model_validator(mode="after")
    def _name_for_kind(self) -> Resource:
        try:
            validate_object_name(self.kind, self.name)
        except InvalidInput as exc:
            raise ValueError(exc.message) from exc
        return self


def _problem(index: int, exc: ValidationError) -> str:
    """``resources[3].name: why``, the note for a dropped entry."""
    error = exc.errors(include_url=False)[0]
    where = "".join(f".{part}" if isinstance(part, str) else f"[{part}]" for part in error["loc"])
    return f"resources[{index}]{where}: {error['msg']}"


class SyncWebhook(BaseModel):
    """``{"app", "appNamespace", "project", "destinationNamespace", "destinationServer",
    "destinationName", "syncResult", "revision", "revisions", "finishedAt", "resources"}``."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    app: Name
    appNamespace: Namespace
    project: Annotated[Name | None, _EMPTY_IS_NONE] = None  # an AppProject is a Kubernetes object
    destinationNamespace: Annotated[Namespace | None, _EMPTY_IS_NONE] = None
    destinationServer: Text | None = Field(default=None, max_length=2048)
    destinationName: Text | None = Field(default=None, max_length=253)
    syncResult: Text | None = Field(default=None, max_length=64)
    revision: Annotated[Revision | None, _EMPTY_IS_NONE] = None
    revisions: list[Revision] | None = Field(default=None, max_length=64)
    finishedAt: datetime
    resources: list[Resource] | None = Field(default=None, max_length=MAX_RESOURCES)
    _skipped: tuple[str, ...] = PrivateAttr(default=())  # not read from the body: see ``skipped``

    @classmethod
    def parse(cls, data: object) -> SyncWebhook:
        """``data`` (a JSON value) as a webhook, or ``WebhookInvalid`` naming its first problem."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise WebhookInvalid(exc) from None

    @model_validator(mode="wrap")
    @classmethod
    def _usable_resources(cls, data: Any, handler: ModelWrapValidatorHandler[SyncWebhook]) -> SyncWebhook:
        notes: list[str] = []
        entries = data.get("resources") if isinstance(data, dict) else None
        if isinstance(entries, list) and len(entries) <= MAX_RESOURCES:  # else the field refuses it
            kept: list[Resource] = []
            for index, entry in enumerate(entries):
                try:
                    kept.append(Resource.model_validate(entry))
                except ValidationError as exc:
                    notes.append(_problem(index, exc))
            data = {**data, "resources": kept}
        hook = handler(data)
        hook._skipped = tuple(notes)
        return hook

    @property
    def skipped(self) -> list[str]:
        """``resources[i]...: why`` for every entry dropped as unusable."""
        return list(self._skipped)

    @field_validator("revisions")
    @classmethod
    def _revisions(cls, value: list[str] | None) -> list[str] | None:
        if value and len(",".join(value)) > MAX_REVISION_KEY:
            raise ValueError(f"the revisions joined must be at most {MAX_REVISION_KEY} characters")
        return value

    @field_validator("finishedAt", mode="before")
    @classmethod
    def _finished(cls, value: object) -> object:
        if not isinstance(value, str):
            raise ValueError("must be an RFC 3339 timestamp string")
        try:
            moment = parse_timestamp(value, field="finishedAt")
        except InvalidInput as exc:
            raise ValueError(exc.message.removeprefix("finishedAt: ")) from exc
        except OverflowError as exc:  # e.g. 9999-12-31T23:59:59-01:00 is past year 9999 in UTC
            raise ValueError(f"{value[:40]!r} is out of range") from exc
        if not EARLIEST <= moment < LATEST:
            raise ValueError(f"{value[:40]!r} is out of range (2000-01-01 to 2100-01-01)")
        return moment

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

    def skip_reason(self, gate: str) -> str | None:
        """Why this sync is not measured, if it is not (``gate``: ``CLUSTER_SCOPE_APP``)."""
        if self.syncResult is not None and self.syncResult != "Succeeded":
            return f"sync result is {self.syncResult}, not Succeeded"
        if not self.is_local:
            return "the application deploys to another cluster"
        if gate != "off" and self.identity == gate:
            return "the cluster-access gate application is not measured"
        if self.destinationNamespace is None:
            return "the application has no destination namespace"
        return None

    def notes(self, limit: int = MAX_NOTES) -> dict[str, Any]:
        """``resources_skipped`` and the first ``limit`` reasons, when entries were dropped."""
        if not self._skipped:
            return {}
        return {"resources_skipped": len(self._skipped), "resources_skipped_notes": list(self._skipped[:limit])}

    def event(self, cluster: str) -> SyncEvent:
        """The sync event to accept; its resources are the destination namespace's only (the
        application's share is of that namespace's pods)."""
        assert self.destinationNamespace is not None  # skip_reason refuses the webhook without one
        return SyncEvent(
            cluster=cluster,
            app_namespace=self.appNamespace,
            app_name=self.app,
            project=self.project,
            destination_namespace=self.destinationNamespace,
            revision=self.revision_key,
            finished_at=self.finishedAt,
            resources=[r.model_dump() for r in self.resources or [] if r.namespace in ("", self.destinationNamespace)],
        )


def parse_delivery(body: object) -> tuple[int, datetime | None]:
    """A ``dev.finops.sync.accepted`` CloudEvent's data: ``syncEventId`` and its ``notBefore``."""
    data = body if isinstance(body, dict) else {}
    event_id = data.get("syncEventId")
    if not isinstance(event_id, int) or isinstance(event_id, bool) or event_id < 1:
        raise InvalidInput("syncEventId: must be a positive integer")
    not_before = data.get("notBefore")
    if not_before is not None and not isinstance(not_before, str):
        raise InvalidInput("notBefore: must be an RFC 3339 timestamp")
    return event_id, None if not_before is None else parse_timestamp(not_before, field="notBefore")


BODY_FIELDS = tuple(SyncWebhook.model_fields)
"""The fields read from the body (the template's)."""
