"""One hour's answer, fetched before the hour's transaction and read inside it, streamed.

Why fetched first and read later: the hour is replaced in one transaction under its advisory lock
(``service._write_hour``); downloading inside it would hold the lock, a pooled connection and an
open transaction for as long as OpenCost takes to answer. So the answer is downloaded first into a
temporary file (``OpenCostClient.spool_allocation``), and the transaction reads it back one window
of allocations at a time: memory is bounded by a window, not by the hour. The Prometheus source
computes its hour in memory (``InMemory``).

**Namespace shards** (``OPENCOST_SHARD_NAMESPACES`` > 0): an hour too large for one request is
asked in batches of that many namespaces with OpenCost's ``filter``. When it is too large:
always if ``OPENCOST_SHARD_ABOVE_BYTES`` is 0; otherwise when one answer for the whole hour
outgrows that many bytes or fails (after its retries). Then, all before the transaction:

1. the hour's namespaces, from one ``aggregate=namespace`` query (one small entry per namespace);
   if it also names allocations outside every namespace (``__unallocated__``, ``__unmounted__``),
   one more batch asks for them with ``namespace!:`` over all the namespaces;
2. idle, from one ``aggregate=cluster`` query with ``includeIdle`` (only its ``__idle__`` entry is
   kept: a filtered answer's idle is scaled down to the filtered share);
3. the batches, without idle; each answer must hold only its own namespaces: OpenCost before
   v1.115 ignores ``filter`` and would answer the whole cluster each time, so such an answer
   refuses the hour (``OpenCostUnavailable``, one line) and leaves it as it was.

The transaction then writes idle and every batch, so the hour is replaced whole or not at all,
with rows equal to one request's (``tests/e2e/test_sharded_hour.py``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from finops.allocations import IDLE, UNALLOCATED, UNMOUNTED
from finops.errors import OpenCostUnavailable
from finops.hours import Hour
from infra.opencost import Allocation, OversizedAnswer, Spooled
from usecases.collect_allocations.sources import AllocationSource

log = logging.getLogger(__name__)

_OUTSIDE = frozenset({UNALLOCATED, UNMOUNTED})


@dataclass(frozen=True)
class ShardOptions:
    """``OPENCOST_SHARD_NAMESPACES`` (namespaces per batch, 0: one request per hour) and
    ``OPENCOST_SHARD_ABOVE_BYTES`` (0: every hour in batches; else only an hour whose single
    answer outgrows it or fails)."""

    namespaces: int = 0
    above_bytes: int = 0


@runtime_checkable
class SpoolingSource(Protocol):
    """A source whose answers can be spooled to disk and streamed back (``OpenCostClient``)."""

    base_url: str

    def spool_allocation(
        self,
        start: datetime,
        end: datetime,
        *,
        aggregate: str,
        include_idle: bool = ...,
        namespaces: Sequence[str] | None = ...,
        exclude_namespaces: bool = ...,
        retry_until: float | None = ...,
        max_bytes: int | None = ...,
    ) -> Spooled: ...


class Answer(Protocol):
    """An hour's allocations, read once: ``entries()`` inside the transaction, then ``close()``."""

    def entries(self) -> Iterator[tuple[str, Allocation]]: ...

    def close(self) -> None: ...


@dataclass
class InMemory:
    """An answer already in memory (the Prometheus source's hour)."""

    step_set: dict[str, Allocation]

    def entries(self) -> Iterator[tuple[str, Allocation]]:
        return iter(self.step_set.items())

    def close(self) -> None:
        self.step_set = {}


@dataclass
class _Part:
    spooled: Spooled
    only_idle: bool = False  # the cluster-level query: its __idle__ entry only
    namespaces: frozenset[str] | None = None  # a batch: the namespaces it may hold
    outside: frozenset[str] | None = None  # the rest batch: the namespaces it must not hold
    label: str = ""


@dataclass
class Streamed:
    """Spooled answers (one, or idle plus namespace batches) read back window by window."""

    parts: list[_Part] = field(default_factory=list)

    def entries(self) -> Iterator[tuple[str, Allocation]]:
        for part in self.parts:
            for key, allocation in part.spooled.allocations():
                if part.only_idle:
                    if key == IDLE:
                        yield key, allocation
                    continue
                if key == IDLE and (part.namespaces is not None or part.outside is not None):
                    continue  # a filtered answer's idle is the filtered share: the cluster's comes first
                _check_namespace(part, key, allocation)
                yield key, allocation

    def close(self) -> None:
        for part in self.parts:
            part.spooled.close()
        self.parts = []


def _check_namespace(part: _Part, key: str, allocation: Allocation) -> None:
    if part.namespaces is None and part.outside is None:
        return  # the hour in one request
    namespace = (allocation.get("properties") or {}).get("namespace") or ""
    if part.namespaces is not None and namespace in part.namespaces:
        return
    if part.outside is not None and namespace not in part.outside:
        return
    raise OpenCostUnavailable(
        f"{part.spooled.origin} for {part.label} with allocation {key!r} of namespace {namespace!r}: OpenCost "
        "ignored the namespace filter (versions before 1.115 do); the hour is left as it was. Upgrade OpenCost "
        "or set OPENCOST_SHARD_NAMESPACES=0"
    )


def fetch_hour(
    source: AllocationSource,
    hour: Hour,
    aggregation: str,
    shards: ShardOptions,
    *,
    retry_until: float | None = None,
) -> Answer:
    """The hour's answer, fully fetched; the caller reads ``entries()`` in its transaction."""
    if not isinstance(source, SpoolingSource):
        sets = source.allocation(
            hour.start, hour.end, aggregate=aggregation, accumulate=True, include_idle=True, retry_until=retry_until
        )
        if len(sets) > 1:
            raise OpenCostUnavailable(f"OpenCost answered {len(sets)} sets for one accumulated hour ({hour})")
        return InMemory(sets[0] if sets else {})
    if shards.namespaces > 0 and shards.above_bytes > 0:
        try:
            whole = source.spool_allocation(
                hour.start,
                hour.end,
                aggregate=aggregation,
                include_idle=True,
                retry_until=retry_until,
                max_bytes=shards.above_bytes,
            )
        except OpenCostUnavailable as exc:
            reason = "outgrew OPENCOST_SHARD_ABOVE_BYTES" if isinstance(exc, OversizedAnswer) else "failed"
            log.warning(
                "hour asked in namespace batches",
                extra={"fields": {"hour": str(hour), "reason": reason, "error": str(exc)}},
            )
            return _sharded(source, hour, aggregation, shards.namespaces, retry_until)
        return Streamed([_Part(whole)])
    if shards.namespaces > 0:
        return _sharded(source, hour, aggregation, shards.namespaces, retry_until)
    whole = source.spool_allocation(
        hour.start, hour.end, aggregate=aggregation, include_idle=True, retry_until=retry_until
    )
    return Streamed([_Part(whole)])


def _sharded(
    source: SpoolingSource, hour: Hour, aggregation: str, per_batch: int, retry_until: float | None
) -> Streamed:
    answer = Streamed()
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(answer.close)  # on any failure; popped once every part is fetched
        with source.spool_allocation(hour.start, hour.end, aggregate="namespace", retry_until=retry_until) as listing:
            namespaces: set[str] = set()
            outside = False
            for key, allocation in listing.allocations():
                namespace = (allocation.get("properties") or {}).get("namespace") or ""
                if namespace and namespace not in _OUTSIDE:
                    namespaces.add(namespace)
                elif key != IDLE:
                    outside = True
        idle = source.spool_allocation(
            hour.start, hour.end, aggregate="cluster", include_idle=True, retry_until=retry_until
        )
        answer.parts.append(_Part(idle, only_idle=True))
        ordered = sorted(namespaces)
        batches = [ordered[i : i + per_batch] for i in range(0, len(ordered), per_batch)]
        for number, batch in enumerate(batches, start=1):
            label = f"namespace batch {number} of {len(batches)}"
            spooled = source.spool_allocation(
                hour.start, hour.end, aggregate=aggregation, namespaces=batch, retry_until=retry_until
            )
            answer.parts.append(_Part(spooled, namespaces=frozenset(batch), label=label))
        if outside and ordered:
            spooled = source.spool_allocation(
                hour.start,
                hour.end,
                aggregate=aggregation,
                namespaces=ordered,
                exclude_namespaces=True,
                retry_until=retry_until,
            )
            answer.parts.append(_Part(spooled, outside=frozenset(ordered), label="the allocations of no namespace"))
        log.info(
            "hour fetched in namespace batches",
            extra={"fields": {"hour": str(hour), "namespaces": len(ordered), "batches": len(batches)}},
        )
        cleanup.pop_all()
    return answer
