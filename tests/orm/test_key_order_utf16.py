"""Key bounds and key order in the service's order, UTF-16 code units (issue 11, item 3).

Python compares ``str`` by code point; the service compares UTF-16 code units. The two
differ for astral characters (U+10000..U+10FFFF, stored as surrogate pairs that start
with 0xD800..0xDBFF) against U+E000..U+FFFF: ``"\\U00010000" > "\\uffff"`` in Python but
not on the service. Every bound the client computes (prefix ranges, planner intersections,
resume points) and every order it merges in must follow the service.

The property tests compare ``startswith``/``between`` queries, single and fanned out, paged
and resumed from tokens, with a brute-force evaluator over an in-memory key set, and run
the same queries against the stub (its backend, and a few over HTTP).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt.query import And, Comparison, Condition, Not, Or, PlanKind, Query, make_plan
from azt.query import prefix_upper_bound as upper_bound

from .conftest import BackendTable, Recording
from .models import Movie

# the characters where the two orders disagree, and their neighbours
EDGE = [
    "a",
    "b",
    "\ud7ff",
    "\ue000",
    "\ue001",
    "\ufffd",
    "\ufffe",
    "\uffff",
    "\U00010000",
    "\U0001f600",
    "\U0010fffe",
    "\U0010ffff",
]


def units(s: str) -> bytes:
    """The service's sort key: UTF-16 code units, big-endian (bytes compare as units)."""
    return s.encode("utf-16-be")


def evaluate(cond: Condition, m: Any) -> bool:
    """Brute force, with the service's string order (keys are always present)."""
    if isinstance(cond, Comparison):
        left, right = units(getattr(m, cond.prop.attr)), units(cond.value)
        return {
            "eq": left == right,
            "ne": left != right,
            "lt": left < right,
            "le": left <= right,
            "gt": left > right,
            "ge": left >= right,
        }[cond.op]
    if isinstance(cond, And):
        return all(evaluate(c, m) for c in cond.items)
    if isinstance(cond, Or):
        return any(evaluate(c, m) for c in cond.items)
    if isinstance(cond, Not):
        return not evaluate(cond.item, m)
    raise AssertionError(cond)


def expected_keys(keys: set[tuple[str, str]], accept: Any) -> list[tuple[str, str]]:
    """The matching keys in the service's order."""
    return sorted((k for k in keys if accept(*k)), key=lambda k: (units(k[0]), units(k[1])))


# ---------------------------------------------------------------------------- the bound


def test_prefix_ending_in_uffff_finds_its_keys() -> None:
    """The issue's instance: the old bound 'a\\U00010000' sorts below 'a\\uffff'."""
    cond = Movie.RowKey.startswith("a\uffff")
    row = Movie("p", "a\uffffz")
    assert evaluate(cond, row)
    assert upper_bound("a\uffff") == "b"


@pytest.mark.parametrize(
    ("prefix", "inside", "outside"),
    [
        ("a\uffff", ["a\uffff", "a\uffffz", "a\uffff\U00010000"], ["a\U00010000", "b"]),
        ("a\ud7ff", ["a\ud7ff", "a\ud7ff\uffff"], ["a\U00010000", "a\ue000"]),
        ("a\U0010ffff", ["a\U0010ffff", "a\U0010ffff\uffff"], ["a\ue000", "a\uffff"]),
        ("\U0001f600", ["\U0001f600", "\U0001f600\U0010ffff"], ["\U0001f601", "\ue000"]),
        ("\ue000", ["\ue000\U00010000"], ["\ue001", "\U0010ffff", "\uffff"]),
        ("\uffff\uffff", ["\uffff\uffff", "\uffff\uffff\uffff"], ["\uffff", "\uffff\ue000"]),
    ],
)
def test_prefix_ranges_hold_exactly_the_prefixed_keys(
    prefix: str, inside: list[str], outside: list[str]
) -> None:
    cond = Movie.RowKey.startswith(prefix)
    for rk in inside:
        assert evaluate(cond, Movie("p", rk)), (prefix, rk, str(cond))
    for rk in outside:
        assert not evaluate(cond, Movie("p", rk)), (prefix, rk, str(cond))


def least_bound_by_units(prefix: str) -> str | None:
    """The bound computed on UTF-16 code units, independently of the client: drop trailing
    0xFFFF units, add one to the last unit, then take the least whole-character string at
    or above that unit sequence (the unit may have become half a surrogate pair)."""
    raw = units(prefix)
    u = [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]
    while u and u[-1] == 0xFFFF:
        u.pop()
    if not u:
        return None
    u[-1] += 1
    if u[-1] == 0xD800:  # after U+D7FF: a high surrogate alone; the least pair is D800 DC00
        u.append(0xDC00)
    elif u[-1] == 0xE000 and len(u) > 1 and 0xD800 <= u[-2] <= 0xDBFF:  # after ... DFFF
        u.pop()
        u[-1] += 1  # the next high surrogate, or past them all: U+E000
        if u[-1] == 0xDC00:
            u[-1] = 0xE000
        else:
            u.append(0xDC00)
    return b"".join(x.to_bytes(2, "big") for x in u).decode("utf-16-be")


any_char = st.characters(exclude_categories=["Cs"], codec="utf-8")
prefixes = st.one_of(
    st.text(st.sampled_from(EDGE), max_size=4),  # mostly the edge characters
    st.text(any_char, max_size=4),
    st.tuples(st.text(any_char, max_size=2), st.text(st.sampled_from(EDGE), max_size=2)).map(
        "".join
    ),
)


@settings(max_examples=400, deadline=None)
@given(prefixes)
def test_prefix_upper_bound_is_the_least_bound_in_utf16_order(prefix: str) -> None:
    high = upper_bound(prefix)
    assert high == least_bound_by_units(prefix)
    if high is None:  # only a run of U+FFFF (or nothing) has no string above its range
        assert prefix.strip("\uffff") == ""
        return
    assert not high.startswith(prefix)
    assert units(high) > units(prefix)
    for c in EDGE:  # every extension of the prefix sorts below the bound
        assert units(prefix + c) < units(high)
        assert units(prefix + c + "\uffff") < units(high)


# ---------------------------------------------------------------------------- the planner


def test_planner_intersects_key_bounds_in_utf16_order() -> None:
    # '\ue000' is the tighter lower bound: U+10000 sorts below it on the service
    plan = make_plan(
        (Movie.PartitionKey == "p")
        & (Movie.RowKey >= "\U00010000")
        & (Movie.RowKey >= "\ue000")
        & (Movie.RowKey < "\uffff")
        & (Movie.RowKey < "\U0010ffff")
    )
    assert plan.kind is PlanKind.ROW_RANGE
    assert plan.row_range is not None
    assert (plan.row_range.low, plan.row_range.high) == ("\ue000", "\U0010ffff")
    part = make_plan((Movie.PartitionKey > "\U0001f600") & (Movie.PartitionKey > "\ufffd"))
    assert part.partition_range is not None
    assert part.partition_range.low == "\ufffd"


# ---------------------------------------------------------------------------- property
#
# A query is drawn as a spec, from which both the condition and the brute-force answer are
# derived, so the evaluator does not trust the ranges the client compiled:
# ("prefix", key, text) | ("between", key, low, high) | ("eq", key, text) | (op, spec, spec)

Spec = tuple[Any, ...]
KEYS = {"PartitionKey": Movie.PartitionKey, "RowKey": Movie.RowKey}


def build(spec: Spec) -> Condition:
    kind = spec[0]
    if kind == "prefix":
        return KEYS[spec[1]].startswith(spec[2])
    if kind == "between":
        return KEYS[spec[1]].between(spec[2], spec[3])
    if kind == "eq":
        return Comparison.build(KEYS[spec[1]], "eq", spec[2])
    left, right = build(spec[1]), build(spec[2])
    return left & right if kind == "and" else left | right


def accepts(spec: Spec, pk: str, rk: str) -> bool:
    """Brute force: ``str.startswith`` for prefixes, UTF-16 units for ranges."""
    kind = spec[0]
    if kind in ("and", "or"):
        both = (accepts(spec[1], pk, rk), accepts(spec[2], pk, rk))
        return all(both) if kind == "and" else any(both)
    value = pk if spec[1] == "PartitionKey" else rk
    if kind == "prefix":
        return value.startswith(spec[2])
    if kind == "between":
        return units(spec[2]) <= units(value) <= units(spec[3])
    return bool(value == spec[2])


key_text = st.text(st.sampled_from(EDGE), max_size=3)
key_sets = st.sets(st.tuples(key_text, key_text), min_size=1, max_size=25)


def _leaf(draw: st.DrawFn, keys: list[tuple[str, str]], name: str | None = None) -> Spec:
    """A startswith, between or eq on a key, often on the edge of a stored key."""
    name = name or draw(st.sampled_from(["PartitionKey", "RowKey"]))
    near = st.sampled_from([k[0 if name == "PartitionKey" else 1] for k in keys])
    text = st.one_of(key_text, near, near.map(lambda s: s[:-1]))
    kind = draw(st.sampled_from(["prefix", "prefix", "between", "eq"]))
    if kind == "between":
        return ("between", name, draw(text), draw(text))
    return (kind, name, draw(text))


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[set[tuple[str, str]], Spec, int, int | None]:
    keys = draw(key_sets)
    ordered = sorted(keys)
    spec = _leaf(draw, ordered)
    shape = draw(st.sampled_from(["one", "and", "or", "fan-out", "fan-out", "pinned"]))
    if shape in ("and", "or"):
        spec = (shape, spec, _leaf(draw, ordered))
    elif shape == "fan-out":  # an or of partition ranges: sub-queries merged by the client
        spec = ("or", _leaf(draw, ordered, "PartitionKey"), _leaf(draw, ordered, "PartitionKey"))
    elif shape == "pinned":
        pk = draw(st.sampled_from([k[0] for k in ordered]))
        spec = ("and", ("eq", "PartitionKey", pk), ("prefix", "RowKey", draw(key_text)))
    page = draw(st.integers(1, 4))
    take = draw(st.one_of(st.none(), st.integers(1, 10)))
    return keys, spec, page, take


async def _run_resuming(table: Any, cond: Condition, page: int, take: int | None) -> list[Any]:
    """Every result, each page from a new ``pages()`` resumed with the previous token."""
    q = Query(Movie, table).where(cond).page_size(page)
    if take is not None:
        q = q.take(take)
    got: list[tuple[str, str]] = []
    token: str | None = None
    for _ in range(200):
        pages = q.pages(token)
        first = await anext(aiter(pages), None)
        await pages.aclose()
        if first is None:
            break
        got.extend((m.PartitionKey, m.RowKey) for m in first.items)
        token = first.continuation
        if token is None:
            break
    return got


@settings(max_examples=200, deadline=None)
@given(scenarios())
def test_key_ranges_match_brute_force_in_utf16_order(
    scenario: tuple[set[tuple[str, str]], Spec, int, int | None],
) -> None:
    keys, spec, page, take = scenario
    cond = build(spec)
    table = Recording(BackendTable(), max_page=page)

    async def run() -> tuple[list[Any], list[Any]]:
        for pk, rk in keys:
            await table.insert(Movie(pk, rk))
        q = Query(Movie, table).where(cond)
        whole = [(m.PartitionKey, m.RowKey) async for m in (q.take(take) if take else q)]
        return whole, await _run_resuming(table, cond, page, take)

    whole, resumed = asyncio.run(run())
    expected = expected_keys(keys, lambda pk, rk: accepts(spec, pk, rk))
    if take is not None:
        expected = expected[:take]
    plan = Query(Movie).where(cond).explain()
    assert whole == expected, (cond.to_odata(), str(plan))
    assert resumed == expected, (cond.to_odata(), str(plan))


# ---------------------------------------------------------------------------- over HTTP

STORED = [
    ("p", rk)
    for rk in ["a", "a\ud7ff", "a\U00010000", "a\U0010ffff", "a\ue000", "a\uffff", "a\uffffz"]
] + [(pk, "r") for pk in ["\U0001f600", "\ue000", "\uffff", "\U00010000x"]]


@pytest.mark.parametrize(
    "spec",
    [
        ("prefix", "RowKey", "a\uffff"),
        ("prefix", "RowKey", "a\ud7ff"),
        ("prefix", "RowKey", "a\U0010ffff"),
        ("between", "RowKey", "a\U00010000", "a\ue000"),
        ("or", ("prefix", "PartitionKey", "\ue000"), ("prefix", "PartitionKey", "\U0001f600")),
        ("or", ("eq", "PartitionKey", "\uffff"), ("eq", "PartitionKey", "\U00010000x")),
    ],
    ids=["uffff", "ud7ff", "U10ffff", "between", "or-prefixes", "or-points"],
)
async def test_key_ranges_over_the_stub(small_pages_table: Recording, spec: Spec) -> None:
    for pk, rk in STORED:
        await small_pages_table.insert(Movie(pk, rk))
    q = Query(Movie, small_pages_table).where(build(spec))
    got = [(m.PartitionKey, m.RowKey) async for m in q]
    assert got == expected_keys(set(STORED), lambda pk, rk: accepts(spec, pk, rk))
    assert got  # each case finds something
