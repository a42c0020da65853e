"""Every write result carries the service's request id (table, ACL and service writes too)."""

from __future__ import annotations

from typing import Any

import pytest

import azt
from azt._core.transport import HttpRequest, HttpResponse, MockTransport

from .conftest import DEV_CREDENTIAL, ENDPOINT, ClientOptions, unique_table_name

CRED = DEV_CREDENTIAL


def _answer(status: int, rid: str, code: str | None = None) -> Any:
    def handler(request: HttpRequest) -> HttpResponse:
        headers = {"x-ms-request-id": rid}
        if code is not None:
            headers["x-ms-error-code"] = code
        return HttpResponse(status, headers)

    return handler


async def test_table_writes_return_the_request_id() -> None:
    async with azt.TableClient(
        ENDPOINT, "movies", CRED, transport=MockTransport(_answer(204, "rid-c"))
    ) as table:
        created = await table.create_table()
        deleted = await table.delete_table()
        acl = await table.set_access_policy({})
    assert (created.request_id, created.status, created.etag) == ("rid-c", 204, None)
    assert (deleted.request_id, deleted.status) == ("rid-c", 204)
    assert acl.request_id == "rid-c"
    async with azt.TableServiceClient(
        ENDPOINT, CRED, transport=MockTransport(_answer(202, "rid-s"))
    ) as service:
        deleted = await service.delete_table("movies")
        props = await service.set_service_properties(azt.ServiceProperties(cors=[]))
    assert deleted.request_id == "rid-s"
    assert (props.request_id, props.status) == ("rid-s", 202)


async def test_table_errors_carry_the_request_id() -> None:
    async with azt.TableClient(
        ENDPOINT,
        "movies",
        CRED,
        transport=MockTransport(_answer(409, "rid-e", "TableAlreadyExists")),
    ) as table:
        with pytest.raises(azt.TableAlreadyExistsError) as info:
            await table.create_table()
        assert info.value.request_id == "rid-e"
        assert await table.create_table_if_not_exists() is False


@pytest.mark.live
async def test_table_lifecycle_results_from_the_service(service: azt.TableServiceClient) -> None:
    table = service.get_table_client(unique_table_name())
    created = await table.create_table()
    deleted = await table.delete_table()
    assert created.request_id
    assert deleted.request_id
    assert created.request_id != deleted.request_id
    assert (created.status, deleted.status) == (204, 204)


SERVICE_PROPERTIES = (
    b'<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Logging>'
    b"<Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete>"
    b"<RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging><Cors />"
    b"</StorageServiceProperties>"
)
SERVICE_STATS = (
    b'<?xml version="1.0" encoding="utf-8"?><StorageServiceStats><GeoReplication>'
    b"<Status>live</Status><LastSyncTime>Wed, 19 Jan 2021 22:28:43 GMT</LastSyncTime>"
    b"</GeoReplication></StorageServiceStats>"
)
ACL = (
    b'<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers><SignedIdentifier>'
    b"<Id>readers</Id><AccessPolicy><Permission>r</Permission></AccessPolicy>"
    b"</SignedIdentifier></SignedIdentifiers>"
)


async def test_xml_reads_carry_the_request_id() -> None:
    def handler(request: HttpRequest) -> HttpResponse:
        headers = {"x-ms-request-id": "rid-x", "Content-Type": "application/xml"}
        if "comp=properties" in request.url:
            return HttpResponse(200, headers, SERVICE_PROPERTIES)
        if "comp=stats" in request.url:
            return HttpResponse(200, headers, SERVICE_STATS)
        return HttpResponse(200, headers, ACL)

    async with azt.TableServiceClient(ENDPOINT, CRED, transport=MockTransport(handler)) as service:
        props = await service.get_service_properties()
        stats = await service.get_service_stats()
        policies = await service.get_table_client("movies").get_access_policy()
    assert props.request_id == "rid-x"
    assert props == azt.ServiceProperties(logging=props.logging, cors=())  # id not compared
    assert stats.request_id == "rid-x"
    assert stats.geo_replication.status == "live"
    assert isinstance(policies, dict)
    assert policies.request_id == "rid-x"
    assert policies == {"readers": azt.AccessPolicy(permission="r")}


async def test_atom_failures_are_typed_like_json(
    connection_string: str, target: str, client_options: ClientOptions
) -> None:
    if target != "stub":
        pytest.skip("Azurite speaks JSON only (415 AtomFormatNotSupported)")
    name = unique_table_name("atomerr")
    async with azt.TableServiceClient.from_connection_string(
        connection_string,
        wire_format=azt.WireFormat.ATOM,
        **client_options,
    ) as service:
        table = await service.create_table(name)
        try:
            first = await table.insert_entity({"PartitionKey": "p", "RowKey": "1", "n": 1})
            assert first.etag
            await table.update_entity({"PartitionKey": "p", "RowKey": "1", "n": 2})
            with pytest.raises(azt.PreconditionFailedError) as stale:
                await table.update_entity(
                    {"PartitionKey": "p", "RowKey": "1", "n": 3}, etag=first.etag
                )
            assert stale.value.request_id
            batch = table.batch()
            batch.create({"PartitionKey": "p", "RowKey": "2"})
            batch.create({"PartitionKey": "p", "RowKey": "1"})
            with pytest.raises(azt.TransactionError) as failed:
                await table.submit_transaction(batch)
            assert failed.value.index == 1
            assert isinstance(failed.value.error, azt.EntityAlreadyExistsError)
            assert failed.value.request_id
            with pytest.raises(azt.EntityNotFoundError):
                await table.get_entity("p", "2")
            with pytest.raises(azt.TableNotFoundError):
                await service.get_table_client(unique_table_name("none")).query_entities().to_list()
            names = await service.query_tables("TableName eq @n", parameters={"n": name}).to_list()
            assert names == [name]
        finally:
            await service.delete_table(name)
