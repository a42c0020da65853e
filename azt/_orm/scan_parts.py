"""The pieces a parallel scan (:mod:`azt._orm.scan`) is made of: its statistics, the
signal its tasks wait on, the adaptive bound on requests in flight, one key range with its
reader's progress, a page read, and the key arithmetic of splitting.

Example::

    >>> stats = ScanStats()
    >>> limiter = _Limiter(2, 8, True, stats)
    >>> (limiter.limit, stats.concurrency)
    (2, 2)
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

import attrs

from azt._edm.entity import TableEntity
from azt._edm.types import format_literal
from azt._orm.planner import ordinal
from azt._orm.scan_ranges import RangeState, range_filter

_WINDOW = 0.5  # seconds between concurrency adjustments


@attrs.define
class ScanStats:
    """What a scan did so far: ``requests`` sent (pages and probes), ``probes`` among them,
    ``ranges`` read (1 plus one per split), ``peak_in_flight`` (most requests in flight at
    once), ``concurrency`` (the bound now), ``throttled`` (requests that still failed
    after the client's retries) and ``entities`` returned.

    Example::

        >>> ScanStats().ranges
        0
    """

    requests: int = 0
    probes: int = 0
    ranges: int = 0
    peak_in_flight: int = 0
    concurrency: int = 0
    throttled: int = 0
    entities: int = 0


class _Signal:
    """Wakes every waiter on :meth:`notify` (waiters re-check their condition)."""

    __slots__ = ("_waiters",)

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []

    def notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for f in waiters:
            if not f.done():
                f.set_result(None)

    async def wait(self) -> None:
        f: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(f)
        await f


class _Limiter:
    """The bound on requests in flight, adjusted as the scan goes."""

    def __init__(self, initial: int, maximum: int, auto: bool, stats: ScanStats) -> None:
        self.limit = initial
        self.maximum = maximum
        self.auto = auto
        self.in_flight = 0
        self.stats = stats
        self.signal = _Signal()
        self._window_start = time.monotonic()
        self._window_entities = 0
        self._last_rate = 0.0
        self._throttled_at = float("-inf")
        stats.concurrency = initial

    async def acquire(self) -> None:
        while self.in_flight >= self.limit:
            await self.signal.wait()
        self.in_flight += 1
        self.stats.requests += 1
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.in_flight)

    def release(self) -> None:
        self.in_flight -= 1
        self.signal.notify()

    def throttled(self) -> None:
        self.stats.throttled += 1
        self.limit = max(1, self.limit // 2)
        self._throttled_at = time.monotonic()
        self._set(self.limit)

    def count(self, entities: int) -> None:
        self._window_entities += entities
        now = time.monotonic()
        elapsed = now - self._window_start
        if elapsed < _WINDOW:
            return
        rate = self._window_entities / elapsed
        self._window_start, self._window_entities = now, 0
        if now - self._throttled_at < 2 * _WINDOW or self.limit >= self.maximum:
            self._last_rate = rate
            return
        if not self.auto:
            self._set(self.limit + 1)  # growing back after a throttled spell
        elif rate > self._last_rate * 1.05:
            self._set(min(self.maximum, self.limit + max(1, self.limit // 2)))
        self._last_rate = rate

    def _set(self, limit: int) -> None:
        self.limit = limit
        self.stats.concurrency = limit
        self.signal.notify()


class _Range:
    """One key range ``[lo, hi)`` and its reader's progress."""

    __slots__ = (
        "after",
        "cont",
        "done_reading",
        "filter",
        "hi",
        "lo",
        "no_split_at",
        "pages",
        "pos",
        "query_hi",
        "reading",
        "returned_after",
        "returned_cont",
        "returned_done",
        "splitting",
    )

    def __init__(self, state: RangeState, user_filter: str | None) -> None:
        self.lo = state.lo
        self.query_hi = state.query_hi
        self.hi = state.hi
        self.filter = range_filter(user_filter, state.lo, state.query_hi)
        self.cont = state.cont  # next page to fetch
        self.after = state.after  # drop results up to this key (a resumed page)
        self.pos: str | None = state.after[0] if state.after else None  # last PK read
        self.no_split_at: str | None = None
        self.done_reading = False
        self.reading = False
        self.splitting = False  # a split of its rest is under way
        self.pages: deque[_Event] = deque()  # read, not returned yet (ordered mode)
        # what the token says: where returning resumes
        self.returned_cont = state.cont
        self.returned_after = state.after
        self.returned_done = False

    def state(self) -> RangeState:
        return RangeState(self.lo, self.query_hi, self.hi, self.returned_cont, self.returned_after)


@attrs.frozen
class _Event:
    """A page read by a range's reader: its results, the continuation it was fetched with
    and the one after it, and whether the range is finished."""

    rng: _Range
    items: list[TableEntity]
    cont_at: str | None
    cont_next: str | None
    finished: bool


def _after_filter(pos: str, hi: str | None) -> str:
    """The ``$filter`` of the PartitionKeys after ``pos`` and before ``hi``.

    Example::

        >>> _after_filter("a", "c")
        "PartitionKey gt 'a' and PartitionKey lt 'c'"
    """
    text = f"PartitionKey gt {format_literal(pos)}"
    return text if hi is None else f"{text} and PartitionKey lt {format_literal(hi)}"


def range_width(pos: str, hi: str | None) -> tuple[int, int]:
    """Sort key of a key range or a range's unread rest ``(pos, hi)``, wider first: the
    shorter the two keys' common prefix, and the further apart their first differing
    UTF-16 units, the wider (``hi`` None: the end of the key space).

    Example::

        >>> sorted([("a", "b"), ("a", None), ("aa", "ab")], key=lambda r: range_width(*r))
        [('a', None), ('a', 'b'), ('aa', 'ab')]
    """
    a, b = ordinal(pos), ordinal(hi) if hi is not None else None
    n = 0
    if b is not None:
        while n < len(a) and n < len(b) and a[n] == b[n]:
            n += 1
    x = ord(a[n]) if n < len(a) else 0
    y = ord(b[n]) if b is not None and n < len(b) else 0x10000
    return (n, x - y)
