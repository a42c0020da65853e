"""The batch fast paths against the general code they stand in for (differential tests on
random inputs): ``change_set_outcome`` vs ``decode_batch_response``, the
``OperationEncoder``'s precomputed request heads vs ``encode_request(batch_part(...))``."""

from __future__ import annotations

import re
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from azt import TableServiceClient, UpdateMode
from azt._core.batch import BatchOperation, OperationEncoder, batch_part, checked_operation
from azt._core.config import Flavor, WireFormat
from azt._core.wire import WireDecodeError, batch_outcome
from azt._core.wire.batch import decode_batch_response, encode_request
from azt._core.wire.batch_outcome import change_set_outcome
from azt._errors import ValidationError

# --- change_set_outcome -------------------------------------------------------------------


def _general(content_type: str, body: bytes) -> list[tuple[int, str | None]] | None:
    """What batch_results reads from the general decoder when every part succeeded (None
    when a part failed or the body does not decode)."""
    try:
        parts = decode_batch_response(content_type, body)
    except (WireDecodeError, UnicodeEncodeError):
        return None
    if not all(200 <= p.status < 300 for p in parts):
        return None
    return [(p.status, p.headers.get("ETag")) for p in parts]


_ETAG = "W/\"datetime'2026-11-25T17%3A23%3A48.3871695Z'\""
#: header lines of the usual form, and the ETag line in several spellings
_PLAIN_LINES = [
    b"Cache-Control: no-cache",
    b"X-Content-Type-Options: nosniff",
    b"Preference-Applied: return-no-content",
    b"DataServiceVersion: 3.0;",
    b"Location: https://a.table.core.windows.net/t(PartitionKey='p',RowKey='r')",
    b"Content-ID: 1",
    b"Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
    b"X-Odd:   spaced value   ",
]
_ETAG_LINES = [
    b"ETag: " + _ETAG.encode(),
    b'ETag:  W/"x"  ',
    b'ETag: W/"caf\xc3\xa9"',
    b'ETag: W/"bad\xff"',
    b"ETag:",
]
#: lines the general parser reads otherwise, joins, skips or refuses
_ODD_LINES = [
    b"Location: https://a.table.core.windows.net/etags(PartitionKey='p',RowKey='r')",
    b"etag: " + _ETAG.encode(),
    b"ETAG:" + _ETAG.encode(),
    b"ETag : " + _ETAG.encode(),
    b"ETag\t: x",
    b'ETag: W/"a\rb"',
    b"X-Bare: a\rb",
    b" folded continuation",
    b"\tfolded: with colon",
    b"no colon here",
    b"   ",
    b"X-Name With Space: v",
    b"\xc2\xa0ETag: x",
    b"\xe2\x80\x83ETag: y",
]
_STATUS_LINES = [
    b"HTTP/1.1 204 No Content",
    b"HTTP/1.1 201 Created",
    b"HTTP/1.1 200 OK",
]
_ODD_STATUS_LINES = [
    b"HTTP/1.1 409 Conflict",
    b"HTTP/1.1 404 Not Found",
    b"HTTP/1.0 204 No Content",
    b"HTTP/1.1 2040 Odd",
    b"HTTP/1.1 204",
    b" HTTP/1.1 204 No Content",
    b"HTTP/1.1 20x Odd",
    b"HTTP/1.1 204 Has etag in reason",
    b"HTTP/1.1 204 No\nContent",
]
_MIME_HEADS = [
    b"Content-Type: application/http\r\nContent-Transfer-Encoding: binary",
    b"Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: 7",
    b"content-type: application/http",
]
_ODD_MIME_HEADS = [
    b"Content-Type: multipart/mixed; boundary=inner",
    b"Content-Type: application/http\r\n folded",
    b"Content-Type: application/http\r\nno colon",
    b"Content-Type: application/http\nContent-Transfer-Encoding: binary",
    b"",
    b"\x00",
    b"Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n",
]


def _mostly(draw: st.DrawFn, usual: list[bytes], odd: list[bytes]) -> bytes:
    """One of ``usual``, or (one time in sixteen) one of ``odd``."""
    return draw(st.sampled_from(odd if draw(st.integers(0, 15)) == 0 else usual))


@st.composite
def _part(draw: st.DrawFn) -> bytes:
    mime = _mostly(draw, _MIME_HEADS, _ODD_MIME_HEADS)
    status = _mostly(draw, _STATUS_LINES, _ODD_STATUS_LINES)
    headers = draw(st.lists(st.sampled_from(_PLAIN_LINES), min_size=1, max_size=6))
    if draw(st.integers(0, 5)):
        headers.insert(draw(st.integers(0, len(headers))), draw(st.sampled_from(_ETAG_LINES)))
    if draw(st.integers(0, 7)) == 0:
        headers.insert(draw(st.integers(0, len(headers))), draw(st.sampled_from(_ODD_LINES)))
    sep = _mostly(draw, [b"\r\n"], [b"\n"])
    body = _mostly(
        draw,
        [b"", b'{"a":1}', b'{"odata.etag":"W/\\"x\\""}'],
        [b'{"a":\n1}', b"\r\n--x", b"\r\n\r\n", b"x\r\n\r\n", b"\r\n"],
    )
    head = sep.join([status, *headers])
    return mime + b"\r\n\r\n" + head + sep + sep + body


@st.composite
def _response(draw: st.DrawFn) -> tuple[str, bytes]:
    batch = draw(st.sampled_from(["batchresponse_1", "b", "batchresponse_é"]))
    cs = draw(st.sampled_from(["changesetresponse_2", "cs", "changesetresponse_ü"]))
    cs_param = f'"{cs}"' if draw(st.booleans()) else cs
    parts = draw(st.lists(_part(), min_size=1, max_size=4))
    after = _mostly(draw, [b"\r\n"], [b"  \r\n", b"\n", b"x\r\n", b"--\r\n"])
    before = _mostly(draw, [b"\r\n"], [b"\n", b"", b"--cs-not\r\n"])
    marker = b"--" + cs.encode("latin-1")
    inner = b"".join(marker + after + p + before for p in parts)
    inner += marker + _mostly(draw, [b"--\r\n", b"--"], [b"--  \r\nepilogue", b"\r\n"])
    if draw(st.integers(0, 9)) == 0:
        inner = draw(st.sampled_from([b"preamble\r\n", b"\r\n"])) + inner
    outer_head = f"Content-Type: multipart/mixed; boundary={cs_param}".encode("latin-1")
    outer_marker = f"--{batch}".encode("latin-1")
    body = outer_marker + b"\r\n" + outer_head + b"\r\n\r\n" + inner + b"\r\n"
    body += outer_marker + b"--\r\n"
    if draw(st.integers(0, 9)) == 0:
        body += outer_marker + b"\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 x\r\n\r\n"
    return f"multipart/mixed; boundary={batch}", body


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_response())
def test_change_set_outcome_matches_the_general_decoder(response: tuple[str, bytes]) -> None:
    content_type, body = response
    try:
        fast = change_set_outcome(content_type, body)
    except UnicodeEncodeError:
        pytest.fail("change_set_outcome must leave a boundary it cannot encode to the decoder")
    if fast is not None:
        assert fast == _general(content_type, body)


def _usual(n: int, statuses: list[int], etags: list[str]) -> tuple[str, bytes]:
    out = [b"--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=cs_2\r\n\r\n"]
    for i in range(n):
        out.append(
            b"--cs_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary"
            b"\r\n\r\nHTTP/1.1 %d X\r\nCache-Control: no-cache\r\nETag: %s\r\n"
            b"Content-ID: %d\r\n\r\n\r\n" % (statuses[i], etags[i].encode(), i + 1)
        )
    out.append(b"--cs_2--\r\n--batchresponse_1--\r\n")
    return "multipart/mixed; boundary=batchresponse_1", b"".join(out)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([200, 201, 204]),
            st.text(
                st.characters(
                    min_codepoint=0x21, max_codepoint=0x2FF, blacklist_categories=["Zs", "Cc"]
                ),
                max_size=30,
            ).filter(lambda e: "etag" not in e.lower()),  # elsewhere: left to the decoder
        ),
        min_size=1,
        max_size=100,
    )
)
def test_the_usual_answer_takes_the_fast_path(outcomes: list[tuple[int, str]]) -> None:
    etags = [f'W/"{e}"' for _, e in outcomes]
    content_type, body = _usual(len(outcomes), [s for s, _ in outcomes], etags)
    fast = change_set_outcome(content_type, body)
    assert fast is not None
    assert (
        fast
        == _general(content_type, body)
        == list(zip([s for s, _ in outcomes], etags, strict=True))
    )


def test_a_failed_operation_leaves_the_answer_to_the_general_decoder() -> None:
    content_type, body = _usual(3, [204, 409, 204], ["a", "b", "c"])
    assert change_set_outcome(content_type, body) is None
    assert [p.status for p in decode_batch_response(content_type, body)] == [204, 409, 204]


def test_the_stub_answer_takes_the_fast_path() -> None:
    body = (
        b"--batchresponse_89\r\nContent-Type: multipart/mixed; boundary=changesetresponse_fe"
        b"\r\n\r\n--changesetresponse_fe\r\nContent-Type: application/http\r\n"
        b"Content-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 204 No Content\r\n"
        b"Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n"
        b"Preference-Applied: return-no-content\r\nDataServiceVersion: 3.0;\r\n"
        b"Location: http://127.0.0.1:1/devstoreaccount1/cap(PartitionKey='B',RowKey='0')\r\n"
        b"DataServiceId: http://127.0.0.1:1/devstoreaccount1/cap(PartitionKey='B',RowKey='0')"
        b"\r\nETag: W/\"datetime'2026-11-25T17%3A23%3A48.3871695Z'\"\r\nContent-ID: 1\r\n"
        b"\r\n\r\n--changesetresponse_fe--\r\n--batchresponse_89--\r\n"
    )
    content_type = "multipart/mixed; boundary=batchresponse_89"
    assert change_set_outcome(content_type, body) == [
        (204, "W/\"datetime'2026-11-25T17%3A23%3A48.3871695Z'\"")
    ]
    assert change_set_outcome(content_type, body) == _general(content_type, body)


def test_heads_remembered_are_bounded() -> None:
    for i in range(200):
        content_type, body = _usual(1, [204], [str(i)])
        body = body.replace(b"Cache-Control: no-cache", b"X-%d: y" % i)
        body = body.replace(b"binary\r\n", b"binary\r\nX-%d: z\r\n" % i)
        assert change_set_outcome(content_type, body) == [(204, str(i))]
    assert len(batch_outcome._PLAIN_PART_HEADS) <= 64
    assert len(batch_outcome._PLAIN_SIGNATURES) <= 64


# --- OperationEncoder ---------------------------------------------------------------------

_KEYS = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="/\\#?\x00\x7f"),
    max_size=12,
).filter(lambda k: all(ord(c) >= 0x20 and not 0x7F <= ord(c) <= 0x9F for c in k))
_ETAGS = st.one_of(
    st.none(),
    st.just("*"),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=20),
    st.sampled_from(['W/"a\r\nb"', 'W/"é"', "x\ny"]),
)


@st.composite
def _operation(draw: st.DrawFn) -> BatchOperation:
    kind: Literal["create", "update", "upsert", "delete"] = draw(
        st.sampled_from(("create", "update", "upsert", "delete"))
    )
    entity: dict[str, Any] = {"PartitionKey": draw(_KEYS), "RowKey": draw(_KEYS)}
    if kind != "delete":
        entity["N"] = draw(st.integers(-(2**40), 2**40))
        entity["S"] = draw(st.text(max_size=10).filter(lambda s: s.isprintable()))
    mode = draw(st.sampled_from(UpdateMode)) if kind in ("update", "upsert") else None
    etag = draw(_ETAGS) if kind in ("update", "delete") else None
    return BatchOperation(kind, entity, mode=mode, etag=etag)


_UPDATED = re.compile(rb"<updated>[^<]*</updated>")  # AtomPub's stamp: the time of encoding


def _reference(encoder: OperationEncoder, op: BatchOperation) -> bytes | str:
    try:
        part = batch_part(encoder._core, encoder._table_name, op, encoder._table_url)
        return _UPDATED.sub(b"", encode_request(part))
    except (ValidationError, UnicodeEncodeError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _fast(encoder: OperationEncoder, op: BatchOperation) -> bytes | str:
    try:
        return _UPDATED.sub(b"", encoder(op))
    except (ValidationError, UnicodeEncodeError) as exc:
        return f"{type(exc).__name__}: {exc}"


_CLIENTS = [
    ("UseDevelopmentStorage=true", "movies", {}),
    ("UseDevelopmentStorage=true", "movies", {"wire_format": WireFormat.JSON_NONE}),
    ("UseDevelopmentStorage=true", "movies", {"wire_format": WireFormat.JSON_FULL}),
    ("UseDevelopmentStorage=true", "movies", {"wire_format": WireFormat.ATOM}),
    (
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=a2V5;"
        "TableEndpoint=https://a.table.cosmos.azure.com:443/;",
        "with space é",
        {"flavor": Flavor.COSMOS},
    ),
]


@pytest.mark.parametrize(("conn", "table", "options"), _CLIENTS)
@settings(max_examples=300, deadline=None)
@given(operations=st.lists(_operation(), min_size=1, max_size=5))
def test_operation_encoder_writes_the_general_bytes(
    conn: str, table: str, options: dict[str, Any], operations: list[BatchOperation]
) -> None:
    service = TableServiceClient.from_connection_string(conn, **options)
    encoder = OperationEncoder(service.get_table_client(table)._core, table)
    for op in operations:
        try:
            op = checked_operation(op, service._core.limits)
        except ValidationError:
            continue
        assert _fast(encoder, op) == _reference(encoder, op)


def test_operation_encoder_is_one_per_client() -> None:
    service = TableServiceClient.from_connection_string("UseDevelopmentStorage=true")
    table = service.get_table_client("movies")
    assert table._operation_encoder() is table._operation_encoder()
    quick = table.with_options(server_timeout=5)
    assert quick._operation_encoder() is not table._operation_encoder()
    assert quick._operation_encoder()._core is quick._core
