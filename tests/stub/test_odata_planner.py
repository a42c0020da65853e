"""Key-range planner: exact ranges for representative filters, and property tests.

Soundness: every entity the filter matches lies inside the planned ranges.
Tightness: when the planner says its ranges are exact, every key inside them matches.
Both are checked against an independent reference evaluator of the filter tree.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity, TypedValue
from azt_server_stub.odata import KeyRange, _parser, compile_entity_filter
from azt_server_stub.odata._ast import (
    And,
    BoolProp,
    Compare,
    Const,
    Node,
    Not,
    Or,
    count_comparisons,
)
from azt_server_stub.odata._utf16 import to_units

Z = "\x00"


@pytest.mark.parametrize(
    ("text", "kind", "ranges", "exact"),
    [
        ("PartitionKey eq 'p' and RowKey eq 'r'", "point", [(("p", "r"), ("p", "r" + Z))], True),
        ("RowKey eq 'r' and PartitionKey eq 'p'", "point", [(("p", "r"), ("p", "r" + Z))], True),
        ("'p' eq PartitionKey and 'r' eq RowKey", "point", [(("p", "r"), ("p", "r" + Z))], True),
        ("PartitionKey eq 'p'", "partition", [(("p", ""), ("p" + Z, ""))], True),
        ("PartitionKey eq ''", "partition", [(("", ""), (Z, ""))], True),
        (
            "PartitionKey eq 'p' and RowKey ge 'a' and RowKey lt 'b'",
            "row-range",
            [(("p", "a"), ("p", "b"))],
            True,
        ),
        (
            "PartitionKey eq 'p' and RowKey gt 'a'",
            "row-range",
            [(("p", "a" + Z), ("p" + Z, ""))],
            True,
        ),
        ("PartitionKey eq 'p' and RowKey le 'a'", "row-range", [(("p", ""), ("p", "a" + Z))], True),
        ("PartitionKey eq 'p' and RowKey ge ''", "partition", [(("p", ""), ("p" + Z, ""))], True),
        (
            "PartitionKey ge 'a' and PartitionKey lt 'b'",
            "partition-range",
            [(("a", ""), ("b", ""))],
            True,
        ),
        ("PartitionKey gt 'a'", "partition-range", [(("a" + Z, ""), None)], True),
        ("PartitionKey ge 'a'", "partition-range", [(("a", ""), None)], True),
        ("PartitionKey lt 'a'", "partition-range", [(("", ""), ("a", ""))], True),
        ("PartitionKey le 'a'", "partition-range", [(("", ""), ("a" + Z, ""))], True),
        ("PartitionKey ge ''", "scan", [(("", ""), None)], True),
        ("PartitionKey lt ''", "empty", [], True),
        (
            "PartitionKey eq 'b' or PartitionKey eq 'a'",
            "multi",
            [(("a", ""), ("a" + Z, "")), (("b", ""), ("b" + Z, ""))],
            True,
        ),
        (
            "(PartitionKey eq 'a' and RowKey eq '2') or (PartitionKey eq 'a' and RowKey eq '1')"
            " or (PartitionKey eq 'b' and RowKey eq '1')",
            "multi",
            [
                (("a", "1"), ("a", "1" + Z)),
                (("a", "2"), ("a", "2" + Z)),
                (("b", "1"), ("b", "1" + Z)),
            ],
            True,
        ),
        (
            "PartitionKey eq 'a' and RowKey eq 'x' or PartitionKey eq 'b' and RowKey ge 'm'",
            "multi",
            [(("a", "x"), ("a", "x" + Z)), (("b", "m"), ("b" + Z, ""))],
            True,
        ),
        (
            "(PartitionKey eq 'a' or PartitionKey eq 'b') and RowKey gt 'x'",
            "multi",
            [(("a", "x" + Z), ("a" + Z, "")), (("b", "x" + Z), ("b" + Z, ""))],
            True,
        ),
        (
            "PartitionKey ge 'a' and PartitionKey lt 'c'"
            " or PartitionKey ge 'b' and PartitionKey lt 'd'",
            "partition-range",
            [(("a", ""), ("d", ""))],
            True,
        ),
        ("PartitionKey lt 'b' or PartitionKey ge 'b'", "scan", [(("", ""), None)], True),
        ("PartitionKey eq 'a' and PartitionKey eq 'b'", "empty", [], True),
        (
            "PartitionKey eq 'a' and RowKey eq '1' or PartitionKey eq 'a'",
            "partition",
            [(("a", ""), ("a" + Z, ""))],
            True,
        ),
        # negation
        (
            "not (PartitionKey eq 'a')",
            "multi",
            [(("", ""), ("a", "")), (("a" + Z, ""), None)],
            True,
        ),
        ("PartitionKey ne 'a'", "multi", [(("", ""), ("a", "")), (("a" + Z, ""), None)], True),
        ("PartitionKey ne ''", "partition-range", [((Z, ""), None)], True),
        (
            "not (PartitionKey ge 'a' and PartitionKey lt 'b')",
            "multi",
            [(("", ""), ("a", "")), (("b", ""), None)],
            True,
        ),
        ("not (PartitionKey lt 'b')", "partition-range", [(("b", ""), None)], True),
        ("not not PartitionKey eq 'a'", "partition", [(("a", ""), ("a" + Z, ""))], True),
        (
            "PartitionKey eq 'p' and not (RowKey eq 'r')",
            "multi",
            [(("p", ""), ("p", "r")), (("p", "r" + Z), ("p" + Z, ""))],
            True,
        ),
        (
            "not (PartitionKey ne 'p' or RowKey lt 'm')",
            "row-range",
            [(("p", "m"), ("p" + Z, ""))],
            True,
        ),
        # non-key conditions cannot narrow
        ("Age gt 5", "scan", [(("", ""), None)], False),
        ("PartitionKey eq 'p' and Age gt 5", "partition", [(("p", ""), ("p" + Z, ""))], False),
        (
            "PartitionKey eq 'p' and not (Age gt 5)",
            "partition",
            [(("p", ""), ("p" + Z, ""))],
            False,
        ),
        ("PartitionKey eq 'p' or Age gt 5", "scan", [(("", ""), None)], False),
        ("not (PartitionKey eq 'p' and Age gt 5)", "scan", [(("", ""), None)], False),
        ("PartitionKey eq 'p' and Flag", "partition", [(("p", ""), ("p" + Z, ""))], False),
        ("Timestamp gt datetime'2020-01-01T00:00:00Z'", "scan", [(("", ""), None)], False),
        # row constraints across several partitions widen to the partitions
        ("RowKey eq 'r'", "partition-range", [(("", "r"), None)], False),
        (
            "PartitionKey ge 'a' and PartitionKey lt 'c' and RowKey eq 'r'",
            "partition-range",
            [(("a", "r"), ("c", ""))],
            False,
        ),
        # constants and constantly false key comparisons
        ("PartitionKey eq 1", "empty", [], True),
        ("RowKey gt datetime'2020-01-01T00:00:00Z'", "empty", [], True),
        ("not (PartitionKey eq 1)", "scan", [(("", ""), None)], True),
        ("PartitionKey", "empty", [], True),
        ("not RowKey", "scan", [(("", ""), None)], True),
        ("false", "empty", [], True),
        ("true", "scan", [(("", ""), None)], True),
        ("PartitionKey eq 'a' or false", "partition", [(("a", ""), ("a" + Z, ""))], True),
        ("Age gt 1 and false", "empty", [], True),
        ("", "scan", [(("", ""), None)], True),
    ],
)
def test_ranges(text: str, kind: str, ranges: list[KeyRange], exact: bool) -> None:
    flt = compile_entity_filter(text)
    assert flt.ranges == ranges
    assert flt.kind == kind
    assert flt.exact is exact


# --- property tests ---------------------------------------------------------------------

# Includes characters whose code-point and UTF-16 orders differ.
ALPHABET = "ab\ufffd\U0001f600"
texts = st.text(alphabet=ALPHABET, max_size=3)
OPS = ("eq", "ne", "gt", "ge", "lt", "le")
FLIP = {"eq": "eq", "ne": "ne", "gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}


def quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@st.composite
def comparison(draw: st.DrawFn, props: tuple[str, ...], literals: st.SearchStrategy[str]) -> str:
    prop = draw(st.sampled_from(props))
    op = draw(st.sampled_from(OPS))
    lit = draw(literals)
    if draw(st.booleans()):
        return f"{lit} {FLIP[op]} {prop}"
    return f"{prop} {op} {lit}"


key_literals = texts.map(quote)
key_leaf = comparison(("PartitionKey", "RowKey"), key_literals)
other_literals = st.one_of(
    key_literals,
    st.integers(-2, 2).map(str),
    st.integers(-2, 2).map(lambda i: f"{i}L"),
    st.sampled_from(["1.5", "-0.5", "true", "false"]),
)
any_leaf = st.one_of(
    key_leaf,
    comparison(("A", "B", "Missing", "PartitionKey", "RowKey"), other_literals),
    st.sampled_from(["F", "not F", "true", "false", "PartitionKey"]),
)


def combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, children).map(lambda ab: f"({ab[0]}) and ({ab[1]})"),
        st.tuples(children, children).map(lambda ab: f"({ab[0]}) or ({ab[1]})"),
        children.map(lambda a: f"not ({a})"),
    )


any_filter = st.recursive(any_leaf, combine, max_leaves=10)
key_filter = st.recursive(key_leaf, combine, max_leaves=10)

key_values = st.one_of(
    st.none(),
    st.tuples(st.just(Edm.STRING), texts),
    st.tuples(st.just(Edm.INT32), st.integers(-2, 2)),
    st.tuples(st.just(Edm.INT64), st.integers(-2, 2)),
    st.tuples(st.just(Edm.DOUBLE), st.sampled_from([-1.0, 0.0, 1.0, 1.5])),
    st.tuples(st.just(Edm.BOOLEAN), st.booleans()),
)


@st.composite
def entities(draw: st.DrawFn) -> Entity:
    props: dict[str, TypedValue] = {}
    for name in ("A", "B", "F"):
        value = draw(key_values)
        if value is not None:
            props[name] = value
    return Entity(draw(texts), draw(texts), 0, props)


_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "ge": operator.ge,
    "lt": operator.lt,
    "le": operator.le,
}


def reference(node: Node, e: Entity) -> bool:
    """An independent, direct interpreter of the typing rules (PROTOCOL.md 7.3)."""
    if isinstance(node, Const):
        return node.value
    if isinstance(node, Not):
        return not reference(node.operand, e)
    if isinstance(node, And):
        return all(reference(item, e) for item in node.items)
    if isinstance(node, Or):
        return any(reference(item, e) for item in node.items)
    stored = e.get(node.prop)
    if isinstance(node, BoolProp):
        return stored is not None and stored[0] is Edm.BOOLEAN and stored[1] is True
    assert isinstance(node, Compare)
    if stored is None:
        return False
    edm, value = stored
    lit = node.lit
    if edm is not lit.edm and not (lit.edm is Edm.INT32 and edm in (Edm.INT64, Edm.DOUBLE)):
        return False
    left, right = value, lit.value
    if edm is Edm.STRING:
        left, right = to_units(left), to_units(right)
    return _CMP[node.op](left, right)


def units(key: tuple[str, str]) -> tuple[str, str]:
    return (to_units(key[0]), to_units(key[1]))


def inside(ranges: list[KeyRange], key: tuple[str, str]) -> bool:
    k = units(key)
    return any(units(lo) <= k and (hi is None or k < units(hi)) for lo, hi in ranges)


def check_well_formed(ranges: list[KeyRange]) -> None:
    previous_hi: tuple[str, str] | None = None
    for i, (lo, hi) in enumerate(ranges):
        if hi is not None:
            assert units(lo) < units(hi)
        if i:
            assert previous_hi is not None  # only the last range may be unbounded
            assert units(previous_hi) < units(lo)  # disjoint, sorted and merged
        previous_hi = hi


def compile_or_skip(text: str) -> Any:
    """The compiled filter, or None when it has more than 15 comparisons."""
    if count_comparisons(parse_filter_unchecked(text)) > 15:
        with pytest.raises(StubError, match="comparisons"):
            compile_entity_filter(text)
        return None
    return compile_entity_filter(text)


def parse_filter_unchecked(text: str) -> Node:
    """Parse without the 15-comparison limit (to count them)."""
    with patch.object(_parser, "MAX_COMPARISONS", 10**6):
        return _parser.parse_filter(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_filter, st.lists(entities(), min_size=1, max_size=12))
def test_planner_is_sound_and_evaluator_matches_reference(text: str, sample: list[Entity]) -> None:
    flt = compile_or_skip(text)
    if flt is None:
        return
    check_well_formed(flt.ranges)
    for e in sample:
        matched = flt.matches(e)
        assert matched == reference(flt.root, e), (text, e)
        if matched:
            assert inside(flt.ranges, e.key), (text, e.key, flt.ranges)
        elif flt.exact:
            assert not inside(flt.ranges, e.key), (text, e.key, flt.ranges)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key_filter, st.lists(st.tuples(texts, texts), min_size=1, max_size=20))
def test_pure_key_filters_are_tight_where_expressible(
    text: str, keys: list[tuple[str, str]]
) -> None:
    flt = compile_or_skip(text)
    if flt is None:
        return
    check_well_formed(flt.ranges)
    for pk, rk in keys:
        e = Entity(pk, rk, 0)
        assert flt.matches(e) == reference(flt.root, e)
        assert flt.matches(e) <= inside(flt.ranges, e.key)
        if flt.exact:
            assert flt.matches(e) == inside(flt.ranges, e.key), (text, e.key, flt.ranges)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(texts, st.one_of(st.none(), st.tuples(st.sampled_from(OPS), texts))),
        min_size=1,
        max_size=7,
    ),
    st.lists(st.tuples(texts, texts), min_size=1, max_size=20),
)
def test_or_of_partition_conditions_is_exact(
    terms: list[tuple[str, tuple[str, str] | None]], keys: list[tuple[str, str]]
) -> None:
    """Fan-out shapes: ORs of ``PartitionKey eq`` terms, each optionally with one RowKey bound."""
    parts = []
    for pk, row in terms:
        term = f"PartitionKey eq {quote(pk)}"
        if row is not None:
            term += f" and RowKey {row[0]} {quote(row[1])}"
        parts.append(f"({term})")
    flt = compile_entity_filter(" or ".join(parts))
    assert flt.exact
    assert flt.kind in ("point", "row-range", "partition", "multi", "empty")
    for pk, rk in keys + [(pk, "") for pk, _ in terms]:
        e = Entity(pk, rk, 0)
        assert flt.matches(e) == inside(flt.ranges, e.key)
