"""How the data stands, for any application's tab: ``/api/v1/data-quality`` and ``/api/v1/config``.

Both need the proxy's identity like every UI route, naming *some* application (not the gate: a
team's tab must be able to say why its figure is missing), and neither carries an application's
or a team's figures beyond what the cluster's own health needs (namespaces without owner labels
are listed with their cost so the platform team can fix them; that is the same information
``finops report unlabelled`` gives).

- **data-quality**: the hour ledger (newest final hour, how far it lags, counts of open and lost
  hours over the whole ledger and the most recent of each with the reason), the unpriced share of
  the current UTC month *by cost* (daily rollups with no currency over all, micros) and *by hours*
  (ledger hours with rows but no currency over hours with rows), the namespaces without the owner
  label this month, OpenCost's reachability (``OPENCOST_URL``'s ``/healthz`` with a 2 s timeout:
  reported, never a 5xx), and the pricing source (the PriceBook version the newest stored hour was
  priced with). ``warnings`` says in sentences why a figure may be missing.
- **config**: the non-secret settings the UI needs. Never a token, a DSN, a file path or an
  address: what is configured is said as a boolean.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION
from finops.cloud_estimates import SOURCES
from finops.errors import PermanentError
from finops.money import format_amount
from infra.opencost.health import HEALTH_TIMEOUT_SECONDS, probe
from infra.postgres import Database
from infra.settings import CostApiSettings, current_secret
from usecases.cost_api.cloud_estimates import CLOUD_ESTIMATE_BODY, STALE_AFTER_SECONDS
from usecases.reports.formats import load_policy

RECENT = 10  # open and lost hours listed
UNOWNED = 50  # namespaces without the owner label listed


def _month(now: datetime) -> tuple[datetime, datetime]:
    """Midnight UTC of the 1st of ``now``'s month, and of the next month's."""
    start = datetime(now.year, now.month, 1, tzinfo=UTC)
    return start, (start + timedelta(days=32)).replace(day=1)


def _share(part: int, whole: int) -> str | None:
    """``part / whole`` with 4 decimals, from integers (no float); None when there is no whole."""
    if whole <= 0:
        return None
    scaled = (part * 10_000 * 2 + whole) // (2 * whole)  # rounded half up, exactly
    return f"{scaled // 10_000}.{scaled % 10_000:04d}"


def _hour(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def _opencost(s: CostApiSettings) -> dict[str, Any]:
    if not s.OPENCOST_URL:
        return {"reachable": None, "reason": "OPENCOST_URL not set"}
    reachable, reason = probe(s.OPENCOST_URL)
    return {"reachable": reachable, "reason": reason, "timeoutSeconds": HEALTH_TIMEOUT_SECONDS}


def _pricing(row: dict[str, Any] | None) -> dict[str, Any]:
    if row is None:
        return {"pricebook": None, "reason": "no PriceBook was ever active: rows are stored unpriced"}
    pricebook = {
        "source": row["source"],  # "pricebook", or "opencost": OpenCost's own prices (name: who declared them)
        "namespace": row["namespace"],
        "name": row["name"],
        "version": row["fingerprint"],
        "id": row["id"],
        "currency": row["currency"].strip(),
        "firstSeenAt": row["first_seen_at"].isoformat(),
    }
    reason = None
    if row["newest_hour"] is not None and row["priced_hour"] is None:
        reason = f"the newest stored hour ({_hour(row['newest_hour'])}) was collected with no active PriceBook"
    return {"pricebook": pricebook, "pricedHour": _hour(row["priced_hour"]), "reason": reason}


def data_quality(
    db: Database, s: CostApiSettings, _args: Mapping[str, Any], now: datetime | None = None
) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    where: dict[str, Any] = {"cluster": s.CLUSTER_ID, "aggregation": DEFAULT_AGGREGATION}
    first, next_first = _month(now)
    start, end = first.date(), next_first.date()
    ledger = db.fetch_one("dq_ledger_summary", **where) or {}
    recent = {
        state: [
            {"hour": _hour(r["hour"]), "reason": r["reason"], "rows": r["row_count"]}
            for r in db.fetch_all("dq_recent_hours", **where, state=state, limit=RECENT)
        ]
        for state in ("lost", "open")
    }
    cost = db.fetch_one("dq_unpriced_cost", **where, start=start, end=end) or {}
    hours = db.fetch_one("dq_unpriced_hours", **where, start=first, end=next_first) or {}
    unowned = db.fetch_all("dq_unowned_namespaces", **where, start=start, end=end, limit=UNOWNED)
    pricing = _pricing(db.fetch_one("dq_pricing_source", **where))
    newest = ledger.get("newest_final")
    # Whole hours that ended after the newest final one: 0 while the next hour is still running.
    lag = None if newest is None else max(0, int((now - newest).total_seconds() // 3600) - 1)
    total_micros, unpriced_micros = int(cost.get("total_micros") or 0), int(cost.get("unpriced_micros") or 0)
    with_rows, unpriced_hours = int(hours.get("with_rows") or 0), int(hours.get("unpriced") or 0)
    opencost = _opencost(s)
    warnings = []
    if newest is None:
        warnings.append("no hour is final yet: collect_allocations has not finished an hour")
    elif lag is not None and lag > 2:
        warnings.append(f"the newest final hour is {lag} hours old: is collect_allocations' CronJob running?")
    if ledger.get("lost"):
        warnings.append(f"{ledger['lost']} hours are lost: their cost is not in any report")
    if unpriced_hours:
        warnings.append(f"{unpriced_hours} hours this month were collected with no active PriceBook (unpriced)")
    if pricing["reason"]:
        warnings.append(pricing["reason"])
    if unowned:
        warnings.append(f"{len(unowned)} namespaces with cost this month have no owner label")
    if opencost["reachable"] is False:
        warnings.append(f"OpenCost is not reachable: {opencost['reason']}")
    return {
        "cluster": s.CLUSTER_ID,
        "generatedAt": now.isoformat(),
        "ledger": {
            "newestFinalHour": _hour(newest),
            "hoursBehind": lag,
            "firstHour": _hour(ledger.get("first_hour")),
            "final": ledger.get("final", 0),
            "open": ledger.get("open", 0),
            "lost": ledger.get("lost", 0),
            "recentLost": recent["lost"],
            "recentOpen": recent["open"],
        },
        "unpriced": {
            "period": {"start": start.isoformat(), "end": end.isoformat()},
            "byCost": {
                "unpriced": format_amount(unpriced_micros),
                "total": format_amount(total_micros),
                "share": _share(unpriced_micros, total_micros),
            },
            "byHours": {"unpriced": unpriced_hours, "withRows": with_rows, "share": _share(unpriced_hours, with_rows)},
        },
        "unownedNamespaces": {
            "period": {"start": start.isoformat(), "end": end.isoformat()},
            "listedAtMost": UNOWNED,
            "namespaces": [{"namespace": r["namespace"], "cost": format_amount(int(r["micros"]))} for r in unowned],
        },
        "opencost": opencost,
        "pricing": pricing,
        "warnings": warnings,
    }


def config(_db: Database, s: CostApiSettings, _args: Mapping[str, Any]) -> dict[str, Any]:
    labels: dict[str, Any] = {"owner": "team", "costCenter": "cost-center", "source": "default"}
    currency: str | None = None
    policy_error = None
    if s.POLICY_PATH:
        try:
            policy = load_policy(s.POLICY_PATH)
        except PermanentError as exc:
            policy_error = "the chargeback policy file is invalid: " + exc.message.split(": ", 1)[-1]
        else:
            labels = {"owner": policy.owner_label, "costCenter": policy.cost_center_label, "source": "policy"}
            currency = policy.currency
    return {
        "cluster": s.CLUSTER_ID,
        "currency": currency,  # the policy's; the data's own is /api/v1/data-quality's pricing
        "labels": labels,
        "clusterScopeApp": None if s.CLUSTER_SCOPE_APP == "off" else s.CLUSTER_SCOPE_APP,
        "chargeback": {"enabled": bool(s.POLICY_PATH) and policy_error is None, "reason": policy_error},
        "cloudEstimates": {
            "enabled": bool(current_secret(s, "CI_TOKEN")),
            "sources": list(SOURCES),
            "staleAfterSeconds": STALE_AFTER_SECONDS,
            "maxBodyBytes": CLOUD_ESTIMATE_BODY,
        },
        "opencost": {"configured": s.OPENCOST_URL is not None},
    }


ANY_VIEWS: dict[str, Callable[[Database, CostApiSettings, Mapping[str, Any]], Any]] = {
    "data_quality": data_quality,
    "config": config,
}
