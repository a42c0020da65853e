"""A move to new keys that meets the application: a write of the application to the old
row after the migration copied it is carried over to the new row (never dropped), across
partitions and within one; a new row the application wrote later than the old row's last
write stands."""

from __future__ import annotations

from typing import Any

import pytest

import azt
from azt._orm import migration_runner
from azt.entity import EntityTable
from azt.indexes import is_index_row_key, verify_index
from azt.migrate import Migration, rekey, run_migrations, verify_migrations
from tests.migrate.test_migrations import Ticket


def bucketed(across: bool) -> Any:
    def keys(row: Any) -> tuple[str, str]:
        pk, rk = row["PartitionKey"], row["RowKey"]
        if rk.startswith("r-"):
            return pk, rk
        return (f"b-{pk}" if across else pk), f"r-{rk}"

    return keys


async def rows_of(table: azt.TableClient) -> dict[tuple[str, str], Any]:
    return {
        (e["PartitionKey"], e["RowKey"]): e
        async for e in table.list_entities()
        if not is_index_row_key(e["RowKey"])
    }


async def test_a_write_to_the_old_row_after_the_copy_is_carried_over(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Across partitions: the new row is inserted, then the application changes the old
    row (its status, an indexed value), then the migration's delete of the old row fails
    412: the old row is read again and copied over the new one, its index rows too."""
    table = await service.create_table("tickets")
    tickets = EntityTable(Ticket, table)
    for i in range(6):
        await tickets.insert(Ticket("t", f"{i:03d}", status="open"))
    real = migration_runner._Run._send
    changed: list[str] = []

    async def send(self: Any, group: list[Any]) -> list[Any]:
        inserting = [u.plan.old_keys[1] for u in group if u.then]
        later: list[Any] = await real(self, group)
        if inserting and not changed:  # copied, not yet deleted: the application writes
            rk = inserting[0]
            ticket = await tickets.get("t", rk)
            ticket.status = "closed"
            await tickets.save(ticket)
            changed.append(rk)
        return later

    monkeypatch.setattr(migration_runner._Run, "_send", send)
    m = Migration("0001_bucket", "tickets", [rekey(bucketed(True), "b-")], entity=Ticket)
    [r] = await run_migrations(service, [m])
    assert changed
    assert (r.ok, r.written, r.failed) == (True, 6, 0)
    assert r.conflicts >= 1
    stored = await rows_of(table)
    assert sorted(stored) == [("b-t", f"r-{i:03d}") for i in range(6)]
    assert stored[("b-t", f"r-{changed[0]}")]["status"] == "closed"  # carried over
    assert sum(e["status"] == "closed" for e in stored.values()) == 1
    assert (await verify_index(table, Ticket)).consistent
    [left] = await verify_migrations(service, [m])
    assert left.pending == 0


@pytest.mark.parametrize("across", [True, False])
async def test_an_old_row_written_after_an_earlier_copy_is_carried_over(
    service: azt.TableServiceClient, across: bool
) -> None:
    """A run killed between the copy and the delete left both rows; the application then
    wrote the old row. The run again finds the new row there (409): the old row is the
    later write, so it is copied over the new one, then deleted."""
    table = await service.create_table("left")
    pk = "b-p" if across else "p"
    await table.upsert_entity({"PartitionKey": pk, "RowKey": "r-1", "N": 1})  # the copy
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "1", "N": 2})  # written after
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "2", "N": 3})
    m = Migration("0001", "left", [rekey(bucketed(across))])
    [r] = await run_migrations(service, [m])
    assert (r.ok, r.written) == (True, 2)
    stored = await rows_of(table)
    assert {k: e["N"] for k, e in stored.items()} == {(pk, "r-1"): 2, (pk, "r-2"): 3}


@pytest.mark.parametrize("across", [True, False])
async def test_a_new_row_written_later_stands(
    service: azt.TableServiceClient, across: bool
) -> None:
    """The application wrote the new keys after the old row's last write: its row stands
    and the old row is deleted."""
    table = await service.create_table("later")
    pk = "b-p" if across else "p"
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "1", "N": 1})
    await table.upsert_entity({"PartitionKey": pk, "RowKey": "r-1", "N": 5})  # later
    [r] = await run_migrations(service, [Migration("0001", "later", [rekey(bucketed(across))])])
    assert (r.ok, r.written) == (True, 1)
    stored = await rows_of(table)
    assert {k: e["N"] for k, e in stored.items()} == {(pk, "r-1"): 5}
