"""Static types of the conveniences, checked by ``mypy --strict`` (``assert_type``); negative
lines carry ``# type: ignore[<code>]`` so that mypy fails if those errors disappear."""

from __future__ import annotations

from typing import Any, assert_type

import azt
from azt import DynamicEntity, Entity, Prop, Query, QueryPage, TableContext, prop
from azt.context import ContextQuery
from azt.edm import TableEntity


class Review(Entity, table="reviews"):
    stars: Prop[int] = prop(default=0)


async def _client_core(table: azt.TableClient, review: Review, bag: DynamicEntity) -> None:
    assert_type(await table.insert_entity(review), azt.WriteResult)
    assert_type(await table.insert_entity(bag), azt.WriteResult)
    assert_type(await table.insert_entity({"PartitionKey": "p", "RowKey": "r"}), azt.WriteResult)
    assert_type(await table.update_entity(review, etag="*"), azt.WriteResult)
    assert_type(await table.upsert_entity(bag), azt.WriteResult)
    assert_type(await table.delete_entity(review), azt.WriteResult)
    assert_type(await table.delete_entity("p", "r", etag="*"), azt.WriteResult)
    assert_type(await table.get_entity("p", "r"), TableEntity)
    assert_type(await table.get_entity("p", "r", entity_class=Review), Review)
    assert_type(await table.get_entity("p", "r", entity_class=DynamicEntity), DynamicEntity)
    await table.insert_entity(42)  # type: ignore[arg-type]
    await table.delete_entity("p")  # type: ignore[call-overload]
    await table.get_entity("p", "r", entity_class=dict)  # type: ignore[call-overload]
    batch = table.batch()
    batch.create(review)
    batch.update(bag)
    batch.delete(review)


async def _queries(table: azt.TableClient, service: azt.TableServiceClient) -> None:
    q = Query(Review, service)
    assert_type(q, Query[Review])
    assert_type(Query(Review, "reviews").using(service), Query[Review])
    assert_type(Query(Review, table), Query[Review])
    assert_type(await q.count(), int)
    assert_type(await q.first_page(), QueryPage[Review])
    assert_type(await q.delete(dry_run=True), list[Review])
    assert_type(q.table_name, str | None)
    Query(Review, 42)  # type: ignore[arg-type]


def _context(ctx: TableContext, table: azt.TableClient, review: Review) -> None:
    ctx.add(review)
    ctx.add("reviews", review)
    ctx.add(table, review)
    ctx.attach(review)
    ctx.attach(review, "*")
    ctx.attach(review, etag=None)
    ctx.attach(table, review, "*")
    assert_type(ctx.query(Review), ContextQuery[Review])
    assert_type(ctx.query(Review, table), ContextQuery[Review])
    ctx.add(42, review)  # type: ignore[call-overload]


def test_the_checks_are_importable() -> None:
    checks: list[Any] = [_client_core, _queries, _context]
    assert all(callable(c) for c in checks)
