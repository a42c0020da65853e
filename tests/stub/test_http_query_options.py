"""Query-string and OData-header options over HTTP: ``timeout``, ``DataServiceVersion``,
``$select``'s version, repeated or unsupported options, continuation tokens and the form
decoding of the query string.
"""

from __future__ import annotations

import json

from .conftest import (
    JSON_MINIMAL,
    RawClient,
    row_keys,
)
from .test_http_batch import envelope, parts_of, post_batch, request_part
from .test_http_raw import JSON_HEADERS, insert, make_table

# The headers the legacy client sends on every Table request (captured).
LEGACY_HEADERS = {
    "Accept": JSON_MINIMAL,
    "DataServiceVersion": "3.0;NetFx",
    "MaxDataServiceVersion": "3.0",
}


LEGACY_VERSION = "2018-03-28"


async def _legacy_table(raw: RawClient) -> None:
    r = await raw.request(
        "POST",
        "/Tables",
        headers={**LEGACY_HEADERS, "Content-Type": "application/json"},
        body=json.dumps({"TableName": "cap"}),
        version=LEGACY_VERSION,
    )
    assert r.status == 201, r.body
    for rk, name in (("1", "a b"), ("2", "a+b")):
        body = {
            "PartitionKey": "x",
            "RowKey": rk,
            "name": name,
            "n": rk,
            "n@odata.type": "Edm.Int64",
        }
        r = await raw.request(
            "POST",
            "/cap",
            headers={**LEGACY_HEADERS, "Content-Type": "application/json"},
            body=json.dumps(body),
            version=LEGACY_VERSION,
        )
        assert r.status == 201, r.body


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


async def test_timeout_parameter_is_validated(raw: RawClient) -> None:
    await make_table(raw)
    for value in ("5", "30", "3600", "0030"):  # above 30 s the service uses 30 s
        r = await raw.request(
            "GET", "/mytable()", query={"timeout": value}, headers={"Accept": JSON_MINIMAL}
        )
        assert r.status == 200, (value, r.body)
    for value, code in (
        ("abc", "InvalidQueryParameterValue"),
        ("", "InvalidQueryParameterValue"),
        ("1.5", "InvalidQueryParameterValue"),
        ("0", "OutOfRangeQueryParameterValue"),
        ("-1", "OutOfRangeQueryParameterValue"),
    ):
        r = await raw.request(
            "POST",
            "/mytable",
            query={"timeout": value},
            headers=JSON_HEADERS,
            body='{"PartitionKey":"p","RowKey":"t"}',
        )
        assert (r.status, r.code) == (400, code), (value, r.body)
        assert r.json()["odata.error"]["QueryParameterName"] == "timeout"
    # service-level and ACL operations answer in storage XML
    r = await raw.request(
        "GET", "/", query={"restype": "service", "comp": "properties", "timeout": "x"}
    )
    assert (r.status, r.code) == (400, "InvalidQueryParameterValue"), r.body
    assert r.body.lstrip(b"\xef\xbb\xbf").startswith(b"<?xml")
    assert await row_keys(raw) == []


async def test_select_needs_2011_08_18(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "a": 1})
    atom = {"Accept": "application/atom+xml"}
    for path in ("/mytable()", "/mytable(PartitionKey='p',RowKey='r')"):
        r = await raw.request(
            "GET", path, query={"$select": "a"}, headers=atom, version="2009-09-19"
        )
        assert (r.status, r.code) == (400, "UnsupportedQueryParameter"), r.body
        r = await raw.request(
            "GET", path, query={"$select": "a"}, headers=atom, version="2011-08-18"
        )
        assert r.status == 200, r.body
        # a client that can only read version 1.0 responses cannot get a projection
        r = await raw.request(
            "GET",
            path,
            query={"$select": "a"},
            headers={**atom, "MaxDataServiceVersion": "1.0;NetFx"},
            version="2011-08-18",
        )
        assert (r.status, r.code) == (400, "InvalidInput"), r.body


async def test_data_service_version_headers_are_validated(raw: RawClient) -> None:
    await make_table(raw)
    for name in ("DataServiceVersion", "MaxDataServiceVersion"):
        for value in ("3.0", "3.0;NetFx", "3.0;", "2.0;NetFx", "1.0", " 3.0 "):
            r = await raw.request(
                "GET", "/mytable()", headers={"Accept": JSON_MINIMAL, name: value}
            )
            assert r.status == 200, (name, value, r.body)
        for value in ("", "garbage", "3", "4.0", "3.x", "-1.0", "3.0.1"):
            r = await raw.request(
                "POST",
                "/mytable",
                headers={**JSON_HEADERS, name: value},
                body='{"PartitionKey":"p","RowKey":"d"}',
            )
            assert (r.status, r.code) == (400, "InvalidHeaderValue"), (name, value, r.body)
            assert r.json()["odata.error"]["HeaderName"] == name
    # inside a batch, the failing part is named
    parts = [
        request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"p","RowKey":"1"}'),
        request_part(
            "POST",
            "/devstoreaccount1/mytable",
            '{"PartitionKey":"p","RowKey":"2"}',
            {"DataServiceVersion": "9.9"},
        ),
    ]
    r = await post_batch(raw, envelope(parts))
    [(status, _, payload)] = parts_of(r.body)
    assert status == 400
    err = json.loads(payload)["odata.error"]
    assert err["code"] == "InvalidHeaderValue"
    assert err["message"]["value"].startswith("1:")
    assert await row_keys(raw) == []


async def test_query_options_given_twice_or_unsupported(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r"})
    for raw_query in ("$filter=a&$filter=b", "$top=5&$top=7", "$select=a&$select=b"):
        for path in ("/mytable()", "/Tables"):
            r = await raw.request(
                "GET", path, raw_query=raw_query, headers={"Accept": JSON_MINIMAL}
            )
            assert (r.status, r.code) == (400, "InvalidQueryParameterValue"), (path, raw_query)
            assert r.json()["odata.error"]["QueryParameterName"] == raw_query.split("=")[0]
    r = await raw.request(
        "GET", "/Tables", query={"$orderby": "TableName"}, headers={"Accept": JSON_MINIMAL}
    )
    assert (r.status, r.code) == (400, "UnsupportedQueryParameter"), r.body


async def test_form_encoded_query_plus_is_a_space(raw: RawClient) -> None:
    """The legacy client (``requests`` ``params=``) form-encodes the query: a space is '+'.

    Captured: ``GET /devstoreaccount1/cap()?%24filter=PartitionKey+eq+%27x%27``. Azure
    decodes '+' in a query value as a space (an unescaped '+' in a SAS ``sig`` is why such
    signatures fail there); a literal plus arrives as ``%2B``.
    """
    await _legacy_table(raw)
    r = await raw.request(
        "GET",
        "/cap()",
        headers=LEGACY_HEADERS,
        version=LEGACY_VERSION,
        raw_query="%24filter=PartitionKey+eq+%27x%27",
    )
    assert r.status == 200, r.body
    assert [e["RowKey"] for e in r.json()["value"]] == ["1", "2"]
    r = await raw.request(
        "GET",
        "/cap()",
        headers=LEGACY_HEADERS,
        version=LEGACY_VERSION,
        raw_query="%24filter=name+eq+%27a%2Bb%27&%24select=name%2CRowKey&%24top=5",
    )
    assert r.status == 200, r.body
    assert [(e["RowKey"], e["name"]) for e in r.json()["value"]] == [("2", "a+b")]
    r = await raw.request(
        "GET",
        "/cap()",
        headers=LEGACY_HEADERS,
        version=LEGACY_VERSION,
        raw_query="%24filter=name+eq+%27a+b%27",
    )
    assert [e["RowKey"] for e in r.json()["value"]] == ["1"]
