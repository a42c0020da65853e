"""Reading a request's headers, query and body the way the service does (PROTOCOL.md 3).

Shared by the request and by each batch part: ``timeout``, the OData version headers,
``If-Match``, ``X-HTTP-Method`` tunnelling, the request target and the body size limit.

Example::

    >>> parse_if_match("*")
    '*'
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from aiohttp import hdrs, web
from aiohttp.streams import StreamReader
from multidict import CIMultiDict, CIMultiDictProxy, MultiDictProxy, istr

from .. import errors
from ..backend import invalid_etag, is_weak_etag

#: Largest request body accepted (the service's 4 MiB batch limit).
MAX_BODY_BYTES = 4 * 1024 * 1024


_TIMEOUT_RE = re.compile(r"([+-]?)([0-9]+)", re.ASCII)  # any length: compared as text


_DSV_RE = re.compile(r"\s*([0-9]+)\.([0-9]+)\s*(?:;.*)?", re.ASCII | re.DOTALL)


_DSV_KNOWN = frozenset({(1, 0), (2, 0), (3, 0)})


_X_HTTP_METHOD = istr("X-HTTP-Method")


_DSV_HEADERS = (istr("DataServiceVersion"), istr("MaxDataServiceVersion"))


def check_timeout(query: MultiDictProxy[str]) -> None:
    """Validate the ``timeout`` query parameter (seconds; PROTOCOL.md 3.6).

    Not an integer -> ``400 InvalidQueryParameterValue``; below 1 -> ``400
    OutOfRangeQueryParameterValue``; more than 30 is accepted (the service uses 30).

    Example::

        >>> from azt_server_stub.request_state import parse_query
        >>> check_timeout(parse_query("timeout=90"))
        >>> check_timeout(parse_query("timeout=" + "9" * 5000))  # past int() and accepted
        >>> check_timeout(parse_query("timeout=0"))
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 OutOfRangeQueryParameterValue: ...
    """
    for text in query.getall("timeout", []):
        details = {"QueryParameterName": "timeout", "QueryParameterValue": text}
        number = _TIMEOUT_RE.fullmatch(text.strip())
        if number is None:
            err = errors.invalid_query_parameter_value()
        elif number.group(1) == "-" or not number.group(2).strip("0"):  # below 1
            err = errors.out_of_range_query_parameter_value()
        else:
            continue
        err.details.update(details)
        raise err


def data_service_version(
    headers: CIMultiDictProxy[str] | CIMultiDict[str], name: str
) -> int | None:
    """The major version of a ``DataServiceVersion``/``MaxDataServiceVersion`` header.

    ``1.0``, ``2.0`` or ``3.0`` with an optional ``;NetFx`` or ``;`` suffix (PROTOCOL.md
    3.4); None when absent. Anything else, or the header twice, is ``400
    InvalidHeaderValue`` naming the header.

    Example::

        >>> data_service_version(CIMultiDict({"DataServiceVersion": "3.0;NetFx"}),
        ...                      "DataServiceVersion")
        3
    """
    values = headers.getall(name, ())
    if not values:
        return None
    if len(values) == 1:
        major = _DSV_SEEN.get(values[0])
        if major is not None:
            return major
    m = _DSV_RE.fullmatch(values[0]) if len(values) == 1 else None
    if m is None or (int(m.group(1)), int(m.group(2))) not in _DSV_KNOWN:
        err = errors.invalid_header_value()
        err.details.update({"HeaderName": str(name), "HeaderValue": ",".join(values)})
        raise err
    major = int(m.group(1))
    if len(_DSV_SEEN) < _DSV_SEEN_MAX:
        _DSV_SEEN[values[0]] = major
    return major


#: Valid header values already read, with their major version: clients send the same
#: few (``3.0``, ``3.0;NetFx``) on every request. Bounded; only valid values enter.
_DSV_SEEN: dict[str, int] = {}


_DSV_SEEN_MAX = 256


def check_data_service_versions(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> None:
    """Validate both OData version headers of a request (or batch part).

    Example::

        >>> check_data_service_versions(CIMultiDict({"MaxDataServiceVersion": "3.0;NetFx"}))
    """
    for name in _DSV_HEADERS:
        values = headers.getall(name, ())
        if values and (len(values) != 1 or values[0] not in _DSV_SEEN):  # (else valid)
            data_service_version(headers, name)


def split_target(raw: str) -> tuple[str | None, str, str]:
    """(host or None, raw path, raw query) of a request target (path or absolute URL).

    Example::

        >>> split_target("http://h:1/a/t()?$top=1")
        ('h:1', '/a/t()', '$top=1')
    """
    if raw.startswith(("http://", "https://")):
        parts = urlsplit(raw)
        return parts.netloc, parts.path or "/", parts.query
    path, _, query = raw.partition("?")
    return None, path, query


def parse_if_match(value: str | None) -> str | None:
    """Validate an ``If-Match`` value: None, ``*`` or one weak ETag (400 InvalidInput).

    ``:`` is normalised to ``%3A`` as some clients send the decoded form.

    Example::

        >>> parse_if_match("W/\\"datetime'2020-01-01T00:00:00Z'\\"")
        'W/"datetime\\'2020-01-01T00%3A00%3A00Z\\'"'
    """
    if value is None:
        return None
    text = value.strip()
    if text == "*":
        return "*"
    if is_weak_etag(text):
        return text.replace(":", "%3A")
    raise invalid_etag(value)


def if_match_of(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> str | None:
    """The validated ``If-Match`` of a request or batch part (400 InvalidInput when it is
    given twice or with ``If-None-Match``).

    Example::

        >>> if_match_of(CIMultiDict({"If-Match": "*"}))
        '*'
    """
    values = headers.getall("If-Match", [])
    if "If-None-Match" in headers:
        raise errors.invalid_input()
    if len(values) > 1:
        raise errors.invalid_input()
    return parse_if_match(values[0]) if values else None


def tunnelled_method(method: str, headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> str:
    """The effective verb: ``X-HTTP-Method`` on a POST (once; MERGE/PUT/DELETE/PATCH).

    The same rule for a request and for a batch part (PROTOCOL.md 3.5).

    Example::

        >>> tunnelled_method("POST", CIMultiDict({"X-HTTP-Method": "merge"}))
        'MERGE'
    """
    tunnel = headers.getall(_X_HTTP_METHOD, [])
    if not tunnel:
        return method
    if len(tunnel) > 1:
        raise errors.x_method_incorrect_count()
    if method != "POST":
        raise errors.x_method_not_using_post()
    value = tunnel[0].strip().upper()
    if value not in ("MERGE", "PUT", "DELETE", "PATCH"):
        raise errors.x_method_incorrect_value()
    return value


def check_content_encoding(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> None:
    """Refuse a request body declared compressed (``400 UnsupportedHeader``).

    The Table service is not documented to accept compressed request bodies and no
    Microsoft SDK sends one (UNCERTAIN what it answers: UnsupportedHeader is the
    storage services' common code for a header they do not support). ``identity``
    (no coding) and an empty value are accepted. The stub's HTTP layer never
    decompresses (``connection.handler_args``), so the body is not touched first.

    Example::

        >>> check_content_encoding(CIMultiDict({"Content-Encoding": "identity"}))
        >>> check_content_encoding(CIMultiDict({"Content-Encoding": "gzip"}))
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 UnsupportedHeader: ...
    """
    if hdrs.CONTENT_ENCODING not in headers:
        return
    values = headers.getall(hdrs.CONTENT_ENCODING, [])
    codings = [c.strip().lower() for v in values for c in v.split(",")]
    if any(c not in ("", "identity") for c in codings):
        raise errors.unsupported_header("Content-Encoding", ",".join(values))


async def read_body(request: web.Request) -> bytes:
    """The request body (``413 RequestBodyTooLarge`` above :data:`MAX_BODY_BYTES`).

    A declared ``Content-Encoding`` is ``400 UnsupportedHeader``; a body whose
    framing breaks off (bad chunking, a connection closed before ``Content-Length``
    bytes) is ``400 InvalidInput`` (when the client is still there to read it).

    Example::

        body = await read_body(request)
    """
    check_content_encoding(request.headers)
    try:
        body = _arrived_body(request)  # (its length is Content-Length's: checked below)
        limit = request.client_max_size
        if body is None:
            length = request.content_length
            if length is not None and length > MAX_BODY_BYTES:
                raise errors.request_body_too_large()
            body = await request.read()
        elif limit and len(body) > limit:  # as read()
            raise web.HTTPRequestEntityTooLarge(limit, len(body))
    except web.HTTPRequestEntityTooLarge:
        raise errors.request_body_too_large() from None
    except (web.RequestPayloadError, ConnectionError):
        raise errors.invalid_input("The request body could not be read.") from None
    if len(body) > MAX_BODY_BYTES:
        raise errors.request_body_too_large()
    return body


def _arrived_body(request: web.Request) -> bytes | None:
    """The whole body when it has all arrived (usually with its head) and nothing has read
    any of it yet, taken from the payload stream at once and kept as ``request.read()``
    keeps it (a later ``read()`` answers the same bytes); None otherwise (then
    ``request.read()`` reads it). The same bytes and errors as ``request.read()``, without
    its read loop (two stream reads and a copy through a ``bytearray``).
    """
    payload = request.content
    if (
        type(payload) is not StreamReader
        or not payload.is_eof()  # (more to come: read() waits for it)
        or payload.at_eof()  # (empty, or already read: read() knows which)
        or request._read_bytes is not None
    ):
        return None
    body = payload.read_nowait()  # (the stream's error, if it has one, is raised)
    if not payload.at_eof():  # (cannot happen: the stream was complete)
        raise ConnectionError("the request body was not read whole")
    request._read_bytes = body
    return body
