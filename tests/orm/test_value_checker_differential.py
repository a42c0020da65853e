"""The construction and assignment check with its plain case first
(``azt._orm.values.value_checker``) against the general check it short-cuts
(``Column.check``), on random values of every kind and edge values of every EDM type: both
must give the same value (same type, same 100 ns digits) or the same error."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from azt._edm.datetime import EdmDateTime
from azt._edm.types import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from azt._edm.validation import MAX_BINARY_BYTES, MAX_STRING_UTF16
from azt._errors import ValidationError
from azt._orm.columns import entity_info
from azt._orm.values import value_checker

from .models import AllTypes, Required


class _Str(str):
    """A str subclass (not the plain case)."""


class _Int(int):
    """An int subclass (not the plain case)."""


_EDGE: list[Any] = [
    None,
    "",
    "a",
    "é",
    "\ud800",  # a lone surrogate
    "x" * MAX_STRING_UTF16,
    "x" * (MAX_STRING_UTF16 + 1),
    "é" * MAX_STRING_UTF16,
    "😀" * (MAX_STRING_UTF16 // 2),
    "😀" * (MAX_STRING_UTF16 // 2 + 1),
    _Str("sub"),
    "a/b",
    "x#",
    "q?",
    "back\\slash",
    "\x7f",
    "\x00",
    "tab\t",
    "\x9f",
    "x" * 1024,
    "x" * 1025,
    "é" * 1024,
    "😀" * 512,
    "😀" * 513,
    0,
    -1,
    INT32_MIN,
    INT32_MAX,
    INT32_MIN - 1,
    INT32_MAX + 1,
    INT64_MIN,
    INT64_MAX,
    INT64_MIN - 1,
    INT64_MAX + 1,
    _Int(5),
    True,
    False,
    0.0,
    -0.0,
    1.5,
    math.inf,
    -math.inf,
    math.nan,
    2**1100,
    datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
    datetime(2024, 1, 2, 3, 4, 5),  # naive
    datetime(1600, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-2))),
    datetime(1601, 1, 1, tzinfo=UTC),
    datetime(1600, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
    EdmDateTime.parse("2024-01-02T03:04:05.1234567Z"),
    EdmDateTime.parse("1601-01-01T00:00:00.0000001Z"),
    EdmDateTime(2024, 1, 2),  # naive EdmDateTime
    uuid.UUID(int=0),
    uuid.UUID(int=2**128 - 1),
    b"",
    b"x" * MAX_BINARY_BYTES,
    b"x" * (MAX_BINARY_BYTES + 1),
    bytearray(b"ab"),
    memoryview(b"cd"),
    "not-a-uuid",
    [1, 2],
    object(),
]

_COLUMNS = [p for cls in (AllTypes, Required) for p in entity_info(cls).props if not p.is_key] + [
    p for p in entity_info(AllTypes).props if p.is_key
]


def _outcome(check: Any, value: Any) -> tuple[str, Any]:
    try:
        out = check(value)
    except ValidationError as exc:
        return ("error", str(exc))
    if isinstance(out, EdmDateTime):
        return ("value", (type(out), out, out._hns, out.tzinfo))
    if isinstance(out, float) and math.isnan(out):
        return ("value", (float, "nan"))
    return ("value", (type(out), out))


@pytest.mark.parametrize("column", _COLUMNS, ids=lambda p: f"{p.owner.__name__}.{p.attr}")
def test_edge_values_checked_alike(column: Any) -> None:
    fast = value_checker(column, column.check)
    for value in _EDGE:
        assert _outcome(fast, value) == _outcome(column.check, value), (column, value)


_VALUES = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.text(st.characters(max_codepoint=0x7F), max_size=40),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.datetimes(
        min_value=datetime(1500, 1, 1),
        max_value=datetime(9000, 1, 1),
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=5)), None]),
    ),
    st.builds(
        EdmDateTime.parse,
        st.datetimes(min_value=datetime(1601, 1, 1), max_value=datetime(9000, 1, 1)).map(
            lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%f") + "3Z"
        ),
    ),
    st.uuids(),
    st.binary(max_size=40),
)


@given(st.sampled_from(_COLUMNS), _VALUES)
def test_random_values_checked_alike(column: Any, value: Any) -> None:
    assert _outcome(value_checker(column, column.check), value) == _outcome(column.check, value)


def test_construction_and_assignment_use_it() -> None:
    obj = AllTypes("p", "r", s="x", i64=2**40, dt=datetime(2024, 1, 1, tzinfo=UTC))
    assert type(obj.dt) is EdmDateTime
    assert obj.i64 == 2**40
    with pytest.raises(ValidationError, match=r"AllTypes\.i32"):
        obj.i32 = INT32_MAX + 1
    with pytest.raises(ValidationError, match=r"AllTypes\.s .*64 KiB"):
        obj.s = "x" * (MAX_STRING_UTF16 + 1)
