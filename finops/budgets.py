"""Budgets per owner or cost centre per month, and the month-end forecast held against them.

A budget is a line of the chargeback policy (``finops.policy``)::

    budgets:
      - {owner: search, amount: "4000.00"}        # the owner's chargeback line (``--by team``)
      - {cost_center: cc-1, amount: "12000.00"}   # the cost centre's line (``--by cost-center``)

per calendar month (UTC), in the policy's currency. ``parse_budgets`` validates the list; every
error starts with the key path (``policy.budgets[0].amount``). Amounts follow the policy's fixed
costs (a decimal string or an integer, six decimals at most; YAML floats are refused), and must be
more than zero: a percentage of a zero budget means nothing. An entry names exactly one of
``owner`` or ``cost_center``, a label value as the namespaces carry it; the same owner (or cost
centre) may have one budget.

**The forecast** is month-to-date plus a run-rate over the hours left, and the method is stated
with every figure, because a forecast nobody can recompute is argued about rather than acted on:

- the reports read daily rollups, so both sums are over *full UTC days*: month-to-date is the
  month's days before ``cut``, the UTC midnight of ``now`` (today's partial day is not counted;
  its hours are among the hours left, so nothing is counted twice or dropped);
- the run-rate is the cost of the last 7 full days before ``cut`` divided by their hours (168),
  or of fewer days when the month is younger (the window never reaches into the previous month,
  whose spend may differ) or when the data is (no day before the first day with data counts);
- forecast = month-to-date + run-rate x the hours from ``cut`` to the end of the month; once the
  month is over it is the month's cost; before any full day with data there is no forecast.

Everything is exact (integer micros and ``Fraction``); the forecast is rounded once, half-even, to
cents, and the percentages of the budget (month-to-date and forecast) once to one decimal.
``over_budget_forecast`` compares the forecast as shown with the budget, so the flag and the
figures never disagree. What this is not: a seasonal model. A week with a one-off batch job
raises the forecast until it leaves the window; the method says which days were read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction

from finops.errors import InvalidInput
from finops.hours import HOUR
from finops.periods import Period
from finops.rounding import round_half_even

RUN_RATE_DAYS = 7
MICROS_PER_CENT = 10_000
DAY = timedelta(days=1)
_KEYS = ("owner", "cost_center", "amount")
# A Kubernetes label value that is not empty (the same rule as ``policy.idle_owner``).
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Budget:
    """One month's budget of an owner or of a cost centre (exactly one is set), in micros."""

    owner: str | None
    cost_center: str | None
    amount_micros: int

    def __post_init__(self) -> None:
        if (self.owner is None) == (self.cost_center is None):
            raise ValueError("a budget names exactly one of owner or cost_center")

    @property
    def key(self) -> str:
        """``owner`` or ``cost_center``: the document key, and which chargeback lines it reads."""
        return "owner" if self.owner is not None else "cost_center"

    @property
    def name(self) -> str:
        return self.owner if self.owner is not None else str(self.cost_center)

    def as_document(self) -> dict[str, str]:
        """As written in the policy; ``parse_budgets`` reads it back unchanged."""
        from finops.policy import format_policy_amount  # at call time: finops.policy imports this module

        return {self.key: self.name, "amount": format_policy_amount(self.amount_micros)}


def parse_budgets(value: object, path: str = "policy.budgets") -> tuple[Budget, ...]:
    """Validate the policy's ``budgets`` list (null or absent: no budget)."""
    # At call time: finops.policy imports this module, and its amount rule is the one to follow.
    from finops.policy import parse_policy_amount

    if value is None:
        return ()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise InvalidInput(f"{path}: must be a list, got {_show(value)}")
    budgets: list[Budget] = []
    for i, item in enumerate(value):
        where = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidInput(f"{where}: must be a mapping, got {_show(item)}")
        for key in item:
            if key not in _KEYS:
                raise InvalidInput(f"{where}.{key}: unknown key (expected one of {', '.join(_KEYS)})")
        named = [key for key in ("owner", "cost_center") if item.get(key) is not None]
        if len(named) != 1:
            raise InvalidInput(f"{where}: name exactly one of owner or cost_center")
        name = item[named[0]]
        if not isinstance(name, str) or not _LABEL_VALUE.fullmatch(name):
            raise InvalidInput(f"{where}.{named[0]}: {_show(name)} is not a valid label value")
        if item.get("amount") is None:
            raise InvalidInput(f'{where}.amount: required (a decimal string such as "4000.00")')
        amount = parse_policy_amount(f"{where}.amount", item["amount"])
        if amount == 0:
            raise InvalidInput(f"{where}.amount: a budget is more than zero")
        budget = Budget(name if named[0] == "owner" else None, name if named[0] == "cost_center" else None, amount)
        for j, other in enumerate(budgets):
            if (other.key, other.name) == (budget.key, budget.name):
                raise InvalidInput(f"{where}.{budget.key}: {_show(name)} has a budget already ({path}[{j}])")
        budgets.append(budget)
    return tuple(budgets)


def _midnight(moment: datetime) -> datetime:
    day = moment.astimezone(UTC)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _hours(start: datetime, end: datetime) -> int:
    return (end - start) // HOUR


@dataclass(frozen=True)
class Horizon:
    """Where a month stands at ``cut``: what month-to-date covers, the run-rate's window and the
    hours left (module docstring)."""

    month: Period
    cut: datetime  # month-to-date is [month.start, cut); a UTC midnight within the month
    window: Period | None  # the run-rate's full days; None when there is none or no need

    @property
    def month_to_date(self) -> Period | None:
        """The full days counted so far; None on the month's first day."""
        return Period(self.month.start, self.cut) if self.cut > self.month.start else None

    @property
    def over(self) -> bool:
        return self.cut >= self.month.end

    @property
    def remaining_hours(self) -> int:
        return _hours(self.cut, self.month.end)

    @property
    def window_hours(self) -> int:
        return _hours(self.window.start, self.window.end) if self.window else 0

    def method(self) -> str:
        """The method, with the days it read, in one sentence."""
        if self.over:
            return "the month is over: the forecast is the month's cost (all its days)"
        if self.window is None:
            return f"no full UTC day with data before {_day(self.cut)}: no run-rate, so no forecast yet"
        days = self.window_hours // 24
        why = ""
        if days < RUN_RATE_DAYS:
            why = " (the month is younger)" if self.window.start == self.month.start else " (the data is younger)"
        mtd = f"{_day(self.month.start)}..{_day(self.cut - DAY)}"
        return (
            f"forecast = month-to-date (full UTC days {mtd}) + run-rate of the last {days} full days"
            f" ({_day(self.window.start)}..{_day(self.window.end - DAY)}, {self.window_hours} hours){why}"
            f" x {self.remaining_hours} hours left from {_day(self.cut)}T00:00Z; today's partial day is not counted"
        )


def horizon(month: Period, now: datetime, first_day_with_data: date | None = None) -> Horizon:
    """The month at ``now``: month-to-date ends at ``now``'s UTC midnight (within the month), and
    the run-rate reads up to ``RUN_RATE_DAYS`` full days before it, none before the month's first
    day or ``first_day_with_data``. A month that has not started is refused."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if now < month.start:
        raise InvalidInput(f"month: {_day(month.start)[:7]} has not started yet")
    cut = min(_midnight(now), month.end)
    if cut >= month.end:
        return Horizon(month, month.end, None)
    start = max(month.start, cut - RUN_RATE_DAYS * DAY)
    if first_day_with_data is not None:
        start = max(
            start, datetime(first_day_with_data.year, first_day_with_data.month, first_day_with_data.day, tzinfo=UTC)
        )
    return Horizon(month, cut, Period(start, cut) if start < cut else None)


@dataclass(frozen=True)
class BudgetStatus:
    """A budget at a horizon: month-to-date, the run-rate and the forecast, exact in micros."""

    budget: Budget
    month_to_date_micros: int
    rate_per_hour: Fraction | None  # micros per hour; None without a window
    forecast_exact: Fraction | None  # micros; None: no forecast yet

    @property
    def forecast_cents(self) -> int | None:
        """The forecast rounded once, half-even, to cents."""
        return None if self.forecast_exact is None else round_half_even(self.forecast_exact / MICROS_PER_CENT)

    @property
    def percent_used(self) -> Decimal:
        return _percent(Fraction(self.month_to_date_micros), self.budget.amount_micros)

    @property
    def percent_forecast(self) -> Decimal | None:
        cents = self.forecast_cents
        return None if cents is None else _percent(Fraction(cents * MICROS_PER_CENT), self.budget.amount_micros)

    @property
    def over_budget_forecast(self) -> bool:
        cents = self.forecast_cents
        return cents is not None and cents * MICROS_PER_CENT > self.budget.amount_micros

    def as_document(self) -> dict[str, object]:
        cents = self.forecast_cents
        percent = self.percent_forecast
        return {
            **self.budget.as_document(),
            "month_to_date": _money(round_half_even(Fraction(self.month_to_date_micros, MICROS_PER_CENT))),
            "run_rate_per_hour": None if self.rate_per_hour is None else str(_micros(self.rate_per_hour)),
            "forecast": None if cents is None else _money(cents),
            "percent_used": str(self.percent_used),
            "percent_forecast": None if percent is None else str(percent),
            "over_budget_forecast": self.over_budget_forecast,
        }


def forecast(budget: Budget, at: Horizon, month_to_date_micros: int, window_micros: int) -> BudgetStatus:
    """The budget's status: ``month_to_date_micros`` is the cost of ``at.month_to_date`` and
    ``window_micros`` the cost of ``at.window`` (ignored without a window)."""
    if at.over:
        return BudgetStatus(budget, month_to_date_micros, None, Fraction(month_to_date_micros))
    if at.window is None:
        return BudgetStatus(budget, month_to_date_micros, None, None)
    rate = Fraction(window_micros, at.window_hours)
    return BudgetStatus(budget, month_to_date_micros, rate, month_to_date_micros + rate * at.remaining_hours)


def _percent(part: Fraction, whole: int) -> Decimal:
    """``part / whole`` in percent with one decimal, half-even."""
    return Decimal(round_half_even(part * 1000 / whole)).scaleb(-1)


def _money(cents: int) -> str:
    return str(Decimal(cents).scaleb(-2))


def _micros(amount: Fraction) -> Decimal:
    """Micros as currency units with six decimals, half-even (the run-rate, shown as read)."""
    return Decimal(round_half_even(amount)).scaleb(-6).quantize(Decimal("0.000001"))


def _day(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def _show(value: object) -> str:
    return repr(value) if not isinstance(value, str) else f'"{value}"'
