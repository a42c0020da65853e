"""Resuming: a load killed halfway (its task cancelled; or dead before its last
checkpoint save, which an earlier checkpoint stands in for) and run again with the same
input and checkpoint skips what the service acknowledged and ends with the table equal to
the input, value by value, with no operation failed or applied twice."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from azt.bulk import BulkOptions, BulkProgress, FileCheckpoint, load
from tests.bulk.faults import chaos
from tests.bulk.support import expected, rows, stored, stub, table_on

OPTIONS = BulkOptions(linger=0.01, checkpoint_interval=0.05, progress_interval=0.01)


class Recorder(FileCheckpoint):
    """A file checkpoint that also keeps every state it saved."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.saved: list[dict[str, Any]] = []

    def save(self, state: dict[str, Any]) -> None:
        super().save(state)
        self.saved.append(state)


def _earlier_than(final: dict[str, Any]) -> dict[str, Any]:
    """A smaller state the load passed through before ``final``: half its done prefix;
    or, while its first items are not acknowledged yet (their partition's batch retried
    after a fault, so ``done_below`` is 0 or 1 though later ranges are done), its ranges
    with the last one cut to its first half."""
    if final["done_below"] >= 2:
        return {"version": 1, "done_below": final["done_below"] // 2, "ranges": []}
    *kept, (lo, hi) = final["ranges"]
    last = [lo, lo + max(1, (hi - lo) // 2)]
    return {"version": 1, "done_below": final["done_below"], "ranges": [*kept, last]}


@pytest.mark.parametrize("stale", [False, True], ids=["cancelled", "died-before-last-save"])
async def test_killed_load_resumes_from_its_checkpoint(tmp_path: Path, stale: bool) -> None:
    inj = chaos(seed=3)
    items = list(rows(100, 20))
    path = tmp_path / "load.ckpt"
    ckpt = Recorder(path)
    async with stub(faults=inj) as server, table_on(server, "chaos") as table:
        with inj.suspended():
            await table.create_table()
        half = asyncio.Event()

        def progress(p: BulkProgress) -> None:
            if p.written >= len(items) // 2:
                half.set()

        task = asyncio.create_task(
            load(table, items, options=OPTIONS, checkpoint=ckpt, progress=progress)
        )
        await asyncio.wait_for(half.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with inj.suspended():
            partial = await stored(table)
        assert 0 < len(partial) < len(items)
        final = json.loads(path.read_text())
        assert final == ckpt.saved[-1]
        if stale:  # as if killed before the last save: an earlier, smaller checkpoint
            # (how many saves happened before the cancel depends on timing: when none of
            # them has work done that the final one lacks, one made from the final one)
            earlier = next(
                (s for s in ckpt.saved if s != final and 0 < s["done_below"] < final["done_below"]),
                None,
            ) or _earlier_than(final)
            FileCheckpoint(path).save(earlier)
        state = json.loads(path.read_text())
        done_before = state["done_below"] + sum(b - a for a, b in state["ranges"])
        assert 0 < done_before <= len(partial)

        resumed = await load(table, items, options=OPTIONS, checkpoint=FileCheckpoint(path))
        with inj.suspended():
            assert await stored(table) == expected(items)
    assert resumed.ok, resumed.failures[:3]
    assert resumed.skipped == done_before
    assert resumed.written == len(items) - done_before
    if stale:  # acknowledged after the checkpoint it resumed from: read back, not redone
        assert resumed.resolved >= len(partial) - done_before > 0
    done = json.loads(path.read_text())
    assert done == {"version": 1, "done_below": len(items), "ranges": []}
