"""Queries on the Cosmos DB Table API, whose results are not sorted by PartitionKey and
RowKey: the brute-force and UTF-16 key-range properties of ``test_query_matches_brute_force``
and ``test_key_order_utf16`` against the stub's Cosmos flavour, compared as sets (no order
is promised) with every row exactly once, plus the fan-out and resume cases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from azt._core.config import Flavor
from azt._errors import ValidationError
from azt.query import Condition, FanOut, PlanKind, Query

from .conftest import BackendTable, Recording, table_of
from .models import Movie
from .test_key_order_utf16 import (
    STORED,
    Spec,
    _run_resuming,
    accepts,
    build,
    expected_keys,
    scenarios,
)
from .test_query_exec import GENRES, MOVIES
from .test_query_matches_brute_force import conditions, evaluate, fan_out_shaped

Key = tuple[str, str]


def cosmos_backend(page: int | None) -> Recording:
    return Recording(BackendTable(flavor=Flavor.COSMOS), max_page=page)


def check_unordered(got: list[Key], expected: list[Key], take: int | None) -> None:
    """``got`` holds each row once, all of ``expected`` (or ``take`` of them)."""
    assert len(got) == len(set(got)), "a row came twice"
    assert set(got) <= set(expected), "a row that does not match"
    assert len(got) == (len(expected) if take is None else min(take, len(expected)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cond=conditions,
    take=st.one_of(st.none(), st.integers(0, 30)),
    page=st.one_of(st.none(), st.integers(1, 7)),
)
def test_random_conditions_match_brute_force_on_cosmos(
    cond: Condition, take: int | None, page: int | None
) -> None:
    table = cosmos_backend(page)

    async def run() -> tuple[list[Key], list[Key]]:
        for m in MOVIES:
            await table.insert(m)
        q = Query(Movie, table).where(cond)
        if take is not None:
            q = q.take(take)
        whole = [(m.PartitionKey, m.RowKey) async for m in q]
        return whole, await _run_resuming(table, cond, page or 1000, take)

    try:
        whole, resumed = asyncio.run(run())
    except ValidationError as exc:
        assume("comparisons" not in str(exc))
        raise
    expected = [(m.PartitionKey, m.RowKey) for m in MOVIES if evaluate(cond, m)]
    plan = Query(Movie).where(cond).explain()
    check_unordered(whole, expected, take)
    if page is None:  # resuming page by page yields the same rows in the same order
        assert resumed == whole, (cond.to_odata(), str(plan))
    else:
        check_unordered(resumed, expected, take)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cond=fan_out_shaped, take=st.one_of(st.none(), st.integers(1, 20)))
def test_fan_out_shaped_conditions_match_brute_force_on_cosmos(
    cond: Condition, take: int | None
) -> None:
    test_random_conditions_match_brute_force_on_cosmos.hypothesis.inner_test(cond, take, 3)  # type: ignore[attr-defined]


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_key_ranges_match_brute_force_in_utf16_order_on_cosmos(
    scenario: tuple[set[Key], Spec, int, int | None],
) -> None:
    keys, spec, page, take = scenario
    cond = build(spec)
    table = cosmos_backend(page)

    async def run() -> tuple[list[Key], list[Key]]:
        for pk, rk in keys:
            await table.insert(Movie(pk, rk))
        q = Query(Movie, table).where(cond)
        whole = [(m.PartitionKey, m.RowKey) async for m in (q.take(take) if take else q)]
        return whole, await _run_resuming(table, cond, page, take)

    whole, resumed = asyncio.run(run())
    expected = expected_keys(keys, lambda pk, rk: accepts(spec, pk, rk))
    check_unordered(whole, expected, take)
    check_unordered(resumed, expected, take)
    if take is None:
        assert resumed == whole  # the same rows in the same order, page size aside


@pytest.fixture(params=["cosmos-backend", "cosmos-stub"])
async def cosmos_table(request: pytest.FixtureRequest) -> AsyncIterator[Recording]:
    async with table_of(request.param, 3) as table:
        yield table


@pytest.mark.parametrize(
    "spec",
    [
        ("prefix", "RowKey", "a\uffff"),
        ("between", "RowKey", "a\U00010000", "a\ue000"),
        ("or", ("prefix", "PartitionKey", "\ue000"), ("prefix", "PartitionKey", "\U0001f600")),
        ("or", ("eq", "PartitionKey", "\uffff"), ("eq", "PartitionKey", "\U00010000x")),
    ],
    ids=["uffff", "between", "or-prefixes", "or-points"],
)
async def test_key_ranges_over_the_cosmos_stub(cosmos_table: Recording, spec: Spec) -> None:
    for pk, rk in STORED:
        await cosmos_table.insert(Movie(pk, rk))
    got = [(m.PartitionKey, m.RowKey) async for m in Query(Movie, cosmos_table).where(build(spec))]
    expected = expected_keys(set(STORED), lambda pk, rk: accepts(spec, pk, rk))
    check_unordered(got, expected, None)
    assert got


async def _fill(table: Recording) -> None:
    for m in MOVIES:
        await table.insert(m)


def _keys(items: list[Any]) -> list[Key]:
    return [(m.PartitionKey, m.RowKey) for m in items]


async def test_service_order_is_not_key_order_and_queries_still_find_everything(
    cosmos_table: Recording,
) -> None:
    await _fill(cosmos_table)
    everything = _keys(await Query(Movie, cosmos_table).to_list())
    assert sorted(everything) == sorted((m.PartitionKey, m.RowKey) for m in MOVIES)
    assert everything != sorted(everything)  # the flavour really is unsorted
    assert await Query(Movie, cosmos_table).count() == len(MOVIES)
    first = await Query(Movie, cosmos_table).first()
    assert first is not None
    assert (first.PartitionKey, first.RowKey) == everything[0]  # the first the service gives


async def test_disjoint_fan_out_runs_branch_by_branch(cosmos_table: Recording) -> None:
    await _fill(cosmos_table)
    genres = sorted(GENRES)[:3]
    q = Query(Movie, cosmos_table).where(Movie.PartitionKey.in_(genres)).page_size(4)
    plan = q.explain()
    assert plan.kind is PlanKind.MULTI
    # the plan says how it runs here (issue 35: it said "merged in key order")
    assert plan.fanout is FanOut.BRANCHES
    assert "run one after another, not merged" in str(plan)
    assert "merged in key order" not in str(plan)
    storage = Query(Movie, Recording(BackendTable())).where(Movie.PartitionKey.in_(genres))
    assert storage.explain().fanout is FanOut.MERGED
    assert "3 parallel sub-queries merged in key order" in str(storage.explain())
    cosmos_table.requests.clear()
    got = _keys(await q.to_list())
    expected = [(m.PartitionKey, m.RowKey) for m in MOVIES if m.PartitionKey in genres]
    check_unordered(got, expected, None)
    # one branch after another: each branch's rows together, in the branches' order
    assert [pk for pk, _ in got] == sorted(pk for pk, _ in got)
    sent = [r["filter"] for r in cosmos_table.requests]
    assert all(f.count("PartitionKey eq") == 1 for f in sent)
    # every page's token resumes exactly after it, in a fresh pages() each time
    resumed: list[Key] = []
    token: str | None = None
    while True:
        page = await q.first_page(token)
        resumed.extend(_keys(page.items))
        token = page.continuation
        if token is None:
            break
    assert resumed == got


async def test_overlapping_fan_out_runs_as_one_filter(cosmos_table: Recording) -> None:
    await _fill(cosmos_table)
    genres = sorted(GENRES)
    low = (Movie.PartitionKey >= genres[0]) & (Movie.PartitionKey < genres[3])
    high = (Movie.PartitionKey >= genres[1]) & (Movie.PartitionKey < genres[-1])
    q = Query(Movie, cosmos_table).where(low | high)
    plan = q.explain()
    assert plan.kind is PlanKind.MULTI  # Storage would merge two sub-queries
    assert plan.fanout is FanOut.WHOLE
    assert "2 overlapping branches sent as the one filter" in str(plan)
    cosmos_table.requests.clear()
    got = _keys(await q.to_list())
    expected = [
        (m.PartitionKey, m.RowKey) for m in MOVIES if genres[0] <= m.PartitionKey < genres[-1]
    ]
    check_unordered(got, expected, None)
    assert {r["filter"] for r in cosmos_table.requests} == {(low | high).to_odata()}


async def test_fan_out_tokens_do_not_cross_flavours() -> None:
    storage = Recording(BackendTable(), max_page=2)
    cosmos = cosmos_backend(2)
    for table in (storage, cosmos):
        await _fill(table)
    genres = sorted(GENRES)[:2]

    def query(table: Recording) -> Query[Movie]:
        return Query(Movie, table).where(Movie.PartitionKey.in_(genres)).page_size(2)

    storage_token = (await query(storage).first_page()).continuation
    cosmos_token = (await query(cosmos).first_page()).continuation
    assert storage_token is not None
    assert cosmos_token is not None
    with pytest.raises(ValidationError, match="flavours"):
        await query(cosmos).first_page(storage_token)
    with pytest.raises(ValidationError, match="flavours"):
        await query(storage).first_page(cosmos_token)


async def test_delete_on_cosmos_removes_exactly_the_matches() -> None:
    async with table_of("cosmos-stub", 3) as recording:
        await _fill(recording)
        table = recording.inner  # the azt.TableClient itself: delete() sends transactions
        doomed = Movie.rating < 2.5
        gone = _keys(await Query(Movie, table).where(doomed).page_size(3).delete())
        expected = [(m.PartitionKey, m.RowKey) for m in MOVIES if evaluate(doomed, m)]
        check_unordered(gone, expected, None)
        left = _keys(await Query(Movie, table).to_list())
        assert sorted(left) == sorted(
            (m.PartitionKey, m.RowKey) for m in MOVIES if not evaluate(doomed, m)
        )
