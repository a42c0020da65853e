"""Query builder: compiled $filter text, refusals, immutability and plans (no server)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from azt._errors import ValidationError
from azt.edm import EdmDateTime
from azt.query import And, Or, PlanKind, Query, make_plan, prefix_upper_bound

from .models import AllTypes, Genre, Level, Movie


def f(*conds: Any) -> str | None:
    return Query(AllTypes).where(*conds).compile().filter


def test_seed_movie_query() -> None:
    q = Query(Movie).where((Movie.PartitionKey == "Action") & (Movie.rating > 4.0))
    assert q.compile().filter == "PartitionKey eq 'Action' and Rating gt 4.0"


@pytest.mark.parametrize(
    ("cond", "text"),
    [
        (AllTypes.s == "O'Brien", "s eq 'O''Brien'"),
        (AllTypes.s != "", "s ne ''"),
        (AllTypes.i32 < 5, "i32 lt 5"),
        (AllTypes.i32 <= -5, "i32 le -5"),
        (AllTypes.i64 > 5, "i64 gt 5L"),
        (AllTypes.i64 >= 2**40, "i64 ge 1099511627776L"),
        (AllTypes.d > 4, "d gt 4.0"),
        (AllTypes.d == 1e20, "d eq 1e+20"),
        (AllTypes.b == False, "b eq false"),  # noqa: E712
        (
            AllTypes.dt >= datetime(2008, 7, 10, tzinfo=UTC),
            "dt ge datetime'2008-07-10T00:00:00.0000000Z'",
        ),
        (
            AllTypes.dt < EdmDateTime.parse("2020-09-15T23:02:10.4363943Z"),
            "dt lt datetime'2020-09-15T23:02:10.4363943Z'",
        ),
        (
            AllTypes.g == uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
            "g eq guid'c9da6455-213d-42c9-9a79-3e9149a57833'",
        ),
        (AllTypes.bin == b"\x0a\x1b", "bin eq X'0a1b'"),
        (AllTypes.genre == Genre.COMEDY, "genre eq 'Comedy'"),
        (AllTypes.level > Level.LOW, "level gt 1"),
        (AllTypes.price == Decimal("1.5"), "price eq '1.5'"),
        (
            AllTypes.Timestamp >= datetime(2020, 1, 1, tzinfo=UTC),
            "Timestamp ge datetime'2020-01-01T00:00:00.0000000Z'",
        ),
    ],
)
def test_comparisons_on_every_type(cond: Any, text: str) -> None:
    assert f(cond) == text


def test_boolean_columns_combine() -> None:
    assert f((AllTypes.i32 > 4) & AllTypes.b) == "i32 gt 4 and b eq true"
    assert f(AllTypes.b & (AllTypes.i32 > 4)) == "b eq true and i32 gt 4"
    assert f(AllTypes.b) == "b eq true"
    assert f(~AllTypes.b) == "not (b eq true)"
    assert f(AllTypes.b | (AllTypes.i32 == 1)) == "b eq true or i32 eq 1"


def test_and_or_not_precedence() -> None:
    c = ((AllTypes.i32 == 1) | (AllTypes.i32 == 2)) & (AllTypes.s == "x")
    assert f(c) == "(i32 eq 1 or i32 eq 2) and s eq 'x'"
    c2 = ((AllTypes.i32 == 1) & (AllTypes.s == "a")) | (AllTypes.s == "b")
    assert f(c2) == "(i32 eq 1 and s eq 'a') or s eq 'b'"
    assert f(~((AllTypes.i32 == 1) | (AllTypes.i32 == 2))) == "not (i32 eq 1 or i32 eq 2)"
    assert f(~~(AllTypes.i32 == 1)) == "i32 eq 1"
    # flattening
    assert isinstance((AllTypes.i32 == 1) & (AllTypes.i32 == 2) & (AllTypes.i32 == 3), And)
    assert len(((AllTypes.i32 == 1) | (AllTypes.i32 == 2) | (AllTypes.i32 == 3)).items) == 3  # type: ignore[attr-defined]


def test_startswith_is_a_range() -> None:
    assert f(Movie.RowKey.startswith("Sh")) == "RowKey ge 'Sh' and RowKey lt 'Si'"
    assert f(AllTypes.s.startswith("Sports;")) == "s ge 'Sports;' and s lt 'Sports<'"
    assert f(AllTypes.s.startswith("")) == "s ge ''"
    # bounds are in the service's order (UTF-16 code units): ... U+D7FF, U+10000 ...
    # U+10FFFF, U+E000 ... U+FFFF; so these are the next characters, not code point + 1
    assert prefix_upper_bound("a\U0010ffff") == "a\ue000"
    assert prefix_upper_bound("\U0010ffff") == "\ue000"
    assert prefix_upper_bound("a\ud7ff") == "a\U00010000"
    assert prefix_upper_bound("a\uffff") == "b"
    assert prefix_upper_bound("a\uffff\uffff") == "b"
    assert prefix_upper_bound("\uffff") is None
    assert prefix_upper_bound("a\U0001f600\uffff") == "a\U0001f601"
    assert prefix_upper_bound("\U0001f600\U0010ffff\uffff") == "\U0001f600\ue000"
    # a key prefix may end in a character whose successor keys forbid ('.' -> '/'): fine
    assert f(AllTypes.RowKey.startswith("a.")) == "RowKey ge 'a.' and RowKey lt 'a/'"


def test_between_and_in() -> None:
    assert f(AllTypes.i32.between(1, 5)) == "i32 ge 1 and i32 le 5"
    assert f(AllTypes.PartitionKey.in_(["Action", "War"])) == (
        "PartitionKey eq 'Action' or PartitionKey eq 'War'"
    )
    assert f(AllTypes.s.in_(["a"])) == "s eq 'a'"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: AllTypes.i32 == AllTypes.i64, "cannot compare two properties"),  # type: ignore[operator]
        (lambda: AllTypes.opt == None, "null is not a \\$filter literal"),  # noqa: E711
        (lambda: AllTypes.i32 == "x", "expects int"),
        (lambda: AllTypes.i32 > 2**31, "outside the Edm.Int32 range"),
        (lambda: AllTypes.s == 5, "expects str"),
        (lambda: AllTypes.d > float("nan"), "NaN or infinity"),
        (lambda: AllTypes.d > float("inf"), "NaN or infinity"),
        (lambda: AllTypes.d > 10**400, "too big for an Edm.Double"),
        (lambda: AllTypes.s == "a\ud800", "lone surrogate"),
        (lambda: AllTypes.RowKey.startswith("\udc00"), "lone surrogate"),
        (lambda: AllTypes.dt > datetime(2020, 1, 1), "naive datetime"),
        (lambda: AllTypes.genre == "Action", "in a comparison: AllTypes.genre expects Genre"),
        (lambda: AllTypes.ETag == 'W/"x"', "ETag cannot be filtered"),  # type: ignore[comparison-overlap]
        (lambda: AllTypes.s.in_([]), "got no values"),
        (lambda: AllTypes.i32.startswith("1"), "only Edm.String"),  # type: ignore[misc]
        (lambda: AllTypes.i32 & (AllTypes.i32 == 1), "not a Boolean"),  # type: ignore[operator]
    ],
)
def test_refusals_say_why(make: Any, message: str) -> None:
    with pytest.raises((ValidationError, TypeError), match=message):
        make()


@pytest.mark.parametrize("name", ["Rating,ReleaseYear", "bad name", "", "odata.etag", "x" * 256])
def test_select_refuses_names_that_are_not_property_names(name: str) -> None:
    with pytest.raises(ValidationError, match="not a valid Table property name"):
        Query(Movie).select(name)
    with pytest.raises(TypeError, match="columns or names"):
        Query(Movie).select(5)  # type: ignore[arg-type]


def test_select_takes_names_and_columns() -> None:
    q = Query(Movie).select("Rating", Movie.release_year, "Rating", "ETag")
    assert q.compile().select == ("PartitionKey", "RowKey", "Timestamp", "Rating", "ReleaseYear")


def test_conditions_have_no_truth_value() -> None:
    cond = AllTypes.i32 > 4
    with pytest.raises(TypeError, match="no truth value"):
        bool(cond)
    with pytest.raises(TypeError, match="chained comparisons"):
        assert 1 < AllTypes.i32 < 5
    with pytest.raises(TypeError, match="got a bool"):
        Query(AllTypes).where(True)  # type: ignore[arg-type]


def test_too_many_comparisons_refused_before_sending() -> None:
    with pytest.raises(ValidationError, match="at most 15"):
        Query(AllTypes).where(AllTypes.i32.in_(range(16)))
    q = Query(AllTypes).where(AllTypes.i32.in_(range(15)))
    q._check_limit(q.condition)
    with pytest.raises(ValidationError, match="at most 15"):
        q._check_limit(Or.of(*(AllTypes.i32 == i for i in range(16))))


def test_queries_are_immutable() -> None:
    base = Query(Movie)
    q1 = base.where(Movie.PartitionKey == "A")
    q2 = q1.where(Movie.rating > 1.0).take(3).select(Movie.rating).page_size(10)
    assert base.compile().filter is None
    assert q1.compile().filter == "PartitionKey eq 'A'"
    assert q1.compile().top is None
    assert q1.compile().select is None
    c2 = q2.compile()
    assert c2.filter == "PartitionKey eq 'A' and Rating gt 1.0"
    assert c2.top == 3
    assert c2.select == ("PartitionKey", "RowKey", "Timestamp", "Rating")
    with pytest.raises(AttributeError, match="immutable"):
        base._limit = 3
    with pytest.raises(ValidationError):
        base.take(-1)
    with pytest.raises(ValidationError):
        base.page_size(1001)


# ------------------------------------------------------------------------------ plans


def kind(*conds: Any) -> PlanKind:
    return Query(Movie).where(*conds).explain().kind


def test_seed_query_classes() -> None:
    # the seed's numbered examples
    assert kind(Movie.PartitionKey == "SciFi", Movie.RowKey == "Star Wars") is PlanKind.POINT
    assert (
        kind(Movie.PartitionKey == "SciFi", Movie.RowKey >= "Sphere", Movie.RowKey <= "Star Wars")
        is PlanKind.ROW_RANGE
    )
    assert (
        kind(Movie.PartitionKey >= "Action", Movie.PartitionKey <= "Thriller")
        is PlanKind.PARTITION_RANGE
    )
    assert kind(Movie.RowKey >= "Cars", Movie.RowKey <= "Star Wars") is PlanKind.FULL_SCAN
    assert Query(Movie).explain().kind is PlanKind.FULL_SCAN
    assert kind(Movie.PartitionKey != "Action") is PlanKind.FULL_SCAN
    assert kind(Movie.favorite) is PlanKind.FULL_SCAN
    assert kind(Movie.PartitionKey == "Action") is PlanKind.ROW_RANGE
    assert kind(Movie.PartitionKey == "Action", Movie.favorite) is PlanKind.ROW_RANGE
    assert kind(Movie.PartitionKey.startswith("Reporting;")) is PlanKind.PARTITION_RANGE


def test_or_of_partitions_fans_out() -> None:
    plan = (
        Query(Movie)
        .where((Movie.PartitionKey == "Action") | (Movie.PartitionKey == "Thriller"))
        .explain()
    )
    assert plan.kind is PlanKind.MULTI
    assert [sp.filter for sp in plan.subplans] == [
        "PartitionKey eq 'Action'",
        "PartitionKey eq 'Thriller'",
    ]
    assert "2 parallel sub-queries" in str(plan)


def test_fan_out_distributes_and_over_or() -> None:
    plan = make_plan(
        And.of(
            Or.of(Movie.PartitionKey == "A", Movie.PartitionKey == "B"),
            Movie.rating > 4.0,
        )
    )
    assert plan.kind is PlanKind.MULTI
    assert [sp.filter for sp in plan.subplans] == [
        "PartitionKey eq 'A' and Rating gt 4.0",
        "PartitionKey eq 'B' and Rating gt 4.0",
    ]
    points = make_plan(
        (Movie.PartitionKey == "A") & ((Movie.RowKey == "x") | (Movie.RowKey == "y"))
    )
    assert [sp.kind for sp in points.subplans] == [PlanKind.POINT, PlanKind.POINT]


def test_no_fan_out_when_a_branch_scans() -> None:
    plan = make_plan((Movie.PartitionKey == "A") | (Movie.rating > 4.0))
    assert plan.kind is PlanKind.FULL_SCAN
    dup = make_plan(Movie.PartitionKey.in_(["A", "A"]))
    assert dup.kind is PlanKind.ROW_RANGE  # duplicates collapse to one branch


def test_plan_text_names_bounds() -> None:
    plan = (
        Query(Movie).where(Movie.PartitionKey == "SciFi", Movie.RowKey.startswith("Sh")).explain()
    )
    assert plan.kind is PlanKind.ROW_RANGE
    assert str(plan).startswith("row range: PartitionKey='SciFi', 'Sh' <= RowKey < 'Si'")
    pr = make_plan(Movie.PartitionKey > "A")
    assert "'A' < PartitionKey" in str(pr)


def test_merge_order_is_the_services_utf16_order() -> None:
    from azt._orm.planner import ordinal

    keys = ["a", "\ue000", "\uffff", "\U00010000", "\U0010ffff", "z", "\u00e9", ""]
    by_utf16 = sorted(keys, key=lambda s: s.encode("utf-16-be"))
    assert sorted(keys, key=ordinal) == by_utf16
    assert sorted(keys) != by_utf16  # code-point order differs above U+FFFF
