"""The hourly ping the CronJobs send to ``collect_allocations`` and ``collect_charges``."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

import flask
from pydantic import BaseModel, ConfigDict, Field

from finops.errors import InvalidInput
from finops.hours import parse_timestamp
from functions.edge import parse_body, require_bearer
from infra.settings import PingSettings, current_secret
from usecases.costjob_status import CostJobRef
from usecases.runs import Run


class Ping(BaseModel):
    """The ping body; every field optional. Unknown fields are refused so a typo is not a
    silent "collect now"."""

    model_config = ConfigDict(extra="forbid")

    scheduledTime: str | None = Field(default=None, description="RFC 3339; pins the run's hour")
    costJob: CostJobRef | None = Field(default=None, description="CostJob whose status records this run")
    trigger: str = Field(
        default="cron", pattern=r"^[a-z][a-z0-9-]{0,31}$", description="recorded as the run's trigger in job_runs"
    )


class RangePing(Ping):
    """``collect_allocations``' ping, which may also ask for a history load of ``[from, to)``."""

    from_: str | None = Field(default=None, alias="from", description="RFC 3339; first hour of a history load")
    to: str | None = Field(default=None, description="RFC 3339; end (exclusive) of a history load")

    def history_range(self) -> tuple[datetime, datetime] | None:
        """The history load asked for, or None for an hourly run; both ends or neither."""
        if self.from_ is None and self.to is None:
            return None
        if self.from_ is None or self.to is None:
            missing, given = ("to", "from") if self.to is None else ("from", "to")
            raise InvalidInput(f"{missing}: required with {given}")
        return parse_timestamp(self.from_, field="from"), parse_timestamp(self.to, field="to")


P = TypeVar("P", bound=Ping)


def accept_ping(request: flask.Request, settings: PingSettings, run: Run, model: type[P]) -> tuple[P, datetime | None]:
    """Authenticate and parse a ping; returns it with the scheduled time that pins the run's hour
    (the body's ``scheduledTime``, else ``SCHEDULED_TIMESTAMP``, else None: the current hour)."""
    require_bearer(request, current_secret(settings, "PING_TOKEN") or "")
    ping = parse_body(request, model)
    run.trigger = ping.trigger
    if ping.scheduledTime:
        return ping, parse_timestamp(ping.scheduledTime, field="scheduledTime")
    return ping, settings.SCHEDULED_TIMESTAMP
