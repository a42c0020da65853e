"""What a client sees of the written form, per flavour, where real traffic shows it
(issue 35, items 5 and 12 and the member order): ``odata.metadata``, the order of JSON
members, ``Content-Type`` on change-set 204 parts and ``x-ms-version`` on answers.

Sources: ``Azure/azure-sdk-for-python``, ``sdk/tables/azure-data-tables/tests/recordings/``
(``*_cosmos.yaml`` 2020-2021 and ``test_table_batch_cosmos.py*.json`` 2022) and
``Azure/azure-cosmos-table-python``, ``azure-cosmosdb-table/tests/recordings/`` (Storage,
2017-2019); each test names its recordings, docs/cosmos.md and docs/stub.md the decisions.
"""

from __future__ import annotations

import json
import re

import pytest

from .conftest import JSON_MINIMAL, RawClient
from .test_http_batch import BATCH_CT, envelope, request_part
from .test_http_raw import insert

JSON_HEADERS = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
FULL = "application/json;odata=fullmetadata"
ENTITY = "/mytable(PartitionKey='p',RowKey='r')"
ROOT = r"http://127\.0\.0\.1:\d+/devstoreaccount1"
#: sent in this order: neither sorted nor with the keys first
SENT = {"zeta": 1, "PartitionKey": "p", "RowKey": "r", "alpha": "a", "Mid": True}


async def _members(
    raw: RawClient, path: str = ENTITY, accept: str = JSON_MINIMAL, **query: str
) -> list[str]:
    """The top-level member names of a GET's JSON answer, in the order written."""
    r = await raw.request("GET", path, query=query, headers={"Accept": accept})
    assert r.status == 200, r.body
    return list(json.loads(r.body))


async def _metadata(raw: RawClient, path: str = ENTITY, **query: str) -> str:
    r = await raw.request("GET", path, query=query, headers={"Accept": JSON_MINIMAL})
    assert r.status == 200, r.body
    return str(json.loads(r.body)["odata.metadata"])


# -- odata.metadata -----------------------------------------------------------------------------


async def test_cosmos_single_entity_metadata_names_the_table_path(
    cosmos: RawClient, storage: RawClient
) -> None:
    # Cosmos, every recorded entity read and insert echo (2020-2022; e.g.
    # test_table_entity_cosmos.test_get_entity #1-2): {root}/{t}/$metadata#{t}/@Element;
    # feeds {root}/$metadata#{t} (test_query_entities_with_filter #2). Storage: no segment.
    for raw, element in (
        (cosmos, rf"{ROOT}/mytable/\$metadata#mytable/@Element"),
        (storage, rf"{ROOT}/\$metadata#mytable/@Element"),
    ):
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(SENT))
        assert r.status == 201, r.body
        assert re.fullmatch(element, json.loads(r.body)["odata.metadata"])
        assert re.fullmatch(element, await _metadata(raw))
        assert re.fullmatch(rf"{ROOT}/\$metadata#mytable", await _metadata(raw, "/mytable()"))
        r = await raw.request("GET", ENTITY, headers={"Accept": FULL})
        assert re.fullmatch(element, json.loads(r.body)["odata.metadata"])


async def test_cosmos_change_set_insert_echo_names_the_table_path(cosmos: RawClient) -> None:
    base = "http://127.0.0.1/devstoreaccount1/mytable"
    parts = [request_part("POST", base, json.dumps(SENT))]
    r = await cosmos.request(
        "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope(parts)
    )
    assert r.status == 202, r.body
    echo = rf'"odata.metadata":"{ROOT}/mytable/\$metadata#mytable/@Element"'
    assert re.search(echo, r.body.decode())


@pytest.mark.parametrize("select", ["", " "])
async def test_storage_names_an_empty_select_in_metadata(
    storage: RawClient, cosmos: RawClient, select: str
) -> None:
    # test_table_batch.test_batch_inserts #1 (Storage 2017, "$select="), and
    # test_table_entity.test_query_entities_with_filter #2 (Storage 2020, "$select=%20"):
    # "...#t&$select=". Cosmos names no $select (REC 8).
    for raw in (storage, cosmos):
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "a": 1})
    assert (await _metadata(storage, "/mytable()", **{"$select": select})).endswith(
        "$metadata#mytable&$select="
    )
    assert (await _metadata(storage, **{"$select": select})).endswith(
        "$metadata#mytable/@Element&$select="
    )
    assert (await _metadata(cosmos, "/mytable()", **{"$select": select})).endswith(
        "$metadata#mytable"
    )
    r = await storage.request("GET", "/mytable()", query={"$select": select}, headers=JSON_HEADERS)
    assert json.loads(r.body)["value"][0]["a"] == 1  # an empty $select projects nothing away


# -- member order -------------------------------------------------------------------------------


async def test_cosmos_member_order_as_recorded(cosmos: RawClient) -> None:
    # test_table_batch_cosmos.pyTestTableBatchCosmostest_batch_update.json (2022), entry 2:
    # odata.metadata, odata.etag, PartitionKey, RowKey, properties, Timestamp last;
    # test_table_entity_cosmos.test_get_entity_full_metadata #1-2 (2020): odata.type, odata.id,
    # odata.editLink, odata.metadata, odata.etag, ..., Timestamp@odata.type, Timestamp, and the
    # keys where the client sent them among the properties (there PartitionKey after
    # "binary", RowKey after "clsid"); every recorded listing and query: value, then
    # odata.metadata; create table: TableName, then odata.metadata
    # (test_table_cosmos.test_create_table #0).
    r = await cosmos.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(SENT))
    assert list(json.loads(r.body)) == [
        "odata.metadata",
        "odata.etag",
        "zeta",
        "PartitionKey",
        "RowKey",
        "alpha",
        "Mid",
        "Timestamp",
    ]
    assert await _members(cosmos) == list(json.loads(r.body))
    assert await _members(cosmos, accept=FULL) == [
        "odata.type",
        "odata.id",
        "odata.editLink",
        "odata.metadata",
        "odata.etag",
        "zeta",
        "PartitionKey",
        "RowKey",
        "alpha",
        "Mid",
        "Timestamp@odata.type",
        "Timestamp",
    ]
    r = await cosmos.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    page = json.loads(r.body)
    assert list(page) == ["value", "odata.metadata"]
    assert list(page["value"][0])[-1] == "Timestamp"
    assert await _members(cosmos, "/mytable()", accept=FULL) == ["value", "odata.metadata"]
    assert await _members(cosmos, "/Tables") == ["value", "odata.metadata"]
    r = await cosmos.request(
        "POST", "/Tables", headers=JSON_HEADERS, body=json.dumps({"TableName": "other"})
    )
    assert list(json.loads(r.body)) == ["TableName", "odata.metadata"]


async def test_storage_member_order_as_recorded(storage: RawClient) -> None:
    # every Storage recording: odata.metadata first, Timestamp right after RowKey; an insert
    # keeps the order it was sent in (test_table_encryption.
    # test_batch_entity_inserts_context_manager #2)
    await insert(storage, "mytable", SENT)
    assert await _members(storage) == [
        "odata.metadata",
        "odata.etag",
        "PartitionKey",
        "RowKey",
        "Timestamp",
        "zeta",
        "alpha",
        "Mid",
    ]
    assert await _members(storage, "/mytable()") == ["odata.metadata", "value"]
    assert await _members(storage, "/Tables") == ["odata.metadata", "value"]


UPDATES = [
    ("PUT", {"If-Match": "*"}),  # replace
    ("PUT", {}),  # insert or replace
    ("MERGE", {"If-Match": "*"}),  # merge
    ("MERGE", {}),  # insert or merge
]


@pytest.mark.parametrize(("method", "extra"), UPDATES)
async def test_storage_stores_updated_properties_in_name_order(
    storage: RawClient, cosmos: RawClient, method: str, extra: dict[str, str]
) -> None:
    # Storage, after a replace, merge or upsert the properties come back in ordinal name
    # order: test_table_entity.test_update_entity #3, test_merge_entity #3,
    # test_insert_or_replace_entity_with_existing_entity #3 (2020), test_table_batch.
    # test_batch_update #3 (2017). Cosmos keeps the order they were sent in (merges add new
    # names at the end: test_table_entity_cosmos_async.test_merge_entity #3).
    body = json.dumps({"zeta": 2, "beta": 1, "Alpha": 0})
    merge = method == "MERGE"
    for raw in (storage, cosmos):
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "keep": 1, "_x": 2})
        wire = "POST" if raw is cosmos else method  # Cosmos merges by X-HTTP-Method
        headers = {**JSON_HEADERS, **extra}
        if raw is cosmos and merge:
            headers["X-HTTP-Method"] = "MERGE"
        r = await raw.request(wire if merge else method, ENTITY, headers=headers, body=body)
        assert r.status == 204, r.body
    custom = [n for n in await _members(storage) if not n.startswith("odata.")][3:]
    expected = ["Alpha", "_x", "beta", "keep", "zeta"] if merge else ["Alpha", "beta", "zeta"]
    assert custom == expected
    custom = [n for n in await _members(cosmos) if not n.startswith("odata.")][2:-1]
    assert custom == (
        ["keep", "_x", "zeta", "beta", "Alpha"] if merge else ["zeta", "beta", "Alpha"]
    )


async def test_storage_projection_lists_properties_in_name_order(
    storage: RawClient, cosmos: RawClient
) -> None:
    # test_table_encryption.test_query_entities_projection #2 (Storage 2017): $select=
    # PartitionKey,RowKey,sex,_ClientEncryptionMetadata1,_ClientEncryptionMetadata2 of rows
    # inserted with sex before _ClientEncryptionMetadata2 before ..1 came back PartitionKey,
    # RowKey, _ClientEncryptionMetadata1, _ClientEncryptionMetadata2, sex. Cosmos: as listed.
    row = {"PartitionKey": "p", "RowKey": "r", "sex": "f", "_m2": 2, "_m1": 1}
    select = {"$select": "RowKey,sex,_m1,PartitionKey,_m2,absent"}
    for raw in (storage, cosmos):
        await insert(raw, "mytable", row)
    r = await storage.request("GET", "/mytable()", query=select, headers=JSON_HEADERS)
    got = json.loads(r.body)["value"][0]
    assert [n for n in got if not n.startswith("odata.")] == [
        "PartitionKey",
        "RowKey",
        "_m1",
        "_m2",
        "absent",
        "sex",
    ]
    r = await cosmos.request("GET", "/mytable()", query=select, headers=JSON_HEADERS)
    got = json.loads(r.body)["value"][0]
    assert [n for n in got if not n.startswith("odata.")] == [
        "RowKey",
        "sex",
        "_m1",
        "PartitionKey",
        "_m2",
        "absent",
    ]


# -- change-set 204 parts and x-ms-version ------------------------------------------------------


PARTS = [
    ("PUT", {}, True),  # insert or replace: test_batch_insert_replace.json (2022)
    ("MERGE", {}, True),  # insert or merge: test_batch_insert.yaml #1 (2021), ..._merge.json
    ("MERGE", {"If-Match": "*"}, False),  # merge: test_batch_update.yaml #1, .json (2021-22)
    ("PUT", {"If-Match": "*"}, False),  # replace: test_batch_update_if_match.yaml #1 (2020)
    ("DELETE", {"If-Match": "*"}, False),  # delete: test_batch_delete.yaml #1 (2020)
]


@pytest.mark.parametrize(("method", "extra", "typed"), PARTS)
async def test_cosmos_types_the_204_of_an_upsert_part_only(
    cosmos: RawClient, storage: RawClient, method: str, extra: dict[str, str], typed: bool
) -> None:
    base = "http://127.0.0.1/devstoreaccount1/mytable"
    for raw in (cosmos, storage):
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r"})
        body = "" if method == "DELETE" else json.dumps({"v": 1})
        headers = dict(extra)
        verb = method
        if raw is cosmos and method == "MERGE":
            verb, headers["X-HTTP-Method"] = "POST", "MERGE"
        part = request_part(verb, f"{base}(PartitionKey='p',RowKey='r')", body, headers)
        r = await raw.request(
            "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope([part])
        )
        assert r.status == 202, r.body
        answer = r.body.decode().split("HTTP/1.1 204 No Content", 1)[1].split("\r\n\r\n", 1)[0]
        assert ("Content-Type: application/json" in answer) == (typed and raw is cosmos)


async def test_cosmos_answers_carry_no_version_header(
    cosmos: RawClient, storage: RawClient
) -> None:
    # no recorded Cosmos answer has x-ms-version (165 interactions, 2020-2021, successes
    # and refusals: the PATCH 400, the 415); every recorded Storage answer has it.
    patch = {**JSON_HEADERS, "If-Match": "*"}
    for raw in (cosmos, storage):
        answers = [
            await raw.request("GET", "/Tables", headers={"Accept": JSON_MINIMAL}),
            await raw.request("PATCH", ENTITY, headers=patch, body="{}"),
            await raw.request("GET", "/nosuchtable()", headers={"Accept": JSON_MINIMAL}),
        ]
        for r in answers:
            assert ("x-ms-version" in r.headers) == (raw is storage), (r.status, r.headers)
    assert answers[0].status == 200
