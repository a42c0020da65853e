"""``azt-stub --loop``: uvloop when installed (the ``[stub]`` extra), else asyncio's loop.

The stub's answers must not depend on the loop: ``scripts/test.sh`` runs ``tests/stub`` a
second time with ``AZT_TEST_LOOP=uvloop`` (the embedded stub on uvloop), and the command
line is checked here on both loops, serving the same requests.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

import azt
from azt_server_stub import __main__ as cli

from .conftest import REPO, StubProcess

HAS_UVLOOP = cli.has_uvloop()
needs_uvloop = pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop is not installed")


async def test_the_tests_run_on_the_loop_asked_for() -> None:
    """``AZT_TEST_LOOP`` reaches pytest-asyncio (else the uvloop leg would test nothing)."""
    wanted = os.environ.get("AZT_TEST_LOOP", "asyncio")
    assert cli.loop_name(asyncio.get_running_loop()) == wanted


@needs_uvloop
def test_auto_takes_uvloop_when_installed() -> None:
    name, factory = cli.loop_factory("auto")
    assert name == "uvloop"
    loop = factory()
    try:
        assert cli.loop_name(loop) == "uvloop"
    finally:
        loop.close()


def test_asyncio_is_asked_for_by_name() -> None:
    name, factory = cli.loop_factory("asyncio")
    assert name == "asyncio"
    loop = factory()
    try:
        assert cli.loop_name(loop) == "asyncio"
        assert type(loop).__module__.startswith("asyncio")
    finally:
        loop.close()


def test_without_uvloop_auto_is_asyncio_and_uvloop_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "uvloop", None)
    assert cli.loop_factory("auto")[0] == "asyncio"
    with pytest.raises(ValueError, match=r"uvloop is not installed.*azt-tables\[stub\]"):
        cli.loop_factory("uvloop")
    with pytest.raises(ValueError, match="unknown event loop 'trio'"):
        cli.loop_factory("trio")


def test_an_unknown_loop_is_a_usage_error() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "azt_server_stub", "--loop", "trio"],
        capture_output=True,
        text=True,
        cwd=str(REPO),
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=60,
    )
    assert run.returncode == 2
    assert "--loop: invalid choice: 'trio'" in run.stderr


@pytest.mark.parametrize(
    "choice",
    [
        "asyncio",
        pytest.param("uvloop", marks=needs_uvloop),
        pytest.param("auto", marks=needs_uvloop),
    ],
)
async def test_the_command_serves_the_same_on_each_loop(choice: str) -> None:
    """On each loop: the banner names it; a table, an insert, a conflict, a read, a
    query and a change set get the service's answers."""
    expected = "asyncio" if choice == "asyncio" else "uvloop"
    with StubProcess("--port", "0", "--loop", choice) as proc:
        assert f"(flavor storage, {expected} event loop)" in proc.lines[0]
        connection = next(
            line.partition(": ")[2] for line in proc.lines if line.startswith("connection string:")
        )
        async with azt.TableServiceClient.from_connection_string(connection) as service:
            table = service.get_table_client("loops")
            await table.create_table()
            await table.create_entity({"PartitionKey": "p", "RowKey": "1", "n": 1})
            with pytest.raises(azt.EntityAlreadyExistsError) as info:
                await table.create_entity({"PartitionKey": "p", "RowKey": "1", "n": 2})
            assert info.value.error_code == "EntityAlreadyExists"
            async with table.batch_writer() as batch:
                for i in range(2, 60):
                    await batch.upsert({"PartitionKey": "p", "RowKey": str(i), "n": i})
            got = await table.get_entity("p", "1")
            assert got["n"] == 1
            pages = table.query_entities(query_filter="n ge 30", results_per_page=7)
            rows = [e async for e in pages]
            assert sorted(int(e["RowKey"]) for e in rows) == list(range(30, 60))
