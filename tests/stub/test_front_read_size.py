"""How much the stub's front end asks for per read of a TCP connection (front.READ_SIZE).

asyncio's TCP transport reads ``max_size`` bytes at a time (256 KiB by default), a buffer
CPython allocates before each read: above glibc's mmap threshold that is a fresh memory
mapping per request. The front end lowers it on each plain TCP connection; a request
larger than one read still arrives whole. On uvloop (``AZT_TEST_LOOP=uvloop``) reads go
into one buffer the loop allocates once, so there is nothing to lower.
"""

from __future__ import annotations

import asyncio
import json

from aiohttp import web

from azt_server_stub import DEV_ACCOUNT
from azt_server_stub.__main__ import loop_name
from azt_server_stub.app import StubConfig, create_app
from azt_server_stub.front import READ_SIZE, FrontAppRunner, FrontServer

from .test_http_parser_refusals import signed_head


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[bytes, bytes]:
    """Send one request; its answer's head and body (by Content-Length)."""
    writer.write(request)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return head, await reader.readexactly(length)


def _request(method: str, path: str, body: bytes = b"") -> bytes:
    extra = f"Content-Length: {len(body)}\r\n" if body else ""
    content_type = "application/json" if body else ""
    return signed_head(method, path, extra + "\r\n", content_type=content_type) + body


async def test_reads_are_small_and_a_larger_request_arrives_whole() -> None:
    assert READ_SIZE < 128 * 1024  # below glibc's mmap threshold
    runner = FrontAppRunner(create_app(StubConfig()), handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = runner.server
        assert isinstance(server, FrontServer)
        port = next(iter(runner.addresses))[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            table = _request("POST", f"/{DEV_ACCOUNT}/Tables", b'{"TableName":"big"}')
            head, _ = await _exchange(reader, writer, table)
            assert head.startswith(b"HTTP/1.1 201 "), head
            (protocol,) = server.front_connections
            assert protocol.transport is not None
            if loop_name(asyncio.get_running_loop()) == "asyncio":
                assert protocol.transport.max_size == READ_SIZE  # type: ignore[attr-defined]
            else:  # uvloop reads into one buffer of the loop's, allocated once: no size to set
                assert not hasattr(protocol.transport, "max_size")
            # an entity of about four reads' worth: eight strings of 30,000 characters
            props = {f"S{i}": chr(ord("a") + i) * 30_000 for i in range(8)}
            entity = {"PartitionKey": "p", "RowKey": "r", **props}
            body = json.dumps(entity).encode()
            assert len(body) > 3 * READ_SIZE
            head, _ = await _exchange(reader, writer, _request("POST", f"/{DEV_ACCOUNT}/big", body))
            assert head.startswith(b"HTTP/1.1 201 "), head
            path = f"/{DEV_ACCOUNT}/big(PartitionKey='p',RowKey='r')"
            head, got = await _exchange(reader, writer, _request("GET", path))
            assert head.startswith(b"HTTP/1.1 200 "), head
            read_back = json.loads(got)
            assert {name: read_back[name] for name in props} == props
        finally:
            writer.close()
            await writer.wait_closed()
    finally:
        await runner.cleanup()
