"""Parallel scans against the stub with range-partition realism: the same entities as a
plain query (ordered: the same order), key ranges in UTF-16 order, exact resumes, several
ranges really read at once, filter and select on every range, throttling survived."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import azt
from azt._orm.pages import encode_token
from azt._orm.planner import ordinal
from azt._orm.scan_ranges import scan_fingerprint
from azt.scan import ParallelScan, parallel_scan
from azt_server_stub.realism.partitions import RangeLayout
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits
from tests.realism.support import fast_retry, table_client
from tests.scan.support import TABLE, Counting, grid, in_key_order, keys, loaded, plain

LAYOUTS = {
    "partition-pages": RangeLayout(partition_pages=True),
    "ranges+budget": RangeLayout(
        boundaries=("p005", "p005a", "p011", "p020", "zzz"), scan_budget=9
    ),
}


@pytest.mark.parametrize("layout", list(LAYOUTS), ids=list(LAYOUTS))
@pytest.mark.parametrize("ordered", [False, True], ids=["unordered", "ordered"])
async def test_whole_table_equals_a_plain_query(layout: str, ordered: bool) -> None:
    rows = grid(24, 30)
    async with loaded(rows, LAYOUTS[layout]) as stub, table_client(stub, TABLE) as table:
        expected = await plain(table)
        for concurrency in (1, 3, 8):
            scan = parallel_scan(table, concurrency=concurrency, ordered=ordered, page_size=13)
            got = keys([e async for e in scan])
            assert Counter(got) == Counter(expected)
            if ordered:
                assert got == expected
            if concurrency == 8:
                assert scan.stats.ranges > 1  # the key space was split
            assert scan.token is None


async def test_several_ranges_are_read_at_once() -> None:
    async with loaded(grid(40, 25)) as stub, table_client(stub, TABLE) as table:
        counting = Counting(table)
        scan = parallel_scan(counting, concurrency=6, page_size=10)
        got = keys([e async for e in scan])
        assert len(got) == len(set(got)) == 1000
        assert counting.peak_ranges >= 3  # page requests of distinct ranges in flight together
        assert counting.peak <= 6  # never over the bound
        assert scan.stats.peak_in_flight == counting.peak
        # one reader alone: one request at a time
        single = Counting(table)
        scan = parallel_scan(single, concurrency=1, page_size=10)
        assert len([e async for e in scan]) == 1000
        assert single.peak == 1


ODD_KEYS = [
    "a",
    "a\ue000",
    "a\uffff",
    "a\U00010000",
    "a\U0010ffff",
    "a\U0001f600z",
    "b",
    "\ud7ff",
    "\ue000x",
    "\uffff",
    "\uffff\uffff",
    "\U00010000",
    "\U0010ffff",
    "z\U0001f600",
    "zz",
]


def odd_rows() -> list[dict[str, Any]]:
    return [
        {"PartitionKey": pk, "RowKey": f"r{r:02d}", "n": r} for pk in ODD_KEYS for r in range(9)
    ]


def between_keys(start: str | None, stop: str | None) -> list[tuple[str, str]]:
    lo = ordinal(start or "")
    return in_key_order(
        [
            (e["PartitionKey"], e["RowKey"])
            for e in odd_rows()
            if ordinal(e["PartitionKey"]) >= lo
            and (stop is None or ordinal(e["PartitionKey"]) < ordinal(stop))
        ]
    )


async def test_key_ranges_follow_the_services_utf16_order() -> None:
    bounds = [
        (None, None),
        ("a", "b"),
        ("a\uffff", None),
        ("a\U00010000", "a\uffff"),  # astral sorts below U+E000..U+FFFF
        ("\ue000", "\uffff\uffff"),
        ("\U00010000", "\ue000"),
        ("\uffff", None),
        ("", "a\U0010ffff"),
    ]
    async with loaded(odd_rows()) as stub, table_client(stub, TABLE) as table:
        for start, stop in bounds:
            for ordered in (True, False):
                scan = parallel_scan(
                    table, start=start, stop=stop, concurrency=5, ordered=ordered, page_size=4
                )
                got = keys([e async for e in scan])
                want = between_keys(start, stop)
                assert (got if ordered else in_key_order(got)) == want, (start, stop)
                assert len(got) == len(set(got))
        whole = parallel_scan(table, concurrency=8, page_size=4)
        assert in_key_order(keys([e async for e in whole])) == between_keys(None, None)
        assert whole.stats.ranges > 1
        # a prefix is the range [prefix, its UTF-16 upper bound)
        got = keys([e async for e in parallel_scan(table, prefix="a", ordered=True)])
        assert got == [k for k in between_keys(None, None) if k[0].startswith("a")]
        got = keys([e async for e in parallel_scan(table, prefix="\uffff", ordered=True)])
        assert got == [k for k in between_keys(None, None) if k[0].startswith("\uffff")]


@pytest.mark.parametrize("ordered", [False, True], ids=["unordered", "ordered"])
async def test_resume_from_a_token_yields_exactly_the_rest(ordered: bool) -> None:
    async with (
        loaded(grid(20, 20), LAYOUTS["ranges+budget"]) as stub,
        table_client(stub, TABLE) as table,
    ):
        expected = await plain(table)
        for cut in (1, 57, 200, 399):
            scan = parallel_scan(table, concurrency=4, ordered=ordered, page_size=11)
            first: list[Any] = []
            async for e in scan:
                first.append(e)
                if len(first) == cut:
                    break
            token = scan.token
            await scan.aclose()
            assert token is not None
            rest_scan = parallel_scan(table, concurrency=3, ordered=ordered, token=token)
            rest = [e async for e in rest_scan]
            got = keys(first) + keys(rest)
            assert Counter(got) == Counter(expected)  # nothing lost, nothing twice
            if ordered:
                assert got == expected
            assert rest_scan.stats.entities == len(expected)
        # page tokens: resume after every page of a by_page scan
        scan = parallel_scan(table, concurrency=4, ordered=ordered, page_size=17)
        pages = [p async for p in scan.by_page()]
        assert pages[-1].token is None
        mid = pages[len(pages) // 2]
        before = [k for p in pages[: len(pages) // 2 + 1] for k in keys(p.items)]
        after = keys([e async for e in parallel_scan(table, token=mid.token)])
        assert Counter(before + after) == Counter(expected)


async def test_a_token_of_another_scan_or_edited_is_refused() -> None:
    async with loaded(grid(6, 10)) as stub, table_client(stub, TABLE) as table:
        scan = parallel_scan(table, filter="v ge 3000", page_size=5)
        async for _ in scan:
            break
        token = scan.token
        await scan.aclose()
        assert token is not None
        with pytest.raises(azt.ValidationError, match="different scan"):
            parallel_scan(table, filter="v ge 2000", token=token)
        with pytest.raises(azt.ValidationError, match="different scan"):
            parallel_scan(table, filter="v ge 3000", start="p002", token=token)
        with pytest.raises(azt.ValidationError, match="malformed"):
            parallel_scan(table, filter="v ge 3000", token=token[:-6] + "AAAAAA")
        # a query's token shape (even bound to this scan's fingerprint) is not a scan's
        query_like = encode_token({"v": 1, "q": scan_fingerprint(None, None, "", None), "n": 3})
        with pytest.raises(azt.ValidationError, match="not a scan"):
            parallel_scan(table, token=query_like)
        # the same scan takes it
        rest = [e async for e in parallel_scan(table, filter="v ge 3000", token=token)]
        assert len(rest) == 29


async def test_filter_parameters_and_select_reach_every_range() -> None:
    async with loaded(grid(20, 20)) as stub, table_client(stub, TABLE) as table:
        flt = "v ge @low and odd eq true"
        expected = await plain(table, filter=flt, parameters={"low": 7000})
        scan = parallel_scan(
            table,
            filter=flt,
            parameters={"low": 7000},
            select=["v"],
            concurrency=6,
            ordered=True,
            page_size=7,
        )
        got = [e async for e in scan]
        assert keys(got) == expected
        assert scan.stats.ranges > 1
        assert all(set(e) == {"PartitionKey", "RowKey", "v"} for e in got)
        assert all(e["v"] >= 7000 and e["v"] % 2 == 1 for e in got)


async def test_throttled_reads_shrink_the_concurrency_and_lose_nothing() -> None:
    # 10 entities a page, a partition refills 400/s from a 40-entity bucket: readers of the
    # same partitions are refused; the client does not retry (1 attempt), so the scan sees
    # every 503 itself and halves its bound
    limits = ThrottleLimits(partition_rate=400, account_rate=None, burst=0.1)
    throttle = Throttle(limits)
    async with loaded(grid(6, 60), throttle=throttle) as stub:
        retry = azt.RetryPolicy.no_retries()
        async with table_client(stub, TABLE, retry=retry) as table:
            scan = parallel_scan(table, concurrency=8, page_size=10)
            got = keys([e async for e in scan])
        async with table_client(stub, TABLE, retry=fast_retry()) as table:
            expected = await plain(table)
    assert Counter(got) == Counter(expected)
    assert scan.stats.throttled > 0  # the scan met 503s itself and sent those pages again


async def test_bad_arguments_are_refused_before_anything_is_sent() -> None:
    async with loaded(grid(2, 2)) as stub, table_client(stub, TABLE) as table:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"concurrency": 0}, "concurrency"),
            ({"concurrency": "lots"}, "concurrency"),
            ({"page_size": 1001}, "page_size"),
            ({"start": "b", "stop": "a"}, "stop"),
            ({"prefix": "a", "start": "a"}, "prefix"),
            ({"parameters": {"x": 1}}, "parameters"),
            ({"select": "v"}, "select"),
            ({"token": "garbage"}, "malformed"),
        ]
        for kw, match in cases:
            with pytest.raises(azt.ValidationError, match=match):
                parallel_scan(table, **kw)
        scan = parallel_scan(table)
        assert isinstance(scan, ParallelScan)
        assert len([e async for e in scan]) == 4
        with pytest.raises(azt.ValidationError, match="once"):
            async for _ in scan:
                pass


async def test_an_empty_table_and_an_empty_range() -> None:
    async with loaded(grid(3, 3)) as stub, table_client(stub, TABLE) as table:
        assert [e async for e in parallel_scan(table, start="q", concurrency=4)] == []
        assert [e async for e in parallel_scan(table, prefix="zz", ordered=True)] == []
        scan = parallel_scan(table, filter="v ge 99999", concurrency=4)
        pages = [p async for p in scan.by_page()]
        assert [len(p.items) for p in pages] == [0]
        assert pages[0].token is None


async def drain(scan: ParallelScan, into: list[Any]) -> None:
    async for e in scan:
        into.append(e)


class Failing:
    """A table whose ``fail_at``-th page request (probes aside) raises a refusal."""

    def __init__(self, table: azt.TableClient, fail_at: int) -> None:
        self.table = table
        self.fail_at = fail_at
        self.pages = 0

    @property
    def wire_format(self) -> azt.WireFormat:
        return self.table.wire_format

    def query_entities(self, filter: str | None = None, **kw: Any) -> Any:
        pager = self.table.query_entities(filter, **kw)
        outer = self
        probe = kw.get("results_per_page") == 1

        class _Pager:
            async def first_page(self) -> Any:
                if not probe:
                    outer.pages += 1
                    if outer.pages == outer.fail_at:
                        raise azt.AuthorizationError("denied", status=403)
                return await pager.first_page()

        return _Pager()


@pytest.mark.parametrize("ordered", [False, True], ids=["unordered", "ordered"])
@pytest.mark.parametrize("concurrency", [1, 4])
async def test_a_failed_read_fails_the_scan_never_ends_it_short(
    ordered: bool, concurrency: int
) -> None:
    async with loaded(grid(8, 20)) as stub, table_client(stub, TABLE) as table:
        for fail_at in (1, 3, 9):
            failing = Failing(table, fail_at)
            scan = parallel_scan(failing, concurrency=concurrency, ordered=ordered, page_size=9)
            got: list[Any] = []
            with pytest.raises(azt.AuthorizationError):
                await drain(scan, got)
            assert len(got) < 160
            # what was returned plus a resume from the token is everything, once
            rest = [e async for e in parallel_scan(table, ordered=ordered, token=scan.token)]
            assert Counter(keys(got + rest)) == Counter(keys(await table.list_entities().to_list()))
