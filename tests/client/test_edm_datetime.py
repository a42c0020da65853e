"""EdmDateTime's rich comparisons, each operator in both directions at its boundaries: the
7th digit (100 ns) alone, the microsecond beside a smaller 7th digit, equal values, and
against a plain ``datetime`` on either side; every answer is a ``bool`` (never ``None``).
Also a tzinfo that gives no UTC offset, and ``from_datetime`` of a subclass."""

from __future__ import annotations

import operator
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any

import pytest

from azt import EdmDateTime, ValidationError

Op = Callable[[Any, Any], object]
OPS: dict[str, Op] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
# what each operator answers for (left < right, left == right, left > right)
TRUTH: dict[str, tuple[bool, bool, bool]] = {
    "<": (True, False, False),
    "<=": (True, True, False),
    ">": (False, False, True),
    ">=": (False, True, True),
    "==": (False, True, False),
    "!=": (True, False, True),
}

T = "2020-01-01T00:00:00."
PAIRS = [
    # (smaller, larger): the 7th digit alone, the microsecond against a larger 7th digit,
    # the second against the fraction
    (T + "0000003Z", T + "0000004Z"),
    (T + "0000000Z", T + "0000001Z"),
    (T + "0000009Z", T + "0000010Z"),
    (T + "0000019Z", T + "0000020Z"),
    (T + "9999999Z", "2020-01-01T00:00:01.0000000Z"),
]


def _check(op: str, left: object, right: object, where: int) -> None:
    answer = OPS[op](left, right)
    assert answer is TRUTH[op][where], (left, op, right, answer)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("small", "large"), PAIRS)
def test_each_operator_both_ways_across_100_ns(op: str, small: str, large: str) -> None:
    a, b = EdmDateTime.parse(small), EdmDateTime.parse(large)
    _check(op, a, b, 0)
    _check(op, b, a, 2)
    _check(op, a, a, 1)
    _check(op, b, EdmDateTime.parse(large), 1)


@pytest.mark.parametrize("op", OPS)
def test_against_a_plain_datetime_on_either_side(op: str) -> None:
    plain = datetime(2020, 1, 1, 0, 0, 0, 5, tzinfo=UTC)
    same = EdmDateTime(2020, 1, 1, 0, 0, 0, 5)
    above = EdmDateTime(2020, 1, 1, 0, 0, 0, 5, nanosecond=100)  # within the microsecond
    below = EdmDateTime(2020, 1, 1, 0, 0, 0, 4, nanosecond=900)
    _check(op, same, plain, 1)
    _check(op, plain, same, 1)
    _check(op, above, plain, 2)
    _check(op, plain, above, 0)
    _check(op, below, plain, 0)
    _check(op, plain, below, 2)
    # another zone: the same instant
    cet = datetime(2020, 1, 1, 1, 0, 0, 5, tzinfo=timezone(timedelta(hours=1)))
    _check(op, same, cet, 1)
    _check(op, above, cet, 2)
    _check(op, cet, above, 0)


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_ordering_against_other_types_is_refused(op: str) -> None:
    t = EdmDateTime(2020, 1, 1)
    with pytest.raises(TypeError):
        OPS[op](t, "2020-01-01")
    with pytest.raises(TypeError):
        OPS[op]("2020-01-01", t)
    with pytest.raises(TypeError):  # naive and aware, as datetime itself
        OPS[op](t, datetime(2020, 1, 2))


def test_equality_with_other_types_is_false_not_an_error() -> None:
    t = EdmDateTime(2020, 1, 1)
    assert (t == "2020-01-01") is False
    assert (t != "2020-01-01") is True
    assert t.__eq__(1) is NotImplemented
    assert t.__ne__(1) is NotImplemented
    assert (t == datetime(2020, 1, 1)) is False  # naive: never equal to an aware value


def test_sorting_and_min_max_use_the_seventh_digit() -> None:
    texts = [T + f"000000{d}Z" for d in (7, 1, 9, 0, 4)]
    values = [EdmDateTime.parse(x) for x in texts]
    assert [v.to_wire() for v in sorted(values)] == sorted(texts)
    assert max(values).nanosecond == 900
    assert min(values).nanosecond == 0


class _NoOffset(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str:
        return "nowhere"


def test_a_tzinfo_with_no_offset_is_refused() -> None:
    with pytest.raises(ValidationError, match="gives no UTC offset"):
        EdmDateTime(2020, 1, 1, tzinfo=_NoOffset())
    with pytest.raises(ValidationError, match=r"naive datetime .* refused"):
        EdmDateTime.from_datetime(datetime(2020, 1, 1, tzinfo=_NoOffset()))


def test_another_zone_is_converted_to_utc() -> None:
    plus = timezone(timedelta(hours=5, minutes=30))
    t = EdmDateTime(2020, 1, 1, 5, 30, 0, 7, tzinfo=plus, nanosecond=200)
    assert t.to_wire() == "2020-01-01T00:00:00.0000072Z"
    assert t.tzinfo is UTC


class _Later(EdmDateTime):
    """A user's subclass."""


def test_from_datetime_keeps_the_seventh_digit_of_a_subclass() -> None:
    sub = _Later(2020, 1, 1, 0, 0, 0, 5, nanosecond=300)
    t = EdmDateTime.from_datetime(sub)
    assert type(t) is EdmDateTime
    assert t.nanosecond == 300
    assert t.to_wire() == "2020-01-01T00:00:00.0000053Z"
    back = _Later.from_datetime(t)
    assert type(back) is _Later
    assert back.to_wire() == t.to_wire()
    same = EdmDateTime(2020, 1, 1, nanosecond=100)
    assert EdmDateTime.from_datetime(same) is same


def test_from_datetime_of_an_aware_datetime() -> None:
    cet = timezone(timedelta(hours=1))
    assert EdmDateTime.from_datetime(datetime(2020, 1, 1, 1, tzinfo=cet)).to_wire() == (
        "2020-01-01T00:00:00.0000000Z"
    )
    utc = EdmDateTime.from_datetime(datetime(2020, 1, 1, 0, 0, 0, 8, tzinfo=UTC))
    assert (utc.microsecond, utc.nanosecond) == (8, 0)
    with pytest.raises(ValidationError, match="outside the range"):
        EdmDateTime.from_datetime(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))))


@pytest.mark.parametrize(
    "value",
    [
        datetime(2020, 1, 1, 0, 0, 0, 8, tzinfo=UTC),
        datetime(2020, 1, 1, 0, 0, 0, 8, tzinfo=UTC, fold=1),
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2024, 2, 29, 12, 30, 45, 123456, tzinfo=UTC),
    ],
)
def test_from_datetime_of_a_utc_datetime_as_make_builds_it(value: datetime) -> None:
    # the fast case (a plain datetime in UTC, read as its packed state) against _make's
    # field by field copy, for the subclass too
    for cls in (EdmDateTime, _Later):
        fast = cls.from_datetime(value)
        slow = cls._make(value, 0)
        assert type(fast) is cls
        assert (fast, fast._hns, fast.fold, fast.tzinfo) == (slow, 0, 0, UTC)
        assert fast.to_wire() == slow.to_wire()


class _FoldZone(tzinfo):
    """A zone whose offset says which side of a repeated hour ``fold`` picks."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=-1 if dt is not None and dt.fold else -2)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return "fold"


def test_fold_picks_the_first_or_second_of_a_repeated_hour() -> None:
    assert EdmDateTime(2020, 1, 1, 1, 30, tzinfo=_FoldZone()).to_wire() == (
        "2020-01-01T03:30:00.0000000Z"
    )
    assert EdmDateTime(2020, 1, 1, 1, 30, tzinfo=_FoldZone(), fold=1).to_wire() == (
        "2020-01-01T02:30:00.0000000Z"
    )


def test_year_month_and_day_are_required() -> None:
    with pytest.raises(TypeError, match=r"EdmDateTime\(\) needs year, month and day"):
        EdmDateTime(2020)
    with pytest.raises(TypeError, match="needs year, month and day"):
        EdmDateTime(2020, 1)


@pytest.mark.parametrize(
    ("text", "wire"),
    [
        ("2008-07-10", "2008-07-10T00:00:00.0000000Z"),
        ("2008-07-10T10:20Z", "2008-07-10T10:20:00.0000000Z"),
        ("2008-07-10T10:20:30", "2008-07-10T10:20:30.0000000Z"),
        ("2020-01-01T01:00:00.1234567+01:00", "2020-01-01T00:00:00.1234567Z"),
        ("2020-01-01T00:00:00.9999999-00:30", "2020-01-01T00:30:00.9999999Z"),
        ("2020-01-01 00:00:00.12z", "2020-01-01T00:00:00.1200000Z"),
    ],
)
def test_the_general_forms_parse(text: str, wire: str) -> None:
    assert EdmDateTime.parse(text).to_wire() == wire


def test_ticks_at_both_ends_of_the_range() -> None:
    last = EdmDateTime(9999, 12, 31, 23, 59, 59, 999999, nanosecond=900)
    assert EdmDateTime.from_ticks(last.ticks) == last
    assert EdmDateTime.from_ticks(0).to_wire() == "0001-01-01T00:00:00.0000000Z"
    for bad in (last.ticks + 1, -1):
        with pytest.raises(ValidationError, match=r"outside 0001-01-01 \.\. 9999-12-31"):
            EdmDateTime.from_ticks(bad)


class _Span:
    """Something that knows how to be added to or subtracted from a datetime."""

    def __radd__(self, other: object) -> tuple[str, type]:
        return ("radd", type(other))

    def __rsub__(self, other: object) -> tuple[str, type]:
        return ("rsub", type(other))


def test_arithmetic_with_other_types_defers_to_them() -> None:
    t = EdmDateTime(2020, 1, 1, nanosecond=100)
    assert t + _Span() == ("radd", EdmDateTime)
    assert t - _Span() == ("rsub", EdmDateTime)
    with pytest.raises(TypeError):
        t + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        t - 1  # type: ignore[operator]


def test_adding_past_the_end_overflows() -> None:
    last = EdmDateTime(9999, 12, 31, nanosecond=100)
    with pytest.raises(OverflowError, match="date value out of range"):
        last + timedelta(days=1)
    assert (last + timedelta(hours=1)).nanosecond == 100


@pytest.mark.parametrize(
    ("micro", "nano", "expected"),
    [
        (5, 500, 6),  # 5.5 us -> 6 (half to even)
        (4, 500, 4),  # 4.5 us -> 4
        (3, 500, 4),  # 3.5 us -> 4
        (3, 600, 4),
        (3, 400, 3),
        (5, 0, 5),
    ],
)
def test_subtracting_a_plain_datetime_rounds_half_to_even(
    micro: int, nano: int, expected: int
) -> None:
    t = EdmDateTime(2020, 1, 1, 0, 0, 0, micro, nanosecond=nano)
    plain = datetime(2020, 1, 1, tzinfo=UTC)
    assert t - plain == timedelta(microseconds=expected)
    assert t - EdmDateTime(2020, 1, 1) == timedelta(microseconds=expected)
