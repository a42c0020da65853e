"""``parallel_scan(read_ahead=N)``: an unordered scan holds at most N pages read and not
yet taken (a migration keeps its reads in step with its writes by a low one), and refuses
a bad value."""

from __future__ import annotations

import asyncio

import pytest

import azt
from azt.scan import parallel_scan
from azt_server_stub import StubServer


async def test_read_ahead_bounds_the_pages_read_before_they_are_taken(
    azt_stub: StubServer,
) -> None:
    async with azt.TableServiceClient.from_connection_string(azt_stub.connection_string) as service:
        table = await service.create_table("ahead")
        for p in range(4):
            async with table.batch_writer() as w:
                for r in range(50):
                    await w.upsert({"PartitionKey": f"p{p}", "RowKey": f"{r:03d}"})
        for ahead, most in ((1, 1 + 4), (None, 2 * 4 + 2 + 4)):
            scan = parallel_scan(table, concurrency=4, page_size=10, read_ahead=ahead)
            pages = scan.by_page()
            first = await pages.__anext__()
            await asyncio.sleep(0.3)  # the readers run on while nothing is taken
            read = scan.stats.requests - scan.stats.probes
            # held (read ahead) + the page taken + requests under way (the concurrency)
            assert read <= most + 1, (ahead, read)
            if ahead is None:
                assert read > 1 + 1 + 4  # the default holds more than one
            n = len(first.items)
            async for page in pages:
                n += len(page.items)
            assert n == 200
        with pytest.raises(azt.ValidationError, match="read_ahead"):
            parallel_scan(table, read_ahead=0)
        with pytest.raises(azt.ValidationError, match="read_ahead"):
            parallel_scan(table, read_ahead=True)
