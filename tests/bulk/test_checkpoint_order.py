"""Checkpoint saves reach the store one at a time and in order (OrderedSaves).

A bulk load saves its checkpoint on a worker thread; when the load ends or is cancelled,
the periodic saver is cancelled while its thread may still be writing an older state,
and the load's last save starts. Unordered, the older write could land last and leave
the checkpoint behind the load (seen as a flaky resume test under CPU load).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from azt._core.bulk.checkpoint import OrderedSaves


class SlowFirstStore:
    """A checkpoint store whose first save waits for ``release`` inside its thread."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.state: dict[str, Any] | None = None
        self.calls = 0
        self.fail_first = False

    def load(self) -> dict[str, Any] | None:
        return self.state

    def save(self, state: dict[str, Any]) -> None:
        self.calls += 1
        if self.calls == 1:
            self.started.set()
            assert self.release.wait(10)
            if self.fail_first:
                raise OSError("disk full")
        self.state = state


OLD = {"version": 1, "done_below": 10, "ranges": [[20, 30]]}
NEW = {"version": 1, "done_below": 40, "ranges": []}


async def test_a_cancelled_save_still_lands_before_the_next() -> None:
    store = SlowFirstStore()
    saves = OrderedSaves(store)
    first = asyncio.create_task(saves.save(OLD))
    await asyncio.to_thread(store.started.wait, 10)
    first.cancel()  # as the load cancels its periodic saver
    with pytest.raises(asyncio.CancelledError):
        await first
    second = asyncio.create_task(saves.save(NEW))  # the load's last save
    await asyncio.sleep(0.05)
    assert not second.done()  # it waits for the first thread
    store.release.set()
    await second
    assert store.state == NEW
    assert not await saves.failed()


async def test_a_failed_save_is_reported_and_the_next_one_still_runs() -> None:
    store = SlowFirstStore()
    store.fail_first = True
    saves = OrderedSaves(store)
    first = asyncio.create_task(saves.save(OLD))
    await asyncio.to_thread(store.started.wait, 10)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    store.release.set()
    assert await saves.failed()  # OLD never reached the store
    assert store.load() is None
    await saves.save(NEW)
    assert store.load() == NEW
    assert not await saves.failed()


async def test_an_awaited_save_raises_what_the_store_raised() -> None:
    store = SlowFirstStore()
    store.fail_first = True
    store.release.set()
    saves = OrderedSaves(store)
    with pytest.raises(OSError, match="disk full"):
        await saves.save(OLD)
    assert await saves.failed()
