"""Review regressions: malformed requests get the service's code, never a 500 or a partial write.

Each test pins a gap found while checking issue 2 point by point against the stub.
"""

from __future__ import annotations

import json

from .conftest import JSON_MINIMAL, RawClient
from .test_http_batch import envelope, parts_of, post_batch, request_part
from .test_http_raw import JSON_HEADERS, insert, make_table


async def _row_keys(raw: RawClient, table: str = "mytable") -> list[str]:
    r = await raw.request("GET", f"/{table}()", headers={"Accept": JSON_MINIMAL})
    assert r.status == 200, r.body
    return [e["RowKey"] for e in r.json()["value"]]


# --- text a store cannot hold -------------------------------------------------------------


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
    assert await _row_keys(raw) == []


async def test_undecodable_query_values_never_break_authentication(raw: RawClient) -> None:
    await make_table(raw)
    # a SAS whose table name is not UTF-8, and a signed request with such a comp value
    r = await raw.request(
        "GET",
        "/mytable()",
        headers={"Accept": JSON_MINIMAL},
        auth="none",
        raw_query="sv=2019-02-02&sig=x&tn=%FF&sp=r&se=2030-01-01",
    )
    assert (r.status, r.code) == (403, "AuthenticationFailed"), r.body
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_MINIMAL}, raw_query="comp=%FF"
    )
    assert r.status in (400, 403), r.body
    assert r.code is not None


# --- continuation tokens --------------------------------------------------------------------


async def test_empty_continuation_tokens_are_invalid_input(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r"})
    for query in (
        {"NextPartitionKey": "1!4!cA--", "NextRowKey": ""},
        {"NextPartitionKey": ""},
        {"NextPartitionKey": "", "NextRowKey": ""},
    ):
        r = await raw.request("GET", "/mytable()", query=query, headers={"Accept": JSON_MINIMAL})
        assert (r.status, r.code) == (400, "InvalidInput"), (query, r.body)
    r = await raw.request(
        "GET", "/Tables", query={"NextTableName": ""}, headers={"Accept": JSON_MINIMAL}
    )
    assert (r.status, r.code) == (400, "InvalidInput"), r.body


# --- the secondary endpoint ---------------------------------------------------------------------


async def test_query_only_batch_is_a_read_on_the_secondary(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "v": 5})
    query = (
        "--batch_b1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        + request_part("GET", "/devstoreaccount1-secondary/mytable(PartitionKey='p',RowKey='r')")
        + "\r\n--batch_b1--\r\n"
    )
    r = await raw.request(
        "POST",
        "/$batch",
        headers={"Content-Type": "multipart/mixed; boundary=batch_b1", "Accept": JSON_MINIMAL},
        body=query,
        account_segment="devstoreaccount1-secondary",
    )
    assert r.status == 202, r.body
    [(status, _, payload)] = parts_of(r.body)
    assert status == 200, payload
    assert json.loads(payload)["v"] == 5
    # a change set is still a write there
    write = envelope(
        [request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"p","RowKey":"n"}')]
    )
    r = await raw.request(
        "POST",
        "/$batch",
        headers={"Content-Type": "multipart/mixed; boundary=batch_b1", "Accept": JSON_MINIMAL},
        body=write,
        account_segment="devstoreaccount1-secondary",
    )
    assert (r.status, r.code) == (403, "AuthorizationFailure"), r.body
    assert await _row_keys(raw) == ["r"]
