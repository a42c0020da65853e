"""Fixtures for the ``azt`` command-line tests: a stub on a background thread (the CLI runs
its own event loop with ``asyncio.run``, so the tests are synchronous)."""

from __future__ import annotations

import io
import secrets
from collections.abc import Iterator

import attrs
import pytest

from azt.cli import main
from azt_server_stub import ThreadedStubServer


@pytest.fixture(scope="module")
def stub() -> Iterator[ThreadedStubServer]:
    with ThreadedStubServer() as server:
        yield server


@pytest.fixture
def conn(stub: ThreadedStubServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """The stub's connection string, also exported as ``AZT_CONNECTION_STRING``."""
    monkeypatch.setenv("AZT_CONNECTION_STRING", stub.connection_string)
    return stub.connection_string


@attrs.define
class Run:
    status: int
    out: str
    err: str


def run(*argv: str, stdin: str = "") -> Run:
    """``azt *argv`` in-process with captured streams."""
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return Run(status, out.getvalue(), err.getvalue())


@pytest.fixture
def table_name() -> str:
    return f"cli{secrets.token_hex(5)}"
