"""Conflicts found together: after one operation fails a transaction on a conflict, the
loader reads the transaction's keys once and reports every other operation that would
fail the same way, instead of learning them one request at a time. Requests are counted
with a client request hook."""

from __future__ import annotations

import asyncio
from typing import Any

from azt.bulk import BulkOptions, load
from tests.bulk.support import expected, rows, stored, stub, table_on

#: a linger long enough that no partial transaction leaves while a list is read, even on a
#: busy machine (the end of the input sends what is left): the request counts are exact
OPTIONS = BulkOptions(linger=2.0)


def counter() -> tuple[list[str], dict[str, Any]]:
    seen: list[str] = []
    return seen, {"event_hooks": {"request": [lambda info: seen.append(info.method)]}}


async def test_inserting_1000_existing_entities_takes_at_most_20_requests() -> None:
    items = list(rows(10, 100))
    async with stub() as server, table_on(server, "again") as setup:
        await setup.create_table()
        first = await load(setup, items, options=OPTIONS)
        assert first.ok
        seen, hooks = counter()
        async with table_on(server, "again", **hooks) as table:
            result = await load(table, items, options=OPTIONS)
        assert len(seen) <= 20, seen  # 10 transactions + 10 key queries
        assert seen.count("POST") == 10
        assert result.written == 0
        assert [f.index for f in result.failures] == list(range(len(items)))
        assert {f.code for f in result.failures} == {"EntityAlreadyExists"}
        assert {f.status for f in result.failures} == {409}
        assert result.reads == 10
        assert await stored(setup) == expected(items)


async def test_a_mix_reports_the_conflicts_and_writes_the_rest() -> None:
    items = list(rows(3, 60))
    present = items[::3]  # every third entity exists already, with other values
    async with stub() as server, table_on(server, "mix") as table:
        await table.create_table()
        old = [{**e, "Tag": "old"} for e in present]
        assert (await load(table, old, options=OPTIONS)).ok
        result = await load(table, items, options=OPTIONS)
        failed = {f.index for f in result.failures}
        assert failed == set(range(0, len(items), 3))
        assert result.written == len(items) - len(failed)
        assert result.requests <= 3 * 2 + 3  # a failed, a resent transaction per partition
        want = expected(items)
        for e in old:  # not overwritten
            want[(e["PartitionKey"], e["RowKey"])] = dict(e)
        assert await stored(table) == want


async def test_updates_and_deletes_of_missing_entities_are_found_together() -> None:
    items = list(rows(2, 50))
    async with stub() as server, table_on(server, "gone") as table:
        await table.create_table()
        assert (await load(table, items[:10], options=OPTIONS)).ok  # 5 per partition
        seen, hooks = counter()
        async with table_on(server, "gone", **hooks) as counted:
            merged = await load(counted, items, kind="merge", options=OPTIONS)
        assert {f.index for f in merged.failures} == set(range(10, len(items)))
        assert {f.code for f in merged.failures} == {"ResourceNotFound"}
        assert merged.written == 10
        assert len(seen) <= 2 * 3  # per partition: failed, keys query, resent
        deleted = await load(table, items, kind="delete", options=OPTIONS)
        assert {f.index for f in deleted.failures} == set(range(10, len(items)))
        assert deleted.written == 10
        assert await stored(table) == {}


async def test_a_partial_transaction_goes_after_linger_while_the_input_waits() -> None:
    # An async input that pauses (as a query read page by page does) must not hold back
    # what was read: a new partition's linger starts when its first operation arrives.
    sent = asyncio.Event()
    async with stub() as server, table_on(server, "lingering") as table:
        await table.create_table()

        async def items() -> Any:
            yield {"PartitionKey": "p", "RowKey": "1"}
            await asyncio.wait_for(sent.wait(), 5)  # until the first one is written

        result = await load(table, items(), options=OPTIONS, on_result=lambda i, o: sent.set())
        assert result.written == 1
