"""The blocking face of frames (azt.sync.frames): read, write and Parquet both ways."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")

import azt.sync  # noqa: E402
from azt.edm import EdmType, Typed  # noqa: E402
from azt.sync.frames import export_parquet, import_parquet, read_arrow, write_frame  # noqa: E402
from azt_server_stub import ThreadedStubServer  # noqa: E402
from tests.frames.roundtrip import by_keys  # noqa: E402


@pytest.fixture
def service() -> Iterator[azt.sync.TableServiceClient]:
    with (
        ThreadedStubServer() as stub,
        azt.sync.TableServiceClient.from_connection_string(stub.connection_string) as svc,
    ):
        yield svc


def test_blocking_round_trips(service: azt.sync.TableServiceClient, tmp_path: Path) -> None:
    src = service.create_table("syncsrc")
    src.create_entity({"PartitionKey": "p", "RowKey": "1", "N": Typed(1, EdmType.INT64)})
    src.create_entity({"PartitionKey": "p", "RowKey": "2", "N": Typed(2, EdmType.INT64)})
    table = read_arrow(src)
    assert table.column("N").type == pa.int64()
    dst = service.create_table("syncdst")
    assert write_frame(dst, table, kind="insert").written == 2
    path = str(tmp_path / "t.parquet")
    assert export_parquet(dst, path) == 2
    again = service.create_table("syncagain")
    assert import_parquet(again, path).written == 2
    assert by_keys(again.list_entities()) == by_keys(src.list_entities())
