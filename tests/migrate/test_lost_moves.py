"""A move across partitions whose copy is made from a row the application changed in the
meantime: the insert of the new row is applied but its answer is lost, or the run is
killed between the insert and the delete. The application's write reaches the new row
(it is never dropped for the migration's stale copy)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt._orm import migration_runner
from azt.entity import EntityTable
from azt.indexes import verify_index
from azt.migrate import MIGRATIONS_TABLE, Migration, rekey, run_migrations, verify_migrations
from azt.testing import stub_retry_policy
from azt_server_stub import StubServer
from tests.migrate.test_migrations import Ticket
from tests.migrate.test_moves import bucketed, rows_of


@pytest.fixture
async def service(azt_stub: StubServer) -> AsyncIterator[azt.TableServiceClient]:
    async with azt.TableServiceClient.from_connection_string(
        azt_stub.connection_string, retry=stub_retry_policy()
    ) as client:
        yield client


async def test_a_lost_insert_answer_does_not_drop_a_write_made_before_the_insert(
    service: azt.TableServiceClient, azt_stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The application changes a row (its indexed status) after the migration read it
    and before the migration inserts its copy at the new keys; the insert is applied but
    its answer is lost, and the resend meets the copy (409). The copy is the migration's
    own (it holds exactly what was planned from the first read), and older than the
    application's write in truth, though its Timestamp is later: the old row's content
    is copied over it, then the old row deleted."""
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
            azt_stub.config.faults.fail_next("drop-after", 1, methods={"POST"}, table="tickets")
        later: list[Any] = await real(self, group)
        return later

    monkeypatch.setattr(migration_runner._Run, "_send", send)
    m = Migration("0001_bucket", "tickets", [rekey(bucketed(True), "b-")], entity=Ticket)
    [r] = await run_migrations(service, [m])
    assert changed
    assert azt_stub.config.faults.counters["drop-after"] == 1
    assert (r.ok, r.written, r.failed) == (True, 6, 0)
    stored = await rows_of(table)
    assert sorted(stored) == [("b-t", f"r-{i:03d}") for i in range(6)]
    assert stored[("b-t", f"r-{changed[0]}")]["status"] == "closed"  # carried over
    assert sum(e["status"] == "closed" for e in stored.values()) == 1
    assert (await verify_index(table, Ticket)).consistent
    [left] = await verify_migrations(service, [m])
    assert left.pending == 0
