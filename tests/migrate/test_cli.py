"""``azt migrate status|plan|up|verify``: states, a plan and a dry run that write nothing,
``up`` with its summary, ``verify`` exiting 4 while rows are left, and usage errors for a
module without migrations."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator

import pytest

from azt import TableServiceClient
from azt.cli import EXIT_INCONSISTENT, EXIT_USAGE, main
from azt.indexes import is_index_row_key
from azt_server_stub import ThreadedStubServer
from tests.migrate.models import TABLE, CustomerV1

MODULE = "tests.migrate.models"


@pytest.fixture
def stub() -> Iterator[ThreadedStubServer]:
    with ThreadedStubServer() as server:
        yield server


def run(conn: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([*argv, "--connection-string", conn], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


async def _seed(conn: str) -> None:
    async with TableServiceClient.from_connection_string(conn) as service:
        table = await service.create_table(TABLE)
        async with table.batch_writer() as writer:
            for i in range(30):
                await writer.insert(
                    CustomerV1(f"p{i % 3}", f"{i:03d}", Name=f"n{i}", Visits=i, Legacy="x")
                )


async def _shapes(conn: str) -> list[object]:
    async with TableServiceClient.from_connection_string(conn) as service:
        rows = service.get_table_client(TABLE).list_entities()
        return [e.get("Shape") async for e in rows if not is_index_row_key(e["RowKey"])]


def test_status_plan_up_verify(stub: ThreadedStubServer) -> None:
    conn = stub.connection_string
    asyncio.run(_seed(conn))
    status, out, _ = run(conn, "migrate", "status", "--migrations", MODULE)
    assert status == 0
    assert out.splitlines() == [
        f"0001_customer_v2  {TABLE}  pending",
        f"0002_drop_legacy  {TABLE}  pending",
    ]
    status, out, _ = run(conn, "migrate", "verify", "--migrations", MODULE)
    assert status == EXIT_INCONSISTENT
    assert f"0001_customer_v2: 30 of 30 entities in {TABLE} not migrated" in out

    status, out, _ = run(conn, "migrate", "plan", "--migrations", MODULE)
    assert status == 0
    assert "  - upgrade to the shape of Customer" in out
    assert "  - drop 'Legacy'" in out
    status, out, _ = run(conn, "migrate", "plan", "--rows", "--migrations", MODULE)
    assert status == 0
    assert f"0001_customer_v2: would change 30 of 30 entities in {TABLE}" in out
    assert "'FullName': 'n0'" in out
    assert asyncio.run(_shapes(conn)) == [None] * 30  # a dry run writes nothing

    status, out, err = run(conn, "migrate", "up", "--migrations", MODULE, "--progress", "never")
    assert status == 0, err
    assert f"0001_customer_v2: rewrote 30 of 30 entities in {TABLE}" in out
    assert asyncio.run(_shapes(conn)) == [2] * 30
    status, out, _ = run(conn, "migrate", "verify", "--migrations", MODULE)
    assert status == 0
    assert "0 of 30 entities" in out
    status, out, _ = run(conn, "migrate", "status", "--migrations", MODULE)
    assert out.splitlines()[0] == f"0001_customer_v2  {TABLE}  applied  30 entities"
    status, out, _ = run(conn, "migrate", "up", "--migrations", MODULE)
    assert (status, out) == (0, "nothing to do: every migration is applied\n")


def test_a_module_without_migrations_is_a_usage_error(stub: ThreadedStubServer) -> None:
    status, _, err = run(stub.connection_string, "migrate", "up", "--migrations", "azt.entity")
    assert status == EXIT_USAGE
    assert "defines no migrations" in err
    status, _, err = run(stub.connection_string, "migrate", "status", "--migrations", "no.such")
    assert status == EXIT_USAGE
    assert "cannot import it" in err
