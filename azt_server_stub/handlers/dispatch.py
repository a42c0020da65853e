"""HTTP in, backend call, HTTP out: every Table service operation (PROTOCOL.md 2, 4, 9).

:func:`dispatch` is the single aiohttp handler. It resolves the account and the
resource (``addressing``), applies verb tunnelling, authenticates and
authorizes (``auth``), negotiates formats (``formats.negotiation``) and calls
the operation. No storage logic lives here: the backend owns semantics and
validation of stored values; this module owns the wire.

Example::

    >>> parse_if_match("*")
    '*'
"""

from __future__ import annotations

import datetime as _dt
import functools
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, unquote_plus, urlsplit

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy

from . import errors, odata, partitions, versions
from ._commit import WriteCommitter
from .addressing import (
    SECONDARY_SUFFIX,
    AccountAddress,
    Kind,
    Resource,
    invalid_uri,
    parse_resource,
    split_account,
)
from .auth import Authenticator, Operation, Principal, RequestView
from .backend import Backend, GroupWrite, WriteOp, WriteResult, invalid_etag, is_weak_etag
from .errors import StubError
from .formats import atom as atom_fmt
from .formats import batch as batch_fmt
from .formats import json as json_fmt
from .formats import xml as xml_fmt
from .formats.negotiation import (
    Fmt,
    Negotiated,
    error_format_guess,
    negotiate_response,
    parse_prefer,
    request_format,
)
from .model import Entity, etag_for

log = logging.getLogger("azt_server_stub")

#: Largest request body accepted (the service's 4 MiB batch limit).
MAX_BODY_BYTES = 4 * 1024 * 1024

STORAGE_XML = "storage-xml"
ODATA_XML = "odata-xml"

#: The error body style chosen so far: a JSON ``Fmt`` value, ODATA_XML or STORAGE_XML.
ERR_STYLE = web.RequestKey("azt.error_style", str)
REQUEST_ID = web.RequestKey("azt.request_id", str)
VERSION = web.RequestKey("azt.version", str)
ACCOUNT = web.RequestKey("azt.account", str)

_COMMON_HEADERS = (("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff"))
_COMMON = dict(_COMMON_HEADERS)
_UNSUPPORTED_OPTIONS = ("$orderby", "$skip", "$expand", "$inlinecount", "$count", "$skiptoken")
_KNOWN_VERBS = {"GET", "HEAD", "POST", "PUT", "MERGE", "PATCH", "DELETE", "OPTIONS"}


@dataclass(slots=True)
class Services:
    """What the handlers need from the application: the backend and the authenticator.

    ``committer``: with a durable backend, the group committer that runs entity
    writes off the event loop (see ``_commit``); None in memory (writes run inline).

    Example::

        >>> services = Services(Backend(), Authenticator({"acct": [b"key"]}, lambda a, t: []))
        >>> services.committer is None, services.backend.durable
        (True, False)
    """

    backend: Backend
    authenticator: Authenticator
    lenient_versions: bool = False
    product_style_urls: bool = True
    committer: WriteCommitter | None = None


SERVICES_KEY = web.AppKey("azt.services", Services)


@dataclass(slots=True)
class Call:
    """One request being served.

    Example::

        >>> from aiohttp.test_utils import make_mocked_request
        >>> services = Services(Backend(), Authenticator({}, lambda a, t: []))
        >>> addr = split_account("127.0.0.1:10002", "/acct/t(PartitionKey='p',RowKey='r')")
        >>> call = Call(make_mocked_request("GET", "/acct/t(PartitionKey='p',RowKey='r')"),
        ...             services, addr, parse_resource(addr.resource), "GET", "2019-02-02",
        ...             "http://127.0.0.1:10002/acct")
        >>> call.resource.kind, call.resource.table, call.resource.keys
        (<Kind.ENTITY: 'entity'>, 't', ('p', 'r'))
    """

    request: web.Request
    services: Services
    addr: AccountAddress
    resource: Resource
    method: str  # effective (after X-HTTP-Method)
    version: str
    endpoint: str
    principal: Principal | None = None

    @property
    def backend(self) -> Backend:
        """The application's backend (shorthand for ``services.backend``).

        Example::

            >>> from aiohttp.test_utils import make_mocked_request
            >>> backend = Backend()
            >>> services = Services(backend, Authenticator({}, lambda a, t: []))
            >>> addr = split_account("127.0.0.1:10002", "/acct/Tables")
            >>> call = Call(make_mocked_request("GET", "/acct/Tables"), services, addr,
            ...             parse_resource(addr.resource), "GET", "2019-02-02", "http://h/acct")
            >>> call.backend is backend
            True
        """
        return self.services.backend

    @property
    def account(self) -> str:
        """The addressed account, without a ``-secondary`` suffix.

        Example::

            >>> from aiohttp.test_utils import make_mocked_request
            >>> services = Services(Backend(), Authenticator({}, lambda a, t: []))
            >>> addr = split_account("127.0.0.1:10002", "/acct-secondary/Tables")
            >>> call = Call(make_mocked_request("GET", "/acct-secondary/Tables"), services, addr,
            ...             parse_resource(addr.resource), "GET", "2019-02-02", "http://h/acct")
            >>> call.account, call.addr.secondary
            ('acct', True)
        """
        return self.addr.account


# --- small helpers ------------------------------------------------------------------

_T = TypeVar("_T")


async def _write(call: Call, table: str, op: WriteOp) -> WriteResult:
    """One entity write: inline in memory, group-committed with a durable store."""
    committer = call.services.committer
    if committer is None:
        return call.backend.write(call.account, table, op)
    return (await committer.submit(GroupWrite(call.account, table, [op])))[0]


async def _durable_call(call: Call, write: Callable[..., _T], *args: Any) -> _T:
    """A table-level write (create/delete table, ACL, service properties): inline in
    memory, on the writer thread with a durable store (the loop keeps serving meanwhile)."""
    committer = call.services.committer
    if committer is None:
        return write(*args)
    return await committer.call(write, *args)


async def _write_batch(call: Call, table: str, ops: list[WriteOp]) -> list[WriteResult]:
    """A change set: inline in memory, group-committed with a durable store."""
    committer = call.services.committer
    if committer is None:
        return call.backend.execute_batch(call.account, table, ops)
    return await committer.submit(GroupWrite(call.account, table, ops, batch=True))


def _now_ticks_text() -> str:
    """The current UTC time with seven fractional digits (error ``Time:`` lines)."""
    now = _dt.datetime.now(_dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond:06d}0Z"


def error_message(err: StubError, request_id: str) -> str:
    """The service's error message text: [index:]text, RequestId and Time lines.

    Example::

        >>> error_message(errors.invalid_input().at(3), "rid").split("\\n")[:2]
        ['3:One of the request inputs is not valid.', 'RequestId:rid']
    """
    prefix = f"{err.index}:" if err.index is not None else ""
    return f"{prefix}{err.message}\nRequestId:{request_id}\nTime:{_now_ticks_text()}"


def error_payload(err: StubError, request_id: str, style: Fmt | str) -> tuple[str, bytes]:
    """``(Content-Type, body)`` of an error in a given style (a JSON Fmt or an XML style).

    Example::

        >>> ctype, _ = error_payload(errors.invalid_input(), "r", STORAGE_XML)
        >>> ctype
        'application/xml'
    """
    message = error_message(err, request_id)
    if isinstance(style, Fmt) and style.is_json:
        return style.content_type, json_fmt.error_body(err.code, message, err.details)
    if style == STORAGE_XML:
        return "application/xml", xml_fmt.error_body(err.code, message, err.details)
    return "application/xml;charset=utf-8", atom_fmt.error_body(err.code, message)


def _header_safe(url: str) -> str:
    """Percent-encode what may not travel in a header (non-ASCII, controls, spaces)."""
    if url.isascii() and url.isprintable() and " " not in url:
        return url
    return quote(url, safe="!#$&'()*+,/:;=?@[]~%")


QUERY = web.RequestKey("azt.query", MultiDictProxy[str])


def parse_query(raw: str) -> MultiDictProxy[str]:
    """Decode a raw query string the way the service does: form decoding.

    ``%XX`` escapes, and ``+`` is a space, as Azure reads it: clients that form-encode
    (the legacy Python SDK sends ``$filter=PartitionKey+eq+%27x%27``) rely on it, and a
    SAS whose base64 signature carries an unescaped ``+`` fails there (a literal plus is
    ``%2B``). A malformed escape is kept verbatim.

    Example::

        >>> parse_query("sig=a+b%2Bc&$filter=x+eq%201&flag")["$filter"]
        'x eq 1'
        >>> parse_query("sig=a+b%2Bc")["sig"]
        'a b+c'
    """
    result: MultiDict[str] = MultiDict()
    if raw:
        for item in raw.split("&"):
            if not item:
                continue
            name, _, value = item.partition("=")
            result.add(
                unquote_plus(name, errors="surrogateescape"),
                unquote_plus(value, errors="surrogateescape"),
            )
    return MultiDictProxy(result)


def query_of(request: web.Request) -> MultiDictProxy[str]:
    """The request's query parameters per :func:`parse_query` (parsed once per request).

    Example::

        q = query_of(request)
    """
    parsed = request.get(QUERY)
    if parsed is None:
        parsed = parse_query(request.rel_url.raw_query_string)
        request[QUERY] = parsed
    return parsed


_TIMEOUT_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DSV_RE = re.compile(r"\s*([0-9]+)\.([0-9]+)\s*(?:;.*)?", re.ASCII | re.DOTALL)
_DSV_KNOWN = frozenset({(1, 0), (2, 0), (3, 0)})
_DSV_HEADERS = ("DataServiceVersion", "MaxDataServiceVersion")


def check_timeout(query: MultiDictProxy[str]) -> None:
    """Validate the ``timeout`` query parameter (seconds; PROTOCOL.md 3.6).

    Not an integer -> ``400 InvalidQueryParameterValue``; below 1 -> ``400
    OutOfRangeQueryParameterValue``; more than 30 is accepted (the service uses 30).

    Example::

        >>> check_timeout(parse_query("timeout=90"))
        >>> check_timeout(parse_query("timeout=0"))
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 OutOfRangeQueryParameterValue: ...
    """
    for text in query.getall("timeout", []):
        details = {"QueryParameterName": "timeout", "QueryParameterValue": text}
        if _TIMEOUT_RE.fullmatch(text.strip()) is None:
            err = errors.invalid_query_parameter_value()
        elif int(text) < 1:
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
    values = headers.getall(name, [])
    if not values:
        return None
    m = _DSV_RE.fullmatch(values[0]) if len(values) == 1 else None
    if m is None or (int(m.group(1)), int(m.group(2))) not in _DSV_KNOWN:
        err = errors.invalid_header_value()
        err.details.update({"HeaderName": name, "HeaderValue": ",".join(values)})
        raise err
    return int(m.group(1))


def check_data_service_versions(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> None:
    """Validate both OData version headers of a request (or batch part).

    Example::

        >>> check_data_service_versions(CIMultiDict({"MaxDataServiceVersion": "3.0;NetFx"}))
    """
    for name in _DSV_HEADERS:
        data_service_version(headers, name)


def _split_target(raw: str) -> tuple[str | None, str, str]:
    """(host or None, raw path, raw query) of a request target (path or absolute URL)."""
    if raw.startswith(("http://", "https://")):
        parts = urlsplit(raw)
        return parts.netloc, parts.path or "/", parts.query
    path, _, query = raw.partition("?")
    return None, path, query


def _endpoint(request: web.Request, addr: AccountAddress, host: str | None = None) -> str:
    return f"{request.scheme}://{host or request.host}{addr.prefix}"


def _odata_headers(fmt: Fmt, *, feed: bool = False, select: bool = False) -> dict[str, str]:
    """Headers of an OData response body.

    ``DataServiceVersion`` is the lowest that describes the payload: 3.0 for JSON, 2.0
    for an Atom projection, 1.0 for other Atom (WCF clients refuse a response version
    above their ``MaxDataServiceVersion``).
    """
    ctype = fmt.content_type
    if fmt is Fmt.ATOM:
        ctype = "application/atom+xml;type=feed;charset=utf-8" if feed else ctype
        dsv = "2.0;" if select else "1.0;"
    else:
        dsv = "3.0;"
    return {"Content-Type": ctype, "DataServiceVersion": dsv, **_COMMON}


def _no_content(extra: dict[str, str] | None = None) -> web.Response:
    headers = dict(_COMMON)
    if extra:
        headers.update(extra)
    return web.Response(status=204, headers=headers)


# --- If-Match ------------------------------------------------------------------------


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


# --- authentication -------------------------------------------------------------------


def request_view(request: web.Request, raw_path: str) -> RequestView:
    """The auth module's view of a request (``raw_path`` exactly as sent, no query).

    Example::

        view = request_view(request, "/devstoreaccount1/Tables")
    """
    return RequestView(
        method=request.method,
        raw_path=raw_path,
        query=query_of(request),
        headers=request.headers,
        scheme=request.scheme,
        remote_ip=request.remote or "",
    )


def _authenticate(call: Call, raw_path: str, table: str | None) -> Principal:
    addressed = call.account + SECONDARY_SUFFIX if call.addr.secondary else call.account
    principal = call.services.authenticator.authenticate(
        request_view(call.request, raw_path), addressed, table
    )
    call.principal = principal
    return principal


# --- dispatch --------------------------------------------------------------------------


def _tunnelled_method(method: str, headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> str:
    """The effective verb: ``X-HTTP-Method`` on a POST (once; MERGE/PUT/DELETE/PATCH).

    The same rule for a request and for a batch part (PROTOCOL.md 3.5).
    """
    tunnel = headers.getall("X-HTTP-Method", [])
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


async def dispatch(request: web.Request) -> web.StreamResponse:
    """Serve one request (the application's only route).

    Example::

        app.router.add_route("*", "/{tail:.*}", dispatch)
    """
    services = request.app[SERVICES_KEY]
    raw_target = request.raw_path
    host, raw_path, _ = _split_target(raw_target)
    addr = split_account(host or request.host, raw_path, product_style=services.product_style_urls)
    request[ACCOUNT] = addr.account
    method = request.method.upper()
    if method not in _KNOWN_VERBS:
        raise errors.unsupported_http_verb()
    resource = parse_resource(addr.resource)
    if method == "OPTIONS":
        request[ERR_STYLE] = STORAGE_XML
        return _preflight(request, services, addr)
    query = query_of(request)
    version = versions.request_version(
        request.headers.get("x-ms-version"), query.get("sv"), lenient=services.lenient_versions
    )
    request[VERSION] = version
    effective = _tunnelled_method(method, request.headers)
    call = Call(request, services, addr, resource, effective, version, _endpoint(request, addr))
    comp = query.get("comp")
    restype = query.get("restype")
    if resource.kind is Kind.SERVICE:
        request[ERR_STYLE] = STORAGE_XML
        _require_version_header(request)
        check_timeout(query)
        return await _service_operation(call, raw_path, restype, comp)
    if comp == "acl" and resource.kind is Kind.COLLECTION and resource.bare:
        request[ERR_STYLE] = STORAGE_XML
        _require_version_header(request)
        check_timeout(query)
        return await _acl_operation(call, raw_path)
    # OData operations: errors follow the negotiated format (until _negotiate runs,
    # error_style_of guesses it from Accept/$format)
    check_timeout(query)
    check_data_service_versions(request.headers)
    if resource.kind is Kind.TABLES:
        if effective == "GET":
            return _query_tables(call, raw_path)
        if effective == "POST":
            return await _create_table(call, raw_path)
        raise errors.method_not_allowed()
    if resource.kind is Kind.TABLE_NAMED:
        if effective == "DELETE":
            return await _delete_table(call, raw_path)
        if effective == "GET":
            return _get_table(call, raw_path)
        raise errors.method_not_allowed()
    if resource.kind is Kind.BATCH:
        if effective != "POST":
            raise errors.method_not_allowed()
        return await _batch_operation(call, raw_path)
    if resource.kind is Kind.METADATA:
        _authenticate(call, raw_path, None)
        raise errors.not_implemented()
    if resource.kind is Kind.COLLECTION:
        if effective == "GET":
            return _query_entities(call, raw_path)
        if effective == "POST":
            return await _insert_entity(call, raw_path)
        raise errors.method_not_allowed()
    # Kind.ENTITY
    if effective == "GET":
        return _get_entity(call, raw_path)
    if effective in ("PUT", "MERGE", "PATCH"):
        return await _update_entity(call, raw_path)
    if effective == "DELETE":
        return await _delete_entity(call, raw_path)
    raise errors.method_not_allowed()


def _require_version_header(request: web.Request) -> None:
    """ACL and service-level operations require ``x-ms-version`` (or a SAS ``sv``)."""
    if "x-ms-version" not in request.headers and "sv" not in query_of(request):
        err = errors.missing_required_header()
        err.details["HeaderName"] = "x-ms-version"
        raise err


def _negotiate(call: Call) -> Fmt:
    request = call.request
    fmt_param = query_of(request).get("$format")
    if fmt_param is not None and not versions.supports_format_option(call.version):
        fmt_param = None
    chosen: Negotiated = negotiate_response(request.headers.get("Accept"), fmt_param, call.version)
    if chosen.implicit:
        request[ERR_STYLE] = ODATA_XML
    else:
        request[ERR_STYLE] = chosen.fmt.value if chosen.fmt.is_json else ODATA_XML
    return chosen.fmt


async def _read_body(request: web.Request) -> bytes:
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise errors.request_body_too_large()
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise errors.request_body_too_large() from None
    if len(body) > MAX_BODY_BYTES:
        raise errors.request_body_too_large()
    return body


def _table_exists(call: Call, table: str) -> str:
    name = call.backend.table_name(call.account, table)
    if name is None:
        raise errors.table_not_found()
    return name


# --- service operations ------------------------------------------------------------


async def _service_operation(
    call: Call, raw_path: str, restype: str | None, comp: str | None
) -> web.StreamResponse:
    """Get/Set Table Service Properties, Get Table Service Stats."""
    method = call.method
    if restype != "service" or comp not in ("properties", "stats"):
        if comp is None and restype is None:
            raise invalid_uri()
        raise errors.invalid_query_parameter_value()
    if comp == "stats":
        if method != "GET":
            raise errors.method_not_allowed()
        principal = _authenticate(call, raw_path, None)
        principal.authorize(Operation.GET_SERVICE_STATS, None)
        if not call.addr.secondary:
            raise errors.invalid_query_parameter_value()
        now = _dt.datetime.now(_dt.UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
        return web.Response(
            status=200,
            body=xml_fmt.service_stats_body(now),
            headers={"Content-Type": "application/xml"},
        )
    if method == "GET":
        principal = _authenticate(call, raw_path, None)
        principal.authorize(Operation.GET_SERVICE_PROPERTIES, None)
        doc = call.backend.get_service_properties(call.account)
        body = doc if doc is not None else xml_fmt.ServiceProperties().to_xml()
        return web.Response(status=200, body=body, headers={"Content-Type": "application/xml"})
    if method == "PUT":
        principal = _authenticate(call, raw_path, None)
        principal.authorize(Operation.SET_SERVICE_PROPERTIES, None)
        body = await _read_body(call.request)
        stored = call.backend.get_service_properties(call.account)
        current = xml_fmt.parse_service_properties(stored) if stored else None
        props = xml_fmt.parse_service_properties(body, current)
        await _durable_call(call, call.backend.set_service_properties, call.account, props.to_xml())
        return web.Response(status=202)
    raise errors.method_not_allowed()


# --- ACL -----------------------------------------------------------------------------


async def _acl_operation(call: Call, raw_path: str) -> web.StreamResponse:
    """Get (GET/HEAD) or Set (PUT) Table ACL."""
    table = call.resource.table
    assert table is not None
    method = call.method
    if method in ("GET", "HEAD"):
        principal = _authenticate(call, raw_path, table)
        principal.authorize(Operation.GET_TABLE_ACL, table)
        acl = call.backend.get_acl(call.account, table)
        body = xml_fmt.acl_body(acl)
        if method == "HEAD":
            return web.Response(status=200, headers={"Content-Type": "application/xml"})
        return web.Response(status=200, body=body, headers={"Content-Type": "application/xml"})
    if method == "PUT":
        principal = _authenticate(call, raw_path, table)
        principal.authorize(Operation.SET_TABLE_ACL, table)
        body = await _read_body(call.request)
        acl = xml_fmt.parse_acl(body)
        await _durable_call(call, call.backend.set_acl, call.account, table, acl)
        return web.Response(status=204)
    raise errors.method_not_allowed()


# --- CORS ---------------------------------------------------------------------------------


def _cors_rules(backend: Backend, account: str) -> tuple[xml_fmt.CorsRule, ...]:
    doc = backend.get_service_properties(account)
    return _parsed_cors_rules(doc) if doc else ()


@functools.lru_cache(maxsize=64)
def _parsed_cors_rules(doc: bytes) -> tuple[xml_fmt.CorsRule, ...]:
    """The CORS rules of a stored service-properties document (read-only; cached by the
    document: every request with an ``Origin`` header consults them)."""
    try:
        return tuple(xml_fmt.parse_service_properties(doc).cors)
    except StubError:
        return ()


def _header_allowed(header: str, allowed: Sequence[str]) -> bool:
    h = header.strip().lower()
    for pattern in allowed:
        p = pattern.lower()
        if p == "*" or p == h or (p.endswith("*") and h.startswith(p[:-1])):
            return True
    return False


def _origin_allowed(origin: str, rule: xml_fmt.CorsRule) -> bool:
    return "*" in rule.allowed_origins or any(
        o.lower() == origin.lower() for o in rule.allowed_origins
    )


def _preflight(request: web.Request, services: Services, addr: AccountAddress) -> web.Response:
    """``OPTIONS`` preflight against the stored CORS rules (403 CorsPreflightFailure)."""
    origin = request.headers.get("Origin")
    method = request.headers.get("Access-Control-Request-Method")
    if not origin or not method:
        raise errors.missing_required_header()
    wanted = [
        h for h in request.headers.get("Access-Control-Request-Headers", "").split(",") if h.strip()
    ]
    for rule in _cors_rules(services.backend, addr.account):
        if not _origin_allowed(origin, rule):
            continue
        if method.upper() not in rule.allowed_methods:
            continue
        if not all(_header_allowed(h, rule.allowed_headers) for h in wanted):
            continue
        headers = {
            "Access-Control-Allow-Origin": "*" if rule.allowed_origins == ["*"] else origin,
            "Access-Control-Allow-Methods": ",".join(rule.allowed_methods),
            "Access-Control-Max-Age": str(rule.max_age),
            "Vary": "Origin",
        }
        if wanted:
            headers["Access-Control-Allow-Headers"] = ",".join(h.strip() for h in wanted)
        return web.Response(status=200, headers=headers)
    raise StubError(
        403,
        "CorsPreflightFailure",
        "CORS not enabled or no matching rule found for this request.",
    )


def cors_response_headers(
    backend: Backend, account: str, origin: str, method: str
) -> dict[str, str]:
    """Headers an actual request from an allowed origin gets (empty when none match).

    Example::

        >>> rule = xml_fmt.CorsRule(["https://app.example"], ["GET"], 60, ["x-ms-request-id"], [])
        >>> backend = Backend()
        >>> backend.set_service_properties("acct", xml_fmt.ServiceProperties(cors=[rule]).to_xml())
        >>> headers = cors_response_headers(backend, "acct", "https://app.example", "get")
        >>> headers["Access-Control-Allow-Origin"], headers["Access-Control-Expose-Headers"]
        ('https://app.example', 'x-ms-request-id')
        >>> cors_response_headers(backend, "acct", "https://other.example", "GET")
        {}
    """
    for rule in _cors_rules(backend, account):
        if _origin_allowed(origin, rule) and method.upper() in rule.allowed_methods:
            headers = {
                "Access-Control-Allow-Origin": "*" if rule.allowed_origins == ["*"] else origin,
                "Vary": "Origin",
            }
            if rule.exposed_headers:
                headers["Access-Control-Expose-Headers"] = ",".join(rule.exposed_headers)
            return headers
    return {}


# --- tables --------------------------------------------------------------------------------


def _query_tables(call: Call, raw_path: str) -> web.Response:
    """Query Tables (``GET /Tables``) with $filter, $top and NextTableName."""
    principal = _authenticate(call, raw_path, None)
    principal.authorize(Operation.QUERY_TABLES, None)
    fmt = _negotiate(call)
    _check_query_options(call)
    q = query_of(call.request)
    flt_text = q.get("$filter")
    predicate = odata.compile_table_filter(flt_text) if flt_text else None
    top = odata.parse_top(q["$top"]) if "$top" in q else None
    nxt = q.get("NextTableName")
    next_name = odata.decode_table_continuation(nxt) if nxt is not None else None
    page = call.backend.query_tables(call.account, predicate, top, next_name)
    headers = _odata_headers(fmt, feed=True)
    if page.next_name is not None:
        headers["x-ms-continuation-NextTableName"] = odata.encode_table_continuation(page.next_name)
    if fmt is Fmt.ATOM:
        body = atom_fmt.table_feed(call.endpoint, call.account, page.names)
    else:
        body = json_fmt.table_feed(fmt, call.endpoint, call.account, page.names)
    return web.Response(status=200, body=body, headers=headers)


def _table_location(call: Call, name: str) -> str:
    return _header_safe(f"{call.endpoint}/Tables({json_fmt.key_literal(name)})")


async def _create_table(call: Call, raw_path: str) -> web.Response:
    """Create Table (``POST /Tables``)."""
    principal = _authenticate(call, raw_path, None)
    principal.authorize(Operation.CREATE_TABLE, None)
    fmt = _negotiate(call)
    body = await _read_body(call.request)
    req_fmt = request_format(call.request.headers.get("Content-Type"), call.version)
    name = (
        atom_fmt.parse_table_name(body) if req_fmt is Fmt.ATOM else json_fmt.parse_table_name(body)
    )
    created = await _durable_call(call, call.backend.create_table, call.account, name)
    prefer = parse_prefer(call.request.headers.get("Prefer"), call.version)
    location = _table_location(call, created)
    if prefer is False:
        return _no_content(
            {
                "Preference-Applied": "return-no-content",
                "Location": location,
                "DataServiceId": location,
                "DataServiceVersion": "3.0;",
            }
        )
    headers = _odata_headers(fmt)
    headers["Location"] = location
    if prefer is True:
        headers["Preference-Applied"] = "return-content"
    if fmt is Fmt.ATOM:
        out = atom_fmt.table_single(call.endpoint, call.account, created)
    else:
        out = json_fmt.table_single(fmt, call.endpoint, call.account, created)
    return web.Response(status=201, body=out, headers=headers)


async def _delete_table(call: Call, raw_path: str) -> web.Response:
    """Delete Table (``DELETE /Tables('name')``)."""
    table = call.resource.table
    assert table is not None
    principal = _authenticate(call, raw_path, table)
    principal.authorize(Operation.DELETE_TABLE, table)
    _negotiate(call)
    await _durable_call(call, call.backend.delete_table, call.account, table)
    return _no_content()


def _get_table(call: Call, raw_path: str) -> web.Response:
    """``GET /Tables('name')``: the table as a single entry (404 ResourceNotFound)."""
    table = call.resource.table
    assert table is not None
    principal = _authenticate(call, raw_path, None)
    principal.authorize(Operation.QUERY_TABLES, None)
    fmt = _negotiate(call)
    name = call.backend.table_name(call.account, table)
    if name is None:
        raise errors.resource_not_found()
    if fmt is Fmt.ATOM:
        out = atom_fmt.table_single(call.endpoint, call.account, name)
    else:
        out = json_fmt.table_single(fmt, call.endpoint, call.account, name)
    return web.Response(status=200, body=out, headers=_odata_headers(fmt))


# --- entities ------------------------------------------------------------------------------


def _select(call: Call) -> tuple[list[str] | None, str | None]:
    text = query_of(call.request).get("$select")
    if text is None or not text.strip():
        return None, None
    if not versions.supports_select(call.version):
        raise errors.unsupported_query_parameter(
            "The $select query option needs x-ms-version 2011-08-18 or later."
        )
    max_dsv = data_service_version(call.request.headers, "MaxDataServiceVersion")
    if max_dsv is not None and max_dsv < 2:
        raise errors.invalid_input(
            "The response requires that version 2.0 of the protocol be used, but the "
            "MaxDataServiceVersion header value in the request is set to '1.0'."
        )
    names = odata.parse_select(text)
    if not names or names == ["*"]:
        return None, None
    return names, quote(text, safe=",*$")


_SINGLE_OPTIONS = (
    "$filter",
    "$select",
    "$top",
    "$format",
    "NextPartitionKey",
    "NextRowKey",
    "NextTableName",
)


def _check_query_options(call: Call) -> None:
    """Unsupported OData options (``$orderby``...) and options given more than once: 400."""
    query = query_of(call.request)
    if not query:
        return
    for name in _UNSUPPORTED_OPTIONS:
        if name in query:
            raise errors.unsupported_query_parameter()
    for name in _SINGLE_OPTIONS:
        values = query.getall(name, ())
        if len(values) > 1:
            err = errors.invalid_query_parameter_value(
                f"The query option '{name}' is given more than once; it may appear only once."
            )
            err.details.update({"QueryParameterName": name, "QueryParameterValue": values[1]})
            raise err


def _query_entities(call: Call, raw_path: str) -> web.Response:
    """Query Entities (``GET /t()``) with $filter, $select, $top and continuation."""
    table = call.resource.table
    assert table is not None
    principal = _authenticate(call, raw_path, table)
    principal.authorize(Operation.QUERY_ENTITIES, table)
    fmt = _negotiate(call)
    _check_query_options(call)
    q = query_of(call.request)
    flt_text = q.get("$filter")
    flt = odata.compile_entity_filter(flt_text) if flt_text and flt_text.strip() else None
    top = odata.parse_top(q["$top"]) if "$top" in q else None
    select, select_text = _select(call)
    npk = q.get("NextPartitionKey")
    nrk = q.get("NextRowKey")
    start: tuple[str, str] | None = None
    # Present but empty is a malformed token (400 InvalidInput), not "absent".
    if npk is not None:
        start = (
            odata.decode_continuation(npk),
            odata.decode_continuation(nrk) if nrk is not None else "",
        )
    elif nrk is not None:
        raise errors.invalid_input()
    page = partitions.query(
        call.request, call.backend, call.account, table, flt, top, start, principal.key_filter
    )
    headers = _odata_headers(fmt, feed=True, select=select is not None)
    if page.next_key is not None:
        headers["x-ms-continuation-NextPartitionKey"] = odata.encode_continuation(page.next_key[0])
        # An empty RowKey means "the start of that partition" (a range-partition boundary):
        # the service then sends NextPartitionKey alone (PROTOCOL.md 7.7), which resumes
        # at exactly the same key.
        if page.next_key[1]:
            headers["x-ms-continuation-NextRowKey"] = odata.encode_continuation(page.next_key[1])
    if fmt is Fmt.ATOM:
        body = atom_fmt.AtomWriter(call.endpoint, call.account, table, select).feed(page.entities)
    else:
        writer = json_fmt.EntityWriter(fmt, call.endpoint, call.account, table, select)
        body = writer.feed(page.entities, select_text)
    return web.Response(status=200, body=body, headers=headers)


def _entity_body(call: Call, table: str, entity: Entity, fmt: Fmt) -> bytes:
    select, _ = _select(call) if call.method == "GET" else (None, None)
    if fmt is Fmt.ATOM:
        return atom_fmt.AtomWriter(call.endpoint, call.account, table, select).single(entity)
    return json_fmt.EntityWriter(fmt, call.endpoint, call.account, table, select).single(entity)


def _get_entity(call: Call, raw_path: str) -> web.Response:
    """Point query (``GET /t(PartitionKey='..',RowKey='..')``)."""
    table = call.resource.table
    keys = call.resource.keys
    assert table is not None
    assert keys is not None
    principal = _authenticate(call, raw_path, table)
    principal.authorize(Operation.QUERY_ENTITIES, table)
    fmt = _negotiate(call)
    _check_query_options(call)
    _table_exists(call, table)
    if not principal.key_allowed(*keys):
        raise errors.authorization_failure()
    entity = call.backend.get_entity(call.account, table, keys[0], keys[1])
    headers = _odata_headers(fmt, select="$select" in query_of(call.request))
    headers["ETag"] = etag_for(entity.timestamp)
    return web.Response(status=200, body=_entity_body(call, table, entity, fmt), headers=headers)


def _entity_location(endpoint: str, table: str, pk: str, rk: str) -> str:
    return _header_safe(f"{endpoint}/{json_fmt.entity_path(table, pk, rk)}")


def _parse_insert(body: bytes, content_type: str | None, version: str) -> tuple[str, str, Any]:
    req_fmt = request_format(content_type, version)
    if req_fmt is Fmt.ATOM:
        return atom_fmt.parse_entity(body)
    return json_fmt.parse_entity(body)


def _parse_update(
    body: bytes, content_type: str | None, version: str, pk: str, rk: str
) -> dict[str, Any]:
    if not body.strip():
        return {}
    req_fmt = request_format(content_type, version)
    if req_fmt is Fmt.ATOM:
        return atom_fmt.parse_entity_update(body, pk, rk)
    return json_fmt.parse_entity_update(body, pk, rk)


async def _insert_entity(call: Call, raw_path: str) -> web.Response:
    """Insert Entity (``POST /t``), with Prefer handling."""
    table = call.resource.table
    assert table is not None
    principal = _authenticate(call, raw_path, table)
    principal.authorize(Operation.INSERT_ENTITY, table)
    fmt = _negotiate(call)
    body = await _read_body(call.request)
    _table_exists(call, table)
    pk, rk, props = _parse_insert(body, call.request.headers.get("Content-Type"), call.version)
    principal.check_key(pk, rk)
    result = await _write(call, table, WriteOp("insert", pk, rk, props))
    entity = result.entity
    assert entity is not None
    prefer = parse_prefer(call.request.headers.get("Prefer"), call.version)
    location = _entity_location(call.endpoint, table, pk, rk)
    if prefer is False:
        return _no_content(
            {
                "Preference-Applied": "return-no-content",
                "DataServiceVersion": "3.0;",
                "Location": location,
                "DataServiceId": location,
                "ETag": etag_for(entity.timestamp),
            }
        )
    headers = _odata_headers(fmt)
    if prefer is True:
        headers["Preference-Applied"] = "return-content"
    headers["Location"] = location
    headers["ETag"] = etag_for(entity.timestamp)
    return web.Response(status=201, body=_entity_body(call, table, entity, fmt), headers=headers)


def _write_kind_and_operation(
    method: str, if_match: str | None, version: str
) -> tuple[str, Operation]:
    """(backend write kind, operation for authorization) of a PUT/MERGE/PATCH.

    Without If-Match these are upserts, which need 2011-08-18 (before: 400).
    """
    if if_match is None and not versions.supports_upsert(version):
        raise errors.missing_required_header(
            "An HTTP header that's mandatory for this request is not specified.\n"
            "HeaderName:If-Match"
        )
    if method == "PUT":
        if if_match is None:
            return "replace", Operation.INSERT_OR_REPLACE_ENTITY
        return "replace", Operation.UPDATE_ENTITY
    if if_match is None:
        return "merge", Operation.INSERT_OR_MERGE_ENTITY
    return "merge", Operation.MERGE_ENTITY


def _if_match_of(headers: CIMultiDictProxy[str] | CIMultiDict[str]) -> str | None:
    values = headers.getall("If-Match", [])
    if "If-None-Match" in headers:
        raise errors.invalid_input()
    if len(values) > 1:
        raise errors.invalid_input()
    return parse_if_match(values[0]) if values else None


async def _update_entity(call: Call, raw_path: str) -> web.Response:
    """Update / Merge / Insert-or-Replace / Insert-or-Merge on an entity URL."""
    table = call.resource.table
    keys = call.resource.keys
    assert table is not None
    assert keys is not None
    if_match = _if_match_of(call.request.headers)
    kind, op = _write_kind_and_operation(call.method, if_match, call.version)
    principal = _authenticate(call, raw_path, table)
    principal.authorize(op, table)
    _negotiate(call)
    body = await _read_body(call.request)
    _table_exists(call, table)
    pk, rk = keys
    props = _parse_update(body, call.request.headers.get("Content-Type"), call.version, pk, rk)
    principal.check_key(pk, rk)
    result = await _write(
        call,
        table,
        WriteOp(kind, pk, rk, props, if_match),  # type: ignore[arg-type]
    )
    assert result.entity is not None
    return _no_content({"ETag": etag_for(result.entity.timestamp), "DataServiceVersion": "1.0;"})


async def _delete_entity(call: Call, raw_path: str) -> web.Response:
    """Delete Entity (If-Match required: 400 InvalidInput without it)."""
    table = call.resource.table
    keys = call.resource.keys
    assert table is not None
    assert keys is not None
    if_match = _if_match_of(call.request.headers)
    principal = _authenticate(call, raw_path, table)
    principal.authorize(Operation.DELETE_ENTITY, table)
    _negotiate(call)
    if if_match is None:
        raise errors.invalid_input()
    _table_exists(call, table)
    principal.check_key(*keys)
    await _write(call, table, WriteOp("delete", keys[0], keys[1], {}, if_match))
    return _no_content({"DataServiceVersion": "1.0;"})


# --- batches -------------------------------------------------------------------------------


@dataclass(slots=True)
class _BatchOp:
    index: int
    part: batch_fmt.BatchPart
    op: WriteOp
    operation: Operation  # what the principal must be allowed to do
    fmt: Fmt  # response format of this part
    prefer: bool | None


def _part_format(part: batch_fmt.BatchPart, version: str) -> Fmt:
    target_query = _split_target(part.target)[2]
    fmt_param = parse_query(target_query).get("$format") if "$format=" in target_query else None
    return negotiate_response(part.headers.get("Accept"), fmt_param, version).fmt


def _part_resource(call: Call, part: batch_fmt.BatchPart) -> Resource:
    host, raw_path, _ = _split_target(part.target)
    if host is not None:
        addr = split_account(host, raw_path, product_style=call.services.product_style_urls)
    else:
        first = raw_path[1:].partition("/")[0]
        if first in (call.account, call.account + "-secondary"):
            addr = split_account(None, raw_path)
        else:
            addr = split_account("x.table.localhost", raw_path)
            addr = AccountAddress(call.account, False, False, "", addr.resource)
    if addr.account != call.account:
        raise errors.invalid_input()
    return parse_resource(addr.resource)


def _batch_write_op(
    call: Call, index: int, part: batch_fmt.BatchPart, fmt: Fmt
) -> tuple[str, _BatchOp]:
    """The write of one change-set part (``fmt``: its negotiated response format)."""
    check_data_service_versions(part.headers)
    resource = _part_resource(call, part)
    method = _tunnelled_method(part.method, part.headers)
    prefer = parse_prefer(part.headers.get("Prefer"), call.version)
    ctype = part.headers.get("Content-Type")
    if resource.kind is Kind.COLLECTION and method == "POST":
        assert resource.table is not None
        pk, rk, props = _parse_insert(part.body, ctype, call.version)
        insert = WriteOp("insert", pk, rk, props)
        return resource.table, _BatchOp(index, part, insert, Operation.INSERT_ENTITY, fmt, prefer)
    if resource.kind is not Kind.ENTITY:
        raise errors.invalid_input()
    assert resource.table is not None
    assert resource.keys is not None
    pk, rk = resource.keys
    if_match = _if_match_of(part.headers)
    if method == "DELETE":
        if if_match is None:
            raise errors.invalid_input()
        delete = WriteOp("delete", pk, rk, {}, if_match)
        return resource.table, _BatchOp(index, part, delete, Operation.DELETE_ENTITY, fmt, prefer)
    if method in ("PUT", "MERGE", "PATCH"):
        kind, operation = _write_kind_and_operation(method, if_match, call.version)
        props = _parse_update(part.body, ctype, call.version, pk, rk)
        return resource.table, _BatchOp(
            index,
            part,
            WriteOp(kind, pk, rk, props, if_match),  # type: ignore[arg-type]
            operation,
            fmt,
            prefer,
        )
    raise errors.invalid_input()


def _part_error(call: Call, err: StubError, fmt: Fmt | None) -> batch_fmt.PartResponse:
    style: Fmt | str = fmt if fmt is not None and fmt.is_json else ODATA_XML
    if err.index is None:
        err = err.at(0)
    ctype, body = error_payload(err, call.request[REQUEST_ID], style)
    headers = [*_COMMON_HEADERS, ("DataServiceVersion", "3.0;"), ("Content-Type", ctype)]
    return batch_fmt.PartResponse(err.status, headers, body)


def _batch_success(
    call: Call, table: str, bop: _BatchOp, result: WriteResult
) -> batch_fmt.PartResponse:
    headers: list[tuple[str, str]] = list(_COMMON_HEADERS)
    op = bop.op
    entity = result.entity
    body = b""
    if op.kind == "insert":
        assert entity is not None
        location = _entity_location(call.endpoint, table, op.pk, op.rk)
        if bop.prefer is False:
            status = 204
            headers += [
                ("Preference-Applied", "return-no-content"),
                ("DataServiceVersion", "3.0;"),
                ("Location", location),
                ("DataServiceId", location),
                ("ETag", etag_for(entity.timestamp)),
            ]
        else:
            status = 201
            fmt = bop.fmt
            if bop.prefer is True:
                headers.append(("Preference-Applied", "return-content"))
            ctype = fmt.content_type
            headers += [
                ("DataServiceVersion", "3.0;"),
                ("Content-Type", ctype),
                ("Location", location),
                ("ETag", etag_for(entity.timestamp)),
            ]
            if fmt is Fmt.ATOM:
                body = atom_fmt.AtomWriter(call.endpoint, call.account, table).single(entity)
            else:
                body = json_fmt.EntityWriter(fmt, call.endpoint, call.account, table).single(entity)
    else:
        status = 204
        headers.append(("DataServiceVersion", "1.0;"))
        if entity is not None and op.kind != "delete":
            headers.append(("ETag", etag_for(entity.timestamp)))
    if bop.part.content_id is not None:
        headers.append(("Content-ID", bop.part.content_id))
    return batch_fmt.PartResponse(status, headers, body)


def _batch_response(parts: list[batch_fmt.PartResponse], *, changeset: bool) -> web.Response:
    ctype, body = batch_fmt.build_response(parts, changeset=changeset)
    return web.Response(
        status=202,
        body=body,
        headers={"Content-Type": ctype, **_COMMON},
    )


async def _batch_operation(call: Call, raw_path: str) -> web.Response:
    """Entity group transaction (``POST /$batch``), PROTOCOL.md 9."""
    request = call.request
    _negotiate(call)
    body = await _read_body(request)
    try:
        parsed = batch_fmt.parse_batch(body, request.headers.get("Content-Type"))
    except StubError:
        _authenticate(call, raw_path, None)
        raise
    # The addressed table (for a service SAS's tn) is the first part's.
    first_table: str | None = None
    try:
        first_table = _part_resource(call, parsed.parts[0]).table
    except StubError:
        first_table = None
    principal = _authenticate(call, raw_path, first_table)
    if not parsed.changeset:
        # A lone query is a read (allowed on the secondary): its part is authorized as one.
        return _batch_query(call, principal, parsed.parts[0])
    principal.authorize(Operation.BATCH, first_table)
    if len(parsed.parts) > 100:
        return _batch_response(
            [_part_error(call, errors.batch_too_many_operations().at(99), Fmt.MINIMAL)],
            changeset=True,
        )
    ops: list[_BatchOp] = []
    table: str | None = None
    for index, part in enumerate(parsed.parts):
        fmt: Fmt | None = None
        try:
            fmt = _part_format(part, call.version)
            part_table, bop = _batch_write_op(call, index, part, fmt)
            if table is None:
                table = part_table
            elif part_table.lower() != table.lower():
                raise errors.invalid_input()
            principal.authorize(bop.operation, part_table)
            principal.check_key(bop.op.pk, bop.op.rk)
            ops.append(bop)
        except StubError as exc:
            return _batch_response(
                [
                    _part_error(
                        call,
                        exc.at(index),
                        fmt or error_format_guess(part.headers.get("Accept"), None),
                    )
                ],
                changeset=True,
            )
    assert table is not None
    try:
        results = await _write_batch(call, table, [b.op for b in ops])
    except StubError as exc:
        index = exc.index if exc.index is not None else 0
        fmt = ops[index].fmt if index < len(ops) else Fmt.MINIMAL
        return _batch_response([_part_error(call, exc.at(index), fmt)], changeset=True)
    return _batch_response(
        [_batch_success(call, table, b, r) for b, r in zip(ops, results, strict=True)],
        changeset=True,
    )


def _batch_query(call: Call, principal: Principal, part: batch_fmt.BatchPart) -> web.Response:
    fmt: Fmt | None = None
    try:
        fmt = _part_format(part, call.version)
        check_data_service_versions(part.headers)
        resource = _part_resource(call, part)
        if resource.kind is not Kind.ENTITY:
            raise errors.not_implemented()
        assert resource.table is not None
        assert resource.keys is not None
        principal.authorize(Operation.QUERY_ENTITIES, resource.table)
        if call.backend.table_name(call.account, resource.table) is None:
            raise errors.table_not_found()
        if not principal.key_allowed(*resource.keys):
            raise errors.authorization_failure()
        entity = call.backend.get_entity(call.account, resource.table, *resource.keys)
    except StubError as exc:
        return _batch_response([_part_error(call, exc, fmt)], changeset=False)
    if fmt is Fmt.ATOM:
        body = atom_fmt.AtomWriter(call.endpoint, call.account, resource.table).single(entity)
    else:
        body = json_fmt.EntityWriter(fmt, call.endpoint, call.account, resource.table).single(
            entity
        )
    headers = [
        *_COMMON_HEADERS,
        ("DataServiceVersion", "3.0;"),
        ("Content-Type", fmt.content_type),
        ("ETag", etag_for(entity.timestamp)),
    ]
    if part.content_id is not None:
        headers.append(("Content-ID", part.content_id))
    return _batch_response([batch_fmt.PartResponse(200, headers, body)], changeset=False)


# --- rendering used by the middleware -------------------------------------------------------


def error_style_of(request: web.Request) -> Fmt | str:
    """The error body style chosen for a request so far (a guess if none was chosen).

    Example::

        style = error_style_of(request)  # Fmt.MINIMAL, ODATA_XML or STORAGE_XML
    """
    style: str | None = request.get(ERR_STYLE)
    if style is not None:
        if style in (STORAGE_XML, ODATA_XML):
            return style
        return Fmt(style)
    guess = error_format_guess(request.headers.get("Accept"), query_of(request).get("$format"))
    return guess if guess is not None else ODATA_XML


__all__ = [
    "MAX_BODY_BYTES",
    "Call",
    "Services",
    "dispatch",
    "error_message",
    "error_payload",
    "error_style_of",
    "parse_if_match",
]
