"""Property test: random conditions give exactly the brute-force answer, in key order,
whatever the plan (single request or fan-out), page size and take(n)."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from azt._errors import ValidationError
from azt.query import And, Comparison, Condition, Not, Or, Query

from .conftest import BackendTable, Recording
from .models import Movie
from .test_query_exec import GENRES, MOVIES

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


def evaluate(cond: Condition, m: Movie) -> bool:
    """The service's semantics: a comparison on a missing property is false."""
    if isinstance(cond, Comparison):
        v = getattr(m, cond.prop.attr)
        if v is None:
            return False
        return _OPS[cond.op](v, cond.value)
    if isinstance(cond, And):
        return all(evaluate(c, m) for c in cond.items)
    if isinstance(cond, Or):
        return any(evaluate(c, m) for c in cond.items)
    if isinstance(cond, Not):
        return not evaluate(cond.item, m)
    raise AssertionError(cond)


ops = st.sampled_from(["eq", "ne", "lt", "le", "gt", "ge"])
genre = st.sampled_from([*GENRES, "A", "Dz", "T", ""])
row_key = st.sampled_from([*sorted({m.RowKey for m in MOVIES})[::7], "A", "M", "T"])


def _cmp(prop: Any, op: str, value: Any) -> Condition:
    return Comparison.build(prop, op, value)


leaf = st.one_of(
    st.builds(_cmp, st.just(Movie.PartitionKey), ops, genre),
    st.builds(_cmp, st.just(Movie.RowKey), ops, row_key),
    st.builds(lambda g: Movie.PartitionKey.startswith(g), st.sampled_from(["S", "T", "Dr", "W"])),
    st.builds(lambda r: Movie.RowKey.startswith(r), st.sampled_from(["A", "Sa", "T", "W"])),
    st.builds(lambda gs: Movie.PartitionKey.in_(gs), st.lists(genre, min_size=1, max_size=4)),
    st.builds(_cmp, st.just(Movie.rating), ops, st.sampled_from([0.5, 2.0, 2.5, 4.0])),
    st.builds(_cmp, st.just(Movie.release_year), ops, st.integers(1965, 2025)),
    st.builds(_cmp, st.just(Movie.language), ops, st.sampled_from(["en", "fr", "de"])),
    st.just(Movie.favorite == True),  # noqa: E712
)

conditions = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.builds(operator.and_, inner, inner),
        st.builds(operator.or_, inner, inner),
        st.builds(operator.invert, inner),
    ),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cond=conditions,
    take=st.one_of(st.none(), st.integers(0, 30)),
    page=st.one_of(st.none(), st.integers(1, 7)),
)
def test_random_conditions_match_brute_force(
    cond: Condition, take: int | None, page: int | None
) -> None:
    table = Recording(BackendTable(), max_page=page)

    async def run() -> list[tuple[str, str]]:
        for m in MOVIES:
            await table.insert(m)
        q = Query(Movie, table).where(cond)
        if take is not None:
            q = q.take(take)
        return [(m.PartitionKey, m.RowKey) async for m in q]

    try:
        got = asyncio.run(run())
    except ValidationError as exc:
        assume("comparisons" not in str(exc))
        raise
    expected = sorted((m.PartitionKey, m.RowKey) for m in MOVIES if evaluate(cond, m))
    if take is not None:
        expected = expected[:take]
    assert got == expected, (cond.to_odata(), Query(Movie).where(cond).explain())


key_leaf = st.one_of(
    st.builds(_cmp, st.just(Movie.PartitionKey), st.sampled_from(["eq", "ge", "lt"]), genre),
    st.builds(lambda g: Movie.PartitionKey.startswith(g), st.sampled_from(["S", "T", "Dr", "W"])),
    st.builds(lambda g: Movie.PartitionKey == g, genre),
)
row_leaf = st.one_of(
    st.builds(_cmp, st.just(Movie.RowKey), st.sampled_from(["eq", "ge", "lt"]), row_key),
    st.builds(lambda r: Movie.RowKey.startswith(r), st.sampled_from(["A", "Sa", "T", "W"])),
)
other_leaf = st.one_of(
    st.builds(_cmp, st.just(Movie.rating), ops, st.sampled_from([0.5, 2.0, 4.0])),
    st.just(Movie.favorite == True),  # noqa: E712
)


def _or(items: list[Condition]) -> Condition:
    return Or.of(*items)


_and_of_ors = st.builds(
    lambda a, b, c: And.of(*(x for x in (a, b, c) if x is not None)),
    st.lists(key_leaf, min_size=1, max_size=3).map(_or),
    st.one_of(st.none(), st.lists(row_leaf, min_size=1, max_size=3).map(_or)),
    st.one_of(st.none(), other_leaf),
)
fan_out_shaped = st.one_of(
    _and_of_ors, st.builds(operator.or_, _and_of_ors, st.one_of(key_leaf, _and_of_ors))
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cond=fan_out_shaped, take=st.one_of(st.none(), st.integers(1, 20)))
def test_fan_out_shaped_conditions_match_brute_force(cond: Condition, take: int | None) -> None:
    test_random_conditions_match_brute_force.hypothesis.inner_test(cond, take, 3)  # type: ignore[attr-defined]
