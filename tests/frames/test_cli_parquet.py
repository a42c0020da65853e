"""``azt export --format parquet`` and ``azt import`` of a Parquet file against the stub: the
same types come back, a row no EDM type holds stops the import with its row number, and the
usage errors say what to give."""

from __future__ import annotations

import asyncio
import secrets
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import azt.sync  # noqa: E402
from azt import TableClient  # noqa: E402
from azt.cli import EXIT_INPUT, EXIT_USAGE  # noqa: E402
from azt.edm import EdmDateTime, EdmType, Typed  # noqa: E402
from azt.frames import export_parquet  # noqa: E402
from azt_server_stub import ThreadedStubServer  # noqa: E402
from tests.cli.conftest import run  # noqa: E402
from tests.cli.test_cli import insert  # noqa: E402
from tests.frames.roundtrip import by_keys  # noqa: E402


@pytest.fixture(scope="module")
def stub() -> Iterator[ThreadedStubServer]:
    with ThreadedStubServer() as server:
        yield server


@pytest.fixture
def conn(stub: ThreadedStubServer, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AZT_CONNECTION_STRING", stub.connection_string)
    return stub.connection_string


def typed_rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "PartitionKey": f"p{i % 7}",
            "RowKey": f"r{i:05d}",
            "Big": Typed(i, EdmType.INT64),
            "Small": Typed(-i, EdmType.INT32),
            "When": Typed(EdmDateTime.from_ticks(504911232000000000 + i), EdmType.DATETIME),
            "Score": Typed(i / 3 if i % 5 else float("nan"), EdmType.DOUBLE),
            # a property whose type differs between rows
            "Mixed": Typed(str(i), EdmType.STRING) if i % 2 else Typed(i, EdmType.INT64),
        }
        for i in range(n)
    ]


def stored(conn: str, table: str) -> dict[tuple[str, str], Any]:
    with azt.sync.TableClient.from_connection_string(conn, table) as t:
        return by_keys(t.list_entities())


def test_export_then_import_keeps_every_type(conn: str, tmp_path: Path) -> None:
    src, dst = f"pq{secrets.token_hex(4)}", f"pq{secrets.token_hex(4)}"
    rows = typed_rows(250)
    insert(conn, src, rows)
    path = tmp_path / "out.parquet"
    r = run("export", src, "--format", "parquet", "-o", str(path), "--concurrency", "3")
    assert r.status == 0, r.err
    assert f"exported 250 entities from {src}" in r.err
    schema = pq.read_schema(path)
    assert schema.field("Big").type == pa.int64()
    assert schema.field("Small").type == pa.int32()
    assert schema.field("When").type == pa.timestamp("ns", "UTC")
    assert pq.read_metadata(path).num_rows == 250
    r = run("import", dst, "--create", "-i", str(path), "--progress", "always")
    assert r.status == 0, r.err
    assert f"imported 250 entities into {dst}" in r.err
    assert "100%" in r.err
    assert stored(conn, dst) == stored(conn, src) == by_keys(rows)


def test_a_row_no_edm_type_holds_stops_the_import(conn: str, tmp_path: Path) -> None:
    path = tmp_path / "naive.parquet"
    t = pa.table(
        {
            "PartitionKey": ["p", "p"],
            "RowKey": ["1", "2"],
            "When": pa.array([0, 1], pa.timestamp("us")),  # no time zone
        }
    )
    pq.write_table(t, path)
    r = run("import", f"pq{secrets.token_hex(4)}", "--create", "-i", str(path))
    assert r.status == EXIT_INPUT, r.err
    assert "row 1 on: column 'When': a timestamp without a time zone" in r.err
    assert "imported nothing" in r.err


def test_usage_errors(conn: str, tmp_path: Path) -> None:
    r = run("export", "sometable", "--format", "parquet")
    assert r.status == EXIT_USAGE
    assert "give -o FILE" in r.err
    r = run(
        "export", "sometable", "--format", "parquet", "-o", str(tmp_path / "x"), "--resume", "t"
    )
    assert r.status == EXIT_USAGE
    assert "--resume is for JSON lines" in r.err
    r = run("import", "sometable", "--format", "parquet")
    assert r.status == EXIT_USAGE
    assert "give -i FILE" in r.err
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    r = run("import", "sometable", "--create", "-i", str(bad))
    assert r.status == EXIT_USAGE
    assert "-i is not a Parquet file" in r.err


def test_export_writes_row_groups_as_it_reads(stub: ThreadedStubServer, tmp_path: Path) -> None:
    name = f"pq{secrets.token_hex(4)}"
    insert(stub.connection_string, name, typed_rows(250))
    seen: list[int] = []
    path = str(tmp_path / "groups.parquet")

    async def export() -> int:
        async with TableClient.from_connection_string(stub.connection_string, name) as table:
            return await export_parquet(
                table, path, row_group_rows=100, on_batch=lambda b: seen.append(b.num_rows)
            )

    assert asyncio.run(export()) == sum(seen) == 250
    meta = pq.read_metadata(path)
    assert meta.num_rows == 250
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [100, 100, 50]


def test_export_encodes_row_groups_off_the_event_loop_thread(
    stub: ThreadedStubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"pq{secrets.token_hex(4)}"
    insert(stub.connection_string, name, typed_rows(250))
    threads: list[str] = []
    write_table = pq.ParquetWriter.write_table

    def recording(self: Any, table: Any, *args: Any, **kwargs: Any) -> None:
        threads.append(threading.current_thread().name)
        write_table(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", recording)
    path = str(tmp_path / "threads.parquet")

    async def export() -> tuple[int, str]:
        async with TableClient.from_connection_string(stub.connection_string, name) as table:
            n = await export_parquet(table, path, row_group_rows=100)
            return n, threading.current_thread().name

    n, loop_thread = asyncio.run(export())
    assert n == 250
    assert threads  # (one page here: one write of three row groups)
    assert loop_thread not in threads
    assert all(t.startswith("azt-parquet") for t in threads)
    assert pq.read_table(path).num_rows == 250


def test_export_raises_a_failed_row_group_write_and_closes_the_file(
    stub: ThreadedStubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"pq{secrets.token_hex(4)}"
    insert(stub.connection_string, name, typed_rows(250))
    closed: list[bool] = []
    close = pq.ParquetWriter.close

    def failing(self: Any, table: Any, *args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    def recording_close(self: Any) -> None:
        closed.append(True)
        close(self)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    monkeypatch.setattr(pq.ParquetWriter, "close", recording_close)

    async def export() -> int:
        async with TableClient.from_connection_string(stub.connection_string, name) as table:
            return await export_parquet(table, str(tmp_path / "full.parquet"), row_group_rows=100)

    with pytest.raises(OSError, match="disk full"):
        asyncio.run(export())
    assert closed == [True]


def test_refused_rows_are_named_and_resumed_from_the_checkpoint(conn: str, tmp_path: Path) -> None:
    src, dst = f"pq{secrets.token_hex(4)}", f"pq{secrets.token_hex(4)}"
    rows = typed_rows(20)
    insert(conn, src, rows)
    path = tmp_path / "rows.parquet"
    assert run("export", src, "--format", "parquet", "-o", str(path)).status == 0
    order = pq.read_table(path).column("RowKey").to_pylist()
    taken = order.index("r00003") + 1  # the row of r00003 in the file
    insert(conn, dst, [{"PartitionKey": "p3", "RowKey": "r00003"}])
    ckpt = tmp_path / "import.ckpt"
    r = run("import", dst, "-i", str(path), "--mode", "insert", "--checkpoint", str(ckpt))
    assert r.status == 1, r.err
    assert f"row {taken}: 409 EntityAlreadyExists" in r.err
    assert f"imported 19 entities into {dst}; 1 failed (not written: row {taken})" in r.err
    with azt.sync.TableClient.from_connection_string(conn, dst) as t:
        t.delete_entity("p3", "r00003")
    r = run(
        "import", dst, "-i", str(path), "--mode", "insert", "--checkpoint", str(ckpt), "--resume"
    )
    assert r.status == 0, r.err
    assert f"imported 1 entity into {dst} (19 already written before)" in r.err
    assert not ckpt.exists()
    assert stored(conn, dst) == by_keys(rows)


def test_without_pyarrow_parquet_is_a_usage_error(
    conn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # an import of it fails
    monkeypatch.delitem(sys.modules, "azt.cli._parquet", raising=False)
    monkeypatch.delattr("azt.cli._parquet", raising=False)
    r = run("export", "sometable", "--format", "parquet", "-o", str(tmp_path / "x.parquet"))
    assert r.status == EXIT_USAGE
    assert 'pip install "azt-tables[arrow]"' in r.err
    assert run("tables", "list").status == 0  # everything else runs without it
