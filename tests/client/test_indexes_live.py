"""Secondary indexes end to end against the live target (the stub, or Azurite in the
Azurite leg): rows in the partition and across partitions (reserved U+FFFD keys, intent
rows with their JSON text), lookups through both, and verify/repair."""

from __future__ import annotations

import pytest

import azt
from azt.context import SaveChangesOptions, TableContext
from azt.entity import Entity, Prop, prop
from azt.indexes import Index, repair_index, verify_index
from azt.query import PlanKind, Query

pytestmark = pytest.mark.live


class Member(Entity):
    email: Prop[str | None] = prop(default=None)
    team: Prop[str] = prop(default="")

    class Meta:
        indexes = (
            Index("by_team", "team"),
            Index("by_email", "email", across_partitions=True),
        )


async def test_indexes_in_and_across_partitions(
    service: azt.TableServiceClient, table: azt.TableClient
) -> None:
    ctx = TableContext(service)
    for i in range(6):
        ctx.add(table.table_name, Member(f"org{i % 2}", f"u{i}", email=f"u{i}@x.com", team="red"))
    await ctx.save_changes(SaveChangesOptions.BATCH)
    rows = [e async for e in table.list_entities()]
    assert len(rows) == 6 * 3  # main, by_team, by_email; no intent left
    q = Query(Member, table).where(Member.email == "u3@x.com")
    assert q.explain().kind is PlanKind.INDEX
    [found] = await q.to_list()
    assert (found.PartitionKey, found.RowKey) == ("org1", "u3")

    found.email = "new@x.com"
    found.team = "blue"
    await table.update_entity(found)
    assert await Query(Member, table).where(Member.email == "u3@x.com").to_list() == []
    [moved] = await Query(Member, table).where(Member.email == "new@x.com").to_list()
    assert moved.team == "blue"
    blue = Query(Member, table).where(Member.PartitionKey == "org1", Member.team == "blue")
    assert [m.RowKey for m in await blue.to_list()] == ["u3"]

    await table.delete_entity("org0", "u0")  # a raw delete: its index rows are orphans
    report = await verify_index(table, Member)
    assert report.orphans == 2
    assert (await repair_index(table, Member)).deleted == 2
    assert (await verify_index(table, Member)).consistent
    assert len(await Query(Member, table).to_list()) == 5
