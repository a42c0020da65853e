"""Parallel scans: reading a whole table, or a PartitionKey range, with several requests in
flight, resumable from a token.

The service cannot list partitions, so the ranges are discovered from the data. One reader
starts on the whole range; each page it gets back tells where it is (its last
PartitionKey). While fewer readers run than the concurrency allows, the widest unread
remainder ``(position, end)`` of a range is split: a probe (``$top=1``, ``PartitionKey ge
X``) finds the first key at or after a point ``X`` between the two (binary search in the
service's UTF-16 key order, :func:`~azt._orm.scan_ranges.between`), and that key starts a
new range with its own reader. The old reader keeps its query (a continuation is only
valid for the filter it came with) and drops what it reads at or past the split point.
Ranges split at PartitionKey boundaries only: one partition is always read by one reader
(the service throttles per partition anyway).

Results come back per range in key order; ``ordered=True`` concatenates the ranges in key
order, ``ordered=False`` yields pages as they arrive.

An ordered scan can only hand out the head range (the first one not yet returned), and one
range is read one page after another: with few long ranges, the readers of later ranges
fill their buffers and wait while the head is read alone. So in ordered mode a reader
waiting on a full buffer does not hold a place of the concurrency; the splitter cuts the
first range from the head on that still has an unread rest (not the widest one), several
at once, first asking for the partition after the reader's (a rest of one partition is
never split, and costs one probe); and only the ranges nearest the head, as many as the
concurrency, may fill the buffers. The head's rest is cut into pieces read side by side.

Memory stays bounded whatever the consumer does (ordered): one range holds at most
``read_ahead // concurrency`` pages read and not returned, counting its page under way
(at most :data:`ORDERED_BUFFER_PAGES`, at least 1), and all ranges together at most
``read_ahead`` (default ``8 * concurrency + 2``, at most 130), plus one: the head may
always read its next page when it holds none, so the consumer never waits on the buffers
of later ranges. Unordered, at most ``read_ahead`` pages wait to be taken (default
``2 * concurrency + 2``), besides the requests in flight.

The token after any entity records, for every unfinished range, its bounds, its
service continuation and the last key returned, so a resumed scan reads no finished range
again and returns nothing twice.

Concurrency is a bound on requests in flight. Throttling (503, 429, 500 timeouts) is first
retried by the client's retry policy; a request that still fails halves the bound and is
sent again (up to a few times), and the bound grows back while the scan runs clean.
``"auto"`` starts at 2 and grows while the entity rate improves.

Example::

    scan = parallel_scan(table, concurrency=8)
    async for entity in scan:
        ...
    resume_from = scan.token
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any, Literal

import attrs

from azt._core.pagination import ContinuationToken
from azt._core.queries import format_filter
from azt._edm.entity import TableEntity
from azt._errors import (
    OperationTimedOutError,
    ServerBusyError,
    TooManyRequestsError,
    ValidationError,
)
from azt._orm.expr import prefix_upper_bound
from azt._orm.pages import MAX_PAGE, QueryTable
from azt._orm.planner import ordinal
from azt._orm.scan_parts import (
    ScanStats,
    _after_filter,
    _Event,
    _Limiter,
    _Range,
    _Signal,
    range_width,
)
from azt._orm.scan_ranges import (
    RangeState,
    ScanToken,
    between,
    decode_scan_token,
    encode_scan_token,
    range_filter,
    scan_fingerprint,
)

__all__ = ["ParallelScan", "ScanPage", "ScanStats", "parallel_scan"]

#: most requests in flight a scan may be given
MAX_CONCURRENCY = 256
#: where ``concurrency="auto"`` starts, and how far it may grow
AUTO_START, AUTO_MAX = 2, 64
#: ordered mode: pages one range may hold read and not returned (its request under way too)
ORDERED_BUFFER_PAGES = 8
#: probes one split attempt may send before giving up on that position
MAX_PROBES = 48
#: ordered mode: the default ``read_ahead`` is 8 pages a request in flight, at most this + 2
ORDERED_AHEAD_MAX = 128
#: ordered mode: bisection probes of one split, after the one finding the next partition
NEAR_PROBES = 6
#: times one page is sent again after a throttled failure (the bound halves each time)
THROTTLE_ROUNDS = 6
_THROTTLED = (ServerBusyError, TooManyRequestsError, OperationTimedOutError)


@attrs.frozen
class ScanPage:
    """Entities a scan returned together, and the token that resumes after them (``None``
    when the scan is complete).

    Example::

        >>> ScanPage(items=[], token=None).token is None
        True
    """

    items: list[TableEntity]
    token: str | None


class ParallelScan:
    """A parallel scan (see :func:`parallel_scan`): iterate it for entities, or use
    :meth:`by_page`; :attr:`token` resumes after the last entity returned.

    Example::

        scan = parallel_scan(table, concurrency=8, ordered=True)
        async for page in scan.by_page():
            write(page.items); save(page.token)
    """

    def __init__(
        self,
        table: QueryTable,
        *,
        filter: str | None,
        select: list[str] | None,
        start: str,
        stop: str | None,
        concurrency: int | Literal["auto"],
        ordered: bool,
        token: str | None,
        page_size: int | None,
        read_ahead: int | None = None,
    ) -> None:
        self._table = table
        self._filter = filter
        self._select = select
        self._ordered = ordered
        self._page_size = page_size or MAX_PAGE
        self._fingerprint = scan_fingerprint(filter, select, start, stop)
        if token is not None:
            decoded = decode_scan_token(token, self._fingerprint, start, stop)
        else:
            decoded = ScanToken(0, (RangeState(start, stop, stop, None, None),))
        self.stats = ScanStats(entities=decoded.returned)
        auto = concurrency == "auto"
        initial = AUTO_START if auto else int(concurrency)
        self._limiter = _Limiter(initial, AUTO_MAX if auto else initial, auto, self.stats)
        #: pages held read and not yet returned, at most (ordered: with those under way,
        #: plus the head's next one)
        limit = self._limiter.maximum
        default_ahead = (
            min(ORDERED_BUFFER_PAGES * limit, ORDERED_AHEAD_MAX) if ordered else 2 * limit
        ) + 2
        self._read_ahead = read_ahead or default_ahead
        #: ordered mode: pages one range may hold, so that as many ranges as the
        #: concurrency share ``read_ahead`` and the splits near the head find room
        self._per_range = max(1, min(ORDERED_BUFFER_PAGES, self._read_ahead // limit))
        self._held = 0  # ordered mode: pages in ranges' buffers plus page requests under way
        self._head_at = 0  # ordered mode: index of the range being returned
        self._readers_n = 0  # ranges whose reader runs
        self._waiting = 0  # of those, readers waiting for room (ordered mode)
        self._splits = 0  # splits under way
        self._ranges = [_Range(s, filter) for s in decoded.ranges]
        self.stats.ranges = len(self._ranges)
        self._signal = _Signal()  # any change: a page read, a reader done, a split
        self._arrived: deque[_Event] = deque()  # unordered mode: read, not returned yet
        self._tasks: set[asyncio.Task[None]] = set()
        self._busy = 0  # readers running plus splits under way
        self._error: BaseException | None = None
        self._started = False
        self._finished = not self._ranges
        self._gen: AsyncGenerator[Any, None] | None = None

    # --- the public face --------------------------------------------------------------

    @property
    def token(self) -> str | None:
        """The token that resumes the scan after the last entity returned (``None`` once
        the scan is complete); pass it as ``parallel_scan(..., token=...)``.

        Example::

            async for entity in scan:
                if enough(entity):
                    break
            later = parallel_scan(table, token=scan.token)
        """
        left = tuple(r.state() for r in self._ranges if not r.returned_done)
        if not left:
            return None
        return encode_scan_token(self._fingerprint, ScanToken(self.stats.entities, left))

    def __aiter__(self) -> AsyncIterator[TableEntity]:
        gen = self._items()
        self._gen = gen
        return gen

    async def __aenter__(self) -> ParallelScan:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the scan: cancel the requests in flight (also done on leaving ``async
        with``, and when an abandoned iteration is garbage collected). :attr:`token` still
        resumes after the last entity returned.

        Example::

            async with parallel_scan(table) as scan:
                async for entity in scan:
                    break
        """
        gen = self._gen
        if gen is not None:
            self._gen = None
            await gen.aclose()

    async def _items(self) -> AsyncGenerator[TableEntity, None]:
        stats = self.stats
        events = self._events()
        try:
            async for ev in events:
                rng = ev.rng
                for entity in ev.items:
                    rng.returned_cont = ev.cont_at
                    rng.returned_after = (entity["PartitionKey"], entity["RowKey"])
                    stats.entities += 1
                    yield entity
                self._returned(ev)
        finally:
            await events.aclose()

    def by_page(self) -> AsyncIterator[ScanPage]:
        """The scan's pages, each as read by one range's reader, with the token after it.

        Example::

            async for page in parallel_scan(table).by_page():
                print(len(page.items), page.token)
        """
        gen = self._pages()
        self._gen = gen
        return gen

    async def _pages(self) -> AsyncGenerator[ScanPage, None]:
        events = self._events()
        try:
            async for ev in events:
                self.stats.entities += len(ev.items)
                self._returned(ev)
                if ev.items or self.token is None:
                    yield ScanPage(ev.items, self.token)
        finally:
            await events.aclose()

    def _returned(self, ev: _Event) -> None:
        rng = ev.rng
        rng.returned_cont = ev.cont_next
        rng.returned_after = None
        rng.returned_done = ev.finished

    # --- running ----------------------------------------------------------------------

    async def _events(self) -> AsyncGenerator[_Event, None]:
        if self._started:
            raise ValidationError("a parallel scan can be iterated once: start a new one")
        self._started = True
        if self._finished:
            return
        try:
            for rng in self._ranges:
                self._start_reader(rng)
            self._spawn(self._splitter())
            if self._ordered:
                async for ev in self._ordered_events():
                    yield ev
            else:
                async for ev in self._unordered_events():
                    yield ev
        finally:
            self._finished = True
            self._signal.notify()
            tasks = list(self._tasks)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _unordered_events(self) -> AsyncGenerator[_Event, None]:
        arrived = self._arrived
        while True:
            if self._error is not None:
                raise self._error
            if arrived:
                ev = arrived.popleft()
                self._signal.notify()  # room for readers waiting on a full queue
                yield ev
            elif self._busy == 0:
                return
            else:
                await self._signal.wait()

    async def _ordered_events(self) -> AsyncGenerator[_Event, None]:
        i = 0
        ranges = self._ranges  # splits insert into this list after their range
        while i < len(ranges):
            head = ranges[i]
            if self._error is not None:
                raise self._error
            if head.pages:
                ev = head.pages.popleft()
                self._held -= 1
                self._signal.notify()
                yield ev
            elif head.done_reading or head.returned_done:
                if not head.returned_done:  # it finished with nothing to return
                    head.returned_done = True
                i += 1
                self._head_at = i
                self._signal.notify()  # the next range is the head now: unblock it
            else:
                await self._signal.wait()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(self._guard(coro))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guard(self, coro: Any) -> None:
        """Run a reader or the splitter; its failure is the scan's, recorded in the same
        step as the reader's exit, so the consumer never sees it gone without its error."""
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if self._error is None:
                self._error = exc
            self._signal.notify()

    def _start_reader(self, rng: _Range) -> None:
        rng.reading = True
        self._busy += 1
        self._readers_n += 1
        self._spawn(self._read(rng))

    def _readers(self) -> int:
        """Readers that send requests: in ordered mode, one waiting for room in the
        buffers does not count (a split may add a reader that can read now)."""
        return self._readers_n - self._waiting

    async def _read(self, rng: _Range) -> None:
        ordered = self._ordered
        try:
            while not self._finished:
                if not await self._room_for(rng):
                    return  # the scan ended while this reader waited
                cont_at = rng.cont
                if ordered:
                    self._held += 1  # a buffer place for the page under way
                    try:
                        items, cont_next = await self._fetch(rng)
                    except BaseException:
                        self._held -= 1
                        raise
                else:
                    items, cont_next = await self._fetch(rng)
                finished = self._accept(rng, items, cont_next)
                ev = _Event(rng, items, cont_at, cont_next, finished)
                (rng.pages if ordered else self._arrived).append(ev)
                self._limiter.count(len(items))
                self._signal.notify()
                if finished:
                    return
        finally:
            rng.reading = False
            self._busy -= 1
            self._readers_n -= 1
            self._signal.notify()

    async def _room_for(self, rng: _Range) -> bool:
        """Wait while this reader is too far ahead of what was returned; whether the scan
        still runs."""
        if self._ordered:
            if self._room(rng):
                return not self._finished
            self._waiting += 1
            self._signal.notify()  # the splitter may add a reader in this one's place
            try:
                while not self._room(rng):
                    await self._signal.wait()
            finally:
                self._waiting -= 1
        else:
            bound = self._read_ahead
            while len(self._arrived) >= bound and not self._finished:
                await self._signal.wait()
        return not self._finished

    def _room(self, rng: _Range) -> bool:
        """Ordered mode: whether ``rng`` may read its next page. Its own buffer is below
        the per-range bound and all buffers together below ``read_ahead``; the head may
        also read when it holds nothing (the consumer waits on it), whatever the others
        hold: so at most ``read_ahead + 1`` pages are held or under way."""
        if self._finished:
            return True
        held = len(rng.pages)
        if held >= self._per_range:
            return False
        if not held and self._head() is rng:
            return True
        return self._held < self._read_ahead and self._near(rng)

    def _near(self, rng: _Range) -> bool:
        """Whether ``rng`` is among the first ranges still being read, from the head on,
        as many as the concurrency: their pages are returned first, so the buffers'
        room goes to them before ranges further on."""
        left = self._limiter.limit
        for r in self._ranges[self._head_at :]:
            if r is rng:
                return True
            if r.reading:
                left -= 1
                if not left:
                    return False
        return False

    def _head(self) -> _Range | None:
        """The range being returned (ordered mode): splits only insert after it."""
        i = self._head_at
        return self._ranges[i] if i < len(self._ranges) else None

    def _accept(self, rng: _Range, items: list[TableEntity], cont_next: str | None) -> bool:
        """Cut a page to its range (and past a resume point); update the reader's position.
        Runs without awaiting, so a split sees every position before it decides."""
        finished = cont_next is None
        if rng.after is not None and items:
            pk, rk = ordinal(rng.after[0]), ordinal(rng.after[1])
            k = 0
            while k < len(items) and (
                ordinal(items[k]["PartitionKey"]),
                ordinal(items[k]["RowKey"]),
            ) <= (pk, rk):
                k += 1
            if k:
                del items[:k]
            if items or finished:
                rng.after = None
        if rng.hi is not None and items:
            hi = ordinal(rng.hi)
            if ordinal(items[-1]["PartitionKey"]) >= hi:
                k = 0
                while ordinal(items[k]["PartitionKey"]) < hi:
                    k += 1
                del items[k:]
                finished = True
        if items:
            rng.pos = items[-1]["PartitionKey"]
        rng.cont = cont_next
        rng.done_reading = finished
        return finished

    async def _fetch(self, rng: _Range) -> tuple[list[TableEntity], str | None]:
        token = ContinuationToken.from_string(rng.cont) if rng.cont else None
        page = await self._send(
            lambda: self._table.query_entities(
                rng.filter,
                select=self._select,
                results_per_page=self._page_size,
                continuation=token,
            ).first_page()
        )
        nxt = page.continuation
        return list(page.items), (nxt.to_string() if nxt is not None else None)

    async def _send(self, request: Any) -> Any:
        """One request under the concurrency bound; a throttled failure (after the client's
        own retries) halves the bound and sends it again."""
        rounds = 0
        while True:
            await self._limiter.acquire()
            try:
                return await request()
            except _THROTTLED:
                rounds += 1
                if rounds > THROTTLE_ROUNDS:
                    raise
                self._limiter.throttled()
            finally:
                self._limiter.release()
            await asyncio.sleep(0.05 * rounds)

    # --- splitting --------------------------------------------------------------------

    async def _splitter(self) -> None:
        while not self._finished:
            rng = self._candidate() if self._may_split() else None
            if rng is None:
                await self._signal.wait()
                continue
            rng.splitting = True
            self._splits += 1
            self._busy += 1
            self._spawn(self._split_one(rng))

    async def _split_one(self, rng: _Range) -> None:
        try:
            pos = rng.pos
            split = self._split_near if self._ordered else self._split
            if not await split(rng):
                rng.no_split_at = pos
        finally:
            rng.splitting = False
            self._splits -= 1
            self._busy -= 1
            self._signal.notify()

    def _may_split(self) -> bool:
        """Whether a new reader would add requests in flight: fewer readers send than the
        bound allows. Unordered, one split at a time; ordered, as many as there are idle
        places (the head's rest must be cut quickly), while the buffers have room."""
        if not self._ordered:
            return self._splits == 0 and self._readers() < self._limiter.limit
        return (
            self._readers() + self._splits < self._limiter.limit and self._held < self._read_ahead
        )

    def _candidate(self) -> _Range | None:
        """Unordered: the range whose unread rest looks widest (shortest common prefix
        between its position and its end), among those being read whose position is known.
        Ordered: the first such range from the head on, as its rest is returned soonest."""
        best: _Range | None = None
        best_key: tuple[int, int] | None = None
        ordered = self._ordered
        for r in self._ranges[self._head_at :] if ordered else self._ranges:
            if (
                not r.reading
                or r.done_reading
                or r.splitting
                or r.pos is None
                or r.pos == r.no_split_at
            ):
                continue
            if ordered:
                return r
            key = range_width(r.pos, r.hi)
            if best_key is None or key < best_key:
                best, best_key = r, key
        return best

    async def _split(self, rng: _Range, low: str | None = None, probes: int = MAX_PROBES) -> bool:
        """Probe for a key between the range's position (or ``low``) and its end, with up
        to ``probes`` probes; split there."""
        assert rng.pos is not None
        low, up = low or rng.pos, rng.hi
        for _ in range(probes):
            if self._gone(rng):
                return True  # nothing to split any more
            assert rng.pos is not None
            low = max(low, rng.pos, key=ordinal)
            mid = between(low, up)
            if mid is None:
                return False
            found = await self._probe(range_filter(None, mid, rng.hi))
            if found is None:
                up = mid  # nothing in [mid, hi): look lower
                continue
            if self._gone(rng):
                return True
            assert rng.pos is not None
            if ordinal(found) <= ordinal(rng.pos):
                low = found  # the reader got there meanwhile
                continue
            if rng.hi is not None and ordinal(found) >= ordinal(rng.hi):
                up = mid
                continue
            self._cut(rng, found)
            return True
        return False

    async def _split_near(self, rng: _Range) -> bool:
        """Ordered mode: first ask for the PartitionKey after the reader's one (none: the
        rest is that one partition, never split: one probe, where a bisection spends up
        to :data:`MAX_PROBES` on it, and a rest of one or two partitions is what the
        ranges near the head often have); then bisect from there, with a few probes when
        the range has an end (:data:`NEAR_PROBES`: a bisection past the last partition
        of a short rest finds nothing, however long it goes on; without an end it needs
        more to come down to where the keys are), falling back to a split right after
        the reader's partition."""
        assert rng.pos is not None
        nxt = await self._probe(_after_filter(rng.pos, rng.hi))
        if nxt is None or self._gone(rng):
            return self._gone(rng)
        if await self._split(rng, nxt, MAX_PROBES if rng.hi is None else NEAR_PROBES):
            return True
        if self._gone(rng):
            return True
        assert rng.pos is not None
        if ordinal(nxt) <= ordinal(rng.pos):
            return False  # the reader got there meanwhile: try again from where it is
        self._cut(rng, nxt)
        return True

    def _cut(self, rng: _Range, at: str) -> None:
        """Split ``rng`` at PartitionKey ``at``: a new range with its own reader reads
        ``[at, hi)``; the old reader drops what it reads from ``at`` on."""
        new = _Range(RangeState(at, rng.hi, rng.hi, None, None), self._filter)
        rng.hi = at
        self._ranges.insert(self._ranges.index(rng) + 1, new)
        self.stats.ranges += 1
        self._start_reader(new)

    def _gone(self, rng: _Range) -> bool:
        """Whether a range can no longer be split (checked again after every await)."""
        return self._finished or rng.done_reading or rng.pos is None

    async def _probe(self, text: str | None) -> str | None:
        """The first PartitionKey matching ``text``, or None (following empty pages)."""
        cont: ContinuationToken | None = None
        for _ in range(8):
            page = await self._send(
                lambda c=cont: self._table.query_entities(
                    text, select=["PartitionKey"], results_per_page=1, continuation=c
                ).first_page()
            )
            self.stats.probes += 1
            if page.items:
                return str(page.items[0]["PartitionKey"])
            cont = page.continuation
            if cont is None:
                return None
        return None


def parallel_scan(
    table: QueryTable,
    *,
    filter: str | None = None,
    parameters: dict[str, Any] | None = None,
    select: Sequence[str] | None = None,
    start: str | None = None,
    stop: str | None = None,
    prefix: str | None = None,
    concurrency: int | Literal["auto"] = 8,
    ordered: bool = False,
    token: str | None = None,
    page_size: int | None = None,
    read_ahead: int | None = None,
) -> ParallelScan:
    """Read a whole table, or the PartitionKeys in ``[start, stop)`` (or starting with
    ``prefix``), with up to ``concurrency`` requests in flight (``"auto"``: grow while it
    helps); see the module text for how ranges are found.

    ``filter`` (with ``@name`` ``parameters``) and ``select`` go to every request; with
    ``select`` the keys always come along (a scan needs them to know where it is).
    ``ordered=True`` returns entities in (PartitionKey, RowKey) order; by default they come
    as pages arrive (each range in order). ``token`` resumes a scan with the same filter,
    select and key range from its :attr:`ParallelScan.token`. ``page_size``: ``$top`` of
    each request (default 1,000). ``read_ahead``: how many pages the scan may hold read
    and not yet taken (unordered: default twice the concurrency, plus 2; a consumer that
    writes what it reads against the same throttling budget keeps the reads in step with
    its writes by a low one. Ordered: counting the pages being read, plus the head's
    next one; default 8 per request in flight, plus 2, at most 130). Bad arguments or a
    token of another scan raise :class:`azt.ValidationError`.

    Example::

        async for entity in parallel_scan(table, filter="Rating ge 4", concurrency=16):
            ...
    """
    if filter is not None:
        filter = format_filter(filter, parameters) if filter.strip() else None
    elif parameters:
        raise ValidationError("parameters were given without a filter")
    sel: list[str] | None = None
    if select is not None:
        if isinstance(select, str) or not all(isinstance(s, str) and s for s in select):
            raise ValidationError(f"select must be a list of property names, got {select!r}")
        sel = [
            "PartitionKey",
            "RowKey",
            *(s for s in select if s not in ("PartitionKey", "RowKey")),
        ]
    if prefix is not None:
        if start is not None or stop is not None:
            raise ValidationError("give prefix= or start=/stop=, not both")
        if not isinstance(prefix, str):
            raise ValidationError(f"prefix must be a str, got {prefix!r}")
        start, stop = prefix, prefix_upper_bound(prefix)
    for name, value in (("start", start), ("stop", stop)):
        if value is not None and not isinstance(value, str):
            raise ValidationError(f"{name} must be a str (a PartitionKey) or None, got {value!r}")
    lo = start or ""
    if stop is not None and ordinal(stop) <= ordinal(lo):
        raise ValidationError(f"stop ({stop!r}) must come after start ({lo!r})")
    if concurrency != "auto" and (
        not isinstance(concurrency, int)
        or isinstance(concurrency, bool)
        or not 1 <= concurrency <= MAX_CONCURRENCY
    ):
        raise ValidationError(
            f"concurrency must be an int from 1 to {MAX_CONCURRENCY} or 'auto', got {concurrency!r}"
        )
    if page_size is not None and (
        not isinstance(page_size, int)
        or isinstance(page_size, bool)
        or not 1 <= page_size <= MAX_PAGE
    ):
        raise ValidationError(f"page_size must be an int from 1 to {MAX_PAGE}, got {page_size!r}")
    if read_ahead is not None and (
        not isinstance(read_ahead, int) or isinstance(read_ahead, bool) or read_ahead < 1
    ):
        raise ValidationError(f"read_ahead must be an int >= 1, got {read_ahead!r}")
    return ParallelScan(
        table,
        filter=filter,
        select=sel,
        start=lo,
        stop=stop,
        concurrency=concurrency,
        ordered=bool(ordered),
        token=token,
        page_size=page_size,
        read_ahead=read_ahead,
    )
