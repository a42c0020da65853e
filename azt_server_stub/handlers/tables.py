"""Table operations: Query Tables, Create Table, Delete Table, get one table.

Example::

    response = await create_table(call, raw_path)
"""

from __future__ import annotations

from aiohttp import web

from .. import errors, odata
from ..auth import Operation
from ..formats import atom as atom_fmt
from ..formats import json as json_fmt
from ..formats import json_tables
from ..formats.json_feed import key_literal
from ..formats.negotiation import Fmt, request_format
from .call import (
    Call,
    authenticate,
    check_query_options,
    durable_call,
    header_safe,
    negotiate,
    no_content,
    odata_headers,
    preference,
)
from .parsing import read_body


def query_tables(call: Call, raw_path: str) -> web.Response:
    """Query Tables (``GET /Tables``) with $filter, $top and NextTableName.

    Example::

        response = query_tables(call, raw_path)
    """
    principal = authenticate(call, raw_path, None)
    principal.authorize(Operation.QUERY_TABLES, None)
    fmt = negotiate(call)
    check_query_options(call)
    q = call.query
    flt_text = q.get("$filter")
    predicate = odata.compile_table_filter(flt_text) if flt_text else None
    top = odata.parse_top(q["$top"]) if "$top" in q else None
    nxt = q.get("NextTableName")
    next_name = odata.decode_table_continuation(nxt) if nxt is not None else None
    page = call.backend.query_tables(call.account, predicate, top, next_name)
    headers = odata_headers(fmt, feed=True)
    if page.next_name is not None:
        headers["x-ms-continuation-NextTableName"] = odata.encode_table_continuation(page.next_name)
    if fmt is Fmt.ATOM:
        body = atom_fmt.table_feed(call.endpoint, call.account, page.names)
    else:
        body = json_tables.table_feed(
            fmt, call.endpoint, call.account, page.names, call.flavor.json_form
        )
    return web.Response(status=200, body=body, headers=headers)


def _table_location(call: Call, name: str) -> str:
    return header_safe(f"{call.endpoint}/Tables({key_literal(name)})")


async def create_table(call: Call, raw_path: str) -> web.Response:
    """Create Table (``POST /Tables``).

    Example::

        response = await create_table(call, raw_path)
    """
    principal = authenticate(call, raw_path, None)
    principal.authorize(Operation.CREATE_TABLE, None)
    prefer = preference(call)
    fmt = negotiate(call)
    body = await read_body(call.request)
    req_fmt = request_format(call.headers.get("Content-Type"), call.version)
    name = (
        atom_fmt.parse_table_name(body) if req_fmt is Fmt.ATOM else json_fmt.parse_table_name(body)
    )
    created = await durable_call(call, call.backend.create_table, call.account, name)
    location = _table_location(call, created)
    if prefer is False:
        return no_content(
            {
                "Preference-Applied": "return-no-content",
                "Location": location,
                "DataServiceId": location,
                "DataServiceVersion": "3.0;",
            }
        )
    headers = odata_headers(fmt)
    headers["Location"] = location
    if prefer is True:
        headers["Preference-Applied"] = "return-content"
    if fmt is Fmt.ATOM:
        out = atom_fmt.table_single(call.endpoint, call.account, created)
    else:
        out = json_tables.table_single(
            fmt, call.endpoint, call.account, created, call.flavor.json_form
        )
    return web.Response(status=201, body=out, headers=headers)


async def delete_table(call: Call, raw_path: str) -> web.Response:
    """Delete Table (``DELETE /Tables('name')``).

    Example::

        response = await delete_table(call, raw_path)
    """
    table = call.resource.table
    assert table is not None
    principal = authenticate(call, raw_path, table)
    principal.authorize(Operation.DELETE_TABLE, table)
    negotiate(call)
    await durable_call(call, call.backend.delete_table, call.account, table)
    return no_content()


def get_table(call: Call, raw_path: str) -> web.Response:
    """``GET /Tables('name')``: the table as a single entry (404 ResourceNotFound).

    Example::

        response = get_table(call, raw_path)
    """
    table = call.resource.table
    assert table is not None
    principal = authenticate(call, raw_path, None)
    principal.authorize(Operation.QUERY_TABLES, None)
    fmt = negotiate(call)
    name = call.backend.table_name(call.account, table)
    if name is None:
        raise errors.resource_not_found()
    if fmt is Fmt.ATOM:
        out = atom_fmt.table_single(call.endpoint, call.account, name)
    else:
        out = json_tables.table_single(
            fmt, call.endpoint, call.account, name, call.flavor.json_form
        )
    return web.Response(status=200, body=out, headers=odata_headers(fmt))
