"""We test these aspects of the Argo CD stand-in (sandbox/argocd_host), which must behave like
Argo CD's proxy extension (server/extension/extension.go) for the UI tests to mean anything:

- a request without ``Argocd-Application-Name`` (``namespace:name``) or ``Argocd-Project-Name`` is
  400; a user who may not read the application, an unknown application or a project that is not the
  application's is 401 "Unauthorized extension request", and nothing reaches the backend;
- an authorised request reaches the backend with the ``/extensions/finops`` prefix stripped, the
  query kept, ``Cookie`` and ``Authorization`` removed, and the configured secret header, the
  destination and the user added;
- Argo CD's application API answers 403 for an application the user may not read;
- /extensions.js is the installer's vars file followed by the built extension.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from werkzeug.serving import make_server

from sandbox import kube as sandbox_kube
from sandbox.argocd_host import ArgoHost, serve
from sandbox.argocd_host.server import EXTENSION

SEEN: list[dict[str, Any]] = []


def _backend(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
    SEEN.append({"path": environ["PATH_INFO"], "query": environ.get("QUERY_STRING", ""), "headers": headers})
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b'{"ok": true}']


@pytest.fixture(scope="module")
def host(kube: sandbox_kube.KubeServer) -> Iterator[ArgoHost]:
    backend = make_server("127.0.0.1", 0, _backend, threaded=True)
    thread = threading.Thread(target=backend.serve_forever, daemon=True)
    thread.start()
    try:
        with serve(
            kube_url=kube.url, cost_api_url=f"http://127.0.0.1:{backend.server_port}", proxy_token="s3cret"
        ) as h:
            yield h
    finally:
        backend.shutdown()
        backend.server_close()


def call(host: ArgoHost, path: str, headers: dict[str, str], user: str = "readonly") -> httpx.Response:
    SEEN.clear()
    cookies = {"argocd.token": user, "other": "x"}
    return httpx.get(host.url.rstrip("/") + path, headers=headers, cookies=cookies, timeout=10)


OK = {"Argocd-Application-Name": "argocd:web", "Argocd-Project-Name": "default", "Authorization": "Bearer user-jwt"}


@pytest.mark.parametrize(
    ("headers", "user", "status"),
    [
        ({"Argocd-Project-Name": "default"}, "readonly", 400),
        ({"Argocd-Application-Name": "web", "Argocd-Project-Name": "default"}, "readonly", 400),
        ({"Argocd-Application-Name": "argocd:web"}, "readonly", 400),
        ({"Argocd-Application-Name": "argocd:web", "Argocd-Project-Name": "other"}, "readonly", 401),
        ({"Argocd-Application-Name": "argocd:nope", "Argocd-Project-Name": "default"}, "readonly", 401),
        ({"Argocd-Application-Name": "argocd:cost-gate", "Argocd-Project-Name": "default"}, "no-gate", 401),
        (OK, "somebody", 401),
    ],
    ids=["no-app", "app-not-namespaced", "no-project", "wrong-project", "unknown-app", "rbac-denied", "no-session"],
)
def test_refusals_never_reach_the_backend(host: ArgoHost, headers: dict[str, str], user: str, status: int) -> None:
    response = call(host, "/extensions/finops/api/v1/apps/argocd/web/actual", headers, user)
    assert response.status_code == status, response.text
    if status == 401:
        assert response.text.strip() == "Unauthorized extension request"
    assert SEEN == []


def test_an_authorised_request_is_forwarded_as_argo_cd_does(host: ArgoHost) -> None:
    response = call(host, "/extensions/finops/api/v1/namespaces?days=7", OK)
    assert response.status_code == 200 and response.json() == {"ok": True}
    (seen,) = SEEN
    assert (seen["path"], seen["query"]) == ("/api/v1/namespaces", "days=7")
    headers = seen["headers"]
    assert "cookie" not in headers and "authorization" not in headers
    assert headers["x-finops-proxy-token"] == "s3cret"
    assert headers["argocd-application-name"] == "argocd:web" and headers["argocd-project-name"] == "default"
    assert headers["argocd-target-cluster-url"] == "https://kubernetes.default.svc"
    assert headers["argocd-username"] == "readonly"


def test_the_application_api_hides_what_the_user_may_not_read(host: ArgoHost) -> None:
    base = host.url.rstrip("/")
    gate = "/api/v1/applications/cost-gate?appNamespace=argocd"
    assert httpx.get(base + gate, cookies={"argocd.token": "readonly"}).json()["spec"]["project"] == "default"
    assert httpx.get(base + gate, cookies={"argocd.token": "no-gate"}).status_code == 403
    names = [
        a["metadata"]["name"]
        for a in httpx.get(base + "/api/v1/applications", cookies={"argocd.token": "no-gate"}).json()["items"]
    ]
    assert "cost-gate" not in names and "web" in names
    named = base + "/api/v1/applications?name=cost-gate&appNamespace=argocd"  # what the cluster view asks
    assert [a["metadata"]["name"] for a in httpx.get(named, cookies={"argocd.token": "readonly"}).json()["items"]] == [
        "cost-gate"
    ]
    refused = httpx.get(named, cookies={"argocd.token": "no-gate"})
    assert refused.status_code == 200 and refused.json()["items"] == []  # RBAC hides it, as Argo CD's list does


def test_extensions_js_is_the_vars_file_then_the_extension(host: ArgoHost) -> None:
    body = httpx.get(host.url + "extensions.js").text
    vars_part, _, script = body.partition("// source: extension-finops.js\n")
    assert json.dumps({"GATE_APP": "argocd:cost-gate"}) in vars_part and "window.FINOPS_VARS" in vars_part
    assert script == EXTENSION.read_text()
