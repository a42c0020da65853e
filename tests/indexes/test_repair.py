"""Adopting and repairing indexes (``verify_index``, ``build_index``, ``repair_index``):
missing rows written for data that predates the index, orphans (and a removed index's
rows) deleted by repair only, stale copies refreshed, resuming after an interruption,
and a main row changed during the run left alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt import TableClient, TableServiceClient
from azt.indexes import (
    RESERVED,
    IndexReport,
    build_index,
    index_row_keys,
    is_index_row_key,
    repair_index,
    verify_index,
)
from azt.query import PlanKind, Query
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
        yield await service.create_table("ixrepair")


async def seed_without_index(table: TableClient, n: int = 6) -> None:
    """Main rows written before the class declared indexes: plain mappings, no index row."""
    for i in range(n):
        await table.insert_entity(
            {
                "PartitionKey": f"p{i % 3}",
                "RowKey": f"r{i}",
                "color": "red" if i % 2 else "blue",
                "size": i,
                "note": "n",
                "tag": None if i % 3 else "t",
            }
        )


async def index_keys(table: TableClient) -> set[tuple[str, str]]:
    return {
        (e["PartitionKey"], e["RowKey"])
        async for e in table.list_entities()
        if is_index_row_key(e["RowKey"])
    }


async def implied(table: TableClient) -> set[tuple[str, str]]:
    out = set()
    async for e in table.list_entities():
        if not is_index_row_key(e["RowKey"]):
            for rk in index_row_keys(Item.from_entity(e)).values():
                if rk is not None:
                    out.add((e["PartitionKey"], rk))
    return out


async def test_build_adopts_existing_data(table: TableClient) -> None:
    await seed_without_index(table)
    before = await verify_index(table, Item)
    assert before.entities == 6
    assert before.partitions == 3
    assert before.missing == len(await implied(table)) == 6 * 2 + 2  # two tagged
    assert not before.consistent
    assert await index_keys(table) == set()  # verify wrote nothing

    done: list[str] = []
    built = await build_index(table, Item, progress=lambda pk, r: done.append(pk))
    assert built.written == before.missing
    assert done == ["p0", "p1", "p2"]
    assert await index_keys(table) == await implied(table)
    assert (await verify_index(table, Item)).consistent

    q = Query(Item, table).where(Item.PartitionKey == "p1", Item.color == "red")
    assert q.explain().kind is PlanKind.INDEX
    assert sorted(i.RowKey for i in await q.to_list()) == ["r1"]


async def test_repair_removes_orphans_and_rows_of_a_removed_index(table: TableClient) -> None:
    await table.insert_entity(Item("p", "r1", color="red", size=1))
    gone = RESERVED + "by_gone;x;r1"  # an index the class no longer declares
    stray = RESERVED + "by_color;blue;r9"  # points at nothing
    for rk in (gone, stray):
        await table.insert_entity({"PartitionKey": "p", "RowKey": rk})
    report = await verify_index(table, Item)
    assert report.orphans == 2
    assert report.missing == 0
    assert (await build_index(table, Item)).deleted == 0  # build keeps orphans
    assert len(await index_keys(table)) == 4
    repaired = await repair_index(table, Item)
    assert repaired.deleted == 2
    assert await index_keys(table) == await implied(table)
    assert (await verify_index(table, Item)).consistent


async def test_repair_refreshes_a_stale_copy(table: TableClient) -> None:
    item = Item("p", "r1", color="red", size=2, note="fresh")
    await table.insert_entity(item)
    (copy_rk,) = [rk for rk in index_row_keys(item).values() if rk and "by_size" in rk]
    copy = await table.get_entity("p", copy_rk)
    copy["note"] = "old"
    await table.update_entity(copy, azt.UpdateMode.REPLACE)
    report = await verify_index(table, Item)
    assert report.stale == 1
    assert "stale by_size" in report.problems[0]
    await repair_index(table, Item)
    assert (await table.get_entity("p", copy_rk))["note"] == "fresh"
    assert (await verify_index(table, Item)).consistent


async def test_resume_after_an_interruption(table: TableClient) -> None:
    await seed_without_index(table)

    class Stop(Exception):
        pass

    seen: list[IndexReport] = []

    def stop_after_first(pk: str, report: IndexReport) -> None:
        seen.append(attrs_copy(report))
        raise Stop

    with pytest.raises(Stop):
        await build_index(table, Item, progress=stop_after_first)
    last = seen[0].last
    assert last == "p0"
    rest = await build_index(table, Item, after=last)
    assert rest.partitions == 2
    assert seen[0].written + rest.written == 14
    assert (await verify_index(table, Item)).consistent


def attrs_copy(report: IndexReport) -> IndexReport:
    return IndexReport(
        entities=report.entities,
        partitions=report.partitions,
        missing=report.missing,
        written=report.written,
        last=report.last,
    )


async def test_a_main_row_changed_during_the_run_is_left_alone(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await table.insert_entity({"PartitionKey": "p", "RowKey": "r1", "color": "red", "size": 1})
    real = TableClient.submit_transaction
    changed: list[Any] = []

    async def racing(client: TableClient, batch: Any) -> Any:
        if not changed:  # a writer changes the main row between the read and the write
            changed.append(
                await client.upsert_entity(
                    {"PartitionKey": "p", "RowKey": "r1", "color": "green", "size": 1}
                )
            )
        return await real(client, batch)

    monkeypatch.setattr(TableClient, "submit_transaction", racing)
    report = await build_index(table, Item)
    assert report.skipped == 1
    assert report.written == 0
    assert await index_keys(table) == set()  # nothing written from the stale read
    monkeypatch.undo()
    assert (await build_index(table, Item)).written == 2
    assert await index_keys(table) == await implied(table)


async def test_a_class_without_indexes_is_refused(table: TableClient) -> None:
    with pytest.raises(azt.ValidationError, match="declares no secondary index"):
        await verify_index(table, Plain)
