"""``TableClient.batch_writer()``: groups by PartitionKey, flushes at 100 operations, at the
exact 4 MiB body and at the buffer bound, sends the rest on exit, and reports every
failed operation (index, keys, service error) without dropping any."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt import BatchWriteError, TableClient, TableServiceClient, TransactionError, UpdateMode
from azt._core.wire.batch import MAX_BATCH_BYTES
from azt_server_stub import StubServer


@pytest.fixture
async def table() -> AsyncIterator[TableClient]:
    async with (
        StubServer() as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        yield await service.create_table("writer")


class Spy:
    """Records each transaction a writer submits: (PartitionKey, operation count, size)."""

    def __init__(self, table: TableClient, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[tuple[str, int, int]] = []
        real = TableClient.submit_transaction

        async def submit(client: TableClient, batch: Any) -> Any:
            self.sent.append((batch.operations[0].partition_key, len(batch), batch.size))
            return await real(client, batch)

        monkeypatch.setattr(TableClient, "submit_transaction", submit)


async def _rows(table: TableClient) -> dict[tuple[str, str], azt.TableEntity]:
    return {(e["PartitionKey"], e["RowKey"]): e async for e in table.list_entities()}


async def test_groups_by_partition_and_flushes_at_100(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(table, monkeypatch)
    async with table.batch_writer() as writer:
        for i in range(250):
            await writer.upsert({"PartitionKey": f"p{i % 2}", "RowKey": f"{i:04d}", "n": i})
        assert len(spy.sent) == 2  # p0 and p1 reached 100 each and were sent at once
        assert len(writer.unsent) == 50
    assert sorted(count for _, count, _ in spy.sent) == [25, 25, 100, 100]
    assert writer.transactions == 4
    results = writer.results
    assert [r.index for r in results] == list(range(250))
    assert all(r.ok and r.result is not None and r.result.etag for r in results)
    rows = await _rows(table)
    assert len(rows) == 250
    assert rows[("p1", "0249")]["n"] == 249


async def test_flushes_at_the_exact_4_mib(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(table, monkeypatch)
    text = "x" * 30_000
    async with table.batch_writer() as writer:
        for i in range(45):
            await writer.insert(
                {"PartitionKey": "big", "RowKey": f"{i:03d}", **{f"S{j}": text for j in range(7)}}
            )
    sizes = [size for _, _, size in spy.sent]
    counts = [count for _, count, _ in spy.sent]
    assert counts == [19, 19, 7]  # ~210 KB each: 19 fit a 4 MiB body, 20 do not
    assert all(size <= MAX_BATCH_BYTES for size in sizes)
    assert sizes[0] + 210_000 > MAX_BATCH_BYTES  # the next one would not have fitted
    assert len(await _rows(table)) == 45


async def test_buffer_bound_sends_the_largest_group(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(table, monkeypatch)
    async with table.batch_writer(max_buffer_bytes=50_000) as writer:
        for i in range(30):
            pk = "big" if i % 3 == 0 else f"small{i % 3}"
            pad = "y" * (4_000 if pk == "big" else 100)
            await writer.upsert({"PartitionKey": pk, "RowKey": f"{i:03d}", "Pad": pad})
        assert spy.sent  # the bound was passed before the end
        assert spy.sent[0][0] == "big"
    assert len(await _rows(table)) == 30
    assert all(r.ok for r in writer.results)


async def test_failures_are_reported_with_index_keys_and_error(table: TableClient) -> None:
    await table.insert_entity({"PartitionKey": "a", "RowKey": "2", "v": "old"})

    async def write() -> None:
        async with table.batch_writer() as writer:
            await writer.insert({"PartitionKey": "a", "RowKey": "1"})
            await writer.insert({"PartitionKey": "a", "RowKey": "2"})  # exists: 409
            await writer.insert({"PartitionKey": "b", "RowKey": "3"})
            await writer.update({"PartitionKey": "c", "RowKey": "4", "v": 1}, etag="*")  # 404

    with pytest.raises(BatchWriteError) as info:
        await write()
    exc = info.value
    assert [(f.index, f.partition_key, f.row_key) for f in exc.failures] == [
        (0, "a", "1"),
        (1, "a", "2"),
        (3, "c", "4"),
    ]
    culprits = [f for f in exc.failures if f.caused_failure]
    assert [f.index for f in culprits] == [1, 3]
    first = culprits[0].error
    assert isinstance(first, TransactionError)
    assert isinstance(first.error, azt.EntityAlreadyExistsError)
    assert isinstance(culprits[1].error, TransactionError)
    assert isinstance(culprits[1].error.error, azt.EntityNotFoundError)
    message = str(exc)
    assert "3 of 4 operations were not applied" in message
    assert "operation 1 (create PartitionKey='a', RowKey='2'): 409 EntityAlreadyExists" in message
    assert "operation 0 (create PartitionKey='a', RowKey='1'): not applied" in message
    assert [r.ok for r in exc.results] == [False, False, True, False]
    rows = await _rows(table)
    assert set(rows) == {("a", "2"), ("b", "3")}  # the failed transactions applied nothing
    assert rows[("a", "2")]["v"] == "old"


async def test_same_entity_twice_keeps_order(table: TableClient) -> None:
    async with table.batch_writer() as writer:
        await writer.upsert({"PartitionKey": "p", "RowKey": "1", "v": 1})
        await writer.upsert({"PartitionKey": "p", "RowKey": "1", "v": 2}, UpdateMode.REPLACE)
        await writer.delete("p", "1")
        await writer.insert({"PartitionKey": "p", "RowKey": "1", "v": 4})
    assert writer.transactions == 4
    assert (await table.get_entity("p", "1"))["v"] == 4


async def test_invalid_operation_is_refused_at_the_call_and_nothing_is_lost(
    table: TableClient,
) -> None:
    async with table.batch_writer() as writer:
        await writer.insert({"PartitionKey": "p", "RowKey": "ok"})
        with pytest.raises(azt.ValidationError, match="RowKey"):
            await writer.insert({"PartitionKey": "p", "RowKey": "a/b"})
        with pytest.raises(azt.ValidationError, match="S"):
            await writer.insert({"PartitionKey": "p", "RowKey": "big", "S": "s" * 40_000})
        assert len(writer.unsent) == 1
    assert [r.row_key for r in writer.results] == ["ok"]
    assert set(await _rows(table)) == {("p", "ok")}


async def test_an_error_in_the_body_sends_nothing_buffered_and_says_so(
    table: TableClient,
) -> None:
    writer = table.batch_writer()

    async def write() -> None:
        async with writer:
            await writer.insert({"PartitionKey": "p", "RowKey": "1"})
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError) as info:
        await write()
    assert any("1 buffered operations were not sent" in n for n in info.value.__notes__)
    assert [(o.partition_key, o.row_key) for o in writer.unsent] == [("p", "1")]
    assert await _rows(table) == {}
    with pytest.raises(azt.ValidationError, match="closed"):
        await writer.insert({"PartitionKey": "p", "RowKey": "2"})


async def test_bad_buffer_bound(table: TableClient) -> None:
    with pytest.raises(azt.ValidationError, match="max_buffer_bytes"):
        table.batch_writer(max_buffer_bytes=0)
