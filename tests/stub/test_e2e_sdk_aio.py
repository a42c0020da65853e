"""End to end: Microsoft's ``azure-data-tables`` (aio) drives the stub over loopback."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
)
from azure.data.tables import (
    AccountSasPermissions,
    EdmType,
    EntityProperty,
    ResourceTypes,
    TableAccessPolicy,
    TableEntity,
    TableSasPermissions,
    TableTransactionError,
    UpdateMode,
    generate_account_sas,
    generate_table_sas,
)
from azure.data.tables.aio import TableClient, TableServiceClient

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer


@pytest.fixture
async def service(stub: StubServer) -> AsyncIterator[TableServiceClient]:
    async with TableServiceClient.from_connection_string(stub.connection_string) as svc:
        yield svc


@pytest.fixture
async def table(service: TableServiceClient) -> AsyncIterator[TableClient]:
    client = await service.create_table("e2etable")
    async with client:
        yield client


def code_of(error: HttpResponseError) -> str | None:
    """The service error code of an SDK exception (from the x-ms-error-code header)."""
    response: Any = error.response
    return None if response is None else response.headers.get("x-ms-error-code")


def _dt7(text: str) -> EntityProperty:
    """A DateTime carried with its exact wire string (7 digits)."""
    return EntityProperty(text, EdmType.DATETIME)


async def test_tables_create_list_delete(service: TableServiceClient) -> None:
    for name in ("zeta", "Alpha", "mid"):
        await service.create_table(name)
    names = [t.name async for t in service.list_tables()]
    assert names == ["Alpha", "mid", "zeta"]
    filtered = [t.name async for t in service.query_tables("TableName eq 'mid'")]
    assert filtered == ["mid"]
    with pytest.raises(ResourceExistsError):
        await service.create_table("ALPHA")
    await service.delete_table("alpha")
    assert [t.name async for t in service.list_tables()] == ["mid", "zeta"]
    # delete_table of a missing table is swallowed by the SDK (404 ResourceNotFound)
    await service.delete_table("alpha")
    client = await service.create_table_if_not_exists("mid")
    await client.close()


async def test_every_edm_type_round_trips(table: TableClient) -> None:
    guid = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
    entity: dict[str, Any] = {
        "PartitionKey": "types",
        "RowKey": "one",
        "s": "héllo 😀",
        "i32": -(2**31),
        "i64": EntityProperty(2**63 - 1, EdmType.INT64),
        "i64neg": EntityProperty(-(2**63), EdmType.INT64),
        "f": 3.25,
        "fint": 2.0,
        "nan": math.nan,
        "pinf": math.inf,
        "ninf": -math.inf,
        "b": False,
        "d": dt.datetime(2021, 9, 21, 7, 50, 52, 398525, tzinfo=dt.UTC),
        "d7": _dt7("2020-09-15T23:02:10.4363943Z"),
        "g": guid,
        "bin": b"\x00\xff\x10binary",
        "empty": "",
    }
    await table.create_entity(entity)
    got = await table.get_entity("types", "one")
    assert got["s"] == "héllo 😀"
    assert got["i32"] == -(2**31)
    assert got["i64"] == EntityProperty(2**63 - 1, EdmType.INT64)
    assert got["i64neg"] == EntityProperty(-(2**63), EdmType.INT64)
    assert got["f"] == 3.25
    assert got["fint"] == 2.0
    assert isinstance(got["fint"], float)
    assert math.isnan(got["nan"])
    assert got["pinf"] == math.inf
    assert got["ninf"] == -math.inf
    assert got["b"] is False
    assert got["d"] == entity["d"]
    assert got["d7"].tables_service_value == "2020-09-15T23:02:10.4363943Z"
    assert got["g"] == guid
    assert got["bin"] == b"\x00\xff\x10binary"
    assert got["empty"] == ""
    ts: Any = got.metadata["timestamp"]
    assert ts.tables_service_value.endswith("Z")
    assert len(ts.tables_service_value) == 28
    assert str(got.metadata["etag"]).startswith("W/\"datetime'")


async def test_queries_on_each_type(table: TableClient) -> None:
    base = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    for i in range(10):
        await table.create_entity(
            {
                "PartitionKey": "q",
                "RowKey": f"{i:03d}",
                "n": i,
                "big": EntityProperty(10**12 + i, EdmType.INT64),
                "x": i / 2,
                "even": i % 2 == 0,
                "when": base + dt.timedelta(days=i),
                "g": uuid.UUID(int=i),
                "bin": bytes([i]),
                "name": f"name{i}",
            }
        )

    async def rows(flt: str, **params: Any) -> list[str]:
        return [e["RowKey"] async for e in table.query_entities(flt, parameters=params or None)]

    assert await rows("n ge 7") == ["007", "008", "009"]
    assert await rows(f"big gt {10**12 + 7}L") == ["008", "009"]
    assert await rows("big gt 5 and n lt 2") == ["000", "001"]  # an Int32 literal widens
    assert await rows("x lt 1.0") == ["000", "001"]
    assert await rows("even eq false and n lt 4") == ["001", "003"]
    assert await rows("when ge @d", d=base + dt.timedelta(days=8)) == ["008", "009"]
    assert await rows("g eq @g", g=uuid.UUID(int=3)) == ["003"]
    assert await rows("bin eq @b", b=bytes([5])) == ["005"]
    assert await rows("name ge 'name8' or RowKey eq '000'") == ["000", "008", "009"]
    assert await rows("PartitionKey eq 'q' and RowKey ge '005' and RowKey lt '007'") == [
        "005",
        "006",
    ]
    assert await rows("missing eq 1") == []
    selected = [e async for e in table.query_entities("n eq 2", select=["n", "name"])]
    assert dict(selected[0]) == {"n": 2, "name": "name2"}
    with pytest.raises(HttpResponseError) as info:
        [e async for e in table.query_entities("n eq")]
    assert info.value.status_code == 400


async def test_paging_past_1000(table: TableClient) -> None:
    for start in range(0, 2500, 100):
        await table.submit_transaction(
            [
                ("upsert", {"PartitionKey": f"p{start // 1000}", "RowKey": f"{i:05d}"})
                for i in range(start, start + 100)
            ]
        )
    pages = table.list_entities(results_per_page=1000).by_page()
    sizes = []
    keys = []
    async for page in pages:
        items = [e async for e in page]
        sizes.append(len(items))
        keys += [(e["PartitionKey"], e["RowKey"]) for e in items]
    assert sizes == [1000, 1000, 500]
    assert keys == sorted(keys)
    assert len(set(keys)) == 2500
    assert len([e async for e in table.list_entities()]) == 2500


async def test_batches_and_atomic_failure(table: TableClient) -> None:
    await table.create_entity({"PartitionKey": "b", "RowKey": "existing", "v": 1})
    result = await table.submit_transaction(
        [
            ("create", {"PartitionKey": "b", "RowKey": "1", "v": 1}),
            ("upsert", {"PartitionKey": "b", "RowKey": "2", "v": 2}, {"mode": UpdateMode.REPLACE}),
            (
                "update",
                {"PartitionKey": "b", "RowKey": "existing", "v": 5},
                {"mode": UpdateMode.MERGE},
            ),
        ]
    )
    assert len(result) == 3
    assert all("etag" in r for r in result)
    with pytest.raises(TableTransactionError) as info:
        await table.submit_transaction(
            [
                ("create", {"PartitionKey": "b", "RowKey": "3"}),
                ("delete", {"PartitionKey": "b", "RowKey": "existing"}),
                ("create", {"PartitionKey": "b", "RowKey": "1"}),
            ]
        )
    assert info.value.index == 2
    assert cast(Any, info.value).error_code == "EntityAlreadyExists"
    keys = sorted([e["RowKey"] async for e in table.list_entities()])
    assert keys == ["1", "2", "existing"]  # nothing of the failed batch was applied
    with pytest.raises(TableTransactionError) as info:
        await table.submit_transaction(
            [("create", {"PartitionKey": "b", "RowKey": f"x{i}"}) for i in range(101)]
        )
    assert cast(Any, info.value).error_code == "InvalidInput"
    assert [e["RowKey"] async for e in table.list_entities()] == ["1", "2", "existing"]


async def test_conflicts_and_stale_etags(table: TableClient) -> None:
    meta = await table.create_entity({"PartitionKey": "c", "RowKey": "r", "v": 1})
    with pytest.raises(ResourceExistsError):
        await table.create_entity({"PartitionKey": "c", "RowKey": "r"})
    from azure.core import MatchConditions

    updated = await table.update_entity(
        {"PartitionKey": "c", "RowKey": "r", "v": 2},
        etag=meta["etag"],
        match_condition=MatchConditions.IfNotModified,
    )
    assert updated["etag"] != meta["etag"]
    with pytest.raises(ResourceModifiedError):
        await table.update_entity(
            {"PartitionKey": "c", "RowKey": "r", "v": 3},
            etag=meta["etag"],
            match_condition=MatchConditions.IfNotModified,
        )
    with pytest.raises(ResourceModifiedError):
        await table.delete_entity(
            "c", "r", etag=meta["etag"], match_condition=MatchConditions.IfNotModified
        )
    with pytest.raises(ResourceNotFoundError):
        await table.update_entity({"PartitionKey": "c", "RowKey": "nope", "v": 3})
    with pytest.raises(ResourceNotFoundError):
        await table.get_entity("c", "nope")
    # replace drops properties, merge keeps them
    await table.upsert_entity({"PartitionKey": "c", "RowKey": "r", "a": 1, "b": 2})
    await table.update_entity({"PartitionKey": "c", "RowKey": "r", "a": 5}, mode=UpdateMode.MERGE)
    got = await table.get_entity("c", "r")
    assert (got["a"], got["b"]) == (5, 2)
    await table.update_entity({"PartitionKey": "c", "RowKey": "r", "a": 6}, mode=UpdateMode.REPLACE)
    got = await table.get_entity("c", "r")
    assert "b" not in got
    assert got["a"] == 6


async def _sas_client(stub: StubServer, sas: str) -> TableClient:
    return TableClient(
        endpoint=stub.table_endpoint(), table_name="e2etable", credential=AzureSasCredential(sas)
    )


async def test_table_sas_restrictions(stub: StubServer, table: TableClient) -> None:
    for pk in ("a", "b", "c"):
        await table.create_entity({"PartitionKey": pk, "RowKey": "1"})
    cred = AzureNamedKeyCredential(DEV_ACCOUNT, DEV_KEY)
    expiry = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    read_b = generate_table_sas(
        cred,
        "e2etable",
        permission=TableSasPermissions(read=True),
        expiry=expiry,
        start_pk="b",
        end_pk="b",
    )
    async with await _sas_client(stub, read_b) as client:
        assert [e["PartitionKey"] async for e in client.list_entities()] == ["b"]
        got = await client.get_entity("b", "1")
        assert got["PartitionKey"] == "b"
        with pytest.raises(HttpResponseError) as info:
            await client.get_entity("a", "1")  # outside the SAS key range
        assert code_of(info.value) == "AuthorizationFailure"
        with pytest.raises(HttpResponseError) as info:
            await client.create_entity({"PartitionKey": "b", "RowKey": "2"})
        assert info.value.status_code == 403
        assert code_of(info.value) == "AuthorizationPermissionMismatch"
    write_b = generate_table_sas(
        cred,
        "e2etable",
        permission=TableSasPermissions(add=True, update=True),
        expiry=expiry,
        start_pk="b",
        end_pk="b",
    )
    async with await _sas_client(stub, write_b) as client:
        await client.create_entity({"PartitionKey": "b", "RowKey": "2"})
        with pytest.raises(HttpResponseError) as info:
            await client.create_entity({"PartitionKey": "c", "RowKey": "2"})
        assert code_of(info.value) == "AuthorizationFailure"
    expired = generate_table_sas(
        cred,
        "e2etable",
        permission=TableSasPermissions(read=True),
        expiry=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1),
    )
    async with await _sas_client(stub, expired) as client:
        with pytest.raises(ClientAuthenticationError):
            await client.get_entity("a", "1")
    # a stored access policy supplies permissions and expiry
    await table.set_table_access_policy(
        {"readers": TableAccessPolicy(permission="r", expiry=expiry)}
    )
    policies = await table.get_table_access_policy()
    assert policies["readers"] is not None
    assert policies["readers"].permission == "r"
    via_policy = generate_table_sas(cred, "e2etable", policy_id="readers")
    async with await _sas_client(stub, via_policy) as client:
        assert len([e async for e in client.list_entities()]) == 4


async def test_account_sas(stub: StubServer, table: TableClient) -> None:
    cred = AzureNamedKeyCredential(DEV_ACCOUNT, DEV_KEY)
    expiry = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    sas = generate_account_sas(
        cred,
        resource_types=ResourceTypes(service=True, object=True),
        permission=AccountSasPermissions(read=True, list=True),
        expiry=expiry,
    )
    async with TableServiceClient(
        endpoint=stub.table_endpoint(), credential=AzureSasCredential(sas)
    ) as svc:
        assert [t.name async for t in svc.list_tables()] == ["e2etable"]
        with pytest.raises(HttpResponseError) as info:
            await svc.create_table("nope")
        assert info.value.status_code == 403
        client = svc.get_table_client("e2etable")
        async with client:
            assert [e async for e in client.list_entities()] == []
            with pytest.raises(HttpResponseError) as info:
                await client.create_entity({"PartitionKey": "a", "RowKey": "b"})
            assert code_of(info.value) == "AuthorizationPermissionMismatch"


async def test_service_properties_via_sdk(service: TableServiceClient) -> None:
    from azure.data.tables import TableAnalyticsLogging, TableCorsRule

    await service.set_service_properties(
        analytics_logging=TableAnalyticsLogging(read=True, write=True, delete=True),
        cors=[TableCorsRule(["https://a.example"], ["GET"], max_age_in_seconds=10)],
    )
    props: Any = await service.get_service_properties()
    assert props["analytics_logging"].read is True
    assert props["cors"][0].allowed_origins == ["https://a.example"]


async def test_entity_object_metadata(table: TableClient) -> None:
    await table.create_entity(TableEntity(PartitionKey="m", RowKey="1", v=1))
    got = await table.get_entity("m", "1")
    assert isinstance(got, TableEntity)
    assert got.metadata["etag"] is not None


async def test_table_paging_and_point_select(service: TableServiceClient) -> None:
    for i in range(5):
        await service.create_table(f"page{i}")
    sizes = []
    async for page in service.list_tables(results_per_page=2).by_page():
        sizes.append(len([t async for t in page]))
    assert sizes == [2, 2, 1]
    table = service.get_table_client("page0")
    async with table:
        await table.create_entity({"PartitionKey": "p", "RowKey": "r", "a": 1, "b": "x"})
        got = await table.get_entity("p", "r", select=["b"])
        assert dict(got) == {"b": "x"}
