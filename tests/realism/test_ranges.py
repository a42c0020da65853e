"""Queries with the azt client across range-partition boundaries and scan budgets: short
and empty pages with continuation tokens, and still every entity exactly once, in order,
also when the client resumes from a stored token and when 503s hit the reads."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

import azt
from azt_server_stub.realism.faults import FaultInjector, FaultKind
from azt_server_stub.realism.partitions import PartitionLayout, RangeLayout
from azt_server_stub.realism.throttle import FakeClock, Throttle, ThrottleLimits
from tests.realism.support import RunningStub, realism_stub, table_client

TABLE = "ranges"
N_PK, N_RK = 30, 20  # 600 entities


def all_entities() -> list[dict[str, Any]]:
    return [
        {"PartitionKey": f"p{p:03d}", "RowKey": f"r{r:02d}", "P": p, "R": r}
        for p in range(N_PK)
        for r in range(N_RK)
    ]


def layout() -> RangeLayout:
    # A range partition every 4 PartitionKeys, plus empty ones (no PartitionKey between
    # "p005a" and "p005b", nor after "p900"), and at most 7 entities examined per page.
    bounds = [f"p{p:03d}" for p in range(4, N_PK, 4)] + ["p005a", "p005b", "p900"]
    return RangeLayout(boundaries=tuple(bounds), scan_budget=7)


@asynccontextmanager
async def loaded(
    *, faults: FaultInjector | None = None, throttle: Throttle | None = None
) -> AsyncIterator[tuple[RunningStub, PartitionLayout]]:
    partitions = PartitionLayout()  # no cuts while loading
    async with realism_stub(faults=faults, throttle=throttle, partitions=partitions) as stub:
        async with table_client(stub, TABLE) as table:
            await table.create_table()
            for start in range(0, N_PK * N_RK, N_RK):
                batch = table.batch()
                for e in all_entities()[start : start + N_RK]:
                    batch.create(e)
                await table.submit_transaction(batch)
        partitions.set_table(TABLE, layout())
        yield stub, partitions


def keys(rows: list[azt.TableEntity]) -> list[tuple[str, str]]:
    return [(e["PartitionKey"], e["RowKey"]) for e in rows]


def expected(where: Callable[[dict[str, Any]], bool]) -> list[tuple[str, str]]:
    return sorted((e["PartitionKey"], e["RowKey"]) for e in all_entities() if where(e))


async def pages_of(pager: azt.AsyncPager[azt.TableEntity]) -> list[azt.Page[azt.TableEntity]]:
    return [page async for page in pager.by_page()]


async def test_full_listing_is_exact_across_boundaries_and_budgets() -> None:
    async with loaded() as (stub, _), table_client(stub, TABLE) as table:
        pages = await pages_of(table.list_entities())
    got = keys([e for page in pages for e in page])
    assert got == expected(lambda e: True)
    assert all(len(page) <= 7 for page in pages)  # the scan budget cuts every page
    assert len(pages) >= N_PK * N_RK // 7
    # the empty range partition [p005a, p005b) gives one empty page: the page that reaches
    # p005a points at that boundary, the next one finds nothing before p005b; the empty
    # last range [p900, ...) gives none (nothing is left after the last entity)
    # (pages 0-11: [p000, p004), 80 entities in 7s; pages 12-17: p004 and p005; page 18)
    assert [n for n, page in enumerate(pages) if len(page) == 0] == [18]
    assert all(page.continuation is not None for page in pages[:-1])
    assert pages[-1].continuation is None
    # no page mixes PartitionKeys from two range partitions
    bounds = layout()
    for page in pages:
        parts = {bounds.partition_of(e["PartitionKey"]) for e in page}
        assert len(parts) <= 1


async def test_sparse_filter_gets_empty_pages_and_still_every_match() -> None:
    async with loaded() as (stub, _), table_client(stub, TABLE) as table:
        pager = table.query_entities("R eq @r", parameters={"r": 19})
        pages = await pages_of(pager)
    got = keys([e for page in pages for e in page])
    assert got == expected(lambda e: e["R"] == 19)
    empty = [page for page in pages if len(page) == 0]
    assert len(empty) > N_PK  # most pages examine 7 non-matching rows and return nothing
    assert all(page.continuation is not None for page in empty)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "PartitionKey ge 'p010' and PartitionKey lt 'p020' and R ge 15",
            lambda e: "p010" <= e["PartitionKey"] < "p020" and e["R"] >= 15,
        ),
        ("PartitionKey eq 'p013'", lambda e: e["PartitionKey"] == "p013"),
        (
            "(PartitionKey eq 'p003' or PartitionKey eq 'p027') and RowKey gt 'r10'",
            lambda e: e["PartitionKey"] in ("p003", "p027") and e["RowKey"] > "r10",
        ),
        ("P gt 25 or R lt 1", lambda e: e["P"] > 25 or e["R"] < 1),
    ],
)
async def test_filtered_queries_with_top_are_exact(
    text: str, where: Callable[[dict[str, Any]], bool]
) -> None:
    async with loaded() as (stub, _), table_client(stub, TABLE) as table:
        for per_page in (None, 1, 3):
            rows = await table.query_entities(text, results_per_page=per_page).to_list()
            assert keys(rows) == expected(where), (text, per_page)


async def test_resuming_from_a_stored_token_loses_and_repeats_nothing() -> None:
    async with loaded() as (stub, partitions), table_client(stub, TABLE) as table:
        first: list[azt.TableEntity] = []
        saved: str | None = None
        async for page in table.list_entities(results_per_page=5).by_page():
            first.extend(page)
            if len(first) >= 100 and page.continuation is not None:
                saved = str(page.continuation)
                break
        assert saved is not None
        # the layout may even change between the two halves (the service rebalances)
        partitions.set_table(TABLE, RangeLayout(boundaries=("p017",), scan_budget=3))
        rest = await table.list_entities(results_per_page=5, continuation=saved).to_list()
    assert keys(first) + keys(rest) == expected(lambda e: True)


async def test_ranges_and_busy_reads_together() -> None:
    inj = FaultInjector(seed=5)
    async with loaded(faults=inj) as (stub, _), table_client(stub, TABLE) as table:
        inj.fail_rate(FaultKind.BUSY, 0.2, only="reads")
        inj.fail_rate(FaultKind.DROP_AFTER, 0.05, only="reads")
        rows = await table.query_entities("R ge 10").to_list()
    assert keys(rows) == expected(lambda e: e["R"] >= 10)
    assert inj.counters[FaultKind.BUSY] > 5
    assert inj.counters[FaultKind.DROP_AFTER] > 0


async def test_query_pages_are_charged_what_they_scanned() -> None:
    """A page that examined 7 entities costs 7 to the partitions it read."""
    clock = FakeClock()
    throttle = Throttle(ThrottleLimits(partition_rate=1e9, account_rate=None), clock=clock)
    async with loaded(throttle=throttle) as (stub, _), table_client(stub, TABLE) as table:
        throttle.reset()
        throttle.set_limits(ThrottleLimits(partition_rate=10, account_rate=None))
        page = await table.query_entities("PartitionKey eq 'p001' and R ge 18").first_page()
        assert len(page) == 0  # examined r00..r06: no match, budget spent
        pid = ("devstoreaccount1", TABLE, "p001")
        assert throttle.stats.by_partition[pid] == 7
        assert throttle.tokens("devstoreaccount1", TABLE, "p001") == 3
        page = await table.query_entities(
            "PartitionKey eq 'p001' and R ge 18", continuation=page.continuation
        ).first_page()
        assert throttle.tokens("devstoreaccount1", TABLE, "p001") == -4  # overdrawn
        async with table_client(stub, TABLE, retry=azt.RetryPolicy.no_retries()) as once:
            with pytest.raises(azt.ServerBusyError):
                await once.get_entity("p001", "r00")
            # a query page starting in the indebted partition is refused too, and takes nothing
            with pytest.raises(azt.ServerBusyError):
                await once.query_entities("PartitionKey eq 'p001'").first_page()
            with pytest.raises(azt.ServerBusyError):
                await once.query_entities(
                    "R ge 18", continuation=page.continuation, results_per_page=1
                ).first_page()
            assert throttle.tokens("devstoreaccount1", TABLE, "p001") == -4
            assert throttle.stats.throttled_by_partition[pid] == 3
            # while a query on another partition is served
            other = await once.query_entities("PartitionKey eq 'p002'").first_page()
            assert [e["R"] for e in other] == list(range(7))
        clock.advance(0.5)  # -4 + 5 = 1 token
        async with table_client(stub, TABLE) as fresh:
            assert (await fresh.get_entity("p001", "r00"))["R"] == 0


async def test_partition_pages_with_the_client() -> None:
    async with loaded() as (stub, partitions), table_client(stub, TABLE) as table:
        partitions.set_table(TABLE, RangeLayout(partition_pages=True, scan_budget=15))
        pages = await pages_of(table.query_entities("R lt 18"))
    assert keys([e for page in pages for e in page]) == expected(lambda e: e["R"] < 18)
    assert all(len({e["PartitionKey"] for e in page}) <= 1 for page in pages)
    # per partition: 15 examined, then the 3 rows left (r15..r17 match, r18/r19 do not);
    # the scan from the table's start begins with the first PartitionKey, not an empty page
    assert [len(page) for page in pages] == [15, 3] * N_PK
