"""A bulk load's limits, checked from both sides: a fixed concurrency is the most
transactions in flight at once, and is reached."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import azt
from azt._core.bulk.control import LatencyTracker
from azt._core.bulk.loader import _Loader
from azt._core.bulk.queues import Partition, Send, TableRef
from azt._errors import error_from_response
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


async def test_failures_are_reported_in_input_order() -> None:
    # two partitions interleaved in the input: their transactions fail one after the other
    items = [{"PartitionKey": f"p{i % 2}", "RowKey": f"r{i}"} for i in range(6)]
    async with stub() as server, table_on(server, "missing") as table:
        result = await load(table, items)
    assert [f.index for f in result.failures] == [0, 1, 2, 3, 4, 5]


def test_the_controllers_are_set_as_documented() -> None:
    # docs/bulk.md: the concurrency grows by one per round, one cut per episode of a
    # second; a partition's pace probes above its last cut by 3 % of its rate, never
    # below 1/s
    table = azt.TableClient(
        "https://acct.table.core.windows.net/", "loads", azt.SharedKeyCredential("acct", "a2V5")
    )
    options = BulkOptions(partition_rate=1000)
    loader = _Loader(
        table,
        table=None,
        kind="insert",
        options=options,
        checkpoint=None,
        progress=None,
        on_result=None,
        clock=lambda: 0.0,
    )
    conc = loader._pacing.concurrency
    assert (conc.minimum, conc.increase, conc.hold) == (1, 1.0, 1.0)
    assert loader._pacing.account.meter.span == 1.0
    pace = loader._pacing.partition(0.0).rate
    assert (pace.value, pace.minimum, pace.maximum, pace.increase) == (1000, 1.0, 1000, 30.0)
    assert pace.decrease == options.decrease


def test_a_cut_pace_probes_by_3_percent_of_itself() -> None:
    # docs/bulk.md: after a cut, a pace closes the gap to the rate it was cut from, then
    # probes above it by 3 % of its new value a second
    credential = azt.SharedKeyCredential("acct", "a2V5")
    table = azt.TableClient("https://acct.table.core.windows.net/", "loads", credential)
    now = [100.0]
    loader = _Loader(
        table,
        table=None,
        kind="insert",
        options=BulkOptions(),
        checkpoint=None,
        progress=None,
        on_result=None,
        clock=lambda: now[0],
    )
    part = Partition(
        ("loads", "p"), TableRef(table, table), loader._pacing.partition(now[0]), now[0]
    )
    busy = "Operations per second is over the account limit."
    for message, scope in ((busy, loader._pacing.account), ("The server is busy.", part.pace)):
        scope.admitted(100, now[0], bound=False)  # measured: a success in the last second
        pace = scope.rate
        before = pace.value
        send = Send([])
        send.attempts = 1
        loader._pushed_back(part, send, error_from_response(503, "ServerBusy", message))
        assert pace.value < before
        assert pace.increase == pytest.approx(pace.value * 0.03)
        now[0] += 10.0  # past the episode's hold


@pytest.mark.parametrize(("per_partition", "samples"), [(49, 0), (50, 1)])
async def test_only_transactions_of_50_operations_or_more_measure_latency(
    monkeypatch: pytest.MonkeyPatch, per_partition: int, samples: int
) -> None:
    # a small transaction's latency says little about the service's load
    seen: list[float] = []
    original = LatencyTracker.add

    def counting(self: LatencyTracker, seconds: float) -> None:
        seen.append(seconds)
        original(self, seconds)

    monkeypatch.setattr(LatencyTracker, "add", counting)
    items = list(rows(1, per_partition))
    async with stub() as server, table_on(server, "latency") as table:
        await table.create_table()
        result = await load(table, items)
    assert result.ok
    assert len(seen) == samples


async def test_a_failed_read_back_is_tried_again_after_a_lost_answer() -> None:
    inj = FaultInjector(seed=1)
    items = list(rows(1, 4))
    async with stub(faults=inj) as server, table_on(server, "readback") as table:
        await table.create_table()
        # the transaction is applied but its answer lost; the read-back that settles it
        # (point reads) is refused past the client's four attempts each (503, retryable):
        # the load reads it again later, rather than giving the transaction up
        inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["POST"], table="readback")
        inj.fail_next(FaultKind.BUSY, 16, methods=["GET"], table="readback")  # 4 reads x 4
        result = await load(table, items)
        got = await stored(table)
    assert result.ok
    assert result.resolved == 4
    assert got == expected(items)


async def test_a_refusal_after_a_lost_answer_is_marked_ambiguous() -> None:
    # Two conditional replaces in one transaction: it is applied, its answer lost; before
    # the read-back, someone else changes r1. The read-back finds r0 as sent (done) and r1
    # not; its resend is refused (412), which may be the consequence of our own write:
    # the failure says so. A 412 on a first attempt is not marked.
    inj = FaultInjector()
    fired: list[azt.ResponseInfo] = []
    async with stub(faults=inj) as server, table_on(server, "amb2") as other:

        async def meanwhile(info: azt.ResponseInfo) -> None:
            if info.request.method == "POST" and info.status is None and not fired:
                fired.append(info)
                await other.update_entity(
                    {"PartitionKey": "p", "RowKey": "r1", "x": 9}, mode=azt.UpdateMode.MERGE
                )

        async with table_on(server, "amb2", event_hooks={"response": [meanwhile]}) as table:
            await table.create_table()
            etags = [
                (await table.create_entity({"PartitionKey": "p", "RowKey": f"r{i}", "n": i})).etag
                for i in range(3)
            ]
            await other.update_entity(
                {"PartitionKey": "p", "RowKey": "r2", "x": 1}, mode=azt.UpdateMode.MERGE
            )
            ops = [
                azt.BatchOperation(
                    "update",
                    {"PartitionKey": "p", "RowKey": f"r{i}", "n": 10 + i},
                    mode=azt.UpdateMode.REPLACE,
                    etag=etags[i],
                )
                for i in range(2)
            ]
            inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["POST"], table="amb2")
            result = await load(table, ops)
            first = await load(
                table,
                [
                    azt.BatchOperation(
                        "update",
                        {"PartitionKey": "p", "RowKey": "r2", "n": 12},
                        mode=azt.UpdateMode.REPLACE,
                        etag=etags[2],
                    )
                ],
            )
    assert fired
    assert (result.written, result.resolved) == (1, 1)
    [failure] = result.failures
    assert (failure.row_key, failure.status, failure.ambiguous) == ("r1", 412, True)
    [plain] = first.failures
    assert (plain.row_key, plain.status, plain.ambiguous) == ("r2", 412, False)
