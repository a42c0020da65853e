"""Indexed entities in the bulk loader: each entity goes with its index rows (and the
intent row of an index across partitions) in one transaction, partitions grouped and in
parallel; the index is verified clean afterwards (``verify_index``), under throttling
and under injected faults, for inserts, updates that move index rows, and deletes."""

from __future__ import annotations

from typing import Any

import pytest

from azt.bulk import BulkOptions, load
from azt.indexes import verify_index
from azt.query import PlanKind, Query
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits
from tests.bulk.faults import chaos
from tests.bulk.support import stub, table_on
from tests.indexes.models import Item, Member

OPTIONS = BulkOptions(linger=0.01)


def items(partitions: int, per: int) -> list[Item]:
    colors = ["red", "green", "blue"]
    return [
        Item(
            f"p{p:02d}",
            f"r{r:04d}",
            color=colors[(p + r) % 3],
            size=r % 7,
            tag=None if r % 4 else f"t{r % 3}",
        )
        for r in range(per)
        for p in range(partitions)
    ]


async def index_clean(table: Any, cls: type) -> None:
    report = await verify_index(table, cls)
    assert report.consistent, report.problems[:5]


async def test_an_indexed_bulk_load_under_throttling_is_verified_clean() -> None:
    throttle = Throttle(ThrottleLimits(partition_rate=1000, account_rate=10000))
    data = items(20, 60)  # 1,200 entities; with their index rows about 3,100 operations
    async with stub(throttle=throttle) as server, table_on(server, "indexed") as table:
        await table.create_table()
        sent: list[int] = []
        real = type(table).submit_transaction

        async def spy(self: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
            written = await real(self, batch, *args, **kwargs)
            sent.append(len(batch))  # a transaction the service applied
            return written

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(type(table), "submit_transaction", spy)
            result = await load(table, data, options=OPTIONS)
        assert result.ok, result.failures[:3]
        assert result.written == len(data)
        assert all(e.ETag for e in data)  # each object got its ETag
        assert max(sent) <= 100
        # every operation applied once, in whole transactions: the stub's count agrees
        assert sum(sent) == throttle.stats.admitted_entities - 1  # 1: the table's creation
        assert sum(sent) > 2 * len(data)  # the index rows went along
        await index_clean(table, Item)
        q = Query(Item, table).where(Item.PartitionKey == "p03", Item.color == "red")
        assert q.explain().kind is PlanKind.INDEX
        assert sorted(i.RowKey for i in await q.to_list()) == sorted(
            i.RowKey for i in data if i.PartitionKey == "p03" and i.color == "red"
        )

        # updates that move index rows, read first (the objects know their stored values)
        stored = await Query(Item, table).where(Item.PartitionKey == "p05").to_list()
        for obj in stored:
            obj.color = "violet"
            obj.tag = "moved"
        moved = await load(table, stored, kind="replace", options=OPTIONS)
        assert moved.ok
        assert moved.written == len(stored)
        await index_clean(table, Item)
        q = Query(Item, table).where(Item.PartitionKey == "p05", Item.color == "violet")
        assert len(await q.to_list()) == len(stored)

        # deletes take the index rows with them
        gone = await load(table, stored, kind="delete", options=OPTIONS)
        assert gone.ok
        await index_clean(table, Item)
        left = [e async for e in table.query_entities("PartitionKey eq 'p05'")]
        assert left == []


async def test_an_indexed_bulk_load_under_faults_is_verified_clean() -> None:
    inj = chaos(seed=11)
    data = items(10, 40)
    async with stub(faults=inj) as server, table_on(server, "chaos") as table:
        with inj.suspended():
            await table.create_table()
        result = await load(table, data, options=OPTIONS)
        with inj.suspended():
            assert result.ok, result.failures[:3]
            await index_clean(table, Item)
            assert len(await Query(Item, table).to_list()) == len(data)


async def test_an_index_across_partitions_follows_its_intents() -> None:
    members = [
        Member(f"org{i % 5}", f"u{i:03d}", email=f"user{i}@example.com", team=f"t{i % 3}")
        for i in range(150)
    ]
    async with stub() as server, table_on(server, "members") as table:
        await table.create_table()
        result = await load(table, members, options=OPTIONS)
        assert result.ok, result.failures[:3]
        report = await verify_index(table, Member)
        assert report.consistent, report.problems[:5]
        assert report.intents == 0
        [found] = await Query(Member, table).where(Member.email == "user42@example.com").to_list()
        assert (found.PartitionKey, found.RowKey) == ("org2", "u042")
