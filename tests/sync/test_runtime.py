"""The blocking API from several threads, after ``fork``, inside a running loop and
re-entered from its own loop; and the generated module is current."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

import azt
import azt.sync
from azt.sync._runtime import Runtime
from azt.testing import unique_table_name

ROOT = Path(__file__).resolve().parents[2]
THREADS = 8


@pytest.fixture
def table(azt_connection_string: str) -> Iterator[azt.sync.TableClient]:
    name = unique_table_name("th")
    with azt.sync.TableClient.from_connection_string(azt_connection_string, name) as client:
        client.create_table()
        yield client
        client.delete_table()


def _in_threads(work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def run(n: int) -> None:
        try:
            start.wait()
            work(n)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not [t for t in threads if t.is_alive()], "a thread hung"
    assert not errors, errors


def _work(client: azt.sync.TableClient, n: int) -> None:
    pk = f"t{n}"
    for i in range(10):
        client.upsert_entity({"PartitionKey": pk, "RowKey": f"{i:02d}", "n": n})
        assert client.get_entity(pk, f"{i:02d}")["n"] == n
    rows = list(client.query_entities("PartitionKey eq @pk", parameters={"pk": pk}))
    assert [r["RowKey"] for r in rows] == [f"{i:02d}" for i in range(10)]
    with pytest.raises(azt.EntityNotFoundError):
        client.get_entity(pk, "missing")


def test_eight_threads_share_one_client(table: azt.sync.TableClient) -> None:
    _in_threads(lambda n: _work(table, n))
    assert len(table.list_entities().to_list()) == THREADS * 10


def test_eight_threads_each_with_its_own_client(
    table: azt.sync.TableClient, azt_connection_string: str
) -> None:
    def work(n: int) -> None:
        with azt.sync.TableClient.from_connection_string(
            azt_connection_string, table.table_name
        ) as own:
            _work(own, n)

    _in_threads(work)
    assert len(table.list_entities().to_list()) == THREADS * 10


def test_eight_threads_each_running_an_event_loop(table: azt.sync.TableClient) -> None:
    """Threads whose own loop runs (notebook-like) hand their calls to helper threads."""

    def work(n: int) -> None:
        async def main() -> None:
            _work(table, n)

        asyncio.run(main())

    _in_threads(work)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
def test_fork_child_gets_a_fresh_loop_and_session(table: azt.sync.TableClient) -> None:
    table.upsert_entity({"PartitionKey": "f", "RowKey": "parent"})  # session is open
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            table.upsert_entity({"PartitionKey": "f", "RowKey": "child"})
            got = table.get_entity("f", "parent")
            rows = list(table.query_entities("PartitionKey eq 'f'"))
            status = 0 if got["RowKey"] == "parent" and len(rows) == 2 else 2
        finally:
            os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(wait_status) == 0
    # The parent's loop and connections are untouched and keep working.
    assert table.get_entity("f", "child")["RowKey"] == "child"
    assert len(table.query_entities("PartitionKey eq 'f'").to_list()) == 2


def test_transport_reset_after_fork_forgets_the_session_without_closing_it(
    azt_connection_string: str,
) -> None:
    """The public hook the runtime uses in a forked child: the inherited session is handed
    back open and untouched; the next request opens a fresh session."""
    name = unique_table_name("rf")

    async def scenario() -> None:
        transport = azt.AiohttpTransport()
        async with azt.TableClient.from_connection_string(
            azt_connection_string, name, transport=transport
        ) as table:
            assert transport.reset_after_fork() is None  # no session yet
            await table.create_table()
            inherited = transport.reset_after_fork()
            assert isinstance(inherited, aiohttp.ClientSession)
            assert not inherited.closed
            assert transport.reset_after_fork() is None  # forgotten
            await table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
            assert not inherited.closed  # never closed by the transport
            fresh = transport.reset_after_fork()
            assert isinstance(fresh, aiohttp.ClientSession)
            assert fresh is not inherited
            for session in (inherited, fresh):
                await session.close()
            await table.delete_table()
        await transport.aclose()
        assert transport.closed
        assert transport.reset_after_fork() is None
        assert transport.closed  # a closed transport stays closed

    asyncio.run(scenario())


def test_calling_the_blocking_api_from_its_own_loop_is_refused(
    table: azt.sync.TableClient,
) -> None:
    table.upsert_entity({"PartitionKey": "r", "RowKey": "1"})

    def decoder(rows: list[dict[str, object]]) -> list[object]:
        # runs inside the private loop, while a blocking call is driving it
        return [table.get_entity("r", "1") for _ in rows]

    with pytest.raises(RuntimeError, match="inside its own event loop"):
        table.query_entities(page_decoder=decoder).to_list()
    assert table.get_entity("r", "1")["RowKey"] == "1"  # and the client still works


def test_closed_client_raises_the_async_error(azt_connection_string: str) -> None:
    client = azt.sync.TableServiceClient.from_connection_string(azt_connection_string)
    table = client.get_table_client("closedtable")
    client.close()
    client.close()  # idempotent
    assert client.closed
    with pytest.raises(azt.ClientClosedError):
        client.get_service_properties()
    with pytest.raises(azt.ClientClosedError):
        table.get_entity("a", "b")


def test_borrowed_clients_do_not_close_the_runtime(azt_connection_string: str) -> None:
    with azt.sync.TableServiceClient.from_connection_string(azt_connection_string) as service:
        name = unique_table_name("bo")
        with service.create_table(name) as table:
            table.upsert_entity({"PartitionKey": "a", "RowKey": "b"})
        assert table.closed
        assert not service.closed
        assert service.get_table_client(name).get_entity("a", "b")["RowKey"] == "b"
        service.delete_table(name)


def test_runtime_iterate_closes_an_abandoned_iterator() -> None:
    closed: list[bool] = []

    async def numbers() -> AsyncIterator[int]:
        try:
            for i in range(10):
                yield i
        finally:
            closed.append(True)

    runtime = Runtime()
    try:
        for i in runtime.iterate(numbers()):
            if i == 2:
                break
        assert closed == [True]
    finally:
        runtime.close()
    assert runtime.closed


def test_generated_module_is_current() -> None:
    """Re-run ``python scripts/gen_sync.py`` after changing an async class."""
    proc = subprocess.run(
        [sys.executable, "scripts/gen_sync.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_blocking_classes_mirror_the_async_public_surface() -> None:
    pairs = [
        (azt.TableServiceClient, azt.sync.TableServiceClient),
        (azt.TableClient, azt.sync.TableClient),
        (azt.AsyncPager, azt.sync.Pager),
        (azt.Query, azt.sync.Query),
        (azt.TableContext, azt.sync.TableContext),
    ]
    renamed = {"aclose": "close"}
    for async_cls, sync_cls in pairs:
        public = {n for n in dir(async_cls) if not n.startswith("_")}
        for name in public:
            assert hasattr(sync_cls, renamed.get(name, name)), f"{sync_cls.__name__}.{name}"
        assert sync_cls.__doc__
