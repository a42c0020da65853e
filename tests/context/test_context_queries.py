"""Queries through a TableContext against the in-process stub: every merge option,
projections, point queries of missing entities, continuations."""

from __future__ import annotations

import pytest

import azt
from azt.context import (
    EntityState,
    MergeOption,
    SaveChangesError,
    SaveChangesOptions,
    TableContext,
    TrackingError,
)

from .conftest import stored_entity
from .models import Movie

S = EntityState
Opt = SaveChangesOptions


async def _one_row(service: azt.TableServiceClient, table: str) -> azt.TableClient:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0})
    return raw


async def test_append_only(service: azt.TableServiceClient, table: str) -> None:
    raw = await _one_row(service, table)
    ctx = TableContext(service, merge_option=MergeOption.APPEND_ONLY)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    old_etag = ctx.etag_of(m)
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 9.0})
    again = await ctx.query(Movie, table).first()
    assert again is m
    assert m.rating == 1.0  # not refreshed
    assert ctx.etag_of(m) == old_etag  # ETag not updated ...
    m.rating = 2.0
    with pytest.raises(SaveChangesError) as info:
        await ctx.save_changes()  # ... so the update fails the precondition
    assert isinstance(info.value.result[0].error, azt.PreconditionFailedError)


async def test_overwrite_changes(service: azt.TableServiceClient, table: str) -> None:
    raw = await _one_row(service, table)
    ctx = TableContext(service)
    ctx.merge_option = MergeOption.OVERWRITE_CHANGES
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    m.rating = 5.0
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 9.0})
    await ctx.query(Movie, table).to_list()
    assert m.rating == 9.0
    assert ctx.state_of(m) is S.UNCHANGED
    assert ctx.etag_of(m) == (await stored_entity(service, table, "p", "r")).metadata.etag


async def test_preserve_changes_per_query(service: azt.TableServiceClient, table: str) -> None:
    raw = await _one_row(service, table)
    ctx = TableContext(service, merge_option=MergeOption.APPEND_ONLY)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    m.rating = 5.0
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 9.0, "Language": "x"})
    await ctx.query(Movie, table).merge_option(MergeOption.PRESERVE_CHANGES).to_list()
    assert m.rating == 5.0
    assert m.language == "x"
    await ctx.save_changes()  # the ETag was refreshed: the save succeeds
    stored = await stored_entity(service, table, "p", "r")
    assert stored["Rating"] == 5.0
    assert stored["Language"] == "x"


async def test_no_tracking(service: azt.TableServiceClient, table: str) -> None:
    await _one_row(service, table)
    ctx = TableContext(service, merge_option=MergeOption.NO_TRACKING)
    m = await ctx.query(Movie, table).first()
    assert m is not None
    assert ctx.state_of(m) is S.DETACHED
    with pytest.raises(TrackingError, match="not tracking"):
        ctx.update(m)
    assert m.ETag is not None
    ctx.attach(table, m, m.ETag)  # updating needs attach, as the seed says
    m.rating = 3.0
    await ctx.save_changes()
    assert (await stored_entity(service, table, "p", "r"))["Rating"] == 3.0


async def test_projection_keeps_unloaded_values(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    await raw.insert_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 1.0, "Language": "en"})
    ctx = TableContext(service)
    m = await ctx.get(Movie, table, "p", "r", ignore_resource_not_found=False)
    await raw.update_entity({"PartitionKey": "p", "RowKey": "r", "Rating": 2.0, "Language": "fr"})
    await ctx.query(Movie, table).select(Movie.rating).to_list()
    assert m.rating == 2.0
    assert m.language == "en"  # not in the projection: untouched
    assert ctx.state_of(m) is S.UNCHANGED


# --------------------------------------------------------------------------- point queries


async def test_point_query_not_found(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    q = ctx.query(Movie, table).where(Movie.PartitionKey == "Action", Movie.RowKey == "Terminator")
    with pytest.raises(azt.EntityNotFoundError) as info:
        await q.to_list()
    assert info.value.code == "ResourceNotFound"
    assert await q.ignore_resource_not_found().to_list() == []
    with pytest.raises(azt.EntityNotFoundError):
        await ctx.get(Movie, table, "Action", "Terminator")
    assert (
        await ctx.get(Movie, table, "Action", "Terminator", ignore_resource_not_found=True) is None
    )
    ctx.ignore_resource_not_found = True
    assert await q.to_list() == []
    assert await ctx.get(Movie, table, "Action", "Terminator") is None
    # a key lookup with a further condition is a filter: no match is an empty result
    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "Action", "RowKey": "Terminator", "Rating": 1.0}
    )
    ctx.ignore_resource_not_found = False
    filtered = ctx.query(Movie, table).where(
        Movie.RowKey == "Terminator", Movie.PartitionKey == "Action", Movie.rating > 4.0
    )
    assert await filtered.to_list() == []
    assert len(await q.to_list()) == 1
    # range queries never raise
    ctx.ignore_resource_not_found = False
    assert await ctx.query(Movie, table).where(Movie.PartitionKey == "Comedy").to_list() == []


async def test_continuation_is_followed(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    for i in range(25):
        ctx.add(table, Movie("p", f"{i:02d}"))
    await ctx.save_changes(Opt.BATCH)
    fresh = TableContext(service)
    pages = [p async for p in fresh.query(Movie, table).page_size(10).pages()]
    assert [len(p.items) for p in pages] == [10, 10, 5]
    assert len(fresh.entries()) == 25


async def test_a_query_knows_its_context(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    q = ctx.query(Movie, table).where(Movie.PartitionKey == "Action").take(3)
    assert q.context is ctx
    assert q.table == table
