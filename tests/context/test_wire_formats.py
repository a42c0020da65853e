"""TableContext in every wire format: optimistic concurrency, and ETags of untracked
results in no-metadata JSON."""

from __future__ import annotations

import pytest

import azt
from azt.context import (
    EntityState,
    MergeOption,
    SaveChangesError,
    SaveChangesOptions,
    TableContext,
)
from azt_server_stub import StubServer

from .conftest import fresh_name
from .models import Movie

S = EntityState
Opt = SaveChangesOptions


@pytest.mark.parametrize(
    "wire_format",
    [azt.WireFormat.JSON_NONE, azt.WireFormat.JSON_FULL, azt.WireFormat.ATOM],
    ids=lambda f: f.name,
)
async def test_optimistic_concurrency_in_every_wire_format(
    stub: StubServer, wire_format: azt.WireFormat
) -> None:
    """No-metadata JSON carries no ETags in query results: the context derives them from
    the Timestamp, so updates stay conditional (a concurrent change still gives 412)."""
    async with azt.TableServiceClient.from_connection_string(
        stub.connection_string, wire_format=wire_format
    ) as service:
        table = fresh_name()
        await service.create_table(table)
        ctx = TableContext(service)
        ctx.add(table, Movie("p", "1", rating=1.0))
        ctx.add(table, Movie("p", "2", rating=1.0))
        await ctx.save_changes(Opt.BATCH)
        reader = TableContext(service)
        one, two = await reader.query(Movie, table).to_list()
        assert reader.etag_of(one) == ctx.etag_of(ctx.entries()[0].obj)
        one.rating = 2.0
        await reader.save_changes()  # conditional on the derived ETag, and it matches
        await service.get_table_client(table).update_entity(
            {"PartitionKey": "p", "RowKey": "2", "Rating": 9.0}
        )
        two.rating = 3.0
        with pytest.raises(SaveChangesError) as info:
            await reader.save_changes()
        assert isinstance(info.value.result[0].error, azt.PreconditionFailedError)


async def test_no_tracking_results_carry_etags_in_no_metadata_json(stub: StubServer) -> None:
    """Attaching a NO_TRACKING result with its own ETag (the seed's way to update it) must
    stay conditional in no-metadata JSON too, where the answer carries no ETag."""
    async with azt.TableServiceClient.from_connection_string(
        stub.connection_string, wire_format=azt.WireFormat.JSON_NONE
    ) as service:
        table = fresh_name()
        await service.create_table(table)
        raw = service.get_table_client(table)
        await raw.insert_entity({"PartitionKey": "p", "RowKey": "1", "Rating": 1.0})
        await raw.insert_entity({"PartitionKey": "p", "RowKey": "2", "Rating": 1.0})
        ctx = TableContext(service, merge_option=MergeOption.NO_TRACKING)
        queried = await ctx.query(Movie, table).where(Movie.RowKey == "1").first()
        got = await ctx.get(Movie, table, "p", "2", ignore_resource_not_found=False)
        assert queried is not None
        for m in (queried, got):
            assert ctx.state_of(m) is S.DETACHED
            assert m.ETag is not None
            ctx.attach(table, m, m.ETag)
            await raw.update_entity({"PartitionKey": "p", "RowKey": m.RowKey, "Rating": 9.0})
            m.rating = 2.0
            with pytest.raises(SaveChangesError) as info:
                await ctx.save_changes()  # conditional: the concurrent change is detected
            assert isinstance(info.value.result[0].error, azt.PreconditionFailedError)
            ctx.detach(m)
        stored = await raw.list_entities().to_list()
        assert [r["Rating"] for r in stored] == [9.0, 9.0]
