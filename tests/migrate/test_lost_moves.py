"""A move across partitions whose copy is made from a row the application changed in the
meantime: the insert of the new row is applied but its answer is lost, or the run is
killed between the insert and the delete. The application's write reaches the new row
(it is never dropped for the migration's stale copy)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

import azt
from azt._orm import migration_runner
from azt._orm.migration_journal import content_digest
from azt.edm import EdmDateTime, EdmType, TableEntity, Typed
from azt.entity import EntityTable
from azt.indexes import verify_index
from azt.migrate import (
    MIGRATIONS_TABLE,
    Migration,
    rekey,
    run_migrations,
    upgrade,
    verify_migrations,
)
from azt_server_stub import StubServer
from azt_server_stub.realism.faults import FaultKind
from tests.migrate.models import Customer, CustomerV1
from tests.migrate.test_migrations import Ticket
from tests.migrate.test_moves import bucketed, rows_of


async def test_a_lost_insert_answer_does_not_drop_a_write_made_before_the_insert(
    service: azt.TableServiceClient, azt_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The application changes a row (its indexed status) after the migration read it
    and before the migration inserts its copy at the new keys; the insert is applied but
    its answer is lost, and the resend meets the copy (409). The copy is the migration's
    own (it holds exactly what was planned from the first read), and older than the
    application's write in truth, though its Timestamp is later: the old row's content
    is copied over it, then the old row deleted."""
    faults = azt_stub.config.faults
    assert faults is not None
    table = await service.create_table("tickets")
    tickets = EntityTable(Ticket, table)
    for i in range(6):
        await tickets.insert(Ticket("t", f"{i:03d}", status="open"))
    real = migration_runner._Run._send
    changed: list[str] = []

    async def send(self: Any, group: list[Any]) -> list[Any]:
        inserting = [u.plan.old_keys[1] for u in group if u.then]
        if inserting and not changed:  # read, not yet copied: the application writes
            rk = inserting[0]
            ticket = await tickets.get("t", rk)
            ticket.status = "closed"
            await tickets.save(ticket)
            changed.append(rk)
            # the migration's insert is applied, its answer lost
            faults.fail_next("drop-after", 1, methods={"POST"}, table="tickets")
        later: list[Any] = await real(self, group)
        return later

    monkeypatch.setattr(migration_runner._Run, "_send", send)
    m = Migration("0001_bucket", "tickets", [rekey(bucketed(True), "b-")], entity=Ticket)
    [r] = await run_migrations(service, [m])
    assert changed
    assert faults.counters[FaultKind.DROP_AFTER] == 1
    assert (r.ok, r.written, r.failed) == (True, 6, 0)
    stored = await rows_of(table)
    assert sorted(stored) == [("b-t", f"r-{i:03d}") for i in range(6)]
    assert stored[("b-t", f"r-{changed[0]}")]["status"] == "closed"  # carried over
    assert sum(e["status"] == "closed" for e in stored.values()) == 1
    assert (await verify_index(table, Ticket)).consistent
    [left] = await verify_migrations(service, [m])
    assert left.pending == 0


async def journal_rows(service: azt.TableServiceClient) -> list[Any]:
    """The rows of the table of applied migrations that are not a migration's record."""
    log = service.get_table_client(MIGRATIONS_TABLE)
    return [e async for e in log.list_entities() if "." in e["PartitionKey"]]


async def run_until_killed(
    service: azt.TableServiceClient, migration: Migration, killed: asyncio.Event
) -> None:
    """Run ``migration`` until the test's patched send sets ``killed`` (and then hangs, as a
    dead run would), and cancel it there: a run killed at that point. The run must get
    there (else the test's premise does not hold)."""
    task = asyncio.create_task(run_migrations(service, [migration]))
    kill = asyncio.create_task(killed.wait())
    await asyncio.wait([task, kill], timeout=60, return_when=asyncio.FIRST_COMPLETED)
    kill.cancel()
    assert killed.is_set(), "the run finished without reaching the point it is killed at"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("kills", [1, 2])
async def test_a_run_killed_between_copy_and_delete_does_not_drop_a_write(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch, kills: int
) -> None:
    """The application changes a row after the migration read it and before the copy
    is inserted; the run is killed after the insert, before the delete. The run after it
    finds the stale copy at the new keys, with a later Timestamp than the old row's; the
    journal (written before the inserts) says it is the killed run's copy of the old row
    as read then: the old row is copied over it and deleted.

    ``kills=2``: the second run meets the application twice: a write before its insert
    (which meets the stale copy: the old row is read again and copied over it), and one
    between that read and the copy, and is killed after the copy. The third run finds a
    copy newer than the old row again, which no page's journal entry describes: the
    journal row written before the copy does."""
    table = await service.create_table("tickets")
    tickets = EntityTable(Ticket, table)
    await tickets.insert(Ticket("t", "000", status="open"))
    await tickets.insert(Ticket("u", "r-000", status="open"))  # stays
    real = migration_runner._Run._send
    statuses = iter(["closed", "reopened", "escalated"])
    written: list[str] = []  # the statuses the application wrote, in order
    #: each run: the sends (an insert, a copy over the new row) the application writes
    #: the old row before; the run is killed after the last
    races = [["create"], ["create", "update"]][:kills]
    killed = asyncio.Event()

    async def send(self: Any, group: list[Any]) -> list[Any]:
        todo = races[0]
        racing = bool(todo) and any(u.then and u.ops[0].kind == todo[0] for u in group)
        if racing:  # read, not yet copied: the application writes the old row
            todo.pop(0)
            ticket = await tickets.get("t", "000")
            ticket.status = next(statuses)
            await tickets.save(ticket)
            written.append(ticket.status)
        later: list[Any] = await real(self, group)
        if racing and not todo:
            killed.set()
            await asyncio.Event().wait()  # killed: the delete is never sent
        return later

    m = Migration("0001_bucket", "tickets", [rekey(bucketed(True), "b-")], entity=Ticket)
    for run in range(kills):
        killed.clear()
        monkeypatch.setattr(migration_runner._Run, "_send", send)
        await run_until_killed(service, m, killed)
        monkeypatch.undo()
        races.pop(0)
        # both rows of the move are there, and the journal of the moves in flight: the
        # pages' (one move each) and the copy's
        stored = await rows_of(table)
        assert sorted(stored) == [("b-t", "r-000"), ("t", "000"), ("u", "r-000")]
        assert stored[("t", "000")]["status"] == written[-1]
        # the copy: of the row as the run read it, before the application's last write
        assert stored[("b-t", "r-000")]["status"] == (written[-2] if run else "open")
        journal = await journal_rows(service)
        assert {e["PartitionKey"] for e in journal} == {"tickets.0001_bucket"}
        assert [e["Moves"] for e in journal] == [1] * (1 if run == 0 else 3)

    [r] = await run_migrations(service, [m])
    assert (r.ok, r.failed) == (True, 0)
    stored = await rows_of(table)
    assert sorted(stored) == [("b-t", "r-000"), ("u", "r-000")]
    assert len(written) == (1 if kills == 1 else 3)
    assert stored[("b-t", "r-000")]["status"] == written[-1]  # the last write, carried over
    assert (await verify_index(table, Ticket)).consistent
    [left] = await verify_migrations(service, [m])
    assert left.pending == 0
    assert await journal_rows(service) == []  # cleared once the migration is done


@pytest.mark.parametrize("rewrites", [False, True])
async def test_an_old_row_deleted_after_the_copy_is_not_brought_back(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch, rewrites: bool
) -> None:
    """The application deletes a row (``If-Match``) after the migration copied it and
    before the migration's delete: that delete meets ``404``, the run never having sent
    one that could have taken the row, so the application deleted it: the copy, still as
    the migration wrote it, is deleted too, with its index rows (the row does not come
    back at the new keys). ``rewrites``: the application then wrote the new keys itself:
    its row stands."""
    table = await service.create_table("tickets")
    tickets = EntityTable(Ticket, table)
    for i in range(3):
        await tickets.insert(Ticket("t", f"{i:03d}", status="open"))
    real = migration_runner._Run._send
    deleted: list[str] = []

    async def send(self: Any, group: list[Any]) -> list[Any]:
        inserting = [u.plan.old_keys[1] for u in group if u.then]
        later: list[Any] = await real(self, group)
        if inserting and not deleted:  # copied, not yet deleted: the application deletes
            await tickets.delete(await tickets.get("t", "000"))
            if rewrites:  # the application writes the new keys: its row
                mine = await tickets.get("b-t", "r-000")
                mine.status = "mine"
                await tickets.save(mine)
            deleted.append("000")
        return later

    monkeypatch.setattr(migration_runner._Run, "_send", send)
    m = Migration("0001_bucket", "tickets", [rekey(bucketed(True), "b-")], entity=Ticket)
    [r] = await run_migrations(service, [m])
    assert deleted
    assert (r.ok, r.failed) == (True, 0)
    stored = await rows_of(table)
    kept = [("b-t", "r-000")] if rewrites else []
    assert sorted(stored) == [*kept, ("b-t", "r-001"), ("b-t", "r-002")]
    if rewrites:
        assert stored[("b-t", "r-000")]["status"] == "mine"
    assert (await verify_index(table, Ticket)).consistent
    assert await journal_rows(service) == []


async def test_a_row_deleted_after_a_killed_runs_copy_is_not_brought_back(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run is killed after its copy, before its delete; during the next run, after it
    read the old row, the application deletes it. The next run's insert meets the killed
    run's copy (``409``), then finds the old row gone without having sent its delete:
    the journal says the new row is the killed run's copy, so it goes too."""
    table = await service.create_table("tickets")
    tickets = EntityTable(Ticket, table)
    await tickets.insert(Ticket("t", "000", status="open"))
    real = migration_runner._Run._send
    killed = asyncio.Event()

    async def kill_after_the_copy(self: Any, group: list[Any]) -> list[Any]:
        copying = any(u.then for u in group)
        later: list[Any] = await real(self, group)
        if copying:
            killed.set()
            await asyncio.Event().wait()
        return later

    async def delete_before_the_insert(self: Any, group: list[Any]) -> list[Any]:
        if any(u.then for u in group) and await tickets.get_or_none("t", "000"):
            await tickets.delete(await tickets.get("t", "000"))
        later: list[Any] = await real(self, group)
        return later

    m = Migration("0001_bucket", "tickets", [rekey(bucketed(True), "b-")], entity=Ticket)
    monkeypatch.setattr(migration_runner._Run, "_send", kill_after_the_copy)
    await run_until_killed(service, m, killed)
    assert sorted(await rows_of(table)) == [("b-t", "r-000"), ("t", "000")]
    monkeypatch.setattr(migration_runner._Run, "_send", delete_before_the_insert)
    [r] = await run_migrations(service, [m])
    assert (r.ok, r.failed) == (True, 0)
    assert await rows_of(table) == {}
    assert (await verify_index(table, Ticket)).consistent
    assert await journal_rows(service) == []


@pytest.mark.parametrize("killed_after", ["copies", "copies, rewritten", "deletes"])
async def test_a_row_deleted_while_the_run_is_dead_after_its_copy_is_not_brought_back(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch, killed_after: str
) -> None:
    """``copies``: a run is killed once the copies of a page are inserted, before it marks
    the page's journal row deleting (so before any delete is sent); while no run is
    alive, the application deletes one old row (``If-Match``). The next run does not find
    that row, but the unmarked journal row holds its keys: no run sent its delete, so the
    application did, and the copy goes too, with its index rows; every other row is
    moved exactly once. ``copies, rewritten``: the application then wrote the new keys
    itself: its row stands. ``deletes``: the run is killed after its deletes are sent
    (the journal row marked): the rows are taken as moved and their copies stay."""
    table = await service.create_table("tickets")
    tickets = EntityTable(Ticket, table)
    for i in range(5):
        await tickets.insert(Ticket("t", f"{i:03d}", status=f"s{i}"))
    real = migration_runner._Run._send
    killed = asyncio.Event()

    async def kill(self: Any, group: list[Any]) -> list[Any]:
        copying, deleting = any(u.then for u in group), any(u.ops is u.deleted for u in group)
        later: list[Any] = await real(self, group)
        if (killed_after.startswith("copies") and copying) or (
            killed_after == "deletes" and deleting
        ):
            killed.set()
            await asyncio.Event().wait()  # killed
        return later

    m = Migration("0001_bucket", "tickets", [rekey(bucketed(True), "b-")], entity=Ticket)
    monkeypatch.setattr(migration_runner._Run, "_send", kill)
    await run_until_killed(service, m, killed)
    monkeypatch.undo()
    [journalled] = await journal_rows(service)
    assert bool(journalled.get("Deleting")) is (killed_after == "deletes")
    stored = await rows_of(table)
    copies = [("b-t", f"r-{i:03d}") for i in range(5)]
    gone = []
    if killed_after.startswith("copies"):
        assert sorted(stored) == copies + [("t", f"{i:03d}") for i in range(5)]
        await tickets.delete(await tickets.get("t", "001"))  # If-Match: the application's
        if killed_after.endswith("rewritten"):
            mine = await tickets.get("b-t", "r-001")
            mine.status = "mine"
            await tickets.save(mine)
        else:
            gone = [("b-t", "r-001")]
    else:
        assert sorted(stored) == copies
    [r] = await run_migrations(service, [m])
    assert (r.ok, r.failed) == (True, 0)
    stored = await rows_of(table)
    assert sorted(stored) == [k for k in copies if k not in gone]
    assert {k: e["status"] for k, e in stored.items()} == {
        ("b-t", f"r-{i:03d}"): "mine" if i == 1 and "rewritten" in killed_after else f"s{i}"
        for i in range(5)
        if ("b-t", f"r-{i:03d}") not in gone
    }
    assert (await verify_index(table, Ticket)).consistent
    index_rows = [
        e async for e in table.list_entities() if (e["PartitionKey"], e["RowKey"]) not in stored
    ]
    assert len(index_rows) == len(stored)  # one by_status row each, none for the deleted row
    assert await journal_rows(service) == []


async def test_a_new_row_the_insert_was_refused_for_is_not_taken_for_the_copy(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The application moves a row itself, between the migration's read and its insert:
    it writes the new keys with exactly the content the migration planned, and deletes
    the old row. The migration's insert is refused whole (``409``, no earlier attempt):
    the new row is not its copy, though it holds what it would have sent, and stands."""
    table = await service.create_table("moved")
    for i in range(3):
        await table.upsert_entity({"PartitionKey": "p", "RowKey": f"{i}", "N": i})
    real = migration_runner._Run._send
    moved: list[str] = []

    async def send(self: Any, group: list[Any]) -> list[Any]:
        if any(u.then for u in group) and not moved:  # the application moves row 0
            await table.upsert_entity({"PartitionKey": "b-p", "RowKey": "r-0", "N": 0})
            await table.delete_entity("p", "0")
            moved.append("0")
        later: list[Any] = await real(self, group)
        return later

    monkeypatch.setattr(migration_runner._Run, "_send", send)
    [r] = await run_migrations(service, [Migration("0001", "moved", [rekey(bucketed(True))])])
    assert moved
    assert (r.ok, r.failed) == (True, 0)
    stored = await rows_of(table)
    assert {k: e["N"] for k, e in stored.items()} == {("b-p", f"r-{i}"): i for i in range(3)}


async def test_a_lost_answer_to_the_delete_keeps_the_copy(
    service: azt.TableServiceClient, azt_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old row's delete is applied but its answer lost; the resend meets ``404``.
    This run sent a delete that may have taken the row: the row moved, and its copy
    stays (only a row the run never sent a delete for is the application's delete)."""
    faults = azt_stub.config.faults
    assert faults is not None
    table = await service.create_table("tickets")
    tickets = EntityTable(Ticket, table)
    for i in range(3):
        await tickets.insert(Ticket("t", f"{i:03d}", status="open"))
    real = migration_runner._Run._send

    async def send(self: Any, group: list[Any]) -> list[Any]:
        if any(u.deleted and not u.then for u in group):  # the deletes: answer lost
            faults.fail_next(FaultKind.DROP_AFTER, 1, methods={"POST"}, table="tickets")
        later: list[Any] = await real(self, group)
        return later

    monkeypatch.setattr(migration_runner._Run, "_send", send)
    m = Migration("0001_bucket", "tickets", [rekey(bucketed(True), "b-")], entity=Ticket)
    [r] = await run_migrations(service, [m])
    assert faults.counters[FaultKind.DROP_AFTER] >= 1
    assert (r.ok, r.failed) == (True, 0)
    stored = await rows_of(table)
    assert sorted(stored) == [("b-t", f"r-{i:03d}") for i in range(3)]
    assert (await verify_index(table, Ticket)).consistent


async def test_a_move_nothing_raced_costs_two_journal_writes_a_page(
    service: azt.TableServiceClient, azt_stub: StubServer
) -> None:
    """Moves that meet nobody cost the writes of the moves (a transaction of inserts, one
    of deletes, per partition and page, up to 100 rows each) as before the journal, and
    for the journal two writes a page: one before its inserts, one marking it deleting
    once they are all in and before its deletes are sent (each deleting the rows of the
    pages done since, in the same transaction), and one at the end: not one per row. A
    migration that moves nothing writes no journal."""
    table = await service.create_table("things")
    async with table.batch_writer() as writer:
        for i in range(250):
            await writer.upsert({"PartitionKey": "p", "RowKey": f"{i:03d}", "N": i})
    faults = azt_stub.config.faults
    assert faults is not None
    data_writes = faults.add_latency(1e-6, only="writes", table="things")
    log_writes = faults.add_latency(1e-6, only="writes", table=MIGRATIONS_TABLE)
    records = faults.add_latency(1e-6, only="writes", path=r"PartitionKey=(%27|')things(%27|')")
    m = Migration("0001_bucket", "things", [rekey(bucketed(True), "b-")])
    [r] = await run_migrations(service, [m], checkpoint_interval=60)
    assert (r.ok, r.written, r.conflicts) == (True, 250, 0)
    stored = await rows_of(table)
    assert sorted(stored) == [("b-p", f"r-{i:03d}") for i in range(250)]
    # pages of 200 and 50 rows: inserts in transactions of 100 + 100 and 50, the deletes
    # the same; for each page a journal write and its mark, and one clearing the journal
    assert data_writes.seen == 2 * 3
    assert records.seen == 2  # the record: running, done
    assert log_writes.seen - records.seen == 2 * 2 + 1
    assert await journal_rows(service) == []
    # a migration that does not move rows pays nothing for the journal
    renamed = Migration("0002_rename", "things", [azt.migrate.rename("N", "Number")])
    [r] = await run_migrations(service, [renamed], checkpoint_interval=60)
    assert (r.ok, r.written) == (True, 250)
    assert log_writes.seen - records.seen == 2 * 2 + 1


async def test_a_row_read_back_has_the_content_digest_of_the_row_as_planned(
    service: azt.TableServiceClient,
) -> None:
    """A move knows its copy by content where its answer was lost, and a killed run's by
    the digest journalled: the row read back must digest as the row planned, for every
    EDM type (Int64 by its declared type, a DateTime to the 100 ns, a Double holding an
    integer), and a row differing in one value or one type must not."""
    table = await service.create_table("typed")
    planned = TableEntity(
        PartitionKey="p",
        RowKey="r",
        S="text \u00fc \U0001f642",
        I=5,
        L=5,
        D=1.0,
        F=0.1,
        B=True,
        T=EdmDateTime.parse("2020-09-15T23:02:10.4363943Z"),
        A=datetime(2021, 1, 1, 12, 30, tzinfo=UTC),
        G=uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
        X=b"\x00\x01\xff",
        Big=2**40,
        Typed=Typed(7, EdmType.INT64),
        Gone=None,
    )
    planned.edm_types["L"] = EdmType.INT64
    await table.insert_entity(planned)
    back = await table.get_entity("p", "r")
    assert content_digest(back) == content_digest(planned)
    changed = planned.copy()
    changed["F"] = 0.2
    assert content_digest(changed) != content_digest(planned)
    retyped = planned.copy()
    retyped.edm_types["I"] = EdmType.INT64
    assert content_digest(retyped) != content_digest(planned)
    # the plan of an upgrade (its marker, an Int64, a parsed DateTime), read back
    v1 = CustomerV1("c", "1", Name="Ann", Visits=3, Joined="2020-01-02T03:04:05Z", City="x")
    plan = Migration("0001", "typed", [upgrade(Customer)]).plan_row(v1.to_entity())
    assert plan is not None
    await table.insert_entity(plan.entity)
    back = await table.get_entity("c", "1")
    assert content_digest(back) == content_digest(plan.entity)
