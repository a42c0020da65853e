"""Fixtures for the context tests: an in-process stub, a service client, fresh tables."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

import azt
from azt_server_stub import StubServer


@pytest.fixture
async def stub() -> AsyncIterator[StubServer]:
    """A running in-process stub (stopped after the test)."""
    async with StubServer() as server:
        yield server


@pytest.fixture
async def service(stub: StubServer) -> AsyncIterator[azt.TableServiceClient]:
    """A service client on the stub with quick retries."""
    client = azt.TableServiceClient.from_connection_string(
        stub.connection_string,
        retry=azt.RetryPolicy(max_attempts=3, base=0.02, minimum=0.01, maximum=0.1),
    )
    async with client:
        yield client


def fresh_name(prefix: str = "ctx") -> str:
    """A unique table name."""
    return prefix + uuid.uuid4().hex[:12]


@pytest.fixture
async def table(service: azt.TableServiceClient) -> str:
    """The name of a freshly created table."""
    name = fresh_name()
    await service.create_table(name)
    return name


async def stored_entity(
    service: azt.TableServiceClient, table: str, pk: str, rk: str
) -> azt.TableEntity:
    """The entity as stored (read without the context)."""
    return await service.get_table_client(table).get_entity(pk, rk)


async def entity_exists(service: azt.TableServiceClient, table: str, pk: str, rk: str) -> bool:
    """Whether the entity is stored."""
    try:
        await stored_entity(service, table, pk, rk)
    except azt.EntityNotFoundError:
        return False
    return True
