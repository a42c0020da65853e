"""Query pages and the key order they are cut in (PROTOCOL.md 7.5, 7.6).

Keys compare by UTF-16 code units (:func:`sort_key`); a filter narrows a scan to key
ranges (:class:`EntityFilter`); :func:`scan_ranges` walks a table's sorted rows through
them; :class:`QueryPage` and :class:`TablePage` are what a page returns. The Cosmos
flavour returns a query's entities in :func:`cosmos_order` instead: the Cosmos DB Table
API documents that its query results are not sorted by PartitionKey and RowKey, and its
recorded answers list rows in the order they were created.

Example::

    >>> sort_key("\U0001f600", "r") > sort_key("\uffff", "r")  # a surrogate pair sorts low
    False
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from sortedcontainers import SortedDict

from . import errors
from .model import Entity

__all__ = [
    "MAX_PAGE",
    "EntityFilter",
    "Key",
    "KeyRange",
    "QueryPage",
    "TablePage",
    "cosmos_order",
    "page_size",
    "range_lo",
    "scan_ranges",
    "sort_key",
    "sort_str",
]


Key = tuple[str, str]
"""An entity key ``(PartitionKey, RowKey)``."""


KeyRange = tuple[Key, Key | None]
"""A half-open range ``[lo, hi)`` over ``(PartitionKey, RowKey)``; ``hi is None``: unbounded."""


class EntityFilter(Protocol):
    """What the backend needs from a compiled ``$filter`` (``odata.compile_entity_filter``).

    ``ranges``: sorted, disjoint half-open key ranges that contain every match.
    ``matches``: the exact predicate, applied to every entity in the ranges.

    Example::

        >>> class Everything:
        ...     ranges = [(("", ""), None)]
        ...     def matches(self, entity: Entity) -> bool:
        ...         return True
    """

    @property
    def ranges(self) -> Sequence[KeyRange]:
        """The planner's key ranges.

        Example::

            >>> from azt_server_stub.odata import compile_entity_filter
            >>> compile_entity_filter("PartitionKey eq 'p' and RowKey ge 'r'").ranges
            [(('p', 'r'), ('p\\x00', ''))]
        """
        ...

    def matches(self, entity: Entity) -> bool:
        """Whether ``entity`` satisfies the filter.

        Example::

            >>> from azt_server_stub.model import Edm
            >>> from azt_server_stub.odata import compile_entity_filter
            >>> adults = compile_entity_filter("Age ge 18")
            >>> adults.matches(Entity("p", "r", 0, {"Age": (Edm.INT32, 30)}))
            True
            >>> adults.matches(Entity("p", "r", 0))  # no Age at all
            False
        """
        ...


@dataclass(slots=True)
class QueryPage:
    """One page of a query: entities in ordinal order and where the next page starts.

    ``next_key`` is the (NextPartitionKey, NextRowKey) of the next entity to
    examine, or None when the query is complete. ``scanned`` counts the entities
    the page examined (for tests of scan cost and for scan budgets). ``next_rank``: in
    :func:`cosmos_order`, the next entity's creation rank (with ``next_key``, where the
    next page starts even if that entity is deleted meanwhile); None in key order.

    Example::

        >>> QueryPage([]).next_key is None
        True
    """

    entities: list[Entity]
    next_key: tuple[str, str] | None = None
    scanned: int = 0
    next_rank: int | None = None


@dataclass(slots=True)
class TablePage:
    """One page of Query Tables: names as created, and NextTableName.

    Example::

        >>> TablePage(["a1b"]).next_name is None
        True
    """

    names: list[str]
    next_name: str | None = None


#: Most entities (or tables) in one page, and the default and maximum ``$top``.
MAX_PAGE = 1000


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _pair(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def sort_str(text: str) -> str:
    """``text`` rewritten so that code-point order equals UTF-16 code-unit order.

    Example::

        >>> sort_str("abc")
        'abc'
    """
    if text.isascii() or _ASTRAL.search(text) is None:
        return text
    return _ASTRAL.sub(_pair, text)


def sort_key(pk: str, rk: str) -> Key:
    """The sort key of an entity key: both parts in UTF-16 code-unit order.

    Example::

        >>> sort_key("p", "r")
        ('p', 'r')
    """
    return (sort_str(pk), sort_str(rk))


def cosmos_order(created: int, pk: str, rk: str) -> tuple[int, Key]:
    """Where an entity comes in a query's results on the Cosmos flavour: by its creation
    rank (``Entity.created``), then by its key (a tie only among rows of stores written
    before ranks were kept). That is the order the recorded Cosmos DB Table API lists a
    table's rows in (``docs/cosmos.md``, REC 5 and REC 9): partitions interleave as their
    rows were created and rows of one partition are not in RowKey order, yet the order is
    total, so a continuation (the next entity's rank and key) resumes a query exactly
    where it stopped, even if that entity is deleted meanwhile.

    Example::

        >>> rows = [(3, "p", "a"), (1, "q", "z"), (2, "p", "b")]
        >>> [rk for _, _, rk in sorted(rows, key=lambda row: cosmos_order(*row))]
        ['z', 'b', 'a']
    """
    return (created, sort_key(pk, rk))


def range_lo(item: tuple[Key, Key | None]) -> Key:
    """The lower bound of a key range (a sort key for ranges).

    Example::

        >>> range_lo((("a", ""), None))
        ('a', '')
    """
    return item[0]


def page_size(top: int | None) -> int:
    """The entities a page may return: ``$top`` capped at :data:`MAX_PAGE` (400 below 1).

    Example::

        >>> page_size(None), page_size(5), page_size(5000)
        (1000, 5, 1000)
    """
    if top is None:
        return MAX_PAGE
    if top < 1:
        raise errors.out_of_range_query_parameter_value()
    return min(top, MAX_PAGE)


def scan_ranges(
    rows: SortedDict[Key, Entity], ranges: Sequence[tuple[Key, Key | None]], start: Key
) -> Iterator[tuple[Key, Entity]]:
    """Entities of ``rows`` inside ``ranges`` at or after ``start``, in order.

    Example::

        >>> from sortedcontainers import SortedDict
        >>> rows = SortedDict({("p", "1"): "e1", ("p", "2"): "e2", ("q", "1"): "e3"})
        >>> [k for k, _ in scan_ranges(rows, [(("p", ""), ("q", ""))], ("p", "2"))]
        [('p', '2')]
    """
    for lo, hi in ranges:
        if hi is not None and hi <= start:
            continue
        if lo < start:
            lo = start
        for key in rows.irange(lo, hi, inclusive=(True, False)):
            yield key, rows[key]
