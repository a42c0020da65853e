"""Issue 11, item 6: after a save the object carries the ``Timestamp`` the service gave
the entity (read from the ETag it answered with) next to its new ETag, for every kind of
tracked object, single and batch saves, inserts, updates (merge and replace) and upserts;
a delete sets none."""

from __future__ import annotations

from typing import Any

import pytest

import azt
from azt.context import SaveChangesOptions, TableContext
from azt.dynamic import DynamicEntity
from azt.edm import TableEntity

from .conftest import stored_entity
from .models import Movie

Opt = SaveChangesOptions
MODES = [Opt.NONE, Opt.BATCH, Opt.CONTINUE_ON_ERROR]


def _timestamp(obj: Any) -> Any:
    if isinstance(obj, TableEntity):
        return obj.metadata.timestamp
    return obj.Timestamp


def _etag(obj: Any) -> Any:
    if isinstance(obj, TableEntity):
        return obj.metadata.etag
    return obj.ETag


def _objects(n: int) -> list[Any]:
    return [
        Movie("p", f"movie{n}", rating=1.0),
        DynamicEntity("p", f"dyn{n}", Rating=1.0),
        TableEntity(PartitionKey="p", RowKey=f"map{n}", Rating=1.0),
    ]


async def _check_matches_store(
    service: azt.TableServiceClient, table: str, objs: list[Any], before: dict[int, Any]
) -> None:
    for obj in objs:
        rk = obj["RowKey"] if isinstance(obj, TableEntity) else obj.RowKey
        stored = await stored_entity(service, table, "p", rk)
        ts = _timestamp(obj)
        assert ts is not None, f"{type(obj).__name__} has no Timestamp after the save"
        assert ts == stored.metadata.timestamp
        assert _etag(obj) == stored.metadata.etag
        assert ts != before.get(id(obj)), "the Timestamp must be the new one"


@pytest.mark.parametrize("options", MODES, ids=lambda o: o.name or "NONE")
async def test_insert_update_replace_upsert_fill_the_timestamp(
    service: azt.TableServiceClient, table: str, options: SaveChangesOptions
) -> None:
    ctx = TableContext(service)
    objs = _objects(0)
    for obj in objs:
        assert _timestamp(obj) is None
        ctx.add(table, obj)
    result = await ctx.save_changes(options)
    assert all(r.timestamp is not None for r in result)
    await _check_matches_store(service, table, objs, {})
    for r in result:
        assert _timestamp(r.entity) == r.timestamp

    # a MERGE of a changed property
    before = {id(o): _timestamp(o) for o in objs}
    objs[0].rating = 2.0
    objs[1]["Rating"] = 2.0
    objs[2]["Rating"] = 2.0
    await ctx.save_changes(options)
    await _check_matches_store(service, table, objs, before)

    # a replace
    before = {id(o): _timestamp(o) for o in objs}
    objs[0].rating = 3.0
    objs[1]["Rating"] = 3.0
    objs[2]["Rating"] = 3.0
    await ctx.save_changes(options | Opt.REPLACE_ON_UPDATE)
    await _check_matches_store(service, table, objs, before)

    # upserts: attached without an ETag
    other = TableContext(service)
    fresh = _objects(0)
    for obj in fresh:
        other.attach(table, obj, None)
        other.update(obj)
    await other.save_changes(options)
    await _check_matches_store(service, table, fresh, {})


async def test_delete_sets_no_timestamp(service: azt.TableServiceClient, table: str) -> None:
    ctx = TableContext(service)
    d = DynamicEntity("p", "gone", A=1)
    ctx.add(table, d)
    await ctx.save_changes()
    written = d.Timestamp
    ctx.delete(d)
    (r,) = await ctx.save_changes()
    assert r.timestamp is None
    assert d.Timestamp == written  # untouched: the entity no longer exists
