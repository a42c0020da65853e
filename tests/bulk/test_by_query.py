"""Bulk update and delete by query: every entity a query selects is changed or deleted
exactly once, each write conditional on the ETag just read, under injected faults and a
concurrent writer (an entity it changed is read again and changed again, never
overwritten with a stale value), resumable from a checkpoint of the query's progress,
for entity classes and ``DynamicEntity``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from pathlib import Path
from typing import Any

import pytest

from azt import RequestInfo, ResponseInfo, TableClient, UpdateMode
from azt._orm import bulk_query
from azt.bulk import BulkOptions, FileCheckpoint, delete_where, load, update_where
from azt.dynamic import DynamicEntity, column
from azt.entity import Entity, Prop, prop
from azt.query import Query
from azt_server_stub.realism.faults import FaultInjector, FaultKind
from tests.bulk.support import stub, table_on

OPTIONS = BulkOptions(linger=0.02, checkpoint_interval=0.05)


class Doc(Entity):
    status: Prop[str] = prop(default="new")
    stamp: Prop[str] = prop(default="")
    writer: Prop[int] = prop(default=0)  # what the concurrent writer last set


def faults(seed: int) -> FaultInjector:
    """10 % of the requests to the ``chaos`` table fail: 6 % busy, 2 % of writes dropped
    before they apply, 2 % after."""
    inj = FaultInjector(seed=seed)
    inj.fail_rate(FaultKind.BUSY, 0.06, table="chaos")
    inj.fail_rate(FaultKind.DROP_BEFORE, 0.02, only="writes", table="chaos")
    inj.fail_rate(FaultKind.DROP_AFTER, 0.02, only="writes", table="chaos")
    return inj


async def seed_docs(table: TableClient, n: int, partitions: int) -> None:
    docs = [
        Doc(f"p{i % partitions:02d}", f"d{i:05d}", status="old" if i % 10 else "keep")
        for i in range(n)
    ]
    result = await load(table, docs, options=OPTIONS)
    assert result.ok


async def test_update_under_faults_and_a_concurrent_writer(tmp_path: Path) -> None:
    n, partitions = 2000, 20
    inj = faults(seed=4)
    # The writer starts first and runs until the update ends, in step with it: the
    # update's first ``held`` transactions are each held until the writer has made two
    # more writes (so at least ``2 * held`` of its writes land while the update is in
    # flight), and the writer makes at most two writes per transaction the update sends
    # (a writer much faster than the update would keep refusing its transactions with
    # 412s, however fast either side runs on a loaded machine).
    held, made, sent, armed = 15, [0], [0], False
    step = asyncio.Condition()  # notified on each write and each transaction sent

    async def gate(info: RequestInfo) -> None:
        if not armed or info.method != "POST" or "$batch" not in info.url:
            return
        async with step:
            sent[0] += 1
            step.notify_all()
            if sent[0] <= held:
                wanted = 2 * sent[0]
                async with asyncio.timeout(60):
                    await step.wait_for(lambda: made[0] >= wanted)

    hooks = {"request": [gate]}
    async with stub(faults=inj) as server, table_on(server, "chaos", event_hooks=hooks) as table:
        with inj.suspended():
            await table.create_table()
            await seed_docs(table, n, partitions)
        rng = random.Random(1)
        touched: dict[str, int] = {}
        stop = False

        async def writer() -> None:  # changes entities under the bulk update
            k = 0
            while True:
                async with step:  # wait for the update to go on
                    await step.wait_for(lambda: stop or made[0] < 2 * sent[0] + 2)
                if stop:
                    return
                k += 1
                i = rng.randrange(n)
                if i % 10 == 0:
                    continue  # not selected by the query
                pk, rk = f"p{i % partitions:02d}", f"d{i:05d}"
                try:
                    await table.update_entity(
                        {"PartitionKey": pk, "RowKey": rk, "writer": k}, mode=UpdateMode.MERGE
                    )
                    touched[rk] = k
                except Exception:  # a fault: what was applied is unknown, read it later
                    touched[rk] = -1
                async with step:
                    made[0] += 1
                    step.notify_all()
                await asyncio.sleep(0.002)

        task = asyncio.create_task(writer())
        async with step:  # the writer is under way before the update starts
            await step.wait_for(lambda: made[0] > 0)
            made[0], sent[0], armed = 0, 0, True
        query = Query(Doc, table).where(Doc.status == "old")
        result = await update_where(
            query, {"status": "new", "stamp": "bulk"}, mode="replace", options=OPTIONS
        )
        async with step:
            stop = True
            step.notify_all()
        await task
        assert result.ok, result.failures[:3]
        with inj.suspended():
            docs = {d.RowKey: d for d in await Query(Doc, table).to_list()}
    selected = [rk for rk in docs if int(rk[1:]) % 10]
    assert result.read == len(selected) == n - n // 10
    assert all(docs[rk].status == "new" and docs[rk].stamp == "bulk" for rk in selected)
    assert all(docs[f"d{i:05d}"].status == "keep" for i in range(0, n, 10))
    # no stale overwrite: every writer change that surely applied is still there
    assert made[0] >= 2 * held
    assert len(touched) > 20
    for rk, k in touched.items():  # the writer's values only grow: a stale replace
        if k > 0:  # would bring back an older one (a -1: that call's outcome is unknown)
            assert docs[rk].writer >= k, (rk, k, docs[rk].writer)
    assert result.written == len(selected)


async def test_dynamic_entities_merge_and_delete_with_resume(tmp_path: Path) -> None:
    async with stub() as server, table_on(server, "dyn") as table:
        await table.create_table()
        await seed_docs(table, 600, 6)
        status = column("status", str)
        query = Query(DynamicEntity, table).where(status == "old").page_size(50)
        ckpt = FileCheckpoint(tmp_path / "u.ckpt")
        half = asyncio.Event()
        slow = BulkOptions(
            linger=0.02, checkpoint_interval=0.05, progress_interval=0.01, account_rate=300
        )
        task = asyncio.create_task(
            update_where(
                query,
                {"stamp": "x"},
                options=slow,
                checkpoint=ckpt,
                progress=lambda p: half.set() if p.written >= 300 else None,
            )
        )
        await asyncio.wait_for(half.wait(), 30)
        await asyncio.sleep(0.1)  # a checkpoint save or two
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        state = json.loads((tmp_path / "u.ckpt").read_text())
        assert state["continuation"] is not None
        assert not state["finished"]
        again = await update_where(query, {"stamp": "x"}, options=OPTIONS, checkpoint=ckpt)
        assert again.ok
        assert 0 < again.read < 540 - 200  # the pages finished before were not read again
        rows = [e async for e in table.list_entities()]
        assert all(e["stamp"] == "x" for e in rows if e["status"] == "old")
        assert all(e["stamp"] == "" for e in rows if e["status"] == "keep")
        assert json.loads((tmp_path / "u.ckpt").read_text())["finished"]

        gone = await delete_where(Query(DynamicEntity, table).where(status == "keep"))
        assert gone.ok
        assert gone.written == 60
        assert len([e async for e in table.list_entities()]) == 540


async def _lingering_update(table: Any) -> asyncio.Task[Any]:
    """``update_where`` of the 30 seeded "old" documents (replace, ``stamp`` set), started
    and left running once it has read 27 of them: it then lingers a second before writing
    its page, so the test can change entities between its read and its writes."""
    read = asyncio.Event()
    waiting = BulkOptions(linger=1.0, progress_interval=0.01)
    task = asyncio.create_task(
        update_where(
            table,
            {"stamp": "bulk"},
            filter="status eq @s",
            parameters={"s": "old"},
            mode="replace",
            options=waiting,
            progress=lambda p: read.set() if p.read >= 27 else None,
        )
    )
    await asyncio.wait_for(read.wait(), 10)
    return task


async def test_an_entity_changed_after_its_read_is_read_again_or_reported() -> None:
    # The update reads a page, then waits (a long linger) before writing it; meanwhile
    # one entity changes but still matches (re-read and changed again, the other change
    # kept) and one changes so that it no longer matches (reported, not written).
    async with stub() as server, table_on(server, "race") as table:
        await table.create_table()
        await seed_docs(table, 30, 1)
        task = await _lingering_update(table)
        still = {"PartitionKey": "p00", "RowKey": "d00001", "writer": 7}
        await table.update_entity(still, mode=UpdateMode.MERGE)
        moved = {"PartitionKey": "p00", "RowKey": "d00002", "status": "done"}
        await table.update_entity(moved, mode=UpdateMode.MERGE)
        result = await task
        rows = {e["RowKey"]: e async for e in table.list_entities()}
    assert result.written == 26
    [failure] = result.failures
    assert (failure.row_key, failure.status) == ("d00002", 412)
    assert "no longer matches" in failure.message
    assert (rows["d00001"]["stamp"], rows["d00001"]["writer"]) == ("bulk", 7)
    assert (rows["d00002"]["stamp"], rows["d00002"]["status"]) == ("", "done")
    assert all(r["stamp"] == "bulk" for k, r in rows.items() if r["status"] == "old")


@pytest.mark.parametrize(
    ("source", "mode", "others"),
    [
        ("class", "replace", {"writer": 7}),
        ("class", "merge", {"writer": 7}),
        ("raw", "replace", {"writer": 7}),
        ("class", "replace", {"writer": 7, "status": "done"}),  # our change undone
    ],
)
async def test_a_lost_answer_then_a_change_by_another_writer(
    source: str, mode: Any, others: dict[str, Any]
) -> None:
    # The update's transaction is applied but its answer lost; before it is settled,
    # another writer changes one of its entities. The read-back finds that entity unlike
    # what was sent, the resend (If-Match the ETag read) is refused with 412 and the
    # entity no longer matches the filter (its status is our "new"): it still is done,
    # as it carries every change of the update. When the other writer undid one of our
    # changes, the entity is "changed meanwhile and no longer selected", as before.
    inj = FaultInjector()
    fired: list[ResponseInfo] = []
    async with stub(faults=inj) as server, table_on(server, "lost") as other:

        async def meanwhile(info: ResponseInfo) -> None:  # the batch's answer was lost
            if info.request.method == "POST" and info.status is None and not fired:
                fired.append(info)
                change = {"PartitionKey": "p00", "RowKey": "d00001", **others}
                await other.update_entity(change, mode=UpdateMode.MERGE)

        async with table_on(server, "lost", event_hooks={"response": [meanwhile]}) as table:
            await table.create_table()
            await seed_docs(table, 20, 1)
            inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["POST"], table="lost")
            changes = {"status": "new", "stamp": "bulk"}
            if source == "class":
                query: Any = Query(Doc, table).where(Doc.status == "old")
                result = await update_where(query, changes, mode=mode, options=OPTIONS)
            else:
                result = await update_where(
                    table, changes, filter="status eq 'old'", mode=mode, options=OPTIONS
                )
            rows = {e["RowKey"]: e async for e in table.list_entities()}
    assert fired
    assert inj.counters[FaultKind.DROP_AFTER] == 1
    changed = rows["d00001"]
    assert changed["writer"] == 7
    selected = [rk for rk in rows if int(rk[1:]) % 10]
    if "status" in others:  # not ours any more: reported, left as the other writer made it
        [failure] = result.failures
        assert (failure.row_key, failure.status, failure.ambiguous) == ("d00001", 412, False)
        assert "no longer matches" in failure.message
        assert (changed["status"], changed["stamp"]) == ("done", "bulk")
        assert result.written == len(selected) - 1
        return
    assert result.ok, result.failures
    assert result.written == result.read == len(selected) == 18
    assert (changed["status"], changed["stamp"]) == ("new", "bulk")
    assert all((rows[rk]["status"], rows[rk]["stamp"]) == ("new", "bulk") for rk in selected)


async def test_a_lost_delete_then_the_entity_brought_back_is_reported() -> None:
    # delete_where's transaction is applied, its answer lost; an entity of it is then
    # brought back by someone else, with other values: the resend is refused (412) and
    # the entity is neither gone nor selected: reported. The others are done.
    inj = FaultInjector()
    fired: list[ResponseInfo] = []
    async with stub(faults=inj) as server, table_on(server, "lostdel") as other:

        async def meanwhile(info: ResponseInfo) -> None:
            if info.request.method == "POST" and info.status is None and not fired:
                fired.append(info)
                back = {"PartitionKey": "p00", "RowKey": "d00001", "status": "back"}
                await other.upsert_entity(back)

        async with table_on(server, "lostdel", event_hooks={"response": [meanwhile]}) as table:
            await table.create_table()
            await seed_docs(table, 20, 1)
            inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["POST"], table="lostdel")
            result = await delete_where(Query(Doc, table).where(Doc.status == "old"))
            rows = {e["RowKey"]: e async for e in table.list_entities()}
    assert fired
    assert sorted(rows) == ["d00000", "d00001", "d00010"]
    assert rows["d00001"]["status"] == "back"
    [failure] = result.failures
    assert (failure.row_key, failure.status) == ("d00001", 412)
    assert result.written == 17


async def test_a_read_again_that_fails_unexpectedly_ends_the_run_with_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An entity changed after its read is read again by a task of its own; when that read
    # fails with an error it does not expect (here a bug stand-in), the update raises it
    # instead of waiting forever for an outcome that never comes.
    async def broken(self: Any, pk: str, rk: str, *, filtered: bool = True) -> list[Any]:
        raise RuntimeError("the read again broke")

    monkeypatch.setattr(bulk_query._ByQuery, "_find", broken)
    async with stub() as server, table_on(server, "broken") as table:
        await table.create_table()
        await seed_docs(table, 30, 1)
        task = await _lingering_update(table)
        await table.update_entity(
            {"PartitionKey": "p00", "RowKey": "d00001", "writer": 7}, mode=UpdateMode.MERGE
        )
        async with asyncio.timeout(20):
            with pytest.raises(RuntimeError, match="the read again broke"):
                await task
