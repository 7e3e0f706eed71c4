"""``GET /api/v1/budgets`` and the budget families of ``GET /metrics``: one report, two shapes.

Both read ``usecases.reports.budgets.budgets_report`` for this cluster (``CLUSTER_ID``), as the
chargeback route does, so the metrics are the API's figures to the cent: the gauges are the
document's decimal strings converted to float at the last step. The metrics describe the current
UTC month; without ``POLICY_PATH`` (or without budgets in it) they are absent, and a month the
policy refuses (unpriced hours, another currency, ``require_complete`` with gaps) exports no
budget figures rather than failing the whole scrape: the refusal is the API's to explain.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from finops.errors import IncompleteData, NotFound, PermanentError
from infra.postgres import Database
from infra.settings import CostApiSettings
from usecases.reports.budgets import budgets_report
from usecases.reports.formats import load_policy

_LABELS = ["cluster", "owner", "cost_center", "currency"]


def budgets(db: Database, s: CostApiSettings, args: Mapping[str, Any]) -> Any:
    """This cluster's budgets for ``month`` (default: the current UTC month) with the forecast's
    method and coverage. A month that has not started has no figures yet: 409, as the data cannot
    answer (the ``month`` parameter itself is well formed: its declaration says which are)."""
    if not s.POLICY_PATH:
        raise NotFound("budgets are not configured: set POLICY_PATH to the policy file")
    month, now = args["month"], datetime.now(UTC)
    if month is not None and month > now.strftime("%Y-%m"):
        raise IncompleteData(f"month: {month} has not started yet")
    policy = load_policy(s.POLICY_PATH)
    return budgets_report(db, policy, month, now, basis=args["basis"], cluster=s.CLUSTER_ID).body


def budget_families(db: Database, s: CostApiSettings, now: datetime | None = None) -> Iterator[Metric]:
    """Per budget of ``now``'s month (default: the clock's): amount, month-to-date and forecast
    (currency units)."""
    amount = GaugeMetricFamily(
        "finops_budget_amount", "The month's budget of the owner or cost centre (the policy's budgets)", labels=_LABELS
    )
    so_far = GaugeMetricFamily(
        "finops_budget_month_to_date",
        "The owner's (or cost centre's) chargeback line over the month's full UTC days so far",
        labels=_LABELS,
    )
    ahead = GaugeMetricFamily(
        "finops_budget_forecast",
        "Month-end forecast: month to date + run-rate of the last 7 full days x hours left (absent: none yet)",
        labels=_LABELS,
    )
    if s.POLICY_PATH:
        policy = load_policy(s.POLICY_PATH)
        try:
            body = budgets_report(db, policy, None, now, cluster=s.CLUSTER_ID).body if policy.budgets else None
        except PermanentError:  # refused: the API says why (module docstring)
            body = None
        for budget in body["budgets"] if body else []:
            labels = [s.CLUSTER_ID, budget.get("owner", ""), budget.get("cost_center", ""), policy.currency]
            amount.add_metric(labels, _units(budget["amount"]))
            so_far.add_metric(labels, _units(budget["month_to_date"]))
            if budget["forecast"] is not None:
                ahead.add_metric(labels, _units(budget["forecast"]))
    yield from (amount, so_far, ahead)


def _units(text: str) -> float:
    """A decimal string of the document as the exposition's float (the only conversion)."""
    return float(Decimal(text))
