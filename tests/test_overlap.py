"""thoth/writes/overlap.py: the background embed-and-write worker keeps order, bounds memory, surfaces failures."""

from __future__ import annotations

import threading
import time

import pytest

from thoth.writes.overlap import OrderedWorker


def test_runs_in_order_on_one_thread_and_sums_results() -> None:
    seen: list[tuple[int, str]] = []

    def work(item: int) -> int:
        time.sleep(0.01 if item % 2 else 0.0)  # uneven work must not reorder items
        seen.append((item, threading.current_thread().name))
        return item

    worker = OrderedWorker(work)
    for i in range(10):
        worker.submit(i)
    assert worker.close() == sum(range(10))
    assert [i for i, _ in seen] == list(range(10))
    assert len({name for _, name in seen}) == 1 and seen[0][1] != threading.current_thread().name


def test_submit_blocks_when_pending_items_are_waiting() -> None:
    release = threading.Event()
    worker = OrderedWorker(lambda item: release.wait(5) and 1, pending=2)
    worker.submit(1)
    worker.submit(2)
    blocked = threading.Thread(target=worker.submit, args=(3,))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # a third batch waits until the first is written
    release.set()
    blocked.join(5)
    assert worker.close() == 3


def test_failure_is_raised_in_the_caller_and_stops_later_items() -> None:
    done: list[int] = []

    def work(item: int) -> int:
        if item == 1:
            raise ValueError("disk full")
        done.append(item)
        return 1

    worker = OrderedWorker(work, pending=3)
    with pytest.raises(ValueError, match="disk full"):
        for i in range(5):
            worker.submit(i)
        worker.close()
    assert done == [0]  # nothing after the failed item was written
