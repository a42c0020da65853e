"""ORM queries against a stub that behaves like a loaded service: range-partition page
breaks, a scan budget (short and empty pages with continuations) and injected 503s. The
results must still be exactly the brute-force answer, in order, each entity once."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

import azt
from azt.query import PlanKind, Query
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.faults import FaultInjector, FaultKind, parse_fault
from azt_server_stub.realism.partitions import PartitionLayout, RangeLayout

from .models import Movie
from .test_query_exec import GENRES, MOVIES


@pytest.fixture
async def rough_table() -> AsyncIterator[tuple[azt.TableClient, FaultInjector]]:
    faults = FaultInjector(seed=11)
    config = StubConfig(
        faults=faults,
        partitions=PartitionLayout(RangeLayout(boundaries=("Comedy", "SciFi"), scan_budget=5)),
    )
    retry = azt.RetryPolicy(max_attempts=10, base=0.001, minimum=0.0, maximum=0.01)
    async with StubServer(config) as stub:
        service = azt.TableServiceClient.from_connection_string(stub.connection_string, retry=retry)
        async with service:
            table = await service.create_table("rough" + uuid.uuid4().hex[:10])
            for m in MOVIES:
                await table.insert_entity(m.to_entity())
            faults.add(parse_fault("busy:25%@reads"))
            yield table, faults


def _keys(rows: list[Movie]) -> list[tuple[str, str]]:
    return [(m.PartitionKey, m.RowKey) for m in rows]


async def test_queries_survive_page_breaks_and_throttling(
    rough_table: tuple[azt.TableClient, FaultInjector],
) -> None:
    table, faults = rough_table
    everything = sorted((m.PartitionKey, m.RowKey) for m in MOVIES)
    assert _keys(await Query(Movie, table).to_list()) == everything

    rated = Query(Movie, table).where(Movie.rating > 2.5)
    assert _keys(await rated.to_list()) == sorted(
        (m.PartitionKey, m.RowKey) for m in MOVIES if m.rating > 2.5
    )

    fan = Query(Movie, table).where(Movie.PartitionKey.in_(GENRES[::2]) & Movie.favorite)
    assert fan.explain().kind is PlanKind.MULTI
    assert _keys(await fan.to_list()) == sorted(
        (m.PartitionKey, m.RowKey) for m in MOVIES if m.PartitionKey in GENRES[::2] and m.favorite
    )
    assert _keys(await fan.take(4).to_list()) == _keys(await fan.to_list())[:4]

    # resumable pages across breaks: the concatenation is the whole answer
    got: list[tuple[str, str]] = []
    token: str | None = None
    while True:
        gen = Query(Movie, table).page_size(7).pages(token)
        page = await gen.__anext__()
        await gen.aclose()
        got += _keys(page.items)
        token = page.continuation
        if token is None:
            break
    assert got == everything
    assert faults.counters[FaultKind.BUSY] > 0  # the retries were exercised
