"""Proxy mode (opt-in): the stub as the HTTP proxy of clients that address its accounts by
their product host names (``{account}.table.core.windows.net``).

Some programs cannot be pointed at an endpoint: they build
``https://{account}.table.core.windows.net`` from an account name and only let their
*proxy* be configured (the retired Python SDK's own test suite does so for its SAS tests,
through ``TableService.set_proxy``). With a proxy port, the stub answers for its own
accounts there, as a TLS-inspecting proxy would, and never forwards anything anywhere:

* ``CONNECT {account}.table.core.windows.net:443``: ``200``, then the stub ends the
  tunnel's TLS itself with the proxy certificate (which must name the product host, e.g.
  ``*.table.core.windows.net``, and be trusted by the client) and serves the requests inside;
* an absolute-form request ``GET http://{account}.table.core.windows.net/...``: served as
  one request (``Connection: close``);
* the proxy port itself speaks plain HTTP or, when the first byte is a TLS handshake and a
  certificate is configured, TLS (an ``https://`` proxy URL, as the retired SDK's
  ``set_proxy`` gives ``requests`` for https targets);
* a request or tunnel to the stub's own listener (``127.0.0.1:{port}``, as a client whose
  every request goes through the proxy sends): relayed to it;
* any other host (another account, another service, any other name), another port, or an
  origin-form request: ``403`` (a foreign host) or ``400``; with ``credentials`` set, a
  request without the matching ``Proxy-Authorization: Basic`` gets ``407``.

Served requests go to the stub's own listener over loopback; the proxy listens on
loopback only and accepts loopback peers only.

Example::

    async with StubServer(proxy=ProxyOptions(ssl_context=ctx)) as stub:
        print(stub.proxy_url)   # http://127.0.0.1:<port>
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import ipaddress
import logging
import socket
import ssl
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

_log = logging.getLogger(__name__)

#: Host name suffixes under which an account is served in proxy mode (storage, Cosmos DB).
PRODUCT_SUFFIXES: tuple[str, ...] = ("table.core.windows.net", "table.cosmos.azure.com")
_TLS_HANDSHAKE = 0x16
_MAX_HEAD = 64 * 1024
_HEAD_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class ProxyOptions:
    """How the stub's proxy port is run.

    ``port``: ``0`` picks a free one. ``ssl_context``: a server context whose certificate
    names ``127.0.0.1`` (for ``https://`` proxy URLs) and the product hosts (for CONNECT
    tunnels); without it only plain absolute-form ``http://`` requests are served.
    ``credentials``: ``(user, password)`` the client must send (Basic), or ``None``.
    ``suffixes``: the host name suffixes the accounts are served under.

    Example::

        >>> ProxyOptions().port, ProxyOptions().suffixes[0]
        (0, 'table.core.windows.net')
    """

    port: int = 0
    ssl_context: ssl.SSLContext | None = None
    credentials: tuple[str, str] | None = None
    suffixes: tuple[str, ...] = PRODUCT_SUFFIXES


def served_account(host: str, accounts: Iterable[str], suffixes: Iterable[str]) -> str | None:
    """The account ``host`` (without port) names, if it is one of ``accounts`` under one of
    ``suffixes`` (``-secondary`` names the same account); otherwise ``None``.

    Example::

        >>> served_account("acct.table.core.windows.net", ["acct"], PRODUCT_SUFFIXES)
        'acct'
        >>> served_account("acct-secondary.table.core.windows.net", ["acct"], PRODUCT_SUFFIXES)
        'acct'
        >>> served_account("other.table.core.windows.net", ["acct"], PRODUCT_SUFFIXES) is None
        True
        >>> served_account("acct.blob.core.windows.net", ["acct"], PRODUCT_SUFFIXES) is None
        True
    """
    label, dot, rest = host.lower().rstrip(".").partition(".")
    if not dot or rest not in {s.lower() for s in suffixes}:
        return None
    name = label.removesuffix("-secondary")
    return name if name in set(accounts) else None


def _split_authority(authority: str, default_port: int) -> tuple[str, int] | None:
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port = rest.removeprefix(":")
    elif authority.count(":") == 1:
        host, _, port = authority.partition(":")
    elif ":" in authority:
        return None
    else:
        host, port = authority, ""
    if not host:
        return None
    if not port:
        return host, default_port
    if not port.isdigit():
        return None
    return host, int(port)


def _is_loopback(address: object) -> bool:
    if not isinstance(address, tuple) or not address:
        return False
    try:
        return ipaddress.ip_address(str(address[0])).is_loopback
    except ValueError:
        return False


def _answer(status: int, reason: str, text: str, extra: str = "") -> bytes:
    body = (text + "\n").encode()
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
    ).encode() + body


class ProxyFront:
    """The proxy listener of a running stub (built by :class:`~azt_server_stub.StubServer`).

    ``target``: returns the stub's own ``(host, port, tls)`` to relay served requests to;
    ``accounts``: returns the stub's account names.

    Example::

        front = ProxyFront(ProxyOptions(), lambda: ("127.0.0.1", 10002, False), lambda: ["a"])
    """

    def __init__(
        self,
        options: ProxyOptions,
        target: Callable[[], tuple[str, int, bool]],
        accounts: Callable[[], Iterable[str]],
    ) -> None:
        self.options = options
        self._target = target
        self._accounts = accounts
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = options.port

    async def start(self) -> None:
        """Listen on ``127.0.0.1``.

        Example::

            await front.start()
        """
        sock = socket.create_server(("127.0.0.1", self.options.port))
        sock.setblocking(False)
        self._sock = sock
        self.port = int(sock.getsockname()[1])
        self._accepting = asyncio.get_running_loop().create_task(self._accept(sock))

    async def stop(self) -> None:
        """Stop listening and end every open proxy connection (idempotent).

        Example::

            await front.stop()
        """
        accepting, self._accepting = self._accepting, None
        tasks = [t for t in (accepting, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        # gather, not suppress(CancelledError) around each await: a cancellation of
        # close() itself must propagate, the tasks' own outcomes are absorbed
        await asyncio.gather(*tasks, return_exceptions=True)
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _accept(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, peer = await loop.sock_accept(sock)
            except OSError as exc:  # out of descriptors, an aborted handshake: keep listening
                _log.warning("proxy accept failed: %s", exc)
                await asyncio.sleep(0.05)
                continue
            if not _is_loopback(peer):
                conn.close()
                continue
            self._spawn(self._connection(conn))

    async def _readable(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(conn.fileno(), wake)
        try:
            async with asyncio.timeout(_HEAD_SECONDS):
                await ready
        finally:
            loop.remove_reader(conn.fileno())

    async def _connection(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            await self._readable(conn)
            first = conn.recv(1, socket.MSG_PEEK)
        except (OSError, TimeoutError):
            conn.close()
            return
        tls = bool(first) and first[0] == _TLS_HANDSHAKE
        if tls and self.options.ssl_context is None:
            conn.close()  # a TLS client with no certificate to answer it with
            return
        done: asyncio.Future[None] = loop.create_future()

        def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._spawn(self._serve(reader, writer, done))

        reader = asyncio.StreamReader(limit=_MAX_HEAD)
        protocol = asyncio.StreamReaderProtocol(reader, connected)
        try:
            await loop.connect_accepted_socket(
                lambda: protocol, conn, ssl=self.options.ssl_context if tls else None
            )
        except (OSError, TimeoutError):  # ssl.SSLError is an OSError
            conn.close()
            return
        await done

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, done: asyncio.Future[None]
    ) -> None:
        try:
            await self._serve_head(reader, writer)
        except (OSError, ssl.SSLError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except TimeoutError:
            with contextlib.suppress(OSError):
                writer.write(_answer(408, "Request Timeout", "request head timed out"))
        except Exception:  # a proxy connection never takes the stub down
            _log.exception("proxy connection failed")
            with contextlib.suppress(OSError):
                writer.write(_answer(502, "Bad Gateway", "the proxy connection failed"))
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            if not done.done():
                done.set_result(None)

    async def _serve_head(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
        async with asyncio.timeout(_HEAD_SECONDS):
            head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            writer.write(_answer(400, "Bad Request", "not an HTTP/1.x request"))
            return
        method, target, version = parts
        headers = [line for line in lines[1:] if line]
        if not self._authorized(headers):
            writer.write(
                _answer(
                    407,
                    "Proxy Authentication Required",
                    "proxy credentials required",
                    'Proxy-Authenticate: Basic realm="azt-stub"\r\n',
                )
            )
            return
        if method == "CONNECT":
            await self._tunnel(target, reader, writer)
        elif target.lower().startswith("http://"):
            await self._forward(method, target, version, headers, reader, writer)
        else:
            writer.write(
                _answer(400, "Bad Request", "a proxy takes CONNECT or absolute-form requests")
            )

    def _authorized(self, headers: list[str]) -> bool:
        wanted = self.options.credentials
        if wanted is None:
            return True
        for line in headers:
            name, _, value = line.partition(":")
            if name.strip().lower() != "proxy-authorization":
                continue
            scheme, _, token = value.strip().partition(" ")
            if scheme.lower() != "basic":
                return False
            try:
                user, _, password = base64.b64decode(token.strip()).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return False
            return (user, password) == wanted
        return False

    def _refusal(self, host: str) -> bytes:
        return _answer(
            403,
            "Forbidden",
            f"azt-stub proxy mode serves only its own accounts' hosts; {host!r} is not one "
            "of them and nothing is forwarded",
        )

    async def _tunnel(
        self, authority: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        hostport = _split_authority(authority, 443)
        if hostport is None:
            writer.write(_answer(400, "Bad Request", "CONNECT needs host:port"))
            return
        host, port = hostport
        if self._is_own(host, port):
            # the stub's own listener: the tunnel carries the client's TLS (or plain HTTP)
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
            await self._relay(b"", reader, writer, tls_upstream=False)
            return
        if port != 443 or served_account(host, self._accounts(), self.options.suffixes) is None:
            writer.write(self._refusal(authority))
            return
        context = self.options.ssl_context
        if context is None:
            writer.write(
                _answer(502, "Bad Gateway", "the stub has no proxy certificate for TLS tunnels")
            )
            return
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        await writer.start_tls(context)
        await self._relay(b"", reader, writer)

    async def _forward(
        self,
        method: str,
        target: str,
        version: str,
        headers: list[str],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        authority, _, path = target[len("http://") :].partition("/")
        hostport = _split_authority(authority, 80)
        if hostport is None:
            writer.write(_answer(400, "Bad Request", "absolute-form target without a host"))
            return
        host, port = hostport
        own = self._is_own(host, port) and not self._target()[2]
        if not own and (
            port != 80 or served_account(host, self._accounts(), self.options.suffixes) is None
        ):
            writer.write(self._refusal(authority))
            return
        hop = {"connection", "proxy-connection", "proxy-authorization", "keep-alive", "host"}
        kept = [line for line in headers if line.partition(":")[0].strip().lower() not in hop]
        head = "\r\n".join(
            [f"{method} /{path} {version}", f"Host: {authority}", *kept, "Connection: close"]
        )
        await self._relay((head + "\r\n\r\n").encode("latin-1"), reader, writer)

    def _is_own(self, host: str, port: int) -> bool:
        """``host:port`` is the stub's own listener (by address or as ``localhost``)."""
        own_host, own_port, _ = self._target()
        if port != own_port:
            return False
        name = host.lower()
        return name == own_host.lower() or (name == "localhost" and _is_loopback((own_host,)))

    async def _relay(
        self,
        first: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        tls_upstream: bool = True,
    ) -> None:
        host, port, tls = self._target()
        context: ssl.SSLContext | None = None
        if (
            tls and tls_upstream
        ):  # the stub's own loopback listener: its certificate is not re-judged
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        up_reader, up_writer = await asyncio.open_connection(host, port, ssl=context)
        try:
            if first:
                up_writer.write(first)

            async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                with contextlib.suppress(OSError, ssl.SSLError):
                    while data := await src.read(65536):
                        dst.write(data)
                        await dst.drain()
                    if dst.can_write_eof():
                        dst.write_eof()

            upstream = asyncio.ensure_future(pump(reader, up_writer))
            try:
                await pump(up_reader, writer)
            finally:
                upstream.cancel()
                await asyncio.gather(upstream, return_exceptions=True)
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await up_writer.wait_closed()
