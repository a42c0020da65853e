"""The aiohttp transport over loopback: exact URLs, errors, timeouts, lifecycle."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

import azt
from azt._core.transport import AiohttpTransport, HttpRequest

from .conftest import FAST_TIMEOUTS, ClientOptions


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[web.Request]]]:
    seen: list[web.Request] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append(request)
        if request.path_qs.startswith("/slow"):
            await asyncio.sleep(0.6)
        if request.path_qs.startswith("/drop"):
            assert request.transport is not None
            request.transport.close()
            await asyncio.sleep(0.05)
        body = await request.read()
        return web.Response(
            status=201,
            body=request.raw_path.encode() + b"|" + body,
            headers={"x-ms-request-id": "srv-1", "ETag": 'W/"e"'},
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_url_is_sent_exactly_as_given(server: tuple[str, list[web.Request]]) -> None:
    base, seen = server
    transport = AiohttpTransport(timeouts=FAST_TIMEOUTS)
    raw = (
        "/acct/t(PartitionKey='O%27%27Brien',RowKey='RK%27%27%40%2A%24%21%25')"
        "?$filter=a%20eq%20%27x%27"
    )
    try:
        resp = await transport.send(
            HttpRequest("MERGE", base + raw, {"Content-Type": "application/json"}, b"{}")
        )
    finally:
        await transport.aclose()
    assert resp.status == 201
    assert resp.body == raw.encode() + b"|{}"
    assert resp.headers["X-MS-REQUEST-ID"] == "srv-1"
    assert seen[0].method == "MERGE"
    assert seen[0].raw_path == raw


async def test_refused_connection_is_not_sent() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    transport = AiohttpTransport(timeouts=FAST_TIMEOUTS)
    try:
        with pytest.raises(azt.ServiceConnectionError) as info:
            await transport.send(HttpRequest("GET", f"http://127.0.0.1:{port}/x?sig=SECRET", {}))
    finally:
        await transport.aclose()
    assert info.value.sent is False
    assert "SECRET" not in info.value.url


async def test_dropped_connection_may_have_been_sent(
    server: tuple[str, list[web.Request]],
) -> None:
    base, _ = server
    transport = AiohttpTransport(timeouts=FAST_TIMEOUTS)
    try:
        with pytest.raises(azt.ServiceConnectionError) as info:
            await transport.send(HttpRequest("POST", base + "/drop", {}, b"x"))
    finally:
        await transport.aclose()
    assert info.value.sent is True


async def test_read_timeout(server: tuple[str, list[web.Request]]) -> None:
    base, _ = server
    transport = AiohttpTransport(timeouts=azt.Timeouts(total=0.2, read=0.2))
    try:
        with pytest.raises(azt.ServiceTimeoutError):
            await transport.send(HttpRequest("GET", base + "/slow", {}))
    finally:
        await transport.aclose()


async def test_lifecycle_refuses_use_after_close(server: tuple[str, list[web.Request]]) -> None:
    base, _ = server
    transport = AiohttpTransport(
        limits=azt.PoolLimits(max_connections=2, max_connections_per_host=1)
    )
    await transport.send(HttpRequest("GET", base + "/a", {}))
    session = transport._session
    assert session is not None
    assert session.connector is not None
    assert session.connector.limit == 2
    assert session.connector.limit_per_host == 1
    await transport.aclose()
    await transport.aclose()  # idempotent
    assert transport.closed
    assert session.closed
    with pytest.raises(azt.ClientClosedError):
        await transport.send(HttpRequest("GET", base + "/a", {}))


async def test_client_lifecycle(server: tuple[str, list[web.Request]]) -> None:
    base, _ = server
    client = azt.TableServiceClient(base + "/devstoreaccount1", "sv=1&sig=x")
    table = client.get_table_client("movies")
    states = [client.closed]
    async with client:
        states.append(client.closed)
    states.append(client.closed)
    assert states == [False, False, True]
    assert table.closed
    with pytest.raises(azt.ClientClosedError):
        await table.get_entity("a", "b")
    with pytest.raises(azt.ClientClosedError):
        client.get_table_client("movies")
    with pytest.raises(azt.ClientClosedError):
        async with client:
            pass


def test_pool_limits_validation() -> None:
    with pytest.raises(azt.ValidationError):
        azt.PoolLimits(max_connections=-1)
    with pytest.raises(azt.ValidationError):
        azt.Timeouts(total=0)
    assert azt.Timeouts(total=None).total is None


async def test_closing_a_borrowed_table_client_keeps_the_service_open(
    server: tuple[str, list[web.Request]], client_options: ClientOptions
) -> None:
    base, _ = server
    service = azt.TableServiceClient(base + "/devstoreaccount1", "sv=1&sig=x", **client_options)
    async with service:
        async with service.get_table_client("movies") as movies:
            await movies.upsert_entity({"PartitionKey": "a", "RowKey": "b"})
        assert movies.closed
        assert not service.closed
        with pytest.raises(azt.ClientClosedError):
            await movies.upsert_entity({"PartitionKey": "a", "RowKey": "b"})
        other = service.get_table_client("movies")
        await other.upsert_entity({"PartitionKey": "a", "RowKey": "c"})
