"""We test these aspects of ``infra.heap.relaxed_gc`` (bulk work on request threads):

- it never switches the cyclic collector off, and raises the young-generation threshold only
  while a block is active;
- overlapping blocks on several threads restore the original thresholds once, when the last one
  leaves, whatever the order they leave in;
- cycles created inside a block are still collected.
"""

from __future__ import annotations

import gc
import threading
import weakref

from infra import heap


def test_blocks_on_threads_raise_the_threshold_and_the_last_one_restores_it() -> None:
    original = gc.get_threshold()
    inside, leave = [threading.Event() for _ in range(3)], [threading.Event() for _ in range(3)]
    seen: list[tuple[bool, tuple[int, ...]]] = []

    def work(n: int) -> None:
        with heap.relaxed_gc():
            seen.append((gc.isenabled(), gc.get_threshold()))
            inside[n].set()
            leave[n].wait(10)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for n, thread in enumerate(threads):
        thread.start()
        assert inside[n].wait(10)
    for n in (1, 0):  # leave out of order: the threshold stays raised while one block remains
        leave[n].set()
        threads[n].join()
        assert heap._depth > 0 and gc.get_threshold()[0] == max(original[0], heap.RELAXED_THRESHOLD)
    leave[2].set()
    threads[2].join()
    assert not heap._depth > 0 and gc.get_threshold() == original
    assert all(enabled for enabled, _ in seen)
    assert {t for _, t in seen} == {(max(original[0], heap.RELAXED_THRESHOLD), *original[1:])}


def test_cycles_made_inside_a_block_are_still_collected() -> None:
    class Node:
        other: object = None

    with heap.relaxed_gc():
        a, b = Node(), Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        del a, b
        gc.collect()  # the collector is on: an explicit or threshold collection frees the cycle
        assert ref() is None
