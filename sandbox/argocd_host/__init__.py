"""A stand-in for Argo CD's web host, to see and test the finops UI extension without Argo CD.

The extension (``ui/``) runs inside Argo CD's page; this sandbox serves a small page that does
what Argo CD's does for an extension, and nothing else:

- it loads React and ReactDOM as globals (the UMD builds of the pinned npm packages in
  ``ui/node_modules``), defines ``window.extensionsAPI`` collecting registrations, and loads
  ``/extensions.js`` (as Argo CD concatenates ``/tmp/extensions``: the installer's vars file, then
  ``ui/dist/extension-finops.js``);
- it lists the Argo CD Applications of the sandbox Kubernetes API and renders the registered
  Application tab with one of them (``/?app=namespace/name``), and the system-level view
  (``/?view=finops``);
- it answers Argo CD's ``GET /api/v1/applications[/name]`` and proxies ``/extensions/finops/*``
  to ``cost_api`` exactly as Argo CD's proxy extension does (``server/extension/extension.go``):
  the session cookie ``argocd.token`` names a demo user; headers are validated (400), RBAC and
  the project are checked (401 "Unauthorized extension request"), the prefix is stripped,
  ``Cookie``/``Authorization`` are removed and the configured secret header is added.

The demo users (the page sets the cookie, as logging in would; ``/?user=NAME`` chooses):
``readonly`` (the default: reads every application and may invoke the extension, the RBAC line
docs/tutorial/first-cluster.md asks for) and ``no-gate`` (the same, except that it may not read the gate
application, so the cluster view is refused). A request without a known session is 401.
Start it with ``serve(...)`` (``sandbox.localdemo`` does, for ``finops run``).
"""

from __future__ import annotations

from sandbox.argocd_host.server import ArgoHost, ReactMissing, serve

__all__ = ["ArgoHost", "ReactMissing", "serve"]
