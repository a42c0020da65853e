"""A TableContext under concurrency: overlapping saves and operations are refused, a save
inside a query loop is allowed, contexts racing on one entity converge through
optimistic concurrency, and an unexpected error leaves nothing running."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import azt
from azt.context import (
    ContextBusyError,
    EntityState,
    MergeOption,
    SaveChangesError,
    SaveChangesOptions,
    TableContext,
)

from .conftest import stored_entity
from .models import Movie

S = EntityState
Opt = SaveChangesOptions


async def test_concurrent_save_and_operations_refused(
    service: azt.TableServiceClient, table: str
) -> None:
    ctx = TableContext(service)
    for i in range(20):
        ctx.add(table, Movie("p", str(i)))
    task = asyncio.create_task(ctx.save_changes())
    await asyncio.sleep(0)  # the save is now waiting for its first answer
    with pytest.raises(ContextBusyError, match="already running"):
        await ctx.save_changes()
    with pytest.raises(ContextBusyError, match="save_changes"):
        await ctx.query(Movie, table).to_list()
    with pytest.raises(ContextBusyError):
        await ctx.get(Movie, table, "p", "0")
    with pytest.raises(ContextBusyError):
        ctx.add(table, Movie("p", "x"))
    with pytest.raises(ContextBusyError):
        ctx.detach(Movie("p", "y"))
    result = await task
    assert result.ok
    assert len(result) == 20
    # afterwards the context is usable again
    ctx.add(table, Movie("p", "x"))
    await ctx.save_changes()


async def test_save_inside_query_loop_is_allowed(
    service: azt.TableServiceClient, table: str
) -> None:
    raw = service.get_table_client(table)
    for i in range(3):
        await raw.insert_entity({"PartitionKey": "p", "RowKey": str(i), "Rating": 0.0})
    ctx = TableContext(service)
    async for m in ctx.query(Movie, table).page_size(1):
        m.rating = 1.0
        await ctx.save_changes()  # no fetch is in flight while the loop body runs
    rows = await raw.list_entities().to_list()
    assert [r["Rating"] for r in rows] == [1.0, 1.0, 1.0]


async def test_32_contexts_increment_one_counter(
    service: azt.TableServiceClient, table: str
) -> None:
    from .models import Counter

    await service.get_table_client(table).insert_entity(
        {"PartitionKey": "counters", "RowKey": "hits", "Count": 0}
    )
    increments_each = 3
    conflicts = 0

    async def worker() -> None:
        nonlocal conflicts
        for _ in range(increments_each):
            ctx = TableContext(service)  # a new context per logical operation
            while True:
                c = await ctx.get(
                    Counter, table, "counters", "hits", ignore_resource_not_found=False
                )
                c.count += 1
                try:
                    await ctx.save_changes()
                    break
                except SaveChangesError as exc:
                    (r,) = exc.result
                    assert isinstance(r.error, azt.PreconditionFailedError)
                    conflicts += 1
                    # re-read: OVERWRITE_CHANGES reloads the new count and ETag
                    ctx.merge_option = MergeOption.OVERWRITE_CHANGES

    await asyncio.gather(*(worker() for _ in range(32)))
    stored = await stored_entity(service, table, "counters", "hits")
    assert stored["Count"] == 32 * increments_each
    assert conflicts > 0  # the workers really did collide


async def test_unexpected_error_in_a_concurrent_save_leaves_nothing_running(
    service: azt.TableServiceClient, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error that is not a service answer (here a bug in a send) propagates as itself,
    and the save's other requests are cancelled: nothing changes in the context after
    save_changes() has raised."""
    insert_entity = azt.TableClient.insert_entity
    submit_transaction = azt.TableClient.submit_transaction

    async def insert(self: azt.TableClient, entity: Any, **kw: Any) -> Any:
        if entity["RowKey"] == "boom":
            raise RuntimeError("boom")
        await asyncio.sleep(0.05)
        return await insert_entity(self, entity, **kw)

    async def submit(self: azt.TableClient, tx: Any) -> Any:
        if len(tx) == 1:
            raise RuntimeError("boom")
        await asyncio.sleep(0.05)
        return await submit_transaction(self, tx)

    monkeypatch.setattr(azt.TableClient, "insert_entity", insert)
    monkeypatch.setattr(azt.TableClient, "submit_transaction", submit)
    for options in (Opt.CONTINUE_ON_ERROR, Opt.BATCH):
        ctx = TableContext(service)
        ms = [Movie(pk, rk) for pk in ("p", "q") for rk in ("a", "b")]
        ms.insert(1, Movie("boom", "boom"))  # in a transaction of its own
        for m in ms:
            ctx.add(table, m)
        with pytest.raises(RuntimeError, match="boom"):
            await ctx.save_changes(options, max_concurrency=4)
        await asyncio.sleep(0.2)  # anything left running would have finished by now
        assert [ctx.state_of(m) for m in ms] == [S.ADDED] * 5
        assert ctx.has_changes
    assert await service.get_table_client(table).list_entities().to_list() == []
