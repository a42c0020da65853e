"""Secondary indexes on a class whose keys have domain names: the index rows carry the
main row's keys (read by their domain names), lookups return the class's objects, and the
repair tools read the same rows."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import azt
from azt import TableClient, TableServiceClient
from azt.context import TableContext
from azt.entity import EntityBase, Prop, partition_key, row_key
from azt.indexes import Index, index_row_keys, is_index_row_key, verify_index
from azt.query import PlanKind, Query
from azt_server_stub import StubServer

from .models import Ticket


@pytest.fixture
async def service() -> AsyncIterator[TableServiceClient]:
    async with (
        StubServer() as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as client,
    ):
        yield client


@pytest.fixture
async def table(service: TableServiceClient) -> TableClient:
    return await service.create_table("ixdomain")


def _ticket(p: str, t: str, **props: object) -> Ticket:
    return Ticket(project=p, ticket_id=t, **props)  # type: ignore[arg-type]


async def _index_rows(table: TableClient) -> set[tuple[str, str]]:
    return {
        (e["PartitionKey"], e["RowKey"])
        async for e in table.list_entities()
        if is_index_row_key(e["RowKey"]) or e["PartitionKey"].startswith("\ufffd")
    }


async def test_index_rows_follow_writes(table: TableClient) -> None:
    t = _ticket("azt", "t-1", state="open", priority=2, reporter="ann@example.com")
    await table.insert_entity(t)
    keys = index_row_keys(t)
    assert set(keys) == {"by_state", "by_priority", "by_reporter"}
    assert all(rk is not None and rk.endswith("t-1") for rk in keys.values())
    rows = await _index_rows(table)
    assert ("azt", keys["by_state"]) in rows
    assert ("azt", keys["by_priority"]) in rows
    assert any(pk.startswith("\ufffdix;by_reporter;") for pk, _ in rows)
    assert len(rows) == 3
    report = await verify_index(table, Ticket)
    assert (report.entities, report.missing, report.orphans, report.stale) == (1, 0, 0, 0)

    t.state = "closed"
    await table.update_entity(t, azt.UpdateMode.REPLACE)
    after = await _index_rows(table)
    assert ("azt", keys["by_state"]) not in after  # the old state's row is gone
    assert ("azt", index_row_keys(t)["by_state"]) in after
    assert len(after) == 3
    await table.delete_entity(t)
    assert await _index_rows(table) == set()


async def test_index_lookups_return_domain_objects(table: TableClient) -> None:
    async with table.batch_writer() as writer:
        for i in range(6):
            await writer.insert(
                _ticket(
                    "azt",
                    f"t-{i}",
                    state="open" if i % 2 else "closed",
                    priority=i % 3,
                    reporter=f"u{i % 2}@example.com",
                )
            )
    q = Query(Ticket, table).where(Ticket.project == "azt", Ticket.state == "open")
    plan = q.explain()
    assert plan.kind is PlanKind.INDEX
    assert plan.index == "by_state"
    got = await q.to_list()
    assert sorted(o.ticket_id for o in got) == ["t-1", "t-3", "t-5"]
    assert all(isinstance(o, Ticket) and o.project == "azt" for o in got)

    copies = Query(Ticket, table).where(Ticket.project == "azt", Ticket.priority == 0)
    assert copies.explain().index == "by_priority"
    assert sorted(o.ticket_id for o in await copies.to_list()) == ["t-0", "t-3"]

    across = Query(Ticket, table).where(Ticket.reporter == "u0@example.com")
    assert across.explain().index == "by_reporter"
    assert sorted((o.project, o.ticket_id) for o in await across.to_list()) == [
        ("azt", "t-0"),
        ("azt", "t-2"),
        ("azt", "t-4"),
    ]
    # the plain query of the partition never returns index rows
    main = await Query(Ticket, table).where(Ticket.project == "azt").to_list()
    assert [o.ticket_id for o in main] == [f"t-{i}" for i in range(6)]


async def test_context_writes_index_rows(service: TableServiceClient, table: TableClient) -> None:
    ctx = TableContext(service)
    t = _ticket("azt", "t-9", state="open", reporter="bob@example.com")
    ctx.add("ixdomain", t)
    await ctx.save_changes()
    assert len(await _index_rows(table)) == 3
    t.state = "done"
    await ctx.save_changes()
    report = await verify_index(table, Ticket)
    assert (report.entities, report.missing, report.orphans, report.stale) == (1, 0, 0, 0)
    ctx.delete(t)
    await ctx.save_changes()
    assert await _index_rows(table) == set()


def test_an_index_on_a_domain_key_is_refused() -> None:
    with pytest.raises(TypeError, match="the keys are indexed already"):

        class Bad(EntityBase):
            project: Prop[str] = partition_key()
            ticket_id: Prop[str] = row_key()

            class Meta:
                indexes = (Index("by_id", "ticket_id"),)
