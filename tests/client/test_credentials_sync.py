"""Token credentials of every shape: async and synchronous ``get_token`` both work against
the stub's bearer mode (a synchronous one never blocks the event loop), and an object of
the wrong shape is refused when the client is made, never at the first request."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import threading
import time
import warnings
from typing import Any

import pytest
from azure.core.credentials import AccessToken, AzureNamedKeyCredential, TokenCredential

import azt
from azt._core.auth import BearerTokenCredential, resolve_credential
from azt_server_stub import AuthOptions, StubConfig, StubServer


def _jwt() -> str:
    now = int(time.time())
    claims = {"aud": "https://storage.azure.com", "nbf": now - 10, "exp": now + 3600}

    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2ln"


class SyncIdentity:
    """Shaped like azure-identity's synchronous credentials: ``get_token`` blocks. With a
    ``loop``, it asks that loop to set an event and waits for it: only a loop left free
    while get_token runs can do so."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop
        self.threads: list[int] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.threads.append(threading.get_ident())
        if self.loop is not None:
            released = threading.Event()
            self.loop.call_soon_threadsafe(released.set)
            if not released.wait(timeout=5):
                raise AssertionError("get_token blocked the event loop that would release it")
        return AccessToken(_jwt(), int(time.time()) + 3600)


class AsyncIdentity:
    async def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken(_jwt(), int(time.time()) + 3600)


def bearer_stub() -> StubServer:
    return StubServer(StubConfig(auth=AuthOptions(allow_bearer=True, bearer_allow_http=True)))


async def test_a_sync_credential_works_against_the_bearer_stub() -> None:
    identity = SyncIdentity()
    assert isinstance(identity, TokenCredential)  # azure-core's own protocol
    async with (
        bearer_stub() as stub,
        azt.TableServiceClient(stub.table_endpoint(), identity) as service,
    ):
        table = await service.create_table("syncbearer")
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
        assert (await table.get_entity("p", "r"))["RowKey"] == "r"
    assert len(identity.threads) == 1  # fetched once, then cached


async def test_a_sync_get_token_runs_off_the_event_loop() -> None:
    """get_token waits for an event only the event loop sets: were it called on the loop's
    thread it would wait its whole timeout and fail."""
    identity = SyncIdentity(asyncio.get_running_loop())
    async with (
        bearer_stub() as stub,
        azt.TableServiceClient(stub.table_endpoint(), identity) as service,
    ):
        assert await service.list_tables().to_list() == []
    assert len(identity.threads) == 1
    assert identity.threads[0] != threading.get_ident()


async def test_an_async_credential_still_works_against_the_bearer_stub() -> None:
    async with (
        bearer_stub() as stub,
        azt.TableServiceClient(stub.table_endpoint(), AsyncIdentity()) as service,
    ):
        assert await service.list_tables().to_list() == []


def test_sync_or_async_is_decided_once_from_the_declaration() -> None:
    class AsyncCallable:
        async def __call__(self, *scopes: str, **kwargs: Any) -> AccessToken:
            return AccessToken("t", 4_000_000_000)

    class Partial:
        get_token = functools.partial(AsyncIdentity.get_token, AsyncIdentity())

    class CallableObject:
        get_token = AsyncCallable()

    assert BearerTokenCredential(AsyncIdentity()).is_async is True
    assert BearerTokenCredential(SyncIdentity()).is_async is False
    assert BearerTokenCredential(Partial()).is_async is True
    assert BearerTokenCredential(CallableObject()).is_async is True


def test_get_token_that_is_not_callable_is_refused_at_construction() -> None:
    class NotCallable:
        get_token = "token"

    with pytest.raises(azt.ValidationError, match=r"NotCallable\.get_token is a str"):
        azt.TableServiceClient("http://127.0.0.1:1", NotCallable())


def test_get_token_that_takes_no_scope_is_refused_at_construction() -> None:
    class NoScope:
        def get_token(self) -> AccessToken:
            return AccessToken("t", 4_000_000_000)

    class AsyncNoScope:
        async def get_token(self) -> AccessToken:
            return AccessToken("t", 4_000_000_000)

    for cred in (NoScope(), AsyncNoScope()):
        with pytest.raises(azt.ValidationError, match="cannot be called with a scope"):
            azt.TableServiceClient("http://127.0.0.1:1", cred)


def test_named_key_of_the_wrong_shape_is_refused_with_a_typed_error() -> None:
    class OneItem:
        named_key = ("account",)

    with pytest.raises(azt.ValidationError, match=r"named_key must be a \(name, key\) pair"):
        resolve_credential(OneItem())
    good = resolve_credential(AzureNamedKeyCredential("acct", "a2V5"))
    assert isinstance(good, azt.SharedKeyCredential)


async def test_a_plain_get_token_returning_an_awaitable_gets_a_clear_error() -> None:
    """The one shape the declaration cannot tell: a plain ``def`` that returns a coroutine.
    It is called as synchronous; the error says to declare it ``async def`` and the
    coroutine is closed (no "never awaited" warning)."""

    class Disguised:
        def get_token(self, *scopes: str, **kwargs: Any) -> Any:
            return AsyncIdentity().get_token(*scopes)

    bearer = BearerTokenCredential(Disguised())
    assert bearer.is_async is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(azt.ValidationError, match="declare it 'async def'"):
            await bearer.get_header()
