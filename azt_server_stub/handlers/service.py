"""Service-level operations: service properties and stats, table ACLs (Storage XML).

Example::

    response = await service_operation(call, raw_path, "service", "properties")
"""

from __future__ import annotations

import datetime as _dt

from aiohttp import web

from .. import errors
from ..addressing import invalid_uri
from ..auth import Operation
from ..formats import xml as xml_fmt
from .call import Call, authenticate, durable_call
from .parsing import read_body


async def service_operation(
    call: Call, raw_path: str, restype: str | None, comp: str | None
) -> web.StreamResponse:
    """Get/Set Table Service Properties, Get Table Service Stats.

    Example::

        response = await service_operation(call, raw_path, "service", "stats")
    """
    method = call.method
    if restype != "service" or comp not in ("properties", "stats"):
        if comp is None and restype is None:
            raise invalid_uri()
        raise errors.invalid_query_parameter_value()
    if comp == "stats":
        if method != "GET":
            raise errors.method_not_allowed()
        principal = authenticate(call, raw_path, None)
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
        principal = authenticate(call, raw_path, None)
        principal.authorize(Operation.GET_SERVICE_PROPERTIES, None)
        doc = call.backend.get_service_properties(call.account)
        body = doc if doc is not None else xml_fmt.ServiceProperties().to_xml()
        return web.Response(status=200, body=body, headers={"Content-Type": "application/xml"})
    if method == "PUT":
        principal = authenticate(call, raw_path, None)
        principal.authorize(Operation.SET_SERVICE_PROPERTIES, None)
        body = await read_body(call.request)
        stored = call.backend.get_service_properties(call.account)
        current = xml_fmt.parse_service_properties(stored) if stored else None
        props = xml_fmt.parse_service_properties(body, current)
        await durable_call(call, call.backend.set_service_properties, call.account, props.to_xml())
        return web.Response(status=202)
    raise errors.method_not_allowed()


async def acl_operation(call: Call, raw_path: str) -> web.StreamResponse:
    """Get (GET/HEAD) or Set (PUT) Table ACL.

    Example::

        response = await acl_operation(call, raw_path)
    """
    table = call.resource.table
    assert table is not None
    method = call.method
    if method in ("GET", "HEAD"):
        principal = authenticate(call, raw_path, table)
        principal.authorize(Operation.GET_TABLE_ACL, table)
        acl = call.backend.get_acl(call.account, table)
        body = xml_fmt.acl_body(acl)
        if method == "HEAD":
            return web.Response(status=200, headers={"Content-Type": "application/xml"})
        return web.Response(status=200, body=body, headers={"Content-Type": "application/xml"})
    if method == "PUT":
        principal = authenticate(call, raw_path, table)
        principal.authorize(Operation.SET_TABLE_ACL, table)
        body = await read_body(call.request)
        acl = xml_fmt.parse_acl(body)
        await durable_call(call, call.backend.set_acl, call.account, table, acl)
        return web.Response(status=204)
    raise errors.method_not_allowed()
