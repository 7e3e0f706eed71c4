"""What the API server does with a custom resource's body before storing it: prune, default, validate.

A real kube-apiserver decodes every write of a custom resource (create, update, patch after
applying it, ``/status``) against the structural ``openAPIV3Schema`` of the served version of its
CRD: undeclared fields are *pruned* (unless ``x-kubernetes-preserve-unknown-fields: true``), nulls
of non-nullable fields dropped, ``default`` s filled in, then the object is validated
(``sandbox.kube.validation``). A failure is a ``422 Invalid`` Status listing every field error,
worded like the real server (``status.ready: Invalid value: "boolean": status.ready in body must
be of type string: "boolean"``). ``metadata`` is never pruned or validated here; CEL rules
(``x-kubernetes-validations``) are not evaluated (tests/deploy/test_crds.py evaluates them).

``CrdSchemas`` holds the schemas of the CRDs created in a sandbox store; kinds without a CRD (or
whose CRD has no schema) are stored as sent. Every pruned field of a write is recorded in
``CrdSchemas.pruned``, every refused write in ``CrdSchemas.rejected``.

    schemas = CrdSchemas()
    schemas.register(crd_manifest)
    body = schemas.decode(resource, "v1alpha1", body)   # pruned and defaulted copy
    schemas.validate(resource, "v1alpha1", body)        # ApiError 422 Invalid if not admissible
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sandbox.kube.errors import ApiError
from sandbox.kube.resources import ResourceType, guess_plural, split_api_version
from sandbox.kube.validation import FieldError, Schema, join, validate

# Root fields every object keeps whatever its schema says; ``metadata`` is validated by the server.
_ROOT_KEPT = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True)
class Pruned:
    """A field the server dropped from a write because the schema does not declare it."""

    kind: str
    namespace: str
    name: str
    path: str
    value: Any
    subresource: str | None = None


@dataclass(frozen=True)
class Rejected:
    """A write the server refused with ``422 Invalid`` because of the schema."""

    kind: str
    namespace: str
    name: str
    errors: tuple[FieldError, ...]


# ----------------------------------------------------------------------------- pure functions


def prune(schema: Schema, value: Any, path: str = "", *, root: bool = True) -> tuple[Any, list[tuple[str, Any]]]:
    """``value`` without the fields ``schema`` does not declare, and ``(path, value)`` of each dropped.

    Also drops ``null`` s of fields that are not ``nullable`` (the server does this before defaulting).
    ``value`` is not modified. A value of the wrong type is kept as is, for validation to reject.
    """
    dropped: list[tuple[str, Any]] = []
    result = _prune(schema, copy.deepcopy(value), path, dropped, root=root)
    return result, dropped


def _prune(schema: Schema, value: Any, path: str, dropped: list[tuple[str, Any]], *, root: bool) -> Any:
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or extra is True
        kept_anyway = _ROOT_KEPT if root else ()
        for name in list(value):
            child = join(path, name)
            item = value[name]
            if name in kept_anyway and name not in properties:
                continue
            if root and name == "metadata":
                continue  # ObjectMeta is the server's: neither pruned nor validated against the schema
            sub = properties.get(name)
            if sub is None and isinstance(extra, Mapping):
                sub = extra
            if sub is None:
                if not preserve:
                    dropped.append((child, value.pop(name)))
                continue
            if item is None and not sub.get("nullable"):
                del value[name]  # a null of a non-nullable field is dropped, not rejected
                continue
            value[name] = _prune(sub, item, child, dropped, root=False)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [
            _prune(schema["items"], item, f"{path}[{index}]", dropped, root=False) for index, item in enumerate(value)
        ]
    return value


def apply_defaults(schema: Schema, value: Any, *, root: bool = True) -> Any:
    """Fill in the ``default`` of every absent field under a present parent (in place); returns ``value``."""
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties") or {}
        for name, sub in properties.items():
            if root and name == "metadata":
                continue
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                apply_defaults(sub, value[name], root=False)
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for name, item in value.items():
                if name not in properties:
                    apply_defaults(extra, item, root=False)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            apply_defaults(schema["items"], item, root=False)
    return value


# ----------------------------------------------------------------------------- CRD schemas


def crd_schemas(crd: Mapping[str, Any]) -> tuple[dict[str, Schema], str | None]:
    """``({version: openAPIV3Schema}, storage version)`` of an ``apiextensions.k8s.io/v1`` CRD
    manifest; versions without a schema are left out."""
    spec = crd.get("spec") or {}
    found: dict[str, Schema] = {}
    storage: str | None = None
    for entry in spec.get("versions") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        schema = (entry.get("schema") or {}).get("openAPIV3Schema")
        if isinstance(schema, Mapping):
            found[entry["name"]] = schema
        if entry.get("storage") or storage is None:
            storage = entry["name"]
    return found, storage


@dataclass(frozen=True)
class _Crd:
    kind: str
    schemas: dict[str, Schema]
    storage: str | None


class CrdSchemas:
    """The schemas of the CRDs created in one store, keyed by ``(group, plural)``; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._crds: dict[tuple[str, str], _Crd] = {}
        self.pruned: list[Pruned] = []  # every field pruned from a write, oldest first
        self.rejected: list[Rejected] = []  # every write refused by ``validate``, oldest first

    def register(self, crd: Mapping[str, Any]) -> None:
        """Use ``crd``'s schemas from now on (replacing an earlier version of the same CRD)."""
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
        if not isinstance(group, str) or not isinstance(kind, str):
            return
        if not isinstance(plural, str):
            plural = guess_plural(kind)
        schemas, storage = crd_schemas(crd)
        with self._lock:
            if not schemas:
                self._crds.pop((group, plural), None)
                return
            self._crds[(group, plural)] = _Crd(kind, schemas, storage)

    def unregister(self, crd: Mapping[str, Any]) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        with self._lock:
            self._crds.pop((str(spec.get("group")), str(names.get("plural"))), None)

    def _crd(self, resource: ResourceType) -> _Crd | None:
        with self._lock:
            return self._crds.get((resource.group, resource.plural))

    def schema_for(self, resource: ResourceType, version: str | None) -> Schema | None:
        """The schema of ``version`` of ``resource`` (the storage version's if it has none), or ``None``."""
        crd = self._crd(resource)
        if crd is None:
            return None
        if version and version in crd.schemas:
            return crd.schemas[version]
        if crd.storage and crd.storage in crd.schemas:
            return crd.schemas[crd.storage]
        return next(iter(crd.schemas.values()))

    def governs(self, resource: ResourceType) -> bool:
        return self._crd(resource) is not None

    def decode(
        self,
        resource: ResourceType,
        version: str | None,
        body: dict[str, Any],
        *,
        subresource: str | None = None,
        create: bool = False,
    ) -> dict[str, Any]:
        """``body`` pruned and defaulted as the server decodes it (a copy; ``body`` itself if no CRD).

        Pruned fields that would have reached the stored object (all of them on ``create``, the
        ``status`` ones for a ``/status`` write, the others for a main resource write) are
        appended to ``pruned``.
        """
        crd = self._crd(resource)
        schema = self.schema_for(resource, version or _version_of(body))
        if crd is None or schema is None:
            return body
        result, dropped = prune(schema, body)
        if not isinstance(result, dict):
            return body
        apply_defaults(schema, result)
        meta = body.get("metadata") or {}
        for path, value in dropped:
            in_status = path == "status" or path.startswith(("status.", "status["))
            if create or in_status == (subresource == "status"):
                entry = Pruned(
                    crd.kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""), path, value, subresource
                )
                with self._lock:
                    self.pruned.append(entry)
        return result

    def errors(self, resource: ResourceType, version: str | None, obj: Mapping[str, Any]) -> list[FieldError]:
        """The field errors of ``obj`` (``[]`` if it has no CRD here, or is valid)."""
        schema = self.schema_for(resource, version or _version_of(obj))
        if schema is None:
            return []
        return validate(schema, obj)

    def validate(self, resource: ResourceType, version: str | None, obj: Mapping[str, Any], name: str = "") -> None:
        """Raise the server's ``422 Invalid`` if ``obj`` breaks its CRD's schema."""
        found = self.errors(resource, version, obj)
        if found:
            crd = self._crd(resource)
            kind = crd.kind if crd is not None else resource.kind
            meta = obj.get("metadata") or {}
            name = name or str(meta.get("name") or "")
            with self._lock:
                self.rejected.append(Rejected(kind, str(meta.get("namespace") or ""), name, tuple(found)))
            raise invalid(kind, resource.group, name, found)


def _version_of(obj: Mapping[str, Any]) -> str | None:
    api_version = obj.get("apiVersion")
    return split_api_version(api_version)[1] if isinstance(api_version, str) else None


def invalid(kind: str, group: str, name: str, found: list[FieldError]) -> ApiError:
    """The ``422 Invalid`` Status of a custom resource's field errors, as the real server words it."""
    listed = found[0].message if len(found) == 1 else "[" + ", ".join(e.message for e in found) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return ApiError(
        422,
        "Invalid",
        f'{qualified} "{name}" is invalid: {listed}',
        details={"name": name, "group": group, "kind": kind, "causes": [e.cause() for e in found]},
    )
