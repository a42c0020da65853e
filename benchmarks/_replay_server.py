"""A server that does no work: the floor under any server the benchmark client drives.

It forwards the first request of each kind (method and path, keys masked) to an
upstream server (the stub) and records the answer; every later request of that kind is
answered with the recorded bytes at once, without parsing more than the request's
framing. Driven by the same client as the real servers, it shows what the client and
the kernel cost per round trip, and so the best ratio any server could reach against a
peer (``benchmarks/stub_vs_azurite.py`` prints it as the ceiling).

With ``--front`` the same replay runs through the stub's own HTTP layer instead: its
connection protocol (``azt_server_stub.front.FrontAppRunner``: aiohttp's C parser,
``web.Request`` and ``web.Response`` objects, requests served in the callback that
received them) and one catch-all handler that returns the recorded status, headers and
body. What the stub costs beyond that is the Table service itself (addressing, auth,
negotiation, validation, storage, rendering); the ratio this mode reaches is the best a
server built on that HTTP layer could reach.

Usage (the benchmark starts it)::

    python benchmarks/_replay_server.py LISTEN_PORT UPSTREAM_PORT [--front]
"""

from __future__ import annotations

import asyncio
import re
import sys
from typing import Any

_KEYS = re.compile(rb"\([^)]+\)")


def answer_key(head: bytes) -> bytes:
    """Method and path, keys masked, no query: an insert, a point read, a query differ."""
    method, target = head.split(b" ", 2)[:2]
    return method + b" " + _KEYS.sub(b"(k)", target.split(b"?", 1)[0])


class Replay(asyncio.Protocol):
    """One client connection: framing only, answers replayed per kind of request."""

    def __init__(self, upstream: int, answers: dict[bytes, bytes]) -> None:
        self.upstream = upstream
        self.answers = answers
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self.drain()

    def drain(self) -> None:
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            request, self.buffer = self.buffer[:total], self.buffer[total:]
            method = answer_key(head)
            answer = self.answers.get(method)
            if answer is None:
                self.busy = True
                asyncio.get_running_loop().create_task(self.record(method, request))
                return
            assert self.transport is not None
            self.transport.write(answer)

    async def record(self, method: bytes, request: bytes) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        answer = head + await reader.readexactly(length)
        writer.close()
        self.answers[method] = answer
        assert self.transport is not None
        self.transport.write(answer)
        self.busy = False
        self.drain()


#: response headers aiohttp writes itself (from the body, the clock and the connection)
_OWN_HEADERS = frozenset(("content-length", "date", "server", "connection", "transfer-encoding"))


def front_app(upstream: int) -> Any:
    """The ``--front`` application: one handler replaying recorded answers by kind."""
    import aiohttp
    import yarl
    from aiohttp import web

    answers: dict[bytes, tuple[int, list[tuple[str, str]], bytes]] = {}
    session: list[aiohttp.ClientSession] = []

    async def record(request: web.Request) -> tuple[int, list[tuple[str, str]], bytes]:
        await asyncio.sleep(0)  # out of data_received: the client's timeouts need a task
        if not session:
            session.append(aiohttp.ClientSession(auto_decompress=False))
        url = yarl.URL(f"http://127.0.0.1:{upstream}{request.raw_path}", encoded=True)
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        body = await request.read()
        async with session[0].request(
            request.method,
            url,
            headers=headers,
            data=body or None,  # (an empty body would add a Content-Type to the signed request)
            skip_auto_headers=("Content-Type", "Accept-Encoding", "User-Agent"),
        ) as resp:
            answer = await resp.read()
            kept = [(k, v) for k, v in resp.headers.items() if k.lower() not in _OWN_HEADERS]
            return resp.status, kept, answer

    async def replay(request: web.Request) -> web.StreamResponse:
        key = answer_key(f"{request.method} {request.raw_path}".encode())
        answer = answers.get(key)
        if answer is None:
            answer = answers[key] = await record(request)
        else:
            await request.read()
        status, headers, body = answer
        return web.Response(status=status, headers=headers, body=body or None)

    async def close(_app: web.Application) -> None:
        for s in session:
            await s.close()

    from azt_server_stub.connection import SERVES_WITHOUT_TASK

    app = web.Application()
    app[SERVES_WITHOUT_TASK] = True  # served as the stub's own requests are (see front.py)
    app.router.add_route("*", "/{tail:.*}", replay)
    app.on_cleanup.append(close)
    return app


async def main_front(port: int, upstream: int) -> None:
    from aiohttp import web

    from azt_server_stub.front import FrontAppRunner

    runner = FrontAppRunner(front_app(upstream), handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


async def main(port: int, upstream: int) -> None:
    answers: dict[bytes, bytes] = {}
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Replay(upstream, answers), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    serve = main_front if "--front" in sys.argv[3:] else main
    asyncio.run(serve(int(sys.argv[1]), int(sys.argv[2])))
