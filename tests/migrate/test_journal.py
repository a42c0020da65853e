"""The journal of a re-key's moves in flight (azt._orm.migration_journal), against the
stub: what a run writes, a later run reads back; rows of pages done go with the next
write; a row to delete that is gone already does not lose the write; everything is
cleared at the end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt._orm.migration_journal import MoveJournal, content_digest
from azt.edm import TableEntity
from azt.migrate import MIGRATIONS_TABLE, Migration, rekey
from azt.testing import stub_retry_policy
from azt_server_stub import StubServer


@pytest.fixture
async def log(azt_stub: StubServer) -> AsyncIterator[azt.TableClient]:
    async with azt.TableServiceClient.from_connection_string(
        azt_stub.connection_string, retry=stub_retry_policy()
    ) as client:
        await client.create_table(MIGRATIONS_TABLE)
        yield client.get_table_client(MIGRATIONS_TABLE)


MIGRATION = Migration("0001_bucket", "things", [rekey(lambda row: ("b", "r"))])


def planned(i: int, n: int = 0) -> TableEntity:
    return TableEntity(PartitionKey="b-p", RowKey=f"r-{i:05d}", N=n)


async def stored(log: azt.TableClient) -> list[Any]:
    return [e async for e in log.list_entities()]


async def test_a_later_run_knows_the_copies_a_run_journalled(log: azt.TableClient) -> None:
    """Entries beyond one Binary property's 64 KiB (1,365 of 48 bytes) are read back
    whole; a copy is a killed run's when its content was journalled for the old keys:
    stale (``True``) when the old row's ETag changed since, current (``False``) when not."""
    dead = MoveJournal(log, MIGRATION)
    moves = [(("p", f"{i:05d}"), f'W/"e{i}"', planned(i)) for i in range(1500)]
    [key] = await dead.note(moves)
    [row] = await stored(log)
    assert (row["PartitionKey"], row["RowKey"], row["Moves"]) == ("things.0001_bucket", key, 1500)
    assert sorted(k for k in row if k[:1] in "MK" and k[1:].isdigit()) == ["K0", "M0", "M1"]
    after = MoveJournal(log, MIGRATION)
    await after.load()
    for i in (0, 1364, 1365, 1499):
        keys = ("p", f"{i:05d}")
        assert after.earlier_copy(keys, f'W/"e{i}"', planned(i)) is False  # as read then
        assert after.earlier_copy(keys, 'W/"later"', planned(i)) is True  # changed since
        assert after.earlier_copy(keys, 'W/"later"', planned(i, n=1)) is None  # not the copy
    assert after.earlier_copy(("p", "99999"), 'W/"e"', planned(99999)) is None
    # the row is not marked deleting: its old and new keys are read back, for each move
    assert after.unsent[1499] == (("p", "01499"), ("b-p", "r-01499"), content_digest(planned(1499)))
    assert (len(after.unsent), after.deleting) == (1500, set())
    await dead.mark([key])
    marked = MoveJournal(log, MIGRATION)
    await marked.load()
    assert (len(marked.deleting), marked.unsent) == (1500, [])
    await after.clear()
    assert await stored(log) == []


async def test_rows_of_pages_done_go_with_the_next_write(log: azt.TableClient) -> None:
    """A page's row, its moves done, is deleted in the transaction of the next journal
    write; a row listed as done that is gone already (an answer lost) fails that
    transaction: the write is made alone, and the row is left for clear()."""
    journal = MoveJournal(log, MIGRATION)
    [first] = await journal.note([(("p", "1"), "e1", planned(1))])
    [second] = await journal.note([(("p", "2"), "e2", planned(2))])
    journal.finished([first])
    [third] = await journal.note([(("p", "3"), "e3", planned(3))])
    assert sorted(e["RowKey"] for e in await stored(log)) == [second, third]
    await log.delete_entity("things.0001_bucket", second)  # gone: a lost answer's resend
    journal.finished([second, third])
    [fourth] = await journal.note([(("p", "4"), "e4", planned(4))])
    assert sorted(e["RowKey"] for e in await stored(log)) == [third, fourth]
    await journal.clear()
    assert await stored(log) == []
    assert journal.rows == set()


async def test_a_page_whose_keys_need_more_than_one_row_takes_more_rows(
    log: azt.TableClient,
) -> None:
    """200 moves with keys of 700 characters (2.8 KB of keys a move, 560 KB a page): more
    than a journal row holds (512 KiB), so the page takes two rows, written in one
    transaction; a later run reads every move's keys back, and both rows are marked."""
    journal = MoveJournal(log, MIGRATION)
    long = "k" * 690
    moves = [((f"p{long}", f"{i:05d}{long}"), f'W/"e{i}"', planned(i).copy()) for i in range(200)]
    for _, _, new in moves:
        new["PartitionKey"], new["RowKey"] = f"b{long}", f"r{new['RowKey']}{long}"
    rows = await journal.note(moves)
    assert len(rows) == 2
    assert sorted(e["RowKey"] for e in await stored(log)) == sorted(rows)
    assert sum(e["Moves"] for e in await stored(log)) == 200
    after = MoveJournal(log, MIGRATION)
    await after.load()
    assert [(old, new) for old, new, _ in after.unsent] == [
        (keys, (e["PartitionKey"], e["RowKey"])) for keys, _, e in moves
    ]
    await journal.mark(rows)
    assert all(e["Deleting"] is True for e in await stored(log))
    await journal.clear()
    assert await stored(log) == []
