"""Indexes across partitions (``Index(..., across_partitions=True)``): rows in partitions
of their own, written after the main row's transaction from the intent row it records;
lookups without a PartitionKey that never return an entity the index row no longer
describes; a write interrupted between the two parts repaired from its intent by
``repair_index``; adoption over existing data, resumed runs and a removed index."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt import TableClient, TableServiceClient, UpdateMode
from azt._core import table_client as table_client_module
from azt.context import SaveChangesOptions, TableContext
from azt.entity import Entity, Prop, prop
from azt.indexes import (
    Holds,
    Index,
    build_index,
    index_row_keys,
    is_index_row_key,
    repair_index,
    verify_index,
)
from azt.query import PlanKind, Query
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.faults import FaultInjector

from .models import Member, Plain

INTENT = "\ufffdix;~;"


Setup = tuple[TableClient, FaultInjector, TableServiceClient]


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    injector = FaultInjector(seed=3)
    async with (
        StubServer(StubConfig(faults=injector)) as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        yield await service.create_table("ixacross"), injector, service


@pytest.fixture
def table(setup: Setup) -> TableClient:
    return setup[0]


async def keys(table: TableClient) -> set[tuple[str, str]]:
    return {(e["PartitionKey"], e["RowKey"]) async for e in table.list_entities()}


async def across_rows(table: TableClient) -> set[tuple[str, str]]:
    return {k for k in await keys(table) if k[0].startswith("\ufffdix;")}


async def intents(table: TableClient) -> list[tuple[str, str]]:
    return sorted(k for k in await keys(table) if k[1].startswith(INTENT))


async def implied(table: TableClient) -> set[tuple[str, str]]:
    """The rows of ``by_email`` the main rows imply."""
    out: set[tuple[str, str]] = set()
    async for e in table.list_entities():
        if is_index_row_key(e["RowKey"]) or e["PartitionKey"].startswith("\ufffd"):
            continue
        rk = index_row_keys(Member.from_entity(e))["by_email"]
        if rk is not None:
            out.add(("\ufffdix;by_email;" + rk.split(";")[2], rk))
    return out


async def by_email(table: TableClient, email: str) -> list[tuple[str, str]]:
    got = await Query(Member, table).where(Member.email == email).to_list()
    return [(m.PartitionKey, m.RowKey) for m in got]


def test_declaration_rules() -> None:
    with pytest.raises(TypeError, match="holds keys only"):
        Index("e", "email", holds=Holds.ENTITY, across_partitions=True)
    with pytest.raises(TypeError, match="across_partitions"):
        Index("e", "email", across_partitions="yes")  # type: ignore[arg-type]


async def test_rows_follow_every_write(table: TableClient) -> None:
    await table.insert_entity(Member("org1", "u1", email="ann@x.com", team="red"))
    await table.insert_entity(Member("org2", "u2", email="bob@x.com", team="red"))
    assert await across_rows(table) == await implied(table)
    assert len(await across_rows(table)) == 2
    assert await intents(table) == []  # carried out and deleted
    assert await by_email(table, "ann@x.com") == [("org1", "u1")]

    [ann] = await Query(Member, table).where(Member.PartitionKey == "org1").to_list()
    ann.email = "ann@y.com"
    await table.update_entity(ann)
    assert await across_rows(table) == await implied(table)
    assert await by_email(table, "ann@x.com") == []
    assert await by_email(table, "ann@y.com") == [("org1", "u1")]

    ann.note = "unindexed change"  # no row moves: no intent at all
    await table.update_entity(ann)
    assert await intents(table) == []

    ann.email = None  # sparse: no row in the index
    await table.update_entity(ann, mode=UpdateMode.REPLACE)
    assert await by_email(table, "ann@y.com") == []
    assert await across_rows(table) == await implied(table)

    await table.delete_entity(ann)
    [bob] = await Query(Member, table).where(Member.PartitionKey == "org2").to_list()
    await table.delete_entity(bob)
    assert await keys(table) == set()


async def test_context_batch_and_writer_paths(setup: Setup) -> None:
    table, _, service = setup
    service_ctx = TableContext(service)
    for i in range(5):
        service_ctx.add("ixacross", Member("org", f"u{i}", email=f"m{i}@x.com", team="t"))
    await service_ctx.save_changes(SaveChangesOptions.BATCH)
    assert len(await across_rows(table)) == 5
    assert await intents(table) == []  # five intents, deleted in one transaction
    assert await across_rows(table) == await implied(table)

    async with table.batch_writer() as writer:
        for i in range(5, 8):
            await writer.insert(Member("org", f"u{i}", email=f"m{i}@x.com"))
    assert len(await across_rows(table)) == 8
    assert await intents(table) == []

    deleted = await Query(Member, table).where(Member.PartitionKey == "org").delete()
    assert len(deleted) == 8
    assert await keys(table) == set()


async def test_lookup_needs_no_partition_key_and_keeps_index_order(table: TableClient) -> None:
    for org, user in [("b", "2"), ("a", "9"), ("a", "1")]:
        await table.insert_entity(Member(org, user, email="same@x.com"))
    q = Query(Member, table).where(Member.email == "same@x.com")
    plan = q.explain()
    assert plan.kind is PlanKind.INDEX
    assert plan.across
    assert plan.index == "by_email"
    assert "across partitions" in str(plan)
    assert await by_email(table, "same@x.com") == [("a", "1"), ("a", "9"), ("b", "2")]
    # other conditions filter the main rows read
    q2 = Query(Member, table).where(Member.email == "same@x.com", Member.PartitionKey == "b")
    assert [m.RowKey for m in await q2.to_list()] == ["2"]
    # scans of the class and of other classes never see index or intent rows
    assert sorted(m.RowKey for m in await Query(Member, table).to_list()) == ["1", "2", "9"]
    assert sorted(p.RowKey for p in await Query(Plain, table).to_list()) == ["1", "2", "9"]


async def test_a_stale_index_row_never_yields_a_wrong_entity(table: TableClient) -> None:
    await table.insert_entity(Member("org", "u1", email="old@x.com"))
    [rk] = list(await across_rows(table))
    [m] = await Query(Member, table).to_list()
    m.email = "new@x.com"
    await table.update_entity(m)
    # plant the old row back, as an interrupted write would have left it
    await table.upsert_entity({"PartitionKey": rk[0], "RowKey": rk[1]}, UpdateMode.REPLACE)
    assert await by_email(table, "old@x.com") == []
    assert await by_email(table, "new@x.com") == [("org", "u1")]
    report = await verify_index(table, Member)
    assert (report.orphans, report.consistent) == (1, False)
    assert (await repair_index(table, Member)).deleted == 1
    assert (await verify_index(table, Member)).consistent


async def test_interrupted_write_is_repaired_from_its_intent(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await table.insert_entity(Member("org", "u1", email="a@x.com", team="t"))

    async def crash(*args: Any) -> int:  # the process died right after the commit
        return 0

    monkeypatch.setattr(table_client_module, "carry_out", crash)
    [m] = await Query(Member, table).to_list()
    m.email = "b@x.com"
    await table.update_entity(m)
    await table.insert_entity(Member("org", "u2", email="c@x.com"))
    monkeypatch.undo()

    assert len(await intents(table)) == 2
    assert await by_email(table, "a@x.com") == []  # the old row is checked and dropped
    assert await by_email(table, "b@x.com") == []  # eventually consistent: not yet written
    report = await verify_index(table, Member)
    assert (report.intents, report.missing, report.orphans) == (2, 2, 1)
    assert not report.consistent

    fixed = await repair_index(table, Member)
    assert fixed.intents == 2
    assert await intents(table) == []
    assert await across_rows(table) == await implied(table)
    assert await by_email(table, "b@x.com") == [("org", "u1")]
    assert await by_email(table, "c@x.com") == [("org", "u2")]
    assert (await verify_index(table, Member)).consistent


async def test_an_intent_superseded_by_a_later_write_is_settled_as_the_row_now_is(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await table.insert_entity(Member("org", "u1", email="a@x.com"))

    async def crash(*args: Any) -> int:
        return 0

    [m] = await Query(Member, table).to_list()
    monkeypatch.setattr(table_client_module, "carry_out", crash)
    m.email = "b@x.com"
    await table.update_entity(m)  # intent: put b, delete a (never carried out)
    monkeypatch.undo()
    m.email = "c@x.com"
    await table.update_entity(m)  # carried out: put c, delete b
    await repair_index(table, Member)
    assert await across_rows(table) == await implied(table)
    assert {rk for _, rk in await across_rows(table)} == {"\ufffdix;by_email;c@x.com;org;u1"}


async def test_a_failed_follow_up_is_logged_and_left_for_repair(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    table, injector, _ = setup
    injector.fail_next("busy", 1, methods=["PUT"])  # the index row's write
    with caplog.at_level(logging.WARNING, logger="azt"):
        result = await table.insert_entity(Member("org", "u1", email="a@x.com"))
    assert result.etag  # the entity's write itself succeeded
    assert any("azt index repair" in r.getMessage() for r in caplog.records)
    assert len(await intents(table)) == 1
    assert (await repair_index(table, Member)).intents == 1
    assert await by_email(table, "a@x.com") == [("org", "u1")]


async def test_reserved_partition_keys_are_refused(table: TableClient) -> None:
    with pytest.raises(azt.ValidationError, match="PartitionKeys starting with"):
        await table.insert_entity(Member("\ufffdix;by_email;x", "u1", email="a@x.com"))
    assert await keys(table) == set()


class Account(Entity):
    email: Prop[str | None] = prop(default=None)


class IndexedAccount(Entity):
    email: Prop[str | None] = prop(default=None)

    class Meta:
        indexes = (Index("by_email", "email", across_partitions=True),)


class Unindexed(Entity):
    email: Prop[str | None] = prop(default=None)

    class Meta:
        indexes = (Index("by_other", "email"),)


async def test_adopt_resume_and_remove(table: TableClient) -> None:
    for i in range(6):
        await table.insert_entity(Account(f"p{i % 3}", f"r{i}", email=f"e{i % 4}@x.com"))
    before = await verify_index(table, IndexedAccount)
    assert (before.entities, before.missing) == (6, 6)
    # interrupted after the first main partition, then resumed
    seen: list[str] = []
    first = await build_index(
        table,
        IndexedAccount,
        progress=lambda pk, rep: seen.append(pk),
    )
    assert first.written == 6
    assert seen[:3] == ["p0", "p1", "p2"]
    assert (await verify_index(table, IndexedAccount)).consistent
    resumed = await verify_index(table, IndexedAccount, after="p1")
    assert resumed.consistent
    assert resumed.entities == 2
    last_index_partition = seen[-1]
    tail = await verify_index(table, IndexedAccount, after=last_index_partition)
    assert tail.consistent
    assert tail.entities == 0
    got = await Query(IndexedAccount, table).where(IndexedAccount.email == "e1@x.com").to_list()
    assert sorted(a.RowKey for a in got) == ["r1", "r5"]
    # the index removed from the class: its rows are orphans, deleted by repair
    gone = await repair_index(table, Unindexed)
    assert gone.orphans == 6
    assert gone.deleted == 6
    assert await across_rows(table) == set()


async def test_intents_deleted_one_by_one_when_their_transaction_fails(setup: Setup) -> None:
    table, injector, service = setup
    ctx = TableContext(service)
    for i in range(3):
        ctx.add("ixacross", Member("org", f"u{i}", email=f"m{i}@x.com"))
    injector.fail_at("busy", [2], methods=["POST"])  # the intents' deletion transaction
    await ctx.save_changes(SaveChangesOptions.BATCH)
    assert injector.rules[0].spent
    assert await intents(table) == []
    assert await across_rows(table) == await implied(table)
