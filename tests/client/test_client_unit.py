"""Client request shapes, filters, batches and pagination, with a mock transport."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import azt
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt._core.transport import HttpRequest, HttpResponse, MockTransport
from azt.edm import EdmType, Typed

from .conftest import DEV_CREDENTIAL, ENDPOINT, mock_table


def recorder(
    response: HttpResponse | None = None,
) -> tuple[MockTransport, list[HttpRequest]]:
    seen: list[HttpRequest] = []

    def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        return response or HttpResponse(204, {"x-ms-request-id": "rid", "ETag": 'W/"e1"'})

    return MockTransport(handler), seen


def table_with(
    transport: MockTransport, wire_format: azt.WireFormat = azt.WireFormat.JSON_MINIMAL
) -> azt.TableClient:
    return mock_table(transport, wire_format=wire_format)


async def test_insert_request_shape() -> None:
    transport, seen = recorder()
    async with table_with(transport) as table:
        result = await table.insert_entity({"PartitionKey": "a", "RowKey": "b", "n": 2**40})
    assert (result.etag, result.request_id, result.status) == ('W/"e1"', "rid", 204)
    request = seen[0]
    assert request.method == "POST"
    assert request.url == f"{ENDPOINT}/movies"
    headers = request.headers
    assert headers["Prefer"] == "return-no-content"
    assert headers["Content-Type"] == "application/json"
    assert headers["Accept"] == "application/json;odata=minimalmetadata"
    assert headers["DataServiceVersion"] == "3.0"
    assert headers["MaxDataServiceVersion"] == "3.0;NetFx"
    assert headers["x-ms-version"] == "2019-02-02"
    assert request.body is not None
    assert json.loads(request.body) == {
        "PartitionKey": "a",
        "RowKey": "b",
        "n@odata.type": "Edm.Int64",
        "n": str(2**40),
    }


async def test_return_content_asks_for_the_entity() -> None:
    body = (
        b'{"odata.etag":"W/\\"e2\\"","PartitionKey":"a","RowKey":"b",'
        b'"Timestamp":"2020-01-01T00:00:00Z","x":1}'
    )
    transport, seen = recorder(HttpResponse(201, {"x-ms-request-id": "rid"}, body))
    async with table_with(transport) as table:
        result = await table.insert_entity(
            {"PartitionKey": "a", "RowKey": "b", "x": 1}, return_content=True
        )
    assert seen[0].headers["Prefer"] == "return-content"
    assert result.entity is not None
    assert result.entity["x"] == 1
    assert result.entity.metadata.etag == 'W/"e2"'


async def test_update_upsert_delete_verbs_and_if_match() -> None:
    transport, seen = recorder()
    entity = {"PartitionKey": "O'Brien", "RowKey": "r/1"[0:1], "x": 1}
    async with table_with(transport) as table:
        await table.update_entity(entity)
        await table.update_entity(entity, azt.UpdateMode.REPLACE, etag='W/"e0"')
        await table.upsert_entity(entity)
        await table.upsert_entity(entity, azt.UpdateMode.REPLACE)
        await table.delete_entity("O'Brien", "r")
    path = f"{ENDPOINT}/movies(PartitionKey='O%27%27Brien',RowKey='r')"
    assert [(r.method, r.url, r.headers.get("If-Match")) for r in seen] == [
        ("MERGE", path, "*"),
        ("PUT", path, 'W/"e0"'),
        ("MERGE", path, None),
        ("PUT", path, None),
        ("DELETE", path, "*"),
    ]
    assert "Prefer" not in seen[0].headers
    assert seen[4].body is None
    assert "Content-Type" not in seen[4].headers


async def test_query_request_and_paging() -> None:
    pages = [
        HttpResponse(
            200,
            {
                "x-ms-continuation-NextPartitionKey": "1!4!YQ--",
                "x-ms-continuation-NextRowKey": "1!4!Yg--",
                "x-ms-request-id": "r1",
            },
            b'{"value":[{"PartitionKey":"a","RowKey":"a"}]}',
        ),
        HttpResponse(
            200,
            {"x-ms-continuation-NextPartitionKey": "1!4!Yw--", "x-ms-request-id": "r2"},
            b'{"value":[]}',
        ),
        HttpResponse(
            200, {"x-ms-request-id": "r3"}, b'{"value":[{"PartitionKey":"c","RowKey":"c"}]}'
        ),
    ]
    seen: list[HttpRequest] = []

    def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        return pages[len(seen) - 1]

    async with table_with(MockTransport(handler)) as table:
        pager = table.query_entities(
            "PartitionKey ge @pk", parameters={"pk": "a b"}, select=["RowKey"], results_per_page=5
        )
        rows = [e["RowKey"] async for e in pager]
    assert rows == ["a", "c"]  # the empty middle page is followed, not mistaken for the end
    base = f"{ENDPOINT}/movies()?$filter=PartitionKey%20ge%20%27a%20b%27&$select=RowKey&$top=5"
    assert [r.url for r in seen] == [
        base,
        base + "&NextPartitionKey=1%214%21YQ--&NextRowKey=1%214%21Yg--",
        base + "&NextPartitionKey=1%214%21Yw--",
    ]


@pytest.mark.parametrize(
    ("filter_text", "params", "expected"),
    [
        (
            "PartitionKey eq @pk and Rating ge @r",
            {"pk": "O'Brien", "r": 4},
            "PartitionKey eq 'O''Brien' and Rating ge 4",
        ),
        ("Big eq @n", {"n": 2**40}, "Big eq 1099511627776L"),
        ("Small eq @n", {"n": Typed(5, EdmType.INT64)}, "Small eq 5L"),
        ("Name eq 'keep @this' and X eq @x", {"x": 2.0}, "Name eq 'keep @this' and X eq 2.0"),
        ("Name eq 'it''s @x' or Y eq @x", {"x": True}, "Name eq 'it''s @x' or Y eq true"),
        ("PartitionKey eq 'plain'", None, "PartitionKey eq 'plain'"),
        ("B eq @b", {"b": b"\x0a\x1b"}, "B eq X'0a1b'"),
    ],
)
def test_format_filter(filter_text: str, params: dict[str, Any] | None, expected: str) -> None:
    assert azt.format_filter(filter_text, params) == expected


@pytest.mark.parametrize(
    ("filter_text", "params", "message"),
    [
        ("A eq @a", {}, "no value was given"),
        ("A eq 1", {"a": 1}, "not used"),
        ("A eq @", {"a": 1}, "not a parameter name"),
        ("B eq @b and A eq 'open", {"b": 1}, "unterminated"),
        ("A eq @a", {"a": None}, "null"),
        ("A eq @a", {"a": float("nan")}, "NaN"),
    ],
)
def test_format_filter_errors(
    filter_text: str, params: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(azt.ValidationError, match=message):
        azt.format_filter(filter_text, params)


async def test_query_argument_checks() -> None:
    transport, seen = recorder()
    async with table_with(transport) as table:
        with pytest.raises(azt.ValidationError, match="1 to 1000"):
            table.query_entities("A eq 1", results_per_page=1001)
        with pytest.raises(azt.ValidationError, match="without a filter"):
            table.query_entities(None, parameters={"a": 1})
        with pytest.raises(azt.ValidationError, match="continuation"):
            table.query_entities(continuation="bogus")
        with pytest.raises(azt.ValidationError):
            await table.get_entity("a", "b", select=["a,b"])
    assert seen == []


def test_table_name_validation() -> None:
    for bad in ("ab", "1abc", "has-dash", "Tables", "x" * 64):
        with pytest.raises(azt.ValidationError):
            azt.TableBatch(bad)


def test_batch_builder_rules() -> None:
    batch = azt.TableBatch("movies")
    batch.create({"PartitionKey": "p", "RowKey": "1"})
    batch.update({"PartitionKey": "p", "RowKey": "2"}, azt.UpdateMode.REPLACE, etag='W/"x"')
    batch.upsert({"PartitionKey": "p", "RowKey": "3"})
    batch.delete("p", "4")
    assert [repr(op) for op in batch.operations] == [
        "create(PartitionKey='p', RowKey='1')",
        "update replace(PartitionKey='p', RowKey='2')",
        "upsert merge(PartitionKey='p', RowKey='3')",
        "delete(PartitionKey='p', RowKey='4')",
    ]
    with pytest.raises(azt.BatchValidationError, match="PartitionKey 'q'") as info:
        batch.create({"PartitionKey": "q", "RowKey": "5"})
    assert info.value.index == 4
    with pytest.raises(azt.BatchValidationError, match="RowKey '1'"):
        batch.upsert({"PartitionKey": "p", "RowKey": "1"})
    with pytest.raises(azt.ValidationError):
        batch.create({"PartitionKey": "p", "RowKey": "bad#key"})
    with pytest.raises(azt.ValidationError):
        batch.update({"PartitionKey": "p", "RowKey": "6"}, etag="")
    assert len(batch) == 4


async def test_operations_passed_directly_are_checked_like_the_builders() -> None:
    sent: list[HttpRequest] = []

    def handler(request: HttpRequest) -> HttpResponse:
        sent.append(request)
        return HttpResponse(500, {"x-ms-error-code": "InternalError"})

    bad_ops: list[tuple[azt.BatchOperation, str]] = [
        (azt.BatchOperation("create", {"PartitionKey": "p", "RowKey": "a/b"}), "RowKey"),
        (azt.BatchOperation("create", {"PartitionKey": "p", "RowKey": "r", "x-y": 1}), "x-y"),
        (azt.BatchOperation("upsert", {"PartitionKey": "p", "RowKey": "r"}), "mode"),
        (
            azt.BatchOperation(
                "update", {"PartitionKey": "p", "RowKey": "r"}, mode=azt.UpdateMode.MERGE, etag=""
            ),
            "etag",
        ),
        (azt.BatchOperation("update", {"PartitionKey": "p", "RowKey": "r"}), "mode"),
        (
            azt.BatchOperation("create", {"PartitionKey": "p", "RowKey": "r"}, etag="*"),
            "no mode and no etag",
        ),
        (azt.BatchOperation("delete", {"PartitionKey": "p", "RowKey": "r"}, etag=""), "etag"),
        (azt.BatchOperation("bogus", {"PartitionKey": "p", "RowKey": "r"}), "kind"),  # type: ignore[arg-type]
        (azt.BatchOperation("delete", {"PartitionKey": "p", "RowKey": "\x00"}, etag="*"), "RowKey"),
    ]
    async with azt.TableClient(
        "http://127.0.0.1:10002/devstoreaccount1",
        "movies",
        azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY),
        transport=MockTransport(handler),
        retry=azt.RetryPolicy.no_retries(),
    ) as table:
        for op, word in bad_ops:
            with pytest.raises(azt.ValidationError, match=word):
                await table.submit_transaction([op])
        ok = [
            azt.BatchOperation("create", {"PartitionKey": "p", "RowKey": "1"}),
            azt.BatchOperation(
                "upsert", {"PartitionKey": "p", "RowKey": "2"}, mode=azt.UpdateMode.REPLACE
            ),
            azt.BatchOperation(
                "update", {"PartitionKey": "p", "RowKey": "3"}, mode=azt.UpdateMode.MERGE, etag="*"
            ),
            azt.BatchOperation("delete", {"PartitionKey": "p", "RowKey": "4"}, etag='W/"x"'),
        ]
        with pytest.raises(azt.InternalServerError):
            await table.submit_transaction(ok)
    assert len(sent) == 1
    body = sent[0].body or b""
    endpoint = "http://127.0.0.1:10002/devstoreaccount1/movies"
    for line in (
        f"POST {endpoint} HTTP/1.1",
        f"PUT {endpoint}(PartitionKey='p',RowKey='2') HTTP/1.1",
        f"MERGE {endpoint}(PartitionKey='p',RowKey='3') HTTP/1.1",
        f"DELETE {endpoint}(PartitionKey='p',RowKey='4') HTTP/1.1",
        'If-Match: W/"x"',
    ):
        assert line.encode() in body


async def test_batch_request_shape() -> None:
    transport, seen = recorder(HttpResponse(400, {"x-ms-error-code": "InvalidInput"}, b""))
    async with table_with(transport) as table:
        batch = table.batch()
        batch.create({"PartitionKey": "p", "RowKey": "1"})
        batch.delete("p", "2", etag='W/"z"')
        with pytest.raises(azt.InvalidInputError):
            await table.submit_transaction(batch)
        with pytest.raises(azt.BatchValidationError, match="built for table"):
            await table.submit_transaction(azt.TableBatch("other"))
    request = seen[0]
    assert request.url == f"{ENDPOINT}/$batch"
    assert request.headers["Content-Type"].startswith("multipart/mixed; boundary=batch_")
    body = request.body or b""
    assert f"POST {ENDPOINT}/movies HTTP/1.1".encode() in body
    assert f"DELETE {ENDPOINT}/movies(PartitionKey='p',RowKey='2') HTTP/1.1".encode() in body
    assert b'If-Match: W/"z"' in body
    assert b"Prefer: return-no-content" in body
    assert len(seen) == 1


async def test_atom_requests_use_an_atom_era_version() -> None:
    transport, seen = recorder()
    async with table_with(transport, azt.WireFormat.ATOM) as table:
        await table.upsert_entity({"PartitionKey": "a", "RowKey": "b", "x": 1})
    headers = seen[0].headers
    assert headers["x-ms-version"] == "2015-04-05"
    assert headers["Content-Type"] == "application/atom+xml"
    assert headers["Accept"] == "application/atom+xml"
    assert (seen[0].body or b"").startswith(b"<?xml")


def test_continuation_token_round_trip_and_errors() -> None:
    token = azt.ContinuationToken(next_partition_key="1!8!U21pdGg-", next_row_key=None)
    text = str(token)
    assert text.startswith("azt1.")
    assert azt.ContinuationToken.from_string(text) == token
    assert token.query_params() == {"NextPartitionKey": "1!8!U21pdGg-"}
    for bad in ("azt1.!!!", "azt1.bnVsbA", "azt1." + "W251bGwsbnVsbCxudWxsXQ"):
        with pytest.raises(azt.ValidationError):
            azt.ContinuationToken.from_string(bad)


async def test_service_client_table_requests() -> None:
    transport, seen = recorder(HttpResponse(204, {}))
    async with azt.TableServiceClient(ENDPOINT, DEV_CREDENTIAL, transport=transport) as service:
        table = await service.create_table("movies")
        await service.delete_table("movies")
    assert table.table_name == "movies"
    assert (seen[0].method, seen[0].url, seen[0].body) == (
        "POST",
        f"{ENDPOINT}/Tables",
        b'{"TableName":"movies"}',
    )
    assert seen[0].headers["Prefer"] == "return-no-content"
    assert (seen[1].method, seen[1].url) == ("DELETE", f"{ENDPOINT}/Tables('movies')")


@given(
    a=st.text(max_size=30),
    b=st.text(alphabet="'@ab ()", max_size=30),
    n=st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
def test_format_filter_values_cannot_escape_their_literal(a: str, b: str, n: int) -> None:
    text = azt.format_filter(
        "A eq @a and B ne @b or (N gt @n and Name eq 'x@a')", {"a": a, "b": b, "n": n}
    )
    quoted_a = "'" + a.replace("'", "''") + "'"
    quoted_b = "'" + b.replace("'", "''") + "'"
    number = f"{n}L" if not -(2**31) <= n < 2**31 else str(n)
    assert text == f"A eq {quoted_a} and B ne {quoted_b} or (N gt {number} and Name eq 'x@a')"


@given(st.randoms(use_true_random=False))
def test_connection_string_key_case_and_order_do_not_matter(rnd: Any) -> None:
    pairs = [
        ("AccountName", "acct1"),
        ("AccountKey", "a2V5"),
        ("EndpointSuffix", "core.chinacloudapi.cn"),
        ("DefaultEndpointsProtocol", "http"),
    ]
    rnd.shuffle(pairs)
    text = ";".join(
        "".join(c.upper() if rnd.random() < 0.5 else c.lower() for c in k) + "=" + v
        for k, v in pairs
    )
    settings = azt.parse_connection_string(text + (";" if rnd.random() < 0.5 else ""))
    assert settings.endpoint == "http://acct1.table.core.chinacloudapi.cn"
    assert settings.account_name == "acct1"
    assert settings.account_key == "a2V5"


def test_api_version_is_checked() -> None:
    cred = DEV_CREDENTIAL
    with pytest.raises(azt.ValidationError, match="2013-08-15"):
        azt.TableServiceClient(ENDPOINT, cred, api_version="2012-02-12")
    with pytest.raises(azt.ValidationError, match="look like"):
        azt.TableServiceClient(ENDPOINT, cred, api_version="latest")
    with pytest.raises(azt.ValidationError, match="WireFormat"):
        azt.TableServiceClient(ENDPOINT, cred, wire_format="json")  # type: ignore[arg-type]
    with pytest.raises(azt.ValidationError, match="AmbiguousOutcomePolicy"):
        azt.TableServiceClient(ENDPOINT, cred, ambiguous_outcome="raise")  # type: ignore[arg-type]


async def test_an_oversized_transaction_is_a_batch_error_and_nothing_is_sent() -> None:
    transport, seen = recorder(HttpResponse(202, {}, b""))
    # ~0.92 MiB as the service counts it (valid), ~1.2 MiB as base64 on the wire
    big = {f"b{i:02d}": bytes(60000) for i in range(16)}
    async with table_with(transport) as table:
        batch = table.batch()
        for n in range(4):
            batch.create({"PartitionKey": "p", "RowKey": str(n), **big})
        with pytest.raises(azt.BatchValidationError, match="4 MiB") as info:
            await table.submit_transaction(batch)
    assert info.value.index is None  # the transaction as a whole is at fault
    assert seen == []
