"""Key ranges planned up front (the partitions of a dask read): they cover the table in key
order, never cut a partition, hold data, and follow the filter."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator

import pytest

import azt
from azt._frames.ranges import plan_ranges
from azt._orm.planner import ordinal
from azt_server_stub import StubServer


@pytest.fixture
async def service() -> AsyncIterator[azt.TableServiceClient]:
    async with (
        StubServer() as server,
        azt.TableServiceClient.from_connection_string(server.connection_string) as svc,
    ):
        yield svc


async def table_of(service: azt.TableServiceClient, keys: list[str]) -> azt.TableClient:
    table = await service.create_table(f"rg{secrets.token_hex(5)}")
    for pk in keys:
        for rk in ("a", "b"):
            await table.create_entity({"PartitionKey": pk, "RowKey": rk, "V": len(pk)})
    return table


def inside(pk: str, rng: tuple[str, str | None]) -> bool:
    lo, hi = rng
    return ordinal(lo) <= ordinal(pk) and (hi is None or ordinal(pk) < ordinal(hi))


KEYS = ["a", "ab", "b", "k1", "k2", "m", "x", "zz", "\u00e9t\u00e9", "\U0001f600"]


async def test_ranges_cover_the_table_in_order(service: azt.TableServiceClient) -> None:
    table = await table_of(service, KEYS)
    for n in (1, 2, 3, 5, 8, 20):
        ranges = await plan_ranges(table, n)
        assert ranges[0][0] == ""
        assert ranges[-1][1] is None
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        assert len(ranges) == min(n, len(KEYS))  # never more ranges than partitions
        for pk in KEYS:  # each partition in exactly one range
            assert sum(inside(pk, r) for r in ranges) == 1
        for r in ranges:  # and every range holds data
            assert any(inside(pk, r) for pk in KEYS), (n, r)


async def test_empty_table_and_filter(service: azt.TableServiceClient) -> None:
    empty = await table_of(service, [])
    assert await plan_ranges(empty, 4) == [("", None)]
    table = await table_of(service, KEYS)
    ranges = await plan_ranges(table, 4, filter="V eq 2")  # the two-letter keys
    matching = [pk for pk in KEYS if len(pk) == 2]
    assert len(ranges) == len(matching)
    for r in ranges:
        assert any(inside(pk, r) for pk in matching)
    with pytest.raises(azt.ValidationError):
        await plan_ranges(table, 0)
