"""azure-identity's real credential classes, sync and async, through azt against the stub.

No network: azure-identity's ``ManagedIdentityCredential`` (and ``DefaultAzureCredential``
with everything but managed identity excluded) honours the App Service environment
(``IDENTITY_ENDPOINT`` + ``IDENTITY_HEADER``), so a small token endpoint on 127.0.0.1
issues the tokens: a JWT whose audience is the resource asked for, which the stub's bearer
mode checks. The scope asked for follows the endpoint (Storage, or Cosmos DB's Table API)
unless overridden with ``BearerTokenCredential(scope=...)``.
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from azure.identity import DefaultAzureCredential, ManagedIdentityCredential
from azure.identity.aio import DefaultAzureCredential as AioDefaultAzureCredential
from azure.identity.aio import ManagedIdentityCredential as AioManagedIdentityCredential

import azt
from azt._core.auth import (
    COSMOS_SCOPE,
    STORAGE_SCOPE,
    BearerTokenCredential,
    resolve_credential,
    token_scope_for,
)
from azt._core.connection_string import is_cosmos_endpoint
from azt._core.transport import HttpRequest, HttpResponse, MockTransport
from azt_server_stub import AuthOptions, StubConfig, StubServer
from tests.client.conftest import FAST_RETRY

IDENTITY_HEADER = "local-identity-secret"

# Everything in the environment that could steer azure-identity away from the local
# endpoint (another managed identity flavour, a client id, a credential selection).
_STEERING = (
    "MSI_ENDPOINT",
    "MSI_SECRET",
    "IDENTITY_SERVER_THUMBPRINT",
    "IMDS_ENDPOINT",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_TOKEN_CREDENTIALS",
    "AZURE_POD_IDENTITY_AUTHORITY_HOST",
)


def _b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


class TokenEndpoint:
    """App Service's managed identity endpoint on 127.0.0.1: answers
    ``GET ?api-version=2019-08-01&resource=R`` (with the ``X-IDENTITY-HEADER`` secret) with
    a JWT for audience ``R``. ``resources`` records what was asked for."""

    def __init__(self) -> None:
        self.resources: list[str] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _token(self, request: web.Request) -> web.Response:
        if request.headers.get("X-IDENTITY-HEADER") != IDENTITY_HEADER:
            return web.json_response({"error": "missing identity header"}, status=400)
        resource = request.query.get("resource", "")
        self.resources.append(resource)
        now = int(time.time())
        claims = {"aud": resource, "nbf": now - 10, "exp": now + 3600, "oid": "local-mi"}
        jwt = f"{_b64url({'alg': 'RS256', 'typ': 'JWT'})}.{_b64url(claims)}.c2ln"
        return web.json_response(
            {
                "access_token": jwt,
                "expires_on": str(now + 3600),
                "resource": resource,
                "token_type": "Bearer",
            }
        )

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/msi/token", self._token)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}/msi/token"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@pytest.fixture
async def token_endpoint(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[TokenEndpoint]:
    """A running local token endpoint, with the environment pointing azure-identity at it."""
    endpoint = TokenEndpoint()
    await endpoint.start()
    for name in _STEERING:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("IDENTITY_ENDPOINT", endpoint.url)
    monkeypatch.setenv("IDENTITY_HEADER", IDENTITY_HEADER)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    try:
        yield endpoint
    finally:
        await endpoint.stop()


@asynccontextmanager
async def bearer_stub(*audiences: str) -> AsyncIterator[StubServer]:
    auth = AuthOptions(allow_bearer=True, bearer_allow_http=True)
    if audiences:
        auth = AuthOptions(allow_bearer=True, bearer_allow_http=True, bearer_audiences=audiences)
    async with StubServer(StubConfig(auth=auth)) as stub:
        yield stub


async def round_trip(stub: StubServer, credential: object) -> None:
    """Create a table, write and read an entity with ``credential``."""
    name = "identity" + os.urandom(5).hex()
    async with azt.TableServiceClient(stub.table_endpoint(), credential, retry=FAST_RETRY) as svc:
        table = await svc.create_table(name)
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "Who": "mi"})
        assert (await table.get_entity("p", "r"))["Who"] == "mi"


@pytest.fixture
def sync_mi() -> Iterator[ManagedIdentityCredential]:
    with ManagedIdentityCredential() as credential:
        yield credential


async def test_sync_managed_identity_credential(
    token_endpoint: TokenEndpoint, sync_mi: ManagedIdentityCredential
) -> None:
    async with bearer_stub() as stub:
        await round_trip(stub, sync_mi)
    assert token_endpoint.resources == ["https://storage.azure.com"]  # asked once, cached


async def test_aio_managed_identity_credential(token_endpoint: TokenEndpoint) -> None:
    async with AioManagedIdentityCredential() as credential, bearer_stub() as stub:
        await round_trip(stub, credential)
    assert token_endpoint.resources == ["https://storage.azure.com"]


_ONLY_MANAGED_IDENTITY = {
    "exclude_environment_credential": True,
    "exclude_workload_identity_credential": True,
    "exclude_shared_token_cache_credential": True,
    "exclude_visual_studio_code_credential": True,
    "exclude_cli_credential": True,
    "exclude_powershell_credential": True,
    "exclude_developer_cli_credential": True,
    "exclude_interactive_browser_credential": True,
    "exclude_broker_credential": True,
}


async def test_sync_default_azure_credential(token_endpoint: TokenEndpoint) -> None:
    with DefaultAzureCredential(**_ONLY_MANAGED_IDENTITY) as credential:
        async with bearer_stub() as stub:
            await round_trip(stub, credential)
    assert token_endpoint.resources == ["https://storage.azure.com"]


async def test_aio_default_azure_credential(token_endpoint: TokenEndpoint) -> None:
    async with (
        AioDefaultAzureCredential(**_ONLY_MANAGED_IDENTITY) as credential,
        bearer_stub() as stub,
    ):
        await round_trip(stub, credential)
    assert token_endpoint.resources == ["https://storage.azure.com"]


async def test_a_cosmos_only_audience_refuses_the_storage_scope_and_the_override_works(
    token_endpoint: TokenEndpoint, sync_mi: ManagedIdentityCredential
) -> None:
    """The stub accepting only Cosmos DB's audience: the default (Storage) scope is refused;
    ``BearerTokenCredential(scope=COSMOS_SCOPE)`` overrides it and succeeds."""
    async with bearer_stub("https://cosmos.azure.com") as stub:
        with pytest.raises(azt.AuthenticationError):
            await round_trip(stub, sync_mi)
        await round_trip(stub, BearerTokenCredential(sync_mi, scope=COSMOS_SCOPE))
    assert "https://storage.azure.com" in token_endpoint.resources
    assert token_endpoint.resources[-1] == "https://cosmos.azure.com"


@pytest.mark.parametrize(
    "endpoint",
    ["https://acct.table.cosmos.azure.com", "https://acct.table.cosmosdb.azure.com"],
)
async def test_the_scope_follows_a_cosmos_endpoint(
    token_endpoint: TokenEndpoint, endpoint: str
) -> None:
    """A Cosmos DB Table API endpoint asks azure-identity for Cosmos DB's scope, by itself
    (no network: a mock transport plays the service)."""
    seen: list[str] = []

    def service(request: HttpRequest) -> HttpResponse:
        seen.append(request.headers.get("Authorization", ""))
        return HttpResponse(204, {}, b"")

    async with (
        AioManagedIdentityCredential() as credential,
        azt.TableClient(endpoint, "movies", credential, transport=MockTransport(service)) as table,
    ):
        await table.delete_entity("p", "r")
    assert token_endpoint.resources == ["https://cosmos.azure.com"]
    assert len(seen) == 1
    assert seen[0].startswith("Bearer ")


async def test_an_explicit_scope_wins_over_the_endpoint(token_endpoint: TokenEndpoint) -> None:
    async with AioManagedIdentityCredential() as credential:
        bearer = BearerTokenCredential(credential, scope="https://example.test/.default")
        transport = MockTransport(lambda request: HttpResponse(204, {}, b""))
        async with azt.TableClient(
            "https://acct.table.cosmos.azure.com", "movies", bearer, transport=transport
        ) as table:
            await table.delete_entity("p", "r")
    assert token_endpoint.resources == ["https://example.test"]


async def test_azt_never_closes_the_callers_credential(token_endpoint: TokenEndpoint) -> None:
    """The caller owns the credential: closing a client leaves it usable for the next."""
    closed: list[bool] = []

    class Watched(AioManagedIdentityCredential):
        async def close(self) -> None:
            closed.append(True)
            await super().close()

    async with Watched() as credential, bearer_stub() as stub:
        await round_trip(stub, credential)
        assert closed == []
        await round_trip(stub, credential)  # a second client, same credential
        assert closed == []
    assert closed == [True]  # closed once, by its owner's `async with`


def test_scope_for_endpoints() -> None:
    assert token_scope_for("https://acct.table.core.windows.net") == STORAGE_SCOPE
    assert token_scope_for("https://acct-secondary.table.core.windows.net") == STORAGE_SCOPE
    assert token_scope_for("http://127.0.0.1:10002/devstoreaccount1") == STORAGE_SCOPE
    assert token_scope_for("http://localhost:8902/") == STORAGE_SCOPE  # not guessed by port
    assert token_scope_for("https://acct.table.cosmos.azure.com/") == COSMOS_SCOPE
    assert token_scope_for("https://ACCT.Table.Cosmos.Azure.com") == COSMOS_SCOPE
    assert token_scope_for("https://acct-secondary.table.cosmos.azure.com") == COSMOS_SCOPE
    assert token_scope_for("https://acct.table.cosmosdb.azure.com") == COSMOS_SCOPE
    assert token_scope_for("https://acct.table.cosmos.azure.us") == (
        "https://cosmos.azure.us/.default"
    )
    assert token_scope_for("https://acct.table.cosmos.azure.cn") == (
        "https://cosmos.azure.cn/.default"
    )
    assert not is_cosmos_endpoint("https://cosmos.table.core.windows.net")
    assert not is_cosmos_endpoint("https://table.cosmos.azure.com")  # no account label


def test_resolve_binds_the_scope_to_the_endpoint() -> None:
    class Cred:
        async def get_token(self, *scopes: str, **kwargs: object) -> object:
            raise AssertionError("not called")

    cosmos = "https://acct.table.cosmos.azure.com"
    storage = "https://acct.table.core.windows.net"
    raw = Cred()
    assert resolve_credential(raw, cosmos).scope == COSMOS_SCOPE  # type: ignore[union-attr]
    assert resolve_credential(raw, storage).scope == STORAGE_SCOPE  # type: ignore[union-attr]

    unscoped = BearerTokenCredential(raw)
    assert resolve_credential(unscoped, storage) is unscoped  # shares its token cache
    bound = resolve_credential(unscoped, cosmos)
    assert isinstance(bound, BearerTokenCredential)
    assert (bound.scope, bound.credential) == (COSMOS_SCOPE, raw)

    pinned = BearerTokenCredential(raw, scope="https://custom/.default")
    assert resolve_credential(pinned, cosmos) is pinned
    with pytest.raises(azt.ValidationError):
        BearerTokenCredential(raw, scope="")
