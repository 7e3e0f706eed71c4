"""The host page's HTTP side: static files, Argo CD's application API and its proxy extension."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
from werkzeug.serving import BaseWSGIServer, make_server
from werkzeug.wrappers import Request, Response

from sandbox.serving import QuietHandler, ThreadedServer

ROOT = Path(__file__).resolve().parents[2]
STATIC = Path(__file__).resolve().parent / "static"
UI = ROOT / "ui"
REACT = {
    "/vendor/react.js": UI / "node_modules" / "react" / "umd" / "react.development.js",
    "/vendor/react-dom.js": UI / "node_modules" / "react-dom" / "umd" / "react-dom.development.js",
}
EXTENSION = UI / "dist" / "extension-finops.js"
EXTENSION_NAME = "finops"
APPLICATIONS = "/apis/argoproj.io/v1alpha1/applications"
GATE = ("argocd", "cost-gate")  # the application whose readers see the cluster view
TOKEN_HEADER = "X-Finops-Proxy-Token"  # noqa: S105 - a header name, not a secret
# Argo CD's reserved headers (server/extension/extension.go): the UI sets the first two.
APP_HEADER = "Argocd-Application-Name"
PROJECT_HEADER = "Argocd-Project-Name"
_APP_VALUE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?):([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "server", "date"}


@dataclass(frozen=True)
class User:
    """A demo user's RBAC: the applications it may not read (it may invoke the extension)."""

    name: str
    denied_apps: frozenset[tuple[str, str]] = frozenset()

    def may_get(self, namespace: str, name: str) -> bool:
        return (namespace, name) not in self.denied_apps


class ReactMissing(RuntimeError):
    """React's UMD files are not installed (run ``make ui``, which runs ``npm ci`` in ui/)."""


USERS = {"readonly": User("readonly"), "no-gate": User("no-gate", denied_apps=frozenset({GATE}))}


class HostApp:
    """The WSGI app. ``cost_api_url``: where the proxy forwards; ``proxy_token``: the header value
    Argo CD's ``extension.config`` would inject (``TOKEN_HEADER``)."""

    def __init__(self, *, kube_url: str, cost_api_url: str, proxy_token: str) -> None:
        self.kube_url = kube_url.rstrip("/")
        self.cost_api_url = cost_api_url.rstrip("/")
        self.proxy_token = proxy_token

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        return self.dispatch(request)(environ, start_response)

    def dispatch(self, request: Request) -> Response:
        path = request.path
        if path.startswith(f"/extensions/{EXTENSION_NAME}/") or path == f"/extensions/{EXTENSION_NAME}":
            return self.proxy(request)
        if path.startswith("/extensions/"):
            return _text(404, "Extension not found")
        if request.method != "GET":
            return _text(405, "method not allowed")
        if path == "/":
            return self.index(request)
        if path == "/host.js":
            return _file(STATIC / "host.js", "application/javascript")
        if path in REACT:
            if not REACT[path].is_file():
                return _text(503, f"{REACT[path]} is missing: run `make ui` (npm ci in ui/)")
            return _file(REACT[path], "application/javascript")
        if path == "/extensions.js":
            return self.extensions_js()
        if path == "/api/v1/applications":
            return self.list_applications(request)
        if path.startswith("/api/v1/applications/"):
            return self.get_application(request, path.removeprefix("/api/v1/applications/"))
        return _text(404, f"no page {path}")

    # -- pages --------------------------------------------------------------------------------

    def index(self, request: Request) -> Response:
        response = _file(STATIC / "index.html", "text/html; charset=utf-8")
        # As logging in would: the session cookie names the user (readonly unless ?user= says).
        user = request.args.get("user") or request.cookies.get("argocd.token") or "readonly"
        response.set_cookie("argocd.token", user, path="/", samesite="Strict", httponly=True)
        return response

    def extensions_js(self) -> Response:
        """What Argo CD serves at /extensions.js: every ``extension*.js`` under /tmp/extensions,
        in walk order; the installer's ``EXTENSION_JS_VARS`` file comes before ours."""
        if not EXTENSION.is_file():
            return _text(503, f"{EXTENSION} is missing: run `make ui`")
        gate = json.dumps({"GATE_APP": ":".join(GATE)})
        vars_js = f"((window) => {{ const vars = {gate}; window.FINOPS_VARS = vars; }})(window);\n"
        body = (
            f"// source: extension-0-FINOPS_vars.js\n{vars_js}// source: extension-finops.js\n{EXTENSION.read_text()}"
        )
        return Response(body, content_type="application/javascript", headers={"Cache-Control": "no-store"})

    # -- Argo CD's application API ------------------------------------------------------------

    def _user(self, request: Request) -> User | None:
        return USERS.get(request.cookies.get("argocd.token", ""))  # no session: None, as 401

    def _applications(self) -> list[dict[str, Any]]:
        status, _, body = _call("GET", self.kube_url + APPLICATIONS)
        if status != 200:
            raise RuntimeError(f"listing Applications from the sandbox Kubernetes API: HTTP {status}")
        return list(json.loads(body).get("items") or [])

    def _application(self, namespace: str, name: str) -> dict[str, Any] | None:
        url = f"{self.kube_url}/apis/argoproj.io/v1alpha1/namespaces/{namespace}/applications/{name}"
        status, _, body = _call("GET", url)
        if status == 404:
            return None
        if status != 200:
            raise RuntimeError(f"reading Application {namespace}/{name}: HTTP {status}")
        return dict(json.loads(body))

    def list_applications(self, request: Request) -> Response:
        user = self._user(request)
        if user is None:
            return _json(401, {"error": "no session", "code": 16, "message": "no session information"})
        # As Argo CD's ApplicationQuery: ``name`` and ``appNamespace`` filter; RBAC hides silently.
        wanted = {"name": request.args.get("name"), "namespace": request.args.get("appNamespace")}
        items = [
            a
            for a in self._applications()
            if user.may_get(a["metadata"]["namespace"], a["metadata"]["name"])
            and all(value in (None, "", a["metadata"][key]) for key, value in wanted.items())
        ]
        return _json(200, {"items": items})

    def get_application(self, request: Request, name: str) -> Response:
        user = self._user(request)
        if user is None:
            return _json(401, {"error": "no session", "code": 16, "message": "no session information"})
        namespace = request.args.get("appNamespace", "argocd")
        app = self._application(namespace, name) if user.may_get(namespace, name) else None
        if app is None:  # Argo CD answers "permission denied" for a missing app too (no leak)
            return _json(403, {"error": "permission denied", "code": 7, "message": "permission denied"})
        return _json(200, app)

    # -- the proxy extension ------------------------------------------------------------------

    def proxy(self, request: Request) -> Response:
        app_header = request.headers.get(APP_HEADER, "")
        project = request.headers.get(PROJECT_HEADER, "")
        found = _APP_VALUE.match(app_header)
        if not found:
            return _text(400, f"Invalid headers: invalid value for namespaced resource {APP_HEADER!r}: {app_header!r}")
        if not project:
            return _text(400, f"Invalid headers: header {PROJECT_HEADER!r} must be provided")
        namespace, name = found.group(1), found.group(3)
        user = self._user(request)
        app = self._application(namespace, name) if user and user.may_get(namespace, name) else None
        if app is None or (app.get("spec") or {}).get("project", "default") != project:
            return _text(401, "Unauthorized extension request")
        return self.forward(request, app, user)

    def forward(self, request: Request, app: dict[str, Any], user: User | None) -> Response:
        path = request.path.removeprefix(f"/extensions/{EXTENSION_NAME}") or "/"
        headers = {k: v for k, v in request.headers.items() if k.lower() not in {"host", "cookie", "authorization"}}
        destination = (app.get("spec") or {}).get("destination") or {}
        headers.update({TOKEN_HEADER: self.proxy_token, "Argocd-Namespace": "argocd"})
        if destination.get("name"):
            headers["Argocd-Target-Cluster-Name"] = destination["name"]
        if destination.get("server"):
            headers["Argocd-Target-Cluster-URL"] = destination["server"]
        if user is not None:
            headers["Argocd-Username"] = user.name
        query = urlencode(list(request.args.items(multi=True)))
        url = self.cost_api_url + path + (f"?{query}" if query else "")
        try:
            status, upstream_headers, body = _call(request.method, url, headers, request.get_data())
        except httpx.TransportError as exc:  # Argo CD's reverse proxy answers 502 when the backend is down
            return _text(502, f"proxy error: {type(exc).__name__}")
        kept = [(k, v) for k, v in upstream_headers if k.lower() not in _HOP_BY_HOP]
        return Response(body, status=status, headers=kept)


def _call(
    method: str, url: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> tuple[int, list[tuple[str, str]], bytes]:
    response = httpx.request(method, url, headers=headers, content=body, timeout=60)
    return response.status_code, response.headers.multi_items(), response.content


def _text(status: int, text: str) -> Response:
    return Response(text + "\n", status=status, content_type="text/plain; charset=utf-8")


def _json(status: int, body: object) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")


def _file(path: Path, content_type: str) -> Response:
    return Response(path.read_bytes(), content_type=content_type, headers={"Cache-Control": "no-store"})


class ArgoHost(ThreadedServer):
    """The running host page: ``url`` and ``stop()``; a context manager."""

    def __init__(self, app: HostApp, server: BaseWSGIServer) -> None:
        super().__init__(server, "argocd-host")
        self.app = app

    @property
    def url(self) -> str:
        return f"{super().url}/"


def serve(
    *,
    kube_url: str,
    cost_api_url: str,
    proxy_token: str,
    host: str = "127.0.0.1",
    port: int = 0,
) -> ArgoHost:
    """Start the host page in a daemon thread (``port=0``: a free port). Fails at once, naming the
    command to run, when React's UMD files are not installed (``make ui``)."""
    missing = [str(p) for p in REACT.values() if not p.is_file()]
    if missing:
        raise ReactMissing(f"{', '.join(missing)} missing: run `make ui` (npm ci in ui/) first")
    app = HostApp(kube_url=kube_url, cost_api_url=cost_api_url, proxy_token=proxy_token)
    server = make_server(host, port, app, threaded=True, request_handler=QuietHandler)
    return ArgoHost(app, server).start()
