"""Connections at their edges (issue 35, items 13-15), byte for byte over sockets: a header
that is not UTF-8 never leaves a write unanswered, a refused client still sending reads its
answer, and a client too slow to send its head or body is let go."""

from __future__ import annotations

import asyncio
import time

import pytest

from azt_server_stub import StubConfig, StubServer
from azt_server_stub.__main__ import build_parser, config_from_args
from azt_server_stub.read_limits import ReadLimits

from .test_http_parser_refusals import exchange, signed_head

ENTITY = "/devstoreaccount1/mytable(PartitionKey='p',RowKey='r')"
BAD_ID = b"x-ms-client-request-id: \xff\xfe\r\n"


def status_of(reply: bytes) -> int:
    assert reply.startswith(b"HTTP/1."), reply[:200]
    return int(reply.split(b" ", 2)[1])


async def create_table(stub: StubServer) -> None:
    body = b'{"TableName":"mytable"}'
    head = signed_head("POST", "/devstoreaccount1/Tables", "", "application/json")
    reply = await exchange(
        stub, head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
    )
    assert status_of(reply) == 201, reply[:300]


# -- 13: a header value that is not UTF-8 ---------------------------------------------------------


async def test_the_issue_s_request_gets_an_answer() -> None:
    async with StubServer() as stub:
        reply = await exchange(
            stub,
            b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n" + BAD_ID + b"\r\n",
            close_after_send=True,
        )
        assert status_of(reply) == 400
        assert b"x-ms-error-code: InvalidHeaderValue" in reply
        assert b"\xff" not in reply  # the value is not echoed


async def test_a_write_with_an_undecodable_header_is_refused_before_it_is_applied() -> None:
    async with StubServer() as stub:
        await create_table(stub)
        body = b'{"a":1}'
        head = signed_head("PUT", ENTITY, "", "application/json").replace(
            b"x-ms-version", BAD_ID + b"x-ms-version", 1
        )
        reply = await exchange(
            stub,
            head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body,
        )
        assert status_of(reply) == 400
        assert b"InvalidHeaderValue" in reply
        read = await exchange(stub, signed_head("GET", ENTITY, "Connection: close\r\n\r\n"))
        assert status_of(read) == 404  # nothing was written


async def test_a_readable_non_ascii_client_request_id_is_echoed() -> None:
    async with StubServer() as stub:
        reply = await exchange(
            stub,
            signed_head("GET", "/devstoreaccount1/Tables", "Connection: close\r\n")
            + "x-ms-client-request-id: café\r\n\r\n".encode(),
        )
        assert status_of(reply) == 200
        assert "x-ms-client-request-id: café".encode() in reply


async def test_an_undecodable_header_is_refused_after_plain_requests_on_its_connection() -> None:
    """The front end skips the header check while every byte of a connection was ASCII:
    the first byte that is not turns the check back on, for the request it arrives in."""
    async with StubServer() as stub:
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        try:
            writer.write(signed_head("GET", "/devstoreaccount1/Tables", "\r\n"))
            first = await asyncio.wait_for(reader.readuntil(b"}"), timeout=30)
            assert status_of(first) == 200
            writer.write(
                signed_head("GET", "/devstoreaccount1/Tables", "Connection: close\r\n")
                + BAD_ID
                + b"\r\n"
            )
            second = await asyncio.wait_for(reader.read(), timeout=30)
        finally:
            writer.close()
            await writer.wait_closed()
        assert status_of(second) == 400
        assert b"x-ms-error-code: InvalidHeaderValue" in second


# -- 14: a refusal sent before the body is read -------------------------------------------------


async def send_and_read(stub: StubServer, head: bytes, size: int) -> bytes:
    """Send ``head`` and ``size`` body bytes, all of them, then read the answer."""
    reader, writer = await asyncio.open_connection(stub.host, stub.port)
    try:
        writer.write(head)
        chunk = b"x" * 65536
        sent = 0
        while sent < size:
            writer.write(chunk[: size - sent])
            sent += min(len(chunk), size - sent)
            await writer.drain()
        return await asyncio.wait_for(reader.read(65536), timeout=30)
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.parametrize("size", [4 * 1024 * 1024, 5 * 1024 * 1024])
async def test_a_client_still_sending_reads_the_parser_s_refusal(size: int) -> None:
    head = (
        b"PUT /devstoreaccount1/mytable HTTP/1.1\r\nHost: x\r\nX-Long: "
        + b"a" * (70 * 1024)
        + f"\r\nContent-Length: {size}\r\n\r\n".encode()
    )
    async with StubServer() as stub:
        for _ in range(3):
            reply = await send_and_read(stub, head, size)
            assert status_of(reply) == 400, reply[:200]
            assert b"InvalidHeaderValue" in reply


async def test_a_client_still_sending_reads_the_413() -> None:
    size = 5 * 1024 * 1024
    async with StubServer() as stub:
        await create_table(stub)
        head = signed_head("POST", "/devstoreaccount1/mytable", "", "application/json")
        head += f"Content-Length: {size}\r\n\r\n".encode()
        for _ in range(3):
            reply = await send_and_read(stub, head, size)
            assert status_of(reply) == 413, reply[:200]


async def test_the_drain_is_bounded() -> None:
    limits = ReadLimits(drain_bytes=256 * 1024, drain_seconds=0.5)
    head = b"PUT /devstoreaccount1/t HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * (70 * 1024) + b"\r\n"
    async with StubServer(StubConfig(read_limits=limits)) as stub:
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        writer.write(head + b"Content-Length: 100000000\r\n\r\n")
        started = time.monotonic()
        answer = await asyncio.wait_for(reader.readuntil(b"</Error>"), timeout=10)
        assert status_of(answer) == 400
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):  # noqa: PT012
            while True:  # keeps sending past the bound: the stub closes the connection
                writer.write(b"x" * 65536)
                await writer.drain()
                if time.monotonic() - started > 10:
                    pytest.fail("the stub kept draining past its bounds")
                await asyncio.sleep(0)
        writer.close()


# -- 15: slow clients ---------------------------------------------------------------------------


async def read_until_closed(reader: asyncio.StreamReader, seconds: float) -> bytes:
    try:
        return await asyncio.wait_for(reader.read(), timeout=seconds)
    except ConnectionError:
        return b""


async def test_a_head_that_takes_too_long_closes_the_connection() -> None:
    limits = ReadLimits(header_seconds=0.3, body_seconds=5.0)
    async with StubServer(StubConfig(read_limits=limits)) as stub:
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        started = time.monotonic()
        writer.write(b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n")
        for _ in range(3):  # trickling keeps no head alive past the bound
            await asyncio.sleep(0.1)
            writer.write(b"X-A: b\r\n")
        assert await read_until_closed(reader, 5) == b""
        assert 0.25 < time.monotonic() - started < 3
        writer.close()


async def test_a_body_that_stalls_closes_the_connection_and_writes_nothing() -> None:
    limits = ReadLimits(header_seconds=5.0, body_seconds=0.3)
    async with StubServer(StubConfig(read_limits=limits)) as stub:
        await create_table(stub)
        head = signed_head("PUT", ENTITY, "", "application/json")
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        started = time.monotonic()
        writer.write(head + b"Content-Length: 20\r\n\r\n" + b'{"a":')
        assert await read_until_closed(reader, 5) == b""
        assert 0.25 < time.monotonic() - started < 3
        writer.close()
        read = await exchange(stub, signed_head("GET", ENTITY, "Connection: close\r\n\r\n"))
        assert status_of(read) == 404


async def test_a_slow_but_steady_body_is_taken() -> None:
    limits = ReadLimits(header_seconds=5.0, body_seconds=0.4)
    async with StubServer(StubConfig(read_limits=limits)) as stub:
        await create_table(stub)
        body = b'{"a":1,"b":"' + b"x" * 20 + b'"}'
        head = signed_head("PUT", ENTITY, "", "application/json")
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        writer.write(head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
        for i in range(0, len(body), 8):  # longer in all than the bound, never paused past it
            await asyncio.sleep(0.15)
            writer.write(body[i : i + 8])
        reply = await read_until_closed(reader, 5)
        assert status_of(reply) == 204, reply[:300]
        writer.close()


async def test_a_connection_idle_between_requests_is_not_a_slow_head() -> None:
    limits = ReadLimits(header_seconds=0.2, body_seconds=0.2)
    async with StubServer(StubConfig(read_limits=limits)) as stub:
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        for _ in range(2):
            writer.write(signed_head("GET", "/devstoreaccount1/Tables", "\r\n"))
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
            assert status_of(head) == 200
            length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            await asyncio.sleep(0.5)  # idle longer than the head bound: still open
        writer.close()


async def test_a_body_sent_in_pieces_then_an_idle_connection_is_not_a_slow_head() -> None:
    limits = ReadLimits(header_seconds=0.3, body_seconds=2.0)
    async with StubServer(StubConfig(read_limits=limits)) as stub:
        await create_table(stub)
        body = b'{"a":1,"b":"' + b"x" * 100 + b'"}'
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        for _ in range(2):
            head = signed_head("PUT", ENTITY, "", "application/json")
            writer.write(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
            await asyncio.sleep(0.05)
            writer.write(body[10:])  # the arrival that ends the body
            answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
            assert status_of(answer) == 204, answer
            await asyncio.sleep(0.6)  # idle past the head bound: the connection stays open
        writer.close()


PARTIAL_HEAD = b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n"  # never finished


def _pipelined(stub: StubServer, body_kind: str) -> tuple[bytes, bytes]:
    """A whole request, in two writes; the second ends it and starts a next head."""
    if body_kind == "none":
        first = signed_head("GET", "/devstoreaccount1/Tables", "\r\n")
        return first[:20], first[20:] + PARTIAL_HEAD
    body = b'{"a":1}'
    head = signed_head("PUT", ENTITY, "", "application/json")
    if body_kind == "length":
        first = head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
        return first[:-3], first[-3:] + PARTIAL_HEAD
    chunks = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    first = head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks
    return first[:-6], first[-6:] + PARTIAL_HEAD


@pytest.mark.parametrize("body_kind", ["none", "length", "chunked"])
async def test_a_pipelined_head_begun_with_the_end_of_a_request_is_timed(body_kind: str) -> None:
    # the arrival that ends a request (its head, or its body) carries the first bytes of
    # the next head, and nothing more comes: that head is bounded like any other
    limits = ReadLimits(header_seconds=0.3, body_seconds=5.0)
    async with StubServer(StubConfig(read_limits=limits)) as stub:
        await create_table(stub)
        start, end = _pipelined(stub, body_kind)
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        writer.write(start)
        await asyncio.sleep(0.05)
        started = time.monotonic()
        writer.write(end)
        reply = await read_until_closed(reader, 5)
        assert status_of(reply) in (200, 204), reply[:300]  # the first request is answered
        assert 0.25 < time.monotonic() - started < 3  # then the stalled head closes it
        writer.close()


@pytest.mark.parametrize("body_kind", ["none", "length", "chunked"])
async def test_a_request_ended_with_no_next_head_leaves_the_connection_open(
    body_kind: str,
) -> None:
    limits = ReadLimits(header_seconds=0.3, body_seconds=5.0)
    async with StubServer(StubConfig(read_limits=limits)) as stub:
        await create_table(stub)
        start, end = _pipelined(stub, body_kind)
        reader, writer = await asyncio.open_connection(stub.host, stub.port)
        writer.write(start)
        await asyncio.sleep(0.05)
        writer.write(end.removesuffix(PARTIAL_HEAD))
        answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        assert status_of(answer) in (200, 204), answer
        if b"Content-Length: " in answer:
            length = answer.split(b"Content-Length: ")[1].split(b"\r\n")[0]
            await reader.readexactly(int(length))
        await asyncio.sleep(0.6)  # idle past the head bound: the connection stays open
        writer.write(signed_head("GET", "/devstoreaccount1/Tables", "\r\n"))
        again = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        assert status_of(again) == 200
        writer.close()


def test_the_cli_sets_the_bounds() -> None:
    args = build_parser().parse_args(["--header-timeout", "3", "--body-timeout", "0"])
    limits = config_from_args(args).read_limits
    assert (limits.header_seconds, limits.body_seconds) == (3.0, 0.0)
    default = config_from_args(build_parser().parse_args([])).read_limits
    assert (default.header_seconds, default.body_seconds) == (120.0, 120.0)
