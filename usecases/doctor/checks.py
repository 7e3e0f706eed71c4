"""``finops doctor``: is this install able to work? One ``Check`` per question, each OK, WARN or FAIL
with one line saying why, and the whole as one document (``as_document``) that a read-only route
could serve as it is.

Every check stands alone: a part that cannot be built or reached (a variable unset, a server
down) fails the checks that need it, with that part's own one-line error, and the others still
run. A check that needs a part whose own check failed says ``skipped: ...`` as a WARN: the FAIL is
on the part's line, once, and the exit status already says it. Nothing here writes: the schema is
compared, not migrated; the PriceBook is elected, not stored; the Kubernetes questions are
``SelfSubjectAccessReview``s, which change nothing.

Details are redacted (``one_line``): an address is named, a password or token never.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from finops.allocations import DEFAULT_AGGREGATION
from finops.errors import FinOpsError, PermanentError
from finops.pricing import OPENCOST
from infra.kube import KubeClient
from infra.logs import one_line
from infra.opencost import OpenCostClient
from infra.opencost.health import build_version, probe
from infra.postgres import Database, check_schema
from infra.postgres.migrations import available
from infra.prometheus import PrometheusClient
from infra.serving import TARGETS
from infra.settings import BillingSettings, CollectAllocationsSettings
from usecases.collect_allocations.pricing import describe_pricing
from usecases.doctor.rbac import Need, account, needs
from usecases.reconcile.targets import pricing_setting

Status = Literal["OK", "WARN", "FAIL"]
OK: Status = "OK"
WARN: Status = "WARN"
FAIL: Status = "FAIL"
LAG_HOURS = 2  # final hours this far behind are normal: an hour is final after it ended and was collected
OWNER_DAYS = 7  # the owner-label share is of the last days' cost
P = TypeVar("P")


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str

    def as_document(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class Report:
    checks: tuple[Check, ...]

    @property
    def failed(self) -> bool:
        return any(c.status == FAIL for c in self.checks)

    def as_document(self) -> dict[str, Any]:
        worst = FAIL if self.failed else WARN if any(c.status == WARN for c in self.checks) else OK
        return {"status": worst, "checks": [c.as_document() for c in self.checks]}


@dataclass(frozen=True)
class Opened:
    """The database, where it is (``address``: host, port and database) and the cluster measured."""

    db: Database
    address: str
    cluster: str


@dataclass
class Parts:
    """How to build each outside part; each may raise a ``FinOpsError`` (unset, invalid, down)."""

    database: Callable[[], Opened]
    source: Callable[[], CollectAllocationsSettings]
    kube: Callable[[], KubeClient]
    billing: Callable[[], BillingSettings]
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


def _check(name: str, status: Status, detail: str) -> Check:
    return Check(name, status, one_line(detail))


def run(parts: Parts) -> Report:
    """Every check, in order: the database and its schema, the allocation source, Kubernetes and
    each function's permissions, the pricing, the ledger and the owner labels."""
    checks: list[Check] = []
    opened = _part(checks, "database", parts.database, _database)
    schema = _needing(opened, "schema", "database", _schema)
    checks.append(schema)
    ready = opened if schema.status == OK else None  # the tables read below exist as this code knows them
    settings: CollectAllocationsSettings | None = None
    try:
        settings = parts.source()
    except FinOpsError as exc:
        checks.append(_check("allocation source", FAIL, exc.message))
    else:
        source = settings
        checks.append(_guarded(source.ALLOCATION_SOURCE, lambda: _source(source, parts.now)))
    kube = _part(
        checks, "kubernetes", parts.kube, lambda k: _check("kubernetes", OK, f"API server {k.server_version()}")
    )
    try:
        wanted = needs(parts.billing())
    except FinOpsError as exc:
        checks.append(_check("rbac", FAIL, exc.message))
    else:
        for target in TARGETS:
            name = f"rbac {target}"
            checks.append(_needing(kube, name, "kubernetes", _rbac(name, account(target), wanted[target])))
    if settings is None:
        checks.append(_check("pricing", WARN, "skipped: allocation source check failed"))
    else:
        checks.append(_needing(kube, "pricing", "kubernetes", lambda k: _pricing(k, settings)))
    checks.append(_needing(ready, "ledger", "schema", lambda o: _ledger(o, parts.now)))
    checks.append(_needing(ready, "owner labels", "schema", lambda o: _owners(o, parts.now)))
    if opened is not None:
        opened.db.close()
    return Report(tuple(checks))


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    try:
        return check()
    except FinOpsError as exc:
        return _check(name, FAIL, exc.message)


def _part(checks: list[Check], name: str, build: Callable[[], P], check: Callable[[P], Check]) -> P | None:
    """Build a part and check it; the part, or None when either failed (its FAIL appended)."""
    try:
        part = build()
        checks.append(check(part))
    except FinOpsError as exc:
        checks.append(_check(name, FAIL, exc.message))
        return None
    return part


def _needing(part: P | None, name: str, of: str, check: Callable[[P], Check]) -> Check:
    if part is None:
        return _check(name, WARN, f"skipped: {of} check failed")
    return _guarded(name, lambda: check(part))


def _database(opened: Opened) -> Check:
    try:
        opened.db.check(opened.db.pool.timeout)
    except FinOpsError as exc:
        cause = exc.message.removeprefix("PostgreSQL is unavailable: ")
        raise type(exc)(f"PostgreSQL at {opened.address} is unavailable: {cause}") from exc
    return _check("database", OK, f"PostgreSQL at {opened.address}")


def _schema(opened: Opened) -> Check:
    check_schema(opened.db)  # SchemaBehind, SchemaTooNew, MigrationError: each its own sentence
    return _check("schema", OK, f"at version {available()[-1].version:03d}, the version this image ships")


def _source(settings: CollectAllocationsSettings, now: datetime) -> Check:
    if settings.ALLOCATION_SOURCE == "prometheus":
        assert settings.PROMETHEUS_URL is not None  # the settings require it for this source
        client = PrometheusClient(
            settings.PROMETHEUS_URL,
            timeout=settings.PROMETHEUS_TIMEOUT_SECONDS,
            retries=0,
            bearer_token=settings.PROMETHEUS_BEARER_TOKEN,
        )
        try:
            return _check("prometheus", OK, f"Prometheus {client.build_version()} at {settings.PROMETHEUS_URL}")
        finally:
            client.close()
    url = settings.OPENCOST_URL
    assert url is not None  # the settings require it for this source
    reachable, reason = probe(url)
    if not reachable:
        return _check("opencost", FAIL, f"OpenCost at {url} is unreachable: {reason}")
    found = f"OpenCost {build_version(url) or '(version unknown: no opencost_build_info in /metrics)'} at {url}"
    honoured = _filter_honoured(OpenCostClient(url, timeout=settings.OPENCOST_TIMEOUT_SECONDS, retries=0), now)
    if honoured is None:
        return _check("opencost", WARN, f"{found}; filter= not probed: no namespace had cost in the last 24 hours")
    if honoured:
        return _check("opencost", OK, f"{found}, filter= honoured")
    shards = settings.OPENCOST_SHARD_NAMESPACES
    return _check(
        "opencost",
        FAIL if shards else WARN,
        f"{found} ignores filter= (versions before 1.115 do): "
        + (
            f"OPENCOST_SHARD_NAMESPACES={shards} needs it; upgrade OpenCost or set it to 0"
            if shards
            else "keep OPENCOST_SHARD_NAMESPACES at 0"
        ),
    )


def _filter_honoured(client: OpenCostClient, now: datetime) -> bool | None:
    """Does OpenCost honour ``filter=``? The last 24 hours by namespace, then the same filtered to
    the first namespace: an answer naming another namespace ignored the filter. None: no namespace
    to filter on."""
    end = now.replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(hours=24)
    try:
        every = _namespaces(client.allocation(start, end, aggregate="namespace", accumulate=True))
        if not every:
            return None
        chosen = min(every)
        filtered = _namespaces(
            client.allocation(start, end, aggregate="namespace", accumulate=True, namespaces=[chosen])
        )
    finally:
        client.close()
    return filtered <= {chosen}


def _namespaces(sets: Sequence[Mapping[str, Any]]) -> set[str]:
    return {key for step in sets for key in step if not key.startswith("__")}  # __idle__, __unallocated__


def _rbac(name: str, user: str, wanted: tuple[Need, ...]) -> Callable[[KubeClient], Check]:
    """One ``SelfSubjectAccessReview`` per need, asked as ``user`` (the function's ServiceAccount)."""

    def check(kube: KubeClient) -> Check:
        try:
            missing = [
                str(need)
                for need in wanted
                if not kube.access_review(
                    need.verb, need.group, need.resource, need.namespace, need.name, as_user=user
                )[0]
            ]
        except PermanentError as exc:  # a 403: the caller may not impersonate the account
            raise PermanentError(f"cannot ask as {user}: {exc.message}") from exc
        if missing:
            return _check(name, FAIL, f"{user} lacks {len(missing)} of {len(wanted)}: {'; '.join(missing)}")
        return _check(name, OK, f"{user} has all {len(wanted)} permissions")

    return check


def _pricing(kube: KubeClient, source: CollectAllocationsSettings) -> Check:
    """What collect_allocations would price with now (``describe_pricing``: read-only)."""
    view = describe_pricing(kube, pricing_setting(source), source.ALLOCATION_SOURCE)
    if view.invalid:
        return _check("pricing", FAIL, f"the {view.warning}")
    if view.currency is None:
        return _check("pricing", WARN, view.warning or "rows are stored unpriced")
    where = (
        f"OpenCost's own prices, declared by {view.declaration.declared_by}"
        if view.source == OPENCOST
        else (f"PriceBook {view.label}")
    )
    return _check("pricing", OK, f"{where}, currency {view.currency}")


def _hour(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _ledger(opened: Opened, now: datetime) -> Check:
    where: dict[str, Any] = {"cluster": opened.cluster, "aggregation": DEFAULT_AGGREGATION}
    ledger = opened.db.fetch_one("dq_ledger_summary", **where) or {}
    newest = ledger.get("newest_final")
    if newest is None:
        return _check("ledger", FAIL, f"no hour of cluster {opened.cluster} is final: has collect_allocations run?")
    behind = max(0, int((now - newest).total_seconds() // 3600) - 1)  # whole hours ended after it
    line = f"newest final hour {_hour(newest)} ({behind} h behind)"
    lost = int(ledger.get("lost") or 0)
    if lost:
        (last,) = opened.db.fetch_all("dq_recent_hours", **where, state="lost", limit=1)
        reason = f": {last['reason']}" if last["reason"] else ""
        return _check(
            "ledger", WARN, f"{line}; {lost} lost hours, their cost in no report (newest {_hour(last['hour'])}{reason})"
        )
    if behind > LAG_HOURS:
        return _check("ledger", WARN, f"{line}: is collect_allocations' CronJob running?")
    return _check("ledger", OK, f"{line}, no lost hours")


def _percent(part: int, whole: int) -> str:
    """``part / whole`` as a percentage with one decimal, rounded half up, from integers."""
    tenths = (part * 1000 * 2 + whole) // (2 * whole)
    return f"{tenths // 10}.{tenths % 10}%"


def _owners(opened: Opened, now: datetime) -> Check:
    end = now.date() + timedelta(days=1)
    where: dict[str, Any] = {"cluster": opened.cluster, "aggregation": DEFAULT_AGGREGATION}
    row = opened.db.fetch_one("doctor_unowned_share", **where, start=end - timedelta(days=OWNER_DAYS), end=end) or {}
    total, unowned = int(row.get("total_micros") or 0), int(row.get("unowned_micros") or 0)
    if total <= 0:
        return _check("owner labels", WARN, f"no cost in the last {OWNER_DAYS} days to measure")
    if not unowned:
        return _check("owner labels", OK, f"all of the last {OWNER_DAYS} days' cost is in namespaces with an owner")
    return _check(
        "owner labels",
        WARN,
        f"{_percent(unowned, total)} of the last {OWNER_DAYS} days' cost is in {row['unowned_namespaces']} namespaces "
        "without the owner label (finops report unlabelled lists them)",
    )
