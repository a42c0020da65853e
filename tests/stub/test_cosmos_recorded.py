"""The Cosmos flavour where the official SDK's recordings of the real Cosmos DB Table API
say how it answers (issue 35, items 1, 3-6 and 12), each next to the Storage answer for the
same request.

Sources: ``Azure/azure-sdk-for-python``, ``sdk/tables/azure-data-tables/tests/recordings/``
(the file and interaction are named at each test; ``docs/cosmos.md`` has the decisions).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from .conftest import JSON_MINIMAL, RawClient
from .test_http_batch import BATCH_CT, envelope, request_part
from .test_http_raw import insert

JSON_HEADERS = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
ENTITY = "/mytable(PartitionKey='p',RowKey='r')"
ETAG = re.compile(r"""W/"datetime'\d{4}-\d\d-\d\dT\d\d%3A\d\d%3A\d\d\.\d{7}Z'"$""")
GATEWAY = "documentdb-dotnet-sdk/2.11.0 Host/64-bit MicrosoftWindowsNT/6.2.9200.0"


async def _get(raw: RawClient, path: str = ENTITY, **query: str) -> Any:
    r = await raw.request("GET", path, query=query, headers={"Accept": JSON_MINIMAL})
    assert r.status == 200, r.body
    got = r.json()
    assert isinstance(got, dict)
    return got


# -- item 1: PATCH ------------------------------------------------------------------------------


@pytest.mark.parametrize("tunnelled", [False, True])
async def test_cosmos_refuses_patch_as_recorded_and_writes_nothing(
    cosmos: RawClient, tunnelled: bool
) -> None:
    # test_table_entity_cosmos.test_merge_entity, interaction 2 (2020): PATCH with If-Match *
    await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": "r", "age": 39})
    headers = {"Accept": "*/*", "Content-Type": "application/json", "If-Match": "*"}
    method = "PATCH"
    if tunnelled:  # the same verb tunnelled: the stub's choice, refused alike
        method, headers = "POST", {**headers, "X-HTTP-Method": "PATCH"}
    r = await cosmos.request(method, ENTITY, headers=headers, body='{"age": "abc"}')
    assert r.status == 400
    assert "x-ms-error-code" not in r.headers
    rid = r.headers["x-ms-request-id"]
    assert r.body.endswith(b"}}}\r\n")  # the gateway's body ends with CRLF
    error = json.loads(r.body)["odata.error"]
    assert error == {
        "code": "InvalidInput",
        "message": {
            "lang": "en-us",
            "value": f"One of the input values is invalid.\r\nActivityId: {rid}, {GATEWAY}"
            f"\nRequestID:{rid}\n",
        },
    }
    assert (await _get(cosmos))["age"] == 39  # nothing applied


async def test_cosmos_merges_with_post_and_x_http_method(cosmos: RawClient) -> None:
    # test_table_entity_cosmos.pyTestTableEntityCosmostest_merge_entity.json, entry 2 (2021)
    await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": "r", "age": 39, "sex": "m"})
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "If-Match": "*",
        "X-HTTP-Method": "MERGE",
    }
    r = await cosmos.request("POST", ENTITY, headers=headers, body='{"age": "abc"}')
    assert r.status == 204, r.body
    assert ETAG.match(r.headers["ETag"])
    got = await _get(cosmos)
    assert (got["age"], got["sex"]) == ("abc", "m")


async def test_storage_still_merges_with_patch(storage: RawClient) -> None:
    await insert(storage, "mytable", {"PartitionKey": "p", "RowKey": "r", "age": 39})
    headers = {**JSON_HEADERS, "If-Match": "*"}
    r = await storage.request("PATCH", ENTITY, headers=headers, body='{"sex": "f"}')
    assert r.status == 204, r.body
    assert (await _get(storage))["sex"] == "f"


# -- item 3: Create Table's ETag ------------------------------------------------------------------


async def test_cosmos_create_table_answers_with_an_etag(
    cosmos: RawClient, storage: RawClient
) -> None:
    # test_table_entity_cosmos.test_merge_entity, interaction 0: ETag W/"datetime'...'"
    body = json.dumps({"TableName": "second"})
    r = await cosmos.request("POST", "/Tables", headers=JSON_HEADERS, body=body)
    assert r.status == 201
    assert ETAG.match(r.headers["ETag"]), r.headers["ETag"]
    no_content = {**JSON_HEADERS, "Prefer": "return-no-content"}
    r = await cosmos.request("POST", "/Tables", headers=no_content, body='{"TableName": "third"}')
    assert r.status == 204
    assert ETAG.match(r.headers["ETag"])
    r = await storage.request("POST", "/Tables", headers=JSON_HEADERS, body=body)
    assert r.status == 201
    assert "ETag" not in r.headers  # Storage sends none


# -- item 4: PUT with Content-Type application/json ------------------------------------------------


@pytest.mark.parametrize("accept", ["*/*", "application/json"])
@pytest.mark.parametrize("existing", [False, True])
async def test_cosmos_upserts_a_plain_json_put(
    cosmos: RawClient, accept: str, existing: bool
) -> None:
    # Decided from the most recent recordings: the 2022 upsert
    # (test_insert_or_replace_entity_with_existing_entity.json, entry 2) and the 2020 update
    # with Accept */* (test_table_entity_cosmos.test_update_entity, interaction 2) succeed;
    # the 2020 415s of the same upsert shape are not copied (docs/cosmos.md).
    if existing:
        await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": "r", "old": 1})
    headers = {"Accept": accept, "Content-Type": "application/json"}
    r = await cosmos.request("PUT", ENTITY, headers=headers, body='{"age": "abc"}')
    assert r.status == 204, r.body
    assert r.headers["Content-Type"] == "application/json"
    got = await _get(cosmos)
    assert got["age"] == "abc"
    assert "old" not in got


# -- item 5: what a client sees ----------------------------------------------------------------


async def test_datetimes_have_seven_fractional_digits_on_cosmos(
    cosmos: RawClient, storage: RawClient
) -> None:
    # test_table_entity_cosmos.test_merge_entity, interaction 1: "1973-10-04T00:00:00.0000000Z"
    entity = {
        "PartitionKey": "p",
        "RowKey": "r",
        "Birthday": "1973-10-04T00:00:00Z",
        "Birthday@odata.type": "Edm.DateTime",
        "Half": "2021-05-12T20:51:59.5Z",
        "Half@odata.type": "Edm.DateTime",
    }
    expected = {
        "cosmos": ("1973-10-04T00:00:00.0000000Z", "2021-05-12T20:51:59.5000000Z"),
        "storage": ("1973-10-04T00:00:00Z", "2021-05-12T20:51:59.5Z"),
    }
    for name, raw in (("cosmos", cosmos), ("storage", storage)):
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(entity))
        assert r.status == 201
        echoed = r.json()
        point = await _get(raw)
        (row,) = (await _get(raw, "/mytable()"))["value"]
        full = await raw.request(
            "GET", ENTITY, headers={"Accept": "application/json;odata=fullmetadata"}
        )
        for got in (echoed, point, row, full.json()):
            assert (got["Birthday"], got["Half"]) == expected[name]
            stamp = str(got["Timestamp"])
            assert re.fullmatch(r".*\.\d{7}Z", stamp)  # Timestamp: seven digits on both


async def test_select_in_odata_metadata_storage_names_it_cosmos_does_not(
    cosmos: RawClient, storage: RawClient
) -> None:
    # Storage: test_table_entity.test_get_entity_with_select (2020): ".../@Element&$select=
    # age,sex,xyz". Cosmos: test_table_entity_cosmos.test_get_entity_with_select (2021),
    # interaction 2: ".../@Element" with $select=age,ratio.
    for raw in (cosmos, storage):
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "age": 39, "sex": "m"})
    got = await _get(storage, **{"$select": "age,sex,xyz"})
    assert str(got["odata.metadata"]).endswith("$metadata#mytable/@Element&$select=age,sex,xyz")
    assert (got["age"], got["sex"], got["xyz"]) == (39, "m", None)
    got = await _get(cosmos, **{"$select": "age,sex,xyz"})
    assert str(got["odata.metadata"]).endswith("$metadata#mytable/@Element")
    assert (got["age"], got["sex"], got["xyz"]) == (39, "m", None)
    feed = await _get(storage, "/mytable()", **{"$select": "age"})
    assert str(feed["odata.metadata"]).endswith("$metadata#mytable&$select=age")
    feed = await _get(cosmos, "/mytable()", **{"$select": "age"})
    assert str(feed["odata.metadata"]).endswith("$metadata#mytable")


async def test_cosmos_no_content_answers_carry_application_json(
    cosmos: RawClient, storage: RawClient
) -> None:
    # 2021-2022 recordings (test_insert_or_merge_entity_with_non_existing_entity.yaml,
    # interaction 1; *.json of test_update_entity, test_delete_entity, ...): every 204.
    requests = [
        ("POST", ENTITY, {"X-HTTP-Method": "MERGE"}, '{"a": 1}'),
        ("PUT", ENTITY, {"If-Match": "*"}, '{"b": 2}'),
        ("DELETE", ENTITY, {"If-Match": "*"}, None),
        ("DELETE", "/Tables('mytable')", {}, None),
    ]
    for name, raw in (("cosmos", cosmos), ("storage", storage)):
        for method, path, extra, body in requests:
            r = await raw.request(method, path, headers={**JSON_HEADERS, **extra}, body=body)
            assert r.status == 204, (method, path, r.body)
            if name == "cosmos":
                assert r.headers["Content-Type"] == "application/json"
            else:
                assert "Content-Type" not in r.headers


async def test_cosmos_continuation_tokens_have_the_recorded_shape(cosmos: RawClient) -> None:
    # test_table_entity_cosmos.test_query_entities_with_top_and_next, interactions 7-9:
    # NextPartitionKey {"token":"<base64>","range":{"min":"","max":"FF"}}, NextRowKey NA
    for i in range(5):
        await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": f"r{i}"})
    seen: list[str] = []
    query = {"$top": "2"}
    while True:
        r = await cosmos.request("GET", "/mytable()", query=query, headers=JSON_HEADERS)
        assert r.status == 200
        seen.extend(str(e["RowKey"]) for e in r.json()["value"])
        npk = r.headers.get("x-ms-continuation-NextPartitionKey")
        if npk is None:
            assert "x-ms-continuation-NextRowKey" not in r.headers
            break
        token = json.loads(npk)
        assert set(token) == {"token", "range"}
        assert token["range"] == {"min": "", "max": "FF"}
        assert re.fullmatch(r"[A-Za-z0-9+/]+=*", token["token"])
        assert r.headers["x-ms-continuation-NextRowKey"] == "NA"
        query = {"$top": "2", "NextPartitionKey": npk, "NextRowKey": "NA"}
    assert sorted(seen) == [f"r{i}" for i in range(5)]
    assert len(seen) == 5
    bad = {"NextPartitionKey": '{"token":"%%%","range":{}}', "NextRowKey": "NA"}
    r = await cosmos.request("GET", "/mytable()", query=bad, headers=JSON_HEADERS)
    assert r.status == 400
    assert json.loads(r.body)["odata.error"]["code"] == "InvalidInput"


# -- item 6: reserved property names on every write path ---------------------------------------


WRITES = [
    ("PUT", ENTITY, {}),  # insert or replace
    ("PUT", ENTITY, {"If-Match": "*"}),  # update
    ("MERGE", ENTITY, {}),  # insert or merge
    ("POST", ENTITY, {"X-HTTP-Method": "MERGE", "If-Match": "*"}),  # merge, tunnelled
]


# ``etag`` is taken (recorded, below); the other names and the other casings of ``etag`` have
# no recording: the FAQ's refusal stays.
@pytest.mark.parametrize("name", ["ID", "id", "rid", "Etag", "ETAG", "ResourceId"])
@pytest.mark.parametrize(("method", "path", "extra"), WRITES)
async def test_cosmos_reserved_names_are_refused_on_every_write(
    cosmos: RawClient, storage: RawClient, name: str, method: str, path: str, extra: dict[str, str]
) -> None:
    for raw in (cosmos, storage):
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "keep": 1})
    headers = {**JSON_HEADERS, **extra}
    body = json.dumps({name: "x"})
    r = await cosmos.request(method, path, headers=headers, body=body)
    assert r.status == 400, r.body
    assert json.loads(r.body)["odata.error"]["code"] == "PropertyNameInvalid"
    got = await _get(cosmos)
    assert got["keep"] == 1
    assert name not in got  # nothing written
    if method != "POST":  # Storage has no such rule (and a plain POST there is an insert)
        r = await storage.request(method, path, headers=headers, body=body)
        assert r.status == 204, r.body


@pytest.mark.parametrize("method", ["PUT", "MERGE"])
async def test_cosmos_reserved_names_are_refused_in_change_set_updates(
    cosmos: RawClient, method: str
) -> None:
    await insert(cosmos, "mytable", {"PartitionKey": "c", "RowKey": "1", "keep": 1})
    base = "http://127.0.0.1/devstoreaccount1/mytable"
    parts = [
        request_part("POST", base, json.dumps({"PartitionKey": "c", "RowKey": "2"})),
        request_part(
            method,
            f"{base}(PartitionKey='c',RowKey='1')",
            json.dumps({"rid": "x"}),
            headers={"If-Match": "*"},
        ),
    ]
    r = await cosmos.request(
        "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope(parts)
    )
    assert r.status == 400, r.body  # the whole change set, at the part's index
    error = json.loads(r.body)["odata.error"]
    assert error["code"] == "PropertyNameInvalid"
    assert str(error["message"]["value"]).startswith("1:")
    rows = (await _get(cosmos, "/mytable()"))["value"]
    assert [(row["RowKey"], row.get("rid")) for row in rows] == [("1", None)]


# test_table_entity_cosmos.test_etag_duplicate_field (2021-05-26; its 2022 .json and async
# twins agree): an insert carrying "etag" then "Etag" answers 201 echoing "etag" alone, a
# point read returns "etag" alone, a merge carrying both answers 204 and "etag" is updated.


@pytest.mark.parametrize(("method", "path", "extra"), [("POST", "/mytable", {}), *WRITES])
async def test_cosmos_takes_etag_as_a_property_on_every_write(
    cosmos: RawClient, method: str, path: str, extra: dict[str, str]
) -> None:
    if method != "POST" or path != "/mytable":
        await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": "r", "keep": 1})
    body = {"PartitionKey": "p", "RowKey": "r", "etag": "bar"}
    r = await cosmos.request(method, path, headers={**JSON_HEADERS, **extra}, body=json.dumps(body))
    assert r.status in (201, 204), r.body
    got = await _get(cosmos)
    assert got["etag"] == "bar"
    assert got["odata.etag"].startswith("W/\"datetime'")  # the entity's own ETag is apart


@pytest.mark.parametrize(("method", "path", "extra"), [("POST", "/mytable", {}), *WRITES])
async def test_cosmos_drops_etag_s_case_variant_after_it_as_recorded(
    cosmos: RawClient, method: str, path: str, extra: dict[str, str]
) -> None:
    inserting = method == "POST" and path == "/mytable"
    if not inserting:
        await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": "r", "etag": "bar"})
    body = {
        "PartitionKey": "p",
        "PartitionKey@odata.type": "Edm.String",
        "RowKey": "r",
        "RowKey@odata.type": "Edm.String",
        "etag": "two",
        "etag@odata.type": "Edm.String",
        "Etag": "three",
        "Etag@odata.type": "Edm.String",
    }
    r = await cosmos.request(method, path, headers={**JSON_HEADERS, **extra}, body=json.dumps(body))
    assert r.status == (201 if inserting else 204), r.body
    if inserting:  # the echo, as recorded: keys, etag, Timestamp
        echo = json.loads(r.body)
        assert [k for k in echo if not k.startswith("odata.")] == [
            "PartitionKey",
            "RowKey",
            "etag",
            "Timestamp",
        ]
    got = await _get(cosmos)
    assert got["etag"] == "two"
    assert "Etag" not in got
    assert "Etag@odata.type" not in got


async def test_cosmos_refuses_etag_s_case_variant_before_it(cosmos: RawClient) -> None:
    # No recording sends "Etag" first (nor alone): the FAQ's refusal stays for it.
    body = '{"PartitionKey": "p", "RowKey": "r", "Etag": "baz", "etag": "bar"}'
    r = await cosmos.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
    assert r.status == 400, r.body
    assert json.loads(r.body)["odata.error"]["code"] == "PropertyNameInvalid"
    r = await cosmos.request("GET", ENTITY, headers=JSON_HEADERS)
    assert r.status == 404  # nothing written


async def test_storage_keeps_etag_and_its_case_variant(storage: RawClient) -> None:
    # Storage names are case-sensitive and have no such rule: both are stored.
    body: dict[str, object] = {"PartitionKey": "p", "RowKey": "r", "etag": "bar", "Etag": "baz"}
    await insert(storage, "mytable", body)
    got = await _get(storage)
    assert (got["etag"], got["Etag"]) == ("bar", "baz")


@pytest.mark.parametrize("plain", [True, False])
async def test_cosmos_change_sets_take_etag_and_drop_its_case_variant(
    cosmos: RawClient, plain: bool
) -> None:
    # insert, insert-or-replace and insert-or-merge parts: a plain change set (answered by
    # the handler's one-loop path); a tunnelled merge part makes it take the general loop
    base = "http://127.0.0.1/devstoreaccount1/mytable"
    for rk in "123":
        await insert(cosmos, "mytable", {"PartitionKey": "c", "RowKey": rk, "etag": "a"})

    def both(rk: str) -> str:
        return json.dumps({"PartitionKey": "c", "RowKey": rk, "etag": "two", "Etag": "x"})

    parts = [
        request_part("POST", base, both("0")),
        request_part("PUT", f"{base}(PartitionKey='c',RowKey='1')", both("1")),
        request_part("MERGE", f"{base}(PartitionKey='c',RowKey='2')", both("2")),
    ]
    if not plain:
        parts.append(
            request_part(
                "POST",
                f"{base}(PartitionKey='c',RowKey='3')",
                both("3"),
                headers={"X-HTTP-Method": "MERGE", "If-Match": "*"},
            )
        )
    r = await cosmos.request(
        "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope(parts)
    )
    assert r.status == 202, r.body
    rows = (await _get(cosmos, "/mytable()"))["value"]
    written = "0123" if not plain else "012"
    assert sorted((row["RowKey"], row["etag"], row.get("Etag")) for row in rows) == [
        (rk, "two" if rk in written else "a", None) for rk in "0123"
    ]


# -- item 5: row order -------------------------------------------------------------------------


async def test_cosmos_lists_rows_in_creation_order_as_recorded(
    cosmos: RawClient, storage: RawClient
) -> None:
    # REC 9 (test_table_batch_cosmos.pyTestTableBatchCosmostest_batch_inserts.json, entry 2,
    # 2022): RowKeys "0".."99" created by one change set come back "0", "1", ..., "99"
    base = "http://127.0.0.1/devstoreaccount1/mytable"
    parts = [
        request_part("POST", base, json.dumps({"PartitionKey": "batch_inserts", "RowKey": str(i)}))
        for i in range(100)
    ]
    for raw in (cosmos, storage):
        r = await raw.request(
            "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope(parts)
        )
        assert r.status == 202
    rows = [str(e["RowKey"]) for e in (await _get(cosmos, "/mytable()"))["value"]]
    assert rows == [str(i) for i in range(100)]
    rows = [str(e["RowKey"]) for e in (await _get(storage, "/mytable()"))["value"]]
    assert rows == sorted(str(i) for i in range(100))  # Storage: key order ("0", "1", "10", ...)


async def test_cosmos_top_pages_follow_creation_order(cosmos: RawClient) -> None:
    # REC 5 (test_query_entities_with_top_and_next.yaml, interactions 7-9): $top=2 pages of
    # rows in the order they were inserted (here inserted out of key order)
    for rk in ("rk12345", "rk1", "rk123", "rk12", "rk1234"):
        await insert(cosmos, "mytable", {"PartitionKey": "pk", "RowKey": rk})
    pages: list[list[str]] = []
    query = {"$top": "2"}
    while True:
        r = await cosmos.request("GET", "/mytable()", query=query, headers=JSON_HEADERS)
        pages.append([str(e["RowKey"]) for e in r.json()["value"]])
        npk = r.headers.get("x-ms-continuation-NextPartitionKey")
        if npk is None:
            break
        query = {"$top": "2", "NextPartitionKey": npk, "NextRowKey": "NA"}
    assert pages == [["rk12345", "rk1"], ["rk123", "rk12"], ["rk1234"]]


async def test_cosmos_json_answers_are_typed_without_storage_s_parameters(
    cosmos: RawClient, storage: RawClient
) -> None:
    # every Cosmos recording: content-type application/json;odata=minimalmetadata (REC 1)
    table = json.dumps({"TableName": "typed"})
    row = json.dumps({"PartitionKey": "p", "RowKey": "r"})
    for name, raw in (("cosmos", cosmos), ("storage", storage)):
        answers = [
            await raw.request("POST", "/Tables", headers=JSON_HEADERS, body=table),
            await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=row),
            await raw.request("GET", ENTITY, headers=JSON_HEADERS),
            await raw.request("GET", "/mytable()", headers=JSON_HEADERS),
            await raw.request("GET", "/Tables", headers=JSON_HEADERS),
        ]
        for r in answers:
            assert r.status in (200, 201), r.body
            if name == "cosmos":
                assert r.headers["Content-Type"] == "application/json;odata=minimalmetadata"
            else:
                assert r.headers["Content-Type"] == (
                    "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"
                )
