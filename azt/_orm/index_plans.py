"""Queries through secondary indexes: choosing an index for a filter (:func:`index_plan`),
keeping index rows out of main-row scans (:func:`main_rows_condition`), and reading an
index's pages (:func:`index_pages`): copy-holding rows are the results, key-only rows
lead to bounded parallel point reads of the main rows, returned in index order.

Example::

    >>> class Note(Entity):
    ...     topic: Prop[str] = prop(default="")
    ...     class Meta:
    ...         indexes = (Index("by_topic", "topic"),)
    >>> plan = index_plan(Note, (Note.PartitionKey == "u1") & (Note.topic == "x"))
    >>> plan.index, plan.holds, plan.row_range.low
    ('by_topic', 'keys', '\\ufffdix;by_topic;x;')
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence
from datetime import datetime
from typing import Any

from azt._orm.columns import Prop, prop  # noqa: F401  (doc examples)
from azt._orm.entity import Entity
from azt._orm.expr import And, Comparison, Condition, prefix_upper_bound, utf16_successor
from azt._orm.indexes import (
    RESERVED,
    Holds,
    Index,  # noqa: F401  (doc examples)
    IndexDef,
    declared_indexes,
    encode_part,
    is_index_partition,
    main_keys,
    main_row_key,
)
from azt._orm.pages import (
    Decoding,
    QueryPage,
    QueryTable,
    fetch_page,
    page_out,
    page_top,
)
from azt._orm.planner import KeyRange, PlanKind, QueryPlan

__all__ = ["index_pages", "index_plan", "main_rows_condition"]


def _conjuncts(cond: Condition) -> list[Condition]:
    return list(cond.items) if isinstance(cond, And) else [cond]


def _best(
    defs: Sequence[IndexDef],
    eqs: dict[str, Any],
    ranges: dict[str, list[Comparison]],
    *,
    need_eq: bool = False,
) -> tuple[IndexDef | None, int, tuple[str, str | None] | None]:
    """The index whose leading parts ``eqs`` pins most, a usable range (or prefix) on the
    part after them counting half a part; ``None`` when none fits. Also the number of
    parts pinned and the encoded bounds of the range (:func:`part_bounds`), if any."""
    best: IndexDef | None = None
    best_n, best_score = 0, 0
    best_bounds: tuple[str, str | None] | None = None
    for d in defs:
        n = 0
        for a in d.attrs_:
            if a not in eqs:
                break
            n += 1
        bounds = None
        if n < len(d.attrs_) and d.encoders[n] is encode_part:
            bounds = part_bounds(ranges.get(d.attrs_[n], []))
        score = 2 * n + (bounds is not None)
        if need_eq and n == 0:
            continue
        if score > best_score:
            best, best_n, best_score, best_bounds = d, n, score, bounds
    return best, best_n, best_bounds


#: characters an index key part escapes as ``%XX`` (they sort as ``%`` there): the
#: intervals of code points, as azt._orm.indexes escapes them
_ESCAPED = (
    (0x00, 0x1F),
    (0x23, 0x23),
    (0x25, 0x25),
    (0x2F, 0x2F),
    (0x3B, 0x3B),
    (0x3F, 0x3F),
    (0x5C, 0x5C),
    (0x7F, 0x9F),
    (0xFFFD, 0xFFFD),
)


def _escapes_between(a: str, b: str) -> bool:
    lo, hi = ord(a), ord(b)
    return any(x <= hi and lo <= y for x, y in _ESCAPED)


def _common(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def part_bounds(comparisons: Sequence[Comparison]) -> tuple[str, str | None] | None:
    """Bounds ``(low, high)`` on an index part's encoded text (``low`` inclusive, ``high``
    exclusive or ``None``: the end of the parts pinned before it) that hold the key of
    every value ``comparisons`` (``gt``, ``ge``, ``lt``, ``le`` on the part's property)
    admit; ``None`` when they give no bound. The range may hold more rows than match
    (the query's condition is applied to what it reads), never fewer.

    Integers and datetimes encode to fixed-width digits: their bounds are their
    encodings. A string's encoding escapes some characters (they sort as ``%``) and a
    key part is followed by ``;``, so strings are bounded on the first character where
    the two bounds differ (past their common prefix), and only when no escaped character
    lies between the two: ``"A" <= name < "D"`` reads the parts from ``A`` up to ``D``.

    Example::

        >>> class Person(Entity):
        ...     last: Prop[str] = prop(default="")
        >>> part_bounds([Person.last >= "Ab", Person.last < "Ad"])  # "Ad" itself: filtered
        ('Ab', 'Ae')
        >>> part_bounds([Person.last >= "A"]) is None
        True
    """
    lows = [c.value for c in comparisons if c.op in ("gt", "ge")]
    highs = [c.value for c in comparisons if c.op in ("lt", "le")]
    values = lows + highs
    if not values:
        return None
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        kind: type = int
    elif all(isinstance(v, datetime) and v.tzinfo is not None for v in values):
        kind = datetime
    elif all(isinstance(v, str) for v in values):
        kind = str
    else:
        return None
    lo = max(lows) if lows else None
    hi = min(highs) if highs else None
    if kind is not str:
        low = encode_part(lo) if lo is not None else ""
        high = encode_part(hi) + "<" if hi is not None else None  # ";" < "<"
        return (low, high) if low or high is not None else None
    if hi is None:
        return None  # a string bounded below only: escaped values sort anywhere below
    lo = lo if lo is not None else ""
    common = _common(lo, hi)
    i = len(common)
    if i == len(hi):
        return None  # an empty range, or one value: left to the filter
    head = encode_part(common)
    a, b = (lo[i] if i < len(lo) else "\x00"), hi[i]
    if ord(a) >= 0xD800 or ord(b) >= 0xD800 or _escapes_between(a, b):
        # the values share ``common`` at least: the parts starting with its encoding
        return (head, prefix_upper_bound(head)) if head else None
    nxt = utf16_successor(max(b, ";"))  # a shorter part is followed by ";"
    low = head + a if i < len(lo) else head
    return low, (head + nxt) if nxt is not None else None


def _pinned(d: IndexDef, n: int, c: Condition, eqs: dict[str, Any]) -> bool:
    """Whether ``c`` is the ``==`` that pins one of the first ``n`` parts of ``d``: the
    RowKey range of the plan holds exactly the rows it admits."""
    return (
        isinstance(c, Comparison)
        and c.op == "eq"
        and c.prop.attr in d.attrs_[:n]
        and c.value == eqs.get(c.prop.attr)
    )


def _rows_suffice(
    d: IndexDef, n: int, eqs: dict[str, Any], cond: Condition, select: Sequence[str] | None
) -> bool:
    """Whether the rows of a ``Holds.PROPERTIES`` index answer the query alone: it selects
    only properties they hold (and the keys), and tests only those, the keys and the parts
    pinned by the RowKey range."""
    if select is None:
        return False
    held = set(d.held_wires)
    if not set(select) <= held | {"PartitionKey", "RowKey", "Timestamp"}:
        return False
    for c in _conjuncts(cond):
        if _pinned(d, n, c, eqs) or _is_pk_eq(c):
            continue
        if not isinstance(c, Comparison) or c.prop.wire not in held:
            return False
    return True


def index_plan(
    target: Any, cond: Condition | None, select: Sequence[str] | None = None
) -> QueryPlan | None:
    """The INDEX plan for ``cond`` over entity class ``target``, or ``None`` when no
    declared index fits. An index in the entity's partition fits a filter that pins one
    PartitionKey, compares no RowKey, and tests the first part(s) of the index with
    ``eq``; an index across partitions fits any filter that tests its first part(s) with
    ``eq`` (used when no index in the partition fits). The index matching most parts wins.

    Example::

        >>> index_plan(Movie, Movie.PartitionKey == "Action") is None
        True
    """
    defs = declared_indexes(target) if isinstance(target, type) else ()
    if not defs or cond is None:
        return None
    pk: str | None = None
    eqs: dict[str, Any] = {}
    ranges: dict[str, list[Comparison]] = {}
    row_key_cond = False
    for c in _conjuncts(cond):
        if not isinstance(c, Comparison):
            continue
        attr = c.prop.attr
        if c.prop.wire == "RowKey":
            row_key_cond = True  # about main rows' keys: no index in the partition fits
            continue
        if c.op in ("gt", "ge", "lt", "le") and c.prop.converter is None:
            ranges.setdefault(attr, []).append(c)
            continue
        if c.op != "eq":
            continue
        if c.prop.wire == "PartitionKey":
            pk = pk if pk is not None else c.value
        elif attr not in eqs and c.prop.converter is None:
            eqs[attr] = c.value
    best: IndexDef | None = None
    if pk is not None and not row_key_cond:
        best, best_n, part = _best([d for d in defs if not d.across], eqs, ranges)
    if best is None:
        best, best_n, part = _best([d for d in defs if d.across], eqs, ranges, need_eq=True)
        if best is None:
            return None
        pk = best.partition_for(eqs[best.attrs_[0]])  # the index's own partition
    assert pk is not None
    base = best.lookup_prefix([eqs[a] for a in best.attrs_[:best_n]])
    low, high = base, base[:-1] + chr(ord(base[-1]) + 1)
    ranged = None
    if part is not None:
        ranged = best.attrs_[best_n]
        low = base + part[0]
        if part[1] is not None:
            high = base + part[1]
    bounds = And.of(Entity.PartitionKey == pk, Entity.RowKey >= low, Entity.RowKey < high)
    holds = best.holds
    if holds is Holds.PROPERTIES and not _rows_suffice(best, best_n, eqs, cond, select):
        holds = Holds.KEYS  # the rows lead to the main rows
    if holds is Holds.ENTITY:  # never across partitions
        sent = And.of(bounds, *[c for c in _conjuncts(cond) if not _is_pk_eq(c)])
        lookup = None
    elif holds is Holds.PROPERTIES:  # the pinned parts are in the range, not the rows
        rest = [c for c in _conjuncts(cond) if not (_is_pk_eq(c) or _pinned(best, best_n, c, eqs))]
        sent = And.of(bounds, *rest)
        lookup = None
    else:
        sent, lookup = bounds, cond
    return QueryPlan(
        PlanKind.INDEX,
        sent.to_odata(),
        partition_key=pk,
        row_range=KeyRange(low, True, high, False),
        condition=sent,
        index=best.name,
        holds=holds.value,
        lookup=lookup,
        across=best.across,
        index_range=ranged,
    )


def _is_pk_eq(c: Condition) -> bool:
    return isinstance(c, Comparison) and c.prop.wire == "PartitionKey" and c.op == "eq"


def main_rows_condition(target: Any, cond: Condition | None) -> Condition | None:
    """``cond`` bounded to main rows (RowKey below the reserved range) for a class that
    declares indexes, so that its scans never read index rows; ``cond`` itself otherwise
    (other classes drop index rows as pages arrive) or when it pins one RowKey.

    Example::

        >>> main_rows_condition(Movie, None) is None
        True
    """
    if not (isinstance(target, type) and declared_indexes(target)):
        return cond
    if cond is not None and any(
        isinstance(c, Comparison) and c.prop.attr == "RowKey" and c.op == "eq"
        for c in _conjuncts(cond)
    ):
        return cond
    below = Entity.RowKey < RESERVED
    return below if cond is None else And.of(cond, below)


def _to_main(decode: Callable[[list[Any]], list[Any]]) -> Callable[[list[Any]], list[Any]]:
    """A page decoder of copy-holding index rows: each row is decoded as the main row it
    copies (its RowKey put back)."""

    def decode_copies(rows: list[Any]) -> list[Any]:
        for r in rows:
            r["RowKey"] = main_row_key(r["RowKey"])
        return decode(rows)

    return decode_copies


async def index_pages(
    table: QueryTable,
    plan: QueryPlan,
    select: Sequence[str] | None,
    page_size: int | None,
    limit: int | None,
    concurrency: int,
    state: dict[str, Any],
    decoding: Decoding,
    fingerprint: str,
) -> AsyncGenerator[QueryPage[Any], None]:
    """The pages of an INDEX plan, in index order, resuming from ``state``. Copy-holding
    rows are decoded as their main rows; key-only rows become point reads of the main
    rows (at most ``concurrency`` at once, each filtered by the query's whole condition),
    and a main row that no longer matches is left out (so a stale row of an index across
    partitions, left by an interrupted write, never yields a wrong entity).

    Example::

        async for page in index_pages(table, plan, None, 100, None, 8, state, dec, fp): ...
    """
    done = state["n"]
    cont: Any = state.get("c")
    keys_only = plan.holds == Holds.KEYS.value
    if keys_only:
        index_decoding = Decoding(_key_of, _keys_of, index_rows=True)
        index_select: Sequence[str] | None = ("PartitionKey", "RowKey")
    else:
        page = _to_main(decoding.page) if decoding.page is not None else None
        index_decoding = Decoding(_row_to_main(decoding.row), page, index_rows=True)
        index_select = select
    sem = asyncio.Semaphore(concurrency)
    lookup = plan.lookup

    async def point(pk: str, rk: str) -> list[Any]:
        assert lookup is not None
        cond = (
            And.of(lookup, Entity.PartitionKey == pk, Entity.RowKey == rk)
            if plan.across
            else And.of(lookup, Entity.RowKey == rk)
        )
        async with sem:
            items, _ = await fetch_page(table, cond.to_odata(), select, None, None, decoding)
        return items

    while True:
        top = page_top(page_size, limit, done)
        rows, cont = await fetch_page(table, plan.filter, index_select, top, cont, index_decoding)
        if keys_only:
            found = await asyncio.gather(*(point(pk, rk) for pk, rk in rows))
            items = [obj for got in found for obj in got]
        else:
            items = rows
        items, token, done = page_out(items, cont, limit, done, fingerprint)
        if items or token is None:
            yield QueryPage(items, token)
        if token is None:
            return


def _key_of(row: Any) -> tuple[str, str]:
    pk: str = row["PartitionKey"]
    if is_index_partition(pk):
        return main_keys(row["RowKey"])  # a row of an index across partitions
    return pk, main_row_key(row["RowKey"])


def _keys_of(rows: list[Any]) -> list[Any]:
    return [_key_of(r) for r in rows]


def _row_to_main(decode: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def decode_copy(row: Any) -> Any:
        row = dict(row) if not hasattr(row, "metadata") else row
        row["RowKey"] = main_row_key(row["RowKey"])
        return decode(row)

    return decode_copy
