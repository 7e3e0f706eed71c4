"""Group commit: the statements of concurrent requests, run as one.

A burst of webhooks (an ApplicationSet syncing a hundred applications) would otherwise cost a
statement, a pool checkout and a commit each. Here the first caller to find no batch running
becomes the leader: it takes every item queued so far (its own first) and runs them with one
call of ``run``; the callers that arrive meanwhile wait, and when the batch is done the first of
them leads the next one. Alone, a caller leads at once and runs its own item: nothing waits for
a timer, and no thread of our own exists (the work is the requests' own, done before they
answer). It is the write-ahead log's group commit of PostgreSQL itself, at the level of our
statements.

``run`` gets the items and returns one result per item, in order: an exception in place of a
result is raised to that item's caller alone, an exception ``run`` raises to every caller of the
batch. Each leader runs one batch, so a caller never waits for more than the
batch running when it arrived and its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class _Waiter(Generic[Item, Result]):
    __slots__ = ("error", "item", "result", "settled", "wake")

    def __init__(self, item: Item) -> None:
        self.item = item
        self.result: Result | BaseException | None = None
        self.error: BaseException | None = None
        self.settled = False
        self.wake: threading.Lock | None = None  # a follower's, held until it is woken


class GroupCommit(Generic[Item, Result]):
    """Runs concurrent ``submit`` calls' items together, at most ``max_batch`` at a time."""

    def __init__(self, run: Callable[[Sequence[Item]], Sequence[Result | BaseException]], max_batch: int) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._run = run
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Waiter[Item, Result]] = []
        self._leading = False

    def submit(self, item: Item) -> Result:
        """``item``'s result, run in the batch of whichever caller leads when it is taken."""
        me: _Waiter[Item, Result] = _Waiter(item)
        with self._lock:
            self._queue.append(me)
            if self._leading:  # a follower
                me.wake = threading.Lock()
                me.wake.acquire()
            self._leading = True
        if me.wake is not None:
            me.wake.acquire()  # released when settled by a leader, or told to lead the next batch
        if not me.settled:
            self._lead()
        if me.error is not None:
            raise me.error
        if isinstance(me.result, BaseException):
            raise me.result
        return me.result  # type: ignore[return-value]  # settled without error: a result of ``run``

    def _lead(self) -> None:
        with self._lock:
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
        try:
            results = self._run([w.item for w in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"a batch of {len(batch)} items gave {len(results)} results")
        except BaseException as exc:  # every caller of the batch gets it
            for waiter in batch:
                waiter.error = exc
        else:
            for waiter, result in zip(batch, results, strict=True):
                waiter.result = result
        finally:
            with self._lock:
                follower = self._queue[0] if self._queue else None
                self._leading = follower is not None
            for waiter in batch:
                waiter.settled = True
                if waiter.wake is not None:
                    waiter.wake.release()
            if follower is not None and follower.wake is not None:
                follower.wake.release()  # not settled: it leads the next batch
