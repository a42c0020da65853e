"""Fixtures for the client tests.

End-to-end tests use ``connection_string``: by default an in-process stub
(``azt_server_stub.StubServer``) started for the test; if the environment variable
``AZT_TEST_CONNECTION_STRING`` is set, the same tests target that endpoint instead
(Azurite, or a real account). ``target`` says which (``"stub"``, ``"azurite"`` or
``"azure"``) so tests can skip what a target does not support, with a reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest

import azt

ENV_VAR = "AZT_TEST_CONNECTION_STRING"


def _target_kind() -> str:
    conn = os.environ.get(ENV_VAR)
    if not conn:
        return "stub"
    lowered = conn.lower()
    if "127.0.0.1" in lowered or "localhost" in lowered or "usedevelopmentstorage" in lowered:
        return "azurite"
    return "azure"


@pytest.fixture
def target() -> str:
    """``"stub"`` (in-process), ``"azurite"`` (a local endpoint) or ``"azure"``."""
    return _target_kind()


@pytest.fixture
async def connection_string() -> AsyncIterator[str]:
    """A connection string for the endpoint under test (starting the stub if needed)."""
    conn = os.environ.get(ENV_VAR)
    if conn:
        yield conn
        return
    from azt_server_stub import StubServer

    async with StubServer() as stub:
        yield stub.connection_string


def unique_table_name(prefix: str = "azt") -> str:
    """A fresh table name (letters and digits only)."""
    return prefix + uuid.uuid4().hex[:16]


@pytest.fixture
async def service(connection_string: str) -> AsyncIterator[azt.TableServiceClient]:
    """A service client; tables it created through ``table`` are deleted afterwards."""
    client = azt.TableServiceClient.from_connection_string(
        connection_string, retry=azt.RetryPolicy(max_attempts=3, base=0.05, minimum=0.01)
    )
    async with client:
        yield client


@pytest.fixture
async def table(service: azt.TableServiceClient) -> AsyncIterator[azt.TableClient]:
    """A freshly created, uniquely named table (deleted after the test)."""
    name = unique_table_name()
    client = await service.create_table(name)
    try:
        yield client
    finally:
        if not service.closed:
            await service.delete_table_if_exists(name)
