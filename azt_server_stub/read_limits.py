"""How long a connection may take to send a request, and how a refused one is let go.

Azure Storage answers from Windows' HTTP Server API (its ``Server`` header ends in
``Microsoft-HTTPAPI/2.0``), whose documented defaults bound a slow client: two minutes to
send a request's headers (``HeaderWait``), two minutes between two arrivals of body data
(``EntityBody``, restarted by each), two minutes to drain a body the answer did not need
(``DrainEntityBody``). The stub keeps the same bounds by default (:class:`ReadLimits`,
configurable: ``StubConfig.read_limits``, ``azt-stub --header-timeout/--body-timeout``)
and closes a connection that passes one, as that server does (no answer: the client is
not reading). docs/stub.md, "Slow clients", has the sources.

A request refused before its body was read (a header the parser refuses) is answered,
then the connection is half-closed and what the client still sends is read and dropped,
up to :attr:`ReadLimits.drain_bytes` or :attr:`ReadLimits.drain_seconds`, before it is
closed: closing a socket with unread data resets it, and a client still sending would
lose the answer (:class:`Drain`).

Example::

    >>> ReadLimits().header_seconds, ReadLimits(header_seconds=0.5).body_seconds
    (120.0, 120.0)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.streams import StreamReader


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """The bounds on a slow client (seconds and bytes; a bound of 0 or less is off).

    ``header_seconds``: from the first byte of a request's head to its end.
    ``body_seconds``: the longest pause between two arrivals of a body's data.
    ``drain_bytes`` / ``drain_seconds``: what is read and dropped after a refusal sent
    before the body was read, before the connection is closed.

    Example::

        >>> ReadLimits(body_seconds=1.0).body_seconds
        1.0
    """

    header_seconds: float = 120.0
    body_seconds: float = 120.0
    drain_bytes: int = 8 * 1024 * 1024
    drain_seconds: float = 10.0


#: The read limits of an application (``create_app`` sets it from ``StubConfig``).
READ_LIMITS = web.AppKey("azt.read_limits", ReadLimits)


def limits_of(app: web.Application) -> ReadLimits:
    """The read limits of ``app`` (the defaults when none were set).

    Example::

        >>> limits_of(web.Application()) == ReadLimits()
        True
    """
    limits = app.get(READ_LIMITS)
    return limits if isinstance(limits, ReadLimits) else ReadLimits()


class ReadWatch:
    """One connection's read deadlines: the head being read, the body being received.

    The connection reports what each arrival of data did (:meth:`parsed` when it
    completed a request head, :meth:`received` otherwise); one timer checks the
    deadlines and calls ``on_timeout`` (with ``"header"`` or ``"body"``) when one
    passes. Reporting costs an attribute or two and a clock read; the timer is armed
    once per head or body and re-armed only when it fires early.

    An arrival that ends a request (its head, or its body) may also carry the start of a
    pipelined next head, which the parser keeps to itself: the watch tells it from the
    arrival's bytes (:func:`starts_next_head`) and times that head from this arrival.

    Example::

        watch = ReadWatch(loop, ReadLimits(), protocol.read_timed_out)
        watch.received(b"GET /devstoreaccount1/Tables HT")  # the first bytes of a head
    """

    __slots__ = (
        "_body",
        "_body_chunked",
        "_body_fed",
        "_body_last",
        "_handle",
        "_head_started",
        "_limits",
        "_loop",
        "_on_timeout",
    )

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limits: ReadLimits,
        on_timeout: Callable[[str], None],
    ) -> None:
        self._loop = loop
        self._limits = limits
        self._on_timeout = on_timeout
        self._head_started: float | None = None
        self._body: StreamReader | None = None
        self._body_chunked = False
        self._body_fed = 0  # the body's bytes before the latest arrival
        self._body_last = 0.0
        self._handle: asyncio.TimerHandle | None = None

    @property
    def body(self) -> StreamReader | None:
        """The body being received (None when none is).

        Example::

            watch.body  # None between requests
        """
        body = self._body
        return None if body is None or body.is_eof() else body

    def parsed(self, payload: StreamReader, data: bytes, chunked: bool = False) -> None:
        """``data`` completed a request head; ``payload`` is the last completed request's
        body (maybe still arriving; ``chunked``: sent in chunks).

        Example::

            watch.parsed(payload, data, message.chunked)
        """
        self._head_started = None
        if payload.is_eof():
            self._body = None
            # all in this arrival: its head came in it too
            if _more_after_head(data, payload.total_bytes, chunked):
                self._start_head()
            return
        self._body = payload
        self._body_chunked = chunked
        self._body_fed = payload.total_bytes
        if self._limits.body_seconds > 0:
            self._body_last = self._loop.time()
            self._arm(self._body_last + self._limits.body_seconds)

    def received(self, data: bytes) -> None:
        """``data`` arrived and completed no request head: body data, or part of a head.

        Example::

            watch.received(data)
        """
        body = self._body
        if body is not None:
            fed = body.total_bytes
            if body.is_eof():
                # this data ended the body (reported on every arrival: the first time the
                # end shows is the arrival that made it); what follows it is a next head
                self._body = None
                used = fed - self._body_fed
                if starts_next_head(data, body_bytes=used, chunked=self._body_chunked):
                    self._start_head()
            else:
                self._body_fed = fed
                self._body_last = self._loop.time()
            return
        if self._head_started is None:
            self._start_head()

    def _start_head(self) -> None:
        if self._limits.header_seconds > 0:
            self._head_started = self._loop.time()
            self._arm(self._head_started + self._limits.header_seconds)

    def cancel(self) -> None:
        """Stop watching (the connection is gone).

        Example::

            watch.cancel()
        """
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, when: float) -> None:
        handle = self._handle
        if handle is not None:
            if handle.when() <= when:
                return  # the armed check comes first; it re-arms for later deadlines
            handle.cancel()
        self._handle = self._loop.call_at(when, self._check)

    def _check(self) -> None:
        self._handle = None
        now = self._loop.time()
        next_check: float | None = None
        if self._head_started is not None:
            deadline = self._head_started + self._limits.header_seconds
            if now >= deadline:
                self._head_started = None
                self._on_timeout("header")
                return
            next_check = deadline
        body = self.body
        if body is not None and self._limits.body_seconds > 0:
            deadline = self._body_last + self._limits.body_seconds
            if now >= deadline:
                self._on_timeout("body")
                return
            next_check = deadline if next_check is None else min(next_check, deadline)
        if next_check is not None:
            self._arm(next_check)


_END = b"\r\n\r\n"


def starts_next_head(
    data: bytes, *, body_bytes: int, chunked: bool, with_head: bool = False
) -> bool:
    r"""Whether ``data``, an arrival that ended a request, carries bytes after it: the start
    of a pipelined next head (which the parser holds until the head is whole).

    ``body_bytes``: how many of the request's body bytes this arrival carried;
    ``with_head``: the arrival also ended the request's head. A body of known length ends
    ``body_bytes`` into the arrival (the stub reads bodies undecoded: the bytes the parser
    counts are the wire's), or, with the head, right after the head's blank line, which then
    lies ``body_bytes`` before the arrival's end unless more bytes follow. A chunked body ends
    with the blank line after its last chunk (``0``, trailers, CRLF), and a head holds no
    blank line until it is whole: anything after the arrival's last blank line (or after the
    end of that blank line, split across arrivals) begins a next head.

    Example::

        >>> starts_next_head(b"GET / HTTP/1.1\r\n\r\nGET /b", body_bytes=0, chunked=False,
        ...                  with_head=True)
        True
        >>> starts_next_head(b"GET / HTTP/1.1\r\n\r\n", body_bytes=0, chunked=False,
        ...                  with_head=True)
        False
        >>> starts_next_head(b'"}PUT /t', body_bytes=2, chunked=False)
        True
        >>> starts_next_head(b"0\r\n\r\nPOST /x", body_bytes=0, chunked=True)
        True
    """
    if with_head:
        return _more_after_head(data, body_bytes, chunked)
    if chunked:
        return _more_after_chunked(data)
    return len(data) > body_bytes


def _more_after_head(data: bytes, body_bytes: int, chunked: bool) -> bool:
    """:func:`starts_next_head` of an arrival that also ended the request's head
    (positional: :meth:`ReadWatch.parsed` calls it for nearly every request)."""
    if chunked:
        return _more_after_chunked(data)
    before = len(data) - body_bytes  # the head's bytes here, and any after the body
    if before >= len(_END):  # (the usual case: the whole blank line in this arrival)
        return not data.endswith(_END, 0, before)
    if before <= 0:
        return False
    return data[:before] != _END[-before:]


def _more_after_chunked(data: bytes) -> bool:
    """:func:`starts_next_head` of an arrival that ended a chunked body."""
    end = data.rfind(_END)
    if end >= 0:
        return len(data) > end + len(_END)
    for n in (3, 2, 1):  # the blank line's last bytes, the rest came before
        if data[:n] == _END[-n:]:
            return len(data) > n
    return False


class Drain:
    """After a refusal: the answer is sent and the sending side shut; what the client
    still sends is dropped until it closes, or the byte or time bound is reached, then
    the connection is closed.

    Example::

        drain = Drain(loop, transport, ReadLimits())
        drain.dropped(len(data))  # in data_received
    """

    __slots__ = ("_handle", "_left", "_transport")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport, limits: ReadLimits
    ) -> None:
        self._transport = transport
        self._left = limits.drain_bytes
        self._handle: asyncio.TimerHandle | None = None
        if limits.drain_bytes <= 0 or limits.drain_seconds <= 0 or not transport.can_write_eof():
            self.close()
            return
        transport.write_eof()  # the answer is whole: the client reads it, then its EOF
        self._handle = loop.call_later(limits.drain_seconds, self.close)

    def dropped(self, size: int) -> None:
        """``size`` more bytes arrived and were dropped.

        Example::

            drain.dropped(65536)
        """
        self._left -= size
        if self._left < 0:
            self.close()

    def close(self) -> None:
        """Close the connection now (the bound is reached, or the client has left).

        Example::

            drain.close()
        """
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if not self._transport.is_closing():
            self._transport.close()


__all__ = ["READ_LIMITS", "Drain", "ReadLimits", "ReadWatch", "limits_of", "starts_next_head"]
