"""Fewer cyclic garbage collections around bulk work, safely under threads.

Parsing and storing an hour of allocations creates about a million short-lived objects and no
reference cycles. With the default thresholds the cyclic collector runs a young collection every
700 allocations and keeps walking the growing heap for nothing. ``relaxed_gc`` raises the
young-generation threshold (``RELAXED_THRESHOLD`` allocations) for the duration of the block.

The collector's settings are process-wide and requests are served on threads, so the block never
switches the collector off (that would stop cycle collection for every other request). The blocks
are reference-counted under a lock: the first thread to enter raises the threshold, the last to
leave restores what it found. Cycles are still collected meanwhile, only less often.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

RELAXED_THRESHOLD = 100_000  # young-generation allocations between collections inside a block

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()


@contextmanager
def relaxed_gc() -> Iterator[None]:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(max(_saved[0], RELAXED_THRESHOLD), *_saved[1:])
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.set_threshold(*_saved)
