"""HTTP transports, the one place on the client side that imports aiohttp: a transport
sends one prepared, signed :class:`HttpRequest` and returns one :class:`HttpResponse` with
the body read, or raises :class:`azt.TransportError`. :class:`AiohttpTransport` is the real
one; :class:`MockTransport` calls a function per request, for tests.

Example::

    >>> import asyncio
    >>> async def demo():
    ...     transport = MockTransport(lambda req: HttpResponse(204, {"x-ms-request-id": "r"}))
    ...     resp = await transport.send(HttpRequest("DELETE", "http://h/Tables('t')", {}, None))
    ...     return resp.status, len(transport.requests)
    >>> asyncio.run(demo())
    (204, 1)
"""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import io
import textwrap
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, cast

import aiohttp
import yarl
from aiohttp.client_proto import ResponseHandler
from multidict import CIMultiDict, CIMultiDictProxy

from azt._core.config import PoolLimits, Timeouts
from azt._core.logs import redact_url
from azt._errors import ClientClosedError, ServiceConnectionError, ServiceTimeoutError

__all__ = [
    "AiohttpTransport",
    "Handler",
    "HttpRequest",
    "HttpResponse",
    "MockTransport",
    "Transport",
    "redact_url",
]

#: Largest response header line accepted: two keys of 1,024 characters percent-encode to
#: at most 2 x 12 KiB (astral characters, 4 UTF-8 bytes each, 3 bytes per escape).
_MAX_HEADER_BYTES = 64 * 1024

#: aiohttp warns (ResourceWarning) about raw ``bytes`` bodies above 1 MiB; 4 MiB batches are
#: normal here, so larger bodies go out as a file-like payload (same bytes, same length).
_LARGE_BODY = 1024 * 1024


#: header mappings kept as they are (a tuple: ``A | B`` would build a union per response)
_CI_HEADERS = (CIMultiDictProxy, CIMultiDict)


def _payload(body: bytes | None) -> bytes | io.BytesIO | None:
    """The body in the form aiohttp sends without warnings: a fresh stream per attempt."""
    if body is not None and len(body) > _LARGE_BODY:
        return io.BytesIO(body)
    return body


#: Most bytes one read of a plain TCP connection asks for. asyncio's selector transport
#: reads with ``sock.recv(transport.max_size)``, 256 KiB by default: CPython allocates the
#: whole buffer before the read, and above glibc's mmap threshold (128 KiB) that is a fresh
#: memory mapping each time (mmap, mremap to the bytes read, munmap: three system calls and
#: a page fault per response). Below the threshold the buffer comes from the heap; a larger
#: response is read in several reads, as before.
_READ_SIZE = 64 * 1024


class _LazyReadTimeout(ResponseHandler):
    """aiohttp's response protocol, its ``sock_read`` timer kept lazily.

    aiohttp restarts the read timer on every chunk received (a cancelled timer and a new
    one on the event loop's heap) and cancels it when the answer is complete: three timers
    per request. Here a chunk only moves the deadline, and stopping only forgets it: the
    one pending timer, when it fires, compares the clock with the deadline then in force
    and either waits again until that deadline or times the read out as aiohttp would.
    The timeout is the same (no data for ``read`` seconds while an answer is awaited); a
    pooled connection's timer is made once per ``read`` seconds, not three per request.

    It also reads at most :data:`_READ_SIZE` bytes at a time from a plain TCP connection
    (see there: a smaller buffer, not a fresh memory mapping per read).
    """

    _deadline: float | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if type(getattr(transport, "max_size", None)) is int:  # asyncio's TCP transport
            transport.max_size = _READ_SIZE  # type: ignore[attr-defined]

    def _reschedule_timeout(self) -> None:
        timeout = self._read_timeout
        handle = self._read_timeout_handle
        if not timeout:
            self._deadline = None
            if handle is not None:
                handle.cancel()
                self._read_timeout_handle = None
            return
        loop = self._loop
        deadline = self._deadline = loop.time() + timeout
        if handle is not None:
            if handle.when() <= deadline:
                return  # it fires first and waits again until the deadline
            handle.cancel()
        self._read_timeout_handle = loop.call_at(deadline, self._deadline_reached)

    def _drop_timeout(self) -> None:
        self._deadline = None  # the pending timer, if any, finds the read stopped

    def _deadline_reached(self) -> None:
        self._read_timeout_handle = None
        deadline = self._deadline
        if deadline is None:
            return
        loop = self._loop
        if deadline > loop.time():  # data came meanwhile: wait until the newer deadline
            self._read_timeout_handle = loop.call_at(deadline, self._deadline_reached)
            return
        self._deadline = None
        self._on_read_timeout()

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        handle, self._read_timeout_handle = self._read_timeout_handle, None
        if handle is not None:  # a closed connection keeps no timer
            handle.cancel()


#: The methods of aiohttp's ``ResponseHandler`` that may touch ``_read_timeout_handle``: the
#: ones :class:`_LazyReadTimeout` overrides (``connection_lost`` calls aiohttp's first, then
#: cancels what is left).
_TIMER_OWNERS = frozenset({"__init__", "_drop_timeout", "_reschedule_timeout", "connection_lost"})


def _lazy_read_timeout_fits(handler: type[Any] = ResponseHandler) -> bool:
    """Whether aiohttp's response protocol (``handler``) keeps its read timer as
    :class:`_LazyReadTimeout` expects (else aiohttp's own protocol is kept).

    Checked by meaning, in the class's source: ``set_response_params`` takes ``read_timeout``
    and stores it in ``_read_timeout``; ``_reschedule_timeout`` (data received, answer
    awaited) arms the timer from ``_read_timeout`` with ``_on_read_timeout``, a callback of
    no arguments; ``_drop_timeout`` (answer complete, reading paused) cancels it; and no
    other method arms or cancels ``_read_timeout_handle`` behind the override's back.

    Example::

        >>> _lazy_read_timeout_fits()
        True
    """
    names = ("_reschedule_timeout", "_drop_timeout", "_on_read_timeout", "set_response_params")
    if not all(callable(getattr(handler, name, None)) for name in names):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(handler)))
        set_params = inspect.signature(handler.set_response_params).parameters
        if "read_timeout" not in set_params:
            return False
        on_timeout = inspect.signature(handler._on_read_timeout).parameters
        if len(on_timeout) != 1:  # self only
            return False
    except (OSError, TypeError, ValueError, SyntaxError):
        return False
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    if len(classes) != 1:
        return False
    methods = {
        node.name: ast.unparse(node)
        for node in classes[0].body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    touching = {name for name, text in methods.items() if "_read_timeout_handle" in text}
    reschedule = methods.get("_reschedule_timeout", "")
    return (
        touching <= _TIMER_OWNERS
        and {"__init__", "_drop_timeout", "_reschedule_timeout"} <= touching
        and "self._read_timeout = " in methods.get("set_response_params", "")
        and "self._read_timeout" in reschedule
        and "self._on_read_timeout" in reschedule
        and ".cancel()" in methods.get("_drop_timeout", "")
    )


_LAZY_READ_TIMEOUT_FITS = _lazy_read_timeout_fits()


class HttpRequest:
    """One HTTP request exactly as it goes on the wire.

    ``url`` is the complete, already percent-encoded URL; ``headers`` a plain dict; ``body``
    the payload bytes or ``None``.

    Example::

        >>> HttpRequest("GET", "http://h/a/Tables", {"Accept": "application/json"}).method
        'GET'
    """

    __slots__ = ("body", "headers", "method", "url")

    def __init__(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None = None
    ) -> None:
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body

    def __repr__(self) -> str:
        return f"HttpRequest({self.method} {redact_url(self.url)})"


class HttpResponse:
    """One HTTP response with its body fully read.

    ``headers`` is case-insensitive (a plain mapping given here is wrapped). The pipeline
    sets ``attempts`` and ``earlier_attempt_may_have_applied`` (an earlier attempt of the
    same request got no definite answer, so it may have been applied).

    Example::

        >>> r = HttpResponse(200, {"ETag": 'W/"x"'}, b"{}")
        >>> r.headers["etag"]
        'W/"x"'
    """

    __slots__ = (
        "attempts",
        "body",
        "earlier_attempt_may_have_applied",
        "headers",
        "reason",
        "status",
    )

    def __init__(
        self,
        status: int,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        reason: str = "",
    ) -> None:
        self.status = status
        if isinstance(headers, _CI_HEADERS):
            self.headers: Mapping[str, str] = headers
        else:
            self.headers = CIMultiDict(headers or {})
        self.body = body
        self.reason = reason
        self.attempts = 1
        self.earlier_attempt_may_have_applied = False

    def __repr__(self) -> str:
        return f"HttpResponse({self.status}, {len(self.body)} bytes)"


class Transport(Protocol):
    """What the pipeline needs from a transport.

    Example::

        >>> hasattr(MockTransport(lambda r: HttpResponse(200)), "send")
        True
    """

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send one request and read the whole response, or raise a ``TransportError``.

        Example::

            >>> import asyncio
            >>> t: Transport = MockTransport(lambda r: HttpResponse(204))
            >>> asyncio.run(t.send(HttpRequest("DELETE", "http://h/t", {}))).status
            204
        """
        ...

    async def aclose(self) -> None:
        """Release connections; later ``send`` calls raise :class:`azt.ClientClosedError`.

        Example::

            >>> import asyncio
            >>> t: Transport = MockTransport(lambda r: HttpResponse(200))
            >>> asyncio.run(t.aclose())
            >>> t.closed
            True
        """
        ...

    @property
    def closed(self) -> bool:
        """True after ``aclose()``.

        Example::

            >>> MockTransport(lambda r: HttpResponse(200)).closed
            False
        """
        ...


class AiohttpTransport:
    """The production transport: one pooled ``aiohttp.ClientSession``, created lazily.

    The session is created on first use inside the running loop (so a client can be
    constructed anywhere) and bound to that loop; using it from another loop raises
    ``RuntimeError``. After :meth:`aclose` every ``send`` raises
    :class:`azt.ClientClosedError`.

    ``proxies``: the HTTP proxy per scheme of the request URL, as ``requests`` takes them
    (``{"https": "http://proxy:3128"}``; ``user:password@`` in the proxy URL is sent as
    ``Proxy-Authorization: Basic``). An ``http`` request goes to its proxy in absolute
    form; an ``https`` request through a ``CONNECT`` tunnel, its TLS checked end to end
    against the service's host name (an ``https://`` proxy URL adds TLS to the proxy
    itself). Schemes not named go direct. ``ValueError`` for a proxy URL that is not
    ``http``/``https`` with a host.

    Example::

        >>> transport = AiohttpTransport(
        ...     timeouts=Timeouts(total=10), limits=PoolLimits(max_connections=8))
        >>> transport.closed
        False
        >>> AiohttpTransport(proxies={"https": "http://127.0.0.1:3128"}).proxies
        {'https': 'http://127.0.0.1:3128'}
    """

    def __init__(
        self,
        *,
        timeouts: Timeouts | None = None,
        limits: PoolLimits | None = None,
        ssl: bool | object | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> None:
        self._proxies: dict[str, yarl.URL] = {}
        for scheme, url in (proxies or {}).items():
            parsed = yarl.URL(url)
            if parsed.scheme not in ("http", "https") or not parsed.host:
                raise ValueError(
                    f"proxy for {scheme!r} must be an http:// or https:// URL with a host, "
                    f"not {redact_url(url)!r}"
                )
            self._proxies[scheme.lower()] = parsed
        self._timeouts = timeouts or Timeouts()
        self._limits = limits or PoolLimits()
        self._ssl = ssl
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        """True after :meth:`aclose`.

        Example::

            AiohttpTransport().closed  # False until aclose()
        """
        return self._closed

    @property
    def proxies(self) -> dict[str, str]:
        """The proxy URL per scheme (empty: every request goes direct).

        Example::

            >>> AiohttpTransport().proxies
            {}
        """
        return {scheme: redact_url(str(url)) for scheme, url in self._proxies.items()}

    def reset_after_fork(self) -> object | None:
        """In a child after ``os.fork()``: forget the session inherited from the parent,
        without closing it, so that the next ``send`` opens a fresh one on the child's loop.

        The inherited session's sockets (and TLS state) are shared with the parent: closing
        them in the child could end or corrupt the parent's connections, and so could
        letting the child garbage-collect them. The inherited session (``None`` if there
        was none) is returned for the caller to keep referenced for the rest of the child's
        life; it must never be used or closed there. A closed transport stays closed.

        Example::

            >>> kept = []
            >>> transport = AiohttpTransport()
            >>> kept.append(transport.reset_after_fork())   # in the child, after os.fork()
            >>> kept, transport.closed
            ([None], False)
        """
        inherited, self._session, self._loop = self._session, None, None
        return inherited

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        limits = self._limits
        connector = aiohttp.TCPConnector(
            limit=limits.max_connections,
            limit_per_host=limits.max_connections_per_host,
            keepalive_timeout=limits.keepalive_timeout,
            ttl_dns_cache=limits.dns_cache_ttl,
            ssl=self._ssl if self._ssl is not None else True,  # type: ignore[arg-type]
        )
        factory = getattr(connector, "_factory", None)
        if (
            isinstance(factory, functools.partial)
            and factory.func is ResponseHandler
            and _LAZY_READ_TIMEOUT_FITS
        ):
            lazy = functools.partial(_LazyReadTimeout, *factory.args, **factory.keywords)
            connector._factory = cast("functools.partial[ResponseHandler]", lazy)
        t = self._timeouts
        session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=t.total, connect=t.connect, sock_read=t.read),
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=True,
            # A response names the entity it wrote (Location, and the echoed id): with
            # keys of 1,024 characters that percent-encode to 9 KiB each, such a header
            # passes aiohttp's default 8,190-byte limit, and a write the service applied
            # would read as a broken connection. Every legal key pair must fit.
            max_line_size=_MAX_HEADER_BYTES,
            max_field_size=_MAX_HEADER_BYTES,
        )
        # aiohttp silently re-sends idempotent requests (PUT, DELETE, GET) once when a pooled
        # connection turns out to be closed. That retry would reuse the old date, signature
        # and client request id and hide a possibly applied first attempt from the
        # ambiguous-outcome logic, so every retry must be the pipeline's own.
        if hasattr(session, "_retry_connection"):
            session._retry_connection = False
        self._session = session
        self._loop = loop
        return session

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Send ``request``; map aiohttp failures onto azt's transport errors.

        Example::

            resp = await transport.send(HttpRequest("GET", url, headers))
        """
        session = self._session
        if session is None or self._loop is not asyncio.get_running_loop():
            if self._closed:
                raise ClientClosedError("the client has been closed; create a new one")
            if session is not None:
                raise RuntimeError(
                    "this client's HTTP session belongs to another event loop; "
                    "create one client per loop"
                )
            session = self._open()
        # encoded=True: the bytes on the wire are exactly the ones signed.
        url = yarl.URL(request.url, encoded=True)
        try:
            async with session.request(
                request.method,
                url,
                headers=request.headers,
                data=_payload(request.body),
                allow_redirects=False,
                proxy=self._proxies.get(url.scheme) if self._proxies else None,
            ) as resp:
                body = await resp.read()
                return HttpResponse(resp.status, resp.headers, body, resp.reason or "")
        except aiohttp.ClientConnectorError as exc:
            raise ServiceConnectionError(
                f"cannot connect: {exc}",
                method=request.method,
                url=redact_url(request.url),
                sent=False,
            ) from exc
        except aiohttp.ClientHttpProxyError as exc:
            # the proxy refused the tunnel (403, 407, 502...): nothing reached the service
            raise ServiceConnectionError(
                f"the proxy refused the connection: {exc.status} {exc.message}",
                method=request.method,
                url=redact_url(request.url),
                sent=False,
            ) from exc
        except aiohttp.ConnectionTimeoutError as exc:
            raise ServiceTimeoutError(
                "timed out waiting for a connection",
                method=request.method,
                url=redact_url(request.url),
            ) from exc
        except TimeoutError as exc:  # aiohttp.ServerTimeoutError is also a TimeoutError
            raise ServiceTimeoutError(
                f"timed out waiting for the response: {exc or 'total timeout'}",
                method=request.method,
                url=redact_url(request.url),
            ) from exc
        except aiohttp.ClientError as exc:
            if self._closed:
                raise ClientClosedError("the client was closed during the request") from exc
            raise ServiceConnectionError(
                f"connection failed: {type(exc).__name__}: {exc}",
                method=request.method,
                url=redact_url(request.url),
            ) from exc

    async def aclose(self) -> None:
        """Close the session and its connections. Idempotent.

        Example::

            await transport.aclose()
        """
        self._closed = True
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


Handler = Callable[[HttpRequest], HttpResponse | Awaitable[HttpResponse]]


class MockTransport:
    """A transport that answers every request by calling ``handler`` (sync or async).

    Every request sent is appended to ``requests``. The handler may raise
    :class:`azt.ServiceConnectionError` or :class:`azt.ServiceTimeoutError` to simulate
    network failures (including "applied on the server, response lost").

    Example::

        >>> import asyncio
        >>> t = MockTransport(lambda req: HttpResponse(200, {}, b'{"value":[]}'))
        >>> asyncio.run(t.send(HttpRequest("GET", "http://h/t()", {}))).status
        200
    """

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[HttpRequest] = []
        self._closed = False

    @property
    def closed(self) -> bool:
        """True after :meth:`aclose`.

        Example::

            MockTransport(handler).closed  # False until aclose()
        """
        return self._closed

    async def send(self, request: HttpRequest) -> HttpResponse:
        """Record the request and return the handler's answer.

        Example::

            resp = await MockTransport(handler).send(HttpRequest("GET", url, {}))
        """
        if self._closed:
            raise ClientClosedError("the client has been closed; create a new one")
        self.requests.append(request)
        result = self.handler(request)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def aclose(self) -> None:
        """Mark the transport closed.

        Example::

            await mock.aclose()
        """
        self._closed = True
