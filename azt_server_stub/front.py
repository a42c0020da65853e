"""The stub's HTTP/1.1 connection protocol: aiohttp's parser, requests and responses, less plumbing.

aiohttp's connection handler (``web_protocol.RequestHandler``) spends about a tenth of a
millisecond of CPU on every request outside the application: a waiter future and a new
task per request (four event-loop passes from the request's bytes to the answer's),
the per-request middleware wrapping (``functools.partial`` and ``update_wrapper`` per
middleware), the router, and the general response writer. On a single insert that was a
third of the stub's own time.

:class:`FrontProtocol` keeps everything that decides what a request *is* and what the
answer *says*: aiohttp's HTTP parser (the same C parser, limits and refusals), its
payload streams and ``web.Request`` objects (built by the runner's own request factory),
the application's middlewares in aiohttp's order, ``web.Response`` objects, aiohttp's
header rules (``Content-Length``, ``Content-Type``, ``Date``, ``Server``, ``Connection``)
and its handling of unread bodies (a lingering read, then close). What it changes is
only the plumbing: no task per request (a burst of requests on a connection is served
in the callback that received it, up to the first real wait, then by one task; see
:meth:`FrontProtocol._start_worker`), not a waiter per request, the middleware chain
composed once, one ``transport.write`` per plain answer. Anything unusual (an ``Expect``
header, a path that does not start with ``/``, a streamed or compressed answer) takes
aiohttp's own code for that step, so an unusual request is answered exactly as before.

Example::

    runner = FrontAppRunner(create_app(StubConfig()))  # serves through FrontProtocol
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import hdrs, web
from aiohttp.abc import AbstractAccessLogger
from aiohttp.base_protocol import BaseProtocol
from aiohttp.http import HttpRequestParser, HttpVersion10, HttpVersion11
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.http_parser import RawRequestMessage
from aiohttp.http_writer import StreamWriter
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from aiohttp.web_exceptions import HTTPException
from aiohttp.web_log import AccessLogger
from aiohttp.web_protocol import RequestPayloadError
from aiohttp.web_request import BaseRequest
from aiohttp.web_urldispatcher import UrlMappingMatchInfo
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from . import errors
from ._eager import start_eagerly
from .connection import (
    ASCII_HEAD,
    SERVES_WITHOUT_TASK,
    ServiceAppRunner,
    refusal_error,
    refusal_response,
)
from .flavors import flavor_of
from .front_render import render, render_lined, web_server_software
from .lined import LinedResponse
from .read_limits import Drain, ReadWatch, limits_of

log = logging.getLogger("azt_server_stub")

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_Factory = Callable[..., BaseRequest]

#: Most bytes one read of a plain TCP connection asks for. asyncio's selector transport
#: reads with ``sock.recv(transport.max_size)``, 256 KiB by default: CPython allocates the
#: whole buffer before the read, and above glibc's mmap threshold (128 KiB) that is a fresh
#: mapping each time (mmap, then mremap to the bytes read, then munmap: three system calls
#: and a page fault for every request). Below the threshold the buffer comes from the heap.
#: A larger request is read in several reads, as before.
READ_SIZE = 64 * 1024

#: The request aiohttp builds for a message its parser refused (its ``ERROR``).
_REFUSED = RawRequestMessage(
    "UNKNOWN",
    "/",
    HttpVersion10,
    CIMultiDictProxy(CIMultiDict()),
    (),
    True,
    None,
    False,
    False,
    URL("/"),
)

#: aiohttp's defaults for the connection settings the front end honours.
_DEFAULTS: dict[str, Any] = {
    "keepalive_timeout": 3630.0,
    "lingering_time": 10.0,
    "read_bufsize": 2**16,
    "max_line_size": 8190,
    "max_headers": 128,
    "max_field_size": 8190,
    "auto_decompress": True,
}


class FrontServer(web.Server):
    """The runner's protocol factory: one :class:`FrontProtocol` per connection.

    Takes over what ``web.Server`` was given (the application's ``_handle``, the
    runner's request factory and the connection settings) and composes the
    application's middleware chain once.

    Example::

        server = FrontServer(plain_server, app)  # in ServiceAppRunner._make_server
        await loop.create_server(server, "127.0.0.1", 0)
    """

    def __init__(self, plain: web.Server, app: web.Application) -> None:
        super().__init__(
            plain.request_handler,
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=asyncio.get_running_loop(),
            **plain._kwargs,
        )
        settings = {**_DEFAULTS, **plain._kwargs}
        self.settings = settings
        #: whether requests may be served in ``data_received`` (the application says so)
        self.eager = bool(app.get(SERVES_WITHOUT_TASK, False))
        self.front_connections: set[FrontProtocol] = set()
        logger = settings.get("access_log")
        logger_class = settings.get("access_log_class")
        self.access_logger: AbstractAccessLogger | None = None
        if logger is not None and logger_class is not None:
            fmt = settings.get("access_log_format", AccessLogger.LOG_FORMAT)
            self.access_logger = logger_class(logger, fmt)
        self.chain, self.match_info = _compose(app)
        #: the flavour whose error format refusals are written in
        self.flavor = flavor_of(app)
        #: the bounds on slow clients (read_limits.py)
        self.read_limits = limits_of(app)

    def __call__(self) -> FrontProtocol:  # type: ignore[override]
        return FrontProtocol(self)

    @property
    def connections(self) -> list[Any]:
        """The open connections (their protocols).

        Example::

            len(server.connections)  # 0 when idle and closed
        """
        return list(self.front_connections)

    def pre_shutdown(self) -> None:
        """Close the connections with no request in progress (the runner's first step).

        Example::

            server.pre_shutdown()
        """
        for conn in list(self.front_connections):
            conn.close_when_idle()

    async def shutdown(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 (aiohttp's)
        """Let requests in progress finish (at most ``timeout`` seconds), then close.

        Example::

            await server.shutdown(5.0)
        """
        pending = [c.worker for c in self.front_connections if c.worker is not None]
        if pending:
            await asyncio.wait(pending, timeout=timeout)
        for conn in list(self.front_connections):
            conn.abort()
        self.front_connections.clear()


def _compose(app: web.Application) -> tuple[_Handler | None, UrlMappingMatchInfo | None]:
    """The application's handler wrapped in its middlewares, in aiohttp's order.

    ``(None, None)`` unless the application has exactly one route for every method
    and path (the stub's: ``/{tail:.*}``): anything else is served by ``app._handle``.
    """
    routes = list(app.router.routes())
    if len(routes) != 1 or routes[0].method != hdrs.METH_ANY:
        return None, None
    route = routes[0]
    if route.resource is None or route.resource.canonical != "/{tail}":
        return None, None
    handler: _Handler = route.handler
    for middleware in reversed(app.middlewares):  # the first listed is the outermost
        handler = _bound(middleware, handler)
    match_info = UrlMappingMatchInfo({}, route)
    match_info.add_app(app)
    match_info.freeze()
    return handler, match_info


def _bound(middleware: Any, handler: _Handler) -> _Handler:
    """``middleware`` with ``handler`` as the next step, called as aiohttp calls it
    (``handler=`` by keyword): a closure, where aiohttp binds a ``functools.partial``
    with a keyword argument, which costs about twice as much per call."""

    def call(request: web.Request) -> Awaitable[web.StreamResponse]:
        return middleware(request, handler=handler)  # type: ignore[no-any-return]

    return call


class FrontProtocol(BaseProtocol):
    """One client connection: parse, serve requests in order, answer, keep alive.

    Example::

        protocol = server()  # FrontServer makes one per accepted connection
    """

    def __init__(self, server: FrontServer) -> None:
        loop = asyncio.get_running_loop()
        settings = server.settings
        parser = HttpRequestParser(
            self,
            loop,
            settings["read_bufsize"],
            max_line_size=settings["max_line_size"],
            max_field_size=settings["max_field_size"],
            max_headers=settings["max_headers"],
            payload_exception=RequestPayloadError,
            auto_decompress=settings["auto_decompress"],
        )
        super().__init__(loop, parser)
        self._server = server
        self._messages: deque[tuple[Any, StreamReader]] = deque()
        self._refused: HttpProcessingError | None = None
        self._closing = False
        self._current: BaseRequest | None = None
        self.worker: asyncio.Task[None] | None = None
        self._eager = False  # serving inside data_received (see _start_worker)
        self._idle_handle: asyncio.TimerHandle | None = None
        self._idle_since = loop.time()
        self._watch = ReadWatch(loop, server.read_limits, self._read_timed_out)
        self._drain: Drain | None = None
        #: whether every byte received so far was ASCII (False for good from the first
        #: that was not): then the heads of the requests parsed so far were
        self._ascii = True
        # what aiohttp's requests read from their protocol, fixed for the connection
        self.ssl_context: Any = None
        self.peername: Any = None
        self.sockname: Any = None

    # -- the connection --------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Register the connection and start its idle timer (asyncio calls it).

        Example::

            protocol.connection_made(transport)
        """
        super().connection_made(transport)
        if type(getattr(transport, "max_size", None)) is int:
            transport.max_size = READ_SIZE  # type: ignore[attr-defined]
        self.peername = transport.get_extra_info("peername")
        self.sockname = transport.get_extra_info("sockname")
        self.ssl_context = transport.get_extra_info("sslcontext")
        self._server.front_connections.add(self)
        self._arm_idle_timer()

    def connection_lost(self, exc: BaseException | None) -> None:
        """Forget the connection; a request still reading its body sees the loss.

        Example::

            protocol.connection_lost(None)  # asyncio calls it once the socket is closed
        """
        self._server.front_connections.discard(self)
        self._closing = True
        super().connection_lost(exc)
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        self._watch.cancel()
        if self._drain is not None:
            self._drain.close()
        if self._current is not None:
            self._current._cancel(exc if exc is not None else ConnectionResetError("lost"))
        for _, payload in self._messages:
            payload.set_exception(ConnectionResetError("Connection lost"))
        self._messages.clear()
        parser = self._parser
        self._parser = None
        if parser is not None:
            with contextlib.suppress(HttpProcessingError):
                parser.feed_eof()

    def eof_received(self) -> None:
        """Half-close from the client: finish what is queued (the transport closes).

        Example::

            protocol.eof_received()  # None: asyncio closes the transport
        """

    def close_when_idle(self) -> None:
        """Close now if no request is in progress, else after the current one.

        Example::

            protocol.close_when_idle()  # FrontServer.pre_shutdown does this for each
        """
        self._closing = True
        if self.worker is None and not self._eager and self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        """Drop the connection at once.

        Example::

            protocol.abort()  # FrontServer.shutdown, once the timeout has passed
        """
        self._closing = True
        if self.transport is not None:
            self.transport.abort()

    def _arm_idle_timer(self) -> None:
        timeout = float(self._server.settings["keepalive_timeout"])
        if timeout > 0 and self._idle_handle is None:
            self._idle_handle = self._loop.call_at(self._loop.time() + timeout, self._check_idle)

    def _check_idle(self) -> None:
        self._idle_handle = None
        if self.transport is None:
            return
        timeout = float(self._server.settings["keepalive_timeout"])
        idle_until = self._idle_since + timeout
        if self.worker is None and not self._messages and self._loop.time() >= idle_until:
            self.transport.close()
            return
        self._idle_handle = self._loop.call_at(
            max(idle_until, self._loop.time() + 1.0), self._check_idle
        )

    # -- reading ---------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        """Parse what arrived and make sure a worker serves the queued requests.

        Example::

            protocol.data_received(b"GET /devstoreaccount1/Tables HTTP/1.1\r\n...")
        """
        parser = self._parser
        if self._refused is not None or parser is None:
            if self._drain is not None:  # refused and answered: dropped, up to a bound
                self._drain.dropped(len(data))
            return  # (closing: the request in progress may still be reading its body)
        if self._ascii and not data.isascii():
            self._ascii = False
        try:
            messages, _upgraded, _tail = parser.feed_data(data)
        except HttpProcessingError as exc:
            self._refused = exc
            messages = []
        if messages:
            self._messages.extend(messages)
            message, payload = messages[-1]
            self._watch.parsed(payload, data, message.chunked)
        elif self._refused is None:
            self._watch.received(data)
        if self.worker is not None or self._eager or self._closing:
            return  # (the worker, or the request being served now, goes on to these)
        if messages or self._refused is not None:
            if self._server.eager:
                self._start_worker()
            else:
                self.worker = self._loop.create_task(self._serve())

    def resume_reading(self, resume_parser: bool = True) -> None:
        """Resume reading, unless nothing was paused (a body read calls it after every chunk).

        aiohttp's resume re-feeds the parser (``data_received(b"")``) for data held back
        while paused; with nothing paused nothing is held back, so there is nothing to do.
        Only :meth:`pause_reading` pauses this protocol's parser and transport (it never
        holds reading for a message queue); ``_buffer_paused`` exists from aiohttp 3.14.3.

        Example::

            protocol.resume_reading()  # aiohttp's payload streams call it
        """
        if self._reading_paused or getattr(self, "_buffer_paused", False):
            super().resume_reading(resume_parser)

    def _start_worker(self) -> None:
        """Serve the queued requests now, in this callback, up to their first real wait.

        A request that never waits (a memory-store read or write whose body came with
        its head) is answered before ``data_received`` returns: no task, no second pass
        of the event loop before the answer leaves. From the first wait on, a task
        (``self.worker``) goes on with it (:func:`~azt_server_stub._eager.start_eagerly`).
        """
        self._eager = True
        try:
            self.worker = start_eagerly(self._serve(), self._loop)
        finally:
            self._eager = False

    # -- serving ---------------------------------------------------------------

    async def _serve(self) -> None:
        server = self._server
        try:
            while self.transport is not None:
                if not self._messages:
                    if self._refused is not None:
                        await self._answer_refusal(self._refused)
                    return
                message, payload = self._messages.popleft()
                server.requests_count += 1
                keep_alive = await self._serve_one(message, payload)
                if not keep_alive or self._closing:
                    if self.transport is not None:
                        self.transport.close()
                    return
        except Exception:  # pragma: no cover - a bug in this module
            log.exception("stub bug in the connection front end")
            if self.transport is not None:
                self.transport.abort()
        finally:
            self.worker = None
            self._idle_since = self._loop.time()

    async def _serve_one(self, message: Any, payload: StreamReader) -> bool:
        """Serve one request; whether the connection stays open."""
        server = self._server
        loop = self._loop
        writer = StreamWriter(self, loop)
        task = asyncio.current_task(loop)  # None while served in data_received on 3.11
        # the request only reads the protocol's transport (and cancels through it)
        request = server.request_factory(message, payload, self, writer, task)  # type: ignore[arg-type]
        if self._ascii:
            request._state[ASCII_HEAD] = True  # (state_of's dict, set without a call)
        access = server.access_logger
        start = loop.time() if access is not None else 0.0
        self._current = request
        try:
            try:
                if (
                    server.chain is not None
                    and message.path[:1] == "/"
                    and hdrs.EXPECT not in message.headers
                ):
                    request._match_info = server.match_info  # type: ignore[attr-defined]
                    response = await server.chain(request)  # type: ignore[arg-type]
                else:  # aiohttp's own routing and Expect handling
                    response = await server.request_handler(request)
            except HTTPException as exc:
                response = exc
            except TimeoutError:
                response = self._failure(writer, None, timed_out=True)
            except Exception as exc:
                response = self._failure(writer, exc)
        finally:
            self._current = None
        transport = self.transport
        if transport is None:
            return False
        lined = render_lined(message, response) if type(response) is LinedResponse else None
        if lined is not None:  # (an answer that has its head as text: lined.py)
            transport.write(lined)
            keep_alive = True
        elif not response.prepared and _plain(response):  # _write's plain answer, inline
            head, body, keep_alive = render(message, response)  # type: ignore[arg-type]
            transport.write(head + body if body else head)
        else:
            keep_alive = await self._write(request, message, response, writer)
        if access is not None and access.enabled:
            access.log(request, response, loop.time() - start)
        if not payload.is_eof():
            keep_alive = await self._linger(payload) and keep_alive
        payload.set_exception(RuntimeError("the request body was read after the answer"))
        return keep_alive

    def _failure(
        self, writer: StreamWriter, exc: BaseException | None, *, timed_out: bool = False
    ) -> web.StreamResponse:
        """The answer to a handler that escaped every middleware (a stub bug)."""
        if writer.output_size > 0:
            raise ConnectionError("the response has started; the error cannot be sent")
        flavor = self._server.flavor
        if timed_out:
            return refusal_response(errors.operation_timed_out(), flavor)
        log.error("stub bug while serving a request", exc_info=exc)
        return refusal_response(errors.internal_error(), flavor)

    async def _answer_refusal(self, exc: HttpProcessingError) -> None:
        """Answer a request the parser refused, in the service's format, and close."""
        log.debug("refused an unparsable request: %s", exc.message or exc)
        writer = StreamWriter(self, self._loop)
        task = asyncio.current_task(self._loop)
        factory = self._server.request_factory
        request = factory(_REFUSED, EMPTY_PAYLOAD, self, writer, task)  # type: ignore[arg-type]
        response = refusal_response(refusal_error(exc), self._server.flavor)
        await self._write(request, _REFUSED, response, writer)
        self._watch.cancel()
        transport = self.transport
        if transport is not None and not transport.is_closing():
            # a client still sending would lose the answer to a reset: drain, then close
            self._drain = Drain(self._loop, transport, self._server.read_limits)

    def _read_timed_out(self, what: str) -> None:
        """A client took longer than the read limits allow to send a head or a body:
        the connection is closed, unanswered (as Azure's HTTP server does)."""
        log.debug("closing a connection whose request %s is too slow to arrive", what)
        self._closing = True
        body = self._watch.body
        if body is not None:
            body.set_exception(RequestPayloadError(f"the request {what} arrived too slowly"))
        if self.transport is not None:
            self.transport.close()

    async def _linger(self, payload: StreamReader) -> bool:
        """Read and drop the rest of an unread body (aiohttp's lingering read).

        Whether it ended within the lingering time (else the connection closes).
        """
        lingering = float(self._server.settings["lingering_time"])
        if self._closing or lingering <= 0:
            return False
        if asyncio.current_task(self._loop) is None:
            await asyncio.sleep(0)  # leave data_received: asyncio.timeout needs the task
        deadline = self._loop.time() + lingering
        try:
            while not payload.is_eof():
                left = deadline - self._loop.time()
                if left <= 0:
                    return False
                async with asyncio.timeout(left):
                    await payload.readany()
        except (TimeoutError, RequestPayloadError, ConnectionError):
            return False
        return True

    # -- writing ---------------------------------------------------------------

    async def _write(
        self,
        request: BaseRequest,
        message: RawRequestMessage,
        response: web.StreamResponse,
        writer: StreamWriter,
    ) -> bool:
        """Send ``response`` to ``request`` (parsed as ``message``); whether the connection
        may stay open."""
        if response.prepared or not _plain(response):
            await response.prepare(request)
            await response.write_eof()
            return bool(response.keep_alive)
        transport = self.transport
        assert transport is not None
        head, body, keep_alive = render(message, response)  # type: ignore[arg-type]
        transport.write(head + body if body else head)
        return keep_alive


def _plain(response: web.StreamResponse) -> bool:
    """Whether ``render`` answers exactly as aiohttp's writer would."""
    if type(response) is not web.Response and type(response) is not LinedResponse:
        return False
    body = response._body
    return (
        (body is None or isinstance(body, bytes))
        and not response._chunked
        and not response._compression
        and not response._cookies
        and response._compressed_body is None
    )


#: The private attributes of aiohttp's objects that this module reads or sets.
_RESPONSE_ATTRIBUTES = (
    "_body",
    "_chunked",
    "_compression",
    "_cookies",
    "_compressed_body",
    "_status",
    "_reason",
    "_headers",
)

#: A request whose parse :func:`_parser_fits` checks (a keep-alive GET and a POST with a body).
_PROBE = (
    b"GET /a/Tables HTTP/1.1\r\nHost: h\r\n\r\n"
    b"POST /a/t HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
)


def _responses_fit() -> bool:
    """Whether ``web.Response``'s private attributes mean what ``_plain``/``render`` read.

    Each is checked by its meaning, not its name: the body set, the status and reason
    (also as ``set_status`` changes them), the headers (``.headers`` itself), the flags
    that the chunked, compressed, cookie and force-close calls turn on.
    """
    plain = web.Response(body=b"x")
    if not all(hasattr(plain, name) for name in (*_RESPONSE_ATTRIBUTES, "_keep_alive")):
        return False
    if not (
        plain._body == b"x"
        and plain._status == 200
        and plain._reason == "OK"
        and plain._headers is plain.headers
        and plain._chunked is False
        and not plain._compression
        and not plain._cookies
        and plain._compressed_body is None
        and plain._keep_alive is None
    ):
        return False
    chunked = web.Response(body=b"x")
    chunked.enable_chunked_encoding()
    compressed = web.Response(body=b"x")
    compressed.enable_compression()
    cookie = web.Response(body=b"x")
    cookie.set_cookie("c", "v")
    closing = web.Response(body=b"x")
    closing.force_close()
    gone = web.Response(status=201, reason="Made")
    gone.set_status(410, "Gone")
    return (
        gone._status == 410
        and gone._reason == "Gone"
        and chunked._chunked is True
        and bool(compressed._compression)
        and bool(cookie._cookies)
        and closing._keep_alive is False
    )


def _protocol_fits() -> bool:
    """Whether aiohttp's ``BaseProtocol`` owns the parser as :class:`FrontProtocol` expects.

    Since aiohttp 3.14 ``BaseProtocol(loop, parser)`` keeps the parser, and flow control
    pauses it and resumes it through ``data_received(b"")``; older releases take only
    the loop (the protocol could not even be built: asyncio drops that error silently
    and closes each connection unanswered).
    """
    try:
        parameters = inspect.signature(BaseProtocol.__init__).parameters
    except (TypeError, ValueError):
        return False
    return (
        "parser" in parameters
        and "_parser" in getattr(BaseProtocol, "__slots__", ())
        and callable(getattr(BaseProtocol, "pause_reading", None))
        and "resume_parser" in inspect.signature(BaseProtocol.resume_reading).parameters
    )


def _parser_fits(protocol: FrontProtocol) -> bool:
    """Whether ``protocol``'s parser hands back what :meth:`FrontProtocol.data_received`
    and ``_serve_one`` read: ``(messages, upgraded, tail)``, each message a
    ``(RawRequestMessage, StreamReader)`` pair with the request's method, target,
    version, headers and keep-alive, the body in the payload stream.

    Feeds :data:`_PROBE` to a protocol with no transport (no request is served).
    """
    parser = protocol._parser
    if parser is None:
        return False
    try:
        result = parser.feed_data(_PROBE)
        messages, upgraded, _tail = result
        (get, get_payload), (post, post_payload) = messages
    except Exception:
        return False
    return (
        isinstance(get, RawRequestMessage)
        and isinstance(post, RawRequestMessage)
        and (get.method, get.path, get.version) == ("GET", "/a/Tables", HttpVersion11)
        and (post.method, post.path) == ("POST", "/a/t")
        and get.headers.get(hdrs.HOST) == "h"
        and get.should_close is False
        and post.should_close is True
        and not upgraded
        and isinstance(get_payload, StreamReader)
        and isinstance(post_payload, StreamReader)
        and post_payload.read_nowait() == b"{}"
        and post_payload.is_eof()
    )


@functools.cache
def front_supported() -> bool:
    """Whether the installed aiohttp has what :class:`FrontProtocol` relies on, with the
    meaning it relies on (the response attributes by their effect, the protocol's
    parser ownership and flow control, the request's ``_cancel``).

    Checked once per process; where it is not (an older aiohttp, or a future one that
    changed one of them), the runner serves through aiohttp's own connection handler.
    :class:`FrontAppRunner` also feeds a request to a new protocol's parser first.

    Example::

        >>> front_supported()
        True
    """
    return (
        _responses_fit()
        and _protocol_fits()
        and callable(getattr(BaseRequest, "_cancel", None))
        and callable(getattr(HttpRequestParser, "feed_data", None))
    )


class FrontAppRunner(ServiceAppRunner):
    """The stub's runner: serves through :class:`FrontProtocol` (aiohttp's handler if
    the installed aiohttp lacks what it needs), parser refusals in the service's format.

    Which one serves is decided once, when the runner is set up: :func:`front_supported`,
    then a trial protocol (built without a connection) whose parser must read a probe
    request as the front end expects. Either way the answers are the same (tests/stub/
    test_front.py compares them byte for byte); aiohttp's handler is only slower.

    Example::

        runner = FrontAppRunner(create_app(StubConfig()), handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
    """

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        if not front_supported():
            log.warning(
                "aiohttp %s lacks what the stub's front end needs: serving through "
                "aiohttp's connection handler",
                aiohttp_version(),
            )
            return server
        front = FrontServer(server, self.app)
        try:
            fits = _parser_fits(front())
        except Exception:
            fits = False
        if not fits:
            log.warning(
                "aiohttp %s parses requests unlike the stub's front end expects: serving "
                "through aiohttp's connection handler",
                aiohttp_version(),
            )
            return server
        return front


def aiohttp_version() -> str:
    """The installed aiohttp's version (named in the runner's fallback warning).

    Example::

        >>> aiohttp_version().startswith("3.")
        True
    """
    from aiohttp import __version__

    return __version__


__all__ = [
    "FrontAppRunner",
    "FrontProtocol",
    "FrontServer",
    "aiohttp_version",
    "front_supported",
    "render",
    "web_server_software",
]
