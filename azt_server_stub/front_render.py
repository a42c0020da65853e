"""The bytes of a plain answer as aiohttp would send them: :func:`render` writes the status
line and headers (with aiohttp's rules for ``Content-Length``, ``Content-Type``, ``Date``,
``Server`` and ``Connection``) in one pass, for the stub's connection front end
(:mod:`azt_server_stub.front`), which writes them to the socket itself."""

from __future__ import annotations

import functools

from aiohttp import hdrs, web
from aiohttp.helpers import rfc822_formatted_time
from aiohttp.http import HttpVersion, HttpVersion10, HttpVersion11
from aiohttp.http_parser import RawRequestMessage

from .lined import LinedResponse

#: Statuses whose answers carry no body (RFC 9110: 1xx, 204, 304).
_EMPTY_BODY_STATUSES = frozenset({204, 304, *range(100, 200)})


def render(message: RawRequestMessage, response: web.Response) -> tuple[bytes, bytes, bool]:
    """The head and body bytes aiohttp would send for a plain ``response`` to the request
    parsed as ``message`` (its method, HTTP version and ``should_close``: what the
    request's ``method``, ``version`` and ``keep_alive`` read, without their property
    calls), and keep-alive.

    Applies aiohttp's rules: ``Content-Length`` (none on 1xx/204/304, none for an
    empty body on HEAD or 304), ``Content-Type: application/octet-stream`` on a body
    without one, ``Date``, ``Server``, and ``Connection`` (``keep-alive`` on an HTTP/1.0
    request kept open, ``close`` on an HTTP/1.1 one that is not); no body on HEAD or on
    1xx/204/304.

    Example::

        >>> from aiohttp.http import HttpVersion11
        >>> from multidict import CIMultiDict, CIMultiDictProxy
        >>> from yarl import URL
        >>> message = RawRequestMessage("GET", "/a/t()", HttpVersion11,
        ...     CIMultiDictProxy(CIMultiDict()), (), False, None, False, False, URL("/a/t()"))
        >>> head, body, keep = render(message, web.Response(status=200, body=b"{}"))
        >>> head.split(b"\\r\\n")[0], body, keep
        (b'HTTP/1.1 200 OK', b'{}', True)
        >>> b"Content-Length: 2" in head and b"Content-Type: application/octet-stream" in head
        True
    """
    # (the response's attributes behind .status, .headers and .reason, read without the
    # property calls; front._responses_fit checks that they mean that)
    status = response._status
    method = message.method
    headers = response._headers
    body = response._body
    assert body is None or isinstance(body, bytes)  # _plain
    empty = status in _EMPTY_BODY_STATUSES or method == hdrs.METH_HEAD
    if status in _EMPTY_BODY_STATUSES:
        headers.popall(hdrs.CONTENT_LENGTH, None)
        length = 0
    elif hdrs.CONTENT_LENGTH in headers:
        length = int(headers[hdrs.CONTENT_LENGTH])
    else:
        length = len(body) if body else 0
        if length or method != hdrs.METH_HEAD:
            headers[hdrs.CONTENT_LENGTH] = str(length)
    if empty:
        headers.popall(hdrs.TRANSFER_ENCODING, None)
    elif length != 0:
        headers.setdefault(hdrs.CONTENT_TYPE, "application/octet-stream")
    if hdrs.DATE not in headers:
        headers[hdrs.DATE] = rfc822_formatted_time()
    if hdrs.SERVER not in headers:
        headers[hdrs.SERVER] = web_server_software()
    keep_alive = response._keep_alive
    if keep_alive is None:
        keep_alive = not message.should_close  # (request.keep_alive)
    version: HttpVersion = message.version
    if hdrs.CONNECTION not in headers:
        if keep_alive:
            if version == HttpVersion10:
                headers[hdrs.CONNECTION] = "keep-alive"
        elif version == HttpVersion11:
            headers[hdrs.CONNECTION] = "close"
    status_line = _status_line(version, status, response._reason)
    if headers:
        try:
            lines = list(map(": ".join, headers.items()))
        except TypeError:  # a value that is not text: as it formats
            lines = [f"{name}: {value}" for name, value in headers.items()]
        # one more join, then two memchr scans: cheaper than counting the line breaks
        fields = "".join(lines)
        if "\n" in fields or "\r" in fields:  # aiohttp refuses too
            raise ValueError("Newline or carriage return character detected in a header")
        text = status_line + "\r\n" + "\r\n".join(lines)
    else:
        text = status_line
    try:
        head = (text + "\r\n\r\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (undecodable request bytes): as received
        head = _encode_head(text + "\r\n\r\n")
    return head, (b"" if empty or not body else body), bool(keep_alive)


def render_lined(message: RawRequestMessage, response: LinedResponse) -> bytes | None:
    """The head aiohttp would send for a :class:`~azt_server_stub.lined.LinedResponse`
    whose headers are still text, answering the usual request (HTTP/1.1, kept alive): its
    status line, its lines, ``Date``, and ``Server`` when none was given (:func:`render`'s
    rules for a bodiless answer, which adds nothing else there). None for anything else
    (then the caller renders it as any answer, its headers read as a mapping).

    Example::

        >>> from aiohttp.http import HttpVersion11
        >>> from multidict import CIMultiDict, CIMultiDictProxy
        >>> from yarl import URL
        >>> message = RawRequestMessage("POST", "/a/t", HttpVersion11,
        ...     CIMultiDictProxy(CIMultiDict()), (), False, None, False, False, URL("/a/t"))
        >>> head = render_lined(message, LinedResponse(204, "ETag: x\\r\\nServer: s"))
        >>> head.split(b"\\r\\n")[:3]
        [b'HTTP/1.1 204 No Content', b'ETag: x', b'Server: s']
    """
    text = response.lines
    status = response._status
    if (
        text is None
        or status not in _EMPTY_BODY_STATUSES
        or message.version != HttpVersion11
        or message.should_close
        or response._keep_alive is not None
        or response._body is not None
    ):
        return None
    status_line = _status_line(HttpVersion11, status, response._reason)
    server = ""
    if "\r\nServer: " not in text and not text.startswith("Server: "):
        server = "\r\nServer: " + web_server_software()
    head = f"{status_line}\r\n{text}\r\nDate: {rfc822_formatted_time()}{server}\r\n\r\n"
    try:
        return head.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _status_line(version: HttpVersion, status: int, reason: str) -> str:
    """``HTTP/1.1 204 No Content``; remembered (bounded); a line break refused as aiohttp does."""
    status_line = _STATUS_LINES.get((version, status, reason))
    if status_line is None:
        status_line = f"HTTP/{version[0]}.{version[1]} {status} {reason}"
        if "\n" in status_line or "\r" in status_line:  # aiohttp refuses too
            raise ValueError("Newline or carriage return character detected in a header")
        if len(_STATUS_LINES) < 256:
            _STATUS_LINES[version, status, reason] = status_line
    return status_line


def _encode_head(text: str) -> bytes:
    """A response head holding lone surrogates, encoded anyway: the bytes they stand for
    (the parser's ``surrogateescape``), any other as ``?``. The service middleware refuses
    such header values before serving (``check_header_text``); this keeps an answer
    writable should one reach a header all the same."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


#: Status lines written before, by (HTTP version, status, reason). Bounded.
_STATUS_LINES: dict[tuple[HttpVersion, int, str], str] = {}


@functools.cache
def web_server_software() -> str:
    """aiohttp's default ``Server`` header (the stub always sets its own).

    Example::

        >>> web_server_software().startswith("Python/")
        True
    """
    from aiohttp.http import SERVER_SOFTWARE

    return str(SERVER_SOFTWARE)


__all__ = ["render", "render_lined", "web_server_software"]
