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
