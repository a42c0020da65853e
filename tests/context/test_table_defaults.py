"""The context takes a table name or a ``TableClient`` alike, and, for entity classes that
name their table, no table at all (``ctx.add(review)``, ``ctx.attach(review, "*")``,
``ctx.query(Review)``)."""

from __future__ import annotations

import pytest

import azt
from azt import Entity, Prop, TableContext, prop

from .conftest import entity_exists, fresh_name, stored_entity

REVIEWS = fresh_name("reviews")


class Review(Entity, table=REVIEWS):
    """Names its table (a fresh name per test run)."""

    stars: Prop[int] = prop(default=0)


class Draft(Review):
    """Inherits the table of its base."""


class Note(Entity):
    """Names no table."""

    text: Prop[str] = prop(default="")


@pytest.fixture
async def reviews(service: azt.TableServiceClient) -> str:
    await service.create_table_if_not_exists(REVIEWS)
    table = service.get_table_client(REVIEWS)
    for e in await table.list_entities().to_list():
        await table.delete_entity(e)
    return REVIEWS


async def test_add_attach_query_use_the_class_table(
    service: azt.TableServiceClient, reviews: str
) -> None:
    ctx = TableContext(service)
    ctx.add(Review("Heat", "r1", stars=4))
    ctx.add(Draft("Heat", "r2", stars=2))
    await ctx.save_changes()
    assert (await stored_entity(service, reviews, "Heat", "r1"))["stars"] == 4
    assert (await stored_entity(service, reviews, "Heat", "r2"))["stars"] == 2

    other = TableContext(service)
    q = other.query(Review).where(Review.stars >= 3)
    assert q.table == reviews
    found = await q.to_list()
    assert [r.RowKey for r in found] == ["r1"]
    found[0].stars = 5
    await other.save_changes()
    assert (await stored_entity(service, reviews, "Heat", "r1"))["stars"] == 5

    third = TableContext(service)
    doomed = Review("Heat", "r2")
    third.attach(doomed, "*")
    assert third.etag_of(doomed) == "*"
    third.delete(doomed)
    await third.save_changes()
    assert not await entity_exists(service, reviews, "Heat", "r2")

    fourth = TableContext(service)
    kept = Review("Heat", "r1")
    fourth.attach(kept, etag=None)
    assert fourth.etag_of(kept) is None


async def test_explicit_table_wins_and_table_clients_are_accepted(
    service: azt.TableServiceClient, table: str, reviews: str
) -> None:
    client = service.get_table_client(table)
    ctx = TableContext(service)
    ctx.add(table, Review("Heat", "x1", stars=1))
    ctx.add(client, Review("Heat", "x2", stars=2))
    ctx.attach(client, Review("Heat", "x3"), "*")
    await ctx.save_changes()
    assert await entity_exists(service, table, "Heat", "x1")
    assert await entity_exists(service, table, "Heat", "x2")
    assert not await entity_exists(service, reviews, "Heat", "x1")
    q = TableContext(service).query(Review, client)
    assert q.table == table
    assert len(await q.to_list()) == 2
    got = await TableContext(service).get(Review, client, "Heat", "x2")
    assert got is not None
    assert got.stars == 2


async def test_no_table_is_a_clear_error_at_the_call(service: azt.TableServiceClient) -> None:
    ctx = TableContext(service)
    with pytest.raises(azt.ValidationError, match="Note names none"):
        ctx.add(Note("a", "b"))
    with pytest.raises(azt.ValidationError, match="Note names none"):
        ctx.attach(Note("a", "b"), "*")
    with pytest.raises(azt.ValidationError, match="names none"):
        ctx.query(Note)
    with pytest.raises(azt.ValidationError, match="names none"):
        ctx.query(azt.DynamicEntity)
    with pytest.raises(azt.ValidationError, match="no entity given"):
        ctx.attach("notes")
    with pytest.raises(azt.ValidationError, match="one etag"):
        ctx.attach(Review("a", "b"), "*", "*")  # type: ignore[call-overload]
    with pytest.raises(azt.ValidationError, match="etag must be"):
        ctx.attach(Review("a", "b"), 5)  # type: ignore[call-overload]
    with pytest.raises(azt.ValidationError, match="a name or a TableClient"):
        ctx.add(42, Note("a", "b"))  # type: ignore[call-overload]
    assert len(ctx.entries()) == 0


async def test_a_table_client_of_another_account_is_refused(
    service: azt.TableServiceClient,
) -> None:
    foreign = azt.TableClient(
        "http://127.0.0.1:9/otheraccount", "notes", azt.SasCredential("sv=2019-02-02&sig=x")
    )
    ctx = TableContext(service)
    with pytest.raises(azt.ValidationError, match="endpoint"):
        ctx.add(foreign, Note("a", "b"))
    assert len(ctx.entries()) == 0
    await foreign.aclose()
