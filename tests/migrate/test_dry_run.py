"""A dry run of several pending migrations: each reports what it would change given the
ones before it (the rows as the earlier pending migrations of its table would leave them),
and nothing is written."""

from __future__ import annotations

from typing import Any

import azt
from azt.migrate import Migration, backfill, drop, rekey, rename, run_migrations


def initials(row: Any) -> str | None:
    name = row.get("FullName")
    return None if name is None else "".join(w[0] for w in name.split())


async def test_a_dry_run_chains_pending_migrations(service: azt.TableServiceClient) -> None:
    table = await service.create_table("folk")
    other = await service.create_table("other")
    for i in range(30):
        await table.upsert_entity(
            {"PartitionKey": f"p{i % 3}", "RowKey": f"{i:03d}", "Name": f"Ann Lee{i}", "Fax": 1}
        )
        await other.upsert_entity({"PartitionKey": "p", "RowKey": f"{i:03d}", "X": 1})
    await table.upsert_entity({"PartitionKey": "p0", "RowKey": "new", "FullName": "Bo Ek"})
    migrations = [
        Migration("0001_full_name", "folk", [rename("Name", "FullName")]),
        # reads the property the first one writes: of the rows as they are now, only
        # the application's new row has it
        Migration("0002_initials", "folk", [backfill("Initials", initials)]),
        # another table: not chained to the migrations of "folk"
        Migration("0003_other", "other", [backfill("Initials", initials)]),
        Migration("0004_drop_fax", "folk", [drop("Fax")]),
    ]
    first, second, third, fourth = await run_migrations(service, migrations, dry_run=True)
    assert (first.pending, first.written, first.scanned) == (30, 0, 31)
    # given the rename, every row gets its initials (the new row too)
    assert (second.pending, second.written, second.scanned) == (31, 0, 31)
    sample = next(s for s in second.samples if "'000'" in s)
    assert "'FullName': 'Ann Lee0'" in sample.split(" -> ")[0]  # the row after 0001
    assert "'Initials': 'AL'" in sample.split(" -> ")[1]
    assert (third.pending, third.scanned) == (0, 30)
    assert fourth.pending == 30
    assert all("'Name'" not in s.split(" -> ")[0] for s in fourth.samples)
    assert all("'Initials'" in s.split(" -> ")[0] for s in fourth.samples)
    # nothing was written
    stored = [e async for e in table.list_entities()]
    assert sum("Name" in e for e in stored) == 30
    assert not any("Initials" in e for e in stored)
    # run alone, the second sees the rows as they are
    [alone] = await run_migrations(service, migrations[1:2], dry_run=True)
    assert alone.pending == 1


async def test_a_dry_run_chains_a_rekey(service: azt.TableServiceClient) -> None:
    """A migration after a pending re-key plans the rows at their new keys."""
    table = await service.create_table("moved")
    for i in range(10):
        await table.upsert_entity({"PartitionKey": "p", "RowKey": f"{i}", "Name": f"n{i}"})

    def keys(row: Any) -> tuple[str, str]:
        pk = row["PartitionKey"]
        return (pk if pk.startswith("b-") else "b-" + pk, row["RowKey"])

    migrations = [
        Migration("0001_bucket", "moved", [rekey(keys, "bucket prefix")]),
        Migration("0002_full_name", "moved", [rename("Name", "FullName")]),
    ]
    first, second = await run_migrations(service, migrations, dry_run=True)
    assert (first.pending, second.pending) == (10, 10)
    assert all(s.startswith("'p'/") and "-> 'b-p'/" in s for s in first.samples)
    assert all(s.startswith("'b-p'/") for s in second.samples)
    assert [e["PartitionKey"] async for e in table.list_entities()] == ["p"] * 10
