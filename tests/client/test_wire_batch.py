"""Batch (multipart/mixed) encode and decode: PROTOCOL.md 9 samples, LF tolerance, errors."""

from __future__ import annotations

import doctest
import email.parser
import email.policy
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import azt._core.wire.batch as batch
from azt._core.wire import WireDecodeError
from azt._core.wire.batch import (
    BatchPart,
    BatchResponsePart,
    Headers,
    _split_head,
    _split_multipart,
    decode_batch_response,
    decode_part_error,
    encode_batch,
    encode_query_batch,
    parse_error_index,
)
from azt._core.wire.json import decode_entry
from azt._errors import ValidationError

BASE = "https://myaccount.table.core.windows.net"
V = {"x-ms-version": "2019-02-02", "DataServiceVersion": "3.0"}


def test_docstring_examples() -> None:
    result = doctest.testmod(batch, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 12
    assert result.failed == 0


def _sample_parts() -> list[BatchPart]:
    return [
        BatchPart(
            "POST",
            f"{BASE}/Blogs",
            {
                **V,
                "Prefer": "return-no-content",
                "Content-Type": "application/json;odata=nometadata",
                "Accept": "application/json;odata=minimalmetadata",
            },
            b'{"PartitionKey":"Channel_19","RowKey":"1","Rating":9,"Text":"x"}',
        ),
        BatchPart(
            "PATCH",
            f"{BASE}/Blogs(PartitionKey='Channel_19',RowKey='3')",
            {
                **V,
                "If-Match": "*",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
            b'{"PartitionKey":"Channel_19","RowKey":"3","Rating":10}',
        ),
        BatchPart(
            "DELETE",
            f"{BASE}/Blogs(PartitionKey='Channel_19',RowKey='4')",
            {**V, "If-Match": "*", "Accept": "application/json;odata=minimalmetadata"},
        ),
    ]


# PROTOCOL.md 9.3, written out with this encoder's choices (CRLF everywhere, the CRLF
# after each part's body belongs to the next delimiter, so a body-less part ends with an
# empty line; no extra blank line between the closing delimiters).
EXPECTED_CHANGESET = (
    b"--batch_a1e9d677-b28b-435e-a89e-87e6a768a431\r\n"
    b"Content-Type: multipart/mixed; boundary=changeset_8a28b620-b4bb-458c-a177-0959fb14c977\r\n"
    b"\r\n"
    b"--changeset_8a28b620-b4bb-458c-a177-0959fb14c977\r\n"
    b"Content-Type: application/http\r\n"
    b"Content-Transfer-Encoding: binary\r\n"
    b"Content-ID: 1\r\n"
    b"\r\n"
    b"POST https://myaccount.table.core.windows.net/Blogs HTTP/1.1\r\n"
    b"x-ms-version: 2019-02-02\r\n"
    b"DataServiceVersion: 3.0\r\n"
    b"Prefer: return-no-content\r\n"
    b"Content-Type: application/json;odata=nometadata\r\n"
    b"Accept: application/json;odata=minimalmetadata\r\n"
    b"Content-Length: 64\r\n"
    b"\r\n"
    b'{"PartitionKey":"Channel_19","RowKey":"1","Rating":9,"Text":"x"}\r\n'
    b"--changeset_8a28b620-b4bb-458c-a177-0959fb14c977\r\n"
    b"Content-Type: application/http\r\n"
    b"Content-Transfer-Encoding: binary\r\n"
    b"Content-ID: 2\r\n"
    b"\r\n"
    b"PATCH https://myaccount.table.core.windows.net/Blogs(PartitionKey='Channel_19',RowKey='3')"
    b" HTTP/1.1\r\n"
    b"x-ms-version: 2019-02-02\r\n"
    b"DataServiceVersion: 3.0\r\n"
    b"If-Match: *\r\n"
    b"Content-Type: application/json\r\n"
    b"Accept: application/json\r\n"
    b"Content-Length: 54\r\n"
    b"\r\n"
    b'{"PartitionKey":"Channel_19","RowKey":"3","Rating":10}\r\n'
    b"--changeset_8a28b620-b4bb-458c-a177-0959fb14c977\r\n"
    b"Content-Type: application/http\r\n"
    b"Content-Transfer-Encoding: binary\r\n"
    b"Content-ID: 3\r\n"
    b"\r\n"
    b"DELETE https://myaccount.table.core.windows.net/Blogs(PartitionKey='Channel_19',RowKey='4')"
    b" HTTP/1.1\r\n"
    b"x-ms-version: 2019-02-02\r\n"
    b"DataServiceVersion: 3.0\r\n"
    b"If-Match: *\r\n"
    b"Accept: application/json;odata=minimalmetadata\r\n"
    b"\r\n"
    b"\r\n"
    b"--changeset_8a28b620-b4bb-458c-a177-0959fb14c977--\r\n"
    b"--batch_a1e9d677-b28b-435e-a89e-87e6a768a431--\r\n"
)


def test_encode_changeset_known_answer() -> None:
    ct, body = encode_batch(
        _sample_parts(),
        batch_boundary="batch_a1e9d677-b28b-435e-a89e-87e6a768a431",
        changeset_boundary="changeset_8a28b620-b4bb-458c-a177-0959fb14c977",
    )
    assert ct == "multipart/mixed; boundary=batch_a1e9d677-b28b-435e-a89e-87e6a768a431"
    assert body == EXPECTED_CHANGESET


def test_encode_changeset_parses_with_the_email_package() -> None:
    ct, body = encode_batch(_sample_parts())
    assert b"\n" not in body.replace(b"\r\n", b"")  # CRLF only
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {ct}\r\n\r\n".encode() + body
    )
    (changeset,) = msg.iter_parts()
    assert changeset.get_content_type() == "multipart/mixed"
    assert changeset.get_boundary().startswith("changeset_")  # type: ignore[union-attr]
    parts = list(changeset.iter_parts())
    assert [p["Content-ID"] for p in parts] == ["1", "2", "3"]
    assert all(p.get_content_type() == "application/http" for p in parts)
    inner = [str(p.get_payload(decode=False)) for p in parts]
    assert inner[0].startswith("POST https://myaccount.table.core.windows.net/Blogs HTTP/1.1")
    assert inner[0].rstrip("\r\n").endswith('"Text":"x"}')
    assert inner[2].startswith("DELETE ")


def test_encode_query_batch_known_answer() -> None:
    ct, body = encode_query_batch(
        BatchPart(
            "GET",
            f"{BASE}/Blogs(PartitionKey='Channel_19',RowKey='2')",
            {"Accept": "application/json;odata=minimalmetadata"},
        ),
        batch_boundary="batch_f351702c-c8c8-48c6-af2c-91b809c651ce",
    )
    assert ct == "multipart/mixed; boundary=batch_f351702c-c8c8-48c6-af2c-91b809c651ce"
    assert body == (
        b"--batch_f351702c-c8c8-48c6-af2c-91b809c651ce\r\n"
        b"Content-Type: application/http\r\n"
        b"Content-Transfer-Encoding: binary\r\n"
        b"\r\n"
        b"GET https://myaccount.table.core.windows.net/Blogs(PartitionKey='Channel_19',RowKey='2')"
        b" HTTP/1.1\r\n"
        b"Accept: application/json;odata=minimalmetadata\r\n"
        b"\r\n"
        b"\r\n"
        b"--batch_f351702c-c8c8-48c6-af2c-91b809c651ce--\r\n"
    )


def test_encode_refusals() -> None:
    with pytest.raises(ValidationError, match="at least one"):
        encode_batch([])
    with pytest.raises(ValidationError, match="at most 100"):
        encode_batch(
            [BatchPart("DELETE", f"{BASE}/t(PartitionKey='p',RowKey='{i}')") for i in range(101)]
        )
    encode_batch(
        [BatchPart("DELETE", f"{BASE}/t(PartitionKey='p',RowKey='{i}')") for i in range(100)]
    )
    with pytest.raises(ValidationError, match="operation 1: GET"):
        encode_batch([BatchPart("DELETE", f"{BASE}/t"), BatchPart("GET", f"{BASE}/t")])
    with pytest.raises(ValidationError, match="line break"):
        encode_batch([BatchPart("DELETE", f"{BASE}/t", {"If-Match": "*\r\nEvil: 1"})])
    with pytest.raises(ValidationError, match="whitespace"):
        encode_batch([BatchPart("DELETE", f"{BASE}/t(PartitionKey='a b',RowKey='')")])
    with pytest.raises(ValidationError, match="4 MiB"):
        encode_batch([BatchPart("POST", f"{BASE}/t", {}, b"x" * (41 * 1024 * 1024 // 10))] * 1)
    with pytest.raises(ValidationError, match="one GET"):
        encode_query_batch(BatchPart("DELETE", f"{BASE}/t"))


# ----------------------------------------------------------------------- decode

SUCCESS = """--batchresponse_fe6d4099-48fd-4e4d-b4dc-ffb72ab683f2
Content-Type: multipart/mixed; boundary=changesetresponse_f503ec5f-f8b0-4fe7-b596-e6a5ea774fd0

--changesetresponse_f503ec5f-f8b0-4fe7-b596-e6a5ea774fd0
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 204 No Content
X-Content-Type-Options: nosniff
Cache-Control: no-cache
Preference-Applied: return-no-content
DataServiceVersion: 3.0;
Location: https://myaccount.table.core.windows.net/Blogs(PartitionKey='Channel_19',RowKey='1')
DataServiceId: https://myaccount.table.core.windows.net/Blogs(PartitionKey='Channel_19',RowKey='1')
ETag: W/"datetime'2021-09-21T00%3A50%3A52.9204305Z'"


--changesetresponse_f503ec5f-f8b0-4fe7-b596-e6a5ea774fd0
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 204 No Content
X-Content-Type-Options: nosniff
Cache-Control: no-cache
DataServiceVersion: 1.0;
ETag: W/"datetime'2021-09-21T00%3A50%3A52.9222335Z'"


--changesetresponse_f503ec5f-f8b0-4fe7-b596-e6a5ea774fd0
Content-Type: application/http
Content-Transfer-Encoding: binary

HTTP/1.1 204 No Content
X-Content-Type-Options: nosniff
Cache-Control: no-cache
DataServiceVersion: 1.0;


--changesetresponse_f503ec5f-f8b0-4fe7-b596-e6a5ea774fd0--
--batchresponse_fe6d4099-48fd-4e4d-b4dc-ffb72ab683f2--
"""
SUCCESS_CT = "multipart/mixed; boundary=batchresponse_fe6d4099-48fd-4e4d-b4dc-ffb72ab683f2"


@pytest.mark.parametrize("newline", ["\r\n", "\n"])
def test_decode_success_sample(newline: str) -> None:
    parts = decode_batch_response(SUCCESS_CT, SUCCESS.replace("\n", newline).encode())
    assert [(p.status, p.reason, p.body) for p in parts] == [(204, "No Content", b"")] * 3
    assert parts[0].headers["etag"] == "W/\"datetime'2021-09-21T00%3A50%3A52.9204305Z'\""
    assert parts[0].headers["Preference-Applied"] == "return-no-content"
    assert parts[1].headers["ETag"] == "W/\"datetime'2021-09-21T00%3A50%3A52.9222335Z'\""
    assert "ETag" not in parts[2].headers
    assert all(p.ok for p in parts)
    assert all(p.content_id is None for p in parts)


FAILURE = (
    "--batchresponse_b6f890b8-8144-46d3-8574-f09db410f594\r\n"
    "Content-Type: multipart/mixed; "
    "boundary=changesetresponse_36817914-a3a0-43bb-9d66-8d670962fa3a\r\n"
    "\r\n"
    "--changesetresponse_36817914-a3a0-43bb-9d66-8d670962fa3a\r\n"
    "Content-Type: application/http\r\n"
    "Content-Transfer-Encoding: binary\r\n"
    "\r\n"
    "HTTP/1.1 409 Conflict\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Cache-Control: no-cache\r\n"
    "Preference-Applied: return-no-content\r\n"
    "DataServiceVersion: 3.0;\r\n"
    "Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"
    "\r\n"
    '{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":'
    '"1:The specified entity already exists.\\nRequestId:8c9d6308-c002-0029-50b6-abde07000000'
    '\\nTime:2020-10-26T16:41:38.2990653Z"}}}\r\n'
    "--changesetresponse_36817914-a3a0-43bb-9d66-8d670962fa3a--\r\n"
    "--batchresponse_b6f890b8-8144-46d3-8574-f09db410f594--\r\n"
)


def test_decode_failure_sample() -> None:
    (part,) = decode_batch_response(
        "multipart/mixed; boundary=batchresponse_b6f890b8-8144-46d3-8574-f09db410f594",
        FAILURE.encode(),
    )
    assert part.status == 409
    assert not part.ok
    assert part.body.startswith(b'{"odata.error"')
    assert part.body.endswith(b"}}}")
    code, message, index = decode_part_error(part)
    assert code == "EntityAlreadyExists"
    assert index == 1
    assert message is not None
    assert message.startswith("The specified entity already exists.\nRequestId:")


def test_decode_xml_error_part_lf_and_content_id() -> None:
    body = (
        b"--batchresponse_x\n"
        b'Content-Type: multipart/mixed; boundary="changesetresponse_y"\n'
        b"\n"
        b"--changesetresponse_y\n"
        b"Content-Type: application/http\n"
        b"Content-Transfer-Encoding: binary\n"
        b"\n"
        b"HTTP/1.1 400 Bad Request\n"
        b"Content-ID: 4\n"
        b"Content-Type: application/xml;charset=utf-8\n"
        b"\n"
        b'<?xml version="1.0" encoding="utf-8" standalone="yes"?>\n'
        b'<error xmlns="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">\n'
        b"  <code>InvalidInput</code>\n"
        b'  <message xml:lang="en-US">3:One of the request inputs is not valid.</message>\n'
        b"</error>\n"
        b"--changesetresponse_y--\n"
        b"--batchresponse_x--"
    )
    (part,) = decode_batch_response('multipart/mixed; boundary="batchresponse_x"', body)
    assert part.status == 400
    assert part.content_id == "4"
    assert decode_part_error(part) == ("InvalidInput", "One of the request inputs is not valid.", 3)


def test_decode_query_batch_response_direct_part() -> None:
    entity = (
        b'{"odata.metadata":"https://a/$metadata#Blogs/@Element","odata.etag":"W/\\"1\\"",'
        b'"PartitionKey":"Channel_19","RowKey":"2","Timestamp":"2021-09-21T00:50:52.9204305Z",'
        b'"Rating":7}'
    )
    body = (
        b"--batchresponse_q\r\n"
        b"Content-Type: application/http\r\n"
        b"Content-Transfer-Encoding: binary\r\n"
        b"\r\n"
        b"HTTP/1.1 200 OK\r\n"
        b"Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"
        b'ETag: W/"1"\r\n'
        b"Content-Length: " + str(len(entity)).encode() + b"\r\n"
        b"\r\n" + entity + b"\r\n"
        b"--batchresponse_q--\r\n"
    )
    (part,) = decode_batch_response("multipart/mixed; boundary=batchresponse_q", body)
    assert part.status == 200
    assert part.body == entity
    e = decode_entry(part.body)
    assert e["Rating"] == 7
    assert e.metadata.etag == 'W/"1"'


def test_decode_body_without_content_length_runs_to_delimiter() -> None:
    body = (
        b"--b\r\nContent-Type: application/http\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\n\r\n"
        b'{"a":"line1\\r\\n"}\r\n\r\n--b--'
    )
    (part,) = decode_batch_response("multipart/mixed; boundary=b", body)
    assert part.status == 201
    assert part.body == b'{"a":"line1\\r\\n"}\r\n'


@pytest.mark.parametrize(
    ("content_type", "body", "match"),
    [
        ("multipart/mixed", b"--b\r\n--b--", "no multipart boundary"),
        ("multipart/mixed; boundary=b", b"nothing here", "no part"),
        ("multipart/mixed; boundary=b", b"--b\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", "closing"),
        ("multipart/mixed; boundary=b", b"--b\r\n\r\nnonsense\r\n--b--", "status line"),
        (
            "multipart/mixed; boundary=b",
            b"--b\r\n\r\nHTTP/1.1 204 OK\r\nbad header\r\n\r\n\r\n--b--",
            "header",
        ),
    ],
)
def test_decode_malformed(content_type: str, body: bytes, match: str) -> None:
    with pytest.raises(WireDecodeError, match=match):
        decode_batch_response(content_type, body)


def test_parse_error_index_and_headers() -> None:
    assert parse_error_index("0:x") == 0
    assert parse_error_index("99:The batch request operation exceeds the maximum 100 changes") == 99
    assert parse_error_index(None) is None
    assert parse_error_index("RequestId:abc") is None
    h = Headers([("A", "1"), ("a", "2"), ("B", "3")])
    assert h["a"] == "1, 2"
    assert list(h) == ["A", "B"]
    assert len(h) == 2
    assert h.get("c") is None
    p = BatchResponsePart(500, "Internal", Headers(), b"not an error body")
    assert decode_part_error(p) == (None, None, None)


# --- the hand-written scanners agree with the grammar's regular expressions ------------


def _reference_split(body: bytes, boundary: str) -> list[bytes] | str:
    delim = re.compile(
        rb"(?:\A|\r?\n)--" + re.escape(boundary.encode("latin-1")) + rb"(--)?[ \t]*(?:\r?\n|\Z)"
    )
    parts: list[bytes] = []
    start: int | None = None
    for m in delim.finditer(body):
        if start is not None:
            parts.append(body[start : m.start()])
        if m.group(1):
            return parts
        start = m.end()
    return "no part" if start is None else "no close"


def _reference_head(data: bytes) -> tuple[bytes, bytes]:
    if data.startswith(b"\r\n"):
        return b"", data[2:]
    if data.startswith(b"\n"):
        return b"", data[1:]
    m = re.compile(rb"\r?\n\r?\n").search(data)
    if m is None:
        return data.rstrip(b"\r\n"), b""
    return data[: m.start()], data[m.end() :]


_PIECES = st.lists(
    st.sampled_from(
        [b"--b", b"--b--", b"\r\n", b"\n", b"\r", b" ", b"\t", b"x", b"-", b"b", b"--bb", b"\n\n"]
    ),
    max_size=24,
).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(_PIECES)
def test_split_multipart_matches_the_delimiter_grammar(body: bytes) -> None:
    expected = _reference_split(body, "b")
    try:
        got: list[bytes] | str = _split_multipart(body, "b")
    except WireDecodeError as exc:
        got = "no part" if "no part" in str(exc) else "no close"
    assert got == expected


@settings(max_examples=500, deadline=None)
@given(_PIECES)
def test_split_head_matches_the_blank_line_grammar(data: bytes) -> None:
    assert _split_head(data) == _reference_head(data)


def test_part_headers_fold_repeat_and_refuse_garbage() -> None:
    head = (
        b"HTTP/1.1 204 No Content\r\n"
        b"X-Long: first\r\n"
        b"\t continued\r\n"
        b"Vary: Origin\r\n"
        b"vary: Accept\r\n"
        b"  more\r\n"
        b"   \r\n"
        b'ETag:  W/"1" \r\n'
    )
    body = (
        b"--b\r\nContent-Type: application/http\r\nContent-ID: 7\r\n\r\n"
        + head
        + b"\r\n\r\n--b--\r\n"
    )
    (part,) = decode_batch_response("multipart/mixed; boundary=b", body)
    assert part.headers["x-long"] == "first continued"
    assert part.headers["VARY"] == "Origin, Accept more"
    assert list(part.headers) == ["X-Long", "Vary", "ETag"]
    assert part.headers.get("etag") == 'W/"1"'
    assert part.headers.get("missing") is None
    assert part.headers.get("missing", "-") == "-"
    assert part.content_id == "7"
    bad = body.replace(b"Vary: Origin", b"no colon here")
    with pytest.raises(WireDecodeError, match="malformed header line"):
        decode_batch_response("multipart/mixed; boundary=b", bad)


# --- exact sizes (hardening issue 11.4) ----------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=100))
def test_changeset_size_is_the_exact_body_length(bodies: list[bytes]) -> None:
    cs = batch.Changeset()
    for i, body in enumerate(bodies):
        request = batch.encode_request(BatchPart("POST", f"{BASE}/t", {"N": str(i)}, body))
        expected = cs.size + cs.cost(request)
        cs.append(request)
        assert cs.size == expected
    _, encoded = cs.encode()
    assert cs.size == len(encoded)
    # independently: the parts between the change set delimiters, plus the envelope
    marker = b"--" + cs.changeset_boundary.encode()
    assert encoded.count(marker) == len(bodies) + 1
    assert encoded.startswith(b"--" + cs.batch_boundary.encode() + b"\r\n")
    assert encoded.endswith(b"--" + cs.batch_boundary.encode() + b"--\r\n")


def test_changeset_fits_exactly_on_the_limit_and_not_a_byte_over() -> None:
    cs = batch.Changeset()
    head = batch.encode_request(BatchPart("POST", f"{BASE}/t", {}, b""))
    cs.append(head)
    room = batch.MAX_BATCH_BYTES - cs.size - cs.cost(0)
    assert cs.fits(room)
    assert not cs.fits(room + 1)
    cs.append(b"x" * room)
    assert cs.size == batch.MAX_BATCH_BYTES
    assert len(cs.encode()[1]) == batch.MAX_BATCH_BYTES
    cs.append(b"")
    with pytest.raises(ValidationError, match="4 MiB"):
        cs.encode()


def test_changeset_counts_content_id_digits() -> None:
    cs = batch.Changeset()
    costs = []
    for _ in range(100):
        costs.append(cs.cost(0))
        cs.append(b"")
    assert costs[8] + 1 == costs[9]  # Content-ID 10 has two digits
    assert costs[98] + 1 == costs[99]  # Content-ID 100 has three
    assert not cs.fits(0)  # 100 operations
