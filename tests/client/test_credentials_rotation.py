"""Key and SAS rotation: a credential is read at every attempt, so a key or token rotated
on the credential object (azure-core's ``AzureNamedKeyCredential``/``AzureSasCredential``
or azt's own) is used by the next request, and by the next retry of a request in flight.

Against the stub started with two keys for the development account (as Azure accounts
have key1 and key2)."""

from __future__ import annotations

import base64
import datetime as dt
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential

import azt
from azt._core.auth import NamedKeyFollower, SasFollower, resolve_credential
from azt._core.signing import decode_key, sign
from azt._core.transport import AiohttpTransport, HttpRequest, HttpResponse
from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer
from azt_server_stub.realism.faults import FaultInjector
from tests.client.conftest import FAST_RETRY, FAST_TIMEOUTS

KEY1 = DEV_KEY
KEY2 = base64.b64encode(b"the second key of the account, 32+ bytes long").decode()
WRONG = base64.b64encode(b"a key the account never had").decode()


class Recording:
    """A transport that records every request it sends (headers as sent, URL as sent)."""

    def __init__(self) -> None:
        self.inner = AiohttpTransport(timeouts=FAST_TIMEOUTS)
        self.sent: list[HttpRequest] = []

    async def send(self, request: HttpRequest) -> HttpResponse:
        self.sent.append(HttpRequest(request.method, request.url, dict(request.headers)))
        return await self.inner.send(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    @property
    def closed(self) -> bool:
        return self.inner.closed


def signed_with(request: HttpRequest, key: str) -> bool:
    """Whether ``request``'s SharedKey signature was made with ``key``."""
    cred = azt.SharedKeyCredential(DEV_ACCOUNT, key)
    path = "/" + request.url.split("/", 3)[3].split("?", 1)[0]
    expected = sign(decode_key(key), cred.string_to_sign(request, path, None))
    return request.headers["Authorization"].endswith(":" + expected)


@asynccontextmanager
async def two_key_stub(faults: FaultInjector | None = None) -> AsyncIterator[StubServer]:
    config = StubConfig(accounts={DEV_ACCOUNT: [KEY1, KEY2]}, faults=faults)
    async with StubServer(config) as stub:
        yield stub


async def _make_table(stub: StubServer, prefix: str) -> str:
    """A new table, created with key1."""
    name = prefix + os.urandom(6).hex()
    async with azt.TableServiceClient(
        stub.table_endpoint(), azt.SharedKeyCredential(DEV_ACCOUNT, KEY1)
    ) as setup:
        await setup.create_table(name)
    return name


@asynccontextmanager
async def table_for(
    stub: StubServer, credential: object, transport: Recording, **options: object
) -> AsyncIterator[azt.TableClient]:
    name = await _make_table(stub, "rot")
    table = azt.TableClient(
        stub.table_endpoint(),
        name,
        credential,
        transport=transport,
        retry=FAST_RETRY,
        **options,  # type: ignore[arg-type]
    )
    try:
        async with table:
            yield table
    finally:
        await transport.aclose()


async def test_azure_named_key_rotation_is_used_by_the_next_request() -> None:
    cred = AzureNamedKeyCredential(DEV_ACCOUNT, KEY1)
    transport = Recording()
    async with two_key_stub() as stub, table_for(stub, cred, transport) as table:
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "1"})
        assert signed_with(transport.sent[-1], KEY1)

        cred.update(DEV_ACCOUNT, KEY2)
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "2"})
        assert signed_with(transport.sent[-1], KEY2)
        assert not signed_with(transport.sent[-1], KEY1)

        cred.update(DEV_ACCOUNT, WRONG)
        with pytest.raises(azt.AuthenticationError):
            await table.get_entity("p", "1")
        assert signed_with(transport.sent[-1], WRONG)

        cred.update(DEV_ACCOUNT, KEY2)  # rotating back to a good key recovers
        assert (await table.get_entity("p", "2"))["RowKey"] == "2"


async def test_azt_shared_key_credential_update_rotates_in_place() -> None:
    cred = azt.SharedKeyCredential(DEV_ACCOUNT, KEY1)
    transport = Recording()
    async with two_key_stub() as stub, table_for(stub, cred, transport) as table:
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "1"})
        cred.update(DEV_ACCOUNT, KEY2)
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "2"})
        assert signed_with(transport.sent[-1], KEY2)
        cred.update(DEV_ACCOUNT, WRONG)
        with pytest.raises(azt.AuthenticationError):
            await table.get_entity("p", "1")


async def test_a_retry_after_rotation_signs_with_the_new_key() -> None:
    """The first attempt meets 503; the key is rotated while the client backs off; the
    retry is signed with the new key (rotating to a wrong one makes the retry fail)."""
    faults = FaultInjector()
    cred = AzureNamedKeyCredential(DEV_ACCOUNT, KEY1)
    new_keys = [KEY2, WRONG]

    async def rotate_while_backing_off(delay: float) -> None:
        cred.update(DEV_ACCOUNT, new_keys.pop(0))

    transport = Recording()
    async with (
        two_key_stub(faults) as stub,
        table_for(stub, cred, transport, sleep=rotate_while_backing_off) as table,
    ):
        faults.add("busy:next=1")
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "1"})
        first, retry = transport.sent[-2:]
        assert signed_with(first, KEY1)
        assert signed_with(retry, KEY2)

        faults.add("busy:next=1")
        with pytest.raises(azt.AuthenticationError) as excinfo:
            await table.get_entity("p", "1")
        assert excinfo.value.attempts == 2
        assert signed_with(transport.sent[-2], KEY2)
        assert signed_with(transport.sent[-1], WRONG)


async def test_a_named_key_rotated_to_garbage_raises_before_sending() -> None:
    cred = AzureNamedKeyCredential(DEV_ACCOUNT, KEY1)
    transport = Recording()
    async with two_key_stub() as stub, table_for(stub, cred, transport) as table:
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "1"})
        sent = len(transport.sent)
        cred.update(DEV_ACCOUNT, "not base64!")
        with pytest.raises(azt.ValidationError, match="AzureNamedKeyCredential was updated"):
            await table.get_entity("p", "1")
        assert len(transport.sent) == sent  # nothing went out, not even with the old key
        cred.update(DEV_ACCOUNT, KEY2)
        assert (await table.get_entity("p", "1"))["RowKey"] == "1"


def _table_sas(expiry: dt.datetime, table: str) -> str:
    return azt.generate_table_sas(
        azt.SharedKeyCredential(DEV_ACCOUNT, KEY2), table, permission="raud", expiry=expiry
    )


async def test_azure_sas_rotation_from_expired_to_valid() -> None:
    now = dt.datetime.now(dt.UTC)
    transport = Recording()
    async with two_key_stub() as stub:
        name = await _make_table(stub, "sasrot")
        expired = _table_sas(now - dt.timedelta(hours=1), name)
        valid = _table_sas(now + dt.timedelta(hours=1), name)
        cred = AzureSasCredential(expired)
        table = azt.TableClient(
            stub.table_endpoint(), name, cred, transport=transport, retry=FAST_RETRY
        )
        try:
            with pytest.raises(azt.AuthenticationError):
                await table.upsert_entity({"PartitionKey": "p", "RowKey": "1"})
            cred.update(valid)
            await table.upsert_entity({"PartitionKey": "p", "RowKey": "1"})
            assert valid.lstrip("?") in transport.sent[-1].url
            assert expired.lstrip("?") not in transport.sent[-1].url
            assert (await table.get_entity("p", "1"))["RowKey"] == "1"
        finally:
            await table.aclose()
            await transport.aclose()


async def test_a_sas_retry_after_rotation_uses_the_new_token() -> None:
    faults = FaultInjector()
    now = dt.datetime.now(dt.UTC)
    transport = Recording()
    async with two_key_stub(faults) as stub:
        name = await _make_table(stub, "sasretry")
        valid = _table_sas(now + dt.timedelta(hours=1), name)
        expired = _table_sas(now - dt.timedelta(hours=1), name)
        sas = azt.SasCredential(valid)

        async def rotate_while_backing_off(delay: float) -> None:
            sas.update(expired)

        table = azt.TableClient(
            stub.table_endpoint(),
            name,
            sas,
            transport=transport,
            retry=FAST_RETRY,
            sleep=rotate_while_backing_off,
        )
        try:
            faults.add("busy:next=1")
            with pytest.raises(azt.AuthenticationError) as excinfo:
                await table.upsert_entity({"PartitionKey": "p", "RowKey": "1"})
            assert excinfo.value.attempts == 2
            first, retry = transport.sent[-2:]
            assert valid.lstrip("?") in first.url
            assert expired.lstrip("?") in retry.url
        finally:
            await table.aclose()
            await transport.aclose()


def test_followers_decode_only_when_the_source_changes() -> None:
    source = AzureNamedKeyCredential(DEV_ACCOUNT, KEY1)
    cred = resolve_credential(source)
    assert isinstance(cred, NamedKeyFollower)
    request = HttpRequest("GET", "u", {"x-ms-date": "D"})
    cred.sign(request, "/devstoreaccount1/Tables", None)
    state = cred._state
    cred.sign(request, "/devstoreaccount1/Tables", None)
    assert cred._state is state  # same key: nothing decoded or rebuilt
    source.update(DEV_ACCOUNT, KEY2)
    cred.sign(request, "/devstoreaccount1/Tables", None)
    assert cred._state is not state
    assert cred.account_key == KEY2

    sas_source = AzureSasCredential("sv=1&sig=a")
    sas = resolve_credential(sas_source)
    assert isinstance(sas, SasFollower)
    token = sas.signature
    assert sas.signature is token
    sas_source.update("?sv=1&sig=b")
    assert sas.apply_to_url("http://h/T") == "http://h/T?sv=1&sig=b"


def test_a_bad_update_leaves_the_credential_unchanged() -> None:
    cred = azt.SharedKeyCredential(DEV_ACCOUNT, KEY1)
    with pytest.raises(azt.ValidationError):
        cred.update(DEV_ACCOUNT, "not base64!")
    with pytest.raises(azt.ValidationError):
        cred.update("", KEY2)
    assert (cred.account_name, cred.account_key) == (DEV_ACCOUNT, KEY1)

    sas = azt.SasCredential("sv=1&sig=a")
    with pytest.raises(azt.ValidationError):
        sas.update("sv=1")  # no signature
    assert sas.signature == "sv=1&sig=a"

    source = AzureSasCredential("sv=1&sig=a")
    follower = resolve_credential(source)
    source.update("sv=2")  # azure-core accepts it; azt refuses to send it
    with pytest.raises(azt.ValidationError, match="AzureSasCredential was updated"):
        follower.apply_to_url("http://h/T")  # type: ignore[union-attr]


def test_follower_update_rotates_the_followed_object() -> None:
    source = AzureNamedKeyCredential(DEV_ACCOUNT, KEY1)
    follower = resolve_credential(source)
    assert isinstance(follower, NamedKeyFollower)
    follower.update(DEV_ACCOUNT, KEY2)
    assert source.named_key.key == KEY2
    with pytest.raises(azt.ValidationError):
        follower.update(DEV_ACCOUNT, "not base64!")
    assert source.named_key.key == KEY2
