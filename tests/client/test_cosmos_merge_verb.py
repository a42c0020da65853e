"""Merges on a Cosmos client go out as ``POST`` with ``X-HTTP-Method: MERGE`` (the only
merge form the recorded Cosmos DB Table API accepts; it refuses ``PATCH``), in single
requests and in change sets; a Storage client keeps the ``MERGE`` verb."""

from __future__ import annotations

from azt import Flavor, RequestInfo, TableServiceClient, UpdateMode
from azt._core.batch import BatchOperation, OperationEncoder
from azt_server_stub import StubServer


async def test_cosmos_client_merges_with_post_and_x_http_method() -> None:
    sent: list[tuple[str, str | None]] = []

    def record(info: RequestInfo) -> None:
        sent.append((info.method, info.headers.get("X-HTTP-Method")))

    async with (
        StubServer(flavor="cosmos") as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, flavor=Flavor.COSMOS, event_hooks={"request": [record]}
        ) as service,
    ):
        table = await service.create_table("merged")
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "A": 1})
        sent.clear()
        await table.update_entity({"PartitionKey": "p", "RowKey": "r", "B": 2}, UpdateMode.MERGE)
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "C": 3}, UpdateMode.MERGE)
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "s", "D": 4}, UpdateMode.MERGE)
        assert sent == [("POST", "MERGE")] * 3
        sent.clear()
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "E": 5}, UpdateMode.REPLACE)
        assert sent == [("PUT", None)]
        got = await table.get_entity("p", "r")
        assert got["E"] == 5
        assert "A" not in got
        batch = table.batch()
        batch.update({"PartitionKey": "p", "RowKey": "r", "F": 6}, UpdateMode.MERGE)
        batch.upsert({"PartitionKey": "p", "RowKey": "s", "G": 7}, UpdateMode.MERGE)
        await table.submit_transaction(batch)
        assert (await table.get_entity("p", "r"))["F"] == 6
        got = await table.get_entity("p", "s")
        assert (got["D"], got["G"]) == (4, 7)


def _encoded(flavor: Flavor, op: BatchOperation) -> bytes:
    service = TableServiceClient.from_connection_string("UseDevelopmentStorage=true", flavor=flavor)
    return OperationEncoder(service.get_table_client("table1")._core, "table1")(op)


def test_change_set_parts_tunnel_merges_on_cosmos_only() -> None:
    entity = {"PartitionKey": "p", "RowKey": "r", "N": 1}
    for kind in ("update", "upsert"):
        merge = BatchOperation(kind, entity, mode=UpdateMode.MERGE, etag="*")
        replace = BatchOperation(kind, entity, mode=UpdateMode.REPLACE, etag="*")
        cosmos = _encoded(Flavor.COSMOS, merge)
        assert cosmos.startswith(b"POST http")
        assert b"\r\nX-HTTP-Method: MERGE\r\n" in cosmos
        storage = _encoded(Flavor.STORAGE, merge)
        assert storage.startswith(b"MERGE http")
        assert b"X-HTTP-Method" not in storage
        for flavor in Flavor:
            assert _encoded(flavor, replace).startswith(b"PUT http")
