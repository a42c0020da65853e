"""Migrations as code: each step on stored rows, run online against the stub: what a dry
run reports, what a verify finds, a run again that changes nothing, a row the application
changes between the migration's read and its write (read again, apply again), moves to new
keys within and across partitions with their index rows, and the record of applied
migrations."""

from __future__ import annotations

from typing import Any

import pytest

import azt
from azt._orm import migration_runner
from azt.edm import EdmType, TableEntity, Typed
from azt.entity import Entity, EntityTable, Prop, prop
from azt.indexes import Index, is_index_row_key, verify_index
from azt.migrate import (
    MIGRATIONS_TABLE,
    Migration,
    backfill,
    drop,
    migration_status,
    rekey,
    rename,
    retype,
    run_migrations,
    upgrade,
    verify_migrations,
)
from azt_server_stub.realism.faults import FaultInjector, FaultKind, parse_fault
from tests.bulk.support import stub
from tests.migrate.models import Customer, CustomerV1


async def rows_of(table: azt.TableClient) -> dict[tuple[str, str], TableEntity]:
    return {
        (e["PartitionKey"], e["RowKey"]): e
        async for e in table.list_entities()
        if not is_index_row_key(e["RowKey"])
    }


def test_steps_on_one_row() -> None:
    row = TableEntity(PartitionKey="p", RowKey="r", Name="Ada", N=3, First="A", Last="L", X=1)
    m = Migration(
        "0001",
        "things",
        [
            rename("Name", "FullName"),
            retype("N", lambda n: n * 10, stored=EdmType.INT32, to=EdmType.INT64),
            backfill("Initials", lambda r: r["First"][0] + r["Last"][0]),
            drop("X"),
        ],
    )
    plan = m.plan_row(row)
    assert plan is not None
    assert not plan.moved
    assert dict(plan.entity) == {
        "PartitionKey": "p",
        "RowKey": "r",
        "FullName": "Ada",
        "N": 30,
        "First": "A",
        "Last": "L",
        "Initials": "AL",
    }
    assert plan.entity.edm_types == {"N": EdmType.INT64}
    assert m.plan_row(plan.entity) is None  # every step applied: nothing left to do
    with pytest.raises(ValueError, match="to itself"):
        retype("N", int, stored=EdmType.INT32, to=EdmType.INT32)
    with pytest.raises(ValueError, match="no steps"):
        Migration("0002", "things", [])


async def test_dry_run_run_verify_and_run_again(service: azt.TableServiceClient) -> None:
    table = await service.create_table("people")
    for i in range(250):
        await table.upsert_entity(
            {"PartitionKey": f"p{i % 5}", "RowKey": f"{i:04d}", "Name": f"n{i}", "N": i}
        )
    await table.upsert_entity({"PartitionKey": "p0", "RowKey": "new", "FullName": "x", "N": 1})
    m = Migration("0001_full_name", "people", [rename("Name", "FullName")])

    [before] = await verify_migrations(service, [m])
    assert (before.scanned, before.pending) == (251, 250)
    [dry] = await run_migrations(service, [m], dry_run=True)
    assert (dry.dry_run, dry.pending, dry.written) == (True, 250, 0)
    assert "'FullName': 'n0'" in dry.samples[0]
    assert all(e.get("Name") for k, e in (await rows_of(table)).items() if k[1] != "new")
    assert [s.state for s in await migration_status(service, [m])] == ["pending"]

    [done] = await run_migrations(service, [m])
    assert (done.ok, done.written, done.conflicts) == (True, 250, 0)
    stored = await rows_of(table)
    assert all("Name" not in e and e["FullName"] for e in stored.values())
    assert stored[("p1", "0001")]["FullName"] == "n1"
    [after] = await verify_migrations(service, [m])
    assert after.pending == 0
    [status] = await migration_status(service, [m])
    assert (status.state, status.rows) == ("applied", 250)
    record = await service.get_table_client(MIGRATIONS_TABLE).get_entity("people", m.name)
    assert record["State"] == "done"
    assert "Token" not in record

    [again] = await run_migrations(service, [m])
    assert again.skipped  # recorded as applied
    # a migration run again without its record (say, a copy of the table) changes nothing
    await service.get_table_client(MIGRATIONS_TABLE).delete_entity("people", m.name)
    [fresh] = await run_migrations(service, [m])
    assert (fresh.written, fresh.pending, fresh.scanned) == (0, 0, 251)


async def test_a_row_changed_meanwhile_is_read_again(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the migration's read and its write the application changes a row: the
    write fails 412, the row is read again and migrated with the application's value."""
    table = await service.create_table("raced")
    for i in range(10):
        await table.upsert_entity({"PartitionKey": "p", "RowKey": f"{i}", "Name": f"n{i}"})
    real = migration_runner._Run._page
    raced: list[Any] = []

    async def page(self: Any, rows: list[Any], token: str | None) -> None:
        if not raced:  # the scan has read the rows; the migration has not written them
            raced.append(rows[3]["RowKey"])
            await table.update_entity(
                {"PartitionKey": "p", "RowKey": rows[3]["RowKey"], "Name": "app"},
                azt.UpdateMode.MERGE,
            )
        await real(self, rows, token)

    monkeypatch.setattr(migration_runner._Run, "_page", page)
    [r] = await run_migrations(service, [Migration("0001", "raced", [rename("Name", "Full")])])
    assert (r.ok, r.written, r.conflicts) == (True, 10, 1)
    stored = await rows_of(table)
    assert stored[("p", raced[0])]["Full"] == "app"  # the application's write, migrated
    assert all("Name" not in e for e in stored.values())


class Ticket(Entity):
    status: Prop[str] = prop(default="open")

    class Meta:
        indexes = (Index("by_status", "status"),)


async def test_rekey_within_and_across_partitions_keeps_indexes(
    service: azt.TableServiceClient,
) -> None:
    table = await service.create_table("tickets")
    tickets = EntityTable(Ticket, table)
    for i in range(30):
        await tickets.insert(Ticket(f"t{i % 3}", f"{i:03d}", status=("open", "done")[i % 2]))

    def new_keys(row: Any) -> tuple[str, str]:
        pk, rk = row["PartitionKey"], row["RowKey"]
        if rk.startswith("r-"):
            return pk, rk  # moved already
        if int(rk) % 2:  # odd ones: another partition
            return (pk if pk.startswith("b-") else f"b-{pk}"), f"r-{rk}"
        return pk, f"r-{rk}"

    m = Migration("0001_rekey", "tickets", [rekey(new_keys, "RowKey r-NNN")], entity=Ticket)
    [r] = await run_migrations(service, [m])
    assert (r.ok, r.written) == (True, 30)
    stored = await rows_of(table)
    assert len(stored) == 30
    assert all(rk.startswith("r-") for _, rk in stored)
    assert sum(pk.startswith("b-") for pk, _ in stored) == 15
    assert (await verify_index(table, Ticket)).consistent
    [left] = await verify_migrations(service, [m])
    assert left.pending == 0


async def test_upgrade_to_a_class_with_indexes(service: azt.TableServiceClient) -> None:
    table = await service.create_table("customers")
    async with table.batch_writer() as writer:
        for i in range(40):
            await writer.insert(
                CustomerV1(f"c{i % 4}", f"{i:03d}", Name=f"n{i}", Visits=i, City=f"x{i % 3}")
            )
    ms = [
        Migration("0001_v2", "customers", [upgrade(Customer)]),
        Migration("0002_drop", "customers", [drop("Legacy")], entity=Customer),
    ]
    reports = await run_migrations(service, ms)
    assert [(r.ok, r.written) for r in reports] == [(True, 40), (True, 0)]
    stored = await rows_of(table)
    assert all(e["Shape"] == 2 and e.edm_types["Visits"] is EdmType.INT64 for e in stored.values())
    assert (await verify_index(table, Customer)).consistent
    assert [s.state for s in await migration_status(service, ms)] == ["applied", "applied"]


async def test_a_refused_row_fails_the_migration_and_stops_the_next(
    service: azt.TableServiceClient,
) -> None:
    table = await service.create_table("refused")
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "1", "A": "x"})
    bad = Migration(
        "0001_bad", "refused", [backfill("B", lambda r: Typed("x" * 40_000, EdmType.STRING))]
    )
    later = Migration("0002_later", "refused", [drop("A")])
    reports = await run_migrations(service, [later, bad])
    assert [r.name for r in reports] == ["0001_bad"]
    assert not reports[0].ok
    assert reports[0].failed == 1
    assert "'p'/'1'" in reports[0].errors[0]
    states = [s.state for s in await migration_status(service, [bad, later])]
    assert states == ["running", "pending"]


async def test_a_read_that_fails_for_good_scans_again_from_the_last_written_page() -> None:
    """The scan's request fails past every retry (here: no retries at all, the connection
    dropped): once the pages before it are written, the migration scans again from there
    and finishes; nothing is written twice (every row changes once)."""
    faults = FaultInjector()
    async with (
        stub(faults=faults) as server,
        azt.TableServiceClient.from_connection_string(
            server.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        table = await service.create_table("dropped")
        for i in range(1200):  # pages of 200: six of them
            await table.upsert_entity(
                {"PartitionKey": f"p{i % 3}", "RowKey": f"{i:05d}", "Name": f"n{i}"}
            )
        faults.add(parse_fault("drop-before:at=3|5@reads,table=dropped"))
        m = Migration("0001_full", "dropped", [rename("Name", "Full")])
        [r] = await run_migrations(service, [m], scan_concurrency=1)
        assert r.ok, r.errors
        assert r.written == 1200
        assert faults.counters[FaultKind.DROP_BEFORE] == 2
        stored = await rows_of(table)
        assert all(e["Full"] == f"n{int(rk)}" for (_, rk), e in stored.items())
