"""An index that holds chosen properties (``holds=("title", "views")``, between keys only
and a full copy): a lookup that selects and tests only those reads the index rows alone
(``explain()`` says so); one that needs more reads the main rows as a key-only index
does. Every write path keeps the copies exact; ``verify_index`` finds a stale one and
``build_index`` refreshes it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt import TableClient, TableServiceClient, UpdateMode
from azt._orm.indexes import index_row
from azt.edm import EdmType, TableEntity
from azt.entity import Entity, Prop, prop
from azt.indexes import Holds, Index, IndexDef, build_index, encode_part, verify_index
from azt.query import PlanKind, Query
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits


class Article(Entity):
    category: Prop[str] = prop(default="")
    title: Prop[str] = prop(default="")
    views: Prop[int] = prop(default=0)
    body: Prop[str] = prop(default="")

    class Meta:
        indexes = (Index("by_cat", "category", holds=("title", "views")),)


@pytest.fixture
async def env() -> AsyncIterator[tuple[TableClient, Throttle, list[Article]]]:
    counter = Throttle(ThrottleLimits(partition_rate=None, account_rate=None))
    async with (
        StubServer(StubConfig(throttle=counter)) as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        table = await service.create_table("articles")
        articles = [
            Article(
                "blog", f"a{i:04d}", category=f"c{i % 10}", title=f"T{i}", views=i, body="x" * 2000
            )
            for i in range(400)
        ]
        async with table.batch_writer() as writer:
            for a in articles:
                await writer.insert(a)
        assert all(o.ok for o in writer.results)
        yield table, counter, articles


async def read_with(counter: Throttle, q: Query[Any]) -> tuple[list[Any], int]:
    before = counter.stats.admitted_entities
    found = await q.to_list()
    return found, counter.stats.admitted_entities - before


async def test_a_projection_answers_from_its_rows(env: Any) -> None:
    table, counter, articles = env
    A = Article
    q = Query(A, table).where(A.PartitionKey == "blog", A.category == "c3").select(A.title)
    plan = q.explain()
    assert plan.kind is PlanKind.INDEX
    assert plan.holds == "properties"
    assert "the rows read are the results (a copy of the properties needed)" in str(plan)
    found, read = await read_with(counter, q)
    want = sorted(a.title for a in articles if a.category == "c3")
    assert sorted(a.title for a in found) == want
    assert read == len(want)  # the 40 index rows, no main row

    held_test = q.where(A.views >= 200)
    assert held_test.explain().holds == "properties"
    found, read = await read_with(counter, held_test)
    assert sorted(a.title for a in found) == sorted(
        a.title for a in articles if a.category == "c3" and a.views >= 200
    )

    needs_more = Query(A, table).where(A.PartitionKey == "blog", A.category == "c3")
    plan = needs_more.explain()
    assert plan.holds == "keys"
    assert "then point reads of the main rows" in str(plan)
    found, read = await read_with(counter, needs_more)
    assert sorted(a.RowKey for a in found) == sorted(
        a.RowKey for a in articles if a.category == "c3"
    )
    assert all(a.body == "x" * 2000 for a in found)
    assert read == 2 * len(want)  # the index rows, then each main row

    body_test = q.where(A.body == "y")
    assert body_test.explain().holds == "keys"  # body is not held: tested on main rows
    assert await body_test.to_list() == []


async def test_writes_keep_the_copies_and_verify_finds_a_stale_one(env: Any) -> None:
    table, _, _ = env
    A = Article
    [one] = await Query(A, table).where(A.PartitionKey == "blog", A.RowKey == "a0007").to_list()
    one.title = "renamed"
    await table.update_entity(one, mode=UpdateMode.MERGE)
    one.views = 999
    one.category = "c0"  # the row moves
    await table.update_entity(one, mode=UpdateMode.REPLACE)
    assert (await verify_index(table, A)).consistent
    q = Query(A, table).where(A.PartitionKey == "blog", A.category == "c0").select(A.title, A.views)
    assert ("renamed", 999) in [(a.title, a.views) for a in await q.to_list()]

    rows = [e async for e in table.query_entities("PartitionKey eq 'blog' and RowKey ge 'a'")]
    row = next(r for r in rows if r["RowKey"].endswith(";a0011"))
    await table.upsert_entity({**row, "title": "stale"}, mode=UpdateMode.REPLACE)
    report = await verify_index(table, A)
    assert (report.stale, report.consistent) == (1, False)
    assert (await build_index(table, A)).written == 1
    assert (await verify_index(table, A)).consistent


def test_a_projection_names_properties_of_the_class() -> None:
    with pytest.raises(TypeError, match="names at least one property"):
        Index("x", "category", holds=())
    with pytest.raises(TypeError, match="names at least one property"):
        Index("x", "category", holds="properties")
    with pytest.raises(TypeError, match="not a data property"):

        class Bad(Entity):
            category: Prop[str] = prop(default="")

            class Meta:
                indexes = (Index("x", "category", holds=("nope",)),)


def test_a_held_copy_keeps_each_property_s_edm_type() -> None:
    # An Int64 that fits 32 bits is stored as Edm.Int64 only if its type travels with it:
    # untyped, the copy would be an Int32, which a typed filter (views eq 5L) never matches.
    d = IndexDef(
        "by_cat",
        ("category",),
        ("category",),
        (encode_part,),
        Holds.PROPERTIES,
        held=("views", "title"),
        held_wires=("views", "title"),
    )
    main = TableEntity(PartitionKey="p", RowKey="r", category="c", views=5, title="T", body="b")
    main.edm_types = {"views": EdmType.INT64}
    row = index_row(d, "k", main)
    assert dict(row) == {"PartitionKey": "p", "RowKey": "k", "views": 5, "title": "T"}
    assert row.edm_types == {"views": EdmType.INT64}
    # a held property the entity lacks is left out, with no type of its own
    row = index_row(d, "k", TableEntity(PartitionKey="p", RowKey="r", category="c", title="T"))
    assert dict(row) == {"PartitionKey": "p", "RowKey": "k", "title": "T"}
    assert not row.edm_types
