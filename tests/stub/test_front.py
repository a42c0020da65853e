"""The stub's connection front end (front.py) answers byte for byte as aiohttp's handler did.

Each case is sent, raw, to two stubs built from the same configuration: one served by
aiohttp's own connection handler (``ServiceAppRunner``, the stub's front end before
front.py) and one by :class:`FrontAppRunner`. The whole byte stream each answers (heads
and bodies, pipelined answers included, up to the connection's close) must be equal once
the values that differ between any two runs are masked: dates, request ids, timestamps.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from aiohttp import web

from azt_server_stub import DEV_ACCOUNT
from azt_server_stub.app import StubConfig, create_app
from azt_server_stub.connection import MAX_REQUEST_LINE, ServiceAppRunner
from azt_server_stub.front import FrontAppRunner, FrontServer

from .test_http_parser_refusals import signed_head

_MASKS = [
    (re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), b"<guid>"),
    (re.compile(rb"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT"), b"<date>"),
    (re.compile(rb"\d{4}-\d\d-\d\dT\d\d(:|%3A)\d\d(:|%3A)\d\d(\.\d+)?Z"), b"<time>"),
]


def masked(data: bytes) -> bytes:
    for pattern, mask in _MASKS:
        data = pattern.sub(mask, data)
    return data


@dataclass
class Served:
    host: str
    port: int


async def _serve(runner: web.AppRunner) -> AsyncIterator[Served]:
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield Served("127.0.0.1", int(runner.addresses[0][1]))
    finally:
        await runner.cleanup()


@pytest.fixture
async def both() -> AsyncIterator[tuple[Served, Served]]:
    old = _serve(ServiceAppRunner(create_app(StubConfig()), handle_signals=False))
    new = _serve(FrontAppRunner(create_app(StubConfig()), handle_signals=False))
    a = await old.__anext__()
    b = await new.__anext__()
    try:
        yield a, b
    finally:
        for gen in (old, new):
            with pytest.raises(StopAsyncIteration):
                await gen.__anext__()


async def exchange(server: Served, chunks: list[bytes]) -> bytes:
    """Send the chunks (a short pause between them) and read until the server closes."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        for chunk in chunks:
            writer.write(chunk)
            await writer.drain()
            await asyncio.sleep(0.02)
        return await asyncio.wait_for(reader.read(), timeout=30)
    finally:
        writer.close()
        await writer.wait_closed()


def request(
    method: str,
    path: str,
    body: bytes = b"",
    *,
    extra: str = "",
    close: bool = False,
    content_type: str = "",
) -> bytes:
    headers = extra
    if body and "Transfer-Encoding" not in extra:
        headers += f"Content-Length: {len(body)}\r\n"
    if close:
        headers += "Connection: close\r\n"
    return signed_head(method, path, headers + "\r\n", content_type=content_type) + body


TABLES = f"/{DEV_ACCOUNT}/Tables"
TABLE = f"/{DEV_ACCOUNT}/fronttable"
JSON = "application/json"
CREATE = request("POST", TABLES, b'{"TableName":"fronttable"}', content_type=JSON)
ENTITY = json.dumps({"PartitionKey": "p", "RowKey": "r", "Value": 1}).encode()
POINT = f"{TABLE}(PartitionKey='p',RowKey='r')"
NO_CONTENT = "Prefer: return-no-content\r\n"


def chunked(body: bytes) -> bytes:
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


CASES: dict[str, list[bytes]] = {
    "create, insert, read, query pipelined in one write": [
        CREATE
        + request("POST", TABLE, ENTITY, content_type=JSON)
        + request("GET", POINT)
        + request("GET", TABLE + "()", close=True)
    ],
    "requests one after another on one connection": [
        CREATE,
        request("POST", TABLE, ENTITY, content_type=JSON),
        request("DELETE", POINT, extra="If-Match: *\r\n"),
        request("GET", POINT, close=True),
    ],
    "inserts answered 204 (a lined answer), pipelined, then a delete": [
        CREATE
        + request(
            "POST",
            TABLE,
            ENTITY,
            extra=NO_CONTENT + "x-ms-client-request-id: c-1\r\n",
            content_type=JSON,
        )
        + request("POST", TABLE, ENTITY, extra=NO_CONTENT, content_type=JSON)
        + request("DELETE", POINT, extra="If-Match: *\r\n", close=True)
    ],
    "an update, a merge and a table created, each answered 204": [
        CREATE
        + request("POST", TABLE, ENTITY, content_type=JSON)
        + request("PUT", POINT, ENTITY, extra="If-Match: *\r\n", content_type=JSON)
        + request("MERGE", POINT, ENTITY, extra="If-Match: *\r\n", content_type=JSON)
        + request(
            "POST",
            TABLES,
            b'{"TableName":"fronttable2"}',
            extra=NO_CONTENT,
            content_type=JSON,
            close=True,
        )
    ],
    "an insert answered 204 with Connection: close": [
        CREATE + request("POST", TABLE, ENTITY, extra=NO_CONTENT, content_type=JSON, close=True)
    ],
    "an insert answered 204 over HTTP/1.0 kept alive": [
        CREATE,
        request(
            "POST",
            TABLE,
            ENTITY,
            extra=NO_CONTENT + "Connection: keep-alive\r\n",
            content_type=JSON,
        ).replace(b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1),
        request("GET", TABLES, close=True),
    ],
    "an insert answered 204 echoing a client request id that is not ASCII": [
        CREATE
        + request(
            "POST",
            TABLE,
            ENTITY,
            extra=NO_CONTENT + "x-ms-client-request-id: caf\u00e9\r\n",
            content_type=JSON,
            close=True,
        )
    ],
    "HEAD": [CREATE, request("HEAD", TABLES, close=True)],
    "HTTP/1.0, closed after the answer": [
        request("GET", TABLES).replace(b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1)
    ],
    "HTTP/1.0 kept alive, then HTTP/1.1": [
        request("GET", TABLES, extra="Connection: keep-alive\r\n").replace(
            b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1
        ),
        request("GET", TABLES, close=True),
    ],
    "Expect: 100-continue": [
        CREATE + request("POST", TABLE, ENTITY, extra="Expect: 100-continue\r\n", close=True)
    ],
    "an unknown Expect": [request("GET", TABLES, extra="Expect: nothing\r\n", close=True)],
    "OPTIONS *": [b"OPTIONS * HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"],
    "absolute-form target": [
        request("GET", TABLES, close=True).replace(
            f"GET {TABLES}".encode(), f"GET http://127.0.0.1{TABLES}".encode(), 1
        )
    ],
    "chunked body": [
        CREATE
        + request(
            "POST",
            TABLE,
            chunked(ENTITY),
            extra="Transfer-Encoding: chunked\r\n",
            close=True,
            content_type=JSON,
        )
    ],
    "a body the handler does not read, then another request": [
        request("GET", TABLES, b"x" * 5000) + request("GET", TABLES, close=True)
    ],
    "a body over the limit": [
        request(
            "POST", TABLES, b"{" + b" " * (5 * 1024 * 1024) + b"}", content_type=JSON, close=True
        )
    ],
    "Content-Encoding": [
        request(
            "POST",
            TABLES,
            b"{}",
            extra="Content-Encoding: gzip\r\n",
            content_type=JSON,
            close=True,
        )
    ],
    "not signed": [
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
    ],
    "bad method token": [b"G(T /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\n\r\n"],
    "request line over the limit": [
        b"GET /devstoreaccount1/t('" + b"a" * MAX_REQUEST_LINE + b"') HTTP/1.1\r\nHost: h\r\n\r\n"
    ],
    "HTTP/1.1 without Host": [b"GET /devstoreaccount1/Tables HTTP/1.1\r\n\r\n"],
    "both Content-Length and chunked": [
        b"POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
    ],
    "broken chunked framing": [
        request(
            "POST",
            TABLES,
            b"zz\r\n{}\r\n0\r\n\r\n",
            extra="Transfer-Encoding: chunked\r\n",
            content_type=JSON,
        )
    ],
    "a refusal after a good request": [
        request("GET", TABLES) + b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n"
    ],
    "CORS preflight": [
        b"OPTIONS /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nOrigin: http://x\r\n"
        b"Access-Control-Request-Method: GET\r\nConnection: close\r\n\r\n"
    ],
}


@pytest.mark.parametrize("name", list(CASES))
async def test_front_answers_as_aiohttp_did(both: tuple[Served, Served], name: str) -> None:
    old, new = both
    chunks = CASES[name]
    expected = await exchange(old, chunks)
    got = await exchange(new, chunks)
    assert expected, name  # the case produces an answer at all
    assert masked(got) == masked(expected)


async def test_the_runner_serves_through_the_front_end() -> None:
    runner = FrontAppRunner(create_app(StubConfig()), handle_signals=False)
    await runner.setup()
    try:
        assert isinstance(runner.server, FrontServer)
    finally:
        await runner.cleanup()


async def test_an_idle_connection_is_closed_after_the_keep_alive_timeout() -> None:
    runner = FrontAppRunner(create_app(StubConfig()), handle_signals=False, keepalive_timeout=0.2)
    async for served in _serve(runner):
        reader, writer = await asyncio.open_connection(served.host, served.port)
        writer.write(request("GET", TABLES))
        answer = await asyncio.wait_for(reader.read(), timeout=10)  # closed by the server
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        writer.close()
        await writer.wait_closed()


async def test_shutdown_lets_a_request_in_progress_finish() -> None:
    runner = FrontAppRunner(create_app(StubConfig()), handle_signals=False)
    served = _serve(runner)
    server = await served.__anext__()
    reader, writer = await asyncio.open_connection(server.host, server.port)
    body = b'{"TableName":"shutdowntable"}'
    head = request("POST", TABLES, body, content_type=JSON, close=True)
    writer.write(head[: -len(body)])  # the body is still to come
    await writer.drain()
    await asyncio.sleep(0.05)
    stopping = asyncio.ensure_future(served.__anext__())
    await asyncio.sleep(0.05)
    writer.write(body)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), timeout=10)
    assert answer.startswith(b"HTTP/1.1 201"), answer[:300]
    with pytest.raises(StopAsyncIteration):
        await stopping
    writer.close()
    await writer.wait_closed()
