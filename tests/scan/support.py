"""Loading a table into a stub with range-partition realism, a plain query to compare
with, and a table wrapper that measures the requests a scan has in flight."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from itertools import groupby
from typing import Any

import azt
from azt._orm.planner import ordinal
from azt_server_stub.realism.partitions import PartitionLayout, RangeLayout
from azt_server_stub.realism.throttle import Throttle
from tests.realism.support import RunningStub, realism_stub, table_client

TABLE = "scanned"
Key = tuple[str, str]


def grid(n_pk: int, n_rk: int) -> list[dict[str, Any]]:
    return [
        {"PartitionKey": f"p{p:03d}", "RowKey": f"r{r:03d}", "v": p * 1000 + r, "odd": r % 2 == 1}
        for p in range(n_pk)
        for r in range(n_rk)
    ]


def keys(rows: Sequence[Any]) -> list[Key]:
    return [(e["PartitionKey"], e["RowKey"]) for e in rows]


def in_key_order(ks: Sequence[Key]) -> list[Key]:
    return sorted(ks, key=lambda k: (ordinal(k[0]), ordinal(k[1])))


@asynccontextmanager
async def loaded(
    rows: list[dict[str, Any]],
    layout: RangeLayout | None = None,
    *,
    throttle: Throttle | None = None,
) -> AsyncIterator[RunningStub]:
    """A stub holding ``rows`` in TABLE, then cut into pages by ``layout``."""
    partitions = PartitionLayout()  # no cuts while loading
    async with realism_stub(partitions=partitions, throttle=throttle) as stub:
        async with table_client(stub, TABLE) as table:
            await table.create_table()
            ordered = sorted(rows, key=lambda e: e["PartitionKey"])
            for _, group in groupby(ordered, key=lambda e: e["PartitionKey"]):
                part = list(group)
                for i in range(0, len(part), 100):
                    batch = table.batch()
                    for e in part[i : i + 100]:
                        batch.create(e)
                    await table.submit_transaction(batch)
        if throttle is not None:
            throttle.reset()
        partitions.set_table(TABLE, layout or RangeLayout(partition_pages=True))
        yield stub


async def plain(table: azt.TableClient, **kw: Any) -> list[Key]:
    return keys(await table.query_entities(**kw).to_list())


class Counting:
    """A table whose page requests are counted while in flight: ``peak`` requests at once,
    ``peak_ranges`` distinct range readers (not probes) at once."""

    def __init__(self, table: azt.TableClient) -> None:
        self.table = table
        self.now: list[str] = []
        self.peak = 0
        self.peak_ranges = 0

    @property
    def wire_format(self) -> azt.WireFormat:
        return self.table.wire_format

    def query_entities(self, filter: str | None = None, **kw: Any) -> Any:
        pager = self.table.query_entities(filter, **kw)
        probe = kw.get("results_per_page") == 1
        outer = self

        class _Pager:
            async def first_page(self) -> Any:
                tag = "probe" if probe else (filter or "")
                outer.now.append(tag)
                outer.peak = max(outer.peak, len(outer.now))
                readers = {t for t in outer.now if t != "probe"}
                outer.peak_ranges = max(outer.peak_ranges, len(readers))
                try:
                    return await pager.first_page()
                finally:
                    outer.now.remove(tag)

        return _Pager()
