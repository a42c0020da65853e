"""Index rows on the batch paths: ``BatchWriter`` and ``TableBatch.add()`` (prepared
operations) carry an indexed entity's index rows in its own transaction, never split
from it; the bulk loader refuses an indexed upsert (its stored indexed values would be unknown)
and writes the rest (its indexed loads: tests/bulk/test_indexed.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import pytest

import azt
from azt import BatchOperation, TableClient, TableServiceClient, UpdateMode
from azt.bulk import load
from azt.indexes import index_row_keys, is_index_row_key
from azt.query import Query
from azt_server_stub import StubServer

from .models import Item, Plain


@pytest.fixture
async def table() -> AsyncIterator[TableClient]:
    async with (
        StubServer() as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        yield await service.create_table("ixbatch")


async def rows(table: TableClient) -> dict[str, dict[str, Any]]:
    return {e["RowKey"]: dict(e) async for e in table.list_entities()}


async def implied(table: TableClient) -> set[str]:
    """The index RowKeys the main rows imply."""
    out: set[str] = set()
    async for e in table.list_entities():
        if not is_index_row_key(e["RowKey"]):
            obj = Item.from_entity(e)
            out |= {rk for rk in index_row_keys(obj).values() if rk is not None}
    return out


async def stored_index_keys(table: TableClient) -> set[str]:
    return {rk for rk in await rows(table) if is_index_row_key(rk)}


async def test_batch_writer_writes_updates_and_deletes_index_rows(table: TableClient) -> None:
    items = [Item("p", f"r{i}", color="red" if i % 2 else "blue", size=i) for i in range(5)]
    async with table.batch_writer() as writer:
        for item in items:
            await writer.insert(item)
    assert len(writer.results) == 5
    assert all(o.ok for o in writer.results)
    assert all(item.ETag for item in items)
    keys = await stored_index_keys(table)
    assert len(keys) == 10  # by_color and by_size for each; by_tag is sparse (None)
    assert keys == await implied(table)

    items[0].color = "green"
    items[1].tag = "t"
    async with table.batch_writer() as writer:
        await writer.update(items[0])
        with pytest.raises(azt.ValidationError, match="an upsert is unconditional"):
            await writer.upsert(items[1])  # the stored indexed values would be unknown
        assert len(writer.unsent) == 1  # the refused upsert buffered nothing
        await writer.update(items[1], UpdateMode.REPLACE)
        await writer.delete(items[2])
    assert all(o.ok for o in writer.results)
    keys = await stored_index_keys(table)
    assert keys == await implied(table)
    assert len(keys) == 4 * 2 + 1
    assert not any(rk.endswith("r2") for rk in keys)  # no row of the deleted entity


async def test_batch_writer_never_splits_an_entity_from_its_index_rows(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[list[str]] = []
    real = TableClient.submit_transaction

    async def spy(client: TableClient, batch: Any) -> Any:
        sent.append([op.row_key for op in batch.operations])
        return await real(client, batch)

    monkeypatch.setattr(TableClient, "submit_transaction", spy)
    async with table.batch_writer() as writer:
        for i in range(40):  # 3 operations each (main, by_color, by_size): 33 fit 99
            await writer.insert(Item("p", f"r{i:02}", color="c", size=i))
    assert all(o.ok for o in writer.results)
    assert [len(s) for s in sent] == [99, 21]  # the 34th entity's 3 rows would make 102
    for ops in sent:
        mains = {rk for rk in ops if not is_index_row_key(rk)}
        for rk in ops:
            if is_index_row_key(rk):
                assert any(rk.endswith(m) for m in mains), (rk, mains)
    assert await stored_index_keys(table) == await implied(table)


async def test_batch_writer_outcome_names_a_failing_index_companion_transaction(
    table: TableClient,
) -> None:
    stale = Item("p", "r1", color="red")
    await table.insert_entity(stale)
    fresh = await table.get_entity("p", "r1", entity_class=Item)
    fresh.color = "blue"
    await table.update_entity(fresh)
    stale.color = "green"  # its ETag is stale: the main row fails, so do its index rows
    writer = table.batch_writer()
    await writer.update(stale)
    with pytest.raises(azt.BatchWriteError) as info:
        async with writer:
            pass
    assert [f.index for f in info.value.failures] == [0]
    assert info.value.failures[0].caused_failure
    assert await stored_index_keys(table) == await implied(table)


async def test_table_batch_add_brings_index_rows(table: TableClient) -> None:
    item = Item("p", "r1", color="red", size=3, tag="t")
    batch = table.batch()
    batch.add(BatchOperation("create", cast(Any, item)))  # the object itself as ``entity``
    assert len(batch) == 4
    await table.submit_transaction(batch)
    assert item.ETag is not None
    assert await stored_index_keys(table) == await implied(table)

    item.color = "blue"
    batch = table.batch()
    batch.add(BatchOperation("update", cast(Any, item), mode=UpdateMode.MERGE, etag=item.ETag))
    await table.submit_transaction(batch)
    assert await stored_index_keys(table) == await implied(table)

    batch = table.batch()
    keys = {"PartitionKey": "p", "RowKey": "r1"}
    batch.add(BatchOperation("delete", keys, etag=item.ETag, source=item))  # built from it
    assert len(batch) == 4
    await table.submit_transaction(batch)
    assert await rows(table) == {}


async def test_table_batch_add_group_that_does_not_fit_leaves_batch_unchanged(
    table: TableClient,
) -> None:
    batch = table.batch()
    for i in range(98):
        batch.add(BatchOperation("create", {"PartitionKey": "p", "RowKey": f"m{i}"}))
    with pytest.raises(azt.BatchValidationError, match="index rows"):
        batch.add(BatchOperation("create", cast(Any, Item("p", "r1", color="red"))))
    assert len(batch) == 98
    await table.submit_transaction(batch)


async def test_bulk_load_refuses_an_indexed_upsert_and_writes_the_rest(table: TableClient) -> None:
    items = [Item("p", "r1", color="red"), {"PartitionKey": "p", "RowKey": "plain"}]
    result = await load(table, items, kind="upsert-replace")
    assert result.written == 1
    assert [f.index for f in result.failures] == [0]
    assert "an upsert is unconditional" in result.failures[0].message
    assert set(await rows(table)) == {"plain"}


async def test_a_class_without_indexes_reads_main_rows_only(table: TableClient) -> None:
    """Index rows are dropped by their reserved RowKey range, while main rows of a class
    without indexes whose RowKeys sort high (U+FFFD not followed by the reserved tail, a
    character beyond the BMP) are kept: the page decoder's fast path must not lose them."""
    await table.insert_entity(Item("p", "r1", color="red", size=1, tag="t"))
    odd = ["\ufffdzz", "\U0001f600x", "zz"]
    for rk in odd:
        await table.insert_entity({"PartitionKey": "p", "RowKey": rk, "color": "c"})
    assert len(await stored_index_keys(table)) == 3
    got = [p.RowKey for p in await Query(Plain, table).where(Plain.PartitionKey == "p").to_list()]
    assert sorted(got) == sorted(["r1", *odd])
    only_low = (
        await Query(Plain, table).where(Plain.PartitionKey == "p", Plain.color == "c").to_list()
    )
    assert sorted(p.RowKey for p in only_low) == sorted(odd)
