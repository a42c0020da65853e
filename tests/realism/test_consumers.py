"""Every consumer of query pages against range-partition boundaries (with empty range
partitions) and a scan budget: the azt ORM ``Query`` (single range and fan-out), the unit
of work's ``ContextQuery``, and Microsoft's ``azure-data-tables`` (aio) as a peer client.
Each must follow short and empty pages to the end and return every entity exactly once,
in order, also while 503s hit the reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from azure.data.tables.aio import TableClient as SdkTableClient

import azt
from azt.context import TableContext
from azt.entity import Entity, Prop, prop
from azt.query import PlanKind, Query
from azt_server_stub.realism.faults import FaultInjector, FaultKind
from tests.realism.support import RunningStub, fast_retry
from tests.realism.test_ranges import TABLE, expected, layout, loaded


class Row(Entity):
    """The entities of ``test_ranges.all_entities`` as a declared class."""

    p: Prop[int] = prop(name="P", default=0)
    r: Prop[int] = prop(name="R", default=0)


def keys_of(rows: list[Row]) -> list[tuple[str, str]]:
    return [(row.PartitionKey, row.RowKey) for row in rows]


@asynccontextmanager
async def service_of(stub: RunningStub) -> AsyncIterator[azt.TableServiceClient]:
    service = azt.TableServiceClient.from_connection_string(
        stub.connection_string, retry=fast_retry()
    )
    async with service:
        yield service


async def test_orm_query_single_range_and_fan_out() -> None:
    counter = FaultInjector()
    async with loaded(faults=counter) as (stub, _), service_of(stub) as service:
        table = service.get_table_client(TABLE)
        everything = await Query(Row, table).to_list()
        assert keys_of(everything) == expected(lambda e: True)
        assert [(row.p, row.r) for row in everything[:3]] == [(0, 0), (0, 1), (0, 2)]
        reads = counter.fail_rate(FaultKind.BUSY, 0.0, only="reads")  # counts, never fires
        sparse = Query(Row, table).where(Row.r == 19).page_size(3)
        pages = [page async for page in sparse.pages()]
        assert keys_of([row for page in pages for row in page.items]) == expected(
            lambda e: e["R"] == 19
        )
        # the ORM skips empty service pages (documented); the service sent many of them
        assert all(page.items for page in pages)
        assert reads.seen > len(pages) + 20
        assert all(page.continuation for page in pages[:-1])
        assert pages[-1].continuation is None
        chosen = ["p001", "p005", "p006", "p013", "p029"]
        fan = Query(Row, table).where(Row.PartitionKey.in_(chosen) & (Row.r >= 17))
        assert fan.explain().kind is PlanKind.MULTI
        assert keys_of(await fan.to_list()) == expected(
            lambda e: e["PartitionKey"] in chosen and e["R"] >= 17
        )


async def test_context_query_tracks_each_entity_once() -> None:
    async with loaded() as (stub, _), service_of(stub) as service:
        ctx = TableContext(service)
        rows = await ctx.query(Row, TABLE).where(Row.r >= 15).page_size(4).to_list()
        assert keys_of(rows) == expected(lambda e: e["R"] >= 15)
        assert len(ctx.entries()) == len(rows)  # one tracked object per key
        again = [row async for row in ctx.query(Row, TABLE).where(Row.r >= 15)]
        assert all(a is b for a, b in zip(again, rows, strict=True))  # the same objects


def sdk_client(stub: RunningStub) -> SdkTableClient:
    # no back-off between retries: the tests stay fast under injected 503s
    return SdkTableClient.from_connection_string(
        stub.connection_string, TABLE, retry_total=20, retry_backoff_factor=0.0
    )


async def sdk_pages(pager: Any) -> list[list[dict[str, Any]]]:
    pages: list[list[dict[str, Any]]] = []
    async for page in pager.by_page():
        pages.append([entity async for entity in page])
    return pages


def sdk_keys(pages: list[list[dict[str, Any]]]) -> list[tuple[str, str]]:
    return [(e["PartitionKey"], e["RowKey"]) for page in pages for e in page]


async def test_azure_data_tables_follows_short_and_empty_pages() -> None:
    async with loaded() as (stub, _), sdk_client(stub) as sdk:
        pages = await sdk_pages(sdk.list_entities(results_per_page=5))
        assert sdk_keys(pages) == expected(lambda e: True)
        assert all(len(page) <= 5 for page in pages)
        assert any(len(page) == 0 for page in pages[:-1])  # the empty range partition
        pages = await sdk_pages(sdk.query_entities("R eq 19"))
        assert sdk_keys(pages) == expected(lambda e: e["R"] == 19)
        assert sum(1 for page in pages if not page) > 20
        pages = await sdk_pages(
            sdk.query_entities(
                "PartitionKey ge @lo and PartitionKey lt @hi and R lt 2",
                parameters={"lo": "p003", "hi": "p010"},
                results_per_page=1,
            )
        )
        assert sdk_keys(pages) == expected(
            lambda e: "p003" <= e["PartitionKey"] < "p010" and e["R"] < 2
        )
        assert all(len(page) <= 1 for page in pages)
        assert layout().boundaries  # the layout under test does cut pages


async def test_azure_data_tables_under_busy_reads() -> None:
    inj = FaultInjector(seed=3)
    async with loaded(faults=inj) as (stub, _), sdk_client(stub) as sdk:
        rule = inj.fail_rate(FaultKind.BUSY, 0.2, only="reads")
        pages = await sdk_pages(sdk.query_entities("R ge 12"))
        assert sdk_keys(pages) == expected(lambda e: e["R"] >= 12)
    assert rule.injected > 10
    assert 0.1 < rule.injected / rule.seen < 0.3
