"""What a store can hold, over HTTP: text no store can keep, text XML cannot carry, and
the service's code for every limit.
"""

from __future__ import annotations

import json

from .conftest import (
    ATOM_VERSION,
    JSON_MINIMAL,
    RawClient,
    row_keys,
)
from .test_http_batch import envelope, parts_of, post_batch, request_part
from .test_http_raw import JSON_HEADERS, insert, make_table


async def test_lone_surrogates_are_refused_everywhere(raw: RawClient) -> None:
    await make_table(raw)
    bodies = [
        '{"PartitionKey":"\\ud800","RowKey":"r"}',
        '{"PartitionKey":"p","RowKey":"a\\udfff"}',
        '{"PartitionKey":"p","RowKey":"r","s":"x\\ud800y"}',
        '{"PartitionKey":"p","RowKey":"r","\\ud800name":1}',
    ]
    for body in bodies:
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
        assert (r.status, r.code) == (400, "InvalidInput") or (r.status, r.code) == (
            400,
            "PropertyNameInvalid",
        ), (body, r.body)
    for body in bodies[2:]:  # update bodies: the keys come from the URL
        r = await raw.request(
            "PUT", "/mytable(PartitionKey='p',RowKey='u')", headers=JSON_HEADERS, body=body
        )
        assert r.status == 400, (body, r.body)
    # inside a batch the failing operation is named
    part_ok = request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"p","RowKey":"1"}')
    part_bad = request_part("POST", "/devstoreaccount1/mytable", bodies[1])
    r = await post_batch(raw, envelope([part_ok, part_bad]))
    [(status, _, payload)] = parts_of(r.body)
    assert status == 400
    err = json.loads(payload)["odata.error"]
    assert err["code"] == "InvalidInput"
    assert err["message"]["value"].startswith("1:")
    assert await row_keys(raw) == []


async def test_atom_bodies_survive_text_xml_cannot_carry(raw: RawClient) -> None:
    """JSON clients may store keys XML cannot carry, and any request may echo such text in
    an error message: Atom responses replace it, never fail."""
    await make_table(raw)
    for rk in ("a\uffff", "\ufffe", "b\U0010ffff"):
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": rk, "s": "x\u0001y"})
    atom = {"Accept": "application/atom+xml"}
    r = await raw.request("GET", "/mytable()", headers=atom, version=ATOM_VERSION)
    assert r.status == 200, r.body
    assert r.body.count(b"<entry") == 3
    r = await raw.request(
        "GET", "/mytable(PartitionKey='p',RowKey='a%EF%BF%BF')", headers=atom, version=ATOM_VERSION
    )
    assert r.status == 200, r.body
    for raw_query in ("$filter=PartitionKey%20eq%20%01", "$filter=%EF%BF%BE%20eq%201"):
        r = await raw.request(
            "GET", "/mytable()", raw_query=raw_query, headers=atom, version=ATOM_VERSION
        )
        assert (r.status, r.code) == (400, "InvalidInput"), r.body
        assert b"<code>InvalidInput</code>" in r.body


async def test_every_limit_has_its_code_over_http(raw: RawClient) -> None:
    await make_table(raw)
    big = "x" * 30_000
    cases: dict[str, dict[str, object]] = {
        "KeyValueTooLarge": {"PartitionKey": "k" * 1025, "RowKey": "r"},
        "PropertyNameTooLong": {"PartitionKey": "p", "RowKey": "r", "n" * 256: 1},
        "TooManyProperties": {
            "PartitionKey": "p",
            "RowKey": "r",
            **{f"p{i}": i for i in range(253)},
        },
        "PropertyValueTooLarge": {"PartitionKey": "p", "RowKey": "r", "s": "x" * 32_769},
        "EntityTooLarge": {"PartitionKey": "p", "RowKey": "r", **{f"s{i}": big for i in range(18)}},
    }
    for code, entity in cases.items():
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(entity))
        assert (r.status, r.code) == (400, code), (code, r.body[:200])
        # the same refusal inside a batch names the operation
        ok = request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"p","RowKey":"0"}')
        bad = {**entity, "PartitionKey": "p", "RowKey": "1"}  # same partition as ``ok``
        if code == "KeyValueTooLarge":
            bad["RowKey"] = "r" * 1025
        part = request_part("POST", "/devstoreaccount1/mytable", json.dumps(bad))
        r = await post_batch(raw, envelope([ok, part]))
        [(status, _, payload)] = parts_of(r.body)
        err = json.loads(payload)["odata.error"]
        assert (status, err["code"]) == (400, code), code
        assert err["message"]["value"].startswith("1:")
    binary = {"PartitionKey": "p", "RowKey": "b", "b@odata.type": "Edm.Binary", "b": "A" * 87_384}
    r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(binary))
    assert (r.status, r.code) == (400, "PropertyValueTooLarge"), r.body[:200]
    # a merge that would make the entity too large is refused as well, leaving it as it was
    await insert(
        raw, "mytable", {"PartitionKey": "p", "RowKey": "m", **{f"s{i}": big for i in range(9)}}
    )
    more = json.dumps({f"t{i}": big for i in range(9)})
    path = "/mytable(PartitionKey='p',RowKey='m')"
    r = await raw.request("MERGE", path, headers={**JSON_HEADERS, "If-Match": "*"}, body=more)
    assert (r.status, r.code) == (400, "EntityTooLarge"), r.body[:200]
    got = await raw.request("GET", path, headers={"Accept": JSON_MINIMAL})
    assert not any(k.startswith("t") for k in got.json())
    assert await row_keys(raw) == ["m"]
