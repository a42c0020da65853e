"""What the service would refuse is refused by the call that makes the mistake (issue 11,
item 7): ``where()``/``compile()`` for filters over 15 comparisons, ``select()`` for more
than 255 names, every key helper of ``azt.keys`` for keys the service would not store;
and a query that was accepted is never refused later (a resumed fan-out stays within the
limit)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt._errors import ValidationError
from azt.dynamic import DynamicEntity
from azt.edm import utf16_len, validate_key
from azt.keys import (
    all_buckets,
    composite_key,
    composite_prefix,
    padded,
    ticks_key,
)
from azt.query import And, Comparison, Not, Or, PlanKind, Query

from .conftest import BackendTable, Recording
from .models import Movie

RATINGS = [float(i) for i in range(20)]
NEVER = [-1.0 - i for i in range(20)]  # no row has these ratings


# ---------------------------------------------------------------------------- comparisons


def test_where_refuses_a_filter_over_15_comparisons() -> None:
    """docs/queries.md: refused "before anything is sent" - at where(), not when run."""
    with pytest.raises(ValidationError, match="16 comparisons"):
        Query(Movie).where(Movie.rating.in_(RATINGS[:16]))
    fifteen = Query(Movie).where(Movie.rating.in_(RATINGS[:15]))
    with pytest.raises(ValidationError, match="16 comparisons"):
        fifteen.where(Movie.favorite)  # the conjunction is what is sent
    with pytest.raises(ValidationError, match="16 comparisons"):
        Query(Movie).where(Movie.rating.in_(RATINGS[:8]), Movie.release_year.in_(range(8)))


def test_compile_refuses_a_filter_over_15_comparisons() -> None:
    q = Query(Movie)._copy(_cond=Or.of(*(Movie.rating == r for r in RATINGS[:16])))
    with pytest.raises(ValidationError, match="16 comparisons"):
        q.compile()


def test_a_fan_out_counts_per_sub_query() -> None:
    # 20 comparisons, but 20 sub-queries of one each: accepted
    fan = Query(Movie).where(Movie.PartitionKey.in_([f"G{i:02d}" for i in range(20)]))
    assert fan.explain().kind is PlanKind.MULTI
    assert fan.compile().filter is not None
    # a branch with 16 comparisons cannot be sent, whatever the other branches
    # (a 'not' is kept whole: it is not spread over branches)
    big = (Movie.PartitionKey == "A") & ~Movie.rating.in_(RATINGS[:15])
    with pytest.raises(ValidationError, match="one of which has 16"):
        Query(Movie).where(big | (Movie.PartitionKey == "B"))


# a partition-range branch of exactly 15, 14, 13 comparisons, and a row-range one of 15
# (a 'not' stays whole in its branch): resuming adds up to three comparisons to a branch,
# which must not refuse a query that ran; the merge drops what a looser resume filter adds
_FULL = [
    (Movie.PartitionKey.between("A", "C") & ~Movie.rating.in_(NEVER[:13]))
    | (Movie.PartitionKey == "Z"),
    (Movie.PartitionKey.between("A", "C") & ~Movie.rating.in_(NEVER[:12]))
    | (Movie.PartitionKey == "Z"),
    (Movie.PartitionKey.between("A", "C") & ~Movie.rating.in_(NEVER[:11]))
    | (Movie.PartitionKey == "Z"),
    ((Movie.PartitionKey == "B") & ~Movie.rating.in_(NEVER[:14])) | (Movie.PartitionKey == "Z"),
]


@pytest.mark.parametrize("cond", _FULL, ids=["15", "14", "13", "row-range-15"])
def test_resumed_fan_out_is_not_refused_late(cond: Any) -> None:
    rows = [
        Movie(pk, f"r{i:02d}", rating=float(i)) for pk in ("A", "B", "C", "Z") for i in range(16)
    ]
    table = Recording(BackendTable(), max_page=2)

    async def run() -> list[tuple[str, str]]:
        for m in rows:
            await table.insert(m)
        q = Query(Movie, table).where(cond).page_size(3)
        assert q.explain().kind is PlanKind.MULTI
        got: list[tuple[str, str]] = []
        token: str | None = None
        while True:
            pages = q.pages(token)
            page = await anext(aiter(pages), None)
            await pages.aclose()
            if page is None:
                return got
            got.extend((m.PartitionKey, m.RowKey) for m in page.items)
            token = page.continuation
            if token is None:
                return got

    got = asyncio.run(run())
    assert got == sorted((m.PartitionKey, m.RowKey) for m in rows if _matches(cond, m))
    assert len(got) > 16  # rows of both branches, over several resumed pages


def _matches(cond: Any, m: Movie) -> bool:
    """Brute force for the conditions above (ASCII keys: Python's order is the service's)."""
    if isinstance(cond, Comparison):
        v = getattr(m, cond.prop.attr)
        return bool(
            {
                "eq": v == cond.value,
                "ge": v >= cond.value,
                "le": v <= cond.value,
            }[cond.op]
        )
    if isinstance(cond, And):
        return all(_matches(c, m) for c in cond.items)
    if isinstance(cond, Not):
        return not _matches(cond.item, m)
    return any(_matches(c, m) for c in cond.items)


# ---------------------------------------------------------------------------- select


def test_select_refuses_more_than_255_names() -> None:
    names = [f"p{i}" for i in range(252)]
    assert len(Query(DynamicEntity).select(*names).compile().select or ()) == 255
    with pytest.raises(ValidationError, match="at most 255"):
        Query(DynamicEntity).select(*names, "p252")


# ---------------------------------------------------------------------------- key helpers


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: composite_key("a/b", "c"), "contains '/'"),
        (lambda: composite_key("a", "b\\c"), "contains"),
        (lambda: composite_key("a#", "c"), "contains '#'"),
        (lambda: composite_key("a", "?"), "contains '\\?'"),
        (lambda: composite_key("a\tb"), "contains"),
        (lambda: composite_key("a\x7f"), "contains"),
        (lambda: composite_key("a\x9f"), "contains"),
        (lambda: composite_key("a", "b", sep="/"), "separator"),
        (lambda: composite_key("a", "b", sep="\n"), "separator"),
        (lambda: composite_key("a", "b", sep=";;"), "one character"),
        (lambda: composite_key("a\ud800"), "lone surrogate"),
        (lambda: composite_key("x" * 600, "y" * 600), "1024"),
        (lambda: composite_key("\U0001f600" * 513), "1026 UTF-16 code units"),
        (lambda: composite_prefix("x" * 1024), "1025 UTF-16 code units"),
        (lambda: composite_prefix("a/b"), "contains '/'"),
        (lambda: all_buckets(3, "a#b"), "contains '#'"),
        (lambda: padded(1, 2000), "width of 1..1024"),
        (lambda: padded(1, 0), "width of 1..1024"),
        (lambda: padded(1, True), "width"),
        (lambda: ticks_key(datetime(2020, 1, 1, tzinfo=UTC), 1025), "width"),
    ],
)
def test_key_helpers_refuse_keys_the_service_would_refuse(make: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        make()


def test_key_helpers_accept_the_edges() -> None:
    assert len(composite_key("x" * 511, "y" * 512)) == 1024
    assert utf16_len(composite_key("\U0001f600" * 512)) == 1024
    assert composite_key("a.b", "\u00e9", sep="|") == "a.b|\u00e9"
    assert len(padded(7, 1024)) == 1024


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.text(max_size=8), min_size=1, max_size=4),
    sep=st.sampled_from([";", "|", "/", "_", "\x00", "-"]),
)
def test_composite_keys_are_valid_keys_or_refused(parts: list[str], sep: str) -> None:
    """Whatever the parts: a key the service stores and that splits back, or a refusal."""
    try:
        key = composite_key(*parts, sep=sep)
    except ValidationError:
        joined = sep.join(parts)
        try:
            validate_key("key", joined)
            joined.encode("utf-8")
        except (ValidationError, UnicodeEncodeError):
            return
        # refused only for ambiguity, or for a separator no key may hold
        assert any(sep in p for p in parts) or sep in "/\x00"
        return
    assert validate_key("key", key) == key
    key.encode("utf-8")
    assert key.split(sep) == parts
