"""``KubeClient``: the product's only door to the Kubernetes API.

Why one generic client instead of ``CoreV1Api``/``CustomObjectsApi`` calls scattered over the
code: the product reads and patches resources by ``group/version/plural`` (its own CRDs,
Argo CD Applications, core namespaces), so a single request path through
``ApiClient.call_api`` (the machinery every generated API class uses) covers the core group
(``/api/v1``) and every other group (``/apis/{group}/{version}``) alike, returns plain dicts
and keeps one place for the things that must never be forgotten: an explicit timeout on every
request, at most one retry and only when the connection could not be made, error translation into
``finops.errors``, and no request bodies or headers in logs.

``kubernetes`` takes about a second to import, and a scale-to-zero function that never talks
to the API must not pay for it, so it is imported inside the constructors (and, once
something has failed, by the error translation) only.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from finops.errors import InvalidInput, KubernetesUnavailable, NotFound, PermanentError
from infra.kube.errors import wrap_errors
from infra.kube.operations import Operation

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_MERGE_PATCH)
_RESPONSE_TYPES = {200: "object", 201: "object", 202: "object"}
DEFAULT_PAGE_SIZE = 500
# An API group is a DNS subdomain (the core group is ""), a version a DNS label ("v1", "v1beta1").
API_GROUP = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
API_VERSION = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")


def _configured(configuration: Any) -> Any:
    """Retry a failed connect once; never retry a request the server may have received."""
    import urllib3

    configuration.retries = urllib3.util.Retry(total=1, connect=1, read=0, status=0, redirect=0, other=0)
    return configuration


class KubeClient:
    """Plain-dict access to any Kubernetes resource, with ``finops.errors`` on failure."""

    def __init__(self, api_client: Any, *, timeout_seconds: float = 10.0) -> None:
        if timeout_seconds <= 0:
            raise ValueError("timeout_seconds must be positive")
        self._api = api_client
        self.timeout_seconds = timeout_seconds

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_configuration(cls, configuration: Any, *, timeout_seconds: float = 10.0) -> KubeClient:
        """Wrap a ``kubernetes.client.Configuration`` (whose retries are then limited)."""
        from kubernetes import client

        return cls(client.ApiClient(_configured(configuration)), timeout_seconds=timeout_seconds)

    @classmethod
    def from_url(cls, url: str, *, timeout_seconds: float = 10.0) -> KubeClient:
        """An unauthenticated client for a plain-HTTP server such as ``sandbox.kube``."""
        from kubernetes import client

        return cls.from_configuration(client.Configuration(host=url.rstrip("/")), timeout_seconds=timeout_seconds)

    @classmethod
    def in_cluster(cls, *, timeout_seconds: float = 10.0) -> KubeClient:
        """The pod's service account (token refreshed from disk as it rotates)."""
        from kubernetes import client, config

        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException as exc:
            raise PermanentError(f"cannot load the in-cluster Kubernetes configuration: {exc}") from exc
        return cls.from_configuration(configuration, timeout_seconds=timeout_seconds)

    @classmethod
    def from_kubeconfig(
        cls, path: str | None = None, *, context: str | None = None, timeout_seconds: float = 10.0
    ) -> KubeClient:
        """A kubeconfig file (``path`` may list several, ``:``-separated; default ``~/.kube/config``)."""
        from kubernetes import client, config

        configuration = client.Configuration()
        try:
            config.load_kube_config(
                config_file=path, context=context, client_configuration=configuration, persist_config=False
            )
        except (config.ConfigException, OSError) as exc:
            where = path or "~/.kube/config"
            raise PermanentError(f"cannot load the Kubernetes configuration from {where}: {exc}") from exc
        return cls.from_configuration(configuration, timeout_seconds=timeout_seconds)

    @classmethod
    def from_environment(cls, *, timeout_seconds: float = 10.0, environ: Mapping[str, str] | None = None) -> KubeClient:
        """In-cluster when ``KUBERNETES_SERVICE_HOST`` is set, else ``KUBECONFIG`` or ``~/.kube/config``."""
        env = os.environ if environ is None else environ
        if env.get("KUBERNETES_SERVICE_HOST"):
            return cls.in_cluster(timeout_seconds=timeout_seconds)
        return cls.from_kubeconfig(env.get("KUBECONFIG") or None, timeout_seconds=timeout_seconds)

    def close(self) -> None:
        self._api.close()
        pool_manager = getattr(getattr(self._api, "rest_client", None), "pool_manager", None)
        if pool_manager is not None:
            pool_manager.clear()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ requests

    def _call(
        self,
        method: str,
        operation: Operation,
        *,
        query: list[tuple[str, str | int]] | None = None,
        body: Any = None,
        content_type: str | None = None,
        impersonate: str | None = None,
    ) -> Obj:
        headers = {"Accept": "application/json"}
        if impersonate:
            headers["Impersonate-User"] = impersonate
        if content_type:
            headers["Content-Type"] = content_type
        log.debug("kubernetes: %s", operation.describe())
        with wrap_errors(operation):
            result = self._api.call_api(
                operation.path(),
                method,
                query_params=query or [],
                header_params=headers,
                body=body,
                response_types_map=_RESPONSE_TYPES,
                auth_settings=["BearerToken"],
                _return_http_data_only=True,
                _preload_content=True,
                _request_timeout=self.timeout_seconds,
            )
        if not isinstance(result, dict):
            raise KubernetesUnavailable(f"Kubernetes answered {operation.describe()} with a non-object body")
        return result

    def list_objects(
        self,
        group: str,
        version: str,
        plural: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> list[Obj]:
        """Every matching object (all namespaces when ``namespace`` is None), page by page.

        Each item carries ``apiVersion`` and ``kind`` even where the server leaves them out
        (core lists do).
        """
        operation = Operation("list", group, version, plural, namespace=namespace)
        base: list[tuple[str, str | int]] = [("limit", page_size)]
        if label_selector:
            base.append(("labelSelector", label_selector))
        if field_selector:
            base.append(("fieldSelector", field_selector))
        items: list[Obj] = []
        token = ""
        while True:
            page = self._call("GET", operation, query=base + ([("continue", token)] if token else []))
            kind = str(page.get("kind", "")).removesuffix("List")
            identity = {"apiVersion": page.get("apiVersion", operation.group_version), "kind": kind}
            items.extend({**identity, **item} for item in page.get("items") or [])
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def get_object(self, group: str, version: str, plural: str, namespace: str | None, name: str) -> Obj:
        """One object; ``namespace`` is None for cluster-scoped resources."""
        return self._call("GET", Operation("get", group, version, plural, namespace, name))

    def create_object(self, group: str, version: str, plural: str, namespace: str | None, body: Obj) -> Obj:
        """Create ``body`` (the server drops its ``status``); ``AlreadyExists`` (a ``Conflict``) if taken."""
        name = str((body.get("metadata") or {}).get("name") or "") or None
        return self._call("POST", Operation("create", group, version, plural, namespace, name), body=body)

    def patch_object(
        self,
        group: str,
        version: str,
        plural: str,
        namespace: str | None,
        name: str,
        patch: Obj | list[Obj],
        *,
        content_type: str = MERGE_PATCH,
    ) -> Obj:
        """Patch the main resource (``status`` changes are ignored by the server).

        A merge patch carrying ``metadata.resourceVersion``, or a JSON patch with a ``test`` op
        on it, is a precondition: ``Conflict`` if the object has changed since.
        """
        _check_patch(patch, content_type)
        operation = Operation("patch", group, version, plural, namespace, name)
        return self._call("PATCH", operation, body=patch, content_type=content_type)

    def patch_status(self, group: str, version: str, plural: str, namespace: str | None, name: str, patch: Obj) -> Obj:
        """Merge-patch the ``status`` subresource: ``patch`` is ``{"status": {...}}``.

        ``metadata.resourceVersion`` may be included as a precondition; any other top-level
        key is refused here because the server would silently ignore it.
        """
        extra = set(patch) - {"status", "metadata", "apiVersion", "kind"}
        if extra or "status" not in patch:
            raise InvalidInput(f"patch_status takes {{'status': {{...}}}}, got top-level keys {sorted(patch)}")
        operation = Operation("patch", group, version, plural, namespace, name, subresource="status")
        return self._call("PATCH", operation, body=patch, content_type=MERGE_PATCH)

    def api_resources(self, group: str, version: str) -> list[Obj]:
        """The ``resources`` of the APIResourceList of ``group``/``version`` (``""``: the core group).

        Entries are as the server sends them (``name`` is the plural, ``kind``, ``namespaced``,
        ``verbs``; subresources such as ``pods/status`` included). A group/version the server does
        not serve (404, e.g. a CRD not installed yet) is ``[]``, not an error. Discovery needs no
        Role rule (``METHOD_VERBS``): ``system:discovery`` grants it to every authenticated user.
        """
        if (group and not API_GROUP.fullmatch(group)) or not API_VERSION.fullmatch(version):
            raise InvalidInput(
                f"not a Kubernetes API group/version: group {group!r}, version {version!r} "
                "(a group is a DNS subdomain, '' for the core group; a version is a DNS label such as 'v1')"
            )
        try:
            document = self._call("GET", Operation.discovery(group, version))
        except NotFound:
            return []
        resources = document.get("resources")
        return [r for r in resources if isinstance(r, dict)] if isinstance(resources, list) else []

    def access_review(
        self,
        verb: str,
        group: str,
        resource: str,
        namespace: str | None = None,
        name: str | None = None,
        *,
        as_user: str | None = None,
    ) -> tuple[bool, str]:
        """May the caller ``verb`` ``resource`` (``plural`` or ``plural/sub``) of ``group``, in
        ``namespace`` (None: every namespace, or cluster-scoped), on the object ``name`` (None: any;
        a grant limited by ``resourceNames`` needs it)? A ``SelfSubjectAccessReview``:
        ``(allowed, reason)``, the reason as the authorizer gives it (often empty). Every
        authenticated account may ask (ClusterRole ``system:basic-user``): no Role rule. With
        ``as_user`` (e.g. ``system:serviceaccount:finops:on-sync``) the review is asked as that
        user (``Impersonate-User``), which the caller must be allowed to impersonate."""
        plural, _, subresource = resource.partition("/")
        attributes = {"verb": verb, "group": group, "resource": plural, "subresource": subresource}
        if namespace:
            attributes["namespace"] = namespace
        if name:
            attributes["name"] = name
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        operation = Operation("create", "authorization.k8s.io", "v1", "selfsubjectaccessreviews")
        status = self._call("POST", operation, body=body, impersonate=as_user).get("status") or {}
        return status.get("allowed") is True, str(status.get("reason") or status.get("evaluationError") or "")

    def server_version(self) -> str:
        """The API server's ``gitVersion`` (``GET /version``, which every client may read)."""
        with wrap_errors(Operation("get", "", "v1", "version")):
            result = self._api.call_api(
                "/version",
                "GET",
                header_params={"Accept": "application/json"},
                response_types_map=_RESPONSE_TYPES,
                auth_settings=["BearerToken"],
                _return_http_data_only=True,
                _preload_content=True,
                _request_timeout=self.timeout_seconds,
            )
        return str(result.get("gitVersion") or "unknown") if isinstance(result, dict) else "unknown"


def _check_patch(patch: Obj | list[Obj], content_type: str) -> None:
    """Refuse bodies the client library would silently send under another patch type."""
    if content_type not in _PATCH_TYPES:
        raise InvalidInput(f"unsupported patch content type {content_type!r}; use one of {_PATCH_TYPES}")
    if content_type == JSON_PATCH and not isinstance(patch, list):
        raise InvalidInput("a JSON patch is a list of operations")
    if content_type != JSON_PATCH and not isinstance(patch, dict):
        raise InvalidInput(f"a {content_type} body is an object; pass content_type={JSON_PATCH!r} for a list")
