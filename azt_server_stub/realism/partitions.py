"""Range partitions and the per-request scan budget: partial and empty query pages.

The service serves a table from range partitions (contiguous PartitionKey ranges) and
cuts a query page at a range's end or after five seconds (PROTOCOL.md 7.6);
:class:`RangeLayout` models both deterministically, :class:`PartitionLayout` configures
it per table, and :func:`query` is the handlers' query adapter (it also reports the
page's cost to the throttle).

Example::

    >>> from azt_server_stub.backend import Backend, WriteOp
    >>> b = Backend(); _ = b.create_table("a", "Tbl")
    >>> for pk in ["a", "b", "c", "d"]:
    ...     _ = b.write("a", "Tbl", WriteOp("insert", pk, "1"))
    >>> page = RangeLayout(boundaries=("bb",)).page(b, "a", "Tbl", None, None, None)
    >>> [e.pk for e in page.entities], page.next_key
    (['a', 'b'], ('bb', ''))
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from aiohttp import web

from ..backend import Backend, EntityFilter, QueryPage
from .throttle_middleware import admit_query_partition, record_query


def utf16_key(text: str) -> bytes:
    """The sort key the service orders strings by: UTF-16 code units (PROTOCOL.md 7.5).

    Example::

        >>> sorted(["\\U00010000", "\\ufffd"], key=utf16_key) == ["\\U00010000", "\\ufffd"]
        True
    """
    return text.encode("utf-16-be", "surrogatepass")


class QueryOptions(TypedDict):
    """Keyword arguments for ``Backend.query_entities`` (``scan_budget``, ``boundaries``).

    Example::

        >>> options: QueryOptions = {"scan_budget": 10, "boundaries": ("m",)}
    """

    scan_budget: int | None
    boundaries: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class RangeLayout:
    """The range partitions and scan budget of one table.

    ``boundaries`` are kept sorted (UTF-16 order) and without duplicates; the empty string
    is not a boundary (every table starts there). ``scan_budget`` must be at least 1 (or
    ``None``: no budget). ``partition_pages`` makes every PartitionKey a range partition of
    its own, so a page never holds two PartitionKeys (PROTOCOL.md 7.6's "break at every
    PartitionKey change").

    How a page is cut:

    * ``boundaries``: sorted PartitionKey values where range partitions start. Range
      partition ``i`` holds the keys ``boundaries[i-1] <= PartitionKey < boundaries[i]``. A
      page never crosses a boundary above the PartitionKey it started at; when its scan
      reaches that boundary it stops, and the continuation points at the **boundary itself**
      (``NextPartitionKey`` = the boundary, empty ``NextRowKey``: the start of the next range
      partition), not at the next existing entity. That is the service's documented
      behaviour: a server knows its own range only, and "a continuation token pointing to the
      next range partition will be returned" (seed 000, "Queries" / empty range
      partitions). So every empty range partition a query crosses costs it one empty page.
    * ``scan_budget``: the most entities one page may examine (matching or not), standing in
      for the five-second rule. A page that used its budget stops with the next entity to
      examine as the continuation.
    * ``partition_pages``: a page never holds two PartitionKeys (a test knob, PROTOCOL.md
      7.6); the page ends at the first entity of the next PartitionKey (its keys are the
      continuation). The first PartitionKey of a page is the first one its scan meets, so a
      scan from the table's start (or from a filter's lower bound that no entity has) does
      not begin with an empty page.

    So a page may be short or empty and still carry continuation headers; every page makes
    progress (it examined an entity or moved past a boundary), and following the tokens
    returns every match exactly once, in order. :meth:`RangeLayout.page` cuts one page
    (with :meth:`azt_server_stub.backend.Backend.query_entities`'s ``boundaries=`` and
    ``scan_budget=``).

    Example::

        >>> layout = RangeLayout(boundaries=("m", "f", "m"), scan_budget=50)
        >>> layout.boundaries, layout.partition_of("g"), layout.next_boundary("g")
        (('f', 'm'), 1, 'm')
    """

    boundaries: tuple[str, ...] = ()
    scan_budget: int | None = None
    partition_pages: bool = False
    _keys: tuple[bytes, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bounds = tuple(self.boundaries)
        for b in bounds:
            if not isinstance(b, str):
                raise TypeError(f"a range boundary is a PartitionKey string, got {b!r}")
        cleaned = tuple(sorted({b for b in bounds if b}, key=utf16_key))
        object.__setattr__(self, "boundaries", cleaned)
        object.__setattr__(self, "_keys", tuple(utf16_key(b) for b in cleaned))
        budget = self.scan_budget
        if budget is not None and (
            not isinstance(budget, int) or isinstance(budget, bool) or budget < 1
        ):
            raise ValueError(f"scan_budget must be an int >= 1 or None, got {budget!r}")

    @property
    def trivial(self) -> bool:
        """True when the layout never cuts a page (no boundaries, no budget).

        Example::

            >>> RangeLayout().trivial, RangeLayout(("",)).trivial  # "" is no boundary
            (True, True)
            >>> RangeLayout(scan_budget=10).trivial, RangeLayout(partition_pages=True).trivial
            (False, False)
        """
        return not self.boundaries and self.scan_budget is None and not self.partition_pages

    def partition_of(self, partition_key: str) -> int:
        """The index of the range partition that holds ``partition_key`` (``boundaries``
        only; with ``partition_pages`` every PartitionKey is moreover a range of its own).

        Example::

            >>> RangeLayout(("f", "m")).partition_of("m")
            2
        """
        return bisect.bisect_right(self._keys, utf16_key(partition_key))

    def next_boundary(self, partition_key: str) -> str | None:
        """The first boundary above ``partition_key``: where a page started there stops.

        With ``partition_pages`` that is the next PartitionKey value itself
        (``partition_key + "\\x00"``, the smallest string above it).

        Example::

            >>> RangeLayout(("m",), partition_pages=True).next_boundary("k")
            'k\\x00'
        """
        if self.partition_pages:
            return partition_key + "\x00"  # at or below any boundary above partition_key
        index = self.partition_of(partition_key)
        return self.boundaries[index] if index < len(self.boundaries) else None

    def query_options(self, start_partition: str | None = None) -> QueryOptions:
        """The keyword arguments to pass to ``Backend.query_entities`` for a page whose scan
        starts in ``start_partition`` (needed by ``partition_pages``; None: the table start).

        Example::

            >>> RangeLayout(("b",), 3).query_options()
            {'scan_budget': 3, 'boundaries': ('b',)}
        """
        bounds = self.boundaries
        if self.partition_pages:
            bounds = (*bounds, (start_partition or "") + "\x00")
        return {"scan_budget": self.scan_budget, "boundaries": bounds or None}

    def real_boundary_above(self, partition_key: str) -> str | None:
        """The first of ``boundaries`` above ``partition_key`` (``partition_pages`` aside).

        Example::

            >>> RangeLayout(("f", "m"), partition_pages=True).real_boundary_above("f")
            'm'
        """
        index = self.partition_of(partition_key)
        return self.boundaries[index] if index < len(self.boundaries) else None

    def page(
        self,
        backend: Backend,
        account: str,
        table: str,
        flt: EntityFilter | None,
        top: int | None,
        start: tuple[str, str] | None,
        restrict: Callable[[str, str], bool] | None = None,
    ) -> QueryPage:
        """One Query Entities page cut by this layout (see :class:`RangeLayout`).

        ``start`` is the continuation (None: the first page, which starts where the
        filter's first key range does).

        Example::

            >>> from azt_server_stub.backend import Backend, WriteOp
            >>> b = Backend(); _ = b.create_table("a", "Pages")
            >>> for i, pk in enumerate(["x", "x", "y"]):
            ...     _ = b.write("a", "Pages", WriteOp("insert", pk, str(i)))
            >>> lay = RangeLayout(partition_pages=True)
            >>> [e.pk for e in lay.page(b, "a", "Pages", None, None, None).entities]
            ['x', 'x']
        """
        if self.trivial:
            return backend.query_entities(account, table, flt, top, start, restrict)
        start_pk = start_partition(flt, start) or ""
        page = backend.query_entities(
            account, table, flt, top, start, restrict, **self.query_options(start_pk)
        )
        real_stop = self.real_boundary_above(start_pk)
        stop_key = None if real_stop is None else utf16_key(real_stop)
        if (
            self.partition_pages
            and page.next_key is not None
            and page.scanned == 0
            and (stop_key is None or utf16_key(page.next_key[0]) < stop_key)
        ):
            # Nothing at start_pk itself: the page's PartitionKey is the first one the scan
            # meets, i.e. the next key's (same range partition, so same real boundary).
            start = page.next_key
            page = backend.query_entities(
                account, table, flt, top, start, restrict, **self.query_options(start[0])
            )
        nxt = page.next_key
        if stop_key is not None and nxt is not None and utf16_key(nxt[0]) >= stop_key:
            assert real_stop is not None
            page = QueryPage(page.entities, (real_stop, ""), page.scanned)
        return page

    @classmethod
    def every(cls, keys: Iterable[str], n: int, *, scan_budget: int | None = None) -> RangeLayout:
        """A boundary at every ``n``-th distinct PartitionKey of ``keys`` (n >= 1).

        Example::

            >>> RangeLayout.every(["p3", "p1", "p2", "p4", "p2"], 2).boundaries
            ('p3',)
        """
        if n < 1:
            raise ValueError("n must be >= 1")
        distinct = sorted(set(keys), key=utf16_key)
        return cls(boundaries=tuple(distinct[n::n]), scan_budget=scan_budget)


class PartitionLayout:
    """Range layouts for a whole stub: a default and per-table overrides; thread-safe.

    Table names are compared case-insensitively (as the service names tables). The layout
    can change while the stub runs (tests switch it between requests).

    Example::

        >>> layout = PartitionLayout(RangeLayout(scan_budget=100))
        >>> layout.set_table("Orders", RangeLayout(boundaries=("2024",)))
        >>> layout.for_table("ORDERS").boundaries, layout.for_table("other").scan_budget
        (('2024',), 100)
    """

    def __init__(
        self,
        default: RangeLayout | None = None,
        tables: Mapping[str, RangeLayout] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._default = default or RangeLayout()
        self._tables = {name.lower(): lay for name, lay in (tables or {}).items()}

    @property
    def default(self) -> RangeLayout:
        """The layout of tables without their own.

        Example::

            >>> PartitionLayout().default
            RangeLayout(boundaries=(), scan_budget=None, partition_pages=False)
            >>> PartitionLayout(RangeLayout(scan_budget=5)).default.scan_budget
            5
        """
        return self._default

    def set_default(self, layout: RangeLayout) -> None:
        """Replace the default layout (tables with their own layout keep it).

        Example::

            >>> layout = PartitionLayout(tables={"Orders": RangeLayout(("m",))})
            >>> layout.set_default(RangeLayout(scan_budget=7))
            >>> layout.for_table("other").scan_budget, layout.for_table("orders").scan_budget
            (7, None)
        """
        with self._lock:
            self._default = layout

    def set_table(self, table: str, layout: RangeLayout | None) -> None:
        """Give ``table`` its own layout (``None``: back to the default).

        Example::

            >>> layout = PartitionLayout(RangeLayout(scan_budget=7))
            >>> layout.set_table("Orders", RangeLayout(("m",))); layout.for_table("ORDERS")
            RangeLayout(boundaries=('m',), scan_budget=None, partition_pages=False)
            >>> layout.set_table("orders", None); layout.for_table("Orders").scan_budget
            7
        """
        with self._lock:
            if layout is None:
                self._tables.pop(table.lower(), None)
            else:
                self._tables[table.lower()] = layout

    def for_table(self, table: str) -> RangeLayout:
        """The layout that applies to ``table``.

        Example::

            >>> PartitionLayout().for_table("any").trivial
            True
        """
        with self._lock:
            return self._tables.get(table.lower(), self._default)


PARTITIONS_KEY = web.AppKey("azt.partitions", PartitionLayout)
"""Where :func:`install` keeps the layout: ``app[PARTITIONS_KEY]`` (read by :func:`query`)."""


def query(
    request: web.Request,
    backend: Backend,
    account: str,
    table: str,
    flt: EntityFilter | None,
    top: int | None,
    start: tuple[str, str] | None,
    restrict: Callable[[str, str], bool] | None = None,
    start_rank: int | None = None,
) -> QueryPage:
    """One Query Entities page under the application's partition layout (if any);
    ``start_rank``: the continuation's creation rank in Cosmos order (see
    ``Backend.query_entities``; range partitions do not apply there).

    The handler calls this instead of ``backend.query_entities``. With a throttle, the
    page is refused (``503``) when the partition its scan starts in is over its rate
    (:func:`~azt_server_stub.realism.throttle_middleware.admit_query_partition`), and its
    cost is recorded (:func:`~azt_server_stub.realism.throttle_middleware.record_query`).

    Example::

        page = partitions.query(call.request, call.backend, call.account, table, flt, top,
                                start, principal.key_filter)
    """
    start_pk = start_partition(flt, start)
    admit_query_partition(request, account, table, start_pk)
    layout = request.app.get(PARTITIONS_KEY)
    if layout is None or start_rank is not None:
        page = backend.query_entities(
            account, table, flt, top, start, restrict, start_rank=start_rank
        )
    else:
        page = layout.for_table(table).page(backend, account, table, flt, top, start, restrict)
    record_query(request, page.entities, page.scanned, start_pk)
    return page


def start_partition(flt: EntityFilter | None, start: tuple[str, str] | None) -> str | None:
    """The PartitionKey a page's scan starts in: the continuation's, else the lowest of the
    filter's key ranges (None: the table's start).

    Example::

        >>> start_partition(None, ("p1", "r")), start_partition(None, None)
        ('p1', None)
    """
    if start is not None:
        return start[0]
    if flt is None or not flt.ranges:
        return None
    return min((lo[0] for lo, _ in flt.ranges), key=utf16_key) or None


def install(app: web.Application, layout: PartitionLayout | None) -> PartitionLayout | None:
    """Store ``layout`` on ``app`` (``app[PARTITIONS_KEY]``) for :func:`query`. None: no-op.

    Example::

        layout = install(app, PartitionLayout(RangeLayout(boundaries=("m",), scan_budget=10)))
    """
    if layout is None:
        return None
    app[PARTITIONS_KEY] = layout
    return layout
