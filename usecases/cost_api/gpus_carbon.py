"""GPUs and emissions for the Cost tab and the cluster view, over the trailing ``days`` UTC days
(today's partial day included), from the stored hourly rows.

- ``/apps/{ns}/{name}/gpus`` and ``/apps/{ns}/{name}/carbon``: one application's own rows, in the
  scope of its latest record (``finops_in_app_scope``, as its daily history): its GPU-hours, GPU
  cost and busy GPU-hours (its share of its GPUs under the cluster's ``GPU_BASIS``, as split at
  collection), and its grams CO2e beside the cost of the same rows, with the factors' source and
  region. ``gpu`` is null when its rows hold no GPU.
- ``/gpus`` and ``/carbon``: this cluster's ``finops report gpus`` and ``finops report carbon``
  (``usecases.reports``) over the same days: GPU-hours, GPU cost and cost per busy GPU-hour per
  team, namespace or workload with each GPU model's idle on its own line; grams CO2e per team, cost
  centre, namespace or application, each line with the cost of the same rows (attributed as the
  grams are).

Hours without emissions (an OpenCost without carbon estimates, the Prometheus source) are named,
never read as 0 g: with none of the window's hours measured, ``grams`` and ``kg`` are null; with
some, they are the grams of those hours and ``hoursWithout`` says which are missing. Grams are
integers and kilograms their exact quotient (three decimals); money is integer micros beside its
decimal amount (two places, half-even), as everywhere in this API.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from finops.allocations import DEFAULT_AGGREGATION, IDLE, UNALLOCATED
from finops.carbon import kilograms
from finops.chargeback import Period
from finops.ledger import ranges
from infra.postgres import Database
from usecases.app_history.scope import app_scope
from usecases.cost_api.views import money, no_record
from usecases.reports import service
from usecases.reports.carbon import carbon_report
from usecases.reports.gpus import gpu_report, per_busy_hour

IDLE_GPU = "__idle__/gpu:"
_HOURS = Decimal("0.001")


def _period(days: int) -> Period:
    return service.last_days(days, datetime.now(UTC).date())


def _query(cluster: str, days: int) -> service.ReportQuery:
    return service.ReportQuery(_period(days), cluster, default_cluster=cluster)


def _gpu_hours(value: Decimal) -> str:
    return str(value.quantize(_HOURS, rounding=ROUND_HALF_EVEN))


def _app_rows(db: Database, cluster: str, identity: tuple[str, str], period: Period) -> tuple[Any, Any, list[Any]]:
    """The application's scope (None: no record), the window's query parameters, its hours' rows."""
    scope = app_scope(db, cluster, *identity)
    if scope is None:
        return None, None, []
    window = {
        "cluster": cluster,
        "aggregation": DEFAULT_AGGREGATION,
        "start": period.start,
        "end": period.end,
        **scope.params(),
    }
    return scope, window, db.fetch_all("app_scope_hours", **window)


def _app_head(
    identity: tuple[str, str], scope: Any, days: int, period: Period, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    currencies = {c for r in rows for c in r["currencies"]}
    return {
        "app": {"namespace": identity[0], "name": identity[1]},
        "recorded": True,
        "scope": scope.scope,
        "destinationNamespace": scope.destination_namespace,
        "days": days,
        "period": period.as_document(),
        "currency": currencies.pop() if len(currencies) == 1 else None,
        "hours": len(rows),
        "cost": money(sum(int(r["micros"]) for r in rows)),
    }


def app_gpus(db: Database, cluster: str, identity: tuple[str, str], args: Mapping[str, Any]) -> dict[str, Any]:
    """The application's GPU-hours, GPU cost and cost per busy GPU-hour over the trailing days."""
    days = int(args["days"])
    period = _period(days)
    scope, _, rows = _app_rows(db, cluster, identity, period)
    if scope is None:
        return no_record(identity)
    gpu_hours = sum((Decimal(r["gpu_hours"]) for r in rows), Decimal(0))
    micros = sum(int(r["gpu_micros"]) for r in rows)
    measured = [r for r in rows if r["busy_hours"] is not None]
    busy = sum((Decimal(r["busy_hours"]) for r in measured), Decimal(0)) if measured else None
    measured_micros = sum(int(r["measured_gpu_micros"] or 0) for r in measured) if measured else None
    gpu = None
    if gpu_hours or micros:
        per_busy = per_busy_hour(measured_micros, busy)
        gpu = {
            "gpuHours": _gpu_hours(gpu_hours),
            "cost": money(micros),
            "busyGpuHours": None if busy is None else _gpu_hours(busy),
            "costPerBusyGpuHour": per_busy,
        }
    return {**_app_head(identity, scope, days, period, rows), "gpu": gpu}


def app_carbon(db: Database, cluster: str, identity: tuple[str, str], args: Mapping[str, Any]) -> dict[str, Any]:
    """The application's grams CO2e beside its cost over the trailing days, with the factors."""
    days = int(args["days"])
    period = _period(days)
    scope, window, rows = _app_rows(db, cluster, identity, period)
    if scope is None:
        return no_record(identity)
    without = [r["hour"] for r in rows if not r["emitted"]]
    measured = len(rows) - len(without)
    grams = None
    factors: list[dict[str, Any]] = []
    if measured:
        found = db.fetch_one("app_scope_grams", **window)
        grams = int(found["grams"]) if found else 0
        factors = [
            {"kind": f["kind"], "source": f["source"], "region": f["region"], "hours": f["hours"]}
            for f in db.fetch_all("app_scope_factors", **window)
        ]
    return {
        **_app_head(identity, scope, days, period, rows),
        "hoursWithEmissions": measured,
        "hoursWithout": ranges(without) or None,
        "grams": grams,
        "kg": None if grams is None else kilograms(grams),
        "factors": factors,
    }


def cluster_gpus(db: Database, cluster: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """``finops report gpus`` of this cluster over the trailing days; idle lines name their model."""
    days, by = int(args["days"]), args["by"]
    body = gpu_report(db, _query(cluster, days), by).body
    lines = [
        {**line, "model": line[by][len(IDLE_GPU) :] if str(line[by]).startswith(IDLE_GPU) else None}
        for line in body["lines"]
    ]
    return {"cluster": cluster, "days": days, **body, "lines": lines}


def cluster_carbon(db: Database, cluster: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """``finops report carbon`` of this cluster over the trailing days, each line with its cost."""
    days, by = int(args["days"]), args["by"]
    query = _query(cluster, days)
    body = carbon_report(db, query, by).body
    hours = next((h for h in body["emissions"] if h["cluster"] == cluster), None)
    stored = hours["hours_stored"] if hours else 0
    with_emissions = hours["hours_with_emissions"] if hours else 0
    grams = {line[by]: int(line["grams"]) for line in body["lines"] if line["cluster"] == cluster}
    costs: dict[str, tuple[int, set[str]]] = {}
    for row in db.fetch_all(
        "carbon_line_costs",
        aggregation=query.aggregation,
        cluster=cluster,
        start=query.period.start,
        end=query.period.end,
        by=by,
    ):
        name = row["line"] or UNALLOCATED
        micros, currencies = costs.get(name, (0, set()))
        costs[name] = (micros + int(row["micros"]), currencies | ({row["currency"]} if row["currency"] else set()))
    lines: list[dict[str, Any]] = []
    for name in sorted(grams.keys() | costs.keys()):
        micros, currencies = costs.get(name, (0, set()))
        mine = grams.get(name, 0) if with_emissions else None
        lines.append(
            {
                by: name,
                "kind": "idle" if name == IDLE else "unallocated" if name == UNALLOCATED else "owner",
                "cost": money(micros) if len(currencies) <= 1 else None,
                "currency": next(iter(currencies)) if len(currencies) == 1 else None,
                "grams": mine,
                "kg": None if mine is None else kilograms(mine),
            }
        )
    order = {"owner": 0, "unallocated": 1, "idle": 2}
    lines.sort(key=lambda x: (order[x["kind"]], -(x["grams"] or 0), -_micros(x["cost"]), x[by]))
    currencies = {x["currency"] for x in lines if x["currency"]}
    total = sum(grams.values()) if with_emissions else None
    return {
        "cluster": cluster,
        "days": days,
        "period": body["period"],
        "coverage": body["coverage"],
        "by": by,
        "currency": currencies.pop() if len(currencies) == 1 else None,
        "hoursStored": stored,
        "hoursWithEmissions": with_emissions,
        "hoursWithout": hours["hours_without"] if hours else None,
        "factors": [{k: f[k] for k in ("kind", "source", "region", "hours", "grams", "kg")} for f in body["factors"]],
        "lines": lines,
        "total": {
            "cost": money(sum(_micros(x["cost"]) for x in lines)),
            "grams": total,
            "kg": None if total is None else kilograms(total),
        },
    }


def _micros(money: dict[str, Any] | None) -> int:
    return 0 if money is None else int(money["micros"])
