"""Key ranges planned up front: split a table's PartitionKey space into about ``n`` ranges
that each hold data, for readers that need their partitions before they start (Dask).

A parallel scan splits its ranges as it reads; a dask DataFrame needs them before any task
runs. The same two tools do it here: :func:`azt._orm.scan_ranges.between` gives a point
strictly between two keys (in the service's UTF-16 order), and a probe (``$top=1``,
``$select=PartitionKey``) finds the first PartitionKey at or after that point. The widest
range (by its keys' common prefix) is split at the key found, until there are ``n``
ranges or no range can be split (a range holding one partition is never split: one
partition is read by one reader).

Example::

    ranges = await plan_ranges(table, 4)   # [("", "g"), ("g", "n"), ("n", "t"), ("t", None)]
"""

from __future__ import annotations

from typing import Any

from azt._core.pagination import ContinuationToken
from azt._core.table_client import TableClient
from azt._errors import ValidationError
from azt._orm.planner import ordinal
from azt._orm.scan_parts import range_width
from azt._orm.scan_ranges import between, range_filter

__all__ = ["plan_ranges"]

#: probes one split may send (a point with no key after it is retried nearer the low end)
MAX_PROBES = 24


async def _first_key(
    table: TableClient, filter: str | None, low: str, high: str | None
) -> str | None:
    """The first PartitionKey in ``[low, high)`` matching ``filter`` (following empty pages)."""
    text = range_filter(filter, low, high)
    cont: ContinuationToken | None = None
    for _ in range(16):
        page = await table.query_entities(
            text, select=["PartitionKey"], results_per_page=1, continuation=cont
        ).first_page()
        if page.items:
            return str(page.items[0]["PartitionKey"])
        cont = page.continuation
        if cont is None:
            return None
    return None


async def _split(table: TableClient, filter: str | None, first: str, hi: str | None) -> str | None:
    """A PartitionKey strictly after ``first`` and before ``hi`` near the middle of the
    range, or None when the range holds only ``first``'s partition."""
    low = first
    high = hi
    for _ in range(MAX_PROBES):
        point = between(low, high)
        if point is None:
            break
        key = await _first_key(table, filter, point, hi)
        if key is not None and ordinal(key) > ordinal(first):
            return key
        high = point  # nothing at or after the point: look nearer the start
    # no point found between: is there any key after the first partition at all?
    nxt = first + "\x00"
    key = await _first_key(table, filter, nxt, hi)
    return key if key is not None and ordinal(key) > ordinal(first) else None


async def plan_ranges(
    table: TableClient, n: int, *, filter: str | None = None
) -> list[tuple[str, str | None]]:
    """About ``n`` PartitionKey ranges ``[lo, hi)`` covering the table in key order (the
    first starts at ``""``, the last ends at ``None``); fewer when the table has fewer
    partitions; ``[("", None)]`` for an empty table.

    Example::

        ranges = await plan_ranges(table, 8, filter="Rating ge 4")
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValidationError(f"the number of ranges must be an int >= 1, got {n!r}")
    # each range: (lo, hi, first key in it or None when unknown, splittable)
    first = await _first_key(table, filter, "", None)
    if first is None:
        return [("", None)]
    ranges: list[list[Any]] = [["", None, first, True]]
    while len(ranges) < n:
        candidates = [r for r in ranges if r[3]]
        if not candidates:
            break
        rng = min(candidates, key=lambda r: range_width(r[2], r[1]))
        key = await _split(table, filter, rng[2], rng[1])
        if key is None:
            rng[3] = False
            continue
        i = ranges.index(rng)
        ranges[i : i + 1] = [[rng[0], key, rng[2], True], [key, rng[1], key, True]]
    return [(r[0], r[1]) for r in ranges]
