"""The client against the stub's fault injection and bearer mode (stub only)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import AsyncIterator

import pytest

import azt
from azt_server_stub import StubServer
from azt_server_stub.app import StubConfig
from azt_server_stub.auth import AuthOptions
from azt_server_stub.realism.faults import FaultInjector

from .conftest import FAST_TIMEOUTS, ClientOptions, Sleeps


@pytest.fixture
async def faulty() -> AsyncIterator[tuple[StubServer, FaultInjector]]:
    injector = FaultInjector(seed=1)
    async with StubServer(StubConfig(faults=injector)) as stub:
        yield stub, injector


def client(
    stub: StubServer,
    sleeps: Sleeps,
    policy: azt.AmbiguousOutcomePolicy = azt.AmbiguousOutcomePolicy.RAISE,
) -> azt.TableServiceClient:
    """A client on the seed's retry schedule (``sleeps`` records the waits instead of
    sleeping them) with short timeouts: a silent stub fails it in seconds."""
    return azt.TableServiceClient.from_connection_string(
        stub.connection_string, sleep=sleeps, ambiguous_outcome=policy, timeouts=FAST_TIMEOUTS
    )


async def test_busy_and_timeouts_are_retried(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    stub, injector = faulty
    sleeps = Sleeps()
    async with client(stub, sleeps) as service:
        table = await service.create_table("faults1")
        injector.fail_next("busy", 1, methods={"POST"})
        injector.fail_next("timeout", 1, methods={"POST"})
        result = await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
        assert result.etag
        injector.fail_next("drop-before", 2, methods={"GET"})
        assert (await table.get_entity("p", "r"))["RowKey"] == "r"
    assert len(sleeps.delays) == 4
    assert all(3.0 <= d <= 90.0 for d in sleeps.delays)


async def test_insert_applied_but_answer_dropped(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    stub, injector = faulty
    sleeps = Sleeps()
    async with client(stub, sleeps) as service:
        table = await service.create_table("faults2")
        injector.fail_next("drop-after", 1, methods={"POST"}, table="faults2")
        with pytest.raises(azt.AmbiguousOutcomeError) as info:
            await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
        assert isinstance(info.value.error, azt.EntityAlreadyExistsError)
        rows = await table.list_entities().to_list()
        assert [(e["RowKey"], e["n"]) for e in rows] == [("r", 1)]
    async with client(stub, sleeps, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as service:
        table = service.get_table_client("faults2")
        injector.fail_next("drop-after", 1, methods={"POST"}, table="faults2")
        result = await table.insert_entity({"PartitionKey": "p", "RowKey": "s", "n": 2})
        assert result.ambiguity_resolved
        assert result.etag == (await table.get_entity("p", "s")).metadata.etag
        injector.fail_next("drop-after", 1, methods={"DELETE"}, table="faults2")
        deleted = await table.delete_entity("p", "s")
        assert deleted.ambiguity_resolved
        assert [e["RowKey"] async for e in table.list_entities()] == ["r"]


async def test_batch_applied_but_answer_dropped(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    stub, injector = faulty
    sleeps = Sleeps()
    async with client(stub, sleeps) as service:
        table = await service.create_table("faults3")
        batch = table.batch()
        for i in range(3):
            batch.create({"PartitionKey": "p", "RowKey": str(i)})
        injector.fail_next("drop-after", 1, path=r"/\$batch$")
        with pytest.raises(azt.AmbiguousOutcomeError) as info:
            await table.submit_transaction(batch)
        assert isinstance(info.value.error, azt.TransactionError)
        assert len(await table.list_entities().to_list()) == 3
    # Documented choice: a transaction is not verified by reading it back, so even
    # ASSUME_SUCCEEDED reports it as ambiguous (tests/realism pins the same contract).
    async with client(stub, sleeps, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as service:
        table = service.get_table_client("faults3")
        batch = table.batch()
        batch.create({"PartitionKey": "q", "RowKey": "0"})
        injector.fail_next("drop-after", 1, path=r"/\$batch$")
        with pytest.raises(azt.AmbiguousOutcomeError):
            await table.submit_transaction(batch)
        assert len(await table.list_entities().to_list()) == 4


def _token(claims: dict[str, object]) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(claims)}.c2ln"


class Token:
    def __init__(self, token: str, expires_on: int) -> None:
        self.token = token
        self.expires_on = expires_on


class Identity:
    def __init__(self) -> None:
        self.calls = 0

    async def get_token(self, *scopes: str, **kwargs: object) -> Token:
        self.calls += 1
        now = int(time.time())
        claims = {"aud": "https://storage.azure.com", "nbf": now - 10, "exp": now + 3600}
        return Token(_token(claims), now + 3600)


async def test_bearer_tokens_against_the_stub(client_options: ClientOptions) -> None:
    config = StubConfig(auth=AuthOptions(allow_bearer=True, bearer_allow_http=True))
    identity = Identity()
    async with (
        StubServer(config) as stub,
        azt.TableServiceClient(stub.table_endpoint(), identity, **client_options) as service,
    ):
        table = await service.create_table("bearer1")
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
        assert (await table.get_entity("p", "r"))["RowKey"] == "r"
        assert "bearer1" in await service.list_tables().to_list()
    assert identity.calls == 1


async def test_table_create_and_delete_with_lost_answers(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    stub, injector = faulty
    sleeps = Sleeps()
    async with client(stub, sleeps) as service:
        injector.fail_next("drop-after", 1, methods={"POST"}, path=r"/Tables$")
        with pytest.raises(azt.AmbiguousOutcomeError) as info:
            await service.create_table("faults4")
        assert isinstance(info.value.error, azt.TableAlreadyExistsError)
        injector.fail_next("drop-after", 1, methods={"DELETE"})
        with pytest.raises(azt.AmbiguousOutcomeError):
            await service.delete_table("faults4")
    async with client(stub, sleeps, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as service:
        injector.fail_next("drop-after", 1, methods={"POST"}, path=r"/Tables$")
        await service.create_table("faults5")
        assert "faults5" in await service.list_tables().to_list()
        injector.fail_next("drop-after", 1, methods={"DELETE"})
        await service.delete_table("faults5")
        assert await service.list_tables().to_list() == []
