"""We test these aspects of a report's coverage (``finops.coverage``), from ledger runs alone:

- a month with 168 of its 744 hours final: 576 missing, named as one compact range, incomplete;
- every hour final and priced, the period over: complete; open, lost (with its reason), missing
  and unpriced hours make it incomplete, each listed where it is;
- a month still running: hours after the current one are ``future``, not missing, and the
  coverage says "period not over";
- long lists end with "and N more ranges"; ranges of one hour are one timestamp;
- which clusters a report covers (asked, known, named by fixed costs, else the fallback);
- the refusals: incomplete under ``require_complete``, unpriced hours or unpriced rollup days
  (always), and another currency than the policy's, naming clusters, currencies and hours.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from finops.coverage import (
    LedgerRun,
    PricingVersion,
    build_coverage,
    covered_clusters,
    day_ranges,
    require_complete,
    require_currency,
    require_priced,
)
from finops.errors import IncompleteData, InvalidInput
from finops.ledger import HourRange, compact
from finops.periods import Period

H = timedelta(hours=1)
OCTOBER = Period(datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))
AFTER = datetime(2026, 12, 1, 0, 39, tzinfo=UTC)  # October is over


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 10, day, hour, tzinfo=UTC)


def run(first: datetime, last: datetime, state: str = "final", cluster: str = "prod-eu", **kw: object) -> LedgerRun:
    return LedgerRun(cluster, state, first, last, currency=kw.pop("currency", "EUR"), rows=10, **kw)  # type: ignore[arg-type]


ALL_FINAL = [run(at(1), at(31, 23))]


def test_a_week_of_a_month_is_576_hours_missing() -> None:
    coverage = build_coverage(OCTOBER, ["prod-eu"], [run(at(1), at(7, 23))], now=AFTER)
    cluster = coverage.clusters[0]
    assert (cluster.hours, cluster.final, cluster.open, cluster.lost, cluster.missing) == (744, 168, 0, 0, 576)
    assert (cluster.future, cluster.unpriced, cluster.has_data) == (0, 0, True)
    assert not coverage.complete and coverage.period_over
    assert coverage.as_document() == {
        "complete": False,
        "period_over": True,
        "hours": 744,
        "clusters": {
            "prod-eu": {
                "hours": 744,
                "final": 168,
                "open": 0,
                "lost": 0,
                "missing": 576,
                "future": 0,
                "unpriced": 0,
                "has_data": True,
                "currencies": ["EUR"],
                "incomplete": ["2026-10-08T00:00Z..2026-10-31T23:00Z missing"],
                "unpriced_hours": [],
                "lost_reasons": {},
                "pricing": [],  # the run names no pricing version
            }
        },
    }
    assert coverage.summary() == (
        "2026-10-01T00:00Z..2026-11-01T00:00Z is incomplete; cluster prod-eu: 576 missing of 744 hours "
        "(2026-10-08T00:00Z..2026-10-31T23:00Z missing)"
    )


def test_every_hour_final_and_priced_is_complete() -> None:
    coverage = build_coverage(OCTOBER, ["prod-eu"], ALL_FINAL, now=AFTER)
    assert coverage.complete and coverage.problems() == []
    require_complete(coverage)  # does not raise
    require_priced(coverage, "EUR", {})


def test_open_and_lost_hours_are_listed_with_their_reasons() -> None:
    runs = [
        run(at(1), at(3, 4)),
        run(at(3, 5), at(3, 5), "lost", reason="OpenCost no longer has the hour"),
        run(at(3, 6), at(31, 21)),
        run(at(31, 22), at(31, 23), "open", reason="empty answer"),
    ]
    cluster = build_coverage(OCTOBER, ["prod-eu"], runs, now=AFTER).clusters[0]
    assert (cluster.final, cluster.open, cluster.lost, cluster.missing) == (741, 2, 1, 0)
    assert cluster.as_document()["incomplete"] == [
        "2026-10-03T05:00Z lost: OpenCost no longer has the hour",
        "2026-10-31T22:00Z..2026-10-31T23:00Z open: empty answer",
    ]
    assert cluster.lost_reasons == {"OpenCost no longer has the hour": 1}


def test_a_missing_hour_between_runs_is_its_own_range() -> None:
    runs = [run(at(1), at(10, 4)), run(at(10, 6), at(31, 23))]
    cluster = build_coverage(OCTOBER, ["prod-eu"], runs, now=AFTER).clusters[0]
    assert cluster.missing == 1 and [str(r) for r in cluster.incomplete] == ["2026-10-10T05:00Z missing"]


def test_unpriced_hours_are_counted_and_refused() -> None:
    runs = [run(at(1), at(2, 23)), run(at(3), at(3, 5), currency=None, unpriced=True), run(at(3, 6), at(31, 23))]
    coverage = build_coverage(OCTOBER, ["prod-eu"], runs, now=AFTER)
    assert coverage.clusters[0].unpriced == 6 and not coverage.complete
    assert coverage.clusters[0].as_document()["unpriced_hours"] == ["2026-10-03T00:00Z..2026-10-03T05:00Z"]
    with pytest.raises(IncompleteData, match=r"cluster prod-eu: 6 hours 2026-10-03T00:00Z\.\.2026-10-03T05:00Z") as e:
        require_priced(coverage, "EUR", {})
    assert "never counted as EUR" in e.value.message and "Activate a PriceBook" in e.value.message
    assert e.value.http_status == 409 and e.value.coverage == coverage.as_document()


def test_unpriced_rollup_days_are_refused_even_without_the_ledger() -> None:
    coverage = build_coverage(OCTOBER, ["prod-eu"], [], now=AFTER, rollups={"prod-eu": []})
    with pytest.raises(IncompleteData, match=r"cluster prod-eu: cost without a currency on 2026-10-03T00:00Z\.\."):
        require_priced(coverage, "EUR", {"prod-eu": [date(2026, 10, 3), date(2026, 10, 4)]})


def test_a_running_month_counts_future_hours_apart() -> None:
    now = at(10, 12) + timedelta(minutes=30)
    coverage = build_coverage(
        OCTOBER, ["prod-eu"], [run(at(1), at(10, 11)), run(at(10, 12), at(10, 12), "open")], now=now
    )
    cluster = coverage.clusters[0]
    assert (cluster.final, cluster.open, cluster.missing, cluster.future) == (228, 1, 0, 515)
    assert not coverage.period_over and not coverage.complete
    assert coverage.problems()[0] == "period not over (it ends 2026-11-01T00:00Z; 515 hours to come)"


def test_a_cluster_without_data_is_all_missing() -> None:
    coverage = build_coverage(OCTOBER, ["prod-eu", "dev"], ALL_FINAL, now=AFTER)
    dev = coverage.as_document()["clusters"]["dev"]  # type: ignore[index]
    assert (dev["missing"], dev["has_data"], dev["incomplete"]) == (
        744,
        False,
        ["2026-10-01T00:00Z..2026-10-31T23:00Z missing"],
    )
    assert "cluster dev: no data, 744 missing of 744 hours" in coverage.summary()
    with pytest.raises(IncompleteData, match=r"^refused \(require_complete\): .* cluster dev: no data"):
        require_complete(coverage)


def test_long_lists_end_with_how_many_more() -> None:
    ranges = [HourRange(at(day), at(day), "missing") for day in range(1, 15)]
    shown = compact(ranges)
    assert len(shown) == 11 and shown[0] == "2026-10-01T00:00Z missing" and shown[-1] == "and 4 more ranges (4 hours)"
    assert [str(r) for r in day_ranges([date(2026, 10, 2), date(2026, 10, 1), date(2026, 10, 5)])] == [
        "2026-10-01T00:00Z..2026-10-02T23:00Z",
        "2026-10-05T00:00Z..2026-10-05T23:00Z",
    ]


@pytest.mark.parametrize(
    ("asked", "known", "named", "expected"),
    [
        ("prod-eu", ["dev"], ["x"], ("prod-eu",)),
        (None, ["dev", "prod-eu", "dev"], [None, "edge"], ("dev", "edge", "prod-eu")),
        (None, [], ["edge", None], ("edge",)),
        (None, [], [None], ("fallback",)),
    ],
    ids=["asked", "known-and-named", "named-only", "nothing-known"],
)
def test_the_clusters_a_report_covers(
    asked: str | None, known: list[str], named: list[str | None], expected: tuple[str, ...]
) -> None:
    assert covered_clusters(asked, known, named, "fallback") == expected


def test_another_currency_or_a_mix_is_refused_naming_clusters_and_currencies() -> None:
    runs = [*ALL_FINAL, run(at(1), at(31, 23), cluster="us", currency="USD")]
    coverage = build_coverage(OCTOBER, ["prod-eu", "us"], runs, now=AFTER, rollups={"prod-eu": ["EUR"]})
    with pytest.raises(InvalidInput) as e:
        require_currency("EUR", coverage)
    assert e.value.message == (
        "policy.currency is EUR but cluster us's allocations are priced in USD; reports never convert currencies "
        "(the period mixes currencies: cluster prod-eu: EUR; cluster us: USD)"
    )
    require_currency("EUR", build_coverage(OCTOBER, ["prod-eu"], ALL_FINAL, now=AFTER))


def test_ledger_runs_are_checked() -> None:
    with pytest.raises(ValueError, match="state"):
        LedgerRun("prod-eu", "done", at(1), at(1))
    with pytest.raises(ValueError, match="ends before"):
        LedgerRun("prod-eu", "final", at(2), at(1))
    with pytest.raises(ValueError, match="timezone"):
        build_coverage(OCTOBER, ["prod-eu"], [], now=datetime(2026, 12, 1))


def test_the_pricing_versions_of_a_period_are_listed_with_their_hours_in_the_order_first_used() -> None:
    book = PricingVersion("pricebook", "finops/standard", "EUR")
    opencost = PricingVersion("opencost", "PRICING_SOURCE", "EUR")
    runs = [
        run(at(1), at(9, 23), pricing=book),
        run(at(10), at(19, 23), pricing=opencost),
        run(at(20), at(31, 23), pricing=book),
    ]
    coverage = build_coverage(OCTOBER, ["prod-eu"], runs, now=AFTER)
    assert coverage.complete  # a switch of source in one currency is no gap
    assert coverage.as_document()["clusters"]["prod-eu"]["pricing"] == [  # type: ignore[index]
        {
            "source": "pricebook",
            "name": "finops/standard",
            "currency": "EUR",
            "hours": ["2026-10-01T00:00Z..2026-10-09T23:00Z", "2026-10-20T00:00Z..2026-10-31T23:00Z"],
        },
        {
            "source": "opencost",
            "name": "PRICING_SOURCE",
            "currency": "EUR",
            "hours": ["2026-10-10T00:00Z..2026-10-19T23:00Z"],
        },
    ]
