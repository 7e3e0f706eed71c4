"""The HTTP face of the sandbox: Kubernetes REST paths in, ``KubeStore`` calls out.

Only URL parsing, body decoding and status codes live here; every decision about objects is
the store's. The path grammar is the apiserver's:

    /api/v1/...                  core group          /apis/{group}/{version}/...  others
    .../namespaces/{ns}/{plural}[/{name}[/status]]   namespaced
    .../{plural}[/{name}[/status]]                    cluster-scoped, or all namespaces (list)

``/api/v1/namespaces/{name}[/status]`` is the Namespace object itself, the same ambiguity
the real server resolves the same way. ``/version``, ``/api`` and ``/apis`` answer minimal
discovery documents so ``kubectl version`` style probes work, and ``/api/v1`` and
``/apis/{group}/{version}`` the APIResourceList of the declared resources (built in or from a
CRD: plural, kind, scope, ``status`` subresource); a group/version never seen is a 404
``NotFound`` Status, as on a real apiserver. A ``SelfSubjectAccessReview`` is answered by the
store's ``access`` rules (``sandbox.kube.access``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Request, Response

from sandbox.kube import access, errors
from sandbox.kube.patches import PATCH_TYPES
from sandbox.kube.resources import ResourceType, join_api_version
from sandbox.kube.store import KubeStore

if TYPE_CHECKING:
    from collections.abc import Iterable

    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger(__name__)

SERVER_VERSION = {
    "major": "1",
    "minor": "33",
    "gitVersion": "v1.33.0-sandbox",
    "gitCommit": "sandbox",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.24",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass(frozen=True)
class Route:
    """A parsed resource URL."""

    group: str
    version: str
    plural: str
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_route(parts: list[str]) -> Route | None:
    """Split a resource path (already split on ``/``) into its parts; ``None`` if it is not one."""
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    is_namespace_object = group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")
    if len(rest) >= 3 and rest[0] == "namespaces" and not is_namespace_object:
        namespace, rest = rest[1], rest[2:]
    if not 1 <= len(rest) <= 3:
        return None
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) == 3 else None
    return Route(group, version, rest[0], namespace, name, subresource)


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body), status=status, mimetype="application/json")


def _body(request: Request, *, required: bool) -> Any:
    raw = request.get_data(cache=False)
    if not raw.strip():
        if required:
            raise errors.bad_request("the request body is empty")
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from exc


class KubeApp:
    """A WSGI application serving one ``KubeStore``."""

    def __init__(self, store: KubeStore) -> None:
        self.store = store

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        request = Request(environ)
        try:
            response = self.dispatch(request)
        except errors.ApiError as exc:
            response = _json(exc.status(), exc.code)
        except Exception:  # a sandbox bug must still answer like an apiserver
            log.exception("internal error serving %s %s", request.method, request.path)
            response = _json(errors.ApiError(500, "InternalError", "internal error").status(), 500)
        return response(environ, start_response)

    def dispatch(self, request: Request) -> Response:
        if request.path.rstrip("/") == access.PATH and request.method == "POST":
            user = request.headers.get("Impersonate-User")
            return _json(self.store.access.review(_body(request, required=True), user), 201)
        parts = [p for p in request.path.split("/") if p]
        discovery = self._discovery(parts)
        if discovery is not None:
            return _json(discovery)
        route = parse_route(parts)
        if route is None or route.subresource not in (None, "status"):
            raise errors.resource_not_found(request.path)
        if request.args.get("watch") in ("true", "1"):
            raise errors.bad_request("watch is not supported by the sandbox API server")
        resource = self.store.registry.by_plural(route.group, route.plural)
        if route.name is None:
            return self._collection(request, route, resource)
        return self._item(request, route, resource, route.name)

    def _collection(self, request: Request, route: Route, resource: ResourceType) -> Response:
        if request.method == "GET":
            items, revision = self.store.list_in(
                resource,
                route.version,
                route.namespace,
                label_selector=request.args.get("labelSelector"),
                field_selector=request.args.get("fieldSelector"),
            )
            kind = (items[0]["kind"] if items else resource.kind) + "List"
            return _json(
                {
                    "apiVersion": join_api_version(route.group, route.version),
                    "kind": kind,
                    "metadata": {"resourceVersion": revision},
                    "items": items,
                }
            )
        if request.method == "POST":
            body = _body(request, required=True)
            created = self.store.create_in(resource, route.version, route.namespace, body)
            return _json(created, 201)
        raise errors.method_not_allowed(request.method)

    def _item(self, request: Request, route: Route, resource: ResourceType, name: str) -> Response:
        store, ns, version, sub = self.store, route.namespace, route.version, route.subresource
        if request.method == "GET":
            return _json(store.get_in(resource, version, ns, name))
        if request.method == "PUT":
            body = _body(request, required=True)
            return _json(store.replace_in(resource, version, ns, name, body, subresource=sub))
        if request.method == "PATCH":
            content_type = (request.mimetype or "").lower()
            if content_type not in PATCH_TYPES:
                raise errors.unsupported_media_type(content_type)
            patch = _body(request, required=True)
            return _json(store.patch_in(resource, version, ns, name, patch, content_type=content_type, subresource=sub))
        if request.method == "DELETE" and sub is None:
            options = _body(request, required=False)
            obj, gone = store.delete_in(
                resource, version, ns, name, options=options if isinstance(options, dict) else None
            )
            if gone:
                uid = str(obj["metadata"].get("uid", ""))
                return _json(errors.success(resource.group, resource.plural, name, uid))
            return _json(obj)
        raise errors.method_not_allowed(request.method)

    def _discovery(self, parts: list[str]) -> dict[str, Any] | None:
        versions = self.store.registry.versions()
        if parts == ["version"]:
            return SERVER_VERSION
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if parts == ["apis"]:
            groups = [_group(g, v) for g, v in versions.items() if g]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in versions:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group(parts[1], versions[parts[1]])}
        if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
            group = "" if parts[0] == "api" else parts[1]
            if group and parts[2] not in versions.get(group, []):
                raise errors.resource_not_found("/" + "/".join(parts))  # like the apiserver: 404, a Status
            return {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": join_api_version(group, parts[-1]),
                "resources": [entry for r in self.store.registry.resources(group) for entry in _resource_entries(r)],
            }
        return None


def _resource_entries(resource: ResourceType) -> list[dict[str, Any]]:
    """A resource's APIResourceList entries: itself and its ``status`` subresource.

    Only declared resources (built-in or from a CRD) are listed: one nobody declared (scope
    ``None``) is served leniently at either URL shape, but its scope is unknown, so discovery
    leaves it out as a real apiserver would leave out a kind without a CRD.
    """
    if resource.namespaced is None:
        return []
    main = {
        "name": resource.plural,
        "singularName": resource.kind.lower(),
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": ["create", "delete", "get", "list", "patch", "update"],
    }
    status = {
        "name": f"{resource.plural}/status",
        "singularName": "",
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": ["get", "patch", "update"],
    }
    return [main, status]


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    stable = [e for e in entries if e["version"][1:].isdigit()]
    return {"name": name, "versions": entries, "preferredVersion": (stable or entries)[-1]}


def make_app(store: KubeStore) -> WSGIApplication:
    """The sandbox API server as a WSGI application over ``store``."""
    return KubeApp(store)
