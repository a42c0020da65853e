"""The read timeout (``Timeouts.read``) of the aiohttp transport, whose timer is kept lazily
(``transport._LazyReadTimeout``): no data for ``read`` seconds while an answer is awaited
times the request out; data arriving in time, however long the whole answer takes, does
not; a pooled connection's timer, idle meanwhile, times nothing out and still guards the
next request."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt._core.transport import _READ_SIZE, AiohttpTransport, HttpRequest, _LazyReadTimeout


async def _answer(path: str, writer: asyncio.StreamWriter) -> None:
    """``/stall``: the head, then nothing; ``/late/<s>``: the whole answer after ``s``
    seconds; ``/trickle/<n>/<s>``: the head, then ``n`` body bytes one every ``s`` seconds;
    ``/big/<n>``: ``n`` bytes at once; anything else: at once."""
    parts = path.strip("/").split("/")
    if parts[0] == "big":
        n = int(parts[1])
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n + b"y" * n)
        return
    if parts[0] == "late":
        await asyncio.sleep(float(parts[1]))
    if parts[0] == "trickle":
        n, pause = int(parts[1]), float(parts[2])
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
        for _ in range(n):
            await writer.drain()
            await asyncio.sleep(pause)
            writer.write(b"x")
        return
    if parts[0] == "stall":
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
        await asyncio.sleep(3600)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[int]]]:
    """A keep-alive HTTP/1.1 server; the list holds the local port of every connection."""
    connections: list[int] = []
    tasks: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer.get_extra_info("peername")[1])
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                await _answer(head.split(b" ")[1].decode(), writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(serve(reader, writer))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    srv = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", connections
    finally:
        srv.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await srv.wait_closed()


def _transport(read: float | None) -> AiohttpTransport:
    return AiohttpTransport(timeouts=azt.Timeouts(total=None, connect=5.0, read=read))


def pooled_protocols(transport: AiohttpTransport) -> list[Any]:
    """The connection protocols ``transport``'s session keeps for reuse."""
    session = transport._session
    assert session is not None
    assert session.connector is not None
    return [proto for protos in session.connector._conns.values() for proto, _ in protos]


async def test_the_lazy_protocol_is_the_one_used(server: tuple[str, list[int]]) -> None:
    base, _ = server
    transport = _transport(0.3)
    try:
        assert (await transport.send(HttpRequest("GET", base + "/a", {}))).body == b"ok"
        pooled = pooled_protocols(transport)
        assert pooled
        assert all(type(p) is _LazyReadTimeout for p in pooled)
    finally:
        await transport.aclose()


async def test_responses_are_read_in_small_reads(server: tuple[str, list[int]]) -> None:
    """asyncio's TCP transport asks for 256 KiB a read, a buffer allocated before each read
    (above glibc's mmap threshold: a fresh mapping per response); azt's protocol asks for
    less, and a larger answer still arrives whole."""
    base, _ = server
    transport = _transport(0.3)
    try:
        assert _READ_SIZE < 128 * 1024
        assert (await transport.send(HttpRequest("GET", base + "/a", {}))).body == b"ok"
        pooled = pooled_protocols(transport)
        assert pooled
        assert all(p.transport.max_size == _READ_SIZE for p in pooled)
        size = 3 * _READ_SIZE + 5
        resp = await transport.send(HttpRequest("GET", base + f"/big/{size}", {}))
        assert resp.body == b"y" * size
    finally:
        await transport.aclose()


async def test_no_data_for_read_seconds_times_out(server: tuple[str, list[int]]) -> None:
    base, _ = server
    transport = _transport(0.3)
    try:
        for path in ("/stall", "/late/5"):
            start = time.monotonic()
            with pytest.raises(azt.ServiceTimeoutError):
                await transport.send(HttpRequest("GET", base + path, {}))
            assert 0.25 <= time.monotonic() - start < 2.0
    finally:
        await transport.aclose()


async def test_data_in_time_never_times_out(server: tuple[str, list[int]]) -> None:
    # each byte within the read timeout; the whole answer takes more than three of them
    base, _ = server
    transport = _transport(0.3)
    try:
        start = time.monotonic()
        resp = await transport.send(HttpRequest("GET", base + "/trickle/8/0.12", {}))
        assert resp.body == b"x" * 8
        assert time.monotonic() - start > 0.9
    finally:
        await transport.aclose()


async def test_an_idle_pooled_connection_times_nothing_out_and_still_guards(
    server: tuple[str, list[int]],
) -> None:
    base, connections = server
    transport = _transport(0.3)
    try:
        assert (await transport.send(HttpRequest("GET", base + "/a", {}))).body == b"ok"
        await asyncio.sleep(0.5)  # the connection's timer, read stopped, fires meanwhile
        for _ in range(3):  # answers in less than the read timeout, after idling
            resp = await transport.send(HttpRequest("GET", base + "/late/0.2", {}))
            assert resp.body == b"ok"
            await asyncio.sleep(0.15)
        assert len(connections) == 1  # all on the one pooled connection
        with pytest.raises(azt.ServiceTimeoutError):
            await transport.send(HttpRequest("GET", base + "/stall", {}))
        assert (await transport.send(HttpRequest("GET", base + "/a", {}))).body == b"ok"
    finally:
        await transport.aclose()


async def test_without_a_read_timeout_a_slow_answer_is_awaited(
    server: tuple[str, list[int]],
) -> None:
    base, _ = server
    transport = _transport(None)
    try:
        resp = await transport.send(HttpRequest("GET", base + "/late/0.5", {}))
        assert resp.body == b"ok"
    finally:
        await transport.aclose()
