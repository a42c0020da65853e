"""Where a table's entities live: in memory, or read through from the durable store (private).

The backend keeps each table's entities behind :class:`TableRows`, keyed by the sort
key of :func:`~azt_server_stub.query_pages.sort_key` (UTF-16 code-unit order).
:class:`MemoryRows` holds them in a ``SortedDict`` (the in-memory stub);
:class:`StoredRows` reads them from the SQLite store on demand (``--location``), so
start-up reads nothing but table metadata and memory does not grow with the data.
Both scan only the asked key ranges: O(log n + k).

Example::

    >>> from azt_server_stub.model import Entity
    >>> rows = MemoryRows()
    >>> rows.apply(("p", "r"), Entity("p", "r", 1))
    >>> [key for key, _ in rows.scan([(("p", ""), None)], ("", ""), 10)]
    [('p', 'r')]
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol

from sortedcontainers import SortedDict

from ._store import SqliteStore
from .model import Entity
from .query_pages import (
    EntityFilter,
    Key,
    KeyRange,
    QueryPage,
    cosmos_order,
    scan_ranges,
    sort_key,
    sort_str,
)

__all__ = ["MemoryRows", "StoredRows", "TableRows", "unordered_page"]

#: Most rows one read of a stored scan fetches (the first read fetches what the page needs).
_MAX_CHUNK = 4096


class TableRows(Protocol):
    """A table's entities by sort key.

    Example::

        >>> rows: TableRows = MemoryRows()
        >>> rows.get(("p", "r")) is None
        True
    """

    def get(self, key: Key) -> Entity | None:
        """The entity at a sort key, or None.

        Example::

            >>> MemoryRows().get(("p", "r")) is None
            True
        """
        ...

    def get_partition_rows(self, pk: str, rks: Sequence[str]) -> dict[Key, Entity]:
        """The entities at the sort keys ``(pk, rk)`` for ``rk`` in ``rks`` (sort strings),
        by sort key; keys without an entity are left out (a change set's reads, at once).

        Example::

            >>> MemoryRows().get_partition_rows("p", ["a", "b"])
            {}
        """
        ...

    def scan(
        self, ranges: Sequence[tuple[Key, Key | None]], start: Key, hint: int
    ) -> Iterator[tuple[Key, Entity]]:
        """Entities inside the sorted, disjoint ``ranges`` at or after ``start``, in order;
        ``hint``: how many the caller expects to read (a stored scan's first read size).

        Example::

            >>> list(MemoryRows().scan([(("", ""), None)], ("", ""), 1000))
            []
        """
        ...

    def take(
        self, ranges: Sequence[tuple[Key, Key | None]], start: Key, count: int
    ) -> list[Entity]:
        """The first ``count`` entities of :meth:`scan` (fewer when the ranges hold fewer).

        Example::

            >>> MemoryRows().take([(("", ""), None)], ("", ""), 2)
            []
        """
        ...

    def by_creation(self, start: tuple[int, Key], hint: int) -> Iterator[tuple[Key, Entity]]:
        """Every entity at or after the position ``start`` in Cosmos order
        (:func:`~azt_server_stub.query_pages.cosmos_order`: creation rank, then sort key),
        in that order, with its sort key; ``hint`` as for :meth:`scan`. O(log n) to start,
        then O(1) a row (an in-memory table kept without its creation order sorts instead).

        Example::

            >>> list(MemoryRows(True).by_creation((0, ("", "")), 10))
            []
        """
        ...

    def apply(self, key: Key, entity: Entity | None) -> None:
        """Record a committed change (None: deleted) for the readers that follow.

        Example::

            >>> MemoryRows().apply(("p", "r"), None)
        """
        ...

    def apply_all(self, changes: Iterable[tuple[Key, Key, Entity | None]]) -> None:
        """:meth:`apply` each ``(sort key, (PartitionKey, RowKey), entity or None)`` in
        order (a change set's changes, once all of them passed).

        Example::

            >>> MemoryRows().apply_all([(("p", "r"), ("p", "r"), None)])
        """
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A block in which every read sees one committed state (a whole page).

        Example::

            >>> with MemoryRows().snapshot():
            ...     pass
        """
        ...


class MemoryRows:
    """The entities of an in-memory table, in a ``SortedDict`` by sort key; with
    ``by_creation`` (the Cosmos flavour) also in a second one by Cosmos position
    (:func:`~azt_server_stub.query_pages.cosmos_order`), kept by every write, so a query
    page in creation order costs O(page + log n).

    Example::

        >>> MemoryRows().get(("a", "b")) is None
        True
    """

    __slots__ = ("_created", "_rows")

    def __init__(self, by_creation: bool = False) -> None:
        self._rows: SortedDict[Key, Entity] = SortedDict()
        self._created: SortedDict[tuple[int, Key], Entity] | None = (
            SortedDict() if by_creation else None
        )

    def get(self, key: Key) -> Entity | None:
        """A dict lookup.

        Example::

            >>> MemoryRows().get(("a", "b")) is None
            True
        """
        return self._rows.get(key)

    def get_partition_rows(self, pk: str, rks: Sequence[str]) -> dict[Key, Entity]:
        """Dict lookups.

        Example::

            >>> rows = MemoryRows(); rows.apply(("p", "a"), Entity("p", "a", 1))
            >>> list(rows.get_partition_rows("p", ["a", "b"]))
            [('p', 'a')]
        """
        rows = self._rows
        if len(rks) > 1 and rows:
            # No row from the least to the greatest key asked (a change set into a new
            # partition, or appending to one): nothing to look up, one bisection.
            lo, hi = min(rks), max(rks)
            if next(rows.irange((pk, lo), (pk, hi)), None) is None:
                return {}
        get = rows.get
        found: dict[Key, Entity] = {}
        for rk in rks:
            entity = get((pk, rk))
            if entity is not None:
                found[(pk, rk)] = entity
        return found

    def scan(
        self, ranges: Sequence[tuple[Key, Key | None]], start: Key, hint: int
    ) -> Iterator[tuple[Key, Entity]]:
        """Walk the sorted keys of each range (``hint`` is not needed in memory).

        Example::

            >>> list(MemoryRows().scan([(("a", ""), (("b", "")))], ("a", ""), 5))
            []
        """
        return scan_ranges(self._rows, ranges, start)

    def take(
        self, ranges: Sequence[tuple[Key, Key | None]], start: Key, count: int
    ) -> list[Entity]:
        """Each range's positions found by bisection and its entities taken by one slice of
        the sorted keys (no step per entity in Python).

        Example::

            >>> rows = MemoryRows()
            >>> for rk in "abc":
            ...     rows.apply(("p", rk), Entity("p", rk, 1))
            >>> [e.rk for e in rows.take([(("p", ""), ("q", ""))], ("p", "b"), 5)]
            ['b', 'c']
        """
        rows = self._rows
        keys = rows.keys()
        found: list[Entity] = []
        for lo, hi in ranges:
            if hi is not None and hi <= start:
                continue
            if lo < start:
                lo = start
            i = rows.bisect_left(lo)
            j = len(rows) if hi is None else rows.bisect_left(hi)
            j = min(j, i + count - len(found))
            if i < j:
                found += map(rows.__getitem__, keys[i:j])
                if len(found) >= count:
                    break
        return found

    def apply(self, key: Key, entity: Entity | None) -> None:
        """Store or remove the entity.

        Example::

            >>> rows = MemoryRows(); rows.apply(("a", "b"), Entity("a", "b", 1))
            >>> rows.get(("a", "b")).timestamp
            1
        """
        if self._created is not None:
            self._apply_both(key, entity)
        elif entity is None:
            self._rows.pop(key, None)
        else:
            self._rows[key] = entity

    def _apply_both(self, key: Key, entity: Entity | None) -> None:
        """A change applied to both orders (a replace keeps its rank: one dict write)."""
        rows, created = self._rows, self._created
        assert created is not None
        old = rows.pop(key, None) if entity is None else rows.get(key)
        if old is not None and (entity is None or old.created != entity.created):
            del created[(old.created, key)]
        if entity is not None:
            rows[key] = entity
            created[(entity.created, key)] = entity

    def by_creation(self, start: tuple[int, Key], hint: int) -> Iterator[tuple[Key, Entity]]:
        """Walk the creation order from ``start`` (``hint`` is not needed in memory).

        Example::

            >>> rows = MemoryRows(True)
            >>> for rank, rk in enumerate("ba"):
            ...     rows.apply(("p", rk), Entity("p", rk, 1, {}, rank))
            >>> [key for key, _ in rows.by_creation((0, ("", "")), 10)]
            [('p', 'b'), ('p', 'a')]
        """
        created = self._created
        if created is None:  # a table kept in key order only: sort it
            order = sorted((e.created, k) for k, e in self._rows.items())
            rows = self._rows
            for i in range(bisect.bisect_left(order, start), len(order)):
                key = order[i][1]
                yield key, rows[key]
            return
        for position in created.irange(minimum=start):
            yield position[1], created[position]

    def apply_all(self, changes: Iterable[tuple[Key, Key, Entity | None]]) -> None:
        """:meth:`apply` of each change, in one loop.

        Example::

            >>> rows = MemoryRows(); rows.apply_all([(("a", "b"), ("a", "b"), Entity("a", "b", 1))])
            >>> rows.get(("a", "b")).timestamp
            1
        """
        if self._created is not None:
            for key, _, entity in changes:
                self._apply_both(key, entity)
            return
        rows = self._rows
        for key, _, entity in changes:
            if entity is None:
                rows.pop(key, None)
            else:
                rows[key] = entity

    def snapshot(self) -> AbstractContextManager[None]:
        """Nothing to do: the backend's lock already keeps memory still during a page.

        Example::

            >>> with MemoryRows().snapshot():
            ...     pass
        """
        return nullcontext()


class StoredRows:
    """The entities of a durable table, read through from the SQLite store.

    Changes are committed to the store before :meth:`apply` (which then has nothing
    left to do); reads see the last committed state.

    Example::

        >>> import tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     store = SqliteStore(Path(folder))
        ...     store.create_table("acct", "t", "T")
        ...     store.write_entity_groups([("acct", "t", [Entity("p", "r", 5)], [])], 5)
        ...     found = StoredRows(store, "acct", "t").get(("p", "r"))
        ...     store.close()
        >>> found.timestamp
        5
    """

    __slots__ = ("_account", "_lname", "_store")

    def __init__(self, store: SqliteStore, account: str, lname: str) -> None:
        self._store = store
        self._account = account
        self._lname = lname

    def get(self, key: Key) -> Entity | None:
        """One indexed point read."""
        return self._store.get(self._account, self._lname, key[0], key[1])

    def get_partition_rows(self, pk: str, rks: Sequence[str]) -> dict[Key, Entity]:
        """One indexed read of the partition's asked rows."""
        rows = self._store.get_rows(self._account, self._lname, pk, rks)
        return {sort_key(entity.pk, entity.rk): entity for entity in rows}

    def scan(
        self, ranges: Sequence[tuple[Key, Key | None]], start: Key, hint: int
    ) -> Iterator[tuple[Key, Entity]]:
        """Indexed range reads, ``hint`` rows first, then growing chunks until the caller
        stops (call inside :meth:`snapshot` for one consistent state).
        """
        store, account, lname = self._store, self._account, self._lname
        chunk = max(1, min(hint, _MAX_CHUNK))
        last_pk: str | None = None
        sort_pk = ""
        for lo, hi in ranges:
            if hi is not None and hi <= start:
                continue
            if lo < start:
                lo = start
            after = False
            while True:
                entities = store.scan(account, lname, lo, hi, chunk, after=after)
                for entity in entities:
                    if entity.pk != last_pk:  # (a run of rows: one key object, or equal ones)
                        last_pk, sort_pk = entity.pk, sort_str(entity.pk)
                    yield (sort_pk, sort_str(entity.rk)), entity
                if len(entities) < chunk:
                    break
                last = entities[-1]
                lo, after = (last.pk, last.rk), True
                chunk = min(chunk * 2, _MAX_CHUNK)

    def take(
        self, ranges: Sequence[tuple[Key, Key | None]], start: Key, count: int
    ) -> list[Entity]:
        """The first ``count`` entities of :meth:`scan`: one indexed read of each range, of
        the rows still wanted (a read that returns fewer has exhausted its range), without
        the sort keys :meth:`scan` pairs each entity with (a page needs only entities)."""
        store, account, lname = self._store, self._account, self._lname
        found: list[Entity] = []
        for lo, hi in ranges:
            if hi is not None and hi <= start:
                continue
            if lo < start:
                lo = start
            found += store.scan(account, lname, lo, hi, count - len(found))
            if len(found) >= count:
                break
        return found

    def by_creation(self, start: tuple[int, Key], hint: int) -> Iterator[tuple[Key, Entity]]:
        """Reads of the store's creation-order index, ``hint`` rows first, then growing
        chunks until the caller stops (call inside :meth:`snapshot`)."""
        store, account, lname = self._store, self._account, self._lname
        chunk = max(1, min(hint, _MAX_CHUNK))
        at = (start[0], *start[1])
        after = False
        last_pk: str | None = None
        sort_pk = ""
        while True:
            entities = store.scan_created(account, lname, at, chunk, after=after)
            for entity in entities:
                if entity.pk != last_pk:  # (a run of rows: one key object, or equal ones)
                    last_pk, sort_pk = entity.pk, sort_str(entity.pk)
                yield (sort_pk, sort_str(entity.rk)), entity
            if len(entities) < chunk:
                return
            last = entities[-1]
            at, after = (last.created, last.pk, last.rk), True
            chunk = min(chunk * 2, _MAX_CHUNK)

    def apply(self, key: Key, entity: Entity | None) -> None:
        """Nothing to do: the change is already committed to the store."""

    def apply_all(self, changes: Iterable[tuple[Key, Key, Entity | None]]) -> None:
        """Nothing to do: the changes are already committed to the store."""

    def snapshot(self) -> AbstractContextManager[None]:
        """One read transaction of the store."""
        return self._store.snapshot()


def read_ahead(
    wanted: Sequence[tuple[int, TableRows, Key]],
) -> dict[tuple[int, Key], Entity | None]:
    """The entities at the keys of ``(table id, rows, sort key)`` triples, by (table id,
    key), ``None`` where there is none: one :meth:`TableRows.get_partition_rows` for each
    table's partition asked for two or more times, nothing for the others (left out: the
    caller reads those keys on its own). A write group's inserts read this way at once.

    Example::

        >>> rows = MemoryRows(); rows.apply(("p", "a"), Entity("p", "a", 1))
        >>> read_ahead([(1, rows, ("p", "a")), (1, rows, ("p", "b")), (1, rows, ("q", "c"))])
        {(1, ('p', 'a')): Entity(pk='p', rk='a', timestamp=1, props={}), (1, ('p', 'b')): None}
    """
    asked: dict[tuple[int, str], tuple[TableRows, list[str]]] = {}
    for tid, rows, (pk, rk) in wanted:
        asked.setdefault((tid, pk), (rows, []))[1].append(rk)
    found: dict[tuple[int, Key], Entity | None] = {}
    for (tid, pk), (rows, rks) in asked.items():
        if len(rks) > 1:
            stored = rows.get_partition_rows(pk, rks)
            found.update(((tid, (pk, rk)), stored.get((pk, rk))) for rk in rks)
    return found


def unordered_page(
    rows: TableRows,
    ranges: Sequence[KeyRange],
    flt: EntityFilter | None,
    limit: int,
    start_after: tuple[str, str] | None,
    restrict: Callable[[str, str], bool] | None,
    scan_budget: int | None,
    start_rank: int | None = None,
) -> QueryPage:
    """One page of a query in Cosmos order (see ``Backend.query_entities``): the rows of
    ``ranges`` ordered by :func:`~azt_server_stub.query_pages.cosmos_order`, the page cut
    at the continuation (``start_after`` with ``start_rank``; without a rank, the rank of
    the entity ``start_after`` names, or 0 when there is none) by ``limit``,
    ``restrict``, ``flt`` and ``scan_budget``.

    Example::

        >>> rows = MemoryRows()
        >>> for rank, rk in enumerate("dcba"):
        ...     rows.apply(("p", rk), Entity("p", rk, 1, {}, rank))
        >>> page = unordered_page(rows, [(("", ""), None)], None, 2, None, None, None)
        >>> [e.rk for e in page.entities], page.next_key, page.next_rank
        (['d', 'c'], ('p', 'b'), 2)
    """
    start: tuple[int, Key] = (0, ("", ""))
    if start_after is not None:
        if start_rank is None:
            named = rows.get(sort_key(*start_after))
            start_rank = named.created if named is not None else 0
        start = cosmos_order(start_rank, *start_after)
    # Walk the creation order from the continuation, skipping the rows outside the
    # ranges: O(page + log n) when the ranges hold most of the table. Narrow ranges
    # would have the walk skip most rows: past a skip allowance the page is cut from
    # the ranges' rows sorted instead (the same page, at the cost of their count).
    los = [lo for lo, _ in ranges]
    everything = len(ranges) == 1 and ranges[0] == (("", ""), None)
    allowance = _SKIP_ALLOWANCE + 8 * limit
    skipped = 0
    matches = None if flt is None else flt.matches
    found: list[Entity] = []
    scanned = 0
    for key, entity in rows.by_creation(start, limit + 1):
        if not everything:
            i = bisect.bisect_right(los, key) - 1
            hi = ranges[i][1] if i >= 0 else None
            if i < 0 or (hi is not None and key >= hi):
                skipped += 1
                if skipped > allowance:
                    return sorted_page(rows, ranges, flt, limit, start, restrict, scan_budget)
                continue
        if scanned == scan_budget or len(found) >= limit:
            return QueryPage(found, entity.key, scanned, entity.created)
        scanned += 1
        if restrict is not None and not restrict(entity.pk, entity.rk):
            continue
        if matches is None or matches(entity):
            found.append(entity)
    return QueryPage(found, None, scanned)


#: Rows outside a query's ranges a page in creation order skips (beside 8 a row of the
#: page) before it sorts the ranges' rows instead.
_SKIP_ALLOWANCE = 256


def sorted_page(
    rows: TableRows,
    ranges: Sequence[KeyRange],
    flt: EntityFilter | None,
    limit: int,
    start: tuple[int, Key],
    restrict: Callable[[str, str], bool] | None,
    scan_budget: int | None,
) -> QueryPage:
    """:func:`unordered_page` from the Cosmos position ``start`` by sorting every row of
    ``ranges``: O(m log m) for the m rows in the ranges (narrow ranges of a large table,
    where walking the whole table's creation order would skip most of its rows).

    Example::

        >>> rows = MemoryRows()
        >>> for rank, rk in enumerate("dcba"):
        ...     rows.apply(("p", rk), Entity("p", rk, 1, {}, rank))
        >>> page = sorted_page(rows, [(("p", "b"), None)], None, 5, (0, ("", "")), None, None)
        >>> [e.rk for e in page.entities]
        ['d', 'c', 'b']
    """
    order = [
        (cosmos_order(e.created, e.pk, e.rk), e) for _, e in rows.scan(ranges, ranges[0][0], 4096)
    ]
    order.sort(key=_position)
    at = bisect.bisect_left(order, start, key=_position)
    matches = None if flt is None else flt.matches
    found: list[Entity] = []
    scanned = 0
    for i in range(at, len(order)):
        entity = order[i][1]
        if scanned == scan_budget or len(found) >= limit:
            return QueryPage(found, entity.key, scanned, entity.created)
        scanned += 1
        if restrict is not None and not restrict(entity.pk, entity.rk):
            continue
        if matches is None or matches(entity):
            found.append(entity)
    return QueryPage(found, None, scanned)


def _position(item: tuple[tuple[int, Key], Entity]) -> tuple[int, Key]:
    return item[0]
