"""The secondary endpoint over HTTP: read-only, whether addressed by path or by host."""

from __future__ import annotations

import json

from .conftest import (
    JSON_MINIMAL,
    RawClient,
    row_keys,
)
from .test_http_batch import envelope, parts_of, request_part
from .test_http_raw import JSON_HEADERS, insert, make_table


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
    assert await row_keys(raw) == ["r"]


async def test_host_style_secondary_is_read_only(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r"})
    host = "devstoreaccount1-secondary.table.localhost"
    for auth in ("SharedKey", "SharedKeyLite"):
        r = await raw.request(
            "GET",
            "/mytable(PartitionKey='p',RowKey='r')",
            headers={"Accept": JSON_MINIMAL},
            account_segment="",
            host=host,
            auth=auth,
        )
        assert r.status == 200, r.body
    r = await raw.request(
        "POST",
        "/mytable",
        headers=JSON_HEADERS,
        body='{"PartitionKey":"p","RowKey":"s"}',
        account_segment="",
        host=host,
    )
    assert (r.status, r.code) == (403, "AuthorizationFailure"), r.body
    r = await raw.request(
        "GET", "/", query={"restype": "service", "comp": "stats"}, account_segment="", host=host
    )
    assert r.status == 200, r.body
    assert await row_keys(raw) == ["r"]
