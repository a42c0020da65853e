"""Issue 11, item 2: a whole-entity replace of an object that does not hold every stored
property (a projection; a class declaring fewer properties than the row has; a resolver's
narrower class) is refused with ``azt.PropertyLossError`` naming what would be lost, before
anything is sent and without losing the pending change, unless the caller opts in
(``allow_property_loss=True`` per save, ``mark_complete`` per entity). Shown for the
context's ``update`` / ``attach`` + update / plain edits, batches, the client core and the
legacy .NET surface."""

from __future__ import annotations

import pytest

import azt
from azt import UpdateMode
from azt.context import EntityState, MergeOption, SaveChangesOptions, TableContext
from azt.dynamic import DynamicEntity, by_row_key_prefix
from azt.entity import Entity, Prop, prop
from azt.legacy import CloudStorageAccount, TableServiceEntity
from azt_server_stub import StubServer

from .conftest import stored_entity

Opt = SaveChangesOptions
REPLACE = Opt.REPLACE_ON_UPDATE

ROW = {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b", "Extra": "keep me"}


class AB(Entity):
    a: Prop[int] = prop(name="A", default=0)
    b: Prop[str] = prop(name="B", default="")


class OnlyA(Entity):
    a: Prop[int] = prop(name="A", default=0)


class LegacyA(TableServiceEntity):
    a: Prop[int] = prop(name="A", default=0)


async def _seed(service: azt.TableServiceClient, table: str) -> None:
    await service.get_table_client(table).insert_entity(dict(ROW))


async def _unchanged(service: azt.TableServiceClient, table: str) -> None:
    stored = await stored_entity(service, table, "p", "r")
    assert dict(stored) == ROW, "nothing may have been sent"


# -- the reported instance: projection + ReplaceOnUpdate -----------------------------------


@pytest.mark.parametrize("batch", [False, True])
async def test_projection_replace_is_refused_then_opt_in_per_save(
    service: azt.TableServiceClient, table: str, batch: bool
) -> None:
    await _seed(service, table)
    ctx = TableContext(service)
    x = await ctx.query(AB, table).where(AB.PartitionKey == "p").select(AB.a).first()
    assert x is not None
    x.a = 55
    opts = REPLACE | Opt.BATCH if batch else REPLACE
    with pytest.raises(azt.PropertyLossError) as info:
        await ctx.save_changes(opts)
    err = info.value
    assert err.properties == ("B",)  # declared but not selected
    assert err.may_lose_more  # and any stored property outside the projection
    assert (err.partition_key, err.row_key) == ("p", "r")
    assert "'B'" in str(err)
    assert "projection" in str(err)
    assert isinstance(err, azt.ValidationError)
    await _unchanged(service, table)
    assert ctx.state_of(x) is EntityState.MODIFIED  # the change is still pending
    # a MERGE is safe and needs no opt-in
    await ctx.save_changes()
    assert (await stored_entity(service, table, "p", "r"))["A"] == 55
    x.a = 56
    with pytest.raises(azt.PropertyLossError):
        await ctx.save_changes(opts)
    (r,) = await ctx.save_changes(opts, allow_property_loss=True)
    assert r.mode == "replace"
    stored = await stored_entity(service, table, "p", "r")
    assert dict(stored) == {"PartitionKey": "p", "RowKey": "r", "A": 56}


async def test_mark_complete_opts_in_per_entity(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed(service, table)
    ctx = TableContext(service)
    x = await ctx.query(AB, table).select(AB.a).first()
    assert x is not None
    x.a = 7
    with pytest.raises(azt.PropertyLossError):
        await ctx.save_changes(REPLACE)
    ctx.mark_complete(x)
    await ctx.save_changes(REPLACE)
    assert dict(await stored_entity(service, table, "p", "r")) == {
        "PartitionKey": "p",
        "RowKey": "r",
        "A": 7,
    }
    with pytest.raises(azt.TrackingError):
        ctx.mark_complete(AB("p", "other"))


async def test_setting_the_unselected_properties_is_still_refused_for_the_unknown_rest(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed(service, table)
    ctx = TableContext(service)
    x = await ctx.query(AB, table).select(AB.a).first()
    assert x is not None
    x.b = "set"  # every declared property held now, but "Extra" is unknown to a projection
    with pytest.raises(azt.PropertyLossError) as info:
        await ctx.save_changes(REPLACE)
    assert info.value.properties == ()
    assert info.value.may_lose_more
    await _unchanged(service, table)


# -- the class: a narrower class, a resolver, explicit update, attach, NoTracking ----------


async def test_narrower_class_update_names_the_undeclared_property(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed(service, table)
    ctx = TableContext(service)
    a = await ctx.get(OnlyA, table, "p", "r", ignore_resource_not_found=False)
    ctx.update(a)  # the explicit UpdateObject: writes even without a change
    with pytest.raises(azt.PropertyLossError) as info:
        await ctx.save_changes(REPLACE)
    assert set(info.value.properties) == {"B", "Extra"}
    assert not info.value.may_lose_more
    await _unchanged(service, table)
    assert ctx.state_of(a) is EntityState.MODIFIED


async def test_resolver_choosing_a_narrower_class_is_refused(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed(service, table)
    ctx = TableContext(service)
    got = await ctx.query(by_row_key_prefix({"r": OnlyA}), table).to_list()
    (a,) = got
    assert isinstance(a, OnlyA)
    a.a = 2
    with pytest.raises(azt.PropertyLossError) as info:
        await ctx.save_changes(REPLACE)
    assert set(info.value.properties) == {"B", "Extra"}
    await _unchanged(service, table)


async def test_read_without_tracking_then_attached_elsewhere_carries_the_record(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed(service, table)
    reader = TableContext(service, merge_option=MergeOption.NO_TRACKING)
    x = await reader.query(AB, table).select(AB.a).first()
    assert x is not None
    writer = TableContext(service)
    writer.attach(table, x, "*")
    writer.update(x)
    with pytest.raises(azt.PropertyLossError):
        await writer.save_changes(REPLACE)
    # attached without an ETag: the update becomes an upsert, a replace one as well
    other = TableContext(service)
    y = await reader.query(OnlyA, table).first()
    assert y is not None
    other.attach(table, y, None)
    other.update(y)
    with pytest.raises(azt.PropertyLossError):
        await other.save_changes(REPLACE)
    await _unchanged(service, table)


async def test_dynamic_projection_is_refused(service: azt.TableServiceClient, table: str) -> None:
    await _seed(service, table)
    ctx = TableContext(service)
    d = await ctx.query(DynamicEntity, table).select("A").first()
    assert d is not None
    d["A"] = 9
    with pytest.raises(azt.PropertyLossError) as info:
        await ctx.save_changes(REPLACE)
    assert info.value.may_lose_more
    await _unchanged(service, table)


async def test_whole_reads_replace_without_opt_in(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed(service, table)
    ctx = TableContext(service)
    d = await ctx.get(DynamicEntity, table, "p", "r", ignore_resource_not_found=False)
    del d["Extra"]  # a removal the user made: the point of a replace
    await ctx.save_changes(REPLACE)
    assert "Extra" not in await stored_entity(service, table, "p", "r")
    # a class declaring every stored property is complete too
    ctx2 = TableContext(service)
    ab = await ctx2.get(AB, table, "p", "r", ignore_resource_not_found=False)
    ab.a = 3
    await ctx2.save_changes(REPLACE)


async def test_rereading_whole_clears_the_projection_record(
    service: azt.TableServiceClient, table: str
) -> None:
    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"}
    )
    ctx = TableContext(service)
    x = await ctx.query(AB, table).select(AB.a).first()
    assert x is not None
    again = await ctx.get(AB, table, "p", "r", ignore_resource_not_found=False)
    assert again is x
    assert x.b == "b"
    x.a = 4
    await ctx.save_changes(REPLACE)  # the object holds the whole entity now
    assert dict(await stored_entity(service, table, "p", "r")) == {
        "PartitionKey": "p",
        "RowKey": "r",
        "A": 4,
        "B": "b",
    }


# -- the client core ------------------------------------------------------------------------


async def test_client_core_replace_of_a_projection(
    service: azt.TableServiceClient, table: str
) -> None:
    await _seed(service, table)
    client = service.get_table_client(table)
    got = await client.get_entity("p", "r", select=["PartitionKey", "RowKey", "A"])
    got["A"] = 5
    with pytest.raises(azt.PropertyLossError):
        await client.update_entity(got, UpdateMode.REPLACE)
    with pytest.raises(azt.PropertyLossError):
        await client.upsert_entity(got, UpdateMode.REPLACE)
    (listed,) = await client.query_entities(select=["PartitionKey", "RowKey", "A"]).to_list()
    with pytest.raises(azt.PropertyLossError):
        await client.update_entity(listed, UpdateMode.REPLACE)
    batch = client.batch()
    with pytest.raises(azt.PropertyLossError):
        batch.update(got, UpdateMode.REPLACE)
    with pytest.raises(azt.PropertyLossError):
        batch.upsert(got.copy(), UpdateMode.REPLACE)  # a copy lacks the same
    await _unchanged(service, table)
    await client.update_entity(got, UpdateMode.MERGE)  # merging loses nothing
    await client.update_entity(got, UpdateMode.REPLACE, allow_property_loss=True)
    assert dict(await stored_entity(service, table, "p", "r")) == {
        "PartitionKey": "p",
        "RowKey": "r",
        "A": 5,
    }
    # an object built from a client-core projection inherits the record
    await client.upsert_entity(dict(ROW), UpdateMode.REPLACE)
    slim = await client.get_entity("p", "r", select=["PartitionKey", "RowKey", "A"])
    ctx = TableContext(service)
    ctx.attach(table, AB.from_entity(slim), "*")
    ctx.update(ctx.entries()[0].obj)
    with pytest.raises(azt.PropertyLossError):
        await ctx.save_changes(REPLACE)
    await _unchanged(service, table)


# -- the legacy .NET surface ----------------------------------------------------------------


async def test_legacy_update_object_replace_on_update(stub: StubServer) -> None:
    account = CloudStorageAccount.parse(stub.connection_string)
    async with account.create_cloud_table_client() as tables:
        await tables.create_table("Legacy")
        await tables.service.get_table_client("Legacy").insert_entity(dict(ROW))
        context = tables.get_data_service_context()
        a = await context.get(LegacyA, "Legacy", "p", "r", ignore_resource_not_found=False)
        a.a = 11
        context.update_object(a)
        for save in (context.save_changes, context.save_changes_with_retries):
            with pytest.raises(azt.PropertyLossError) as info:
                await save(SaveChangesOptions.REPLACE_ON_UPDATE)
            assert set(info.value.properties) == {"B", "Extra"}
        raw = await tables.service.get_table_client("Legacy").get_entity("p", "r")
        assert dict(raw) == ROW
        await context.save_changes_with_retries(
            SaveChangesOptions.REPLACE_ON_UPDATE, allow_property_loss=True
        )
        raw = await tables.service.get_table_client("Legacy").get_entity("p", "r")
        assert dict(raw) == {"PartitionKey": "p", "RowKey": "r", "A": 11}
