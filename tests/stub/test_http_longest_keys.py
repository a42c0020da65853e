"""Every URL a legal key pair produces is served (hardening issue 11, item 9).

Keys may be 1,024 UTF-16 units of any character but ``/ \\ # ?`` and controls; their
percent-encoding runs to 9 bytes a unit (a three-byte UTF-8 character), so an entity's
point URL reaches 18 KB and a SAS with a key range about 55 KB. Each character class is
written and read through azt's client and raw HTTP: the point GET, PUT, MERGE and DELETE,
an insert, and a ``$filter`` query naming both keys.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from urllib.parse import quote, unquote

import aiohttp
import pytest

import azt
from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer
from azt_server_stub.connection import MAX_ENCODED_KEY, MAX_HEADER_FIELD, MAX_REQUEST_LINE

from .conftest import JSON_MINIMAL, JSON_NONE, RawClient
from .test_http_raw import make_table

#: The longest legal key of each character class (1,024 UTF-16 units).
LONGEST_KEYS = {
    "ascii": "a" * 1024,
    "quote": "'" * 1024,  # doubled in the OData literal: 2,048 quotes on the wire
    "two-byte": "é" * 1024,
    "three-byte": "€" * 1024,  # 9 encoded bytes a unit: the longest URL
    "astral": "\U0001f600" * 512,  # two UTF-16 units each
    "needs-encoding": ("% +&=" * 205)[:1024],
}


def _literal(key: str) -> str:
    """A key as an OData string literal, percent-encoded for a URL path."""
    return quote("'" + key.replace("'", "''") + "'", safe="")


def _entity_path(table: str, pk: str, rk: str) -> str:
    return f"/{table}(PartitionKey={_literal(pk)},RowKey={_literal(rk)})"


@pytest.fixture
async def big_raw(stub: StubServer) -> AsyncIterator[RawClient]:
    """A raw client whose session reads the long ``Location`` header of such an insert."""
    async with aiohttp.ClientSession(
        max_line_size=MAX_REQUEST_LINE, max_field_size=MAX_HEADER_FIELD
    ) as session:
        yield RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)


def test_the_limit_covers_the_worst_encoding() -> None:
    worst = max(len(_literal(key)) for key in LONGEST_KEYS.values())
    assert worst <= MAX_ENCODED_KEY + len("%27%27")
    assert len(_literal("€" * 1024)) == 1024 * 9 + 6


@pytest.mark.parametrize("kind", sorted(LONGEST_KEYS))
async def test_point_operations_with_the_longest_keys_over_raw_http(
    big_raw: RawClient, kind: str
) -> None:
    raw = big_raw
    key = LONGEST_KEYS[kind]
    pk, rk = key, key[::-1]
    await make_table(raw)
    path = _entity_path("mytable", pk, rk)
    headers = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
    r = await raw.request("PUT", path, headers=headers, body='{"n":1}')
    assert r.status == 204, (kind, len(path), r.status, r.body[:300])
    r = await raw.request("MERGE", path, headers={**headers, "If-Match": "*"}, body='{"m":2}')
    assert r.status == 204, (kind, r.body[:300])
    r = await raw.request("GET", path, headers={"Accept": JSON_MINIMAL})
    assert r.status == 200, (kind, r.body[:300])
    got = r.json()
    assert (got["PartitionKey"], got["RowKey"], got["n"], got["m"]) == (pk, rk, 1, 2)
    r = await raw.request(
        "GET",
        "/mytable()",
        query={"$filter": f"PartitionKey eq {_odata(pk)} and RowKey eq {_odata(rk)}"},
        headers={"Accept": JSON_NONE},
    )
    assert r.status == 200, (kind, r.body[:300])
    assert [(e["PartitionKey"], e["RowKey"]) for e in r.json()["value"]] == [(pk, rk)]
    r = await raw.request("DELETE", path, headers={"If-Match": "*"})
    assert r.status == 204, (kind, r.body[:300])
    r = await raw.request("GET", path, headers={"Accept": JSON_MINIMAL})
    assert (r.status, r.code) == (404, "ResourceNotFound")
    # an insert answers with the entity's (long) URL in Location
    entity = f'{{"PartitionKey":{_json(pk)},"RowKey":{_json(rk)}}}'
    r = await raw.request("POST", "/mytable", headers=headers, body=entity)
    assert r.status == 201, (kind, r.body[:300])
    location = unquote(r.headers["Location"])
    assert location.endswith(unquote(_entity_path("mytable", pk, rk))), location[-200:]


def _odata(key: str) -> str:
    return "'" + key.replace("'", "''") + "'"


def _json(text: str) -> str:
    return json.dumps(text)


async def test_a_sas_key_range_of_longest_keys_on_the_longest_entity_url(
    big_raw: RawClient,
) -> None:
    # seven keys of the worst class in one request line: two in the path, four in the
    # SAS key range and the table's name; about 55 KB
    raw = big_raw
    await make_table(raw)
    key = LONGEST_KEYS["three-byte"]
    credential = azt.SharedKeyCredential(DEV_ACCOUNT, DEV_KEY)
    sas = azt.generate_table_sas(
        credential,
        "mytable",
        permission="raud",
        expiry="2099-01-01T00:00:00Z",
        start_pk=key,
        start_rk=key,
        end_pk=key,
        end_rk=key,
    )
    path = _entity_path("mytable", key, key)
    assert len(path) + len(sas) > 50_000
    body = '{"n":7}'
    headers = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
    r = await raw.request("PUT", path, headers=headers, body=body, auth="none", raw_query=sas)
    assert r.status == 204, r.body[:300]
    r = await raw.request("GET", path, headers=headers, auth="none", raw_query=sas)
    assert r.status == 200, r.body[:300]
    assert r.json()["n"] == 7
    # outside the SAS key range: the service's refusal, not the parser's
    beyond = _entity_path("mytable", key + "€", key)
    r = await raw.request("GET", beyond, headers=headers, auth="none", raw_query=sas)
    assert (r.status, r.code) == (403, "AuthorizationFailure"), r.body[:300]
    # one unit more than any legal key is refused by validation, not by the parser
    r = await raw.request("PUT", beyond, headers=headers, body=body)
    assert (r.status, r.code) == (400, "KeyValueTooLarge"), r.body[:300]


@pytest.mark.parametrize("kind", sorted(LONGEST_KEYS))
async def test_the_longest_keys_through_the_azt_client(stub: StubServer, kind: str) -> None:
    key = LONGEST_KEYS[kind]
    pk, rk = key, key[::-1]
    async with azt.TableClient.from_connection_string(stub.connection_string, "longkeys") as t:
        await t.create_table()
        await t.upsert_entity({"PartitionKey": pk, "RowKey": rk, "n": 1})  # PUT
        await t.update_entity({"PartitionKey": pk, "RowKey": rk, "m": 2})  # MERGE
        got = await t.get_entity(pk, rk)
        assert (got["PartitionKey"], got["RowKey"], got["n"], got["m"]) == (pk, rk, 1, 2)
        rows = await t.query_entities(
            "PartitionKey eq @pk and RowKey eq @rk", parameters={"pk": pk, "rk": rk}
        ).to_list()
        assert [(e["PartitionKey"], e["RowKey"]) for e in rows] == [(pk, rk)]
        await t.delete_entity(pk, rk)
        with pytest.raises(azt.ResourceNotFoundError):
            await t.get_entity(pk, rk)


async def test_many_longest_key_requests_at_once(big_raw: RawClient) -> None:
    # long request lines, concurrently and on kept-alive connections
    raw = big_raw
    await make_table(raw)
    paths = [_entity_path("mytable", k, k) for k in LONGEST_KEYS.values()]
    replies = await asyncio.gather(
        *(raw.request("GET", p, headers={"Accept": JSON_MINIMAL}) for p in paths * 3)
    )
    assert {(r.status, r.code) for r in replies} == {(404, "ResourceNotFound")}
