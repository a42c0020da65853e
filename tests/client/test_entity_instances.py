"""The client core takes entity objects (``azt.Entity``, ``azt.DynamicEntity``) wherever it
takes entity mappings, writes the new ETag and Timestamp back into them, and reads into
them with ``get_entity(..., entity_class=...)``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import azt
from azt import DynamicEntity, Entity, Int64, Prop, UpdateMode, prop


class Film(Entity):
    """A declarative entity used by these tests."""

    rating: Prop[float] = prop(default=0.0)
    views: Prop[Int64] = prop(default=0)
    title: Prop[str | None] = prop(name="Title", default=None)


def _recent(ts: datetime | None) -> None:
    assert ts is not None
    assert abs((datetime.now(UTC) - ts).total_seconds()) < 300


async def test_insert_writes_back_etag_and_timestamp(table: azt.TableClient) -> None:
    film = Film("Action", "Heat", rating=4.5, views=2**40, title="Heat")
    result = await table.insert_entity(film)
    assert film.ETag == result.etag is not None
    assert film.Timestamp == result.timestamp
    _recent(film.Timestamp)
    stored = await table.get_entity("Action", "Heat")
    assert stored.metadata.etag == film.ETag
    assert stored.metadata.timestamp == film.Timestamp
    # encoded through the ORM codec: wire name, Int64 type, None omitted
    assert stored["Title"] == "Heat"
    assert stored["views"] == 2**40
    assert stored.edm_types.get("views") is azt.EdmType.INT64


async def test_insert_return_content_and_none_values(table: azt.TableClient) -> None:
    film = Film("Action", "Ronin")
    result = await table.insert_entity(film, return_content=True)
    assert result.entity is not None
    assert "Title" not in result.entity
    assert film.ETag == result.etag


async def test_update_is_conditional_on_the_objects_etag(table: azt.TableClient) -> None:
    film = Film("Action", "Heat", rating=4.0)
    await table.insert_entity(film)
    first_etag = film.ETag
    stale = await table.get_entity("Action", "Heat", entity_class=Film)
    assert stale.ETag == first_etag
    film.rating = 5.0
    await table.update_entity(film, UpdateMode.REPLACE)
    assert film.ETag != first_etag
    # the stale copy's ETag makes its update fail instead of overwriting the newer rating
    stale.rating = 1.0
    with pytest.raises(azt.PreconditionFailedError):
        await table.update_entity(stale)
    assert stale.ETag == first_etag  # nothing written back on failure
    assert (await table.get_entity("Action", "Heat", entity_class=Film)).rating == 5.0
    # an explicit etag wins: "*" overwrites
    await table.update_entity(stale, etag="*")
    assert stale.ETag is not None
    assert stale.ETag != film.ETag
    assert (await table.get_entity("Action", "Heat"))["rating"] == 1.0


async def test_update_of_an_object_without_etag_is_unconditional(table: azt.TableClient) -> None:
    await table.insert_entity(Film("Action", "Heat", rating=4.0))
    fresh = Film("Action", "Heat", rating=3.0)  # built, not read: no ETag
    await table.update_entity(fresh, UpdateMode.MERGE)
    assert fresh.ETag is not None
    with pytest.raises(azt.EntityNotFoundError):
        await table.update_entity(Film("Action", "Missing"))


async def test_upsert_writes_back(table: azt.TableClient) -> None:
    film = Film("Drama", "Babel", rating=3.5)
    r1 = await table.upsert_entity(film, UpdateMode.REPLACE)
    assert film.ETag == r1.etag
    assert film.Timestamp == r1.timestamp
    film.rating = 4.0
    r2 = await table.upsert_entity(film)
    assert film.ETag == r2.etag != r1.etag


async def test_delete_an_object_uses_its_keys_and_etag(table: azt.TableClient) -> None:
    film = Film("Action", "Heat")
    await table.insert_entity(film)
    stale_etag = film.ETag
    await table.upsert_entity(Film("Action", "Heat", rating=2.0))  # changes the ETag
    with pytest.raises(azt.PreconditionFailedError):
        await table.delete_entity(film)
    assert film.ETag == stale_etag
    await table.delete_entity(film, etag="*")
    with pytest.raises(azt.EntityNotFoundError):
        await table.get_entity("Action", "Heat")


async def test_delete_a_mapping_or_by_keys(table: azt.TableClient) -> None:
    await table.insert_entity({"PartitionKey": "p", "RowKey": "1"})
    await table.insert_entity({"PartitionKey": "p", "RowKey": "2"})
    read = await table.get_entity("p", "1")
    await table.delete_entity(read)  # a mapping: unconditional unless given an etag
    await table.delete_entity("p", "2")
    assert await table.list_entities().to_list() == []


async def test_dynamic_entity_round_trip(table: azt.TableClient) -> None:
    member = DynamicEntity("m-1", "Member", Name="Ann", Views=azt.Typed(5, azt.EdmType.INT64))
    await table.insert_entity(member)
    assert member.ETag is not None
    _recent(member.Timestamp)
    back = await table.get_entity("m-1", "Member", entity_class=DynamicEntity)
    assert isinstance(back, DynamicEntity)
    assert back["Name"] == "Ann"
    assert back.types["Views"] is azt.EdmType.INT64
    assert back.ETag == member.ETag
    back["Name"] = "Bea"
    await table.update_entity(back)
    assert back.ETag != member.ETag
    with pytest.raises(azt.PreconditionFailedError):
        await table.delete_entity(member)
    await table.delete_entity(back)


async def test_get_entity_with_select_into_a_class(table: azt.TableClient) -> None:
    await table.insert_entity(Film("Action", "Heat", rating=4.5, title="Heat"))
    film = await table.get_entity("Action", "Heat", select=["rating"], entity_class=Film)
    assert (film.PartitionKey, film.RowKey, film.rating) == ("Action", "Heat", 4.5)
    assert film.ETag is not None
    assert film.Timestamp is not None
    with pytest.raises(AttributeError):
        _ = film.title  # outside the projection: unset, not a made-up default


async def test_transaction_with_objects_writes_back(table: azt.TableClient) -> None:
    keep = Film("Action", "Heat", rating=1.0)
    await table.insert_entity(keep)
    old_etag = keep.ETag
    new = Film("Action", "Ronin", rating=4.0)
    dyn = DynamicEntity("Action", "Alien", Year=1979)
    gone = Film("Action", "Gone")
    await table.insert_entity(gone)
    batch = table.batch()
    batch.create(new)
    keep.rating = 2.0
    batch.update(keep, UpdateMode.REPLACE)  # If-Match: keep.ETag
    batch.upsert(dyn)
    batch.delete(gone)
    results = await table.submit_transaction(batch)
    assert new.ETag == results[0].etag is not None
    assert keep.ETag == results[1].etag != old_etag
    assert dyn.ETag == results[2].etag is not None
    assert new.Timestamp == results[0].timestamp
    names = sorted(e["RowKey"] for e in await table.list_entities().to_list())
    assert names == ["Alien", "Heat", "Ronin"]


async def test_transaction_fails_on_a_stale_object_and_writes_nothing_back(
    table: azt.TableClient,
) -> None:
    film = Film("Action", "Heat")
    await table.insert_entity(film)
    stale = film.ETag
    await table.upsert_entity(Film("Action", "Heat", rating=3.0))
    other = Film("Action", "Ronin")
    batch = table.batch()
    batch.create(other)
    batch.update(film)
    with pytest.raises(azt.TransactionError) as info:
        await table.submit_transaction(batch)
    assert info.value.index == 1
    assert other.ETag is None
    assert film.ETag == stale


async def test_operations_list_with_objects(table: azt.TableClient) -> None:
    film = Film("Action", "Heat")
    batch = table.batch()
    batch.create(film)
    # the prepared operations keep their source object when re-added
    results = await table.submit_transaction(list(batch.operations))
    assert film.ETag == results[0].etag is not None


async def test_bad_arguments_are_typed_errors(table: azt.TableClient) -> None:
    with pytest.raises(azt.ValidationError, match="mapping or an entity object"):
        await table.insert_entity(42)  # type: ignore[arg-type]
    with pytest.raises(azt.ValidationError, match="one entity, not both"):
        await table.delete_entity(Film("a", "b"), "b")  # type: ignore[call-overload]
    with pytest.raises(azt.ValidationError, match="row_key"):
        await table.delete_entity("a")  # type: ignore[call-overload]
    with pytest.raises(azt.ValidationError, match="entity_class"):
        await table.get_entity("a", "b", entity_class=dict)  # type: ignore[call-overload]
    with pytest.raises(azt.ValidationError, match="etag"):
        await table.update_entity(Film("a", "b"), etag="")
    batch = table.batch()
    with pytest.raises(azt.ValidationError, match="one entity"):
        batch.delete(Film("a", "b"), "b")
    assert len(batch) == 0
