"""We test the hour ledger's rules (``finops.ledger``): which hours a run fetches, how an empty
answer moves between open and lost, and where usage stops being final."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from finops.hours import HOUR, Hour
from finops.ledger import (
    HourState,
    empty_answer,
    first_unsettled,
    horizon,
    hours_to_collect,
    ranges,
    window_start,
)
from usecases.collect_allocations.service import CollectResult

T = datetime(2026, 11, 20, 10, tzinfo=UTC)
PINNED = Hour(T)


def h(n: int) -> datetime:
    return T + n * HOUR


def test_settled_states_are_final_and_lost_only() -> None:
    assert {s for s in HourState if s.settled} == {HourState.FINAL, HourState.LOST}


def test_the_window_reaches_back_to_the_ledger_start_but_never_past_the_horizon() -> None:
    assert horizon(PINNED, 12) == h(-12)
    # A new cluster: the lookback.
    assert window_start(PINNED, lookback=3, history_hours=12, ledger_start=None) == h(-3)
    # An outage: back to the first hour the ledger knows of...
    assert window_start(PINNED, lookback=3, history_hours=12, ledger_start=h(-9)) == h(-9)
    # ...but OpenCost answers only 12 hours back.
    assert window_start(PINNED, lookback=3, history_hours=12, ledger_start=h(-40)) == h(-12)
    # A ledger younger than the lookback does not shorten it.
    assert window_start(PINNED, lookback=3, history_hours=12, ledger_start=h(-1)) == h(-3)


def test_a_run_fetches_every_unsettled_hour_oldest_first_then_the_pinned_hour_open() -> None:
    ledger = {h(-4): HourState.FINAL, h(-3): HourState.OPEN, h(-2): HourState.LOST}  # h(-1) missing
    assert hours_to_collect(PINNED, h(-4), ledger) == [(Hour(h(-3)), True), (Hour(h(-1)), True), (PINNED, False)]
    assert hours_to_collect(PINNED, T, {}) == [(PINNED, False)]


def test_an_empty_answer_stays_open_until_the_grace_after_the_hour_ends() -> None:
    hour, grace = Hour(h(-1)), timedelta(hours=6)
    end = hour.end
    assert empty_answer(hour, finalize=True, now=end, grace=grace)[0] is HourState.OPEN
    assert empty_answer(hour, finalize=True, now=end + grace - timedelta(seconds=1), grace=grace)[0] is HourState.OPEN
    state, reason = empty_answer(hour, finalize=True, now=end + grace, grace=grace)
    assert state is HourState.LOST and "6 h after the hour ended" in reason
    # The pinned hour (not finalized) is never lost for being empty.
    assert empty_answer(hour, finalize=False, now=end + 10 * grace, grace=grace)[0] is HourState.OPEN


def test_usage_is_final_up_to_the_first_hour_that_is_not_settled() -> None:
    settled = {h(-5), h(-4), h(-2), h(-1)}  # h(-3) missing: a gap
    assert first_unsettled(h(-5), T, settled, ledger_start=h(-5)) == h(-3)
    assert first_unsettled(h(-2), T, settled, ledger_start=h(-5)) == T  # all settled up to the end
    assert first_unsettled(h(-3), T, settled, ledger_start=h(-5)) == h(-3)
    assert first_unsettled(h(-5), h(-4), settled, ledger_start=h(-5)) == h(-4)  # never past the end
    # Hours before the ledger's first hour were never asked for: settled (no usage).
    assert first_unsettled(h(-9), T, settled, ledger_start=h(-5)) == h(-3)
    # No ledger at all: nothing is settled.
    assert first_unsettled(h(-9), T, settled, ledger_start=None) == h(-9)
    assert first_unsettled(T, T, settled, ledger_start=h(-5)) == T


def test_hours_print_as_compact_ranges() -> None:
    assert ranges([h(0), h(1), h(2), h(5)]) == "2026-11-20T10:00Z..2026-11-20T12:00Z, 2026-11-20T15:00Z"
    assert ranges([h(2 * n) for n in range(12)], limit=2).endswith("and 10 more ranges (10 hours)")
    assert ranges([]) == ""
    # At most ten ranges by default; exactly the limit prints them all, with no "and 0 more".
    assert ranges([h(2 * n) for n in range(11)]).endswith("2026-11-21T04:00Z, and 1 more ranges (1 hours)")
    assert ranges([h(2 * n) for n in range(10)]).endswith("2026-11-21T04:00Z")
    assert ranges([h(0), h(2)], limit=2) == "2026-11-20T10:00Z, 2026-11-20T12:00Z"


def test_only_an_ended_hour_answered_empty_needs_attention() -> None:
    # A ping in the first minute of the pinned hour finds nothing for it yet: the hour stays open
    # and the next run retries it, without a warning; an hour that has ended is a warning.
    running = CollectResult(pinned_hour=PINNED, hours_empty=[PINNED])
    running.finish(now=T + timedelta(seconds=30))
    assert (running.outcome, running.warnings) == ("success", [])
    ended = CollectResult(pinned_hour=PINNED, hours_empty=[Hour(h(-1)), PINNED])
    ended.finish(now=T + timedelta(seconds=30))
    assert ended.outcome == "partial"
    assert ended.warnings == ["1 hour(s) answered empty by OpenCost, left open and retried: 2026-11-20T09:00Z"]
