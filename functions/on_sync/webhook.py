"""The webhook body our Argo CD Notifications template sends (``knative/argocd/``), validated.

Field names are exactly the template's; extra fields are ignored. Names are checked against
Kubernetes rules before anything is stored or queried: a 400 names the bad field.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from finops.applications import is_local
from finops.errors import InvalidInput
from finops.hours import parse_timestamp
from finops.labels import validate_namespace

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KIND = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,62}$")
_REVISION = re.compile(r"^[\x21-\x7e]{1,256}$")  # printable, no spaces: a SHA, tag or chart version


def _name(value: str, field: str) -> str:
    if len(value) > 253 or not _SUBDOMAIN.match(value):
        raise ValueError(f"{value[:80]!r} is not a valid Kubernetes name")
    return value


def _namespace(value: str) -> str:
    try:
        return validate_namespace(value)
    except InvalidInput as exc:
        raise ValueError(f"{value[:80]!r} is not a valid namespace (DNS-1123 label)") from exc


class Resource(BaseModel):
    """One entry of ``.app.status.resources``."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    group: str = Field(default="", max_length=253)
    version: str = Field(default="", max_length=63)
    kind: str
    namespace: str = ""
    name: str

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if not _KIND.match(value):
            raise ValueError(f"{value[:80]!r} is not a Kubernetes kind")
        return value

    @field_validator("name")
    @classmethod
    def _resource_name(cls, value: str) -> str:
        return _name(value, "name")

    @field_validator("namespace")
    @classmethod
    def _resource_namespace(cls, value: str) -> str:
        return _namespace(value) if value else value


class SyncWebhook(BaseModel):
    """``{"app", "appNamespace", "project", "destinationNamespace", "destinationServer",
    "destinationName", "syncResult", "revision", "revisions", "finishedAt", "resources"}``."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    app: str
    appNamespace: str
    project: str | None = Field(default=None, max_length=253)
    destinationNamespace: str | None = None
    destinationServer: str | None = Field(default=None, max_length=2048)
    destinationName: str | None = Field(default=None, max_length=253)
    syncResult: str | None = Field(default=None, max_length=64)
    revision: str | None = None
    revisions: list[str] | None = Field(default=None, max_length=64)
    finishedAt: datetime
    resources: list[Resource] | None = Field(default=None, max_length=2000)

    @field_validator("app")
    @classmethod
    def _app(cls, value: str) -> str:
        return _name(value, "app")

    @field_validator("appNamespace")
    @classmethod
    def _app_namespace(cls, value: str) -> str:
        return _namespace(value)

    @field_validator("destinationNamespace")
    @classmethod
    def _destination(cls, value: str | None) -> str | None:
        return _namespace(value) if value else None

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str | None) -> str | None:
        if value and not _REVISION.match(value):
            raise ValueError("must be a printable revision without spaces, at most 256 characters")
        return value or None

    @field_validator("revisions")
    @classmethod
    def _revisions(cls, value: list[str] | None) -> list[str] | None:
        for item in value or []:
            if not _REVISION.match(item):
                raise ValueError("every revision must be printable, without spaces, at most 256 characters")
        return value

    @field_validator("finishedAt", mode="before")
    @classmethod
    def _finished(cls, value: object) -> object:
        if not isinstance(value, str):
            raise ValueError("must be an RFC 3339 timestamp string")
        try:
            return parse_timestamp(value, field="finishedAt")
        except InvalidInput as exc:
            raise ValueError(exc.message.removeprefix("finishedAt: ")) from exc

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
