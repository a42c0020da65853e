"""Answers whose headers stay text (lined.py): the same headers, and the same bytes, as a
``web.Response`` built with them.

tests/stub/test_front.py sends such answers (inserts answered ``204``, deletes) through
the front end and through aiohttp's own writer, which reads the headers as a mapping, and
compares the bytes; these tests hold the parts to the same rules one by one.
"""

from __future__ import annotations

import logging
import re

import pytest
from aiohttp import web
from aiohttp.http import HttpVersion10, HttpVersion11
from aiohttp.http_parser import RawRequestMessage
from aiohttp.test_utils import make_mocked_request
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from azt_server_stub import lined as lined_module
from azt_server_stub.explorer.live import RecentRequests, RecordingAccessLogger
from azt_server_stub.front_render import render, render_lined
from azt_server_stub.handlers.call import no_content
from azt_server_stub.lined import LinedResponse

HEADERS = [
    ("Cache-Control", "no-cache"),
    ("X-Content-Type-Options", "nosniff"),
    ("Location", "http://127.0.0.1:10002/devstoreaccount1/t(PartitionKey='p',RowKey='a: b')"),
    ("ETag", "W/\"datetime'2026-11-29T19%3A00%3A00.1234567Z'\""),
]
APPENDED = [
    ("x-ms-request-id", "0f0e2c1a-0000-0000-0000-000000000000"),
    ("x-ms-version", "2019-02-02"),
    ("Server", "Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0"),
]


def lined(status: int = 204, headers: list[tuple[str, str]] = HEADERS) -> LinedResponse:
    return LinedResponse(status, "\r\n".join(f"{name}: {value}" for name, value in headers))


def message(version: object = HttpVersion11, *, close: bool = False) -> RawRequestMessage:
    return RawRequestMessage(
        "POST",
        "/devstoreaccount1/t",
        version,  # type: ignore[arg-type]
        CIMultiDictProxy(CIMultiDict()),
        (),
        close,
        None,
        False,
        False,
        URL("/devstoreaccount1/t"),
    )


def text_of(response: LinedResponse) -> str | None:
    """The response's text (a call: each read is the attribute's state at that moment)."""
    return response.lines


def _date_masked(head: bytes) -> bytes:
    return re.sub(rb"Date: [^\r]*", b"Date: <date>", head)


def test_the_headers_read_as_a_mapping_are_a_web_responses() -> None:
    response = lined(headers=HEADERS + APPENDED)
    assert text_of(response) is not None  # still text: nothing read them
    plain = web.Response(status=204, headers=HEADERS + APPENDED)
    assert list(response.headers.items()) == list(plain.headers.items())
    assert text_of(response) is None


def test_aiohttp_reading_the_headers_itself_sees_them_all() -> None:
    response = lined(headers=[("Content-Language", "en"), *HEADERS])
    assert response.content_type == "application/octet-stream"  # (aiohttp's default)
    assert response._headers.get("content-language") == "en"  # (its private reads)
    assert response.lines is None


def test_the_head_written_from_the_text_is_the_head_render_writes() -> None:
    for headers in (HEADERS + APPENDED, HEADERS):  # with and without its own Server
        fast = render_lined(message(), lined(headers=headers))
        slow, body, keep_alive = render(message(), web.Response(status=204, headers=headers))
        assert fast is not None
        assert _date_masked(fast) == _date_masked(slow)
        assert body == b""
        assert keep_alive


@pytest.mark.parametrize(
    "case",
    ["HTTP/1.0", "the client closes", "the answer closes", "read as a mapping", "status 200"],
)
def test_anything_unusual_is_left_to_render(case: str) -> None:
    response = lined(200) if case == "status 200" else lined()
    request = message()
    if case == "HTTP/1.0":
        request = message(HttpVersion10)
    elif case == "the client closes":
        request = message(close=True)
    elif case == "the answer closes":
        response.force_close()
    elif case == "read as a mapping":
        assert response.headers
    assert render_lined(request, response) is None


def test_only_a_success_is_lined() -> None:
    with pytest.raises(ValueError, match="success"):
        LinedResponse(404, "ETag: x")


def test_no_content_is_lined_with_its_extra_headers_after_the_common_ones() -> None:
    response = no_content({"ETag": "e", "DataServiceVersion": "1.0;"})
    assert isinstance(response, LinedResponse)
    assert response.status == 204
    assert list(response.headers.items()) == [
        ("Cache-Control", "no-cache"),
        ("X-Content-Type-Options", "nosniff"),
        ("ETag", "e"),
        ("DataServiceVersion", "1.0;"),
    ]


def test_the_explorer_records_a_lined_answer_without_reading_its_headers() -> None:
    recent = RecentRequests()
    logger = RecordingAccessLogger(logging.getLogger("azt_server_stub.access.test"), "%a")
    logger._recent = recent
    response = lined(headers=[*HEADERS, ("x-ms-request-id", "rid-1")])
    response.request_id = "rid-1"
    logger.log(make_mocked_request("POST", "/devstoreaccount1/t"), response, 0.001)
    assert response.lines is not None
    (entry,) = recent.since(0)
    assert (entry["status"], entry["request_id"], entry["error"]) == (204, "rid-1", "")


def test_later_answers_copy_what_aiohttp_s_init_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lined_module, "_MADE", {})
    first = LinedResponse(204, "ETag: a")  # made by aiohttp's __init__
    second = LinedResponse(204, "ETag: b")  # copied
    assert lined_module._MADE[204]  # (copyable with this aiohttp)
    mine = {"lines", "request_id", "_state", "_mapping"}
    assert {k: v for k, v in vars(first).items() if k not in mine} == {
        k: v for k, v in vars(second).items() if k not in mine
    }
    assert set(vars(first)) == set(vars(second))
    assert second._state == {}
    assert second._state is not first._state
    assert second.headers is not first.headers
    assert dict(second.headers) == {"ETag": "b"}


def test_an_init_that_sets_something_mutable_is_called_for_every_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain_init = web.Response.__init__

    def init(self: web.Response, **kwargs: object) -> None:
        plain_init(self, **kwargs)  # type: ignore[arg-type]
        self._listeners = []  # type: ignore[attr-defined]  # (a later aiohttp, say)

    monkeypatch.setattr(web.Response, "__init__", init)
    monkeypatch.setattr(lined_module, "_MADE", {})
    first, second = LinedResponse(204, "ETag: a"), LinedResponse(204, "ETag: b")
    assert lined_module._MADE[204] == {}
    assert first._listeners is not second._listeners  # type: ignore[attr-defined]
