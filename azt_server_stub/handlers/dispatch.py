"""The application's only route: from the request to the operation that serves it.

:func:`dispatch` resolves the account and resource, applies verb tunnelling, sets the
version and error style, then calls the operation's handler (tables, entities, batch,
service, CORS). No storage logic lives in the handlers: the backend owns it.

Example::

    app.router.add_route("*", "/{tail:.*}", dispatch)
"""

from __future__ import annotations

from typing import NamedTuple

from aiohttp import web
from multidict import MultiDictProxy, istr

from .. import errors, versions
from ..addressing import AccountAddress, Kind, Resource, parse_resource, split_account
from ..flavors import flavor_of
from ..request_state import (
    ACCOUNT,
    ERR_STYLE,
    QUERY,
    SERVICES_KEY,
    STORAGE_XML,
    VERSION,
    Services,
    query_of,
    state_of,
)
from .batch import batch_operation
from .call import Call, authenticate
from .cors import preflight
from .entities import delete_entity, get_entity, insert_entity, query_entities, update_entity
from .parsing import check_data_service_versions, check_timeout, split_target, tunnelled_method
from .service import acl_operation, service_operation
from .tables import create_table, delete_table, get_table, query_tables

_X_MS_VERSION = istr("x-ms-version")


_KNOWN_VERBS = {"GET", "HEAD", "POST", "PUT", "MERGE", "PATCH", "DELETE", "OPTIONS"}


class _Route(NamedTuple):
    """What a request's target and host resolve to (see :data:`_ROUTES`)."""

    raw_path: str
    addr: AccountAddress
    resource: Resource
    query: MultiDictProxy[str]
    endpoint_tail: str  # the endpoint after the scheme: "://host/account"


#: The addressing of recent requests by (raw target, ``request.host``, product-style
#: URLs): what ``split_target``, ``split_account``, ``parse_resource``, the parsed query
#: and the endpoint's host part make of them, all functions of that key alone. Only
#: targets that resolve enter (a refusal is raised afresh by the general steps), and
#: only short ones; bounded, emptied when full.
_ROUTES: dict[tuple[str, str, bool], _Route] = {}


_ROUTES_MAX = 4096


#: Longest target and host remembered (together): a few MiB for a full memo.
_ROUTE_KEY_MAX = 1024


def _resolve(
    request: web.Request, raw_target: str, host: str, services: Services, method: str
) -> _Route:
    """The general steps of :func:`dispatch` up to the resource (errors in their order)."""
    url_host, raw_path, _ = split_target(raw_target)
    addr = split_account(url_host or host, raw_path, product_style=services.product_style_urls)
    state_of(request)[ACCOUNT] = addr.account
    if method not in _KNOWN_VERBS:
        raise errors.unsupported_http_verb()
    resource = parse_resource(addr.resource)
    route = _Route(raw_path, addr, resource, query_of(request), f"://{host}{addr.prefix}")
    if len(raw_target) + len(host) <= _ROUTE_KEY_MAX:
        if len(_ROUTES) >= _ROUTES_MAX:
            _ROUTES.clear()
        _ROUTES[raw_target, host, services.product_style_urls] = route
    return route


async def dispatch(request: web.Request) -> web.StreamResponse:
    """Serve one request (the application's only route).

    Example::

        app.router.add_route("*", "/{tail:.*}", dispatch)
    """
    app = request.app
    services = app[SERVICES_KEY]
    raw_target = request.raw_path
    host = request.host
    method = request.method.upper()
    state = state_of(request)
    route = _ROUTES.get((raw_target, host, services.product_style_urls))
    if route is None:
        route = _resolve(request, raw_target, host, services, method)
        query = route.query
    else:
        state[ACCOUNT] = route.addr.account
        if method not in _KNOWN_VERBS:
            raise errors.unsupported_http_verb()
        query = route.query
        state[QUERY] = query
    raw_path, addr, resource = route.raw_path, route.addr, route.resource
    if method == "OPTIONS":
        state[ERR_STYLE] = STORAGE_XML
        return preflight(request, services, addr)
    headers = request.headers
    version = versions.request_version(
        headers.get(_X_MS_VERSION), query.get("sv"), services.lenient_versions
    )
    state[VERSION] = version
    effective = tunnelled_method(method, headers)
    endpoint = request.scheme + route.endpoint_tail
    call = Call(
        request,
        services,
        addr,
        resource,
        effective,
        version,
        endpoint,
        query,
        flavor_of(app),
        headers,
        state,
    )
    comp = query.get("comp")
    restype = query.get("restype")
    if resource.kind is Kind.SERVICE:
        request[ERR_STYLE] = STORAGE_XML
        _require_version_header(request)
        check_timeout(query)
        return await service_operation(call, raw_path, restype, comp)
    if comp == "acl" and resource.kind is Kind.COLLECTION and resource.bare:
        request[ERR_STYLE] = STORAGE_XML
        _require_version_header(request)
        check_timeout(query)
        return await acl_operation(call, raw_path)
    # OData operations: errors follow the negotiated format (until negotiate runs,
    # error_style_of guesses it from Accept/$format)
    if query:
        check_timeout(query)
    check_data_service_versions(headers)
    if resource.kind is Kind.TABLES:
        if effective == "GET":
            return query_tables(call, raw_path)
        if effective == "POST":
            return await create_table(call, raw_path)
        raise errors.method_not_allowed()
    if resource.kind is Kind.TABLE_NAMED:
        if effective == "DELETE":
            return await delete_table(call, raw_path)
        if effective == "GET":
            return get_table(call, raw_path)
        raise errors.method_not_allowed()
    if resource.kind is Kind.BATCH:
        if effective != "POST":
            raise errors.method_not_allowed()
        return await batch_operation(call, raw_path)
    if resource.kind is Kind.METADATA:
        authenticate(call, raw_path, None)
        raise errors.not_implemented()
    if resource.kind is Kind.COLLECTION:
        if effective == "GET":
            return query_entities(call, raw_path)
        if effective == "POST":
            return await insert_entity(call, raw_path)
        raise errors.method_not_allowed()
    # Kind.ENTITY
    if effective == "GET":
        return get_entity(call, raw_path)
    if effective in ("PUT", "MERGE", "PATCH"):
        return await update_entity(call, raw_path)
    if effective == "DELETE":
        return await delete_entity(call, raw_path)
    raise errors.method_not_allowed()


def _require_version_header(request: web.Request) -> None:
    """ACL and service-level operations require ``x-ms-version`` (or a SAS ``sv``)."""
    if "x-ms-version" not in request.headers and "sv" not in query_of(request):
        err = errors.missing_required_header()
        err.details["HeaderName"] = "x-ms-version"
        raise err
