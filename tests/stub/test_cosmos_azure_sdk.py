"""Microsoft's ``azure-data-tables`` (aio) against the stub's Cosmos DB flavour, reached
under a Cosmos-style host name so that the SDK's own Cosmos detection switches on.

The SDK decides by the endpoint's host (``*.table.cosmos.azure.com``): it then tunnels
``PATCH`` as ``POST`` + ``X-HTTP-Method: MERGE`` and keeps no secondary. The test gives it
a connection string naming ``devstoreaccount1.table.cosmos.azure.com:<port>`` over plain
HTTP and an aiohttp session whose resolver answers every such name with 127.0.0.1, so the
traffic never leaves loopback.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from azure.core.exceptions import HttpResponseError, ResourceExistsError, ResourceNotFoundError
from azure.core.pipeline.transport import AioHttpTransport
from azure.data.tables import UpdateMode
from azure.data.tables.aio import TableClient, TableServiceClient

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer

COSMOS_HOST = f"{DEV_ACCOUNT}.table.cosmos.azure.com"


class LoopbackResolver(AbstractResolver):
    """Resolves ``*.table.cosmos.azure.com`` to 127.0.0.1 and refuses every other name."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.sent: list[tuple[str, str | None]] = []  # (method, X-HTTP-Method) of requests

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        if not host.endswith(".table.cosmos.azure.com"):
            raise OSError(f"this test resolves only Cosmos host names, not {host!r}")
        return [
            {
                "hostname": host,
                "host": "127.0.0.1",
                "port": port,
                "family": socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        return None


@pytest.fixture
async def cosmos_stub() -> AsyncIterator[StubServer]:
    async with StubServer(flavor="cosmos") as server:
        yield server


@pytest.fixture
async def resolver() -> LoopbackResolver:
    return LoopbackResolver()


@pytest.fixture
async def service(
    cosmos_stub: StubServer, resolver: LoopbackResolver
) -> AsyncIterator[TableServiceClient]:
    connector = aiohttp.TCPConnector(resolver=resolver)
    trace = aiohttp.TraceConfig()

    async def on_request_start(
        _session: aiohttp.ClientSession, _ctx: object, params: aiohttp.TraceRequestStartParams
    ) -> None:
        resolver.sent.append((params.method, params.headers.get("X-HTTP-Method")))

    trace.on_request_start.append(on_request_start)
    session = aiohttp.ClientSession(connector=connector, trace_configs=[trace])
    transport = AioHttpTransport(session=session, session_owner=False)
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"TableEndpoint=http://{COSMOS_HOST}:{cosmos_stub.port}/;"
    )
    try:
        async with TableServiceClient.from_connection_string(conn, transport=transport) as svc:
            yield svc
    finally:
        await session.close()


async def test_the_sdk_sees_a_cosmos_endpoint(
    service: TableServiceClient, resolver: LoopbackResolver
) -> None:
    assert service._cosmos_endpoint is True  # the SDK's own detection
    assert [t.name async for t in service.list_tables()] == []
    assert resolver.asked == [COSMOS_HOST]  # every request went to 127.0.0.1


async def test_tables_create_list_delete(service: TableServiceClient) -> None:
    await service.create_table("alpha")
    await service.create_table("beta")
    with pytest.raises(ResourceExistsError):
        await service.create_table("alpha")
    names = sorted([t.name async for t in service.list_tables()])
    assert names == ["alpha", "beta"]
    filtered = [t.name async for t in service.query_tables("TableName eq 'beta'")]
    assert filtered == ["beta"]
    await service.delete_table("alpha")
    assert [t.name async for t in service.list_tables()] == ["beta"]


async def test_entity_crud_upsert_and_merge_through_the_cosmos_patch_tunnel(
    service: TableServiceClient, resolver: LoopbackResolver
) -> None:
    table: TableClient = await service.create_table("crud")
    async with table:
        await table.create_entity({"PartitionKey": "p", "RowKey": "r", "Name": "a", "N": 1})
        with pytest.raises(ResourceExistsError):
            await table.create_entity({"PartitionKey": "p", "RowKey": "r"})
        got = await table.get_entity("p", "r")
        assert (got["Name"], got["N"]) == ("a", 1)
        # MERGE goes out as POST + X-HTTP-Method: MERGE on a Cosmos endpoint.
        await table.update_entity(
            {"PartitionKey": "p", "RowKey": "r", "Extra": True}, UpdateMode.MERGE
        )
        got = await table.get_entity("p", "r")
        assert (got["Name"], got["Extra"]) == ("a", True)
        await table.update_entity(
            {"PartitionKey": "p", "RowKey": "r", "Only": 2}, UpdateMode.REPLACE
        )
        got = await table.get_entity("p", "r")
        assert "Name" not in got
        assert got["Only"] == 2
        await table.upsert_entity(
            {"PartitionKey": "p", "RowKey": "s", "V": "new"}, UpdateMode.MERGE
        )
        await table.upsert_entity(
            {"PartitionKey": "p", "RowKey": "s", "W": "more"}, UpdateMode.MERGE
        )
        got = await table.get_entity("p", "s")
        assert (got["V"], got["W"]) == ("new", "more")
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "s", "X": 0}, UpdateMode.REPLACE)
        assert "V" not in await table.get_entity("p", "s")
        await table.delete_entity("p", "r")
        with pytest.raises(ResourceNotFoundError):
            await table.get_entity("p", "r")
    assert ("PATCH", None) not in resolver.sent
    assert ("POST", "MERGE") in resolver.sent  # the SDK's Cosmos rewrite of PATCH


async def test_queries_with_continuation(service: TableServiceClient) -> None:
    table = await service.create_table("paged")
    async with table:
        for i in range(25):
            await table.create_entity({"PartitionKey": f"p{i % 3}", "RowKey": f"{i:03d}", "I": i})
        pages = table.list_entities(results_per_page=10).by_page()
        sizes = []
        seen: list[int] = []
        async for page in pages:
            items = [e async for e in page]
            sizes.append(len(items))
            seen.extend(e["I"] for e in items)
        assert sizes == [10, 10, 5]
        assert sorted(seen) == list(range(25))
        # resume from a continuation token
        first = table.list_entities(results_per_page=10).by_page()
        _ = [e async for e in await first.__anext__()]
        token = first.continuation_token  # type: ignore[attr-defined]
        assert token is not None
        rest = table.list_entities(results_per_page=10).by_page(continuation_token=token)
        resumed = [e["I"] async for page in rest async for e in page]
        assert len(resumed) == 15
        odd = [e["I"] async for e in table.query_entities("I ge 20 and PartitionKey eq 'p2'")]
        assert sorted(odd) == [20, 23]


async def test_batch(service: TableServiceClient) -> None:
    table = await service.create_table("batched")
    async with table:
        await table.create_entity({"PartitionKey": "b", "RowKey": "gone"})
        ops: list[Any] = [
            ("create", {"PartitionKey": "b", "RowKey": "1", "V": 1}),
            ("upsert", {"PartitionKey": "b", "RowKey": "2", "V": 2}),
            ("delete", {"PartitionKey": "b", "RowKey": "gone"}),
        ]
        results = await table.submit_transaction(ops)
        assert len(results) == 3
        rows = sorted([e["RowKey"] async for e in table.list_entities()])
        assert rows == ["1", "2"]


async def test_cosmos_refusals_reach_the_sdk(service: TableServiceClient) -> None:
    table = await service.create_table("refusals")
    async with table:
        with pytest.raises(HttpResponseError) as acl:
            await table.get_table_access_policy()
        assert acl.value.status_code == 501
        with pytest.raises(HttpResponseError) as too_long:
            await table.create_entity({"PartitionKey": "p", "RowKey": "r" * 256})
        assert too_long.value.status_code == 400
        assert "KeyValueTooLarge" in str(too_long.value)  # from the JSON body: no header
