"""TableContext transitions against the in-process stub: add, attach (with an ETag, "*" or
none), update, delete and detach, each saved and checked in the store."""

from __future__ import annotations

import pytest

import azt
from azt._uow.types import ChangeKind
from azt.context import (
    EntityState,
    IdentityConflictError,
    SaveChangesError,
    SaveChangesOptions,
    TableContext,
    TrackingError,
)
from azt.dynamic import DynamicEntity

from .conftest import entity_exists, stored_entity
from .models import Movie

S = EntityState
Opt = SaveChangesOptions


async def test_add_save_then_unchanged_with_etag(
    service: azt.TableServiceClient, table: str
) -> None:
    ctx = TableContext(service)
    m = Movie("Action", "White Water Rapids Survival", rating=4.5)
    ctx.add(table, m)
    assert ctx.state_of(m) is S.ADDED
    assert ctx.has_changes
    result = await ctx.save_changes()
    (r,) = result
    assert r.succeeded
    assert r.kind is ChangeKind.INSERT
    assert r.status in (201, 204)
    stored = await stored_entity(service, table, "Action", "White Water Rapids Survival")
    assert ctx.state_of(m) is S.UNCHANGED
    assert ctx.etag_of(m) == stored.metadata.etag
    assert m.ETag == stored.metadata.etag
    assert stored["Rating"] == 4.5
    pending: bool = ctx.has_changes
    assert not pending
    # a second save sends nothing
    assert len(await ctx.save_changes()) == 0


async def test_query_edit_without_update_sends_minimal_merge(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity(
        {"PartitionKey": "Action", "RowKey": "Heat", "Rating": 3.0, "Language": "en", "X": 1}
    )
    ctx = TableContext(service)
    (m,) = await ctx.query(Movie, table).where(Movie.PartitionKey == "Action").to_list()
    assert ctx.state_of(m) is S.UNCHANGED
    assert ctx.etag_of(m) is not None
    m.rating = 5.0
    assert ctx.state_of(m) is S.MODIFIED
    (r,) = await ctx.save_changes()
    assert (r.kind, r.mode) == (ChangeKind.UPDATE, "merge")
    stored = await stored_entity(service, table, "Action", "Heat")
    assert stored["Rating"] == 5.0
    assert stored["X"] == 1  # a property the class does not know survives a MERGE
    assert ctx.etag_of(m) == stored.metadata.etag


async def test_merge_sends_only_changed_properties(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0, "Language": "en"})
    ctx = TableContext(service)
    m = Movie("p", "r", rating=1.0, language="en")
    ctx.attach(table, m, "*")
    # another writer changes Language meanwhile
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Language": "fr"})
    m.rating = 2.0
    await ctx.save_changes()
    stored = await stored_entity(service, table, "p", "r")
    assert stored["Rating"] == 2.0
    assert stored["Language"] == "fr"  # not clobbered: only Rating was sent


async def test_replace_on_update_removes_properties(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Language": "en", "X": 1})
    ctx = TableContext(service)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    assert m.language == "en"
    m.language = None
    with pytest.raises(azt.ValidationError, match="REPLACE_ON_UPDATE"):
        await ctx.save_changes()  # a MERGE cannot remove it: refused, nothing sent
    assert (await stored_entity(service, table, "p", "r"))["Language"] == "en"
    # Movie does not declare X: a replace would delete it, so it is refused (issue 11.2)
    with pytest.raises(azt.PropertyLossError) as lost:
        await ctx.save_changes(Opt.REPLACE_ON_UPDATE)
    assert lost.value.properties == ("X",)
    assert not lost.value.may_lose_more
    assert (await stored_entity(service, table, "p", "r"))["X"] == 1
    assert ctx.state_of(m) is S.MODIFIED  # still pending
    (r,) = await ctx.save_changes(Opt.REPLACE_ON_UPDATE, allow_property_loss=True)
    assert r.mode == "replace"
    stored = await stored_entity(service, table, "p", "r")
    assert "Language" not in stored
    assert "X" not in stored  # opted in: replace sends the whole (declared) entity
    assert ctx.state_of(m) is S.UNCHANGED


async def test_explicit_update_writes_whole_entity(
    service: azt.TableServiceClient, table: str
) -> None:
    ctx = TableContext(service)
    # the seed's pattern: construct locally, attach unconditionally, update
    m = Movie("Action", "Cop Out", rating=2.5, language="en")
    ctx.attach(table, m, "*")
    ctx.update(m)
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()  # "*" requires the entity to exist
    assert isinstance(info.value.result[0].error, azt.EntityNotFoundError)
    assert ctx.state_of(m) is S.MODIFIED  # still pending
    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "Action", "RowKey": "Cop Out"}
    )
    await ctx.save_changes()
    stored = await stored_entity(service, table, "Action", "Cop Out")
    assert stored["Rating"] == 2.5
    assert stored["Language"] == "en"


async def test_attach_star_unconditional_delete(
    service: azt.TableServiceClient, table: str
) -> None:
    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "Action", "RowKey": "Cop Out"}
    )
    ctx = TableContext(service)
    existing = Movie("Action", "Cop Out")
    ctx.attach(table, existing, "*")
    ctx.delete(existing)
    assert ctx.state_of(existing) is S.DELETED
    (r,) = await ctx.save_changes()
    assert r.kind is ChangeKind.DELETE
    assert r.etag is None
    assert ctx.state_of(existing) is S.DETACHED
    assert not await entity_exists(service, table, "Action", "Cop Out")


async def test_attach_without_etag_upserts(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    m = Movie("Drama", "New", rating=3.0)
    ctx.attach(table, m)
    ctx.update(m)
    (r,) = await ctx.save_changes()
    assert r.kind is ChangeKind.UPSERT
    assert (await stored_entity(service, table, "Drama", "New"))["Rating"] == 3.0
    # after the upsert the context tracks the real ETag: the next update is conditional
    await service.get_table_client(table).update_entity(
        {"PartitionKey": "Drama", "RowKey": "New", "Rating": 9.0}
    )
    m.rating = 4.0
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()
    assert isinstance(info.value.result[0].error, azt.PreconditionFailedError)


async def test_attach_with_etag_stale_then_preserve_changes_recovers(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    first = await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0})
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Language": "de"})
    ctx = TableContext(service)  # PRESERVE_CHANGES by default
    m = Movie("p", "r", rating=1.0)
    ctx.attach(table, m, first.etag)
    m.rating = 7.0
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()
    (r,) = info.value.result
    assert isinstance(r.error, azt.PreconditionFailedError)
    assert r.status == 412
    assert ctx.state_of(m) is S.MODIFIED
    # re-read: the ETag is refreshed, the local edit kept, the untouched Language loaded
    again = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    assert again is m
    assert m.rating == 7.0
    assert m.language == "de"
    await ctx.save_changes()
    stored = await stored_entity(service, table, "p", "r")
    assert stored["Rating"] == 7.0
    assert stored["Language"] == "de"


async def test_stale_delete_stays_deleted_and_recovers_with_preserve_changes(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0})
    ctx = TableContext(service)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    m.rating = 4.0  # edited, then deleted: the delete wins
    ctx.delete(m)
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 2.0})
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()
    (r,) = info.value.result
    assert (r.kind, r.status) == (ChangeKind.DELETE, 412)
    assert ctx.state_of(m) is S.DELETED  # still pending
    assert await ctx.get(Movie, table, "p", "r") is m  # re-read: new ETag, still Deleted
    assert ctx.state_of(m) is S.DELETED
    assert ctx.etag_of(m) == (await stored_entity(service, table, "p", "r")).metadata.etag
    (r,) = await ctx.save_changes()
    assert r.kind is ChangeKind.DELETE
    assert ctx.state_of(m) is S.DETACHED
    assert not await entity_exists(service, table, "p", "r")
    # a detached object can be added again: it is a new insert
    ctx.add(table, m)
    await ctx.save_changes()
    assert ctx.state_of(m) is S.UNCHANGED
    assert (await stored_entity(service, table, "p", "r"))["Rating"] == 4.0


async def test_delete_queried_entity_and_detach(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    for rk in ("a", "b"):
        await raw.insert_entity({"PartitionKey": "p", "RowKey": rk})
    ctx = TableContext(service)
    a, b = await ctx.query(Movie, table).to_list()
    ctx.delete(a)
    ctx.delete(b)
    assert ctx.detach(b) is True
    (r,) = await ctx.save_changes()
    assert r.row_key == "a"
    assert not await entity_exists(service, table, "p", "a")
    assert await entity_exists(service, table, "p", "b")
    with pytest.raises(TrackingError):
        ctx.update(b)


async def test_add_then_delete_sends_nothing(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    m = Movie("p", "r")
    ctx.add(table, m)
    ctx.delete(m)
    assert len(await ctx.save_changes()) == 0
    assert not await entity_exists(service, table, "p", "r")


async def test_identity_map_through_queries(service: azt.TableServiceClient, table: str) -> None:
    await service.get_table_client(table).insert_entity({"PartitionKey": "p", "RowKey": "r"})
    ctx = TableContext(service)
    first = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    second = await ctx.query(Movie, table.upper()).first()
    assert first is second  # one object per row; table names are case-insensitive
    with pytest.raises(IdentityConflictError, match="different object"):
        ctx.attach(table, Movie("p", "r"), "*")
    with pytest.raises(TrackingError, match="already tracked"):
        ctx.attach(table, first, "*")


async def test_dynamic_and_dict_entities(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    d = {"PartitionKey": "p", "RowKey": "dict", "N": 1}
    e = DynamicEntity("p", "dyn", N=1)
    ctx.add(table, d)
    ctx.add(table, e)
    await ctx.save_changes()
    d["N"] = 2
    e["N"] = 3
    await ctx.save_changes(Opt.BATCH)
    assert (await stored_entity(service, table, "p", "dict"))["N"] == 2
    assert (await stored_entity(service, table, "p", "dyn"))["N"] == 3
    ctx2 = TableContext(service)
    rows = await ctx2.query(DynamicEntity, table).to_list()
    assert [r["N"] for r in rows] == [2, 3]
    assert all(ctx2.state_of(r) is S.UNCHANGED for r in rows)
