"""The migration's pipeline settings that docs/migrations.md states: pages of 200 rows
read at most 2 ahead of the writes at the start, one more per page written, up to 8 (the
scan holding at most 2 unread); a page at most a tenth of the loader's partition rate
(at least 20 rows), smaller pages read further ahead (1,600 rows, at most 32 pages) by 16
readers; the loader holding a partial transaction at most 20 ms (or the shorter
``linger`` it was given), its other options as given."""

from __future__ import annotations

from typing import Any

import pytest

import azt
from azt._core.bulk.loader import load as real_load
from azt._orm import migration_runner
from azt._orm.scan import parallel_scan as real_scan
from azt.bulk import BulkOptions
from azt.migrate import Migration, rename, run_migrations


async def fill(table: azt.TableClient, n: int) -> None:
    async with table.batch_writer() as w:
        for i in range(n):
            await w.upsert({"PartitionKey": f"p{i % 4}", "RowKey": f"{i:04d}", "Name": "x"})


def test_the_documented_settings() -> None:
    assert migration_runner._START_AHEAD == 2
    assert migration_runner._LINGER == 0.02
    pacing = migration_runner.pacing
    assert pacing(BulkOptions(), None) == (200, 8, 8)  # Azure's 2,000 a partition
    assert pacing(BulkOptions(partition_rate=5000), None) == (200, 8, 8)
    assert pacing(BulkOptions(partition_rate=1000), None) == (100, 16, 16)
    assert pacing(BulkOptions(partition_rate=300), None) == (30, 32, 16)
    assert pacing(BulkOptions(partition_rate=200), None) == (20, 32, 16)
    assert pacing(BulkOptions(partition_rate=50), 4) == (20, 32, 4)  # asked: as asked


async def test_small_pages_for_a_low_partition_rate(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = await service.create_table("small")
    await fill(table, 50)
    asked: list[Any] = []

    def scan(*args: Any, **kwargs: Any) -> Any:
        asked.append((kwargs["page_size"], kwargs["concurrency"]))
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(migration_runner, "parallel_scan", scan)
    m = Migration("0001", "small", [rename("Name", "FullName")])
    [report] = await run_migrations(service, [m], options=BulkOptions(partition_rate=200))
    assert (report.ok, report.written) == (True, 50)
    assert asked == [(20, 16)]


@pytest.mark.parametrize(("given", "used"), [(1.0, 0.02), (0.25, 0.02), (0.005, 0.005)])
async def test_the_loader_lingers_briefly(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch, given: float, used: float
) -> None:
    table = await service.create_table("linger")
    await fill(table, 40)
    seen: list[BulkOptions] = []
    real = real_load

    async def load(*args: Any, options: BulkOptions, **kwargs: Any) -> Any:
        seen.append(options)
        return await real(*args, options=options, **kwargs)

    monkeypatch.setattr(migration_runner, "load", load)
    told = BulkOptions(linger=given, partition_rate=123, account_rate=4567, max_attempts=7)
    [report] = await run_migrations(
        service, [Migration("0001", "linger", [rename("Name", "FullName")])], options=told
    )
    assert (report.ok, report.written) == (True, 40)
    [options] = seen
    assert options.linger == used
    assert (options.partition_rate, options.account_rate, options.max_attempts) == (
        123,
        4567,
        7,
    )


async def test_pages_ahead_start_at_two_and_grow_to_eight(
    service: azt.TableServiceClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 10 rows (40 of them): the third page is taken only once one is written;
    later up to 8 are in hand at once, never more; the scan is asked to hold 2 unread."""
    table = await service.create_table("ahead")
    await fill(table, 400)
    monkeypatch.setattr(migration_runner, "pacing", lambda told, readers: (10, 8, 8))
    events: list[str] = []
    in_hand = [0, 0]  # now, most
    real_page = migration_runner._Run._page

    async def page(self: Any, rows: list[Any], token: str | None) -> None:
        events.append("start")
        in_hand[0] += 1
        in_hand[1] = max(in_hand[1], in_hand[0])
        try:
            await real_page(self, rows, token)
        finally:
            in_hand[0] -= 1
            events.append("end")

    monkeypatch.setattr(migration_runner._Run, "_page", page)
    asked: list[Any] = []

    def scan(*args: Any, **kwargs: Any) -> Any:
        asked.append((kwargs["page_size"], kwargs["read_ahead"]))
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(migration_runner, "parallel_scan", scan)
    [report] = await run_migrations(
        service,
        [Migration("0001", "ahead", [rename("Name", "FullName")])],
        options=BulkOptions(linger=0.001),
    )
    assert (report.ok, report.written) == (True, 400)
    assert asked == [(10, 2)]
    assert events.index("end") < [i for i, e in enumerate(events) if e == "start"][2]
    assert 2 < in_hand[1] <= 8
