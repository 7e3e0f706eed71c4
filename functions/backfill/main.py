"""``backfill``: measures every Argo CD Application without a record, once at install.

Invoked by the install Job (until it answers ``remaining: 0``), by ``kn``, or by
``finops invoke backfill``. It authenticates like the hourly pings (``PING_TOKEN``). The edge only:
the work and its resumability are in ``service.py``.
"""

from __future__ import annotations

import flask
from pydantic import BaseModel, ConfigDict, Field

from functions.edge import edge, parse_body, require_bearer, respond, settings_for, with_event_token
from infra.clients import database_from, kube_from, opencost_from
from infra.settings import BackfillSettings, current_secret
from usecases.appcost.syncs import redrive
from usecases.backfill import BackfillOptions
from usecases.backfill import backfill as run_backfill
from usecases.runs import Run

FUNCTION = "backfill"
settings = settings_for(FUNCTION, BackfillSettings)


class Invocation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    trigger: str = Field(default="install", pattern=r"^[a-z][a-z0-9-]{0,31}$")


@edge(FUNCTION, settings)
def backfill(request: flask.Request, s: BackfillSettings, run: Run) -> flask.Response:
    require_bearer(request, current_secret(s, "PING_TOKEN") or "")
    run.trigger = parse_body(request, Invocation).trigger
    if s.BACKFILL_CONCURRENCY == 0:
        run.outcome, run.error = "skipped", "backfill is disabled (BACKFILL_CONCURRENCY=0)"
        return respond(200, {"outcome": "skipped", "reason": run.error, "remaining": 0, "run_id": run.run_id})
    run.db = database_from(s)
    options = BackfillOptions(
        cluster=s.CLUSTER_ID,
        concurrency=s.BACKFILL_CONCURRENCY,
        budget_seconds=s.BACKFILL_BUDGET_SECONDS,
        deadline_seconds=s.BACKFILL_DEADLINE_SECONDS,
        prune_remote=s.PRUNE_REMOTE_COST,
        gate_app=_identity(s.CLUSTER_SCOPE_APP),
    )
    result = run_backfill(run.db, opencost_from(s), kube_from(s), options)  # BackfillBusy: 503, Retry-After
    redriven = redrive(
        run.db,
        s.CLUSTER_ID,
        with_event_token(s.ON_SYNC_URL, current_secret(s, "EVENT_TOKEN")),
        f"/finops/{s.CLUSTER_ID}/{FUNCTION}",
    )
    run.counts = {**result.counts(), **redriven}
    run.outcome = result.outcome
    if result.failed:
        run.error = f"{result.failed} namespace(s) had no OpenCost data after every retry"
    return respond(200, {"outcome": run.outcome, "run_id": run.run_id, **run.counts})


def _identity(app: str) -> tuple[str, str] | None:
    namespace, _, name = app.partition(":")
    return (namespace, name) if app != "off" and name else None
