"""An ordered scan keeps its requests in flight busy (a reader waiting on a full buffer
does not hold a place of the concurrency, splits are cut near the head), and its memory
stays bounded whatever the consumer does: ``read_ahead`` pages in all (plus the head's
next one), a few per range."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import azt
from azt.scan import parallel_scan
from tests.realism.support import table_client
from tests.scan.support import TABLE, grid, keys, loaded, plain


class Slow:
    """A table whose page requests (probes aside) answer after ``delay`` seconds; it
    measures the page requests in flight over time (their mean, from the first request
    to the last answer) and their most at once."""

    def __init__(self, table: azt.TableClient, delay: float) -> None:
        self.table = table
        self.delay = delay
        self.now = 0
        self.peak = 0
        self.area = 0.0
        self.first: float | None = None
        self.last = 0.0

    @property
    def wire_format(self) -> azt.WireFormat:
        return self.table.wire_format

    def _move(self, by: int) -> None:
        t = time.perf_counter()
        if self.first is None:
            self.first = t
        else:
            self.area += self.now * (t - self.last)
        self.last = t
        self.now += by
        self.peak = max(self.peak, self.now)

    def mean(self) -> float:
        assert self.first is not None
        return self.area / (self.last - self.first)

    def query_entities(self, filter: str | None = None, **kw: Any) -> Any:
        pager = self.table.query_entities(filter, **kw)
        probe = kw.get("results_per_page") == 1
        outer = self

        class _Pager:
            async def first_page(self) -> Any:
                if probe:
                    return await pager.first_page()
                outer._move(1)
                try:
                    await asyncio.sleep(outer.delay)
                    return await pager.first_page()
                finally:
                    outer._move(-1)

        return _Pager()


async def test_an_ordered_scan_keeps_its_requests_in_flight() -> None:
    # 160 partitions of one page each, pages that take 20 ms, a consumer that takes them
    # at once: the head range alone would keep one request in flight of the four
    async with loaded(grid(160, 10)) as stub, table_client(stub, TABLE) as table:
        expected = await plain(table)
        slow = Slow(table, 0.02)
        scan = parallel_scan(slow, concurrency=4, ordered=True, page_size=10)
        got = keys([e async for e in scan])
    assert got == expected
    assert slow.peak <= 4
    # before the fix 1.6 were in flight here (ranges other than the head stopped at 8
    # pages and kept their place of the concurrency, so nothing was split); now 3
    assert slow.mean() >= 2.2, (slow.mean(), scan.stats)


async def test_a_slow_consumer_never_makes_an_ordered_scan_hold_more_than_the_bound() -> None:
    async with loaded(grid(24, 20)) as stub, table_client(stub, TABLE) as table:
        expected = await plain(table)
        for ahead, concurrency in ((5, 3), (None, 2)):
            bound = ahead if ahead is not None else 8 * concurrency + 2
            counted = Slow(table, 0)
            scan = parallel_scan(
                counted, concurrency=concurrency, ordered=True, page_size=5, read_ahead=ahead
            )
            got: list[Any] = []
            most = 0
            async for page in scan.by_page():
                got += page.items
                await asyncio.sleep(0.02)  # the readers run on while nothing is taken
                # pages read and not given out yet, and pages being read (white box: the
                # buffers are the scan's own, counted here from the ranges themselves)
                buffers = [len(r.pages) for r in scan._ranges]
                held = sum(buffers) + counted.now
                most = max(most, held)
                assert held <= bound + 1, (ahead, buffers, counted.now)
                assert max(buffers) <= 8, buffers
            assert keys(got) == expected
            assert most >= min(bound, 8), (ahead, most)  # it did read ahead


async def test_an_ordered_scan_with_read_ahead_one_still_returns_everything_in_order() -> None:
    async with loaded(grid(12, 9)) as stub, table_client(stub, TABLE) as table:
        expected = await plain(table)
        scan = parallel_scan(table, concurrency=4, ordered=True, page_size=4, read_ahead=1)
        got = keys([e async for e in scan])
    assert got == expected
    assert Counter(got) == Counter(expected)
