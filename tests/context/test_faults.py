"""Saves under injected faults: the transport retries each request, a save never resends
what succeeded, and an insert whose answer was lost is reported, not hidden."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

import azt
from azt.context import (
    ContextBusyError,
    EntityState,
    SaveChangesError,
    SaveChangesOptions,
    TableContext,
)
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.faults import FaultInjector, FaultRule

from .conftest import fresh_name
from .models import Movie


@pytest.fixture
async def faulty() -> AsyncIterator[tuple[StubServer, FaultInjector]]:
    injector = FaultInjector(seed=5)
    async with StubServer(StubConfig(faults=injector)) as server:
        yield server, injector


def _client(stub: StubServer, attempts: int) -> azt.TableServiceClient:
    return azt.TableServiceClient.from_connection_string(
        stub.connection_string,
        retry=azt.RetryPolicy(max_attempts=attempts, base=0.01, minimum=0.01, maximum=0.05),
    )


def _posts(injector: FaultInjector) -> FaultRule:
    """A rule that never fires and counts POST requests (inserts and batches)."""
    return injector.fail_every("busy", 10**9, methods={"POST"})


async def test_failed_saves_never_resend_what_succeeded(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    stub, injector = faulty
    async with _client(stub, 1) as service:
        table = fresh_name()
        await service.create_table(table)
        posts = _posts(injector)
        ctx = TableContext(service)
        movies = [Movie("p", rk) for rk in ("a", "b", "c")]
        for m in movies:
            ctx.add(table, m)
        busy = injector.fail_every("busy", 2, methods={"POST"})  # the 2nd insert fails
        with pytest.raises(SaveChangesError) as info:
            await ctx.save_changes()
        assert isinstance(info.value.result[1].error, azt.ServerBusyError)
        assert posts.seen == 2  # "c" was not sent
        injector.remove(busy)
        again = await ctx.save_changes()
        assert [r.row_key for r in again] == ["b", "c"]
        assert posts.seen == 4  # "a" was not resent
        rows = await service.get_table_client(table).list_entities().to_list()
        assert [r["RowKey"] for r in rows] == ["a", "b", "c"]


async def test_transport_retries_each_request(faulty: tuple[StubServer, FaultInjector]) -> None:
    stub, injector = faulty
    async with _client(stub, 4) as service:
        table = fresh_name()
        await service.create_table(table)
        posts = _posts(injector)
        ctx = TableContext(service)
        for rk in ("a", "b", "c"):
            ctx.add(table, Movie("p", rk))
        injector.fail_every("busy", 2, methods={"POST"})  # every other POST answers 503
        result = await ctx.save_changes()
        assert result.ok
        assert posts.seen == 5  # a, b (503), b, c (503), c
        # the same with transactions
        for rk in ("d", "e"):
            ctx.add(table, Movie("q", rk))
        for rk in ("f", "g"):
            ctx.add(table, Movie("r", rk))
        result = await ctx.save_changes(SaveChangesOptions.BATCH)
        assert result.ok
        assert len({r.batch for r in result}) == 2


async def test_lost_answer_to_an_insert_is_reported(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    """The seed's warning: a retried insert whose first attempt succeeded meets a
    Conflict. azt reports it as ambiguous (never as a plain success or a plain conflict)
    and keeps the entity pending."""
    stub, injector = faulty
    async with _client(stub, 3) as service:
        table = fresh_name()
        await service.create_table(table)
        ctx = TableContext(service)
        m = Movie("p", "r", rating=1.0)
        ctx.add(table, m)
        injector.fail_next("drop-after", 1, methods={"POST"})
        with pytest.raises(SaveChangesError) as info:
            await ctx.save_changes()
        (r,) = info.value.result
        assert isinstance(r.error, azt.AmbiguousOutcomeError)
        assert ctx.state_of(m) is EntityState.ADDED  # stays pending: the app decides
        assert (await service.get_table_client(table).get_entity("p", "r"))["Rating"] == 1.0


async def test_save_while_a_query_page_is_in_flight_is_refused(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    stub, injector = faulty
    async with _client(stub, 1) as service:
        table = fresh_name()
        await service.create_table(table)
        await service.get_table_client(table).insert_entity({"PartitionKey": "p", "RowKey": "r"})
        ctx = TableContext(service)
        ctx.add(table, Movie("p", "new"))
        injector.add_latency(0.2, methods={"GET"})
        reading = asyncio.create_task(ctx.query(Movie, table).to_list())
        await asyncio.sleep(0)  # the query task now waits for its (slow) first page
        with pytest.raises(ContextBusyError, match="fetching"):
            await ctx.save_changes()
        rows = await reading
        assert len(rows) == 1
        await ctx.save_changes()  # the query is done: saving works again
        assert ctx.state_of(rows[0]) is EntityState.UNCHANGED
