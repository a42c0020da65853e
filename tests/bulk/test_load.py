"""What a bulk load promises besides speed: every operation ends applied or reported with
its input index and the service's error (its transaction's other operations are resent,
not lost); the input is read at most a window ahead; several tables; async inputs;
entity objects; the ambiguous-outcome policies; bad arguments refused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import azt
from azt import AmbiguousOutcomePolicy, BatchOperation, UpdateMode
from azt.bulk import BulkError, BulkOptions, BulkProgress, TableWrite, load
from azt_server_stub.realism.faults import FaultInjector, FaultKind
from tests.bulk.support import expected, rows, stored, stub, table_on


async def test_failures_name_their_input_index_and_the_service_error() -> None:
    async with stub() as server, table_on(server, "fails") as table:
        await table.create_table()
        await table.insert_entity({"PartitionKey": "p000", "RowKey": "r00003", "Old": 1})
        items: list[Any] = list(rows(3, 10))
        bad_at = len(items)
        items.append({"PartitionKey": "p/1", "RowKey": "x"})  # refused before sending
        items.append("not an entity")
        outcomes: dict[int, Any] = {}
        result = await load(table, items, on_result=lambda i, r: outcomes.setdefault(i, r))
        got = await stored(table)
    assert not result.ok
    by_index = {f.index: f for f in result.failures}
    assert sorted(by_index) == [9, bad_at, bad_at + 1]  # p000/r00003 is input 9
    conflict = by_index[9]
    assert (conflict.status, conflict.code) == (409, "EntityAlreadyExists")
    assert (conflict.partition_key, conflict.row_key, conflict.kind) == ("p000", "r00003", "create")
    assert by_index[bad_at].status is None
    assert "PartitionKey" in by_index[bad_at].message
    # the conflict's transaction mates were resent without it: all applied
    want = expected(items[:bad_at])
    want[("p000", "r00003")] = {"PartitionKey": "p000", "RowKey": "r00003", "Old": 1}
    assert got == want
    assert result.written == bad_at - 1
    assert len(outcomes) == len(items)  # one outcome per input position
    with pytest.raises(BulkError, match="3 of 32 operations were not applied") as info:
        result.raise_for_failures()
    assert info.value.result is result


async def test_the_input_is_read_at_most_a_window_ahead() -> None:
    window = 300
    produced = 0
    finished = 0
    worst = 0

    def endless() -> Iterator[dict[str, Any]]:  # a million entities, made lazily
        nonlocal produced, worst
        for i in range(1_000_000):
            produced += 1
            worst = max(worst, produced - finished)
            yield {"PartitionKey": f"p{i % 37:02d}", "RowKey": f"{i:07d}", "N": i}

    enough = asyncio.Event()

    def count(_: int, __: object) -> None:
        nonlocal finished
        finished += 1
        if finished >= 3000:
            enough.set()

    async with stub() as server, table_on(server, "window") as table:
        await table.create_table()
        task = asyncio.create_task(
            load(table, endless(), options=BulkOptions(window=window), on_result=count)
        )
        await asyncio.wait_for(enough.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert finished >= 3000
    assert produced <= finished + window + 1
    assert worst <= window + 1  # read but not finished: never more than the window


async def test_items_go_to_several_tables_and_async_inputs_work() -> None:
    async def source() -> AsyncIterator[Any]:
        for e in rows(4, 30):
            yield TableWrite("alpha" if e["P"] % 2 else "beta", e)
            await asyncio.sleep(0)

    async with (
        stub() as server,
        azt.TableServiceClient.from_connection_string(
            server.connection_string, retry=azt.testing.stub_retry_policy()
        ) as service,
    ):
        alpha = await service.create_table("alpha")
        beta = await service.create_table("beta")
        result = await load(service, source(), kind="upsert-replace")
        items = list(rows(4, 30))
        assert await stored(alpha) == expected([e for e in items if e["P"] % 2])
        assert await stored(beta) == expected([e for e in items if not e["P"] % 2])
        missing = await load(service, [{"PartitionKey": "p", "RowKey": "r"}])
    assert result.ok
    assert result.written == 120
    assert [f.index for f in missing.failures] == [0]
    assert "no table" in missing.failures[0].message


async def test_operations_in_one_partition_apply_in_input_order() -> None:
    ops = [
        BatchOperation("create", {"PartitionKey": "p", "RowKey": "a", "v": 1}),
        BatchOperation(
            "update", {"PartitionKey": "p", "RowKey": "a", "v": 2}, mode=UpdateMode.MERGE
        ),
        BatchOperation("delete", {"PartitionKey": "p", "RowKey": "a"}),
        BatchOperation("create", {"PartitionKey": "p", "RowKey": "a", "v": 4}),
    ]
    async with stub() as server, table_on(server, "order") as table:
        await table.create_table()
        result = await load(table, ops)
        assert await stored(table) == {("p", "a"): {"PartitionKey": "p", "RowKey": "a", "v": 4}}
    assert result.ok
    assert result.requests == 4  # a repeated RowKey starts a new transaction


async def test_entity_objects_get_their_etag() -> None:
    class Movie(azt.Entity, table="movies"):
        title: str = ""

    movies = [Movie(PartitionKey="m", RowKey=str(i), title=f"t{i}") for i in range(5)]
    async with stub() as server, table_on(server, "movies") as table:
        await table.create_table()
        result = await load(table, movies)
    assert result.ok
    assert all(m.ETag and m.Timestamp for m in movies)


@pytest.mark.parametrize(
    ("policy", "applied"),
    [(AmbiguousOutcomePolicy.RAISE, False), (AmbiguousOutcomePolicy.ASSUME_SUCCEEDED, True)],
)
async def test_lost_answers_follow_the_ambiguous_outcome_policy(
    policy: AmbiguousOutcomePolicy, applied: bool
) -> None:
    inj = FaultInjector(seed=1)
    async with stub(faults=inj) as server, table_on(server, "amb") as table:
        await table.create_table()
        inj.fail_next(FaultKind.DROP_AFTER, 1, methods=["POST"], table="amb")
        items = list(rows(1, 5))
        result = await load(table, items, options=BulkOptions(ambiguous_outcome=policy))
        assert await stored(table) == expected(items)  # it was applied, once
    if applied:
        assert result.ok
        assert result.resolved == 5
    else:
        assert [f.index for f in result.failures] == [0, 1, 2, 3, 4]
        assert "may have been applied" in str(result.failures[0].error) or isinstance(
            result.failures[0].error, azt.ServiceConnectionError
        )


async def test_progress_reports_counts_and_the_final_state() -> None:
    seen: list[BulkProgress] = []
    async with stub() as server, table_on(server, "prog") as table:
        await table.create_table()
        await load(
            table, rows(5, 40), options=BulkOptions(progress_interval=0.01), progress=seen.append
        )
    last = seen[-1]
    assert last.done
    assert (last.read, last.written, last.failed, last.pending) == (200, 200, 0, 0)
    assert last.requests >= 5
    assert last.concurrency >= 1
    assert not any(p.done for p in seen[:-1])


async def test_bad_arguments_are_refused() -> None:
    with pytest.raises(azt.ValidationError, match="window"):
        BulkOptions(window=0)
    with pytest.raises(azt.ValidationError, match="decrease"):
        BulkOptions(decrease=1.5)
    async with stub() as server, table_on(server, "args") as table:
        with pytest.raises(azt.ValidationError, match="kind"):
            await load(table, [], kind="upsert")  # type: ignore[arg-type]
        with pytest.raises(azt.ValidationError, match="TableClient"):
            await load(object(), [])  # type: ignore[arg-type]
        with pytest.raises(azt.ValidationError, match="CheckpointStore"):
            await load(table, [], checkpoint=object())  # type: ignore[arg-type]
