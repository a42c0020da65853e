"""Static typing of the blocking API (``azt.sync``), checked by ``mypy --strict``
(tests/typing/test_mypy.py): the same result types as the async API, without awaitables;
iterators where the async API has async iterators; the blocking twins where it returns
clients, pagers, queries and contexts. Negative lines (``# type: ignore[code]``) prove
that misuse is a type error (``warn_unused_ignores`` fails if one stops being one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, assert_type

import azt
import azt.sync
from azt import (
    AccessPolicies,
    ContinuationToken,
    Entity,
    Page,
    Prop,
    QueryPage,
    SaveChangesResult,
    ServiceProperties,
    ServiceStats,
    TableBatch,
    TableEntity,
    TableItem,
    WriteResult,
    prop,
)
from azt.sync import ContextQuery, Pager, Query, TableClient, TableContext, TableServiceClient


class Movie(Entity):
    rating: Prop[float] = prop(default=0.0)


def _clients(conn: str) -> None:  # type-checked, not run (needs a server)
    service = TableServiceClient.from_connection_string(conn)
    assert_type(service, TableServiceClient)
    with service as entered:
        assert_type(entered, TableServiceClient)
    assert_type(service.create_table("t"), TableClient)
    assert_type(service.create_table_if_not_exists("t"), TableClient)
    assert_type(service.get_table_client("t"), TableClient)
    assert_type(service.delete_table_if_exists("t"), bool)
    assert_type(service.list_tables(), Pager[TableItem])
    assert_type(list(service.query_tables("TableName eq 'a'")), list[TableItem])
    assert_type(service.get_service_properties(), ServiceProperties)
    assert_type(service.set_service_properties(ServiceProperties()), WriteResult)
    assert_type(service.get_service_stats(), ServiceStats)
    assert_type(service.with_options(server_timeout=3), TableServiceClient)
    assert_type(service.close(), None)

    table = TableClient.from_connection_string(conn, "t")
    assert_type(table.table_name, str)
    assert_type(table.insert_entity({"PartitionKey": "a", "RowKey": "b"}), WriteResult)
    assert_type(table.get_entity("a", "b"), TableEntity)
    assert_type(table.get_access_policy(), AccessPolicies)
    # azure-data-tables' spellings (docs/porting-azure-data-tables.md)
    assert_type(table.create_entity({"PartitionKey": "a", "RowKey": "b"}), WriteResult)
    assert_type(next(iter(service.list_tables())).name, str)
    assert_type(table.query_entities(query_filter="a eq 1", select="A,B"), Pager[TableEntity])
    assert_type(table.get_entity("a", "b").metadata["etag"], Any)
    assert_type(
        table.submit_transaction([("create", {"PartitionKey": "a", "RowKey": "b"})]),
        list[WriteResult],
    )
    pager = table.query_entities("PartitionKey eq 'a'")
    assert_type(pager, Pager[TableEntity])
    assert_type(pager.by_page(), Iterator[Page[TableEntity]])
    assert_type(pager.first_page(), Page[TableEntity])
    assert_type(pager.to_list(), list[TableEntity])
    assert_type(iter(pager), Iterator[TableEntity])
    decoded = table.query_entities(page_decoder=lambda rows: [len(r) for r in rows])
    assert_type(decoded, Pager[int])
    assert_type(table.list_entities(continuation=ContinuationToken()), Pager[TableEntity])
    batch = table.batch()
    assert_type(batch, TableBatch)
    assert_type(table.submit_transaction(batch), list[WriteResult])
    assert_type(table.closed, bool)
    table.get_entity("a")  # type: ignore[call-overload]
    table.get_entity("a", "b").metadata = 1  # type: ignore[assignment]
    pager.__aiter__()  # type: ignore[attr-defined]
    table.aclose()  # type: ignore[attr-defined]


def _queries(table: TableClient) -> None:  # type-checked, not run
    q = Query(Movie, table).where(Movie.rating >= 4).take(5)
    assert_type(q, Query[Movie])
    assert_type(q.first(), Movie | None)
    assert_type(q.one_or_none(), Movie | None)
    assert_type(q.to_list(), list[Movie])
    assert_type(iter(q), Iterator[Movie])
    assert_type(q.pages(), Iterator[QueryPage[Movie]])
    assert_type(Query(Movie).using(table), Query[Movie])
    Query(Movie, azt.TableClient("http://h/a", "t"))  # type: ignore[arg-type]


class Review(Entity, table="reviews"):
    stars: Prop[int] = prop(default=0)


def _entity_objects(table: TableClient, review: Review, bag: azt.DynamicEntity) -> None:
    # type-checked, not run: entity objects wherever the async client takes them
    assert_type(table.insert_entity(review), WriteResult)
    assert_type(table.insert_entity(bag), WriteResult)
    assert_type(table.update_entity(review, etag="*"), WriteResult)
    assert_type(table.update_entity(review, allow_property_loss=True), WriteResult)
    assert_type(table.upsert_entity(bag), WriteResult)
    assert_type(table.delete_entity(review), WriteResult)
    assert_type(table.delete_entity("p", "r", etag="*"), WriteResult)
    assert_type(table.get_entity("p", "r", entity_class=Review), Review)
    assert_type(table.get_entity("p", "r", entity_class=azt.DynamicEntity), azt.DynamicEntity)
    assert_type(table.get_entity("p", "r", select=["stars"], entity_class=Review), Review)
    table.insert_entity(42)  # type: ignore[arg-type]
    table.delete_entity("p")  # type: ignore[call-overload]
    table.get_entity("p", "r", entity_class=dict)  # type: ignore[call-overload]


def _query_conveniences(table: TableClient, service: TableServiceClient) -> None:
    # type-checked, not run: a query reads a sync table client, service client or name
    q = Query(Review, service)
    assert_type(q, Query[Review])
    assert_type(Query(Review, "reviews").using(service), Query[Review])
    assert_type(Query(Review, table), Query[Review])
    assert_type(Query(Review, "reviews"), Query[Review])
    assert_type(q.count(), int)
    assert_type(q.first_page(), QueryPage[Review])
    assert_type(q.delete(dry_run=True), list[Review])
    assert_type(q.delete(), list[Review])
    assert_type(q.table_name, str | None)
    Query(Review, 42)  # type: ignore[arg-type]
    Query(Review, azt.TableServiceClient("http://h/a"))  # type: ignore[arg-type]
    Query(Review).using(azt.TableClient("http://h/a", "t"))  # type: ignore[arg-type]


def _context_conveniences(ctx: TableContext, table: TableClient, review: Review) -> None:
    # type-checked, not run: tables named by the entity class
    ctx.add(review)
    ctx.add("reviews", review)
    ctx.add(table, review)
    ctx.attach(review)
    ctx.attach(review, "*")
    ctx.attach(table, review, "*")
    assert_type(ctx.query(Review), ContextQuery[Review])
    assert_type(ctx.query(Review, table), ContextQuery[Review])
    assert_type(ctx.save_changes(allow_property_loss=True), SaveChangesResult)
    ctx.add(42, review)  # type: ignore[call-overload]
    ctx.add(azt.TableClient("http://h/a", "t"), review)  # type: ignore[call-overload]


def _context(service: TableServiceClient) -> None:  # type-checked, not run
    ctx = TableContext(service)
    assert_type(ctx.service, TableServiceClient)
    assert_type(ctx.save_changes(), SaveChangesResult)
    assert_type(ctx.get(Movie, "movies", "a", "b"), Movie | None)
    got = ctx.get(Movie, "movies", "a", "b", ignore_resource_not_found=False)
    assert_type(got, Movie)
    cq = ctx.query(Movie, "movies").where(Movie.rating > 3)
    assert_type(cq, ContextQuery[Movie])
    assert_type(cq.first(), Movie | None)
    assert_type(cq.to_list(), list[Movie])
    assert_type(iter(cq), Iterator[Movie])
    assert_type(cq.query, Query[Movie])
    dynamic: Any = ctx.query(azt.DynamicEntity, "movies").first()
    assert dynamic is None or isinstance(dynamic, azt.DynamicEntity)
    TableContext(azt.TableServiceClient("http://h/a"))  # type: ignore[arg-type]


def test_sync_names_are_the_blocking_twins() -> None:
    assert TableClient.get_entity.__doc__ is not None
    assert "await" not in TableClient.get_entity.__doc__
    assert azt.sync.TableServiceClient is TableServiceClient
