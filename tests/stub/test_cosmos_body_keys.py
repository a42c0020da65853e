"""The Cosmos flavour refuses an entity body whose PartitionKey or RowKey is not a plain
string on every write, updates and upserts included; Storage reads those keys from the URL
and ignores the body's.

Evidence: azure-data-tables' own tests, run live against the real services, expect
``InvalidInput`` from Cosmos for update and upsert bodies with keys typed ``Edm.DateTime``,
``Edm.Guid`` or ``Edm.Binary`` (``test_encoder_cosmos.test_encoder_update_entity_complex_keys``,
``test_encoder_upsert_entity_complex_keys``) and success from Storage for the same bodies
(``test_encoder``'s twins). An insert with an empty key is refused as recorded (below).
Found by running that suite against the stub (issue 35).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import JSON_MINIMAL, RawClient
from .test_http_batch import BATCH_CT, envelope, request_part
from .test_http_raw import insert

JSON_HEADERS = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
GUID = "c9da6455-213d-42c9-9a79-3e9149a57833"

#: (RowKey of the entity, the keys an update body carries for it)
TYPED_KEYS: list[tuple[str, dict[str, Any]]] = [
    (GUID, {"PartitionKey": "p", "RowKey": GUID, "RowKey@odata.type": "Edm.Guid"}),
    ("AAAA", {"PartitionKey": "p", "RowKey": "AAAA", "RowKey@odata.type": "Edm.Binary"}),
    (
        "r",
        {
            "PartitionKey": "2022-04-01T09:30:45Z",
            "PartitionKey@odata.type": "Edm.DateTime",
            "RowKey": "r",
        },
    ),
    ("5", {"PartitionKey": "p", "RowKey": 5}),  # a JSON number: no string at all
]

WRITES = [
    ("PUT", {}),  # insert or replace
    ("PUT", {"If-Match": "*"}),  # update
    ("MERGE", {}),  # insert or merge
    ("POST", {"X-HTTP-Method": "MERGE", "If-Match": "*"}),  # merge, as the SDKs send it
]


def _entity_path(row_key: str) -> str:
    return f"/mytable(PartitionKey='p',RowKey='{row_key}')"


async def _row(raw: RawClient, row_key: str) -> dict[str, Any]:
    r = await raw.request("GET", _entity_path(row_key), headers={"Accept": JSON_MINIMAL})
    assert r.status == 200, r.body
    got = r.json()
    assert isinstance(got, dict)
    return got


def _code(body: bytes) -> str:
    return str(json.loads(body)["odata.error"]["code"])


@pytest.mark.parametrize(("row_key", "keys"), TYPED_KEYS)
@pytest.mark.parametrize(("method", "extra"), WRITES)
async def test_cosmos_refuses_typed_keys_in_update_bodies_and_writes_nothing(
    cosmos: RawClient,
    storage: RawClient,
    row_key: str,
    keys: dict[str, Any],
    method: str,
    extra: dict[str, str],
) -> None:
    for raw in (cosmos, storage):
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": row_key, "keep": 1})
    headers = {**JSON_HEADERS, **extra}
    body = json.dumps({**keys, "Data": True})
    r = await cosmos.request(method, _entity_path(row_key), headers=headers, body=body)
    assert r.status == 400, r.body
    assert _code(r.body) == "InvalidInput"
    got = await _row(cosmos, row_key)
    assert got["keep"] == 1
    assert "Data" not in got  # nothing written
    if method != "POST":  # Storage ignores the body's keys (its POST is the insert)
        r = await storage.request(method, _entity_path(row_key), headers=headers, body=body)
        assert r.status == 204, r.body
        assert (await _row(storage, row_key))["Data"] is True


async def test_cosmos_takes_string_keys_typed_edm_string_in_an_update(cosmos: RawClient) -> None:
    await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": "r", "keep": 1})
    keys = {"PartitionKey": "p", "PartitionKey@odata.type": "Edm.String", "RowKey": "r"}
    r = await cosmos.request(
        "PUT",
        _entity_path("r"),
        headers={**JSON_HEADERS, "If-Match": "*"},
        body=json.dumps({**keys, "RowKey@odata.type": "Edm.String", "Data": 2}),
    )
    assert r.status == 204, r.body
    got = await _row(cosmos, "r")
    assert got["Data"] == 2
    assert "keep" not in got


async def test_both_flavours_refuse_typed_keys_on_insert(
    cosmos: RawClient, storage: RawClient
) -> None:
    body = json.dumps({"PartitionKey": "p", "RowKey": GUID, "RowKey@odata.type": "Edm.Guid"})
    for raw in (cosmos, storage):
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
        assert r.status == 400, r.body
        assert _code(r.body) == "InvalidInput"
        r = await raw.request("GET", _entity_path(GUID), headers={"Accept": JSON_MINIMAL})
        assert r.status == 404


async def test_cosmos_refuses_a_change_set_part_with_typed_keys_whole(cosmos: RawClient) -> None:
    await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": GUID, "keep": 1})
    base = "http://127.0.0.1/devstoreaccount1/mytable"
    parts = [
        request_part("POST", base, json.dumps({"PartitionKey": "p", "RowKey": "new"})),
        request_part(
            "PUT",
            f"{base}(PartitionKey='p',RowKey='{GUID}')",
            json.dumps({"PartitionKey": "p", "RowKey": GUID, "RowKey@odata.type": "Edm.Guid"}),
            headers={"If-Match": "*"},
        ),
    ]
    r = await cosmos.request(
        "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope(parts)
    )
    assert r.status == 400, r.body
    error = json.loads(r.body)["odata.error"]
    assert error["code"] == "InvalidInput"
    assert str(error["message"]["value"]).startswith("1:")  # the part's index
    r = await cosmos.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    rows = r.json()["value"]
    assert [(row["RowKey"], row.get("keep")) for row in rows] == [(GUID, 1)]


# -- empty keys on insert: test_table_entity_cosmos.test_insert_entity_empty_string_pk.yaml,
# interaction 1 (2020): 400 PropertiesNeedValue "PartitionKey/RowKey cannot be empty" from the
# gateway (ActivityId line, CRLF after the JSON); Storage takes empty keys.

GATEWAY = "documentdb-dotnet-sdk/2.11.0 Host/64-bit MicrosoftWindowsNT/6.2.9200.0"


@pytest.mark.parametrize(("pk", "rk"), [("", "rk"), ("pk", ""), ("", "")])
async def test_cosmos_refuses_an_insert_with_an_empty_key_as_recorded(
    cosmos: RawClient, storage: RawClient, pk: str, rk: str
) -> None:
    body = json.dumps({"RowKey": rk, "PartitionKey": pk})
    r = await cosmos.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
    assert r.status == 400, r.body
    assert r.body.endswith(b"}}}\r\n")
    rid = r.headers["x-ms-request-id"]
    error = json.loads(r.body)["odata.error"]
    assert error["code"] == "PropertiesNeedValue"
    assert error["message"]["value"] == (
        f"PartitionKey/RowKey cannot be empty\r\nActivityId: {rid}, {GATEWAY}\nRequestID:{rid}\n"
    )
    r = await cosmos.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    assert r.json()["value"] == []  # nothing written
    r = await storage.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
    assert r.status == 201, r.body


async def test_cosmos_refuses_a_change_set_insert_with_an_empty_key_whole(
    cosmos: RawClient,
) -> None:
    base = "http://127.0.0.1/devstoreaccount1/mytable"
    parts = [
        request_part("POST", base, json.dumps({"PartitionKey": "p", "RowKey": "a"})),
        request_part("POST", base, json.dumps({"PartitionKey": "p", "RowKey": ""})),
    ]
    r = await cosmos.request(
        "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope(parts)
    )
    assert r.status == 400, r.body
    error = json.loads(r.body)["odata.error"]
    assert error["code"] == "PropertiesNeedValue"
    assert str(error["message"]["value"]).startswith("1:PartitionKey/RowKey cannot be empty")
    r = await cosmos.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    assert r.json()["value"] == []


async def test_cosmos_takes_non_empty_keys_and_updates_of_existing_rows(cosmos: RawClient) -> None:
    await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": "r", "n": 1})
    r = await cosmos.request(
        "PUT", _entity_path("r"), headers=JSON_HEADERS, body=json.dumps({"n": 2})
    )
    assert r.status == 204, r.body
    assert (await _row(cosmos, "r"))["n"] == 2
