"""Credentials: SAS application, bearer token caching/refresh, credential resolution."""

from __future__ import annotations

import asyncio
import time

import pytest

import azt
from azt._core.auth import BearerTokenCredential, resolve_credential
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt._core.transport import HttpRequest, HttpResponse, MockTransport


class Token:
    def __init__(self, token: str, expires_on: float) -> None:
        self.token = token
        self.expires_on = expires_on


class FakeIdentity:
    """An azure-identity style async credential counting its calls."""

    def __init__(self, lifetime: float = 3600.0) -> None:
        self.calls = 0
        self.scopes: list[tuple[str, ...]] = []
        self.lifetime = lifetime

    async def get_token(self, *scopes: str, **kwargs: object) -> Token:
        self.calls += 1
        self.scopes.append(scopes)
        await asyncio.sleep(0)  # let concurrent callers pile up on the lock
        return Token(f"tok{self.calls}", time.time() + self.lifetime)


async def test_bearer_token_is_cached_and_fetched_once_concurrently() -> None:
    identity = FakeIdentity()
    bearer = BearerTokenCredential(identity)
    headers = await asyncio.gather(*(bearer.get_header() for _ in range(20)))
    assert set(headers) == {"Bearer tok1"}
    assert identity.calls == 1
    assert identity.scopes == [("https://storage.azure.com/.default",)]


async def test_bearer_token_is_refreshed_before_expiry() -> None:
    identity = FakeIdentity(lifetime=200.0)  # inside the 300 s refresh margin
    bearer = BearerTokenCredential(identity)
    assert await bearer.get_header() == "Bearer tok1"
    assert await bearer.get_header() == "Bearer tok2"
    long_lived = BearerTokenCredential(FakeIdentity(lifetime=3600.0), refresh_margin=300.0)
    assert await long_lived.get_header() == await long_lived.get_header()


async def test_bearer_token_rejects_malformed_tokens() -> None:
    class Bad:
        async def get_token(self, *scopes: str, **kwargs: object) -> object:
            return object()

    with pytest.raises(azt.ValidationError, match="token"):
        await BearerTokenCredential(Bad()).get_header()


async def test_client_sends_bearer_header_and_refuses_plain_http() -> None:
    identity = FakeIdentity()
    seen: list[str] = []

    def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request.headers["Authorization"])
        return HttpResponse(200, {}, b'{"value":[]}')

    async with azt.TableServiceClient(
        "https://acct.table.core.windows.net", identity, transport=MockTransport(handler)
    ) as client:
        await client.list_tables().to_list()
        await client.list_tables().to_list()
    assert seen == ["Bearer tok1", "Bearer tok1"]
    with pytest.raises(azt.ValidationError, match="https"):
        azt.TableServiceClient("http://acct.table.core.windows.net", identity)
    # loopback emulators are allowed
    local = azt.TableServiceClient("http://127.0.0.1:10002/devstoreaccount1", identity)
    await local.aclose()


async def test_sas_is_appended_and_no_authorization_header() -> None:
    seen: list[HttpRequest] = []

    def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        return HttpResponse(200, {}, b'{"value":[]}')

    async with azt.TableClient(
        "https://acct.table.core.windows.net",
        "mytable",
        "?sv=2019-02-02&tn=mytable&sig=abc%3D",
        transport=MockTransport(handler),
    ) as table:
        await table.query_entities("PartitionKey eq 'a'").to_list()
    request = seen[0]
    assert "Authorization" not in request.headers
    assert request.url == (
        "https://acct.table.core.windows.net/mytable()?$filter=PartitionKey%20eq%20%27a%27"
        "&sv=2019-02-02&tn=mytable&sig=abc%3D"
    )


async def test_sas_in_endpoint_url_and_update() -> None:
    cred = azt.SasCredential("sv=1&sig=a")
    cred.update("?sv=2&sig=b")
    assert cred.apply_to_url("http://h/Tables") == "http://h/Tables?sv=2&sig=b"
    with pytest.raises(azt.ValidationError, match="sig"):
        azt.SasCredential("sv=1")
    sent: list[HttpRequest] = []

    def handler(request: HttpRequest) -> HttpResponse:
        sent.append(request)
        return HttpResponse(204, {})

    client = azt.TableServiceClient(
        "https://a.table.core.windows.net/?sv=1&sig=x", transport=MockTransport(handler)
    )
    await client.delete_table("movies")
    await client.aclose()
    # The token in the endpoint is the credential: it rides on every request URL.
    assert sent[0].url == "https://a.table.core.windows.net/Tables('movies')?sv=1&sig=x"
    assert "Authorization" not in sent[0].headers
    with pytest.raises(azt.ValidationError, match="also given"):
        azt.TableServiceClient("https://a.table.core.windows.net/?sig=x", "sig=y")
    with pytest.raises(azt.ValidationError, match="no credential"):
        azt.TableServiceClient("https://a.table.core.windows.net/")


def test_resolve_credential_accepts_azure_core_shapes() -> None:
    class NamedKey:
        named_key = ("acct", DEV_ACCOUNT_KEY)

    class Sas:
        signature = "sv=1&sig=x"

    key = resolve_credential(NamedKey())
    assert isinstance(key, azt.SharedKeyCredential)
    assert key.account_name == "acct"
    assert isinstance(resolve_credential(Sas()), azt.SasCredential)
    assert isinstance(resolve_credential(FakeIdentity()), BearerTokenCredential)
    with pytest.raises(azt.ValidationError, match="unsupported credential"):
        resolve_credential(42)


async def test_shared_key_lite_from_connection_string() -> None:
    seen: list[str] = []

    def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request.headers["Authorization"])
        return HttpResponse(200, {}, b'{"value":[]}')

    client = azt.TableServiceClient.from_connection_string(
        "UseDevelopmentStorage=true", use_shared_key_lite=True, transport=MockTransport(handler)
    )
    async with client:
        await client.list_tables().to_list()
    assert seen[0].startswith("SharedKeyLite devstoreaccount1:")


def _refusing(refused: set[str]) -> MockTransport:
    def handler(request: HttpRequest) -> HttpResponse:
        if request.headers.get("Authorization") in refused:
            return HttpResponse(
                401,
                {
                    "x-ms-request-id": "r401",
                    "x-ms-error-code": "InvalidAuthenticationInfo",
                    "WWW-Authenticate": 'Bearer error="invalid_token"',
                },
            )
        return HttpResponse(204, {"x-ms-request-id": "ok"})

    return MockTransport(handler)


async def test_a_401_to_a_bearer_token_retries_once_with_a_fresh_token() -> None:
    identity = FakeIdentity()
    transport = _refusing({"Bearer tok1"})
    async with azt.TableClient(
        "https://acct.table.core.windows.net", "movies", identity, transport=transport
    ) as table:
        result = await table.delete_entity("p", "r")
        await table.delete_entity("p", "r")  # the fresh token stays cached
    assert result.request_id == "ok"
    assert identity.calls == 2
    sent = [r.headers["Authorization"] for r in transport.requests]
    assert sent == ["Bearer tok1", "Bearer tok2", "Bearer tok2"]
    ids = [r.headers["x-ms-client-request-id"] for r in transport.requests]
    assert len(set(ids)) == 3


async def test_a_second_401_is_raised_and_shared_keys_are_not_retried() -> None:
    identity = FakeIdentity()
    transport = _refusing({"Bearer tok1", "Bearer tok2", "Bearer tok3"})
    async with azt.TableClient(
        "https://acct.table.core.windows.net", "movies", identity, transport=transport
    ) as table:
        with pytest.raises(azt.ServiceError) as info:
            await table.delete_entity("p", "r")
    assert info.value.status == 401
    assert info.value.request_id == "r401"
    assert len(transport.requests) == 2
    assert info.value.attempts == 2  # the resend with a fresh token is an attempt too

    def always_401(request: HttpRequest) -> HttpResponse:
        return HttpResponse(401, {"x-ms-error-code": "InvalidAuthenticationInfo"})

    keyed = MockTransport(always_401)
    async with azt.TableClient(
        "http://127.0.0.1:10002/devstoreaccount1",
        "movies",
        azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY),
        transport=keyed,
    ) as table:
        with pytest.raises(azt.ServiceError):
            await table.delete_entity("p", "r")
    assert len(keyed.requests) == 1
