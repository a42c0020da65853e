"""The stub's Cosmos DB Table API flavour over HTTP, next to the Storage flavour for the same
requests (which must keep answering exactly as before)."""

from __future__ import annotations

import json

import aiohttp
import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer
from azt_server_stub.__main__ import build_parser, config_from_args
from azt_server_stub.flavors import COSMOS, STORAGE, flavor_named
from azt_server_stub.realism.throttle import FakeClock, Throttle, ThrottleLimits

from .conftest import JSON_MINIMAL, RawClient
from .test_http_batch import BATCH_CT, envelope, parts_of, request_part
from .test_http_raw import insert, make_table

JSON_HEADERS = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
ACL_BODY = '<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers />'


def odata_error(body: bytes) -> dict[str, object]:
    error = json.loads(body)["odata.error"]
    assert isinstance(error, dict)
    return error


# -- operations Cosmos lacks -------------------------------------------------------------------


SERVICE_REQUESTS = [
    ("GET", "/", {"restype": "service", "comp": "properties"}, None, "service properties"),
    ("GET", "/", {"restype": "service", "comp": "stats"}, None, "service stats"),
    ("GET", "/mytable", {"comp": "acl"}, None, "table ACL"),
    ("PUT", "/mytable", {"comp": "acl"}, ACL_BODY, "table ACL"),
]


@pytest.mark.parametrize(("method", "path", "query", "body", "operation"), SERVICE_REQUESTS)
async def test_cosmos_refuses_what_it_lacks_with_a_cosmos_error_body(
    cosmos: RawClient,
    method: str,
    path: str,
    query: dict[str, str],
    body: str | None,
    operation: str,
) -> None:
    r = await cosmos.request(method, path, query=query, body=body)
    assert r.status == 501
    # no Accept: full metadata, as for */* (docs/cosmos.md, "Fidelity decisions")
    assert r.headers["Content-Type"] == "application/json;odata=fullmetadata"
    assert r.body.endswith(b"}}}\r\n")  # Cosmos ends an error body with CRLF (recorded)
    assert "x-ms-error-code" not in r.headers  # Cosmos puts the code in the body only
    error = odata_error(r.body)
    assert error["code"] == "NotImplemented"
    message = error["message"]
    assert isinstance(message, dict)
    assert message["lang"] == "en-us"
    value = str(message["value"])
    assert value.startswith(f"The {operation} operation is not supported by the Azure Cosmos")
    assert value.endswith(f"\nRequestID:{r.headers['x-ms-request-id']}\n")


@pytest.mark.parametrize(("method", "path", "query", "body", "_op"), SERVICE_REQUESTS)
async def test_storage_still_serves_them(
    storage: RawClient, method: str, path: str, query: dict[str, str], body: str | None, _op: str
) -> None:
    r = await storage.request(method, path, query=query, body=body)
    if query.get("comp") == "stats":
        assert r.status == 400  # stats are served on the secondary only (as before)
    else:
        assert r.status in (200, 202, 204), r.body


async def test_cosmos_refuses_cors_preflight(cosmos: RawClient, storage: RawClient) -> None:
    headers = {"Origin": "https://example.org", "Access-Control-Request-Method": "GET"}
    r = await cosmos.request("OPTIONS", "/mytable", headers=headers, auth="none", version=None)
    assert r.status == 501
    assert odata_error(r.body)["code"] == "NotImplemented"
    r = await storage.request("OPTIONS", "/mytable", headers=headers, auth="none", version=None)
    assert r.status == 403  # no CORS rules: the Storage answer, unchanged


async def test_cosmos_speaks_json_only(cosmos: RawClient, storage: RawClient) -> None:
    atom = {"Accept": "application/atom+xml"}
    r = await cosmos.request("GET", "/mytable()", headers=atom, version="2015-04-05")
    assert r.status == 415
    error = odata_error(r.body)  # the gateway's recorded 415 (docs/cosmos.md, REC 6)
    assert error["code"] == "MediaTypeNotSupported"
    rid = r.headers["x-ms-request-id"]
    message = error["message"]
    assert isinstance(message, dict)
    assert message["value"] == (
        "None of the provided media types are supported\r\nActivityId: "
        f"{rid}, documentdb-dotnet-sdk/2.11.0 Host/64-bit MicrosoftWindowsNT/6.2.9200.0"
        f"\nRequestID:{rid}\n"
    )
    r = await storage.request("GET", "/mytable()", headers=atom, version="2015-04-05")
    assert r.status == 200
    assert r.body.startswith(b"<?xml")


async def test_cosmos_has_no_secondary(cosmos: RawClient, storage: RawClient) -> None:
    headers = {"Accept": JSON_MINIMAL}
    path = "/mytable()"
    segment = f"{DEV_ACCOUNT}-secondary"
    r = await cosmos.request("GET", path, headers=headers, account_segment=segment)
    assert r.status == 400
    assert odata_error(r.body)["code"] == "InvalidUri"
    r = await storage.request("GET", path, headers=headers, account_segment=segment)
    assert r.status == 200


# -- limits ------------------------------------------------------------------------------------


async def test_row_key_limit_is_255_bytes_on_cosmos(cosmos: RawClient, storage: RawClient) -> None:
    fits: dict[str, object] = {"PartitionKey": "p", "RowKey": "é" * 127 + "x"}  # 255 bytes as UTF-8
    too_long: dict[str, object] = {
        "PartitionKey": "p",
        "RowKey": "é" * 128,
    }  # 256 bytes, 128 UTF-16 units
    await insert(cosmos, "mytable", fits)
    r = await cosmos.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(too_long))
    assert r.status == 400
    assert odata_error(r.body)["code"] == "KeyValueTooLarge"
    # an update addressed by URL keys is checked too
    long_key = "r" * 300
    r = await cosmos.request(
        "PUT",
        f"/mytable(PartitionKey='p',RowKey='{long_key}')",
        headers=JSON_HEADERS,
        body=json.dumps({"A": 1}),
    )
    assert r.status == 400
    assert odata_error(r.body)["code"] == "KeyValueTooLarge"
    await insert(storage, "mytable", too_long)  # Storage allows 1 KiB keys


# ``etag`` itself is an ordinary property (recorded: test_cosmos_recorded.py); its other
# casings and the other names have no recording, and the FAQ's refusal stays.
@pytest.mark.parametrize("name", ["id", "ID", "rid", "Etag", "ETag", "ResourceId"])
async def test_cosmos_reserves_property_names(
    cosmos: RawClient, storage: RawClient, name: str
) -> None:
    entity: dict[str, object] = {"PartitionKey": "p", "RowKey": "r", name: "x"}
    r = await cosmos.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(entity))
    assert r.status == 400
    assert odata_error(r.body)["code"] == "PropertyNameInvalid"
    await insert(storage, "mytable", entity)


async def test_cosmos_batch_limits(cosmos: RawClient, storage: RawClient) -> None:
    big = "x" * 30_000
    parts = [
        request_part(
            "POST",
            "http://127.0.0.1/devstoreaccount1/mytable",
            json.dumps({"PartitionKey": "b", "RowKey": str(i), **{f"S{j}": big for j in range(2)}}),
        )
        for i in range(40)
    ]
    body = envelope(parts)  # about 2.4 MB: over Cosmos's 2 MB, under Storage's 4 MiB
    assert 2_000_000 < len(body.encode()) < 4 * 1024 * 1024
    headers = {"Content-Type": BATCH_CT}
    r = await cosmos.request("POST", "/$batch", headers=headers, body=body)
    assert r.status == 413
    assert odata_error(r.body)["code"] == "RequestBodyTooLarge"
    r = await storage.request("POST", "/$batch", headers=headers, body=body)
    assert r.status == 202
    assert [status for status, _, _ in parts_of(r.body)] == [201] * 40
    # an operation inside a Cosmos batch breaking a Cosmos rule fails the batch at its index
    reserved = envelope(
        [
            request_part(
                "POST",
                "http://127.0.0.1/devstoreaccount1/mytable",
                json.dumps({"PartitionKey": "c", "RowKey": "1"}),
            ),
            request_part(
                "POST",
                "http://127.0.0.1/devstoreaccount1/mytable",
                json.dumps({"PartitionKey": "c", "RowKey": "2", "ResourceId": "x"}),
            ),
        ]
    )
    r = await cosmos.request("POST", "/$batch", headers=headers, body=reserved)
    assert r.status == 400
    error = odata_error(r.body)
    assert error["code"] == "PropertyNameInvalid"
    message = error["message"]
    assert isinstance(message, dict)
    assert str(message["value"]).startswith("1:")


# -- throttling --------------------------------------------------------------------------------


@pytest.mark.parametrize("flavor", ["storage", "cosmos"])
async def test_throttling_answer_follows_the_flavor(flavor: str) -> None:
    clock = FakeClock()
    limits = ThrottleLimits(partition_rate=4.0, account_rate=None, burst=1.0)
    config = StubConfig(throttle=Throttle(limits, clock=clock), flavor=flavor)
    async with StubServer(config) as stub, aiohttp.ClientSession() as s:
        raw = RawClient(s, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        refused = None
        for i in range(6):
            r = await raw.request(
                "POST",
                "/mytable",
                headers=JSON_HEADERS,
                body=json.dumps({"PartitionKey": "hot", "RowKey": str(i)}),
            )
            if r.status >= 400:
                refused = r
                break
        assert refused is not None
        if flavor == "cosmos":
            assert refused.status == 429
            # as recorded (test_table_cosmos.test_query_tables_with_num_results, 2020)
            error = odata_error(refused.body)
            assert error["code"] == "429"
            message = error["message"]
            assert isinstance(message, dict)
            value = str(message["value"])
            assert value.startswith(
                'Message: {"Errors":["Request rate is large. More Request Units may be '
                "needed, so no changes were made. Please retry this request later. Learn "
                'more: http://aka.ms/cosmosdb-error-429"]}\r\nActivityId: '
            )
            assert "RequestStats: , SDK: Microsoft.Azure.Documents.Common/2.11.0" in value
            assert refused.body.endswith(b"}}}\r\n")
            # the bucket is empty: one token comes back after 1/4 s
            assert refused.headers["x-ms-retry-after-ms"] == "250"
        else:
            assert refused.status == 503
            assert refused.headers["x-ms-error-code"] == "ServerBusy"
            assert "x-ms-retry-after-ms" not in refused.headers


# -- configuration -----------------------------------------------------------------------------


def test_flavor_options() -> None:
    assert config_from_args(build_parser().parse_args([])).flavor == "storage"
    assert config_from_args(build_parser().parse_args(["--flavor", "cosmos"])).flavor == "cosmos"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--flavor", "mongo"])
    assert StubServer(flavor="COSMOS").flavor == "cosmos"
    with pytest.raises(ValueError, match="unknown flavor 'mongo'"):
        StubServer(flavor="mongo")
    with pytest.raises(ValueError, match="unknown flavor"):
        flavor_named("azurite")
    assert (flavor_named("storage"), flavor_named("cosmos")) == (STORAGE, COSMOS)


async def test_unknown_flavor_in_config_refuses_to_start() -> None:
    with pytest.raises(ValueError, match="unknown flavor"):
        async with StubServer(StubConfig(flavor="mongo")):
            pass
