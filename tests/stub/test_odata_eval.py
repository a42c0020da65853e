"""Evaluator of the stub's ``$filter`` engine: the service's typing rules per EDM type."""

from __future__ import annotations

import math
import uuid

import pytest

from azt_server_stub.model import Edm, EdmName, Entity, TypedValue, parse_datetime
from azt_server_stub.odata import compile_entity_filter, compile_table_filter

G1 = uuid.UUID("00000000-0000-0000-0000-0000000000ff")
G2 = uuid.UUID("01000000-0000-0000-0000-000000000000")
T2020 = parse_datetime("2020-01-01T00:00:00Z")


def entity(**props: TypedValue) -> Entity:
    return Entity("pk", "rk", T2020, dict(props))


def match(text: str, e: Entity) -> bool:
    result = compile_entity_filter(text).matches(e)
    assert type(result) is bool
    return result


# --- same-type comparisons, per EDM type -------------------------------------------

ALL_OPS = ("eq", "ne", "gt", "ge", "lt", "le")


def expected(stored: object, literal: object) -> dict[str, bool]:
    return {
        "eq": stored == literal,
        "ne": stored != literal,
        "gt": stored > literal,  # type: ignore[operator]
        "ge": stored >= literal,  # type: ignore[operator]
        "lt": stored < literal,  # type: ignore[operator]
        "le": stored <= literal,  # type: ignore[operator]
    }


@pytest.mark.parametrize(
    ("edm", "stored", "literal_text", "literal_value"),
    [
        (Edm.STRING, "abc", "'abc'", "abc"),
        (Edm.STRING, "abc", "'abd'", "abd"),
        (Edm.STRING, "abc", "'ab'", "ab"),
        (Edm.STRING, "", "''", ""),
        (Edm.STRING, "B", "'a'", "a"),  # ordinal: upper case sorts before lower case
        (Edm.INT32, 5, "5", 5),
        (Edm.INT32, -7, "3", 3),
        (Edm.INT64, 2**40, "1099511627776L", 2**40),
        (Edm.INT64, 2**40, "1099511627777L", 2**40 + 1),
        (Edm.DOUBLE, 2.5, "2.5", 2.5),
        (Edm.DOUBLE, 2.5, "1e1", 10.0),
        (Edm.DOUBLE, -0.0, "0.0", 0.0),
        (Edm.BOOLEAN, True, "true", True),
        (Edm.BOOLEAN, False, "true", True),
        (Edm.DATETIME, T2020, "datetime'2020-01-01T00:00:00Z'", T2020),
        (Edm.DATETIME, T2020, "datetime'2020-01-01T00:00:00.0000001Z'", T2020 + 1),
        (Edm.DATETIME, T2020 + 1, "datetime'2020-01-01T00:00:00Z'", T2020),
        (Edm.GUID, G1, f"guid'{G1}'", G1),
        (Edm.GUID, G1, f"guid'{G2}'", G2),
        (Edm.GUID, G2, f"guid'{str(G1).upper()}'", G1),
        (Edm.BINARY, b"\x01\x02", "X'0102'", b"\x01\x02"),
        (Edm.BINARY, b"\x01\x02", "X'0103'", b"\x01\x03"),
        (Edm.BINARY, b"\x01\x02", "X'01'", b"\x01"),
        (Edm.BINARY, b"\xff", "binary'0100'", b"\x01\x00"),
    ],
)
def test_same_type_comparisons(
    edm: EdmName, stored: object, literal_text: str, literal_value: object
) -> None:
    e = entity(P=(edm, stored))
    if edm is Edm.GUID:
        assert isinstance(stored, uuid.UUID)
        assert isinstance(literal_value, uuid.UUID)
        want = expected(stored.int, literal_value.int)
    else:
        want = expected(stored, literal_value)
    got = {op: match(f"P {op} {literal_text}", e) for op in ALL_OPS}
    assert got == want
    # the same comparison written literal-first
    flipped = {"eq": "eq", "ne": "ne", "gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}
    assert {op: match(f"{literal_text} {flipped[op]} P", e) for op in ALL_OPS} == want


def test_guid_order_is_the_canonical_text_order() -> None:
    low = uuid.UUID("0fffffff-ffff-ffff-ffff-ffffffffffff")
    high = uuid.UUID("10000000-0000-0000-0000-000000000000")
    assert match(f"P lt guid'{high}'", entity(P=(Edm.GUID, low)))
    assert not match(f"P gt guid'{high}'", entity(P=(Edm.GUID, low)))


def test_binary_is_bytewise_unsigned() -> None:
    assert match("P gt X'7f'", entity(P=(Edm.BINARY, b"\x80")))
    assert match("P lt X'0000'", entity(P=(Edm.BINARY, b"\x00")))  # prefix sorts first


def test_double_nan_and_infinities() -> None:
    nan = entity(P=(Edm.DOUBLE, math.nan))
    assert not match("P eq NaN", nan)
    assert match("P ne NaN", nan)
    assert not match("P gt 0.0", nan)
    assert not match("P lt 0.0", nan)
    assert match("P lt INF", entity(P=(Edm.DOUBLE, 1e308)))
    assert match("P eq -INF", entity(P=(Edm.DOUBLE, -math.inf)))


def test_strings_compare_by_utf16_code_units() -> None:
    # U+1F600 is above U+FFFD by code point but below it in UTF-16 (D83D DE00 < FFFD).
    astral = entity(P=(Edm.STRING, "\U0001f600"))
    high_bmp = entity(P=(Edm.STRING, "\ufffd"))
    assert match("P lt '\ufffd'", astral)
    assert not match("P gt '\ufffd'", astral)
    assert match("P gt '\U0001f600'", high_bmp)
    assert match("P gt 'a\U0001f600'", entity(P=(Edm.STRING, "a\ufffd")))
    assert match("P ge 'a'", entity(P=(Edm.STRING, "a\U0001f600")))
    assert match("P eq '\U0001f600'", astral)
    # keys follow the same order
    e = Entity("\ufffd", "\U0001f600", 0)
    assert match("PartitionKey gt '\U0001f600' and RowKey lt '\ufffd'", e)
    assert compile_entity_filter("PartitionKey gt '\U0001f600'").ranges == [
        (("\U0001f600\x00", ""), None)
    ]


def test_strings_are_case_sensitive() -> None:
    e = entity(Name=(Edm.STRING, "Smith"))
    assert match("Name eq 'Smith'", e)
    assert not match("Name eq 'smith'", e)


# --- cross-type comparisons ------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "literal", "results"),
    [
        # Int32 literals widen to Int64 and Double properties
        ((Edm.INT64, 5), "5", (True, False, False, True, False, True)),
        ((Edm.INT64, 2**40), "5", (False, True, True, True, False, False)),
        ((Edm.DOUBLE, 5.0), "5", (True, False, False, True, False, True)),
        ((Edm.DOUBLE, 5.5), "5", (False, True, True, True, False, False)),
        ((Edm.DOUBLE, 4.5), "-5", (False, True, True, True, False, False)),
        # Int64 literals are never narrowed to Int32, and do not match Double
        ((Edm.INT32, 5), "5L", (False,) * 6),
        ((Edm.DOUBLE, 5.0), "5L", (False,) * 6),
        # Double literals do not match integer properties
        ((Edm.INT32, 5), "5.0", (False,) * 6),
        ((Edm.INT64, 5), "5.0", (False,) * 6),
        # no conversions between strings and anything else
        ((Edm.STRING, "5"), "5", (False,) * 6),
        ((Edm.INT32, 5), "'5'", (False,) * 6),
        ((Edm.STRING, "true"), "true", (False,) * 6),
        ((Edm.BOOLEAN, True), "'true'", (False,) * 6),
        ((Edm.BOOLEAN, True), "1", (False,) * 6),
        ((Edm.INT32, 1), "true", (False,) * 6),
        ((Edm.STRING, "2020-01-01T00:00:00Z"), "datetime'2020-01-01T00:00:00Z'", (False,) * 6),
        ((Edm.DATETIME, T2020), "'2020-01-01T00:00:00Z'", (False,) * 6),
        ((Edm.STRING, str(G1)), f"guid'{G1}'", (False,) * 6),
        ((Edm.GUID, G1), f"'{G1}'", (False,) * 6),
        ((Edm.BINARY, b"\x01"), "'\x01'", (False,) * 6),
        ((Edm.STRING, "AQ=="), "X'01'", (False,) * 6),
        ((Edm.INT64, 0), "datetime'0001-01-01T00:00:00Z'", (False,) * 6),
        ((Edm.DATETIME, 0), "0L", (False,) * 6),
    ],
)
def test_cross_type(stored: TypedValue, literal: str, results: tuple[bool, ...]) -> None:
    e = entity(P=stored)
    assert tuple(match(f"P {op} {literal}", e) for op in ALL_OPS) == results


# --- missing properties and negation ---------------------------------------------------


@pytest.mark.parametrize(
    "literal",
    [
        "'x'",
        "''",
        "1",
        "1L",
        "1.0",
        "true",
        f"guid'{G1}'",
        "X'00'",
        "datetime'2020-01-01T00:00:00Z'",
    ],
)
def test_missing_property_is_false_for_every_operator(literal: str) -> None:
    e = entity(Other=(Edm.STRING, "x"))
    for op in ALL_OPS:
        assert not match(f"Missing {op} {literal}", e)
        assert match(f"not (Missing {op} {literal})", e)


def test_not_of_missing_and_mismatch() -> None:
    e = entity(Age=(Edm.STRING, "old"))
    assert not match("Foo ne ''", e)
    assert match("not (Foo eq 'x')", e)
    assert not match("Age ne 3", e)  # type mismatch is false, even for ne
    assert match("not (Age eq 3)", e)
    assert match("not (Age ne 3)", e)


def test_lt_empty_string_is_empty() -> None:
    assert not match("Name lt ''", entity(Name=(Edm.STRING, "")))
    assert not match("RowKey lt ''", entity())


def test_property_names_are_case_sensitive() -> None:
    e = entity(Age=(Edm.INT32, 30))
    assert match("Age eq 30", e)
    assert not match("age eq 30", e)
    assert not match("partitionkey eq 'pk'", e)
    assert match("PartitionKey eq 'pk'", e)


# --- system properties ------------------------------------------------------------------


def test_system_properties() -> None:
    e = Entity("p1", "r1", T2020, {"PartitionKey": (Edm.STRING, "shadow")})
    assert match("PartitionKey eq 'p1' and RowKey eq 'r1'", e)
    assert match("Timestamp eq datetime'2020-01-01T00:00:00Z'", e)
    assert match("Timestamp ge datetime'2019-12-31T23:59:59.9999999Z'", e)
    assert not match("Timestamp gt datetime'2020-01-01T00:00:00Z'", e)
    # keys are strings and Timestamp a DateTime: other literal types never match
    assert not match("PartitionKey eq 1", e)
    assert not match("PartitionKey ne 1", e)
    assert not match("Timestamp eq '2020-01-01T00:00:00Z'", e)
    assert not match("Timestamp ne 0L", e)


# --- Boolean operands and logic ------------------------------------------------------------


def test_bare_boolean_properties() -> None:
    yes = entity(Flag=(Edm.BOOLEAN, True))
    no = entity(Flag=(Edm.BOOLEAN, False))
    other = entity(Flag=(Edm.INT32, 1))
    missing = entity()
    assert [match("Flag", e) for e in (yes, no, other, missing)] == [True, False, False, False]
    assert [match("not Flag", e) for e in (yes, no, other, missing)] == [False, True, True, True]
    assert not match("PartitionKey", yes)
    assert match("not RowKey", yes)
    assert not match("Timestamp", yes)


def test_constants_and_logic() -> None:
    e = entity(A=(Edm.INT32, 1), B=(Edm.INT32, 2))
    assert match("true", e)
    assert not match("false", e)
    assert match("A eq 1 and B eq 2", e)
    assert not match("A eq 1 and B eq 3", e)
    assert match("A eq 0 or B eq 2", e)
    assert match("A eq 0 or B eq 0 or true", e)
    assert not match("not (A eq 1 or B eq 0)", e)
    assert match("not A eq 0 and not B eq 0", e)
    assert match("(A eq 1 or A eq 9) and (B eq 9 or B eq 2)", e)


def test_empty_filter_matches_everything() -> None:
    assert compile_entity_filter("").matches(entity())
    assert compile_entity_filter("   ").matches(entity())


def test_filters_are_cached_and_reusable() -> None:
    f = compile_entity_filter("A eq 1")
    assert compile_entity_filter("A eq 1") is f
    assert f.matches(entity(A=(Edm.INT32, 1)))
    assert not f.matches(entity(A=(Edm.INT32, 2)))


# --- Query Tables ------------------------------------------------------------------------


def test_table_filter() -> None:
    pred = compile_table_filter("TableName eq 'Customers'")
    assert pred("Customers")
    assert not pred("customers")  # the stored, case-preserved name is compared ordinally
    rng = compile_table_filter("TableName ge 'b' and TableName lt 'c'")
    assert [n for n in ("apple", "b", "banana", "c", "cherry") if rng(n)] == ["b", "banana"]
    assert not compile_table_filter("Other eq 'x'")("x")
    assert compile_table_filter("not (Other eq 'x')")("x")
    assert not compile_table_filter("TableName eq 1")("1")
    assert not compile_table_filter("TableName")("t")
    assert compile_table_filter("")("anything")
    assert compile_table_filter("'m' lt TableName")("mytable")


def test_names_and_values_cannot_break_the_generated_code() -> None:
    e = Entity(
        "p",
        "r",
        0,
        {
            "e": (Edm.INT32, 1),
            "None": (Edm.STRING, "x"),
            "class": (Edm.BOOLEAN, True),
            "t1": (Edm.STRING, "\"); import os; ('"),
            "c0": (Edm.DOUBLE, math.inf),
        },
    )
    assert match("e eq 1 and None eq 'x' and class", e)
    assert match("t1 eq '\"); import os; (''' and t1 ne '\\'", e)
    assert match("c0 eq INF and c0 gt 1.5", e)
    assert match("c0 ne NaN and not (c0 eq NaN)", e)
