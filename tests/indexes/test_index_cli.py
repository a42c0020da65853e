"""``azt index build|verify|repair``: verify reports and exits 1 on an inconsistent index,
build adopts existing data, repair removes orphans, a checkpoint resumes an interrupted
run, a bad ``--entity-class`` is a usage error."""

from __future__ import annotations

import asyncio
import io
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from azt import TableServiceClient
from azt.cli import EXIT_INCONSISTENT, EXIT_USAGE, main
from azt.indexes import RESERVED, is_index_row_key
from azt_server_stub import ThreadedStubServer

CLASS = "tests.indexes.models:Item"


@pytest.fixture(scope="module")
def stub() -> Iterator[ThreadedStubServer]:
    with ThreadedStubServer() as server:
        yield server


def run(conn: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main([*argv, "--connection-string", conn], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


async def _seed(conn: str, name: str, orphan: bool) -> None:
    async with TableServiceClient.from_connection_string(conn) as service:
        table = await service.create_table(name)
        for i in range(4):
            await table.insert_entity(
                {"PartitionKey": f"p{i}", "RowKey": "r", "color": "red", "size": i}
            )
        if orphan:
            await table.insert_entity({"PartitionKey": "p0", "RowKey": RESERVED + "old;x;r"})


async def _index_rows(conn: str, name: str) -> int:
    async with TableServiceClient.from_connection_string(conn) as service:
        rows = [e async for e in service.get_table_client(name).list_entities()]
    return sum(is_index_row_key(e["RowKey"]) for e in rows)


def test_verify_build_repair(stub: ThreadedStubServer) -> None:
    conn, name = stub.connection_string, f"ix{secrets.token_hex(4)}"
    asyncio.run(_seed(conn, name, orphan=True))
    status, out, _ = run(conn, "index", "verify", name, "--entity-class", CLASS)
    assert status == EXIT_INCONSISTENT
    assert "missing 8, stale 0, orphans 1, pending intents 0; wrote 0, deleted 0" in out
    assert asyncio.run(_index_rows(conn, name)) == 1

    status, out, _ = run(conn, "index", "build", name, "--entity-class", CLASS)
    assert status == 0
    assert "wrote 8, deleted 0" in out
    status, out, _ = run(conn, "index", "repair", name, "--entity-class", CLASS)
    assert status == 0
    assert "orphans 1, pending intents 0; wrote 0, deleted 1" in out
    status, out, _ = run(conn, "index", "verify", name, "--entity-class", CLASS)
    assert status == 0
    assert "missing 0, stale 0, orphans 0" in out
    assert asyncio.run(_index_rows(conn, name)) == 8


def test_resume_from_a_checkpoint(stub: ThreadedStubServer, tmp_path: Path) -> None:
    conn, name = stub.connection_string, f"ix{secrets.token_hex(4)}"
    asyncio.run(_seed(conn, name, orphan=False))
    ckpt = tmp_path / "index.ckpt"
    ckpt.write_text("p1\n", encoding="utf-8")  # an earlier run finished p0 and p1
    status, out, _ = run(
        conn, "index", "build", name, "--entity-class", CLASS, "--checkpoint", str(ckpt),
        "--resume", "--progress", "always",
    )  # fmt: skip
    assert status == 0
    assert "in 2 partitions (resumed after 'p1')" in out
    assert "wrote 4" in out
    assert not ckpt.exists()  # finished
    assert asyncio.run(_index_rows(conn, name)) == 4


@pytest.mark.parametrize("spec", ["nomodule", "tests.indexes.models:Nope", "no_such_mod:X"])
def test_bad_entity_class_is_a_usage_error(stub: ThreadedStubServer, spec: str) -> None:
    status, _, err = run(stub.connection_string, "index", "verify", "t", "--entity-class", spec)
    assert status == EXIT_USAGE
    assert "--entity-class" in err


def test_build_and_verify_a_class_with_domain_key_names(stub: ThreadedStubServer) -> None:
    """The CLI loads a class whose keys are ``project`` / ``ticket_id``: index rows are
    built from the main rows' keys and then verify clean."""
    conn, name = stub.connection_string, f"ix{secrets.token_hex(4)}"

    async def seed() -> None:
        async with TableServiceClient.from_connection_string(conn) as service:
            table = await service.create_table(name)
            for i in range(3):
                await table.insert_entity(
                    {"PartitionKey": "azt", "RowKey": f"t-{i}", "State": "open", "priority": i}
                )

    asyncio.run(seed())
    ticket = "tests.indexes.models:Ticket"
    status, out, _ = run(conn, "index", "verify", name, "--entity-class", ticket)
    assert status == EXIT_INCONSISTENT
    assert "missing 6," in out  # by_state and by_priority per ticket; no reporter: sparse
    status, out, _ = run(conn, "index", "build", name, "--entity-class", ticket)
    assert status == 0
    status, out, _ = run(conn, "index", "verify", name, "--entity-class", ticket)
    assert status == 0, out
    assert asyncio.run(_index_rows(conn, name)) == 6
