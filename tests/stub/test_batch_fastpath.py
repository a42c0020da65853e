"""The ``$batch`` fast path does what the straightforward code did.

The envelope parser and the response encoder were restructured for speed (text
splitting instead of a regex search per header block, a cached status line, one
encode per part). Each fast piece is compared here with the code it replaced, kept
below as the reference, on generated input: the same result, or the same error.
The handler's per-batch memo (resources, formats, version headers, ETags) is checked
end to end: a part that differs from the others still gets its own answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from http import HTTPStatus
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from multidict import CIMultiDict

from azt_server_stub import errors
from azt_server_stub.auth import Operation, Principal
from azt_server_stub.backend import WriteOp, WriteResult
from azt_server_stub.errors import StubError
from azt_server_stub.formats import batch as fb
from azt_server_stub.formats import json as jf
from azt_server_stub.formats.negotiation import Fmt
from azt_server_stub.handlers import batch as hb
from azt_server_stub.handlers.entities import entity_location
from azt_server_stub.model import Entity, etag_for

from .conftest import JSON_MINIMAL, JSON_NONE, RawClient, RawResponse
from .test_http_batch import envelope, parts_of, post_batch, request_part
from .test_http_raw import make_table

# --- the reference: the code the fast path replaced --------------------------------------

_REF_HEADER_END = re.compile(rb"\r?\n\r?\n")
_REF_REQUEST_LINE = re.compile(rb"([^\r\n]*)\r?\n")


def ref_headers_and_rest(blob: bytes) -> tuple[CIMultiDict[str], bytes]:
    if blob.startswith(b"\r\n"):
        return CIMultiDict(), blob[2:]
    if blob.startswith(b"\n"):
        return CIMultiDict(), blob[1:]
    m = _REF_HEADER_END.search(blob)
    if m is None:
        head, rest = blob, b""
    else:
        head, rest = blob[: m.start()], blob[m.end() :]
    headers: CIMultiDict[str] = CIMultiDict()
    for line in head.split(b"\n"):
        line = line.rstrip(b"\r")
        if not line:
            continue
        name, sep, value = line.partition(b":")
        if not sep or not name.strip():
            raise fb._malformed("bad header line")
        try:
            headers.add(name.strip().decode("ascii"), value.strip().decode("utf-8"))
        except UnicodeDecodeError:
            raise fb._malformed("bad header encoding") from None
    return headers, rest


def ref_http_part(mime_headers: CIMultiDict[str], blob: bytes) -> fb.BatchPart:
    if fb._content_type(mime_headers) != "application/http":
        raise fb._malformed("part is not application/http")
    m = _REF_REQUEST_LINE.match(blob)
    if m is None:
        raise fb._malformed("missing request line")
    try:
        line = m.group(1).decode("utf-8").strip()
    except UnicodeDecodeError:
        raise fb._malformed("bad request line") from None
    pieces = line.split(" ")
    if len(pieces) != 3 or not pieces[2].startswith("HTTP/"):
        raise fb._malformed("bad request line")
    method, target = pieces[0].upper(), pieces[1]
    headers, rest = ref_headers_and_rest(blob[m.end() :])
    length_text = headers.get("Content-Length")
    if length_text is not None:
        if not length_text.strip().isdigit():
            raise fb._malformed("bad Content-Length")
        length = int(length_text.strip())
        if length > len(rest):
            raise fb._malformed("Content-Length beyond the part")
        body = rest[:length]
    else:
        body = rest if rest.strip() else b""
    content_id = mime_headers.get("Content-ID") or headers.get("Content-ID")
    return fb.BatchPart(method, target, headers, body, content_id)


def ref_parse_batch(body: bytes, content_type: str | None) -> fb.ParsedBatch:
    outer = fb._split(body, fb.boundary_of(content_type))
    if len(outer) != 1:
        raise fb._malformed("a batch must hold exactly one change set or one query")
    mime_headers, rest = ref_headers_and_rest(outer[0])
    ctype = mime_headers.get("Content-Type")
    if fb._content_type(mime_headers) == "multipart/mixed":
        inner = fb._split(rest, fb.boundary_of(ctype))
        parts = []
        for blob in inner:
            part_headers, part_rest = ref_headers_and_rest(blob)
            parts.append(ref_http_part(part_headers, part_rest))
        for p in parts:  # (an empty change set is answered, as the service does)
            if p.method == "GET":
                raise fb._malformed("a query cannot be part of a change set")
        return fb.ParsedBatch(parts, changeset=True)
    part = ref_http_part(mime_headers, rest)
    if part.method != "GET":
        raise fb._malformed("write operations must be inside a change set")
    return fb.ParsedBatch([part], changeset=False)


def ref_part_bytes(resp: fb.PartResponse) -> bytes:
    try:
        reason = HTTPStatus(resp.status).phrase
    except ValueError:
        reason = "Unknown"
    lines = [
        b"Content-Type: application/http",
        b"Content-Transfer-Encoding: binary",
        b"",
        f"HTTP/1.1 {resp.status} {reason}".encode("ascii"),
    ]
    lines.extend(f"{name}: {value}".encode() for name, value in resp.headers)
    lines.append(b"")
    return b"\r\n".join(lines) + b"\r\n" + resp.body + b"\r\n"


# --- comparing ----------------------------------------------------------------------------


def outcome(fn: Callable[..., object], *args: object) -> object:
    """What a call did: ("ok", comparable result) or ("error", status, code, details)."""
    try:
        result = fn(*args)
    except StubError as exc:
        return ("error", exc.status, exc.code, dict(exc.details))
    return ("ok", comparable(result))


def comparable(value: object) -> object:
    if isinstance(value, CIMultiDict):
        return list(value.items())
    if isinstance(value, fb.BatchPart):
        headers = list(value.headers.items())
        return (value.method, value.target, headers, value.body, value.content_id)
    if isinstance(value, fb.ParsedBatch):
        return (value.changeset, [comparable(p) for p in value.parts])
    if isinstance(value, tuple):
        return tuple(comparable(v) for v in value)
    return value


# Bytes that matter to the parser: line ends, separators, blanks of every kind
# (bytes.strip and str.strip disagree on \x1c-\x1f and \x85), non-ASCII, letters.
_EDGE = [b"\r", b"\n", b"\r\n", b":", b" ", b"\t", b"\x0b", b"\x0c", b"\x1f", b"\x85"]
_EDGE += [b"\xc3\xa9", b"\xff", b"a", b"Content-Length", b"Content-ID", b"5", b"HTTP/1.1"]
chunks = hs.lists(hs.sampled_from(_EDGE) | hs.binary(max_size=4), max_size=30).map(b"".join)

header_name = hs.sampled_from(["Accept", "Content-Type", "Prefer", "If-Match", "X-Y", "a b"])
header_value = hs.text(
    alphabet=hs.sampled_from(list("abc ;=/\t:\x0b\x0c\x1f\x85\u00e9\r")), max_size=12
)
line_end = hs.sampled_from(["\r\n", "\n", "\r\r\n"])


@hs.composite
def header_blocks(draw: hs.DrawFn) -> bytes:
    """A header block in the shapes clients send, with odd blanks and line ends."""
    lines = draw(hs.lists(hs.tuples(header_name, header_value, line_end), max_size=6))
    text = "".join(f"{n}:{v}{e}" for n, v, e in lines)
    text += draw(hs.sampled_from(["\r\n", "\n", "", "\r\n\r\n", "\n\r\n"]))
    return text.encode("utf-8") + draw(hs.sampled_from([b"", b"{}", b"body\r\n\r\nmore"]))


@settings(max_examples=400, deadline=None)
@given(hs.one_of(chunks, header_blocks()))
def test_header_blocks_parse_as_before(blob: bytes) -> None:
    assert outcome(fb._headers_and_rest, blob) == outcome(ref_headers_and_rest, blob)


@settings(max_examples=300, deadline=None)
@given(chunks, hs.sampled_from(["application/http", "application/http; x=1", "text/plain"]))
def test_http_parts_parse_as_before(blob: bytes, ctype: str) -> None:
    mime: CIMultiDict[str] = CIMultiDict({"Content-Type": ctype})
    assert outcome(fb._http_part, mime, blob) == outcome(ref_http_part, mime, blob)


@hs.composite
def batch_bodies(draw: hs.DrawFn) -> bytes:
    """Change sets of generated parts; sometimes with bytes mutated anywhere."""
    nl = draw(hs.sampled_from(["\r\n", "\n"]))
    parts = []
    for i in range(draw(hs.integers(0, 4))):
        method = draw(hs.sampled_from(["POST", "PUT", "MERGE", "DELETE", "GET", "post"]))
        body = draw(hs.sampled_from(["", f'{{"PartitionKey":"p","RowKey":"{i}"}}', "x\r\n"]))
        headers = dict(draw(hs.lists(hs.tuples(header_name, header_value), max_size=3)))
        if draw(hs.booleans()):
            headers["Content-ID"] = str(i)
        part = request_part(method, f"/acct/t{i}", body, headers, nl=nl)
        if draw(hs.booleans()):  # no Content-Length: the body runs to the boundary
            part = re.sub(r"Content-Length: \d+\r?\n", "", part)
        parts.append(part)
    raw = envelope(parts, nl=nl).encode("utf-8")
    for _ in range(draw(hs.integers(0, 3))):
        at = draw(hs.integers(0, len(raw)))
        raw = raw[:at] + draw(hs.sampled_from(_EDGE)) + raw[at + 1 :]
    return raw


@settings(max_examples=300, deadline=None)
@given(batch_bodies())
def test_batches_parse_as_before(body: bytes) -> None:
    ctype = "multipart/mixed; boundary=batch_b1"
    assert outcome(fb.parse_batch, body, ctype) == outcome(ref_parse_batch, body, ctype)


_MIME_BLOCKS = [
    "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: {i}",
    "Content-Type: application/http\r\nContent-Transfer-Encoding: binary",
    "content-type: Application/HTTP; x=1\r\nContent-ID:  {i} ",
    "Content-Type: text/plain",
    "Content-Type: application/http\r\n\r\nX: y",
    "\r\nContent-Type: application/http",
    "Content-Type: application/http\nContent-ID: {i}",
    "Content-Type: application/http\r\nA\r: b",
    "Content-Type: application/http\r\nnot a header",
    "Content-Type: application/http\r\nX-\u00e9: \u00e9",
]
_REQUEST_LINES = [
    "POST http://h/acct/t HTTP/1.1",
    "post /acct/t() HTTP/1.0",
    "MERGE http://h/acct/t(PartitionKey='p',RowKey='{i}') HTTP/1.1",
    "DELETE /acct/t HTTP/1.1 x",
    "PUT /acct/t\u00e9 HTTP/1.1",
    "PUT /acct/t HTTPS/1.1",
    " POST /acct/t HTTP/1.1 ",
    "POST\t/acct/t HTTP/1.1",
    "POST /acct/t HTTP/1.1\r",
    "POST  /acct/t HTTP/1.1",
]


def _mostly(draw: hs.DrawFn, choices: list[str], usual: int) -> str:
    """One of the first ``usual`` choices three times in four, else any."""
    if draw(hs.integers(0, 3)) == 0:
        return draw(hs.sampled_from(choices))
    return draw(hs.sampled_from(choices[:usual]))


@hs.composite
def change_set_parts(draw: hs.DrawFn) -> bytes:
    """One part between change-set delimiters: mostly the strict CRLF form clients send,
    with repeated blocks (Content-IDs from a few), odd blocks, lines and bodies, and bytes
    mutated anywhere."""
    i = draw(hs.integers(0, 3))
    mime = _mostly(draw, _MIME_BLOCKS, 3).format(i=i)
    line = _mostly(draw, _REQUEST_LINES, 3).format(i=i)
    usual = [[], [("Prefer", "return-no-content")], [("Accept", "a/b"), ("X-Y", "1"), ("x-y", "2")]]
    headers = draw(hs.sampled_from(usual))
    if draw(hs.integers(0, 3)) == 0:
        headers = draw(hs.lists(hs.tuples(header_name, header_value), max_size=3))
    body = draw(hs.sampled_from(["", '{"PartitionKey":"p","RowKey":"r"}', "x\r\n\r\ny", " \r\n"]))
    inner = [f"{n}: {v}" for n, v in headers]
    length = _mostly(draw, ["exact", "none", "short", "long", "bad"], 2)
    size = len(body.encode())
    if length != "none":
        value = {"exact": size, "short": max(0, size - 1), "long": size + 1, "bad": "1x"}[length]
        inner.append(f"Content-Length: {value}")
    text = mime + "\r\n\r\n" + line + "\r\n" + "".join(h + "\r\n" for h in inner) + "\r\n"
    raw = (text + body).encode("utf-8")
    for _ in range(draw(hs.sampled_from([0, 0, 0, 0, 1, 2]))):
        at = draw(hs.integers(0, len(raw)))
        raw = raw[:at] + draw(hs.sampled_from(_EDGE)) + raw[at + 1 :]
    return raw


def ref_change_set_part(blob: bytes) -> fb.BatchPart:
    headers, rest = ref_headers_and_rest(blob)
    return ref_http_part(headers, rest)


@settings(max_examples=1500, deadline=None)
@given(change_set_parts(), hs.booleans())
def test_change_set_parts_read_as_before(blob: bytes, twice: bool) -> None:
    """A change-set part read by the lookups of what was read before (a part's blocks and
    request line seen again) or the general way, as the reference reads it; the same
    again once it was read (what a first reading remembered serves the second)."""
    expected = outcome(ref_change_set_part, blob)
    assert outcome(fb._change_set_part, blob) == expected
    assert outcome(fb._change_set_part, blob) == expected
    if twice:  # the same part under another Content-Length value or body
        other = blob.replace(b"Content-Length: ", b"Content-Length: 1", 1) + b"z"
        assert outcome(fb._change_set_part, other) == outcome(ref_change_set_part, other)


@hs.composite
def multipart_bodies(draw: hs.DrawFn) -> tuple[bytes, str]:
    """Multipart bodies in the strict form (CRLF delimiter lines) and near it: parts that
    hold the boundary text, bare LF, blanks after a delimiter, epilogues, self-overlapping
    boundaries, bytes mutated anywhere."""
    boundary = draw(hs.sampled_from(["b1", "changeset_x", "-", "--a", "a-a", "b"]))
    content = hs.lists(
        hs.sampled_from(["x", "\r\n", "\n", "--", boundary, "--" + boundary, " ", "\r"]),
        max_size=6,
    ).map("".join)
    parts = draw(hs.lists(content, max_size=4))
    delim = "--" + boundary
    text = draw(hs.sampled_from(["", "preamble\r\n"])) + delim + "\r\n"
    text += ("\r\n" + delim + "\r\n").join(parts)
    text += "\r\n" + delim + draw(hs.sampled_from(["--", "--\r\n", "--\r\nepi", "-- \r\n", ""]))
    raw = text.encode("latin-1")
    for _ in range(draw(hs.sampled_from([0, 0, 0, 1, 2]))):
        at = draw(hs.integers(0, len(raw)))
        raw = (
            raw[:at]
            + draw(hs.sampled_from([b"\r", b"\n", b"-", b"\r\n", b" ", b""]))
            + raw[at + 1 :]
        )
    return raw, boundary


@settings(max_examples=1500, deadline=None)
@given(multipart_bodies())
def test_strict_multipart_bodies_split_as_the_general_reading(case: tuple[bytes, str]) -> None:
    """Whenever the one-split reading answers, the general reading gives the same parts."""
    body, boundary = case
    delim = b"--" + boundary.encode("latin-1")
    strict = fb._split_strict(body, delim)
    general = outcome(fb._split_general, body, delim)
    if strict is not None:
        assert general == ("ok", strict)
    assert outcome(fb._split, body, boundary) == general


def test_the_azt_envelope_parses_as_before() -> None:
    """The shape the benchmarks send: 100 JSON inserts with absolute URLs, CRLF."""
    parts = [
        request_part(
            "POST",
            "http://127.0.0.1:10002/devstoreaccount1/t",
            json.dumps({"PartitionKey": "p", "RowKey": f"{i:04d}", "N": i, "S": "\u00e9" * i}),
            {"Prefer": "return-no-content", "DataServiceVersion": "3.0"},
        )
        for i in range(100)
    ]
    body = envelope(parts).encode("utf-8")
    ctype = "multipart/mixed; boundary=batch_b1"
    fast = outcome(fb.parse_batch, body, ctype)
    assert isinstance(fast, tuple)
    assert fast[0] == "ok"
    assert fast == outcome(ref_parse_batch, body, ctype)


part_headers = hs.lists(
    hs.tuples(
        hs.sampled_from(["ETag", "Location", "Content-ID", "DataServiceVersion"]),
        hs.text(max_size=20).filter(lambda t: not any(0xD800 <= ord(c) < 0xE000 for c in t)),
    ),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(
    hs.sampled_from([200, 201, 202, 204, 400, 404, 409, 412, 413, 500, 599, 999]),
    part_headers,
    hs.binary(max_size=40),
)
def test_response_parts_encode_as_before(
    status: int, headers: list[tuple[str, str]], body: bytes
) -> None:
    resp = fb.PartResponse(status, headers, body)
    assert fb._part_bytes(resp) == ref_part_bytes(resp)


def test_whole_responses_encode_as_before() -> None:
    responses = [
        fb.PartResponse(204, [("ETag", 'W/"x"'), ("Content-ID", str(i))]) for i in range(100)
    ]
    responses.append(fb.PartResponse(201, [("Content-Type", "application/json")], b"{}"))
    ctype, body = fb.build_response(responses, changeset=True)
    batch_b = ctype.split("boundary=")[1].encode()
    cs_b = re.search(rb"boundary=(changesetresponse_[0-9a-f-]{36})", body)
    assert cs_b is not None
    expected = b"--" + batch_b + b"\r\nContent-Type: multipart/mixed; boundary=" + cs_b[1]
    expected += b"\r\n\r\n"
    for resp in responses:
        expected += b"--" + cs_b[1] + b"\r\n" + ref_part_bytes(resp)
    expected += b"--" + cs_b[1] + b"--\r\n--" + batch_b + b"--\r\n"
    assert body == expected


@settings(max_examples=200, deadline=None)
@given(
    hs.lists(
        hs.sampled_from(["HTTP/1.1 204 No Content\r\n\r\n\r\n", "\u00e9\r\n", "", "x" * 70]),
        max_size=5,
    ),
    hs.booleans(),
)
def test_text_parts_encode_as_their_bytes(texts: list[str], changeset: bool) -> None:
    """Parts given as text (all of them: one join) or some as text: the body the same
    parts give as bytes, but for the boundaries."""

    def masked(result: tuple[str, bytes]) -> tuple[str, bytes]:
        ctype, body = result
        pattern = rb"(batch|changeset)response_[0-9a-f-]{36}"
        return re.sub(r"batchresponse_[0-9a-f-]{36}", "B", ctype), re.sub(pattern, b"B", body)

    as_bytes: list[fb.PartResponse | bytes | str] = [t.encode() for t in texts]
    expected = masked(fb.build_response(as_bytes, changeset=changeset))
    as_text: list[fb.PartResponse | bytes | str] = list(texts)
    assert masked(fb.build_response(as_text, changeset=changeset)) == expected
    mixed: list[fb.PartResponse | bytes | str] = [
        t if i % 2 else t.encode() for i, t in enumerate(texts)
    ]
    assert masked(fb.build_response(mixed, changeset=changeset)) == expected


def ref_loads_object(body: bytes) -> dict[str, object]:
    """``loads_object`` as it was: ``json.loads`` with the options, one decoder per call."""
    try:
        value = json.loads(body, object_pairs_hook=jf._pairs_hook, parse_constant=jf._no_constants)
    except jf._Duplicate:
        raise errors.duplicate_properties_specified() from None
    except (ValueError, RecursionError):
        raise errors.invalid_input() from None
    if not isinstance(value, dict):
        raise errors.invalid_input()
    return value


json_values = hs.recursive(
    hs.none() | hs.booleans() | hs.integers() | hs.floats() | hs.text(max_size=5),
    lambda inner: hs.lists(inner, max_size=3) | hs.dictionaries(hs.text(max_size=3), inner),
    max_leaves=8,
)


@hs.composite
def json_bodies(draw: hs.DrawFn) -> bytes:
    """JSON texts (objects mostly) in the encodings json.loads detects, some broken."""
    text = json.dumps(draw(json_values), ensure_ascii=draw(hs.booleans()))
    if draw(hs.booleans()):  # a duplicate member
        text = text.replace("{", '{"a":1,"a":2,', 1)
    text += draw(hs.sampled_from(["", " ", "\r\n\t ", "\x0c", " x", "\u00a0", "{}", "\n]"]))
    encoding = draw(hs.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"]))
    raw = text.encode(encoding, "surrogatepass")
    if draw(hs.booleans()):
        at = draw(hs.integers(0, len(raw)))
        raw = raw[:at] + draw(hs.sampled_from([b"\xff", b"{", b"NaN", b"\x00", b""])) + raw[at:]
    return raw


@settings(max_examples=400, deadline=None)
@given(json_bodies())
def test_json_bodies_decode_as_before(body: bytes) -> None:
    assert outcome(jf.loads_object, body) == outcome(ref_loads_object, body)


# --- the handler's per-batch memo ----------------------------------------------------------


async def test_parts_that_differ_from_the_rest_get_their_own_answers(raw: RawClient) -> None:
    await make_table(raw)
    base = f"{raw.base}/devstoreaccount1"
    parts = []
    for i in range(6):
        accept = JSON_NONE if i == 4 else JSON_MINIMAL
        target = f"{base}/mytable" if i != 2 else "/devstoreaccount1/mytable"
        parts.append(
            request_part(
                "POST", target, f'{{"PartitionKey":"p","RowKey":"{i}"}}', {"Accept": accept}
            )
        )
    r = await post_batch(raw, envelope(parts))
    assert r.status == 202, r.body
    answers = parts_of(r.body)
    assert [a[0] for a in answers] == [201] * 6
    assert [json.loads(a[2])["RowKey"] for a in answers] == [str(i) for i in range(6)]
    assert ["odata.metadata" in json.loads(a[2]) for a in answers] == [
        True,
        True,
        True,
        True,
        False,
        True,
    ]
    etags = {a[1]["ETag"] for a in answers}
    assert len(etags) == 1  # one Timestamp for the change set, one ETag


async def test_a_bad_version_header_late_in_a_batch_fails_at_its_index(raw: RawClient) -> None:
    await make_table(raw)
    base = f"{raw.base}/devstoreaccount1"
    parts = [
        request_part(
            "POST",
            f"{base}/mytable",
            f'{{"PartitionKey":"p","RowKey":"{i}"}}',
            {"DataServiceVersion": "9.0" if i == 3 else "3.0"},
        )
        for i in range(5)
    ]
    r = await post_batch(raw, envelope(parts))
    assert r.status == 202, r.body
    [(status, _, payload)] = parts_of(r.body)
    assert status == 400
    error = json.loads(payload)["odata.error"]
    assert error["code"] == "InvalidHeaderValue"
    assert error["message"]["value"].startswith("3:")
    assert no_rows(await raw.request("GET", "/mytable()", headers={"Accept": JSON_NONE}))


async def test_a_part_addressing_another_account_fails_at_its_index(raw: RawClient) -> None:
    await make_table(raw)
    base = f"{raw.base}/devstoreaccount1"
    parts = [
        request_part(
            "POST",
            f"{base}/mytable" if i != 2 else f"{raw.base}/otheraccount/mytable",
            f'{{"PartitionKey":"p","RowKey":"{i}"}}',
        )
        for i in range(4)
    ]
    r = await post_batch(raw, envelope(parts))
    [(status, _, payload)] = parts_of(r.body)
    assert status == 400
    assert json.loads(payload)["odata.error"]["message"]["value"].startswith("2:")


def no_rows(response: RawResponse) -> bool:
    return response.status == 200 and not response.json()["value"]


def test_a_content_length_between_unicode_blanks_is_read_not_a_crash() -> None:
    """``str.strip`` takes \\x1f off the value the digit check sees; ``int`` did not (500)."""
    part = request_part("POST", "/acct/t", '{"PartitionKey":"p","RowKey":"0"}', {}, nl="\n")
    part = re.sub(r"Content-Length: (\d+)", "Content-Length:\x1f\\1\x1f", part)
    body = envelope([part], nl="\n").encode()
    parsed = fb.parse_batch(body, "multipart/mixed; boundary=batch_b1")
    assert parsed.parts[0].body == b'{"PartitionKey":"p","RowKey":"0"}'


# --- the answers of change-set parts ---------------------------------------------------------


def ref_insert_answer(
    endpoint: str, table: str, op: WriteOp, etag: str, cid: tuple[str | None, str | None]
) -> bytes:
    """A no-content insert's part as ``_batch_success`` built it: a PartResponse, encoded."""
    location = entity_location(endpoint, table, op.pk, op.rk)
    headers = [
        ("Cache-Control", "no-cache"),
        ("X-Content-Type-Options", "nosniff"),
        ("Preference-Applied", "return-no-content"),
        ("DataServiceVersion", "3.0;"),
        ("Location", location),
        ("DataServiceId", location),
        ("ETag", etag),
    ]
    lead, tail = cid
    if lead is not None:  # Storage's echo of an inner Content-ID: first
        headers.insert(0, ("Content-ID", lead))
    if tail is not None:  # Cosmos's numbering: last
        headers.append(("Content-ID", tail))
    return ref_part_bytes(fb.PartResponse(204, headers))


key_texts = hs.text(alphabet=hs.sampled_from(["a", "'", " ", "é", "\U0001f600", "%", "\x7f"]))


@settings(max_examples=300, deadline=None)
@given(
    hs.sampled_from(
        ["http://127.0.0.1:10002/devstoreaccount1", "https://a.table.core.windows.net"]
    ),
    hs.sampled_from(["t", "Tablé", "mytable"]),
    key_texts,
    key_texts,
    hs.integers(0, 3_155_378_975_999_999_999),
    hs.tuples(hs.none() | hs.text(max_size=4), hs.none() | hs.text(max_size=4)),
)
def test_no_content_inserts_answer_as_before(
    endpoint: str, table: str, pk: str, rk: str, ticks: int, cid: tuple[str | None, str | None]
) -> None:
    call: Any = SimpleNamespace(endpoint=endpoint, account="devstoreaccount1")
    op = WriteOp("insert", pk, rk)
    result = WriteResult(Entity(pk, rk, ticks), created=True)
    answer = hb._batch_success(call, table, op, False, Fmt.MINIMAL, cid, result.entity, hb._Memo())
    encoded = answer if isinstance(answer, bytes) else fb._part_bytes(answer)
    assert encoded == ref_insert_answer(endpoint, table, op, etag_for(ticks), cid)


def test_parts_given_encoded_sit_in_the_response_as_parts_given_as_responses() -> None:
    responses = [
        fb.PartResponse(204, [("ETag", 'W/"x"'), ("Content-ID", str(i))]) for i in range(4)
    ]
    mixed: list[fb.PartResponse | bytes] = [
        fb._part_bytes(r) if i % 2 else r for i, r in enumerate(responses)
    ]
    for changeset in (True, False):
        _, plain = fb.build_response(responses, changeset=changeset)
        _, encoded = fb.build_response(mixed, changeset=changeset)
        boundaries = re.findall(rb"(?:batch|changeset)response_[0-9a-f-]{36}", plain)
        for old, new in zip(
            boundaries,
            re.findall(rb"(?:batch|changeset)response_[0-9a-f-]{36}", encoded),
            strict=True,
        ):
            encoded = encoded.replace(new, old)
        assert encoded == plain


@pytest.mark.parametrize("scheme", ["SharedKey", "SharedKeyLite", "Bearer"])
def test_an_unrestricted_principal_is_refused_nothing(scheme: str) -> None:
    """The change-set loop skips authorize/check_key for such a principal: they never refuse."""
    principal = Principal("devstoreaccount1", scheme)
    assert principal.unrestricted
    for op in Operation:
        for table in (None, "t", "Other"):
            principal.authorize(op, table)
    for pk, rk in (("", ""), ("p", "r"), ("\U0001f600", "z" * 1024)):
        principal.check_key(pk, rk)
    assert not Principal("devstoreaccount1", scheme, secondary=True).unrestricted


@settings(max_examples=400, deadline=None)
@given(
    hs.sampled_from([b"", b"Content-ID: 7\r\n", b"Content-ID:\r\n", b"content-id: a\n"]),
    hs.one_of(chunks, header_blocks()),
    hs.booleans(),
)
def test_mime_heads_read_as_header_blocks(cid: bytes, blob: bytes, twice: bool) -> None:
    """A part's MIME block: the media type and Content-ID its header dictionary gives,
    the same rest; the same again when the block was seen before."""

    def ref(blob: bytes) -> tuple[str, str | None, bytes]:
        headers, rest = ref_headers_and_rest(blob)
        return fb._content_type(headers), headers.get("Content-ID"), rest

    blob = cid + blob
    if twice:
        outcome(fb._mime_head, blob)
    assert outcome(fb._mime_head, blob) == outcome(ref, blob)
