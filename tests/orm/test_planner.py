"""The query planner's limits and bounds, each checked on both sides of its boundary: the
fan-out limit (an OR of at most 100 key-bounded branches runs as parallel sub-queries, one
more is a single query that ``check_comparisons`` refuses), the tighter of two bounds on a
key wins whichever comes first, and every plan kind renders its text (no server)."""

from __future__ import annotations

import pytest

from azt._errors import ValidationError
from azt._orm.planner import (
    MAX_FANOUT,
    KeyRange,
    QueryPlan,
    check_comparisons,
    make_plan,
    ordinal,
    plan_conjunction,
)
from azt.query import And, Condition, Or, PlanKind, Query

from .models import Movie

PK = Movie.PartitionKey
RK = Movie.RowKey


def _keys(n: int, prefix: str = "p") -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(n)]


# -- the fan-out limit ------------------------------------------------------------------------


def test_an_or_of_exactly_max_fanout_partitions_fans_out_and_passes() -> None:
    cond = PK.in_(_keys(MAX_FANOUT))
    plan = make_plan(cond)
    assert plan.kind is PlanKind.MULTI
    assert len(plan.subplans) == MAX_FANOUT
    assert {sp.kind for sp in plan.subplans} == {PlanKind.ROW_RANGE}
    check_comparisons(cond)  # 100 sub-queries of one comparison each


def test_one_branch_over_the_fanout_limit_is_one_query_and_refused() -> None:
    cond = PK.in_(_keys(MAX_FANOUT + 1))
    plan = make_plan(cond)
    assert plan.kind is PlanKind.FULL_SCAN
    assert plan.subplans == ()
    with pytest.raises(ValidationError, match=r"the filter has 101 comparisons; .* at most 100"):
        check_comparisons(cond)
    with pytest.raises(ValidationError, match="101 comparisons"):
        Query(Movie).where(cond)


@pytest.mark.parametrize(("limit", "multi"), [(2, False), (3, True), (4, True)])
def test_the_fanout_limit_is_inclusive(limit: int, multi: bool) -> None:
    cond = (PK == "a") | (PK == "b") | (PK == "c")
    plan = make_plan(cond, max_fanout=limit)
    assert (plan.kind is PlanKind.MULTI) is multi
    assert len(plan.subplans) == (3 if multi else 0)


def test_a_product_of_ins_at_the_limit_fans_out_into_points() -> None:
    cond = PK.in_(_keys(10)) & RK.in_(_keys(10, "r"))
    plan = make_plan(cond)
    assert plan.kind is PlanKind.MULTI
    assert len(plan.subplans) == 100
    assert {sp.kind for sp in plan.subplans} == {PlanKind.POINT}


def test_a_product_of_ins_over_the_limit_is_one_full_scan() -> None:
    cond = PK.in_(_keys(10)) & RK.in_(_keys(11, "r"))
    plan = make_plan(cond)
    assert plan.kind is PlanKind.FULL_SCAN
    assert plan.subplans == ()


def test_an_or_around_an_oversized_product_plans_a_full_scan() -> None:
    # (PK == 'x') | (11 x 11 key pairs): the product is over the limit, so the whole OR
    # is one query (a full scan), not a crash and not a fan-out
    cond = (PK == "x") | (PK.in_(_keys(11)) & RK.in_(_keys(11, "r")))
    plan = make_plan(cond)
    assert plan.kind is PlanKind.FULL_SCAN
    assert plan.filter == cond.to_odata()
    with pytest.raises(ValidationError, match="23 comparisons"):
        check_comparisons(cond)


def test_a_fanout_whose_branch_has_too_many_comparisons_is_refused() -> None:
    def branch(n: int) -> Condition:
        return And.of(PK == "b", *(Movie.rating != float(i) for i in range(n)))

    ok = (PK == "a") | branch(14)
    check_comparisons(ok)  # branches of 1 and 15 comparisons
    over = (PK == "a") | branch(15)
    with pytest.raises(ValidationError, match="runs as 2 sub-queries, one of which has 16"):
        check_comparisons(over)


def test_at_most_max_comparisons_needs_no_plan() -> None:
    check_comparisons(Movie.rating.in_([float(i) for i in range(15)]))
    check_comparisons(None)
    with pytest.raises(ValidationError, match="the filter has 16 comparisons"):
        check_comparisons(Movie.rating.in_([float(i) for i in range(16)]))


def test_a_branch_no_cheaper_than_the_whole_keeps_one_query() -> None:
    # one branch is a full scan: fanning out would not save anything
    cond = (PK == "a") | (Movie.rating > 3.0)
    assert make_plan(cond).kind is PlanKind.FULL_SCAN
    # branches equal to the whole (row ranges of one partition) are not split either
    same = (PK == "a") & ((RK == "x") | (Movie.rating > 3.0))
    assert make_plan(same).kind is PlanKind.ROW_RANGE


def test_duplicate_branches_are_sent_once_and_one_branch_is_no_multi() -> None:
    plan = make_plan((PK == "a") | (PK == "a"))
    assert plan.kind is PlanKind.ROW_RANGE
    assert plan.partition_key == "a"
    plan = make_plan((PK == "a") | (PK == "b") | (PK == "a"))
    assert [sp.partition_key for sp in plan.subplans] == ["a", "b"]


# -- the tighter bound wins, in either order ------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        (PK > "m", PK > "a", KeyRange("m", False, None, True)),
        (PK > "a", PK > "m", KeyRange("m", False, None, True)),
        (PK >= "m", PK > "m", KeyRange("m", False, None, True)),
        (PK > "m", PK >= "m", KeyRange("m", False, None, True)),
        (PK >= "m", PK >= "a", KeyRange("m", True, None, True)),
        (PK < "a", PK < "m", KeyRange(None, True, "a", False)),
        (PK < "m", PK < "a", KeyRange(None, True, "a", False)),
        (PK <= "a", PK < "a", KeyRange(None, True, "a", False)),
        (PK < "a", PK <= "a", KeyRange(None, True, "a", False)),
        (PK <= "a", PK <= "m", KeyRange(None, True, "a", True)),
        # the service's order (UTF-16 code units): U+10000 sorts before U+FFFF
        (PK > "\U00010000", PK > "\uffff", KeyRange("\uffff", False, None, True)),
        (PK > "\uffff", PK > "\U00010000", KeyRange("\uffff", False, None, True)),
        (PK < "\U00010000", PK < "\uffff", KeyRange(None, True, "\U00010000", False)),
        (PK < "\uffff", PK < "\U00010000", KeyRange(None, True, "\U00010000", False)),
    ],
)
def test_the_tighter_partition_bound_is_kept(
    first: object, second: object, expected: KeyRange
) -> None:
    plan = plan_conjunction(first & second)  # type: ignore[operator]
    assert plan.kind is PlanKind.PARTITION_RANGE
    assert plan.partition_range == expected


def test_row_bounds_are_kept_per_key() -> None:
    plan = plan_conjunction((PK == "p") & (RK >= "b") & (RK > "a") & (RK < "y") & (RK <= "z"))
    assert plan.kind is PlanKind.ROW_RANGE
    assert plan.row_range == KeyRange("b", True, "y", False)
    assert plan.partition_range is None


def test_non_key_comparisons_do_not_bound_keys() -> None:
    plan = plan_conjunction((Movie.rating > 3.0) & (Movie.release_year < 2000))
    assert plan.kind is PlanKind.FULL_SCAN


# -- every plan kind renders ------------------------------------------------------------------


def test_the_text_of_each_plan_kind() -> None:
    point = make_plan((PK == "a") & (RK == "b"))
    assert point.kind is PlanKind.POINT
    assert str(point) == (
        "point: PartitionKey='a', RowKey='b'; $filter=PartitionKey eq 'a' and RowKey eq 'b'"
    )
    assert str(Query(Movie).where(PK == "a", RK == "b").explain()) == str(point)
    rows = make_plan((PK == "a") & (RK >= "k"))
    assert str(rows) == "row range: PartitionKey='a', 'k' <= RowKey; $filter=" + (
        "PartitionKey eq 'a' and RowKey ge 'k'"
    )
    whole = make_plan(PK == "a")
    assert str(whole) == "row range: PartitionKey='a', all rows; $filter=PartitionKey eq 'a'"
    parts = make_plan(PK < "m")
    assert str(parts) == "partition range: PartitionKey < 'm'; $filter=PartitionKey lt 'm'"
    scan = make_plan(None)
    assert str(scan) == "full scan: no usable key bounds: every partition is read; no $filter"
    multi = make_plan((PK == "a") | (PK == "b"))
    assert str(multi).splitlines() == [
        "multi: 2 parallel sub-queries merged in key order; "
        "$filter=PartitionKey eq 'a' or PartitionKey eq 'b'",
        "  - row range: PartitionKey='a', all rows; $filter=PartitionKey eq 'a'",
        "  - row range: PartitionKey='b', all rows; $filter=PartitionKey eq 'b'",
    ]
    assert isinstance(make_plan((PK == "a") | (PK == "b")).condition, Or)


def test_the_text_of_an_index_plan() -> None:
    rows = KeyRange("ix-a", True, "ix-b", False)
    keys = QueryPlan(
        PlanKind.INDEX,
        "Color eq 'red'",
        partition_key="p",
        row_range=rows,
        index="by_color",
        holds="keys",
        lookup=Movie.rating > 1.0,
    )
    assert str(keys) == (
        "index: index 'by_color' (holds keys): PartitionKey='p', 'ix-a' <= RowKey < 'ix-b', "
        "then point reads of the main rows; $filter=Color eq 'red'"
    )
    copies = QueryPlan(
        PlanKind.INDEX,
        None,
        partition_key="ix",
        row_range=rows,
        index="by_size",
        holds="entity",
        across=True,
    )
    assert str(copies) == (
        "index: index 'by_size' (holds entity, across partitions): PartitionKey='ix', "
        "'ix-a' <= RowKey < 'ix-b', the rows read are the results; no $filter"
    )
    # what a plan is compared by: not the conditions it was made from
    other = QueryPlan(
        PlanKind.INDEX,
        "Color eq 'red'",
        partition_key="p",
        row_range=rows,
        index="by_color",
        holds="keys",
        lookup=Movie.rating < 0.0,
        condition=PK == "z",
    )
    assert other == keys
    assert (other.index, other.holds, other.across) == ("by_color", "keys", False)


def test_an_or_inside_one_partition_fans_out_into_cheaper_plans() -> None:
    # a point and a bounded row range beat the partition's unbounded row range
    plan = make_plan((PK == "a") & ((RK == "x") | (RK > "m")))
    assert plan.kind is PlanKind.MULTI
    assert [sp.kind for sp in plan.subplans] == [PlanKind.POINT, PlanKind.ROW_RANGE]
    # whole partitions beat a partition range
    plan = make_plan((PK >= "a") & ((PK == "b") | (PK == "c")))
    assert plan.kind is PlanKind.MULTI
    assert [sp.partition_key for sp in plan.subplans] == ["b", "c"]
    # an unbounded row range does not beat another
    plan = make_plan((PK == "a") & ((Movie.rating > 1.0) | (Movie.rating < 0.0)))
    assert plan.kind is PlanKind.ROW_RANGE


@pytest.mark.parametrize(
    ("text", "units"),
    [
        ("abc", "abc"),
        ("\uffff", "\uffff"),
        ("\U00010000", "\ud800\udc00"),
        ("\U0010ffff", "\udbff\udfff"),
        ("a\U0001f600b", "a\ud83d\ude00b"),
    ],
)
def test_ordinal_spells_astral_characters_as_their_surrogate_pairs(text: str, units: str) -> None:
    assert ordinal(text) == units
