"""Running the stub: in-process (:class:`StubServer`) or on a background thread.

Example::

    >>> import asyncio
    >>> async def main() -> str:
    ...     async with StubServer() as stub:
    ...         return stub.connection_string.split(";")[1]
    >>> asyncio.run(main())
    'AccountName=devstoreaccount1'
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import ssl
import threading
from pathlib import Path
from types import TracebackType

from aiohttp import web

from .access_log import AccessLogger
from .app import DEV_ACCOUNT, StubConfig, connection_string, create_app
from .backend import Backend
from .explorer import PREFIX as EXPLORER_PREFIX
from .explorer import RecordingAccessLogger, is_loopback_host
from .flavors import flavor_named
from .front import FrontAppRunner
from .proxy import ProxyFront, ProxyOptions


class StubServer:
    """The Table service stub as an async context manager on a (by default free) port.

    ``config``: accounts, durable location and auth switches (default: the development
    account, in memory). ``ssl_context``: serve HTTPS. ``port=0`` picks a free port.
    ``access_log``: log every request to the ``azt_server_stub.access`` logger (INFO:
    method, path, status, duration, request ids; see :class:`AccessLogger`).
    ``flavor``: ``"storage"`` or ``"cosmos"`` (answer as the Azure Cosmos DB Table API;
    overrides ``config.flavor``). ``explorer``: serve the data explorer page at
    :attr:`explorer_url` (overrides ``config.explorer``); with a host that is not loopback
    it is refused (``ValueError``) unless ``explorer_remote`` is also set. ``proxy``: also
    listen as an HTTP proxy for the accounts' product host names (opt-in, loopback only,
    nothing forwarded; see :mod:`azt_server_stub.proxy`).

    Example::

        async with StubServer() as stub:
            client = TableServiceClient.from_connection_string(stub.connection_string)
    """

    def __init__(
        self,
        config: StubConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
        access_log: bool = False,
        flavor: str | None = None,
        explorer: bool | None = None,
        explorer_remote: bool = False,
        proxy: ProxyOptions | None = None,
    ) -> None:
        self.config = config or StubConfig()
        if flavor is not None:
            flavor_named(flavor)  # ValueError for an unknown name, before anything starts
            self.config = dataclasses.replace(self.config, flavor=flavor.lower())
        if explorer is not None or explorer_remote:
            self.config = dataclasses.replace(
                self.config,
                explorer=self.config.explorer if explorer is None else explorer,
                explorer_remote=self.config.explorer_remote or explorer_remote,
            )
        if self.config.explorer and not self.config.explorer_remote and not is_loopback_host(host):
            raise ValueError(
                f"the explorer is served on loopback binds only ({host!r} is not); "
                "allow it elsewhere explicitly (explorer_remote=True, --explorer-remote)"
            )
        self._access_log = access_log
        self.host = host
        self._port = port
        self._ssl = ssl_context
        self._runner: web.AppRunner | None = None
        self._app: web.Application | None = None
        self._proxy_options = proxy
        self._proxy: ProxyFront | None = None

    @property
    def proxy_url(self) -> str | None:
        """``http://127.0.0.1:{port}`` of the running proxy mode, ``None`` without it.

        Example::

            >>> StubServer().proxy_url is None
            True
            >>> async def proxied() -> bool:
            ...     async with StubServer(proxy=ProxyOptions()) as stub:
            ...         return stub.proxy_url.startswith("http://127.0.0.1:")
            >>> asyncio.run(proxied())
            True
        """
        if self._proxy is None:
            return None
        return f"http://127.0.0.1:{self._proxy.port}"

    def _relay_target(self) -> tuple[str, int, bool]:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return host, self._port, self._ssl is not None

    @property
    def port(self) -> int:
        """The port actually listened on (after start).

        Before :meth:`start` it is the port asked for (``0``: any free port).

        Example::

            >>> StubServer(port=10002).port
            10002
            >>> async def listening_port() -> int:
            ...     async with StubServer() as stub:
            ...         return stub.port
            >>> asyncio.run(listening_port()) > 0
            True
        """
        return self._port

    @property
    def flavor(self) -> str:
        """The service flavour served: ``"storage"`` or ``"cosmos"``.

        Example::

            >>> StubServer().flavor, StubServer(flavor="cosmos").flavor
            ('storage', 'cosmos')
        """
        return self.config.flavor

    @property
    def scheme(self) -> str:
        """``http``, or ``https`` when an ``ssl_context`` was given.

        Example::

            >>> StubServer().scheme
            'http'
            >>> StubServer(ssl_context=ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)).scheme
            'https'
        """
        return "https" if self._ssl is not None else "http"

    @property
    def endpoint(self) -> str:
        """``{scheme}://{host}:{port}``: the service root (account paths go below it).

        An IPv6 host is bracketed.

        Example::

            >>> StubServer(port=10002).endpoint
            'http://127.0.0.1:10002'
            >>> StubServer(host="::1", port=10002).endpoint
            'http://[::1]:10002'
        """
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self._port}"

    @property
    def explorer_url(self) -> str | None:
        """The data explorer's address, or None when it is off.

        Example::

            >>> StubServer(port=10002, explorer=True).explorer_url
            'http://127.0.0.1:10002/_explorer/'
            >>> StubServer(port=10002).explorer_url is None
            True
        """
        return f"{self.endpoint}{EXPLORER_PREFIX}/" if self.config.explorer else None

    def table_endpoint(self, account: str = DEV_ACCOUNT) -> str:
        """The path-style table endpoint of ``account``.

        Example::

            >>> StubServer(port=10002).table_endpoint()
            'http://127.0.0.1:10002/devstoreaccount1'
            >>> StubServer(port=10002).table_endpoint("other")
            'http://127.0.0.1:10002/other'
        """
        return f"{self.endpoint}/{account}"

    @property
    def account(self) -> str:
        """The first configured account (``devstoreaccount1`` by default).

        Example::

            >>> StubServer().account
            'devstoreaccount1'
            >>> StubServer(StubConfig(accounts={"first": ["AAAA"], "second": ["BBBB"]})).account
            'first'
        """
        return next(iter(self.config.accounts))

    @property
    def connection_string(self) -> str:
        """A connection string for the first configured account.

        Example::

            >>> StubServer(StubConfig(accounts={"a": ["AAAA"]}), port=10002).connection_string
            'DefaultEndpointsProtocol=http;AccountName=a;AccountKey=AAAA;TableEndpoint=http://127.0.0.1:10002/a;'
        """
        return self.connection_string_for(self.account)

    def connection_string_for(self, account: str) -> str:
        """A connection string for any configured account (KeyError if unknown).

        Example::

            >>> stub = StubServer(StubConfig(accounts={"a": ["AAAA"], "b": ["BBBB"]}))
            >>> "AccountName=b;AccountKey=BBBB;" in stub.connection_string_for("b")
            True
            >>> stub.connection_string_for("c")
            Traceback (most recent call last):
            ...
            KeyError: 'c'
        """
        key = self.config.accounts[account][0]
        return connection_string(self.endpoint, account, key)

    @property
    def backend(self) -> Backend:
        """The running stub's backend (for tests that load or inspect data directly).

        ``RuntimeError`` while the stub is not running.

        Example::

            >>> async def seeded() -> str | None:
            ...     async with StubServer() as stub:
            ...         stub.backend.create_table(stub.account, "Seeded")
            ...         return stub.backend.table_name(stub.account, "seeded")
            >>> asyncio.run(seeded())
            'Seeded'
            >>> StubServer().backend
            Traceback (most recent call last):
            ...
            RuntimeError: the stub is not running
        """
        if self._app is None:
            raise RuntimeError("the stub is not running")
        from .app import BACKEND_KEY

        return self._app[BACKEND_KEY]

    async def start(self) -> StubServer:
        """Start listening; returns self. ``RuntimeError`` if it is already running.

        Prefer ``async with StubServer() as stub:``, which stops it on exit.

        Example::

            >>> async def start_and_stop() -> str:
            ...     stub = await StubServer().start()
            ...     try:
            ...         return stub.scheme
            ...     finally:
            ...         await stub.stop()
            >>> asyncio.run(start_and_stop())
            'http'
        """
        if self._runner is not None:
            raise RuntimeError("the stub is already running")
        app = create_app(self.config)
        recording = self.config.explorer  # the explorer lists recent requests
        logs = self._access_log or recording
        access = logging.getLogger("azt_server_stub.access") if logs else None
        logger_class = RecordingAccessLogger if recording else AccessLogger
        if recording and not self._access_log:
            access = _quiet_access_logger()
        runner = FrontAppRunner(
            app, access_log=access, access_log_class=logger_class, handle_signals=False
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._port, ssl_context=self._ssl)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        addresses = runner.addresses
        if addresses:
            self._port = int(addresses[0][1])
        self._runner = runner
        self._app = app
        if self._proxy_options is not None:
            front = ProxyFront(
                self._proxy_options, self._relay_target, lambda: self.config.accounts
            )
            try:
                await front.start()
            except BaseException:
                await self.stop()
                raise
            self._proxy = front
        return self

    async def stop(self) -> None:
        """Stop listening and close the backend (idempotent).

        Example::

            >>> async def stop_twice() -> bool:
            ...     stub = await StubServer().start()
            ...     await stub.stop()
            ...     await stub.stop()  # a second stop does nothing
            ...     try:
            ...         stub.backend
            ...     except RuntimeError:
            ...         return True
            ...     return False
            >>> asyncio.run(stop_twice())
            True
        """
        front, self._proxy = self._proxy, None
        if front is not None:
            await front.stop()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        self._app = None

    async def __aenter__(self) -> StubServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def _quiet_access_logger() -> logging.Logger:
    """A logger that writes nothing: the explorer records requests, no log was asked for."""
    quiet = logging.getLogger("azt_server_stub.access.explorer-only")
    quiet.propagate = False
    quiet.disabled = True
    return quiet


class ThreadedStubServer:
    """A :class:`StubServer` on its own event loop in a background thread.

    For synchronous code (e.g. the sync ``azure-data-tables`` client). Use as a
    context manager; everything is stopped on exit.

    Example::

        with ThreadedStubServer() as stub:
            TableServiceClient.from_connection_string(stub.connection_string)
    """

    def __init__(self, config: StubConfig | None = None, **kwargs: object) -> None:
        self.server = StubServer(config, **kwargs)  # type: ignore[arg-type]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def connection_string(self) -> str:
        """See :attr:`StubServer.connection_string`.

        Example::

            >>> stub = ThreadedStubServer(StubConfig(accounts={"a": ["AAAA"]}), port=10002)
            >>> stub.connection_string
            'DefaultEndpointsProtocol=http;AccountName=a;AccountKey=AAAA;TableEndpoint=http://127.0.0.1:10002/a;'
        """
        return self.server.connection_string

    @property
    def endpoint(self) -> str:
        """See :attr:`StubServer.endpoint`.

        Example::

            >>> ThreadedStubServer(port=10002).endpoint
            'http://127.0.0.1:10002'
        """
        return self.server.endpoint

    @property
    def proxy_url(self) -> str | None:
        """See :attr:`StubServer.proxy_url`.

        Example::

            >>> ThreadedStubServer().proxy_url is None
            True
        """
        return self.server.proxy_url

    @property
    def backend(self) -> Backend:
        """See :attr:`StubServer.backend` (call it only between requests).

        Example::

            >>> with ThreadedStubServer() as stub:
            ...     stub.backend.create_table(stub.server.account, "Seeded")
            'Seeded'
        """
        return self.server.backend

    def connection_string_for(self, account: str) -> str:
        """See :meth:`StubServer.connection_string_for`.

        Example::

            >>> stub = ThreadedStubServer(StubConfig(accounts={"a": ["AAAA"], "b": ["BBBB"]}))
            >>> "AccountName=b;AccountKey=BBBB;" in stub.connection_string_for("b")
            True
        """
        return self.server.connection_string_for(account)

    def start(self) -> ThreadedStubServer:
        """Start the loop thread and the server; returns self.

        Prefer ``with ThreadedStubServer() as stub:``, which stops it on exit.

        Example::

            >>> stub = ThreadedStubServer().start()
            >>> stub.endpoint.startswith("http://127.0.0.1:"), stub.server.port > 0
            (True, True)
            >>> stub.stop()
        """
        loop = asyncio.new_event_loop()
        self._loop = loop
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="azt-stub", daemon=True)
        self._thread.start()
        ready.wait()
        try:
            asyncio.run_coroutine_threadsafe(self.server.start(), loop).result(timeout=30)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server and the loop thread, closing the loop (idempotent).

        Example::

            >>> stub = ThreadedStubServer().start()
            >>> stub.stop()
            >>> stub.stop()  # a second stop does nothing
        """
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.server.stop(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            loop.close()
            self._loop = self._thread = None

    def __enter__(self) -> ThreadedStubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def load_ssl_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server TLS context from PEM certificate and key files.

    Example::

        ctx = load_ssl_context(Path("cert.pem"), Path("key.pem"))
    """
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(cert), str(key))
    return ctx
