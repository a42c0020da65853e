"""Fixtures for the client tests.

End-to-end tests use ``connection_string``: by default an in-process stub
(``azt_server_stub.StubServer``) started for the test; if the environment variable
``AZT_TEST_CONNECTION_STRING`` is set, the same tests target that endpoint instead
(Azurite, or a real account). ``target`` says which (``"stub"``, ``"azurite"`` or
``"azure"``) so tests can skip what a target does not support, with a reason.

No test here may hang on an endpoint that stops answering: every client built against a
live endpoint takes ``client_options`` (a fast retry policy and short timeouts, so a
silent server fails a request within seconds, not the default policy's minutes), and
every coroutine test in this folder runs under an ``asyncio`` deadline
(``TEST_DEADLINE`` seconds) that fails it instead of letting it hang.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypedDict

import pytest

import azt
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt._core.transport import MockTransport

ENV_VAR = "AZT_TEST_CONNECTION_STRING"

ENDPOINT = "http://127.0.0.1:10002/devstoreaccount1"
"""The emulator-style endpoint of the unit tests' clients (nothing listens: MockTransport)."""

DEV_CREDENTIAL = azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)


def mock_table(
    transport: MockTransport, table_name: str = "movies", **options: Any
) -> azt.TableClient:
    """A table client on ``ENDPOINT`` with the dev account key, answered by ``transport``."""
    return azt.TableClient(ENDPOINT, table_name, DEV_CREDENTIAL, transport=transport, **options)


class Sleeps:
    """An injected sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


FAST_RETRY = azt.RetryPolicy(max_attempts=3, base=0.05, minimum=0.01, maximum=0.5)
"""Three attempts, waits of 0.01 s and about 0.06 s: enough for a busy stub, never minutes."""

FAST_TIMEOUTS = azt.Timeouts(total=10.0, connect=5.0, read=10.0)
"""A silent endpoint fails an attempt in at most 10 s (three attempts: about 30 s)."""

TEST_DEADLINE = 60.0
"""Seconds a coroutine test in this folder may run before it fails with TimeoutError."""


class ClientOptions(TypedDict):
    """Keyword arguments for a client built against a live endpoint."""

    retry: azt.RetryPolicy
    timeouts: azt.Timeouts


def _with_deadline(
    test: Callable[..., Coroutine[Any, Any, None]],
) -> Callable[..., Coroutine[Any, Any, None]]:
    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> None:
        async with asyncio.timeout(TEST_DEADLINE):
            await test(*args, **kwargs)

    return run


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run every coroutine test of this folder under ``TEST_DEADLINE`` (fail, never hang)."""
    here = os.path.dirname(__file__)
    for item in items:
        if not isinstance(item, pytest.Function) or not str(item.path).startswith(here):
            continue
        if inspect.iscoroutinefunction(item.obj) and not hasattr(item.obj, "hypothesis"):
            item.obj = _with_deadline(item.obj)


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
def client_options() -> ClientOptions:
    """``retry`` and ``timeouts`` for a client against a live endpoint: fail fast, not hang.

    Example: ``TableClient.from_connection_string(conn, name, **client_options)``.
    """
    return ClientOptions(retry=FAST_RETRY, timeouts=FAST_TIMEOUTS)


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
async def service(
    connection_string: str, client_options: ClientOptions
) -> AsyncIterator[azt.TableServiceClient]:
    """A service client; tables it created through ``table`` are deleted afterwards."""
    client = azt.TableServiceClient.from_connection_string(connection_string, **client_options)
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
