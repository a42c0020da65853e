"""The query planner: a filter's key bounds and its class (point, row range, partition
range, full scan), or a fan-out of an ``or`` into key-bounded parallel sub-queries.

Plans follow the efficiency classes of the seed article "How to get most out of Windows
Azure Tables" (:class:`PlanKind`).

Example::

    >>> c = (Movie.PartitionKey == "Action") | (Movie.PartitionKey == "Thriller")
    >>> make_plan(c).kind
    <PlanKind.MULTI: 'multi'>
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, cast

import attrs

from azt._errors import ValidationError
from azt._orm.expr import And, Comparison, Condition, Or

__all__ = [
    "MAX_COMPARISONS",
    "MAX_FANOUT",
    "KeyRange",
    "PlanKind",
    "QueryPlan",
    "check_comparisons",
    "make_plan",
    "ordinal",
    "plan_conjunction",
]

#: at most this many parallel sub-queries for one ``or``
MAX_FANOUT = 100
#: comparisons per request (``$filter``) the service evaluates at most
MAX_COMPARISONS = 15


class FanOut(StrEnum):
    """How a MULTI plan's branches run, which depends on the service's result order.

    Example::

        >>> FanOut.MERGED.value
        'merged'
    """

    MERGED = "merged"  #: in parallel, merged in key order (Azure Table storage's order)
    BRANCHES = "branches"  #: one after another, each branch's rows in the service's order
    WHOLE = "whole"  #: overlapping branches sent as the one whole filter


class PlanKind(StrEnum):
    """Query classes of the seed article "How to get most out of Windows Azure Tables".

    Example::

        >>> PlanKind.POINT.value
        'point'
    """

    POINT = "point"  #: PartitionKey eq and RowKey eq: one entity, the cheapest query
    ROW_RANGE = "row range"  #: one partition, a range (or all) of its rows
    PARTITION_RANGE = "partition range"  #: a range of partitions
    FULL_SCAN = "full scan"  #: every partition is read
    MULTI = "multi"  #: an OR of key-bounded branches, run as parallel sub-queries
    INDEX = "index"  #: a row range of a secondary index (azt.indexes)


@attrs.frozen
class KeyRange:
    """Bounds on one key, as the planner derived them (``None`` = unbounded).

    Example::

        >>> KeyRange("A", True, "B", False).describe("PartitionKey")
        "'A' <= PartitionKey < 'B'"
    """

    low: str | None = None
    low_inclusive: bool = True
    high: str | None = None
    high_inclusive: bool = True

    @property
    def bounded(self) -> bool:
        """Whether either side is bounded.

        Example::

            >>> KeyRange().bounded, KeyRange(low="a").bounded
            (False, True)
        """
        return self.low is not None or self.high is not None

    def describe(self, name: str) -> str:
        """Human-readable form.

        Example::

            >>> KeyRange(high="B").describe("RowKey")
            "RowKey <= 'B'"
        """
        parts = []
        if self.low is not None:
            parts.append(f"{self.low!r} {'<=' if self.low_inclusive else '<'} ")
        parts.append(name)
        if self.high is not None:
            parts.append(f" {'<=' if self.high_inclusive else '<'} {self.high!r}")
        return "".join(parts)


@attrs.frozen
class QueryPlan:
    """How a query will run: its class, the filter(s) sent, the key bounds found.

    Example::

        >>> plan = Query(Movie).where(Movie.PartitionKey == "Action").explain()
        >>> plan.kind, plan.partition_key
        (<PlanKind.ROW_RANGE: 'row range'>, 'Action')
    """

    kind: PlanKind
    filter: str | None
    partition_key: str | None = None
    row_key: str | None = None
    partition_range: KeyRange | None = None
    row_range: KeyRange | None = None
    subplans: tuple[QueryPlan, ...] = ()
    condition: Condition | None = attrs.field(default=None, repr=False, eq=False)
    #: the secondary index an INDEX plan reads, and what its rows hold ("keys": the main
    #: rows are then point-read, with ``lookup`` as the filter besides their keys)
    index: str | None = None
    holds: str | None = None
    lookup: Condition | None = attrs.field(default=None, repr=False, eq=False)
    #: an INDEX plan over an index across partitions (its rows in partitions of its own)
    across: bool = False
    #: how a MULTI plan runs: merged in key order (Storage), or unmerged on Cosmos DB,
    #: whose results are not in key order (``Query.explain`` sets it from the client)
    fanout: FanOut = FanOut.MERGED
    #: the property of an INDEX plan's part bounded by a range or prefix (after the
    #: parts pinned with ``==``)
    index_range: str | None = None
    #: what the filter cannot see: rows of an older shape of an evolving class whose
    #: values are converted on read or defaulted (see azt.migrate)
    notes: tuple[str, ...] = attrs.field(default=(), eq=False)

    def __str__(self) -> str:
        lines = [self._line()]
        for sp in self.subplans:
            lines.append("  - " + sp._line())
        lines.extend("  note: " + n for n in self.notes)
        return "\n".join(lines)

    def _line(self) -> str:
        f = f"$filter={self.filter}" if self.filter else "no $filter"
        if self.kind is PlanKind.POINT:
            what = f"PartitionKey={self.partition_key!r}, RowKey={self.row_key!r}"
        elif self.kind is PlanKind.ROW_RANGE:
            rr = self.row_range
            rows = rr.describe("RowKey") if rr and rr.bounded else "all rows"
            what = f"PartitionKey={self.partition_key!r}, {rows}"
        elif self.kind is PlanKind.PARTITION_RANGE:
            assert self.partition_range is not None
            what = self.partition_range.describe("PartitionKey")
        elif self.kind is PlanKind.INDEX:
            assert self.row_range is not None
            then = (
                ", then point reads of the main rows"
                if self.holds == "keys"
                else ", the rows read are the results (a copy of the properties needed)"
                if self.holds == "properties"
                else ", the rows read are the results"
            )
            where = ", across partitions" if self.across else ""
            ranged = f", a range of {self.index_range}" if self.index_range else ""
            what = (
                f"index {self.index!r} (holds {self.holds}{where}{ranged}): PartitionKey="
                f"{self.partition_key!r}, {self.row_range.describe('RowKey')}{then}"
            )
        elif self.kind is PlanKind.MULTI:
            n = len(self.subplans)
            if self.fanout is FanOut.BRANCHES:
                what = (
                    f"{n} sub-queries run one after another, not merged: each branch's rows "
                    "in the service's order (Cosmos DB does not sort by key)"
                )
            elif self.fanout is FanOut.WHOLE:
                what = (
                    f"{n} overlapping branches sent as the one filter, rows in the service's "
                    "order (Cosmos DB does not sort by key)"
                )
            else:
                what = f"{n} parallel sub-queries merged in key order"
        else:
            what = "no usable key bounds: every partition is read"
        return f"{self.kind.value}: {what}; {f}"


def _key_bounds(conj: Sequence[Condition]) -> tuple[list[str], KeyRange, list[str], KeyRange]:
    pk_eq: list[str] = []
    rk_eq: list[str] = []
    bounds: dict[str, list[Any]] = {
        "PartitionKey": [None, True, None, True],
        "RowKey": [None, True, None, True],
    }
    for c in conj:
        if not isinstance(c, Comparison) or not c.prop.is_key:
            continue
        name = c.prop.wire
        v = c.value
        if c.op == "eq":
            (pk_eq if name == "PartitionKey" else rk_eq).append(v)
            continue
        b = bounds[name]
        # the tighter bound in the service's order (UTF-16 code units), not Python's
        if c.op in ("gt", "ge"):
            incl = c.op == "ge"
            if b[0] is None or ordinal(v) > ordinal(b[0]) or (v == b[0] and not incl):
                b[0], b[1] = v, incl
        elif c.op in ("lt", "le"):
            incl = c.op == "le"
            if b[2] is None or ordinal(v) < ordinal(b[2]) or (v == b[2] and not incl):
                b[2], b[3] = v, incl
    pb, rb = bounds["PartitionKey"], bounds["RowKey"]
    return pk_eq, KeyRange(*pb), rk_eq, KeyRange(*rb)


def _conjuncts(c: Condition | None) -> list[Condition]:
    if c is None:
        return []
    return list(c.items) if isinstance(c, And) else [c]


def plan_conjunction(cond: Condition | None) -> QueryPlan:
    """Classify one conjunction (the ``and`` of its parts) by its key bounds.

    Example::

        >>> plan_conjunction(Movie.PartitionKey >= "A").kind
        <PlanKind.PARTITION_RANGE: 'partition range'>
    """
    text = cond.to_odata() if cond is not None else None
    pk_eq, pr, rk_eq, rr = _key_bounds(_conjuncts(cond))
    if pk_eq:
        pk = pk_eq[0]
        if rk_eq:
            return QueryPlan(
                PlanKind.POINT, text, partition_key=pk, row_key=rk_eq[0], condition=cond
            )
        return QueryPlan(PlanKind.ROW_RANGE, text, partition_key=pk, row_range=rr, condition=cond)
    if pr.bounded:
        return QueryPlan(
            PlanKind.PARTITION_RANGE, text, partition_range=pr, row_range=rr, condition=cond
        )
    return QueryPlan(PlanKind.FULL_SCAN, text, condition=cond)


def _dnf(c: Condition, limit: int) -> list[list[Condition]] | None:
    """Disjunctive normal form as lists of conjuncts, or None when larger than ``limit``.
    ``Not`` is kept whole (pushing it inward would change missing-property semantics)."""
    if isinstance(c, Or):
        out: list[list[Condition]] = []
        for it in c.items:
            sub = _dnf(it, limit)
            if sub is None:
                return None
            out.extend(sub)
            if len(out) > limit:
                return None
        return out
    if isinstance(c, And):
        acc: list[list[Condition]] = [[]]
        for it in c.items:
            sub = _dnf(it, limit)
            if sub is None or len(acc) * len(sub) > limit:
                return None
            acc = [a + b for a in acc for b in sub]
        return acc
    return [[c]]


def _cost(plan: QueryPlan) -> int:
    """Rank of a single plan, cheapest first (for deciding on a fan-out)."""
    if plan.kind is PlanKind.POINT:
        return 0
    if plan.kind is PlanKind.ROW_RANGE:
        return 1 if plan.row_range is not None and plan.row_range.bounded else 2
    if plan.kind is PlanKind.PARTITION_RANGE:
        return 3
    return 4


def make_plan(cond: Condition | None, *, max_fanout: int = MAX_FANOUT) -> QueryPlan:
    """The plan for a filter: a single query, or MULTI when an ``or`` splits into branches
    that are each cheaper than the whole (each branch is sent as its own query): partitions
    instead of a table scan, points instead of a partition scan.

    Example::

        >>> c = (Movie.PartitionKey == "Action") | (Movie.PartitionKey == "Thriller")
        >>> make_plan(c).kind
        <PlanKind.MULTI: 'multi'>
    """
    whole = plan_conjunction(cond)
    if cond is None or whole.kind is PlanKind.POINT:
        return whole
    branches = _dnf(cond, max_fanout)
    if branches is None or len(branches) < 2:
        return whole
    limit = _cost(whole)
    subplans: list[QueryPlan] = []
    seen: set[str] = set()
    for conj in branches:
        sub = plan_conjunction(And.of(*conj))
        if _cost(sub) >= limit:
            return whole
        if sub.filter not in seen:
            seen.add(cast(str, sub.filter))
            subplans.append(sub)
    if len(subplans) == 1:
        return subplans[0]
    return QueryPlan(PlanKind.MULTI, whole.filter, subplans=tuple(subplans), condition=cond)


def check_comparisons(cond: Condition | None) -> None:
    """Refuse, with :class:`azt.ValidationError`, a filter that the service would refuse:
    one whose requests would carry more than :data:`MAX_COMPARISONS` comparisons. A larger
    ``or`` passes when it runs as a fan-out whose sub-queries are each within the limit.

    Example::

        >>> check_comparisons(Movie.PartitionKey.in_([f"G{i}" for i in range(20)]))  # fan-out
        >>> check_comparisons(Movie.rating.in_([float(i) for i in range(16)]))
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: the filter has 16 comparisons; ...
    """
    if cond is None:
        return
    n = cond.comparisons()
    if n <= MAX_COMPARISONS:
        return
    plan = make_plan(cond)
    if plan.kind is PlanKind.MULTI:
        worst = max(cast(Condition, sp.condition).comparisons() for sp in plan.subplans)
        if worst <= MAX_COMPARISONS:
            return
        raise ValidationError(
            f"the filter has {n} comparisons and runs as {len(plan.subplans)} sub-queries, "
            f"one of which has {worst}; the Table service evaluates at most "
            f"{MAX_COMPARISONS} per query (split it, or narrow it with keys)"
        )
    raise ValidationError(
        f"the filter has {n} comparisons; the Table service evaluates at most "
        f"{MAX_COMPARISONS} per query (split it, or narrow it with keys; an OR splits into "
        f"parallel sub-queries only when each branch is bounded by keys and there are at "
        f"most {MAX_FANOUT} branches)"
    )


def ordinal(s: str) -> str:
    """A string whose code-point order (Python's ``<``, ``sorted``) equals the service's
    order of ``s`` (UTF-16 code units): astral characters become their surrogate pairs.
    Compare keys through it wherever the service's order matters.

    Example::

        >>> "\\U00010000" > "\\uffff", ordinal("\\U00010000") > ordinal("\\uffff")
        (True, False)
    """
    if s.isascii() or max(s) <= "\uffff":
        return s
    out = []
    for ch in s:
        o = ord(ch)
        if o > 0xFFFF:
            o -= 0x10000
            out.append(chr(0xD800 + (o >> 10)) + chr(0xDC00 + (o & 0x3FF)))
        else:
            out.append(ch)
    return "".join(out)
