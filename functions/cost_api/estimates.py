"""Cloud estimates pushed by CI: ``POST /api/v1/apps/{appNamespace}/{appName}/cloud-estimate``
stores Infracost's JSON for the application; ``GET`` on the same path (through Argo CD's proxy,
like every app view) lists its resources, and ``/actual`` carries a summary (``cloudEstimates``).

The push is not the UI's: it is authenticated by ``Authorization: Bearer $CI_TOKEN`` (constant-time
compare, re-read from ``SECRETS_DIR`` like the other tokens) and by nothing else. The proxy's
secret header and ``Argocd-Application-Name`` are never read on this path, so a browser session
through Argo CD cannot write, and CI never holds the proxy's token. Without ``CI_TOKEN`` the route
answers 404 naming it.

The body may be up to ``CLOUD_ESTIMATE_BODY`` (10 MiB; every other request keeps the 64 KiB limit
of ``functions.edge.read_body``) and is read only once the bearer token matched: a declared
``Content-Length`` above it is a 413 before anything is read, a chunked body is cut at the limit.
At most ``LARGE_AT_ONCE`` such bodies are read and parsed at once per process (memory, not
threads, is what a 10 MiB JSON costs); beyond, 503 at once. Then 415 for a body that is not JSON,
400 naming the field for anything malformed. Every refusal happens before the one transaction
that replaces the key's estimate, so a refused push changes nothing.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any

import flask

from finops.cloud_estimates import parse_infracost
from finops.errors import InvalidInput, NotFound, TemporaryError
from functions.cost_api import routes
from functions.edge import MAX_BODY_BYTES, read_json, require_bearer, respond
from infra.clients import database_from
from infra.settings import CostApiSettings, current_secret
from usecases.cost_api import params
from usecases.cost_api.cloud_estimates import CLOUD_ESTIMATE_BODY, money, store

log = logging.getLogger(__name__)

LARGE_AT_ONCE = 2  # pushes read and parsed at once per process
# Hand-made: no library bounds the bodies one route reads at once (werkzeug bounds their size only).
_large_bodies = threading.BoundedSemaphore(LARGE_AT_ONCE)


class UnsupportedMediaType(InvalidInput):
    """The body is not JSON."""

    http_status = 415


class LargeBodiesBusy(TemporaryError):
    """``LARGE_AT_ONCE`` pushes are being read already."""

    retry_after_seconds = 5


def _read_document(request: flask.Request) -> Any:
    if request.mimetype != "application/json" and not request.mimetype.endswith("+json"):
        shown = request.mimetype or "none"
        raise UnsupportedMediaType(f"Content-Type is {shown[:60]}; send application/json (infracost --format json)")
    if not _large_bodies.acquire(blocking=False):
        raise LargeBodiesBusy("too many large bodies being received; retry")
    try:
        return read_json(request, CLOUD_ESTIMATE_BODY, empty="send the output of infracost breakdown --format json")
    finally:
        _large_bodies.release()


NOT_ENABLED = "cloud estimates are not enabled: set CI_TOKEN (the bearer token CI pushes with)"


def body_limit(request: flask.Request) -> int:
    """The largest body ``request`` may declare: ``CLOUD_ESTIMATE_BODY`` on the push, else 64 KiB."""
    pushing = request.method == "POST" and routes.match(request.path, "post") is not None
    return CLOUD_ESTIMATE_BODY if pushing else MAX_BODY_BYTES


def push(request: flask.Request, s: CostApiSettings, namespace: str, name: str) -> flask.Response:
    """The CI push: authenticate, read, parse, then replace the key's estimate in one transaction."""
    token = current_secret(s, "CI_TOKEN")
    if not token:
        raise NotFound(NOT_ENABLED)
    require_bearer(request, token)
    app = params.APP_NAMESPACE.parse(namespace), params.APP_NAME.parse(name)
    source = params.SOURCE.parse(request.args.get("source"))
    estimate = parse_infracost(_read_document(request))
    changed = store(database_from(s), s.CLUSTER_ID, app, source, estimate, datetime.now(UTC))
    log.info(
        "cloud estimate stored",
        extra={"fields": {"app": f"{app[0]}/{app[1]}", "source": source, "rows": len(estimate.resources)}},
    )
    return respond(
        200,
        {
            "outcome": "stored",
            "app": {"namespace": app[0], "name": app[1]},
            "source": source,
            "currency": estimate.currency,
            "monthly": money(estimate.monthly),
            "statedMonthly": money(estimate.stated_monthly),
            "resources": estimate.top_level,
            "rows": len(estimate.resources),
            "unpriced": estimate.unpriced,
            "changed": changed,
            "warnings": list(estimate.warnings),
        },
    )
