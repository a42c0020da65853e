"""The stub's opt-in proxy mode: its own accounts' product hosts (CONNECT tunnels whose TLS
the stub ends, absolute-form ``http://``) and its own listener are served; every other
host is refused and nothing is forwarded."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, ProxyOptions, StubConfig, StubServer
from tests.proxy_pki import ProxyPki, make_pki, needs_openssl
from tests.stub.conftest import RawClient, StubProcess

pytestmark = needs_openssl

ACCOUNT_HOST = f"{DEV_ACCOUNT}.table.core.windows.net"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ProxyPki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def proxied(pki: ProxyPki) -> AsyncIterator[StubServer]:
    async with StubServer(proxy=ProxyOptions(ssl_context=pki.server_context())) as stub:
        yield stub


def _session(pki: ProxyPki, proxy: str) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        proxy=proxy, connector=aiohttp.TCPConnector(ssl=pki.client_context())
    )


async def _create_and_list(raw: RawClient, table: str) -> list[str]:
    made = await raw.request(
        "POST",
        "/Tables",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        body=json.dumps({"TableName": table}),
        account_segment="",
    )
    assert made.status == 201, made.body
    listed = await raw.request(
        "GET", "/Tables", headers={"Accept": "application/json"}, account_segment=""
    )
    assert listed.status == 200
    return [t["TableName"] for t in listed.json()["value"]]


async def _exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` to the proxy port as is; everything it answers until it closes
    (``b""`` when it resets the connection unanswered)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionResetError):
            await writer.wait_closed()


def _proxy_port(stub: StubServer) -> int:
    assert stub.proxy_url is not None
    return int(stub.proxy_url.rsplit(":", 1)[1])


async def test_tunnel_to_an_account_host_checks_tls_by_the_host_name(
    proxied: StubServer, pki: ProxyPki
) -> None:
    assert proxied.proxy_url is not None
    assert proxied.proxy_url.startswith("http://127.0.0.1:")
    async with _session(pki, proxied.proxy_url) as session:
        raw = RawClient(session, f"https://{ACCOUNT_HOST}", DEV_ACCOUNT, DEV_KEY)
        assert "tunnelled" in await _create_and_list(raw, "tunnelled")
    # the same table, asked for directly: one stub, one store
    assert proxied.backend.table_name(DEV_ACCOUNT, "tunnelled") == "tunnelled"
    # a client that does not trust the proxy's CA refuses the tunnel's certificate
    async with aiohttp.ClientSession(proxy=proxied.proxy_url) as session:
        raw = RawClient(session, f"https://{ACCOUNT_HOST}", DEV_ACCOUNT, DEV_KEY)
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await raw.request("GET", "/Tables", account_segment="")


async def test_https_proxy_url_is_tls_to_the_proxy_then_a_tunnel(
    proxied: StubServer, pki: ProxyPki
) -> None:
    assert proxied.proxy_url is not None
    https_proxy = proxied.proxy_url.replace("http://", "https://")
    async with _session(pki, https_proxy) as session:
        raw = RawClient(session, f"https://{ACCOUNT_HOST}", DEV_ACCOUNT, DEV_KEY)
        assert "doublyencrypted" in await _create_and_list(raw, "doublyencrypted")


async def test_absolute_form_http_to_an_account_host_is_one_request(
    proxied: StubServer, pki: ProxyPki
) -> None:
    assert proxied.proxy_url is not None
    async with _session(pki, proxied.proxy_url) as session:
        raw = RawClient(session, f"http://{ACCOUNT_HOST}", DEV_ACCOUNT, DEV_KEY)
        assert "plainproxied" in await _create_and_list(raw, "plainproxied")
        resp = await raw.request("GET", "/Tables", account_segment="")
        assert resp.headers["Connection"].lower() == "close"
    # the secondary host name is the same account's (read access)
    answer = await _exchange(
        _proxy_port(proxied),
        f"GET http://{DEV_ACCOUNT}-secondary.table.core.windows.net/Tables HTTP/1.1\r\n"
        f"Host: {DEV_ACCOUNT}-secondary.table.core.windows.net\r\n\r\n".encode(),
    )
    # unsigned: the service's own refusal, from the stub itself (not the proxy's 403)
    assert answer.startswith(b"HTTP/1.1 401 ")
    assert b"x-ms-error-code: NoAuthenticationInformation" in answer


async def test_the_stubs_own_listener_is_served_through_the_proxy(
    proxied: StubServer, pki: ProxyPki
) -> None:
    assert proxied.proxy_url is not None
    async with _session(pki, proxied.proxy_url) as session:
        raw = RawClient(session, proxied.endpoint, DEV_ACCOUNT, DEV_KEY)
        resp = await raw.request("GET", "/Tables", headers={"Accept": "application/json"})
        assert resp.status == 200


async def test_other_hosts_are_refused_and_nothing_is_forwarded(proxied: StubServer) -> None:
    port = _proxy_port(proxied)
    reached: list[bool] = []

    async def bystander(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reached.append(True)
        writer.close()

    # a real listener on this machine, that the proxy must never connect to
    server = await asyncio.start_server(bystander, "127.0.0.1", 0)
    other = server.sockets[0].getsockname()[1]
    try:
        for target in (
            f"127.0.0.1:{other}",
            "example.com:443",
            "other.table.core.windows.net:443",  # an account the stub does not have
            f"{DEV_ACCOUNT}.blob.core.windows.net:443",  # another service
            f"{ACCOUNT_HOST}:8443",  # another port
        ):
            answer = await _exchange(
                port, f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()
            )
            assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n"), (target, answer)
            assert b"nothing is forwarded" in answer
        for url in (
            f"http://127.0.0.1:{other}/",
            "http://example.com/",
            f"http://{ACCOUNT_HOST}:81/",
        ):
            answer = await _exchange(port, f"GET {url} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n"), (url, answer)
        assert reached == []
    finally:
        server.close()
        await server.wait_closed()
    origin_form = await _exchange(port, b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: x\r\n\r\n")
    assert origin_form.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    garbage = await _exchange(port, b"hello there\r\n\r\n")
    assert garbage.startswith(b"HTTP/1.1 400 Bad Request\r\n")


async def test_credentials_are_required_when_configured(pki: ProxyPki) -> None:
    options = ProxyOptions(ssl_context=pki.server_context(), credentials=("alice", "s3cret"))
    async with StubServer(proxy=options) as stub:
        port = _proxy_port(stub)
        connect = f"CONNECT {ACCOUNT_HOST}:443 HTTP/1.1\r\nHost: {ACCOUNT_HOST}:443\r\n"
        missing = await _exchange(port, (connect + "\r\n").encode())
        assert missing.startswith(b"HTTP/1.1 407 ")
        assert b'Proxy-Authenticate: Basic realm="azt-stub"' in missing
        wrong = base64.b64encode(b"alice:guess").decode()
        answer = await _exchange(
            port, f"{connect}Proxy-Authorization: Basic {wrong}\r\n\r\n".encode()
        )
        assert answer.startswith(b"HTTP/1.1 407 ")
        assert stub.proxy_url is not None
        good = stub.proxy_url.replace("http://", "http://alice:s3cret@")
        async with _session(pki, good) as session:
            raw = RawClient(session, f"https://{ACCOUNT_HOST}", DEV_ACCOUNT, DEV_KEY)
            assert "authorised" in await _create_and_list(raw, "authorised")


async def test_without_a_certificate_only_plain_http_is_served() -> None:
    async with StubServer(StubConfig(), proxy=ProxyOptions()) as stub:
        port = _proxy_port(stub)
        tunnel = await _exchange(
            port, f"CONNECT {ACCOUNT_HOST}:443 HTTP/1.1\r\nHost: {ACCOUNT_HOST}\r\n\r\n".encode()
        )
        assert tunnel.startswith(b"HTTP/1.1 502 Bad Gateway\r\n")
        # a TLS ClientHello to a proxy port without a certificate: closed, unanswered
        assert await _exchange(port, b"\x16\x03\x01\x00\x05hello") == b""
        plain = await _exchange(
            port,
            f"GET http://{ACCOUNT_HOST}/Tables HTTP/1.1\r\nHost: {ACCOUNT_HOST}\r\n\r\n".encode(),
        )
        assert plain.startswith(b"HTTP/1.1 401 ")
        assert b"x-ms-error-code: NoAuthenticationInformation" in plain


def test_command_line_proxy_mode(pki: ProxyPki, tmp_path: Path) -> None:
    args = ["--port", "0", "--proxy-port", "0", "--proxy-cert", str(pki.cert)]
    with StubProcess(*args, "--proxy-key", str(pki.key), "--proxy-auth", "u:p") as proc:
        assert any(line.startswith("proxy mode: http://127.0.0.1:") for line in proc.lines)
    with pytest.raises(RuntimeError, match="need --proxy-port"):
        StubProcess("--port", "0", "--proxy-auth", "u:p").start()
