"""Coverage: which hours of a report's period its figures stand on.

Reports read daily rollups, and a rollup cannot tell a day of 24 collected hours from a day of 3.
The hour ledger (``allocation_hours``) can: one row per cluster and hour the collector knows of,
in a state (``open``: stored, may still change; ``final``: stored for good; ``lost``: given up,
with the reason) and with the currency its rows are priced in (none: no PriceBook was active).
An hour without a ledger row is *missing*. So every report carries a ``Coverage``, built here,
without I/O, from the ledger's runs of alike hours (``LedgerRun``). Per cluster the report covers:

- ``hours``: the UTC hours starting in the period (a month has 672 to 744);
- ``final``, ``open``, ``lost``: the hours in that state;
- ``future``: hours starting after the current hour that have no ledger row. Nobody could have
  collected them, so they are not *missing*; but a period that is not over is never complete
  (its coverage says "period not over");
- ``missing`` = hours - final - open - lost - future: past hours the ledger does not know;
- ``unpriced``: hours with rows but no currency, whatever their state. Their cost is in no
  currency; ``require_priced`` refuses them rather than count them in the policy's;
- ``incomplete``: the runs of hours that are not final, oldest first, as compact ranges (first and
  last hour, both included: ``2026-11-03T00:00Z..2026-11-03T05:00Z missing``; a lost or open run
  carries its reason), ``unpriced_hours`` the same for unpriced hours, and ``lost_reasons`` the
  lost hours per reason. A list longer than ``MAX_RANGES`` ends with ``and N more ranges (M hours)``;
- ``pricing``: the pricing versions the hours were stamped with (``PricingVersion``: a PriceBook,
  or OpenCost's own prices in a declared currency), each with its hour ranges, so a period in
  which the source or the currency changed shows both.

The coverage is *complete* when the period is over and every hour of every covered cluster is
final and priced. A lost hour is never complete: it is a known gap, not data.

Which clusters a report covers is ``covered_clusters``: the one asked for, else every cluster
with ledger hours or rollups in the period plus those the policy's fixed costs name, else (no
cluster known at all) a fallback, so that fixed costs are still billed and the gap still shows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time

from finops.errors import IncompleteData, InvalidInput
from finops.hours import HOUR, hours_between, truncate_to_hour
from finops.ledger import HourRange, HourState, compact, hour_text
from finops.periods import Period

# The states a ledger row can hold (``finops.ledger``); "missing" and "future" are hours it lacks.
STATES = tuple(state.value for state in HourState if state is not HourState.MISSING)


@dataclass(frozen=True)
class PricingVersion:
    """Where stamped hours' prices came from: ``source`` ``pricebook`` (``name`` the book's
    namespace/name) or ``opencost`` (``name`` who declared it), in ``currency``."""

    source: str
    name: str
    currency: str


@dataclass(frozen=True)
class LedgerRun:
    """Consecutive ledger hours of one cluster alike in state, reason, currency and pricing (a row
    of the ``report_hour_ledger`` query)."""

    cluster: str
    state: str
    first: datetime  # the first hour's start
    last: datetime  # the last hour's start (included)
    unpriced: bool = False  # the hours have rows but no currency
    currency: str | None = None
    reason: str | None = None
    rows: int = 0  # allocation rows stored for these hours
    pricing: PricingVersion | None = None  # the version the hours were stamped with (None: unpriced)

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(f"ledger state {self.state!r} is not one of {', '.join(STATES)}")
        if self.first.tzinfo is None or self.last.tzinfo is None:
            raise ValueError("a ledger run's hours must be timezone-aware")
        if self.last < self.first:
            raise ValueError(f"a ledger run ends before it starts: {self.first} > {self.last}")


def day_ranges(days: Iterable[date]) -> list[HourRange]:
    """Whole UTC days as hour ranges, consecutive days merged."""
    ranges: list[HourRange] = []
    for day in sorted(set(days)):
        first = datetime.combine(day, time(), tzinfo=UTC)
        if ranges and ranges[-1].last + HOUR == first:
            ranges[-1] = HourRange(ranges[-1].first, first + 23 * HOUR)
        else:
            ranges.append(HourRange(first, first + 23 * HOUR))
    return ranges


@dataclass(frozen=True)
class ClusterCoverage:
    """One cluster's hours over the period (module docstring)."""

    cluster: str
    hours: int
    final: int
    open: int
    lost: int
    missing: int
    future: int
    unpriced: int
    has_data: bool  # rows in the ledger or rollups in the period
    currencies: tuple[str, ...]  # what its rows are priced in (ledger and rollups)
    incomplete: tuple[HourRange, ...]
    unpriced_hours: tuple[HourRange, ...]
    lost_reasons: Mapping[str, int] = field(default_factory=dict)
    pricing: tuple[tuple[PricingVersion, tuple[HourRange, ...]], ...] = ()  # each version's hours, first first

    @property
    def gaps(self) -> bool:
        """Whether any past hour is not final and priced (future hours are the period's matter)."""
        return bool(self.missing or self.open or self.lost or self.unpriced)

    def problem(self) -> str:
        """What is wrong, on one line (empty when nothing is)."""
        if not self.gaps:
            return ""
        counts = [
            f"{n} {name}"
            for name, n in (
                ("missing", self.missing),
                ("open", self.open),
                ("lost", self.lost),
                ("unpriced", self.unpriced),
            )
            if n
        ]
        where = compact(self.incomplete) + [f"{r} unpriced" for r in compact(self.unpriced_hours)]
        nodata = "no data, " if not self.has_data else ""
        return f"cluster {self.cluster}: {nodata}{', '.join(counts)} of {self.hours} hours ({', '.join(where)})"

    def as_document(self) -> dict[str, object]:
        return {
            "hours": self.hours,
            "final": self.final,
            "open": self.open,
            "lost": self.lost,
            "missing": self.missing,
            "future": self.future,
            "unpriced": self.unpriced,
            "has_data": self.has_data,
            "currencies": list(self.currencies),
            "incomplete": compact(self.incomplete),
            "unpriced_hours": compact(self.unpriced_hours),
            "lost_reasons": dict(self.lost_reasons),
            "pricing": [
                {
                    "source": version.source,
                    "name": version.name,
                    "currency": version.currency,
                    "hours": compact(hours),
                }
                for version, hours in self.pricing
            ],
        }


@dataclass(frozen=True)
class Coverage:
    """A report's coverage: its period, the moment it was taken, and each covered cluster's hours."""

    period: Period
    now: datetime
    clusters: tuple[ClusterCoverage, ...]

    @property
    def period_over(self) -> bool:
        return self.now >= self.period.end

    @property
    def hours(self) -> int:
        return sum(1 for _ in hours_between(self.period.start, self.period.end))

    @property
    def complete(self) -> bool:
        return self.period_over and bool(self.clusters) and not any(c.gaps for c in self.clusters)

    @property
    def cluster_names(self) -> tuple[str, ...]:
        return tuple(c.cluster for c in self.clusters)

    def problems(self) -> list[str]:
        """Why the coverage is not complete, one phrase each (none when it is)."""
        found = []
        if not self.period_over:
            future = max((c.future for c in self.clusters), default=0)
            found.append(f"period not over (it ends {hour_text(self.period.end)}; {future} hours to come)")
        if not self.clusters:
            found.append("no cluster")
        return found + [c.problem() for c in self.clusters if c.gaps]

    def summary(self) -> str:
        """The period and its problems on one line, for warnings and refusals."""
        period = f"{hour_text(self.period.start)}..{hour_text(self.period.end)}"
        return f"{period} is {'complete' if self.complete else 'incomplete'}" + "".join(
            f"; {problem}" for problem in self.problems()
        )

    def as_document(self) -> dict[str, object]:
        """The stable ``"coverage"`` object of every report (docs/explanation/money-rules.md, "Coverage")."""
        return {
            "complete": self.complete,
            "period_over": self.period_over,
            "hours": self.hours,
            "clusters": {c.cluster: c.as_document() for c in self.clusters},
        }


def covered_clusters(
    asked: str | None, known: Iterable[str], named: Iterable[str | None], fallback: str
) -> tuple[str, ...]:
    """The clusters a report covers: ``asked``; else those ``known`` (ledger hours or rollups in
    the period) and those ``named`` by the policy's fixed costs; else ``fallback``."""
    if asked is not None:
        return (asked,)
    found = sorted(set(known) | {name for name in named if name is not None})
    return tuple(found) or (fallback,)


def build_coverage(
    period: Period,
    clusters: Iterable[str],
    runs: Iterable[LedgerRun],
    *,
    now: datetime,
    rollups: Mapping[str, Collection[str]] | None = None,
) -> Coverage:
    """The coverage of ``clusters`` over ``period`` from the ledger's ``runs`` (runs of other
    clusters and hours outside the period are ignored). ``rollups`` maps each cluster with daily
    rollups in the period to the currencies they are priced in. ``now`` must be timezone-aware."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    rollups = rollups or {}
    runs_of: dict[str, list[LedgerRun]] = defaultdict(list)
    for run in runs:
        runs_of[run.cluster].append(run)
    starts = [hour.start for hour in hours_between(period.start, period.end)]
    current = truncate_to_hour(now)
    covered = [
        _cluster(name, starts, current, runs_of.get(name, []), rollups.get(name)) for name in sorted(set(clusters))
    ]
    return Coverage(period=period, now=now, clusters=tuple(covered))


def _cluster(
    name: str, starts: list[datetime], current: datetime, runs: list[LedgerRun], rollup: Collection[str] | None
) -> ClusterCoverage:
    index = {start: i for i, start in enumerate(starts)}
    labels = ["future" if start > current else "missing" for start in starts]
    unpriced = [False] * len(starts)
    priced_with: list[PricingVersion | None] = [None] * len(starts)
    currencies = set(rollup or ())
    for run in runs:
        moment = truncate_to_hour(run.first)
        while moment <= run.last:
            if (i := index.get(moment)) is not None:
                labels[i] = f"{run.state}: {run.reason}" if run.reason and run.state != "final" else run.state
                unpriced[i] = run.unpriced
                priced_with[i] = run.pricing if run.rows else None
            moment += HOUR
        if run.currency:
            currencies.add(run.currency.strip())
    states = Counter(label.partition(":")[0] for label in labels)
    lost_reasons = Counter(
        label.partition(": ")[2] or "no reason given" for label in labels if label.startswith("lost")
    )
    return ClusterCoverage(
        cluster=name,
        hours=len(starts),
        final=states["final"],
        open=states["open"],
        lost=states["lost"],
        missing=states["missing"],
        future=states["future"],
        unpriced=sum(unpriced),
        has_data=rollup is not None or any(r.rows > 0 for r in runs),
        currencies=tuple(sorted(currencies)),
        incomplete=tuple(_runs(starts, [label not in ("final", "future") for label in labels], labels)),
        unpriced_hours=tuple(_runs(starts, unpriced, [""] * len(starts))),
        lost_reasons=dict(sorted(lost_reasons.items())),
        pricing=_pricing(starts, priced_with),
    )


def _pricing(
    starts: list[datetime], priced_with: list[PricingVersion | None]
) -> tuple[tuple[PricingVersion, tuple[HourRange, ...]], ...]:
    """Each pricing version with the runs of hours stamped with it, in the order first used."""
    versions = dict.fromkeys(version for version in priced_with if version is not None)
    return tuple(
        (version, tuple(_runs(starts, [used == version for used in priced_with], [""] * len(starts))))
        for version in versions
    )


def _runs(starts: list[datetime], chosen: list[bool], labels: list[str]) -> list[HourRange]:
    """The runs of consecutive chosen hours with the same label."""
    ranges: list[HourRange] = []
    for i, start in enumerate(starts):
        if not chosen[i]:
            continue
        if ranges and i and chosen[i - 1] and labels[i - 1] == labels[i]:
            ranges[-1] = HourRange(ranges[-1].first, start, labels[i])
        else:
            ranges.append(HourRange(start, start, labels[i]))
    return ranges


def require_complete(coverage: Coverage) -> None:
    """Refuse (``IncompleteData``) a report whose period is not complete, naming the gaps."""
    if not coverage.complete:
        raise IncompleteData(f"refused (require_complete): {coverage.summary()}", coverage=coverage.as_document())


def require_priced(coverage: Coverage, currency: str | None, unpriced_days: Mapping[str, Iterable[date]]) -> None:
    """Refuse (``IncompleteData``) a period holding cost that no currency prices: the ledger's
    unpriced hours, or rollup days whose cost has no currency (``unpriced_days`` per cluster)."""
    found = []
    for cluster in coverage.clusters:
        if cluster.unpriced:
            found.append(
                f"cluster {cluster.cluster}: {cluster.unpriced} hours {', '.join(compact(cluster.unpriced_hours))}"
            )
        elif days := day_ranges(unpriced_days.get(cluster.cluster, ())):
            found.append(f"cluster {cluster.cluster}: cost without a currency on {', '.join(compact(days))}")
    if found:
        taken = f" and are never counted as {currency}" if currency else ""
        raise IncompleteData(
            f"refused: unpriced allocations (collected while no PriceBook was active) have no currency{taken}: "
            f"{'; '.join(found)}. Activate a PriceBook (or declare OpenCost's own prices: PRICING_SOURCE=opencost), "
            "then re-collect those hours (hours already collected "
            "are re-priced only when they are collected again)",
            coverage=coverage.as_document(),
        )


def require_currency(currency: str, coverage: Coverage) -> None:
    """Refuse (``InvalidInput``) data priced in another currency than the policy's: reports never
    convert, so a period mixing currencies, or in a currency other than the policy's, is refused."""
    other = {c.cluster: [cur for cur in c.currencies if cur != currency] for c in coverage.clusters}
    if not any(other.values()):
        return
    wrong = ", ".join(
        f"cluster {name}'s allocations are priced in {' and '.join(curs)}" for name, curs in other.items() if curs
    )
    seen = {cur for c in coverage.clusters for cur in c.currencies}
    mixed = "; ".join(f"cluster {c.cluster}: {', '.join(c.currencies)}" for c in coverage.clusters if c.currencies)
    detail = f" (the period mixes currencies: {mixed})" if len(seen) > 1 else ""
    raise InvalidInput(f"policy.currency is {currency} but {wrong}; reports never convert currencies{detail}")
