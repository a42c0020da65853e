"""The migration tests' client: an async service client on the embedded stub, with the
stub's retry policy (short back-offs)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import azt
from azt.testing import stub_retry_policy
from azt_server_stub import StubServer


@pytest.fixture
async def service(azt_stub: StubServer) -> AsyncIterator[azt.TableServiceClient]:
    async with azt.TableServiceClient.from_connection_string(
        azt_stub.connection_string, retry=stub_retry_policy()
    ) as client:
        yield client
