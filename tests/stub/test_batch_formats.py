"""The ``$batch`` envelope parser's refusals, each asserted by status and code (400
InvalidInput, the service's answer to a malformed batch) and, over HTTP, with nothing
written: a header line with no ``:`` or an empty name (in MIME and inner headers, ASCII
and not), ``--boundary--x`` (not a close delimiter), and the boundary parameter as the
service's OData reader takes it (exactly one, 1 to 70 characters once unquoted, so a
quoted empty ``boundary=""`` is refused)."""

from __future__ import annotations

import json

import pytest

from azt_server_stub.errors import StubError
from azt_server_stub.formats import batch as fb

from .conftest import JSON_MINIMAL, RawClient
from .test_http_batch import envelope, request_part
from .test_http_raw import make_table

CT = "multipart/mixed; boundary=b"
INNER = "multipart/mixed; boundary=c"


def _body(
    inner_part: str, *, mime: str = "Content-Type: application/http\r\n", close: str = "--c--"
) -> bytes:
    return (
        f"--b\r\nContent-Type: {INNER}\r\n\r\n--c\r\n{mime}\r\n{inner_part}\r\n{close}\r\n--b--\r\n"
    ).encode()


GOOD = "DELETE http://h/t(PartitionKey='p',RowKey='r') HTTP/1.1\r\nIf-Match: *\r\n\r\n"


def _refused(body: bytes, content_type: str = CT) -> StubError:
    with pytest.raises(StubError) as caught:
        fb.parse_batch(body, content_type)
    assert (caught.value.status, caught.value.code) == (400, "InvalidInput")
    return caught.value


def test_the_well_formed_body_parses() -> None:
    parsed = fb.parse_batch(_body(GOOD), CT)
    assert parsed.changeset is True
    [part] = parsed.parts
    assert (part.method, part.target) == ("DELETE", "http://h/t(PartitionKey='p',RowKey='r')")
    assert part.headers["If-Match"] == "*"


@pytest.mark.parametrize(
    "line",
    [
        "If-Match *",  # no colon
        ": *",  # an empty name
        "   : *",  # a blank name
        "If-Match\t*",
    ],
)
@pytest.mark.parametrize("non_ascii", [False, True])
def test_an_inner_header_line_without_a_name_and_colon_is_refused(
    line: str, non_ascii: bool
) -> None:
    extra = "X-Note: caf\u00e9\r\n" if non_ascii else ""
    part = f"DELETE http://h/t(PartitionKey='p',RowKey='r') HTTP/1.1\r\n{extra}{line}\r\n\r\n"
    err = _refused(_body(part))
    assert err.details.get("ExceptionMessage") == "bad header line"


@pytest.mark.parametrize("line", ["Content-Type application/http", ": application/http"])
def test_a_mime_header_line_without_a_name_and_colon_is_refused(line: str) -> None:
    _refused(_body(GOOD, mime=f"{line}\r\n"))
    outer = f"--b\r\n{line}\r\n\r\n{GOOD}\r\n--b--\r\n".encode()
    _refused(outer)


def test_a_header_value_may_hold_colons_and_be_empty() -> None:
    part = (
        "DELETE http://h/t(PartitionKey='p',RowKey='r') HTTP/1.1\r\nIf-Match: a:b\r\nX-E:\r\n\r\n"
    )
    [parsed] = fb.parse_batch(_body(part), CT).parts
    assert (parsed.headers["If-Match"], parsed.headers["X-E"]) == ("a:b", "")


@pytest.mark.parametrize("close", ["--c--x", "--c--x\r\n--c--z"])
def test_boundary_dashes_then_text_is_no_close_delimiter(close: str) -> None:
    err = _refused(_body(GOOD, close=close))
    assert err.details.get("ExceptionMessage") == "missing closing boundary"


def test_boundary_dashes_then_text_inside_a_part_is_its_content() -> None:
    body = (
        b"--b\r\nContent-Type: application/http\r\n\r\n"
        b"GET http://h/t(PartitionKey='p',RowKey='r') HTTP/1.1\r\nAccept: x\r\n\r\n"
        b"--b--x\r\n--b--\r\n"
    )
    parsed = fb.parse_batch(body, CT)
    assert parsed.changeset is False
    [part] = parsed.parts
    assert part.method == "GET"
    assert part.body == b"--b--x"


@pytest.mark.parametrize("close", ["--c--", "--c-- \t", "--c--\r\nepilogue"])
def test_the_close_delimiter_with_blanks_or_an_epilogue(close: str) -> None:
    assert len(fb.parse_batch(_body(GOOD, close=close), CT).parts) == 1


@pytest.mark.parametrize(
    ("content_type", "boundary"),
    [
        ('multipart/mixed; boundary="b"', "b"),
        ("Multipart/Mixed;Boundary=b", "b"),
        ("multipart/mixed; charset=utf-8; boundary = b ", "b"),
        ("multipart/mixed; boundary=" + "x" * 70, "x" * 70),
        ('multipart/mixed; boundary="' + "x" * 70 + '"', "x" * 70),
        ('multipart/mixed; boundary=""""', '""'),
    ],
)
def test_boundaries_taken(content_type: str, boundary: str) -> None:
    assert fb.boundary_of(content_type) == boundary


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "",
        "application/json; boundary=b",
        "multipart/mixed",
        "multipart/mixed; charset=utf-8",
        "multipart/mixed; boundary=",
        'multipart/mixed; boundary=""',
        'multipart/mixed; boundary=""; boundary=b',
        "multipart/mixed; boundary=b; boundary=b",
        "multipart/mixed; boundary=" + "x" * 71,
        'multipart/mixed; boundary="' + "x" * 71 + '"',
    ],
)
def test_boundaries_refused(content_type: str | None) -> None:
    with pytest.raises(StubError) as caught:
        fb.boundary_of(content_type)
    assert (caught.value.status, caught.value.code) == (400, "InvalidInput")


async def test_a_quoted_empty_boundary_is_refused_over_http_and_nothing_is_written(
    raw: RawClient,
) -> None:
    await make_table(raw)
    base = f"{raw.base}/devstoreaccount1"
    body = envelope([request_part("POST", f"{base}/mytable", '{"PartitionKey":"p","RowKey":"1"}')])
    for content_type in (
        'multipart/mixed; boundary=""',
        "multipart/mixed; boundary=batch_b1; boundary=x",
    ):
        r = await raw.request(
            "POST",
            "/$batch",
            headers={
                "Content-Type": content_type,
                "Accept": JSON_MINIMAL,
                "DataServiceVersion": "3.0",
            },
            body=body,
        )
        assert r.status == 400, r.body
        assert r.headers["x-ms-error-code"] == "InvalidInput"
        assert json.loads(r.body)["odata.error"]["code"] == "InvalidInput"
    r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    assert r.status == 200
    assert json.loads(r.body)["value"] == []


def _change_set(part: str) -> bytes:
    return (
        f"--b\r\nContent-Type: {INNER}\r\n\r\n"
        f"--c\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        f"{part}\r\n--c--\r\n--b--\r\n"
    ).encode()


def test_an_inner_header_block_running_to_the_end_of_a_known_part() -> None:
    line = "DELETE http://h/t(PartitionKey='p',RowKey='unended') HTTP/1.1"
    known = fb.parse_batch(_change_set(f"{line}\r\nIf-Match: *\r\n\r\n"), CT).parts[0]
    assert known.headers["If-Match"] == "*"
    # the same MIME block and request line, then a header block with no empty line after
    # it: the header is read to the part's end, whatever blocks were seen before
    [part] = fb.parse_batch(_change_set(f"{line}\r\nIf-Match: *X"), CT).parts
    assert part.headers["If-Match"] == "*X"
    assert part.body == b""


def test_parts_read_the_same_once_the_length_cache_is_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fb, "_LENGTHS", {f"{9_000_000 + i}": 9_000_000 + i for i in range(4096)})
    body = '{"PartitionKey":"p","RowKey":"cache-full","v":"0123456789"}'
    part = (
        "POST http://h/t HTTP/1.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}"
    )
    first = fb.parse_batch(_change_set(part), CT).parts[0]
    again = fb.parse_batch(_change_set(part), CT).parts[0]  # the remembered blocks' path
    assert first.body == again.body == body.encode()
    assert str(len(body)) not in fb._LENGTHS


def _twice(part: str) -> fb.BatchPart:
    """``part`` parsed in a change set twice (the second time from remembered blocks, where
    they were remembered): both readings must agree."""
    first = fb.parse_batch(_change_set(part), CT).parts[0]
    again = fb.parse_batch(_change_set(part), CT).parts[0]
    assert (again.method, again.target, dict(again.headers), again.body) == (
        first.method,
        first.target,
        dict(first.headers),
        first.body,
    )
    return again


def test_a_part_whose_body_holds_an_empty_line_reads_the_same_twice() -> None:
    part = _twice(
        "POST http://h/t HTTP/1.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 7\r\n\r\n{}\r\n\r\nX"
    )
    assert part.body == b"{}\r\n\r\nX"
    assert part.headers["Content-Type"] == "application/json"


def test_a_request_line_ended_by_a_bare_lf_reads_the_same_twice() -> None:
    part = _twice(
        "DELETE http://h/t(PartitionKey='p',RowKey='lf') HTTP/1.1\nIf-Match: *\r\nX-A: 1\r\n\r\n"
    )
    assert (part.headers["If-Match"], part.headers["X-A"]) == ("*", "1")


def test_a_known_part_whose_content_length_passes_its_end_is_refused() -> None:
    head = (
        "POST http://h/t HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 41\r\n\r\n"
    )
    body = '{"PartitionKey":"p","RowKey":"long-one"}'
    assert len(body) == 40
    fb.parse_batch(_change_set(head + body + " "), CT)  # remembers the blocks
    err = _refused(_change_set(head + body))
    assert err.details.get("ExceptionMessage") == "Content-Length beyond the part"
    err = _refused(_change_set(head + "{}"))
    assert err.details.get("ExceptionMessage") == "Content-Length beyond the part"


def test_a_mime_block_ended_by_a_bare_empty_line_reads_the_same_twice() -> None:
    # the MIME block ends at "\n\n"; the first CRLF CRLF is further, after the inner
    # headers: nothing of this part may be remembered as if its MIME block ended there
    blob = (
        b"--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n--c\r\n"
        b"Content-Type: application/http\n\n"
        b"DELETE http://h/t(PartitionKey='p',RowKey='bare') HTTP/1.1\r\nIf-Match: *\r\n\r\n"
        b"X\r\n\r\nY\r\n--c--\r\n--b--\r\n"
    )
    for _ in range(2):
        [part] = fb.parse_batch(blob, CT).parts
        assert (part.method, part.headers["If-Match"]) == ("DELETE", "*")
        assert part.body == b"X\r\n\r\nY"


def test_a_request_line_with_a_bare_lf_leaves_no_block_behind() -> None:
    plain = "DELETE http://h/t(PartitionKey='p',RowKey='p434') HTTP/1.1\r\nX-Unique: 434\r\n\r\n"
    bare = (
        "DELETE http://h/t(PartitionKey='p',RowKey='b434') HTTP/1.1\nIf-Match: *\r\n"
        "X-Unique: 434\r\n\r\n"
    )
    other = (
        "DELETE http://h/t(PartitionKey='p',RowKey='o434') HTTP/1.1\nIf-None-Match: *\r\n"
        "X-Unique: 434\r\n\r\n"
    )
    first = fb.parse_batch(_change_set(plain), CT).parts[0]
    assert dict(first.headers) == {"X-Unique": "434"}
    for _ in range(2):
        for text, headers in ((bare, {"If-Match": "*"}), (other, {"If-None-Match": "*"})):
            part = fb.parse_batch(_change_set(text), CT).parts[0]
            assert dict(part.headers) == {**headers, "X-Unique": "434"}
    again = fb.parse_batch(_change_set(plain), CT).parts[0]
    assert dict(again.headers) == {"X-Unique": "434"}


def test_an_unended_request_line_is_refused_whatever_was_seen_before() -> None:
    line = "DELETE http://h/t(PartitionKey='p',RowKey='unended-line') HTTP/1.1"
    # an inner header block that happens to read like the MIME block without its first byte
    fb.parse_batch(
        _change_set(
            f"{line}\r\nontent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        ),
        CT,
    )
    err = _refused(_change_set(f"{line}Z"))
    assert err.details.get("ExceptionMessage") == "missing request line"


def test_a_request_line_ended_by_the_part_leaves_no_block_behind() -> None:
    line = "DELETE http://h/t(PartitionKey='p',RowKey='lf-end') HTTP/1.1"
    odd = "ontent-Type: application/http\r\nContent-Transfer-Encoding: binary"
    with_block = f"{line}\r\n{odd}\r\n\r\n"
    expected = {"ontent-Type": "application/http", "Content-Transfer-Encoding": "binary"}
    assert dict(fb.parse_batch(_change_set(with_block), CT).parts[0].headers) == expected
    # the same request line ended by LF, the part's last byte: no CRLF after the MIME block
    [bare] = fb.parse_batch(_change_set(f"{line}\n"), CT).parts
    assert (bare.method, dict(bare.headers), bare.body) == ("DELETE", {}, b"")
    assert dict(fb.parse_batch(_change_set(with_block), CT).parts[0].headers) == expected


def test_parts_of_one_remembered_header_block_share_its_read_only_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Parts read from one remembered inner header block share one read-only headers
    object (made once per block, not once per part), holding every line in order, a
    repeated name included; another block has its own, and a part without headers an
    empty one."""
    for cache in ("_STRICT_MIME", "_STRICT_BLOCKS", "_REQUEST_LINES"):
        monkeypatch.setattr(fb, cache, {})  # (bounded: others' tests may have filled them)
    mime = "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
    block = "If-Match: *\r\nX-A: 1\r\nx-a: 2\r\n"
    parts = [
        f"DELETE http://h/t(PartitionKey='p',RowKey='{rk}') HTTP/1.1\r\n{head}\r\n"
        for rk, head in (("s1", block), ("s2", block), ("s3", 'If-Match: W/"x"\r\n'), ("s4", ""))
    ]
    body = (
        f"--b\r\nContent-Type: {INNER}\r\n\r\n"
        + "".join(f"--c\r\n{mime}{part}\r\n" for part in parts)
        + "--c--\r\n--b--\r\n"
    ).encode()
    fb.parse_batch(body, CT)  # the blocks remembered
    first, second, third, fourth = fb.parse_batch(body, CT).parts
    assert first.headers is second.headers
    assert first.block is second.block
    assert list(first.headers.items()) == [("If-Match", "*"), ("X-A", "1"), ("x-a", "2")]
    assert first.headers.getall("X-A") == ["1", "2"]
    with pytest.raises(TypeError):
        first.headers["X-B"] = "3"  # type: ignore[index]
    assert list(first.headers.items()) == [("If-Match", "*"), ("X-A", "1"), ("x-a", "2")]
    assert third.headers is not first.headers
    assert dict(third.headers) == {"If-Match": 'W/"x"'}
    assert len(fourth.headers) == 0
    assert fourth.target.endswith("RowKey='s4')")
