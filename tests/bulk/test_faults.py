"""Exactly once under faults: with 5 % 503 ServerBusy, 2 % requests dropped before they
are applied and 2 % dropped after (the answer lost), a bulk load ends with the table
exactly equal to its input, compared value by value: nothing missing, nothing applied
twice (an insert applied and then resent would fail 409; it is resolved by reading back)."""

from __future__ import annotations

from typing import Any

import azt
from azt import BatchOperation
from azt.bulk import BulkOptions, load
from tests.bulk.faults import chaos
from tests.bulk.support import expected, rows, stored, stub, table_on

OPTIONS = BulkOptions(
    linger=2.0
)  # each partition's entities in one transaction (flushed at the end)


async def test_inserts_under_busy_and_dropped_requests_and_answers() -> None:
    inj = chaos(seed=7)
    items = list(rows(200, 15))  # 3,000 entities in 200 partitions: 200+ transactions
    async with stub(faults=inj) as server, table_on(server, "chaos") as table:
        with inj.suspended():
            await table.create_table()
        result = await load(table, items, kind="insert", options=OPTIONS)
        with inj.suspended():
            assert await stored(table) == expected(items)
    assert result.ok, result.failures[:3]
    assert result.written == len(items)
    busy, before, after = inj.rules
    fired = [r.describe() for r in inj.rules]
    assert busy.injected >= 3, fired
    assert before.injected >= 1, fired
    assert after.injected >= 1, fired
    # each transaction whose answer was lost after applying was resolved by reading its
    # 15 entities back (resending it would have failed 409 EntityAlreadyExists)
    assert result.resolved >= 15 * after.injected
    assert result.retries >= before.injected  # not applied: resent
    assert result.throttled >= 1


async def test_mixed_operations_under_faults_end_equal_to_the_input() -> None:
    inj = chaos(seed=11)
    base = list(rows(120, 20))
    async with stub(faults=inj) as server, table_on(server, "chaos") as table:
        with inj.suspended():
            await table.create_table()
            first = await load(table, base, kind="insert")
            assert first.ok
        # merge a new property into even rows, replace odd rows, delete every fifth
        ops: list[Any] = []
        want = expected(base)
        for e in base:
            keys = (e["PartitionKey"], e["RowKey"])
            if e["R"] % 5 == 0:
                ops.append(BatchOperation("delete", {"PartitionKey": keys[0], "RowKey": keys[1]}))
                del want[keys]
            elif e["R"] % 2 == 0:
                patch = {"PartitionKey": keys[0], "RowKey": keys[1], "Seen": True}
                ops.append(BatchOperation("update", patch, mode=azt.UpdateMode.MERGE))
                want[keys] = {**want[keys], "Seen": True}
            else:
                new = {"PartitionKey": keys[0], "RowKey": keys[1], "Only": e["R"] * 2}
                ops.append(BatchOperation("upsert", new, mode=azt.UpdateMode.REPLACE))
                want[keys] = new
        result = await load(table, ops, options=OPTIONS)
        with inj.suspended():
            assert await stored(table) == want
    assert result.ok, result.failures[:3]
    assert result.written == len(ops)
    assert sum(r.injected for r in inj.rules) >= 5
