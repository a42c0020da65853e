"""Tables over HTTP: a deleted table's name kept for a while, names in any casing."""

from __future__ import annotations

from urllib.parse import quote

import aiohttp

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer

from .conftest import (
    JSON_MINIMAL,
    QUERY_HEADERS,
    RawClient,
    matching_row_keys,
)
from .test_http_raw import JSON_HEADERS, insert, make_table


async def test_table_being_deleted_when_configured() -> None:
    config = StubConfig(table_deletion_seconds=60.0)
    async with StubServer(config) as stub, aiohttp.ClientSession() as session:
        raw = RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        r = await raw.request("DELETE", "/Tables('mytable')", headers={"Accept": JSON_MINIMAL})
        assert r.status == 204
        r = await raw.request(
            "POST", "/Tables", headers=JSON_HEADERS, body='{"TableName":"MyTable"}'
        )
        assert (r.status, r.code) == (409, "TableBeingDeleted"), r.body
        assert "being deleted" in r.json()["odata.error"]["message"]["value"]
        await make_table(raw, "othertable")  # other names are free


async def test_entity_operations_through_another_casing_of_the_table_name(
    raw: RawClient,
) -> None:
    """Table names are case-insensitive for every operation (PROTOCOL.md 5.5): a table
    created as ``MixedCase`` is read and written as ``mixedcase``. Azurite 3.35 is
    case-insensitive for create and delete only and answers entity operations through
    another casing with ``404 TableNotFound``."""
    await make_table(raw, "MixedCase")
    await insert(raw, "mixedcase", {"PartitionKey": "p", "RowKey": "lower"})
    await insert(raw, "MIXEDCASE", {"PartitionKey": "p", "RowKey": "upper"})
    assert await matching_row_keys(raw, "mixedCASE", "PartitionKey eq 'p'") == ["lower", "upper"]
    tables = await raw.request(
        "GET", "/Tables", query={"$filter": "TableName eq 'MixedCase'"}, headers=QUERY_HEADERS
    )
    assert [t["TableName"] for t in tables.json()["value"]] == ["MixedCase"]
    key = quote("(PartitionKey='p',RowKey='lower')", safe="(),='")
    deleted = await raw.request(
        "DELETE", f"/MIXEDcase{key}", headers={"If-Match": "*", "Accept": JSON_MINIMAL}
    )
    assert deleted.status == 204, deleted.body
    assert await matching_row_keys(raw, "MixedCase", "PartitionKey eq 'p'") == ["upper"]


BAD_NAMES = [
    ("1table", "InvalidResourceName"),
    ("my_table", "InvalidResourceName"),
    ("ab", "OutOfRangeInput"),
    ("a" * 64, "OutOfRangeInput"),
]

ENTITY_CALLS = [
    ("POST", "/{t}", JSON_HEADERS, '{"PartitionKey":"p","RowKey":"r"}'),  # insert
    ("PUT", "/{t}(PartitionKey='p',RowKey='r')", JSON_HEADERS, '{"a":1}'),  # upsert
    ("MERGE", "/{t}(PartitionKey='p',RowKey='r')", JSON_HEADERS, '{"a":1}'),  # upsert (merge)
    ("PUT", "/{t}(PartitionKey='p',RowKey='r')", {**JSON_HEADERS, "If-Match": "*"}, "{}"),
    ("DELETE", "/{t}(PartitionKey='p',RowKey='r')", {"If-Match": "*"}, None),
    ("GET", "/{t}(PartitionKey='p',RowKey='r')", {"Accept": JSON_MINIMAL}, None),
    ("GET", "/{t}()", QUERY_HEADERS, None),
]


async def test_entity_operations_on_a_name_no_table_can_have_are_refused_as_bad_names(
    raw: RawClient,
) -> None:
    """Storage answers an entity operation on an invalid table name with the name's refusal
    (400 InvalidResourceName / OutOfRangeInput), not 404 TableNotFound: azure-data-tables'
    live test_table_client.test_table_name_errors turns exactly those codes into its
    ValueError. A valid name of a missing table stays 404 TableNotFound."""
    for name, code in BAD_NAMES:
        for method, path, headers, body in ENTITY_CALLS:
            r = await raw.request(method, path.format(t=name), headers=headers, body=body)
            assert (r.status, r.code) == (400, code), (method, path, name, r.body)
    for method, path, headers, body in ENTITY_CALLS:
        r = await raw.request(method, path.format(t="missingtable"), headers=headers, body=body)
        assert (r.status, r.code) == (404, "TableNotFound"), (method, path, r.body)
