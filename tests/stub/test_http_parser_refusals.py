"""The HTTP parser's own refusals carry the service's error format (hardening issue 11, item 8).

aiohttp refuses what it cannot parse before any handler runs; the stub answers those
refusals as Storage XML errors with ``x-ms-error-code`` and ``x-ms-request-id``, logs no
error for them, and keeps serving. Sent byte for byte over a socket.
"""

from __future__ import annotations

import asyncio
import logging
import re

import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer
from azt_server_stub.connection import MAX_HEADER_FIELD, MAX_HEADERS, MAX_REQUEST_LINE

from .conftest import canonical_resource, http_date, sign


async def exchange(stub: StubServer, data: bytes, *, close_after_send: bool = False) -> bytes:
    """Send raw bytes on a fresh connection and read until the server closes it."""
    reader, writer = await asyncio.open_connection(stub.host, stub.port)
    try:
        writer.write(data)
        await writer.drain()
        if close_after_send:
            writer.write_eof()
        return await asyncio.wait_for(reader.read(), timeout=30)
    finally:
        writer.close()
        await writer.wait_closed()


def signed_head(method: str, path: str, extra: str = "", content_type: str = "") -> bytes:
    """The request line and headers of a SharedKey-signed request (no terminating CRLF)."""
    date = http_date()
    sts = "\n".join([method, "", content_type, date, canonical_resource(DEV_ACCOUNT, path, {})])
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        f"x-ms-date: {date}",
        "x-ms-version: 2019-02-02",
        "Accept: application/json;odata=minimalmetadata",
        f"Authorization: SharedKey {DEV_ACCOUNT}:{sign(DEV_KEY, sts)}",
    ]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    return ("\r\n".join(lines) + "\r\n" + extra).encode()


def assert_service_error(reply: bytes, status: int, code: str) -> None:
    """One HTTP response: ``status``, ``x-ms-error-code: code`` and the same code in the body."""
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].split(" ")[1] == str(status), reply[:500]
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    assert headers.get("x-ms-error-code") == code, reply[:500]
    assert headers.get("x-ms-request-id"), reply[:500]
    assert headers["content-type"].startswith("application/xml"), reply[:500]
    found = re.search(rb"<Code>([^<]*)</Code>", body)
    assert found is not None, body[:500]
    assert found.group(1).decode() == code, body[:500]
    assert b"RequestId:" in body


@pytest.fixture
def no_error_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def assert_nothing_logged_as_error(caplog: pytest.LogCaptureFixture) -> None:
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


CLOSE = "Connection: close\r\n\r\n"


async def assert_still_serving(stub: StubServer) -> bytes:
    reply = await exchange(stub, signed_head("GET", "/devstoreaccount1/Tables", CLOSE))
    assert reply.startswith(b"HTTP/1.1 200"), reply[:300]
    return reply


CASES = {
    "request line over the limit": (
        b"GET /devstoreaccount1/t(PartitionKey='"
        + b"a" * MAX_REQUEST_LINE
        + b"',RowKey='r') HTTP/1.1\r\nHost: h\r\n\r\n",
        414,
        "InvalidUri",
    ),
    "header over the limit": (
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nx-ms-client-request-id: "
        + b"x" * (MAX_HEADER_FIELD + 1)
        + b"\r\n\r\n",
        400,
        "InvalidHeaderValue",
    ),
    "too many headers": (
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\n"
        + b"".join(b"x-extra-%d: 1\r\n" % i for i in range(MAX_HEADERS + 1))
        + b"\r\n",
        400,
        "InvalidHeaderValue",
    ),
    "header name with a space": (
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nBad Name: 1\r\n\r\n",
        400,
        "InvalidHeaderValue",
    ),
    "header without a colon": (
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nno-colon\r\n\r\n",
        400,
        "InvalidHeaderValue",
    ),
    "bad method token": (
        b"G(T /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\n\r\n",
        400,
        "InvalidHttpVerb",
    ),
    "TLS hello on the plain port": (
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
        400,
        "InvalidHttpVerb",
    ),
    "unknown HTTP version": (
        b"GET /devstoreaccount1/Tables HTTP/7.1\r\nHost: h\r\n\r\n",
        400,
        "InvalidInput",
    ),
    "HTTP/1.1 without Host": (
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\n\r\n",
        400,
        "HostInformationNotPresent",
    ),
    "both Content-Length and chunked": (
        b"POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
        "InvalidHeaderValue",
    ),
    "two Content-Length values": (
        b"POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n"
        b"Content-Length: 3\r\n\r\n{}",
        400,
        "InvalidHeaderValue",
    ),
    "negative Content-Length": (
        b"POST /devstoreaccount1/Tables HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
        400,
        "InvalidHeaderValue",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_parser_refusals_are_service_errors(
    stub: StubServer, no_error_logs: pytest.LogCaptureFixture, name: str
) -> None:
    data, status, code = CASES[name]
    reply = await exchange(stub, data)
    assert_service_error(reply, status, code)
    await assert_still_serving(stub)
    assert_nothing_logged_as_error(no_error_logs)


async def test_a_request_line_just_under_the_limit_reaches_the_service(stub: StubServer) -> None:
    path = "/devstoreaccount1/Tables"
    filler = "x" * (MAX_REQUEST_LINE - len(path) - 200)
    head = signed_head("GET", path).replace(
        f"GET {path} HTTP".encode(), f"GET {path}?$filter=TableName%20eq%20'{filler}' HTTP".encode()
    )
    reply = await exchange(stub, head + CLOSE.encode())
    assert reply.startswith(b"HTTP/1.1 200"), reply[:300]


async def test_broken_chunked_body_under_a_valid_signature(
    stub: StubServer, no_error_logs: pytest.LogCaptureFixture
) -> None:
    head = signed_head(
        "POST",
        "/devstoreaccount1/Tables",
        "Transfer-Encoding: chunked\r\n\r\n",
        content_type="application/json",
    )
    for body in (b"zz\r\n{}\r\n0\r\n\r\n", b"2\r\n{}XX0\r\n\r\n", b"2;\x00\r\n{}\r\n0\r\n\r\n"):
        reply = await exchange(stub, head + body)
        assert reply, body
        assert_service_error_any_style(reply, 400, "InvalidInput")
    await assert_still_serving(stub)
    assert_nothing_logged_as_error(no_error_logs)


def assert_service_error_any_style(reply: bytes, status: int, code: str) -> None:
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].split(" ")[1] == str(status), reply[:500]
    assert f"x-ms-error-code: {code}".lower() in head.decode("latin-1").lower(), reply[:500]
    assert code.encode() in body, body[:300]


async def test_a_client_leaving_mid_body_is_not_a_stub_bug(
    stub: StubServer, no_error_logs: pytest.LogCaptureFixture
) -> None:
    head = signed_head(
        "POST",
        "/devstoreaccount1/Tables",
        "Content-Length: 1000\r\n\r\n",
        content_type="application/json",
    )
    reply = await exchange(stub, head + b'{"TableName":"half', close_after_send=True)
    # the client half-closed: the answer, if any, is a service error
    if reply:
        assert_service_error_any_style(reply, 400, "InvalidInput")
    tables = await assert_still_serving(stub)
    assert b"half" not in tables
    assert_nothing_logged_as_error(no_error_logs)
