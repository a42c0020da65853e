"""End to end: the synchronous ``azure-data-tables`` client (requests) against a stub thread."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest
from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError
from azure.data.tables import (
    EdmType,
    EntityProperty,
    TableServiceClient,
    TableTransactionError,
    UpdateMode,
)

from azt_server_stub import ThreadedStubServer


def test_sync_client_round_trip(sync_stub: ThreadedStubServer) -> None:
    with TableServiceClient.from_connection_string(sync_stub.connection_string) as svc:
        table = svc.create_table("synctable")
        with table:
            when = dt.datetime(2024, 2, 29, 12, 0, 0, 1, tzinfo=dt.UTC)
            table.create_entity(
                {
                    "PartitionKey": "p",
                    "RowKey": "1",
                    "n": EntityProperty(-5, EdmType.INT64),
                    "when": when,
                    "g": uuid.UUID(int=7),
                }
            )
            with pytest.raises(ResourceExistsError):
                table.create_entity({"PartitionKey": "p", "RowKey": "1"})
            got = table.get_entity("p", "1")
            assert got["n"] == EntityProperty(-5, EdmType.INT64)
            assert got["when"] == when
            assert got["g"] == uuid.UUID(int=7)
            table.upsert_entity({"PartitionKey": "p", "RowKey": "1", "x": 1}, mode=UpdateMode.MERGE)
            assert table.get_entity("p", "1")["x"] == 1
            table.submit_transaction(
                [("upsert", {"PartitionKey": "p", "RowKey": f"b{i:04d}"}) for i in range(100)]
            )
            assert len(list(table.query_entities("PartitionKey eq 'p'"))) == 101
            with pytest.raises(TableTransactionError):
                table.submit_transaction(
                    [
                        ("create", {"PartitionKey": "p", "RowKey": "new"}),
                        ("create", {"PartitionKey": "p", "RowKey": "1"}),
                    ]
                )
            with pytest.raises(ResourceNotFoundError):
                table.get_entity("p", "new")
            table.delete_entity("p", "1")
        assert [t.name for t in svc.list_tables()] == ["synctable"]
        svc.delete_table("synctable")
        assert list(svc.list_tables()) == []


def test_threaded_server_restarts_cleanly() -> None:
    for _ in range(2):
        with (
            ThreadedStubServer() as stub,
            TableServiceClient.from_connection_string(stub.connection_string) as svc,
        ):
            svc.create_table("again")
            assert [t.name for t in svc.list_tables()] == ["again"]
