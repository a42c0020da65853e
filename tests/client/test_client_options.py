"""Per-client and per-copy options: the server-side ``timeout=`` and secondary reads."""

from __future__ import annotations

from typing import Any

import pytest

import azt
from azt._core.transport import HttpRequest, HttpResponse, MockTransport

from .conftest import DEV_CREDENTIAL, ENDPOINT, unique_table_name

SECONDARY = "http://127.0.0.1:10002/devstoreaccount1-secondary"
CRED = DEV_CREDENTIAL
ROW = b'{"value":[{"PartitionKey":"p","RowKey":"r","Timestamp":"2021-01-01T00:00:00Z"}]}'


BATCH_RESPONSE = (
    b"--batchresponse_1\r\n"
    b"Content-Type: multipart/mixed; boundary=changesetresponse_1\r\n\r\n"
    b"--changesetresponse_1\r\n"
    b"Content-Type: application/http\r\n"
    b"Content-Transfer-Encoding: binary\r\n\r\n"
    b"HTTP/1.1 204 No Content\r\n"
    b"DataServiceVersion: 1.0;\r\n\r\n\r\n"
    b"--changesetresponse_1--\r\n"
    b"--batchresponse_1--\r\n"
)


def _ok(request: HttpRequest) -> HttpResponse:
    headers = {"x-ms-request-id": "rid", "ETag": 'W/"e"'}
    if request.url.split("?")[0].endswith("/$batch"):
        headers["Content-Type"] = "multipart/mixed; boundary=batchresponse_1"
        return HttpResponse(202, headers, BATCH_RESPONSE)
    if request.method == "GET" and "comp=acl" in request.url:
        return HttpResponse(200, headers, b"<SignedIdentifiers/>")
    if request.method == "GET" and "(PartitionKey=" in request.url:
        return HttpResponse(200, headers, b'{"PartitionKey":"p","RowKey":"r"}')
    if request.method == "GET" and "/Tables" in request.url:
        if "NextTableName" in request.url:
            return HttpResponse(200, headers, b'{"value":[]}')
        headers["x-ms-continuation-NextTableName"] = "more"
        return HttpResponse(200, headers, b'{"value":[{"TableName":"movies"}]}')
    if request.method == "GET":
        if "NextPartitionKey" in request.url:
            return HttpResponse(200, headers, b'{"value":[]}')
        headers["x-ms-continuation-NextPartitionKey"] = "next"
        return HttpResponse(200, headers, ROW)
    return HttpResponse(204, headers)


def _query(url: str) -> str:
    return url.partition("?")[2]


async def test_server_timeout_is_sent_on_every_request() -> None:
    transport = MockTransport(_ok)
    async with azt.TableClient(
        ENDPOINT, "movies", CRED, transport=transport, server_timeout=7
    ) as table:
        assert table.server_timeout == 7
        await table.create_table()
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
        await table.get_entity("p", "r", select=["a"])
        await table.query_entities("RowKey eq 'r'").to_list()  # two pages
        await table.get_access_policy()
        batch = table.batch()
        batch.delete("p", "r")
        await table.submit_transaction(batch)
        await table.delete_entity("p", "r")
    queries = [_query(r.url) for r in transport.requests]
    assert len(queries) == 9
    for query in queries:
        assert query.split("&").count("timeout=7") == 1, query
    assert queries[3] == "$select=a&timeout=7"
    assert queries[5].startswith("$filter=RowKey%20eq%20%27r%27&NextPartitionKey=next&")
    assert queries[6] == "comp=acl&timeout=7"


async def test_with_options_overrides_and_keeps() -> None:
    transport = MockTransport(_ok)
    async with azt.TableClient(
        ENDPOINT, "movies", CRED, transport=transport, server_timeout=7
    ) as table:
        quick = table.with_options(server_timeout=2)
        plain = table.with_options(server_timeout=None)
        same = table.with_options()
        await quick.delete_entity("p", "r")
        await plain.delete_entity("p", "r")
        await same.delete_entity("p", "r")
        await table.delete_entity("p", "r")
        await quick.aclose()  # closes the copy only
        assert quick.closed
        assert not table.closed
        await table.delete_entity("p", "r")
        assert (quick.table_name, quick.server_timeout, table.server_timeout) == ("movies", 2, 7)
    assert [_query(r.url) for r in transport.requests] == [
        "timeout=2",
        "",
        "timeout=7",
        "timeout=7",
        "timeout=7",
    ]
    with pytest.raises(azt.ClientClosedError):
        await quick.delete_entity("p", "r")


@pytest.mark.parametrize("bad", [0, -1, 2.5, "5", True])
def test_server_timeout_validation(bad: Any) -> None:
    with pytest.raises(azt.ValidationError, match="server_timeout"):
        azt.TableClient(ENDPOINT, "movies", CRED, transport=MockTransport(_ok), server_timeout=bad)
    table = azt.TableClient(ENDPOINT, "movies", CRED, transport=MockTransport(_ok))
    with pytest.raises(azt.ValidationError, match="server_timeout"):
        table.with_options(server_timeout=bad)


async def test_secondary_reads_go_to_the_secondary_and_writes_to_the_primary() -> None:
    transport = MockTransport(_ok)
    async with azt.TableServiceClient(
        ENDPOINT, CRED, transport=transport, location_mode=azt.LocationMode.SECONDARY
    ) as service:
        assert service.location_mode is azt.LocationMode.SECONDARY
        table = service.get_table_client("movies")
        await table.get_entity("p", "r")
        await table.query_entities().to_list()
        await service.list_tables().to_list()
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
        await table.get_access_policy()
        primary = table.with_options(location_mode=azt.LocationMode.PRIMARY)
        await primary.get_entity("p", "r")
    bases = [r.url.split("?")[0] for r in transport.requests]
    assert bases == [
        f"{SECONDARY}/movies(PartitionKey='p',RowKey='r')",
        f"{SECONDARY}/movies()",
        f"{SECONDARY}/movies()",
        f"{SECONDARY}/Tables",
        f"{SECONDARY}/Tables",
        f"{ENDPOINT}/movies",
        f"{ENDPOINT}/movies",
        f"{ENDPOINT}/movies(PartitionKey='p',RowKey='r')",
    ]


async def test_a_404_on_the_secondary_is_retried_on_the_primary() -> None:
    def handler(request: HttpRequest) -> HttpResponse:
        if "-secondary" in request.url:
            headers = {"x-ms-request-id": "sec", "x-ms-error-code": "ResourceNotFound"}
            return HttpResponse(404, headers)
        return HttpResponse(
            200, {"x-ms-request-id": "pri"}, b'{"PartitionKey":"p","RowKey":"r","n":1}'
        )

    transport = MockTransport(handler)
    async with azt.TableClient(
        ENDPOINT,
        "movies",
        CRED,
        transport=transport,
        location_mode=azt.LocationMode.SECONDARY,
    ) as table:
        entity = await table.get_entity("p", "r")
    assert entity["n"] == 1
    assert entity.metadata.request_id == "pri"  # type: ignore[attr-defined]
    assert ["-secondary" in r.url for r in transport.requests] == [True, False]


async def test_other_secondary_errors_and_primary_404s_are_raised() -> None:
    def handler(request: HttpRequest) -> HttpResponse:
        if "-secondary" in request.url:
            return HttpResponse(403, {"x-ms-error-code": "AuthorizationFailure"})
        return HttpResponse(404, {"x-ms-error-code": "ResourceNotFound"})

    transport = MockTransport(handler)
    async with azt.TableClient(
        ENDPOINT, "movies", CRED, transport=transport, location_mode=azt.LocationMode.SECONDARY
    ) as table:
        with pytest.raises(azt.AuthorizationError):
            await table.get_entity("p", "r")
        with pytest.raises(azt.EntityNotFoundError):
            await table.with_options(location_mode=azt.LocationMode.PRIMARY).get_entity("p", "r")
    assert len(transport.requests) == 2


def test_secondary_mode_needs_a_secondary_endpoint() -> None:
    with pytest.raises(azt.ValidationError, match="secondary endpoint"):
        azt.TableClient(
            "https://example.com/tables",
            "movies",
            CRED,
            transport=MockTransport(_ok),
            location_mode=azt.LocationMode.SECONDARY,
        )
    mode: Any = "secondary"
    with pytest.raises(azt.ValidationError, match="LocationMode"):
        azt.TableClient(ENDPOINT, "movies", CRED, transport=MockTransport(_ok), location_mode=mode)


@pytest.mark.live
async def test_options_against_the_service(service: azt.TableServiceClient) -> None:
    name = unique_table_name("opt")
    table = await service.with_options(server_timeout=5).create_table(name)
    try:
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
        quick = table.with_options(server_timeout=3)
        assert (await quick.get_entity("p", "r"))["n"] == 1
        replica = table.with_options(location_mode=azt.LocationMode.SECONDARY)
        assert (await replica.get_entity("p", "r"))["n"] == 1
        assert len(await replica.query_entities("PartitionKey eq 'p'").to_list()) == 1
    finally:
        await service.delete_table(name)


async def test_primary_then_secondary_fails_over_reads_only() -> None:
    def handler(request: HttpRequest) -> HttpResponse:
        if "-secondary" in request.url:
            return HttpResponse(
                200, {"x-ms-request-id": "sec"}, b'{"PartitionKey":"p","RowKey":"r","n":1}'
            )
        if "RowKey='missing'" in request.url:
            return HttpResponse(404, {"x-ms-error-code": "ResourceNotFound"})
        return HttpResponse(503, {"x-ms-error-code": "ServerBusy"})

    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    transport = MockTransport(handler)
    async with azt.TableClient(
        ENDPOINT,
        "movies",
        CRED,
        transport=transport,
        location_mode=azt.LocationMode.PRIMARY_THEN_SECONDARY,
        retry=azt.RetryPolicy(max_attempts=2, base=1, minimum=0, maximum=5),
        sleep=sleep,
    ) as table:
        entity = await table.get_entity("p", "r")
        assert entity.metadata.request_id == "sec"  # type: ignore[attr-defined]
        with pytest.raises(azt.EntityNotFoundError):
            await table.get_entity("p", "missing")  # a 404 on the primary is an answer
        with pytest.raises(azt.ServerBusyError):
            await table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})  # writes: primary
    where = ["secondary" if "-secondary" in r.url else "primary" for r in transport.requests]
    assert where == ["primary", "primary", "secondary", "primary", "primary", "primary"]
    assert len(sleeps) == 2
