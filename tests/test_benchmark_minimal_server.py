"""The minimal Table server of the benchmarks (``benchmarks/_minimal_server.py``).

``benchmarks/stub_vs_azurite.py`` prints its throughput as the floor under any Table server
in Python: that figure only means something if it really answers what the client asks
(the same entity back, the client's own errors on a duplicate, a miss or a bad signature)
and does the work it claims (a wrong key is refused, so the signature is checked).

Example::

    .venv/bin/python -m pytest tests/test_benchmark_minimal_server.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest

import azt

PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "_minimal_server.py"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
WRONG_KEY = "A" * 86 + "=="


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("azt_bench_minimal_server", PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


minimal = _module()


def _conn(port: int, key: str = KEY) -> str:
    return (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
        f"AccountKey={key};TableEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"
    )


@pytest.fixture
async def port() -> AsyncIterator[int]:
    loop = asyncio.get_running_loop()
    tables = minimal.Tables()
    server = await loop.create_server(lambda: minimal.Connection(tables), "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def test_insert_and_read_back(port: int) -> None:
    async with azt.TableServiceClient.from_connection_string(_conn(port)) as service:
        table = service.get_table_client("bench")
        await table.create_table()
        entity = azt.TableEntity(PartitionKey="p'1", RowKey="r 1", Name="n", Count=3, Big=2**40)
        entity.edm_types["Big"] = azt.EdmType.INT64
        await table.insert_entity(entity)
        got = await table.get_entity("p'1", "r 1")
        assert dict(got) == dict(entity)
        assert got.edm_types["Big"] is azt.EdmType.INT64
        assert (got.metadata.etag or "").startswith("W/\"datetime'")
        with pytest.raises(azt.EntityAlreadyExistsError):
            await table.insert_entity(entity)
        with pytest.raises(azt.EntityNotFoundError):
            await table.get_entity("p'1", "missing")
        with pytest.raises(azt.TableAlreadyExistsError):
            await table.create_table()


async def test_a_wrong_key_is_refused(port: int) -> None:
    async with azt.TableServiceClient.from_connection_string(_conn(port, WRONG_KEY)) as service:
        with pytest.raises(azt.AuthenticationError):
            await service.get_table_client("bench").create_table()


async def test_what_it_does_not_serve_fails_loudly(port: int) -> None:
    async with azt.TableServiceClient.from_connection_string(_conn(port)) as service:
        table = service.get_table_client("bench")
        await table.create_table()
        with pytest.raises(azt.ServiceNotImplementedError):
            await table.query_entities("PartitionKey eq 'p'").to_list()


def test_serve_frames_pipelined_and_split_requests() -> None:
    """Two requests in one chunk, then one split mid-body: three answers, in order."""
    written: list[bytes] = []

    class Transport(asyncio.Transport):
        def write(self, data: bytes | bytearray | memoryview) -> None:
            written.append(bytes(data))

        def get_extra_info(self, name: str, default: object = None) -> object:
            return ("127.0.0.1", 1) if name == "sockname" else default

    conn = minimal.Connection(minimal.Tables())
    conn.connection_made(Transport())
    request = b"GET /devstoreaccount1/t(PartitionKey='a',RowKey='b') HTTP/1.1\r\n\r\n"
    post = b"POST /devstoreaccount1/Tables HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd"
    conn.data_received(request + request)
    conn.data_received(post[:-2])
    assert len(written) == 2
    conn.data_received(post[-2:])
    assert [w.split(b"\r\n", 1)[0] for w in written] == [b"HTTP/1.1 403 Forbidden"] * 3
