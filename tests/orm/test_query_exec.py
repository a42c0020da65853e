"""Query execution over the stub's backend: results of each construct vs a brute-force
scan, take/first/one_or_none, explicit pages with tokens, projections, and the OR fan-out."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import azt
from azt._errors import ValidationError
from azt._orm.pages import encode_token
from azt.query import Condition, MultipleResultsError, PlanKind, Query

from .conftest import Recording
from .models import AllTypes, Genre, Level, Movie

GENRES = ["Action", "Comedy", "Drama", "SciFi", "Thriller", "War"]


def _movies() -> list[Movie]:
    rng = random.Random(42)
    out = []
    for g in GENRES:
        for i in range(12):
            title = f"{rng.choice('ABCSTW')}{rng.choice('aehiou')}{i:02d}"
            out.append(
                Movie(
                    g,
                    title,
                    release_year=1970 + rng.randrange(50),
                    rating=round(rng.uniform(0, 5), 1),
                    language=rng.choice(["en", "fr", None]),
                    favorite=rng.random() < 0.3,
                )
            )
    # keys must be unique
    return list({(m.PartitionKey, m.RowKey): m for m in out}.values())


MOVIES = _movies()


async def _load(table: Recording, rows: list[Any]) -> None:
    for r in rows:
        await table.insert(r)


def _keys(rows: list[Any]) -> list[tuple[str, str]]:
    return [(r.PartitionKey, r.RowKey) for r in rows]


def _expect(pred: Callable[[Movie], bool]) -> list[tuple[str, str]]:
    return sorted((m.PartitionKey, m.RowKey) for m in MOVIES if pred(m))


CASES: list[tuple[str, Condition, Callable[[Movie], bool]]] = [
    ("partition", Movie.PartitionKey == "Action", lambda m: m.PartitionKey == "Action"),
    (
        "seed rated",
        (Movie.PartitionKey == "Action") & (Movie.rating > 4.0),
        lambda m: m.PartitionKey == "Action" and m.rating > 4.0,
    ),
    (
        "favorite",
        (Movie.rating > 2.0) & Movie.favorite,
        lambda m: m.rating > 2.0 and m.favorite,
    ),
    ("not favorite", ~Movie.favorite, lambda m: not m.favorite),
    (
        "or",
        (Movie.release_year < 1975) | (Movie.release_year >= 2015),
        lambda m: m.release_year < 1975 or m.release_year >= 2015,
    ),
    ("startswith", Movie.RowKey.startswith("S"), lambda m: m.RowKey.startswith("S")),
    (
        "partition prefix",
        Movie.PartitionKey.startswith("S") | Movie.PartitionKey.startswith("T"),
        lambda m: m.PartitionKey[0] in "ST",
    ),
    ("between", Movie.rating.between(1.0, 2.0), lambda m: 1.0 <= m.rating <= 2.0),
    (
        "in",
        Movie.release_year.in_([1980, 1990, 2000]),
        lambda m: m.release_year in (1980, 1990, 2000),
    ),
    # a missing property makes a comparison false, so `ne` skips rows without it ...
    ("ne missing", Movie.language != "en", lambda m: m.language not in ("en", None)),
    # ... while `not (eq)` includes them
    ("not eq missing", ~(Movie.language == "en"), lambda m: m.language != "en"),
    (
        "partition range",
        (Movie.PartitionKey >= "Comedy") & (Movie.PartitionKey < "Thriller"),
        lambda m: "Comedy" <= m.PartitionKey < "Thriller",
    ),
    (
        "points",
        Movie.PartitionKey.in_(["War", "Action"]) & Movie.RowKey.in_([MOVIES[0].RowKey]),
        lambda m: m.PartitionKey in ("War", "Action") and m.RowKey == MOVIES[0].RowKey,
    ),
]


@pytest.mark.parametrize(("name", "cond", "pred"), CASES, ids=[c[0] for c in CASES])
async def test_each_construct_matches_brute_force(
    small_pages_table: Recording, name: str, cond: Condition, pred: Callable[[Movie], bool]
) -> None:
    await _load(small_pages_table, MOVIES)
    q = Query(Movie, small_pages_table).where(cond)
    got = await q.to_list()
    assert _keys(got) == _expect(pred), q.explain()
    by_key = {(m.PartitionKey, m.RowKey): m for m in MOVIES}
    for m in got:
        assert m == by_key[(m.PartitionKey, m.RowKey)]
        assert m.ETag is not None
        assert m.Timestamp is not None


async def test_or_of_partitions_runs_as_sub_queries_merged_in_key_order(
    small_pages_table: Recording,
) -> None:
    await _load(small_pages_table, MOVIES)
    cond = (
        (Movie.PartitionKey == "War")
        | (Movie.PartitionKey == "Action")
        | (Movie.PartitionKey == "SciFi")
    )
    q = Query(Movie, small_pages_table).where(cond & (Movie.rating > 1.0))
    assert q.explain().kind is PlanKind.MULTI
    got = await q.to_list()
    assert _keys(got) == _expect(
        lambda m: m.PartitionKey in ("War", "Action", "SciFi") and m.rating > 1.0
    )
    sent = {r["filter"] for r in small_pages_table.requests}
    assert sent == {
        "PartitionKey eq 'War' and Rating gt 1.0",
        "PartitionKey eq 'Action' and Rating gt 1.0",
        "PartitionKey eq 'SciFi' and Rating gt 1.0",
    }


async def test_fan_out_overlapping_branches_yield_each_entity_once(
    small_pages_table: Recording,
) -> None:
    await _load(small_pages_table, MOVIES)
    cond = (
        (Movie.PartitionKey == "Comedy")
        | ((Movie.PartitionKey >= "Action") & (Movie.PartitionKey <= "Drama"))
        | ((Movie.PartitionKey == "Drama") & Movie.RowKey.startswith("A"))
    )
    q = Query(Movie, small_pages_table).where(cond)
    assert q.explain().kind is PlanKind.MULTI
    got = await q.to_list()
    assert _keys(got) == _expect(lambda m: "Action" <= m.PartitionKey <= "Drama")


@pytest.mark.parametrize("n", [0, 1, 2, 5, 17, 1000])
async def test_take_is_a_total_limit(small_pages_table: Recording, n: int) -> None:
    await _load(small_pages_table, MOVIES)
    everything = _expect(lambda m: True)
    assert _keys(await Query(Movie, small_pages_table).take(n).to_list()) == everything[:n]
    fan = Query(Movie, small_pages_table).where(Movie.PartitionKey.in_(["War", "Comedy"]))
    expected = _expect(lambda m: m.PartitionKey in ("War", "Comedy"))
    assert _keys(await fan.take(n).to_list()) == expected[:n]
    tops = [r["top"] for r in small_pages_table.requests]
    if n:
        assert all(t is not None and t <= n for t in tops)


async def test_first_and_one_or_none(orm_table: Recording) -> None:
    await _load(orm_table, MOVIES)
    q = Query(Movie, orm_table)
    first = await q.where(Movie.PartitionKey == "Drama").first()
    assert first is not None
    assert (first.PartitionKey, first.RowKey) == _expect(lambda m: m.PartitionKey == "Drama")[0]
    assert await q.where(Movie.PartitionKey == "Nope").first() is None
    one = q.where(Movie.PartitionKey == first.PartitionKey, Movie.RowKey == first.RowKey)
    assert q.where(Movie.PartitionKey == "x", Movie.RowKey == "y").explain().kind is PlanKind.POINT
    assert await one.one_or_none() == first
    assert await q.where(Movie.PartitionKey == "Nope", Movie.RowKey == "x").one_or_none() is None
    with pytest.raises(MultipleResultsError):
        await q.where(Movie.PartitionKey == "Drama").one_or_none()
    # take(0) means no results, also for first() and one_or_none()
    assert await q.take(0).first() is None
    assert await q.where(Movie.PartitionKey == "Drama").take(0).one_or_none() is None


@pytest.mark.parametrize(
    "cond",
    [
        None,
        Movie.rating > 2.5,
        Movie.PartitionKey.in_(["War", "Action", "Drama"]) & (Movie.rating > 2.5),
    ],
    ids=["scan", "filter", "fan-out"],
)
async def test_explicit_pages_resume_from_tokens(
    small_pages_table: Recording, cond: Condition | None
) -> None:
    await _load(small_pages_table, MOVIES)
    q = Query(Movie, small_pages_table).page_size(4)
    if cond is not None:
        q = q.where(cond)
    everything = _keys(await q.to_list())
    # read page by page, each time from a fresh iterator resumed with the last token
    got: list[tuple[str, str]] = []
    token: str | None = None
    pages = 0
    while True:
        gen = q.pages(token)
        page = await gen.__anext__()
        await gen.aclose()
        got.extend(_keys(page.items))
        pages += 1
        token = page.continuation
        if token is None:
            break
    assert got == everything
    assert pages > 2
    # take(n) is honoured across resumed pages
    limited = q.take(7)
    first_page = await limited.pages().__aiter__().__anext__()
    rest = [x async for p in limited.pages(first_page.continuation) for x in p.items]
    assert _keys(first_page.items + rest) == everything[:7]


async def test_token_from_another_query_is_refused(orm_table: Recording) -> None:
    await _load(orm_table, MOVIES)
    q = Query(Movie, orm_table).page_size(5)
    page = await q.pages().__aiter__().__anext__()
    assert page.continuation is not None
    with pytest.raises(ValidationError, match="different query"):
        await q.where(Movie.favorite).pages(page.continuation).__aiter__().__anext__()
    with pytest.raises(ValidationError, match="malformed"):
        await q.pages("!!!").__aiter__().__anext__()
    # a token is the client's own data, but it can be edited: each field is checked
    fan = Query(Movie, orm_table).where(Movie.PartitionKey.in_(["War", "Drama"])).take(3)
    for query in (q.take(3), fan):
        fp = query._fingerprint()
        for bad in (
            {"n": "x"},
            {"n": -5},
            {"n": True},
            {"n": 0, "c": 5},
            {"n": 0, "a": "xy"},
            {"n": 0, "a": [1, 2]},
            {"n": 0, "a": ["War"]},
        ):
            token = encode_token({"v": 1, "q": fp, **bad})
            with pytest.raises(ValidationError, match="malformed"):
                await query.pages(token).__aiter__().__anext__()


async def test_select_projects(orm_table: Recording) -> None:
    await _load(orm_table, MOVIES)
    q = Query(Movie, orm_table).where(Movie.PartitionKey == "War").select(Movie.rating)
    got = await q.to_list()
    assert orm_table.requests[-1]["select"] == ["PartitionKey", "RowKey", "Timestamp", "Rating"]
    by_key = {(m.PartitionKey, m.RowKey): m for m in MOVIES}
    assert got
    for m in got:
        assert m.rating == by_key[(m.PartitionKey, m.RowKey)].rating
        with pytest.raises(AttributeError):
            _ = m.release_year


async def test_async_iteration(orm_table: Recording) -> None:
    await _load(orm_table, MOVIES)
    seen = [m.RowKey async for m in Query(Movie, orm_table).where(Movie.PartitionKey == "War")]
    assert seen == [rk for _, rk in _expect(lambda m: m.PartitionKey == "War")]


async def test_no_client_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="no table client"):
        await Query(Movie).to_list()


# --------------------------------------------------------------------------- EDM round trips

NOW = datetime(2024, 2, 29, 12, 30, 15, 123456, tzinfo=UTC)
EDM_ROWS = [
    AllTypes("edm", "a"),
    AllTypes(
        "edm",
        "b",
        s="O'Brien \u00e9\U0001f600",
        i32=-(2**31),
        i64=2**63 - 1,
        d=1.5e300,
        b=True,
        dt=NOW,
        g=uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
        bin=bytes(range(256)),
        genre=Genre.COMEDY,
        level=Level.HIGH,
        opt="x",
    ),
    AllTypes(
        "edm", "c", i32=2**31 - 1, i64=-(2**63), d=float("inf"), dt=datetime(1601, 1, 1, tzinfo=UTC)
    ),
    AllTypes("edm", "d", d=-0.5, i64=5, dt=NOW + timedelta(days=1), bin=b""),
]


async def test_every_edm_type_round_trips(orm_table: Recording) -> None:
    await _load(orm_table, EDM_ROWS)
    got = await Query(AllTypes, orm_table).to_list()
    assert got == EDM_ROWS
    for a, b in zip(got, EDM_ROWS, strict=True):
        for name in ("i64", "d", "dt", "g", "bin"):
            assert type(getattr(a, name)) is type(getattr(b, name))


@pytest.mark.parametrize(
    ("cond", "expected"),
    [
        (AllTypes.i64 > 5, ["b"]),
        (AllTypes.i64 >= 5, ["b", "d"]),
        (AllTypes.i32 == -(2**31), ["b"]),
        (AllTypes.d < 0, ["d"]),
        (AllTypes.d > 1e300, ["b", "c"]),
        (AllTypes.b == True, ["b"]),  # noqa: E712
        (AllTypes.dt > NOW, ["d"]),
        (AllTypes.dt >= NOW, ["b", "d"]),
        (AllTypes.dt < datetime(1700, 1, 1, tzinfo=UTC), ["c"]),
        (AllTypes.g == uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"), ["b"]),
        (AllTypes.bin == bytes(range(256)), ["b"]),
        (AllTypes.s == "O'Brien \u00e9\U0001f600", ["b"]),
        (AllTypes.genre == Genre.COMEDY, ["b"]),
        (AllTypes.level > Level.LOW, ["b"]),
        (AllTypes.opt.startswith("x"), ["b"]),
        (AllTypes.Timestamp > datetime(2000, 1, 1, tzinfo=UTC), ["a", "b", "c", "d"]),
    ],
)
async def test_comparisons_on_every_type_against_the_stub_evaluator(
    orm_table: Recording, cond: Condition, expected: list[str]
) -> None:
    await _load(orm_table, EDM_ROWS)
    got = await Query(AllTypes, orm_table).where(cond).to_list()
    assert [r.RowKey for r in got] == expected


async def test_filters_over_the_limit_are_refused_before_sending(orm_table: Recording) -> None:
    with pytest.raises(ValidationError, match="16 comparisons"):
        Query(Movie, orm_table).where(Movie.release_year.in_(range(1970, 1986)))
    assert orm_table.requests == []
    # fanned out, each sub-query is small: allowed
    fan = Query(Movie, orm_table).where(Movie.PartitionKey.in_([f"G{i:02d}" for i in range(20)]))
    assert fan.explain().kind is PlanKind.MULTI
    assert await fan.to_list() == []
    assert len(orm_table.requests) == 20


class _Slow(Recording):
    """Counts how many requests are in flight at once."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner, max_page=2)
        self.active = 0
        self.peak = 0

    def query_entities(self, filter: str | None = None, **kw: Any) -> Any:
        pager = super().query_entities(filter, **kw)
        outer = self

        class _P:
            async def first_page(self) -> Any:
                outer.active += 1
                outer.peak = max(outer.peak, outer.active)
                try:
                    await asyncio.sleep(0.001)
                    return await pager.first_page()
                finally:
                    outer.active -= 1

        return _P()


async def test_fan_out_concurrency_is_bounded(orm_table: Recording) -> None:
    await _load(orm_table, MOVIES)
    slow = _Slow(orm_table.inner)
    q = Query(Movie, slow).where(Movie.PartitionKey.in_(GENRES)).concurrency(2)
    got = await q.to_list()
    assert _keys(got) == _expect(lambda m: True)
    assert slow.peak == 2
    slow.peak = 0
    await Query(Movie, slow).where(Movie.PartitionKey.in_(GENRES)).to_list()
    assert slow.peak == len(GENRES)  # default 8 >= 6 branches: all at once


def test_query_repr() -> None:
    q = Query(Movie).where(Movie.favorite).select(Movie.rating).take(2)
    assert repr(q) == (
        "<Query Movie where Favorite eq true select PartitionKey, RowKey, Timestamp, Rating take 2>"
    )


async def test_fan_out_merges_in_the_services_utf16_order(orm_table: Recording) -> None:
    pks = ["p\ue000", "p\U00010000", "pa"]
    rks = ["\uffff", "\U0001f600", "a", "\ue001"]
    await _load(orm_table, [Movie(pk, rk) for pk in pks for rk in rks])
    scan = _keys(await Query(Movie, orm_table).to_list())  # the service's order
    fan = Query(Movie, orm_table).where(Movie.PartitionKey.in_(pks))
    assert fan.explain().kind is PlanKind.MULTI
    assert _keys(await fan.to_list()) == scan
    assert scan == sorted(scan, key=lambda k: (k[0].encode("utf-16-be"), k[1].encode("utf-16-be")))


async def test_fan_out_resume_skips_finished_partitions(small_pages_table: Recording) -> None:
    await _load(small_pages_table, MOVIES)
    q = Query(Movie, small_pages_table).where(Movie.PartitionKey.in_(GENRES)).page_size(20)
    pages = [p async for p in q.pages()]
    assert len(pages) > 2
    token = pages[1].continuation
    assert token is not None
    last = pages[1].items[-1]
    small_pages_table.requests.clear()
    rest = [x async for p in q.pages(token) for x in p.items]
    assert _keys(rest) == _keys([x for p in pages[2:] for x in p.items])
    sent = [r["filter"] for r in small_pages_table.requests]
    # partitions before the resume point are not asked again; the current one resumes
    # after the last row; later ones are queried unchanged
    assert all(
        not f.startswith(f"PartitionKey eq '{g}'")
        for f in sent
        for g in GENRES
        if g < last.PartitionKey
    )
    assert f"PartitionKey eq '{last.PartitionKey}' and RowKey gt '{last.RowKey}'" in sent
    later = [g for g in GENRES if g > last.PartitionKey]
    assert later
    for g in later:
        assert f"PartitionKey eq '{g}'" in sent


class _FailOne(Recording):
    """Fails the requests whose filter mentions ``bad``, after a short delay."""

    def __init__(self, inner: Any, bad: str) -> None:
        super().__init__(inner, max_page=2)
        self.bad = bad
        self.finished = 0

    def query_entities(self, filter: str | None = None, **kw: Any) -> Any:
        pager = super().query_entities(filter, **kw)
        outer = self

        class _P:
            async def first_page(self) -> Any:
                if filter is not None and outer.bad in filter:
                    raise azt.ServerBusyError("injected", status=503)
                await asyncio.sleep(0.01)
                outer.finished += 1
                return await pager.first_page()

        return _P()


async def test_a_failing_sub_query_fails_the_query_and_cancels_the_others(
    orm_table: Recording,
) -> None:
    await _load(orm_table, MOVIES)
    failing = _FailOne(orm_table.inner, "'Drama'")
    q = Query(Movie, failing).where(Movie.PartitionKey.in_(GENRES))
    with pytest.raises(azt.ServerBusyError):
        await q.to_list()
    await asyncio.sleep(0.05)
    assert failing.finished == 0  # the other sub-queries were cancelled, not left running
