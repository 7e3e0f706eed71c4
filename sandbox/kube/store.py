"""The sandbox's state: every object, behind one lock, with apiserver write semantics.

The WSGI layer only translates URLs; every rule that decides an answer (conflicts, status
subresource, finalizers, selectors) is applied here, so tests can drive ``KubeStore``
directly and get the same behaviour (and the same ``ApiError``) as over HTTP. Objects are
keyed by ``(group, plural, namespace, name)`` without the version: like a CRD with several
served versions and no conversion webhook, a read at any version returns the same object
with ``apiVersion`` rewritten. One re-entrant lock serialises all writes, which makes the
global ``resourceVersion`` counter trivially monotonic; the sandbox never needs throughput.
"""

from __future__ import annotations

import builtins
import copy
import logging
import threading
import uuid
from collections.abc import Iterable
from typing import Any, Literal, Protocol

from sandbox.kube import errors, objects
from sandbox.kube.access import AccessRules
from sandbox.kube.objects import Obj
from sandbox.kube.patches import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    json_patch,
    merge_patch,
)
from sandbox.kube.resources import (
    CRD_GROUP,
    ResourceRegistry,
    ResourceType,
    join_api_version,
    split_api_version,
)
from sandbox.kube.schema import CrdSchemas
from sandbox.kube.seed import apply_order
from sandbox.kube.selectors import (
    SelectorError,
    fields_match,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)

Key = tuple[str, str, str, str]  # group, plural, namespace ("" when cluster-scoped), name
Change = Literal["add", "update", "delete"]  # a watch's ADDED, MODIFIED, DELETED

log = logging.getLogger("sandbox.kube")


class ChangeListener(Protocol):
    """Told of every committed change, in resourceVersion order, while the store's lock is held.

    It must only record or enqueue (no I/O, no waiting) and must copy what it keeps: ``obj`` is
    the stored object. ``sandbox.kube.events.EventSource`` is one.
    """

    def changed(self, change: Change, obj: Obj) -> None: ...


def _only_revision_differs(stored: Obj, result: Obj) -> bool:
    """A no-op write: the apiserver neither bumps resourceVersion nor emits a watch event for it."""
    if stored.keys() != result.keys() or any(stored[k] != result[k] for k in stored if k != "metadata"):
        return False
    before, after = dict(stored.get("metadata") or {}), dict(result.get("metadata") or {})
    before.pop("resourceVersion", None)
    after.pop("resourceVersion", None)
    return before == after


class KubeStore:
    """In-memory, thread-safe object storage with Kubernetes API semantics."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._objects: dict[Key, Obj] = {}
        self._revision = 0
        self.registry = ResourceRegistry()
        self.schemas = CrdSchemas()  # kinds whose CRD has a schema are pruned and validated on write
        self._listeners: tuple[ChangeListener, ...] = ()  # empty: writes skip notifying entirely
        self.access = AccessRules()  # SelfSubjectAccessReviews: all allowed unless a test denies one

    # ----------------------------------------------------------------- change notification

    def add_listener(self, listener: ChangeListener) -> None:
        """Tell ``listener`` of every later add, update and delete (see ``ChangeListener``)."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: ChangeListener) -> None:
        with self._lock:
            self._listeners = tuple(known for known in self._listeners if known is not listener)

    def _notify(self, change: Change, obj: Obj) -> None:
        for listener in self._listeners:
            try:
                listener.changed(change, obj)
            except Exception:  # a listener's bug must not fail a write that is already committed
                log.exception("change listener %r failed on %s", listener, change)

    # ----------------------------------------------------------------- resource-level API
    # Used by the HTTP layer: the resource and version come from the URL, ``namespace`` is
    # ``None`` for cluster-scoped and all-namespace URLs.

    def _next_revision(self) -> str:
        self._revision += 1
        return str(self._revision)

    def _key(self, resource: ResourceType, namespace: str | None, name: str) -> Key:
        if resource.namespaced is True and not namespace:
            raise errors.resource_not_found(f"{resource.qualified()} is namespaced")
        if resource.namespaced is False and namespace:
            raise errors.resource_not_found(f"{resource.qualified()} is cluster-scoped")
        return (resource.group, resource.plural, namespace or "", name)

    def _view(self, obj: Obj, resource: ResourceType, version: str | None) -> Obj:
        result = copy.deepcopy(obj)
        if version:
            result["apiVersion"] = join_api_version(resource.group, version)
        return result

    def _check_type(self, resource: ResourceType, body: Obj) -> ResourceType:
        """Reject a body of another kind; learn the kind of an undeclared resource."""
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if isinstance(api_version, str) and split_api_version(api_version)[0] != resource.group:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API group ({resource.group or 'core'})"
            )
        if isinstance(kind, str) and kind != resource.kind:
            if resource.namespaced is not None:
                raise errors.bad_request(
                    f"the kind in the data ({kind}) does not match the expected kind "
                    f"({resource.kind}) for {resource.qualified()}"
                )
            self.registry.learn_kind(resource.group, resource.plural, kind)
            resource = ResourceType(resource.group, kind, resource.plural, None)
        return resource

    def _stored(self, key: Key) -> Obj:
        found = self._objects.get(key)
        if found is None:
            raise errors.not_found(key[0], key[1], key[3])
        return found

    def _admit(
        self, resource: ResourceType, version: str | None, stored: Obj, candidate: Obj, subresource: str | None
    ) -> Obj:
        """The object a PUT or PATCH (``candidate``: the patched object) of the main resource or of
        ``/status`` would store; of a kind with a CRD schema, pruned, defaulted and validated (422)."""
        version = version or split_api_version(str(stored.get("apiVersion", "")))[1]
        candidate = self.schemas.decode(resource, version, candidate, subresource=subresource)
        merge = objects.merge_status if subresource == "status" else objects.merge_main
        result = merge(stored, candidate)
        self.schemas.validate(resource, version, result, str(stored["metadata"].get("name", "")))
        return result

    def _commit(self, key: Key, resource: ResourceType, stored: Obj, result: Obj) -> Obj:
        """Store ``result`` as the next revision; drop it if its deletion is now unblocked."""
        if objects.is_deleting(stored) and objects.added_finalizers(stored, result):
            raise errors.invalid(
                resource.group,
                resource.plural,
                key[3],
                "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted",
            )
        objects.metadata(result)["resourceVersion"] = self._next_revision()
        gone = objects.is_deleting(result) and not objects.finalizers(result)
        if gone:
            del self._objects[key]
        else:
            self._objects[key] = result
        if (resource.group, resource.kind) == (CRD_GROUP, "CustomResourceDefinition"):
            self.registry.register_crd(result)
            (self.schemas.unregister if gone else self.schemas.register)(result)
        if self._listeners and (gone or not _only_revision_differs(stored, result)):
            self._notify("delete" if gone else "update", result)
        return result

    def create_in(
        self,
        resource: ResourceType,
        version: str,
        namespace: str | None,
        body: Obj,
        *,
        keep_status: bool = False,
        keep_identity: bool = False,
    ) -> Obj:
        """POST: store a new object; ``status`` is dropped unless ``keep_status`` (fixtures), and a
        given ``uid``/``creationTimestamp`` replaced unless ``keep_identity`` (seeding)."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        resource = self._check_type(resource, body)
        obj = objects.strip_for_create(body, keep_status=keep_status)
        meta = objects.metadata(obj)
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
        if not isinstance(name, str) or not name:
            raise errors.invalid(
                resource.group, resource.plural, "", "metadata.name: Required value: name or generateName is required"
            )
        objects.check_identity(resource, namespace, name, obj)
        meta["name"] = name
        if resource.namespaced is False or not namespace:
            meta.pop("namespace", None)
        else:
            meta["namespace"] = namespace
        obj = {"apiVersion": join_api_version(resource.group, version), "kind": resource.kind, **obj}
        obj["apiVersion"], obj["kind"] = join_api_version(resource.group, version), resource.kind
        # Of a kind with a CRD schema: pruned, defaulted and validated (422) like on the apiserver.
        obj = self.schemas.decode(resource, version, obj, create=True)
        self.schemas.validate(resource, version, obj, name)
        self.registry.note_version(resource.group, version)
        with self._lock:
            key = self._key(resource, namespace, name)
            if key in self._objects:
                raise errors.already_exists(resource.group, resource.plural, name)
            objects.initialise(obj, self._next_revision(), keep_identity=keep_identity)
            self._objects[key] = obj
            if (resource.group, resource.kind) == (CRD_GROUP, "CustomResourceDefinition"):
                self.registry.register_crd(obj)
                self.schemas.register(obj)
            if self._listeners:
                self._notify("add", obj)
            return self._view(obj, resource, version)

    def get_in(self, resource: ResourceType, version: str | None, namespace: str | None, name: str) -> Obj:
        with self._lock:
            return self._view(self._stored(self._key(resource, namespace, name)), resource, version)

    def list_in(
        self,
        resource: ResourceType,
        version: str | None,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[builtins.list[Obj], str]:
        """Matching objects sorted by namespace and name, and the list's resourceVersion."""
        try:
            labels = parse_label_selector(label_selector)
            fields = parse_field_selector(field_selector)
        except SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc
        if namespace:
            self._key(resource, namespace, "")  # a cluster-scoped resource has no namespaced list
        with self._lock:
            items = [
                self._view(obj, resource, version)
                for (group, plural, ns, _), obj in sorted(self._objects.items())
                if (group, plural) == (resource.group, resource.plural)
                and (not namespace or ns == namespace)
                and labels_match(labels, (obj.get("metadata") or {}).get("labels"))
                and fields_match(fields, obj)
            ]
            return items, str(self._revision)

    def replace_in(
        self,
        resource: ResourceType,
        version: str | None,
        namespace: str | None,
        name: str,
        body: Obj,
        *,
        subresource: str | None = None,
    ) -> Obj:
        """PUT: replace the object (or only its status) if the precondition holds."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        self._check_type(resource, body)
        objects.check_identity(resource, namespace, name, body)
        with self._lock:
            key = self._key(resource, namespace, name)
            return self._write(key, resource, version, self._stored(key), body, subresource)

    def patch_in(
        self,
        resource: ResourceType,
        version: str | None,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        content_type: str = MERGE_PATCH,
        subresource: str | None = None,
    ) -> Obj:
        """PATCH: merge or JSON patch the stored object, then write it like a PUT."""
        content_type = content_type.split(";")[0].strip().lower()
        if content_type not in (MERGE_PATCH, STRATEGIC_MERGE_PATCH, JSON_PATCH):
            raise errors.unsupported_media_type(content_type)
        with self._lock:
            key = self._key(resource, namespace, name)
            stored = self._stored(key)
            if content_type == JSON_PATCH:
                try:
                    candidate = json_patch(stored, patch)
                except PatchError as exc:
                    raise errors.ApiError(422, "Invalid", f"the JSON patch could not be applied: {exc}") from exc
            elif isinstance(patch, dict):
                candidate = merge_patch(stored, patch)
            else:
                raise errors.bad_request(
                    f"a {content_type} body must be a JSON object; send a list of operations as {JSON_PATCH}"
                )
            if not isinstance(candidate, dict):
                raise errors.invalid(resource.group, resource.plural, name, "the patched object is not a JSON object")
            self._check_type(resource, candidate)
            objects.check_identity(resource, namespace, name, candidate)
            return self._write(key, resource, version, stored, candidate, subresource)

    def _write(
        self, key: Key, resource: ResourceType, version: str | None, stored: Obj, body: Obj, subresource: str | None
    ) -> Obj:
        """A PUT's or PATCH's write, under the lock: its precondition, admission and commit."""
        if objects.stale_precondition(body, stored):
            raise errors.conflict(resource.group, resource.plural, key[3])
        result = self._admit(resource, version, stored, body, subresource)
        return self._view(self._commit(key, resource, stored, result), resource, version)

    def delete_in(
        self,
        resource: ResourceType,
        version: str | None,
        namespace: str | None,
        name: str,
        *,
        options: Obj | None = None,
    ) -> tuple[Obj, bool]:
        """DELETE: ``(object, gone)``; with finalizers the object stays, marked for deletion."""
        preconditions = (options or {}).get("preconditions") or {}
        with self._lock:
            key = self._key(resource, namespace, name)
            stored = self._stored(key)
            for field in ("resourceVersion", "uid"):
                wanted = preconditions.get(field)
                if wanted and str(wanted) != str(stored["metadata"].get(field)):
                    raise errors.conflict(resource.group, resource.plural, name)
            if not objects.finalizers(stored):
                del self._objects[key]
                if (resource.group, resource.kind) == (CRD_GROUP, "CustomResourceDefinition"):
                    self.schemas.unregister(stored)
                revision = self._next_revision()
                if self._listeners:  # a watch's DELETED carries the deletion's resourceVersion
                    self._notify("delete", {**stored, "metadata": {**stored["metadata"], "resourceVersion": revision}})
                return self._view(stored, resource, version), True
            if objects.is_deleting(stored):
                return self._view(stored, resource, version), False
            result = objects.mark_deleting(copy.deepcopy(stored))
            return self._view(self._commit(key, resource, stored, result), resource, version), False

    # ----------------------------------------------------------------- convenience API
    # For tests and seeding: resources are named by apiVersion and kind (or plural).

    def _resolve(self, api_version: str, kind_or_plural: str) -> tuple[ResourceType, str]:
        group, version = split_api_version(api_version)
        return self.registry.resolve(group, kind_or_plural), version

    def _namespace_for(self, resource: ResourceType, obj: Obj) -> str | None:
        namespace = (obj.get("metadata") or {}).get("namespace")
        if resource.namespaced is False:
            return None
        if resource.namespaced is True:
            return namespace or "default"
        return namespace or None

    def create(self, obj: Obj, *, keep_status: bool = True, keep_identity: bool = False) -> Obj:
        """Create ``obj`` (it names its own apiVersion, kind and namespace)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            raise errors.bad_request("an object needs apiVersion and kind")
        resource, version = self._resolve(api_version, kind)
        namespace = self._namespace_for(resource, obj)
        return self.create_in(resource, version, namespace, obj, keep_status=keep_status, keep_identity=keep_identity)

    def get(self, api_version: str, kind_or_plural: str, namespace: str | None, name: str) -> Obj | None:
        resource, version = self._resolve(api_version, kind_or_plural)
        try:
            return self.get_in(resource, version, namespace, name)
        except errors.ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def list(
        self,
        api_version: str,
        kind_or_plural: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[Obj]:
        resource, version = self._resolve(api_version, kind_or_plural)
        items, _ = self.list_in(
            resource, version, namespace, label_selector=label_selector, field_selector=field_selector
        )
        return items

    def replace(self, obj: Obj, *, subresource: str | None = None) -> Obj:
        resource, version = self._resolve(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        name = str((obj.get("metadata") or {}).get("name", ""))
        namespace = self._namespace_for(resource, obj)
        return self.replace_in(resource, version, namespace, name, obj, subresource=subresource)

    def patch(
        self,
        api_version: str,
        kind_or_plural: str,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        content_type: str = MERGE_PATCH,
        subresource: str | None = None,
    ) -> Obj:
        resource, version = self._resolve(api_version, kind_or_plural)
        return self.patch_in(
            resource, version, namespace, name, patch, content_type=content_type, subresource=subresource
        )

    def delete(self, api_version: str, kind_or_plural: str, namespace: str | None, name: str) -> Obj | None:
        """Delete; returns the object if finalizers keep it alive, else ``None``."""
        resource, version = self._resolve(api_version, kind_or_plural)
        obj, gone = self.delete_in(resource, version, namespace, name)
        return None if gone else obj

    def apply_manifests(self, docs: Iterable[Obj]) -> builtins.list[Obj]:
        """Create or overwrite each manifest, status included (fixture semantics).

        CRDs go first and Namespaces next, whatever their position, so a custom resource
        read before its CRD still gets the declared plural and scope. A manifest's own ``uid`` and
        ``creationTimestamp`` are kept when it is created, so seeded ``ownerReferences`` resolve.
        """
        applied = []
        for doc in apply_order(docs):
            resource, version = self._resolve(str(doc.get("apiVersion", "")), str(doc.get("kind", "")))
            namespace = self._namespace_for(resource, doc)
            name = str((doc.get("metadata") or {}).get("name", ""))
            with self._lock:
                existing = self._objects.get(self._key(resource, namespace, name)) if name else None
                if existing is None:
                    applied.append(self.create(doc, keep_status=True, keep_identity=True))
                    continue
                key = self._key(resource, namespace, name)
                result = self._admit(resource, version, existing, doc, None)
                result = self._admit(resource, version, result, doc, "status")
                applied.append(self._view(self._commit(key, resource, existing, result), resource, version))
        return applied
