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
from typing import Any

from azt._orm.columns import Prop, prop  # noqa: F401  (doc examples)
from azt._orm.entity import Entity
from azt._orm.expr import And, Comparison, Condition
from azt._orm.indexes import (
    RESERVED,
    Holds,
    Index,  # noqa: F401  (doc examples)
    IndexDef,
    declared_indexes,
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


def _best(defs: Sequence[IndexDef], eqs: dict[str, Any]) -> tuple[IndexDef | None, int]:
    """The index whose leading parts ``eqs`` pins most (``None`` when none is pinned)."""
    best, best_n = None, 0
    for d in defs:
        n = 0
        for a in d.attrs_:
            if a not in eqs:
                break
            n += 1
        if n > best_n:
            best, best_n = d, n
    return best, best_n


def index_plan(target: Any, cond: Condition | None) -> QueryPlan | None:
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
    row_key_cond = False
    for c in _conjuncts(cond):
        if not isinstance(c, Comparison):
            continue
        attr = c.prop.attr
        if c.prop.wire == "RowKey":
            row_key_cond = True  # about main rows' keys: no index in the partition fits
            continue
        if c.op != "eq":
            continue
        if c.prop.wire == "PartitionKey":
            pk = pk if pk is not None else c.value
        elif attr not in eqs and c.prop.converter is None:
            eqs[attr] = c.value
    best: IndexDef | None = None
    if pk is not None and not row_key_cond:
        best, best_n = _best([d for d in defs if not d.across], eqs)
    if best is None:
        best, best_n = _best([d for d in defs if d.across], eqs)
        if best is None:
            return None
        pk = best.partition_for(eqs[best.attrs_[0]])  # the index's own partition
    assert pk is not None
    low = best.lookup_prefix([eqs[a] for a in best.attrs_[:best_n]])
    high = low[:-1] + chr(ord(low[-1]) + 1)
    bounds = And.of(Entity.PartitionKey == pk, Entity.RowKey >= low, Entity.RowKey < high)
    if best.holds is Holds.ENTITY:  # never across partitions
        sent = And.of(bounds, *[c for c in _conjuncts(cond) if not _is_pk_eq(c)])
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
        holds=best.holds.value,
        lookup=lookup,
        across=best.across,
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
