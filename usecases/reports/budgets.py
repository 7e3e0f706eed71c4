"""The budgets report: each budget of the policy against its chargeback line, with a forecast.

The figures are the chargeback's, never a second reading of the rollups: month-to-date is the
total of the owner's line of ``chargeback(..., by="team")`` over the month's full days (the cost
centre's line of ``by="cost-center"`` for a cost centre's budget), the run-rate's window is read
the same way, so a budget's month-to-date is exactly what the chargeback bills that line, idle and
shared shares included as the policy spreads them. Only the owner line counts: under
``idle: separate`` the idle line of ``idle_owner`` is not its consumption (``finops.chargeback``).
The method (``finops.budgets``) travels with the figures, and both periods' coverage with them, so
a forecast standing on missing hours says so. Both reports follow the policy's refusals
(``require_complete`` holds for month-to-date, whose days are over).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from finops.budgets import forecast, horizon
from finops.coverage import Coverage
from finops.lines import LineKey, LineKind
from finops.periods import Period
from finops.policy import Policy
from infra.postgres import Database
from usecases.reports.service import DEFAULT_CLUSTER, Ledger, ReportDocument, ReportQuery, ledger_of, month_period

_BY = {"owner": LineKey.TEAM, "cost_center": LineKey.COST_CENTER}


def budgets_report(
    source: Database | Ledger,
    policy: Policy,
    query_month: str | None,
    now: datetime | None = None,
    basis: str | None = None,
    *,
    cluster: str | None = None,
    default_cluster: str = DEFAULT_CLUSTER,
) -> ReportDocument:
    """Every budget of ``policy`` for ``query_month`` (``YYYY-MM``; default: ``now``'s month) at
    ``now`` (default: the clock): ``{month, currency, cluster, method, run_rate_window,
    hours_left, coverage, run_rate_coverage, budgets: [...]}``. ``basis`` is the chargeback's
    (default: the policy's ``reconciliation.basis``)."""
    now = now or datetime.now(UTC)
    ledger = ledger_of(source)
    month = month_period(query_month or now.astimezone(UTC).strftime("%Y-%m"))
    at = horizon(month, now)

    def query(period: Period) -> ReportQuery:
        return ReportQuery(period, cluster, default_cluster=default_cluster, now=now)

    budgets = policy.budgets
    keys = {"owner", *(budget.key for budget in budgets)}  # by team always: it carries the coverage
    so_far, coverage = _lines(ledger, policy, at.month_to_date, keys, query, basis)  # rebuilds stale rollups first
    if at.window is not None:  # the data may be younger than the window: start at its first day
        days = ledger.cost_days(query(at.window))
        at = horizon(month, now, min(days) if days else at.cut.date())
    window, window_coverage = _lines(ledger, policy, at.window, keys, query, basis)
    statuses = [
        forecast(budget, at, so_far.get((budget.key, budget.name), 0), window.get((budget.key, budget.name), 0))
        for budget in budgets
    ]
    body: dict[str, Any] = {
        "month": month.as_document(),
        "currency": policy.currency,
        "basis": basis or policy.reconciliation.basis.value,
        "cluster": cluster,
        "method": at.method(),
        "month_to_date": at.month_to_date.as_document() if at.month_to_date else None,
        "run_rate_window": at.window.as_document() if at.window else None,
        "hours_left": at.remaining_hours,
        "coverage": coverage.as_document() if coverage else None,
        "run_rate_coverage": window_coverage.as_document() if window_coverage else None,
        "budgets": [status.as_document() for status in statuses],
    }
    return ReportDocument(body, tuple(c for c in (coverage, window_coverage) if c is not None))


def _lines(
    ledger: Ledger,
    policy: Policy,
    period: Period | None,
    keys: set[str],
    query: Callable[[Period], ReportQuery],
    basis: str | None,
) -> tuple[dict[tuple[str, str], int], Coverage | None]:
    """The owner lines' totals in micros by (budget key, name) over ``period``, and its coverage."""
    found: dict[tuple[str, str], int] = {}
    coverage = None
    if period is None:
        return found, coverage
    for key in sorted(keys):
        report = ledger.chargeback(policy, query(period), _BY[key], basis)
        coverage = report.coverage if key == "owner" else coverage
        for line in report.lines:
            if line.kind is LineKind.OWNER:
                found[(key, line.owner)] = int(line.total.scaleb(6))  # whole cents: exact
    return found, coverage
