"""We test the group commit (``infra.group_commit``) with real threads:

- a caller alone runs its own item at once, in a batch of one, in its own thread;
- callers arriving while a batch runs wait and are run together in the next batch, in arrival
  order, by the first of them (the leader of a batch runs one batch only), each getting its own
  result;
- a batch holds at most ``max_batch`` items; the rest lead the batches after it;
- an exception ``run`` raises goes to every caller of that batch and no other; an exception in
  place of a result goes to its item's caller alone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from infra.group_commit import GroupCommit


class Recorder:
    """A ``run`` that records its batches and their threads; the first batch can be held."""

    def __init__(self, hold_first: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.threads: list[str] = []
        self.release = threading.Event()
        self.running = threading.Event()
        if not hold_first:
            self.release.set()

    def __call__(self, items: Sequence[str]) -> list[str | BaseException]:
        self.batches.append(list(items))
        self.threads.append(threading.current_thread().name)
        self.running.set()
        assert self.release.wait(30)
        if "boom" in items:
            raise RuntimeError("the batch failed")
        return [ValueError(f"{item} refused") if item.startswith("bad") else item.upper() for item in items]


def behind_a_held_batch(max_batch: int, items: list[str]) -> tuple[Recorder, dict[str, object]]:
    """``"a"`` submitted alone and held in its batch while ``items`` are submitted, one thread each,
    one after the other (each queued before the next starts); then released. The recorder and
    every caller's outcome: its result or the exception it raised."""
    run = Recorder(hold_first=True)
    group: GroupCommit[str, str] = GroupCommit(run, max_batch)
    outcomes: dict[str, object] = {}

    def call(item: str) -> None:
        try:
            outcomes[item] = group.submit(item)
        except Exception as exc:
            outcomes[item] = exc

    threads = [threading.Thread(target=call, args=("a",), name="caller-a")]
    threads[0].start()
    assert run.running.wait(30)
    for item in items:
        before = len(group._queue)
        thread = threading.Thread(target=call, args=(item,), name=f"caller-{item}")
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 30
        while len(group._queue) == before:  # queued behind the running batch
            assert time.monotonic() < deadline
            time.sleep(0.001)
    run.release.set()
    for thread in threads:
        thread.join(30)
    return run, outcomes


def test_a_caller_alone_runs_its_own_item_at_once() -> None:
    run = Recorder()
    group = GroupCommit(run, max_batch=8)
    assert group.submit("a") == "A"
    assert group.submit("b") == "B"
    assert run.batches == [["a"], ["b"]]
    assert run.threads == [threading.current_thread().name] * 2


def test_callers_arriving_during_a_batch_run_together_in_the_next_led_by_the_first_of_them() -> None:
    run, outcomes = behind_a_held_batch(8, ["b", "c", "d"])
    assert run.batches == [["a"], ["b", "c", "d"]]
    assert run.threads == ["caller-a", "caller-b"]
    assert outcomes == {"a": "A", "b": "B", "c": "C", "d": "D"}


def test_a_batch_holds_at_most_max_batch_items() -> None:
    run, outcomes = behind_a_held_batch(2, ["b", "c", "d", "e", "f"])
    assert run.batches == [["a"], ["b", "c"], ["d", "e"], ["f"]]
    assert run.threads == ["caller-a", "caller-b", "caller-d", "caller-f"]
    assert outcomes == {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E", "f": "F"}


def test_a_failed_batch_fails_its_callers_only_and_a_refused_item_its_own() -> None:
    run, outcomes = behind_a_held_batch(3, ["boom", "b", "c", "bad-d", "e"])
    assert run.batches == [["a"], ["boom", "b", "c"], ["bad-d", "e"]]
    for item in ("boom", "b", "c"):
        assert isinstance(outcomes[item], RuntimeError)
    assert isinstance(outcomes["bad-d"], ValueError) and str(outcomes["bad-d"]) == "bad-d refused"
    assert outcomes["a"] == "A" and outcomes["e"] == "E"


def test_a_batch_must_give_one_result_per_item() -> None:
    group: GroupCommit[str, str] = GroupCommit(lambda items: [], max_batch=4)
    with pytest.raises(RuntimeError, match="a batch of 1 items gave 0 results"):
        group.submit("a")
    with pytest.raises(ValueError, match="max_batch"):
        GroupCommit(lambda items: [], max_batch=0)
