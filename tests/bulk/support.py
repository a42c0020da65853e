"""Shared helpers of the bulk-load tests: a stub with realism layers, a client on it with
a fast retry policy, generated entities and a value-by-value table comparison."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import azt
from azt.testing import stub_retry_policy
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.faults import FaultInjector
from azt_server_stub.realism.throttle import Throttle


def rows(partitions: int, per_partition: int, *, start: int = 0) -> Iterator[dict[str, Any]]:
    """Entities interleaved across partitions (as an export of many sources would be):
    row r of every partition, then row r + 1, ... with typed values to compare."""
    for r in range(start, start + per_partition):
        for p in range(partitions):
            yield {
                "PartitionKey": f"p{p:03d}",
                "RowKey": f"r{r:05d}",
                "P": p,
                "R": r,
                "Big": p * 1_000_000_007 + r,  # Int64
                "Tag": f"{p}/{r}",
                "Score": r / 7,
            }


@asynccontextmanager
async def stub(
    *, faults: FaultInjector | None = None, throttle: Throttle | None = None
) -> AsyncIterator[StubServer]:
    async with StubServer(StubConfig(faults=faults, throttle=throttle)) as server:
        yield server


@asynccontextmanager
async def table_on(server: StubServer, name: str, **kwargs: Any) -> AsyncIterator[azt.TableClient]:
    kwargs.setdefault("retry", stub_retry_policy())
    async with azt.TableClient.from_connection_string(
        server.connection_string, name, **kwargs
    ) as table:
        yield table


async def stored(table: azt.TableClient) -> dict[tuple[str, str], dict[str, Any]]:
    """Every entity of the table, by keys, without the service's Timestamp."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    async for entity in table.list_entities():
        values = {k: v for k, v in entity.items() if k != "Timestamp"}
        found[(entity["PartitionKey"], entity["RowKey"])] = values
    return found


def expected(items: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["PartitionKey"], e["RowKey"]): dict(e) for e in items}
