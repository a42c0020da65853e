"""Checkpoint saves reach the store one at a time and in order (OrderedSaves).

A bulk load saves its checkpoint on a worker thread; when the load ends or is cancelled,
the periodic saver is cancelled while its thread may still be writing an older state,
and the load's last save starts. Unordered, the older write could land last and leave
the checkpoint behind the load (seen as a flaky resume test under CPU load). And a state
counts as saved only once its save returned: a saver cancelled while it waited for the
save before its own had never saved its state (the resume test again, under CPU load).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from azt import TableClient
from azt._core.bulk.checkpoint import OrderedSaves
from azt._core.bulk.loader import _Loader
from azt.bulk import BulkOptions


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


async def test_a_saver_cancelled_while_waiting_does_not_lose_the_last_state() -> None:
    """The load's periodic saver, cancelled when the load ends while it waits for the
    save before its own, never saved its state: the load's last save must make it (it
    once counted that state as saved, and the checkpoint stayed one save behind)."""
    store = SlowFirstStore()
    conn = "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:9/a"
    async with TableClient.from_connection_string(conn, "ckpt") as table:  # sends nothing
        loader = _Loader(
            table,
            table=None,
            kind="insert",
            options=BulkOptions(),
            checkpoint=store,
            progress=None,
            on_result=None,
            clock=time.monotonic,
        )

        def acknowledge(index: int) -> None:  # what _succeed does for an acknowledged write
            loader._done.add(index)
            loader._acknowledged += 1

        acknowledge(0)
        first = asyncio.create_task(loader._save())
        await asyncio.to_thread(store.started.wait, 10)  # its thread writes, slowly
        acknowledge(1)
        waiting = asyncio.create_task(loader._save())  # the saver's next turn
        await asyncio.sleep(0.05)
        assert not waiting.done()  # it waits for the first save
        waiting.cancel()  # the load ends
        with pytest.raises(asyncio.CancelledError):
            await waiting
        store.release.set()
        await first
        assert store.state == {"version": 1, "done_below": 1, "ranges": []}
        await loader._save()  # the load's last save (run's finally)
        assert store.state == {"version": 1, "done_below": 2, "ranges": []}
        calls = store.calls
        await loader._save()  # nothing new: nothing saved
        assert store.calls == calls
