"""``TableService.set_proxy`` (the legacy SDK's proxy setting) and azt's transport through
an HTTP proxy, against the stub's proxy mode: a client that addresses
``{account}.table.core.windows.net`` reaches the stub only through the proxy."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from azt import ServiceConnectionError, SharedKeyCredential, TableServiceClient
from azt._core.transport import AiohttpTransport, HttpRequest
from azt.legacy import AzureException, AzureHttpError, TablePermissions, TableService
from azt.legacy.cosmosdb_table.common.retry import no_retry
from azt_server_stub import DEV_ACCOUNT, DEV_KEY, ProxyOptions, StubServer, ThreadedStubServer
from tests.proxy_pki import ProxyPki, make_pki, needs_openssl

pytestmark = needs_openssl

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ProxyPki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def stub(pki: ProxyPki) -> Iterator[ThreadedStubServer]:
    options = ProxyOptions(ssl_context=pki.server_context(), credentials=("alice", "s3cret"))
    with ThreadedStubServer(proxy=options) as server:
        yield server


def _proxy_port(stub: ThreadedStubServer) -> int:
    assert stub.proxy_url is not None
    return int(stub.proxy_url.rsplit(":", 1)[1])


def _table() -> str:
    return "t" + uuid.uuid4().hex[:12]


def test_set_proxy_reaches_an_account_host_over_http(stub: ThreadedStubServer) -> None:
    with TableService(DEV_ACCOUNT, DEV_KEY, protocol="http") as service:
        assert service.primary_endpoint == f"{DEV_ACCOUNT}.table.core.windows.net"
        service.retry = no_retry
        service.set_proxy("127.0.0.1", _proxy_port(stub), "alice", "s3cret")
        table = _table()
        assert service.create_table(table)
        service.insert_entity(table, {"PartitionKey": "p", "RowKey": "1", "n": 7})
        assert service.get_entity(table, "p", "1").n == 7
    # the same store, asked directly
    assert stub.backend.table_name(DEV_ACCOUNT, table) == table


def test_wrong_proxy_credentials_are_the_proxys_407(stub: ThreadedStubServer) -> None:
    with TableService(DEV_ACCOUNT, DEV_KEY, protocol="http") as service:
        service.retry = no_retry
        service.set_proxy("127.0.0.1", _proxy_port(stub), "alice", "guess")
        with pytest.raises(AzureHttpError) as caught:
            service.exists("anything")
        assert caught.value.status_code == 407


def test_set_proxy_again_replaces_the_proxy(stub: ThreadedStubServer) -> None:
    with TableService(DEV_ACCOUNT, DEV_KEY, protocol="http") as service:
        service.retry = no_retry
        service.set_proxy("127.0.0.1", 9, "alice", "s3cret")  # nobody listens on port 9
        with pytest.raises(AzureException, match="cannot connect"):
            service.exists("anything")
        service.set_proxy("127.0.0.1", _proxy_port(stub), "alice", "s3cret")
        assert service.exists("anything") is False
    with pytest.raises(ValueError, match="host should not be None"):
        TableService(DEV_ACCOUNT, DEV_KEY).set_proxy(None, 1)  # type: ignore[arg-type]


_SAS_SCRIPT = """
import sys
from azt.legacy import TableService
from azt.legacy.cosmosdb_table.common.retry import no_retry
service = TableService(account_name=sys.argv[1], sas_token=sys.argv[2])
service.retry = no_retry
service.set_proxy("127.0.0.1", sys.argv[3], "alice", "s3cret")
print(sorted(e.RowKey for e in service.query_entities(sys.argv[4])))
"""


def test_set_proxy_tunnels_https_with_the_trust_store_checking_the_host(
    stub: ThreadedStubServer, pki: ProxyPki
) -> None:
    table = _table()
    with TableService(connection_string=stub.connection_string) as keyed:
        keyed.create_table(table)
        for row in ("a", "b"):
            keyed.insert_entity(table, {"PartitionKey": "p", "RowKey": row})
        token = keyed.generate_table_shared_access_signature(
            table, TablePermissions.QUERY, datetime.now(UTC) + timedelta(hours=1)
        )
    args = [DEV_ACCOUNT, token, str(_proxy_port(stub)), table]
    run = [sys.executable, "-c", textwrap.dedent(_SAS_SCRIPT), *args]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # the legacy SDK's way: https://{account}.table.core.windows.net through
    # https://127.0.0.1:{port}, both certificates judged by the default trust store
    trusted = subprocess.run(
        run, env={**env, "SSL_CERT_FILE": str(pki.ca)}, capture_output=True, text=True, timeout=60
    )
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout.strip() == "['a', 'b']"
    untrusted = subprocess.run(
        run,
        env={**env, "SSL_CERT_FILE": os.devnull},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert untrusted.returncode != 0
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr


async def test_transport_proxies_per_scheme(pki: ProxyPki) -> None:
    async with StubServer(proxy=ProxyOptions(ssl_context=pki.server_context())) as stub:
        assert stub.proxy_url is not None
        transport = AiohttpTransport(ssl=pki.client_context(), proxies={"https": stub.proxy_url})
        client = TableServiceClient(
            f"https://{DEV_ACCOUNT}.table.core.windows.net",
            SharedKeyCredential(DEV_ACCOUNT, DEV_KEY),
            transport=transport,
        )
        async with client:
            await client.create_table("throughtunnel")
            assert "throughtunnel" in [name async for name in client.list_tables()]
        await transport.aclose()


async def test_a_refused_tunnel_is_a_connection_error_with_nothing_sent(pki: ProxyPki) -> None:
    async with StubServer(proxy=ProxyOptions(ssl_context=pki.server_context())) as stub:
        assert stub.proxy_url is not None
        transport = AiohttpTransport(ssl=pki.client_context(), proxies={"https": stub.proxy_url})
        try:
            with pytest.raises(ServiceConnectionError, match=r"proxy refused.*403") as caught:
                await transport.send(
                    HttpRequest("GET", "https://elsewhere.table.core.windows.net/Tables", {}, None)
                )
            assert caught.value.sent is False
        finally:
            await transport.aclose()


def test_transport_proxy_urls_are_checked_and_redacted() -> None:
    shown = AiohttpTransport(proxies={"http": "http://u:secret@127.0.0.1:3128"}).proxies
    assert "secret" not in shown["http"]
    assert shown["http"].endswith("@127.0.0.1:3128")
    for bad in ("socks5://127.0.0.1:1080", "127.0.0.1:3128", "http://"):
        with pytest.raises(ValueError, match="http:// or https:// URL with a host"):
            AiohttpTransport(proxies={"https": bad})
