"""A bulk load's limits, checked from both sides: a fixed concurrency is the most
transactions in flight at once, and is reached."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import azt
from azt.bulk import BulkOptions, load
from azt_server_stub.realism.faults import FaultInjector, FaultKind
from tests.bulk.support import expected, rows, stored, stub, table_on


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_a_fixed_concurrency_bounds_the_transactions_in_flight(
    monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    original = azt.TableClient.submit_transaction
    in_flight = 0
    most = 0

    async def counting(self: azt.TableClient, batch: Any) -> Any:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            await asyncio.sleep(0.005)
            return await original(self, batch)
        finally:
            in_flight -= 1

    monkeypatch.setattr(azt.TableClient, "submit_transaction", counting)
    items = list(rows(12, 3))
    async with stub() as server, table_on(server, f"conc{concurrency}") as table:
        await table.create_table()
        options = BulkOptions(concurrency=concurrency, partition_rate=1000, linger=0.001)
        result = await load(table, items, options=options)
        got = await stored(table)
    assert result.ok
    assert got == expected(items)
    assert most == concurrency


@pytest.mark.parametrize(("faults", "ok"), [(1, True), (2, False)])
async def test_a_transaction_gets_max_attempts_and_no_more(faults: int, ok: bool) -> None:
    inj = FaultInjector(seed=1)
    items = list(rows(1, 3))
    async with stub(faults=inj) as server, table_on(server, "attempts") as table:
        await table.create_table()
        inj.fail_next(FaultKind.BUSY, faults, methods=["POST"], table="attempts")
        result = await load(table, items, options=BulkOptions(max_attempts=2))
        got = await stored(table)
    assert result.ok is ok
    if ok:
        assert got == expected(items)
    else:
        assert got == {}
        assert sorted(f.index for f in result.failures) == [0, 1, 2]
        assert {(f.status, f.code) for f in result.failures} == {(503, "ServerBusy")}


async def test_a_missing_table_fails_the_whole_transaction_at_once() -> None:
    items = list(rows(1, 3))
    async with stub() as server, table_on(server, "missing") as table:
        result = await load(table, items)
    assert not result.ok
    assert result.requests == 1
    assert sorted(f.index for f in result.failures) == [0, 1, 2]
    assert {(f.status, f.code) for f in result.failures} == {(404, "TableNotFound")}
