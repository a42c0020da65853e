"""One request being served (:class:`Call`) and what every operation does with it.

Authenticate, negotiate the response format, check the table exists, write through the
group committer, build OData response headers.

Example::

    >>> odata_headers(Fmt.MINIMAL)["DataServiceVersion"]
    '3.0;'
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from aiohttp import hdrs, web
from multidict import CIMultiDictProxy, MultiDictProxy, istr

from .. import errors, versions
from ..addressing import SECONDARY_SUFFIX, AccountAddress, Resource
from ..auth import Principal, RequestView
from ..backend import Backend, GroupWrite, WriteOp, WriteResult
from ..flavors import StubFlavor
from ..formats.negotiation import (
    Fmt,
    Negotiated,
    error_format_guess,
    negotiate_response,
    parse_prefer,
)
from ..lined import LinedResponse
from ..request_state import (
    ERR_STYLE,
    ODATA_XML,
    PREFERENCE_APPLIED,
    Services,
    query_of,
)

COMMON_HEADERS: tuple[tuple[str, str], ...] = (
    (istr("Cache-Control"), "no-cache"),
    (istr("X-Content-Type-Options"), "nosniff"),
)


COMMON: dict[str, str] = dict(COMMON_HEADERS)
#: :data:`COMMON` as the head's lines (a :class:`~azt_server_stub.lined.LinedResponse`'s text)
_COMMON_TEXT = "\r\n".join(map(": ".join, COMMON_HEADERS))


_DSV: str = istr("DataServiceVersion")


_UNSUPPORTED_OPTIONS = ("$orderby", "$skip", "$expand", "$inlinecount", "$count", "$skiptoken")


@dataclass(slots=True)
class Call:
    """One request being served; ``flavor``: the service flavour the application answers
    as (``flavors.flavor_of`` of the request's application), ``headers``: the request's
    (``request.headers``), ``state``: its own storage (``request_state.state_of``); each
    read once by ``dispatch``, as the handlers read them often.

    Example::

        >>> from aiohttp.test_utils import make_mocked_request
        >>> from azt_server_stub.addressing import parse_resource, split_account
        >>> from azt_server_stub.flavors import STORAGE
        >>> from azt_server_stub.request_state import parse_query, state_of
        >>> from azt_server_stub.auth import Authenticator
        >>> services = Services(Backend(), Authenticator({}, lambda a, t: []))
        >>> addr = split_account("127.0.0.1:10002", "/acct/t(PartitionKey='p',RowKey='r')")
        >>> request = make_mocked_request("GET", "/acct/t(PartitionKey='p',RowKey='r')")
        >>> call = Call(request, services, addr, parse_resource(addr.resource), "GET",
        ...             "2019-02-02", "http://127.0.0.1:10002/acct", parse_query(""), STORAGE,
        ...             request.headers, state_of(request))
        >>> call.resource.kind, call.resource.table, call.resource.keys
        (<Kind.ENTITY: 'entity'>, 't', ('p', 'r'))
        >>> call.flavor.name
        'storage'
    """

    request: web.Request
    services: Services
    addr: AccountAddress
    resource: Resource
    method: str  # effective (after X-HTTP-Method)
    version: str
    endpoint: str
    query: MultiDictProxy[str]  # the request's, per query_of
    flavor: StubFlavor
    headers: CIMultiDictProxy[str]
    state: dict[Any, Any]
    principal: Principal | None = None

    @property
    def backend(self) -> Backend:
        """The application's backend (shorthand for ``services.backend``).

        Example::

            >>> from aiohttp.test_utils import make_mocked_request
            >>> from azt_server_stub.addressing import parse_resource, split_account
            >>> from azt_server_stub.flavors import STORAGE
            >>> from azt_server_stub.request_state import parse_query, state_of
            >>> from azt_server_stub.auth import Authenticator
            >>> backend = Backend()
            >>> services = Services(backend, Authenticator({}, lambda a, t: []))
            >>> addr = split_account("127.0.0.1:10002", "/acct/Tables")
            >>> request = make_mocked_request("GET", "/acct/Tables")
            >>> call = Call(request, services, addr, parse_resource(addr.resource), "GET",
            ...             "2019-02-02", "http://h/acct", parse_query(""), STORAGE,
            ...             request.headers, state_of(request))
            >>> call.backend is backend
            True
        """
        return self.services.backend

    @property
    def account(self) -> str:
        """The addressed account, without a ``-secondary`` suffix.

        Example::

            >>> from aiohttp.test_utils import make_mocked_request
            >>> from azt_server_stub.addressing import parse_resource, split_account
            >>> from azt_server_stub.flavors import STORAGE
            >>> from azt_server_stub.request_state import parse_query, state_of
            >>> from azt_server_stub.auth import Authenticator
            >>> services = Services(Backend(), Authenticator({}, lambda a, t: []))
            >>> addr = split_account("127.0.0.1:10002", "/acct-secondary/Tables")
            >>> request = make_mocked_request("GET", "/acct-secondary/Tables")
            >>> call = Call(request, services, addr, parse_resource(addr.resource), "GET",
            ...             "2019-02-02", "http://h/acct", parse_query(""), STORAGE,
            ...             request.headers, state_of(request))
            >>> call.account, call.addr.secondary
            ('acct', True)
        """
        return self.addr.account


_T = TypeVar("_T")


async def write_entity(call: Call, table: str, op: WriteOp) -> WriteResult:
    """One entity write: inline in memory, group-committed with a durable store.

    Example::

        result = await write_entity(call, table, WriteOp("delete", pk, rk, {}, "*"))
    """
    committer = call.services.committer
    account = call.addr.account  # (call.account, without the property's call)
    if committer is None:
        return call.services.backend.write(account, table, op)
    if committer.inline:  # committed at once: no coroutine
        if op.kind == "insert":  # (a lone insert: no group to build and take apart)
            return committer.insert_inline(account, table, op)
        return committer.commit_inline(GroupWrite(account, table, [op]))[0]
    return (await committer.submit(GroupWrite(account, table, [op])))[0]


async def durable_call(call: Call, write: Callable[..., _T], *args: Any) -> _T:
    """A table-level write (create/delete table, ACL, service properties): inline in
    memory, on the writer thread with a durable store (the loop keeps serving meanwhile).

    Example::

        await durable_call(call, call.backend.delete_table, call.account, table)
    """
    committer = call.services.committer
    if committer is None:
        return write(*args)
    return await committer.call(write, *args)


async def write_batch(call: Call, table: str, ops: list[WriteOp]) -> list[WriteResult]:
    """A change set: inline in memory, group-committed with a durable store.

    Example::

        results = await write_batch(call, table, [WriteOp("insert", "p", "r", {})])
    """
    committer = call.services.committer
    if committer is None:
        return call.backend.execute_batch(call.account, table, ops)
    return await committer.submit(GroupWrite(call.account, table, ops, batch=True))


def header_safe(url: str) -> str:
    """Percent-encode what may not travel in a header (non-ASCII, controls, spaces).

    Example::

        >>> header_safe("http://h/a/Tables('caf\u00e9')")
        "http://h/a/Tables('caf%C3%A9')"
    """
    if url.isascii() and url.isprintable() and " " not in url:
        return url
    return quote(url, safe="!#$&'()*+,/:;=?@[]~%")


def odata_headers(fmt: Fmt, *, feed: bool = False, select: bool = False) -> dict[str, str]:
    """Headers of an OData response body.

    ``DataServiceVersion`` is the lowest that describes the payload: 3.0 for JSON, 2.0
    for an Atom projection, 1.0 for other Atom (WCF clients refuse a response version
    above their ``MaxDataServiceVersion``).

    Example::

        >>> odata_headers(Fmt.ATOM, select=True)["DataServiceVersion"]
        '2.0;'
    """
    return dict(_ODATA_HEADERS[fmt, feed, select])


def _odata_headers(fmt: Fmt, feed: bool, select: bool) -> dict[str, str]:
    ctype = fmt.content_type
    if fmt is Fmt.ATOM:
        ctype = "application/atom+xml;type=feed;charset=utf-8" if feed else ctype
        dsv = "2.0;" if select else "1.0;"
    else:
        dsv = "3.0;"
    return {hdrs.CONTENT_TYPE: ctype, _DSV: dsv, **COMMON}


#: Every combination :func:`odata_headers` answers, built once (callers get a copy).
_ODATA_HEADERS = {
    (fmt, feed, select): _odata_headers(fmt, feed, select)
    for fmt in Fmt
    for feed in (False, True)
    for select in (False, True)
}


def no_content(extra: dict[str, str] | None = None) -> web.Response:
    """A ``204`` with the common headers (and ``extra``).

    Example::

        >>> no_content({"ETag": "x"}).status
        204
    """
    if not extra:
        return LinedResponse(204, _COMMON_TEXT)
    headers = dict(COMMON)
    headers.update(extra)
    return LinedResponse(204, "\r\n".join(map(": ".join, headers.items())))


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


def authenticate(call: Call, raw_path: str, table: str | None) -> Principal:
    """Authenticate the call's request for ``table`` (kept on ``call.principal``).

    Example::

        principal = authenticate(call, raw_path, table)
        principal.authorize(Operation.QUERY_ENTITIES, table)
    """
    addr = call.addr
    authenticator = call.services.authenticator
    request = call.request
    if not addr.secondary:
        fast = authenticator.shared_key(
            request.method, raw_path, call.query, call.headers, addr.account
        )
        if fast is not None:
            call.principal = fast
            return fast
    addressed = addr.account + SECONDARY_SUFFIX if addr.secondary else addr.account
    principal = authenticator.authenticate(request_view(request, raw_path), addressed, table)
    call.principal = principal
    return principal


def negotiate(call: Call) -> Fmt:
    """The response format of an OData operation (also fixes the error style).

    Example::

        fmt = negotiate(call)
    """
    fmt, style = _negotiated(call.headers.get(hdrs.ACCEPT), call.query.get("$format"), call.version)
    call.state[ERR_STYLE] = style
    return fmt


def preference(call: Call) -> bool | None:
    """The request's ``Prefer`` (an insert's or Create Table's), remembered for the answer.

    True for return-content, False for return-no-content, None for neither. The
    ``Preference-Applied`` it earns is sent on an error answer too, as Storage does
    (:func:`~azt_server_stub.app.error_response`).

    Example::

        prefer = preference(call)
    """
    prefer = parse_prefer(call.headers.get("Prefer"), call.version)
    if prefer is not None:
        applied = "return-content" if prefer else "return-no-content"
        call.state[PREFERENCE_APPLIED] = applied
    return prefer


def error_style_for(accept: str | None, fmt_param: str | None, version: str) -> Fmt | str:
    """The Storage error style of an OData request (or change-set part) with this
    ``Accept``/``$format``: what :func:`negotiate` would fix; a guess if it refuses.

    Example::

        >>> error_style_for("*/*", None, "2019-02-02")
        'odata-xml'
        >>> error_style_for("application/json", None, "2019-02-02")
        <Fmt.MINIMAL: 'minimalmetadata'>
    """
    try:
        style = _negotiated(accept, fmt_param, version)[1]
    except errors.StubError:
        guess = error_format_guess(accept, fmt_param)
        return guess if guess is not None else ODATA_XML
    return style if style == ODATA_XML else Fmt(style)


@functools.lru_cache(maxsize=512)
def _negotiated(accept: str | None, fmt_param: str | None, version: str) -> tuple[Fmt, str]:
    """(format, error style) of an OData operation (cached; refusals are raised afresh)."""
    if fmt_param is not None and not versions.supports_format_option(version):
        fmt_param = None
    chosen: Negotiated = negotiate_response(accept, fmt_param, version)
    if chosen.implicit or chosen.wildcard:  # Storage: OData XML errors (Negotiated)
        return chosen.fmt, ODATA_XML
    return chosen.fmt, chosen.fmt.value if chosen.fmt.is_json else ODATA_XML


def table_exists(call: Call, table: str) -> str:
    """The stored name of ``table``: ``404 TableNotFound`` when there is none, but first
    ``400 InvalidResourceName`` / ``OutOfRangeInput`` for a name no table can have (Storage
    answers an entity operation on such a name so: azure-data-tables' live
    ``test_table_client.test_table_name_errors`` and its ``_validate_tablename_error``).

    Example::

        name = table_exists(call, table)
    """
    name = call.services.backend.table_name(call.addr.account, table)  # (every operation)
    if name is None:
        call.flavor.table_naming.validate(table)
        raise errors.table_not_found()
    return name


_SINGLE_OPTIONS = (
    "$filter",
    "$select",
    "$top",
    "$format",
    "NextPartitionKey",
    "NextRowKey",
    "NextTableName",
)


def check_query_options(call: Call) -> None:
    """Unsupported OData options (``$orderby``...) and options given more than once: 400.

    Example::

        check_query_options(call)  # before reading $filter, $top, $select
    """
    query = call.query
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
