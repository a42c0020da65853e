"""Entity operations: query, point read, insert, update/merge/upsert, delete.

The request-body parsers and write-kind rules here are shared with batch parts.

Example::

    response = await insert_entity(call, raw_path)
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii
from typing import Any
from urllib.parse import quote

from aiohttp import web

from .. import errors, odata, versions
from ..auth import Operation
from ..backend import WriteOp
from ..flavors import STORAGE, StubFlavor
from ..formats import atom as atom_fmt
from ..formats import json as json_fmt
from ..formats import json_feed
from ..formats.json_feed import entity_etag, layout_for
from ..formats.json_form import JsonForm
from ..formats.negotiation import Fmt, request_format
from ..lined import LinedResponse
from ..model import Entity, etag_for, key_places
from ..realism import partitions
from .batch_plain import plain_entity
from .call import (
    COMMON,
    Call,
    authenticate,
    check_query_options,
    header_safe,
    negotiate,
    no_content,
    odata_headers,
    preference,
    table_exists,
    write_entity,
)
from .parsing import data_service_version, if_match_of, read_body


def _select(call: Call) -> tuple[list[str] | None, str | None]:
    text = call.query.get("$select")
    if text is None:
        return None, None
    if not text.strip():
        # no projection; Storage still names the (empty) $select in odata.metadata
        # (recorded: ``$select=`` and ``$select=%20`` give ``...#t&$select=``)
        return None, "" if call.flavor.select_in_metadata else None
    if not versions.supports_select(call.version):
        raise errors.unsupported_query_parameter(
            "The $select query option needs x-ms-version 2011-08-18 or later."
        )
    max_dsv = data_service_version(call.headers, "MaxDataServiceVersion")
    if max_dsv is not None and max_dsv < 2:
        raise errors.invalid_input(
            "The response requires that version 2.0 of the protocol be used, but the "
            "MaxDataServiceVersion header value in the request is set to '1.0'."
        )
    names = odata.parse_select(text)
    if not names or names == ["*"]:
        return None, None
    # Storage names the $select in odata.metadata (feeds and single entities); Cosmos
    # does not (both recorded, docs/cosmos.md).
    return names, quote(text, safe=",*$") if call.flavor.select_in_metadata else None


def query_entities(call: Call, raw_path: str) -> web.Response:
    """Query Entities (``GET /t()``) with $filter, $select, $top and continuation.

    Example::

        response = query_entities(call, raw_path)
    """
    table = call.resource.table
    assert table is not None
    principal = authenticate(call, raw_path, table)
    principal.authorize(Operation.QUERY_ENTITIES, table)
    fmt = negotiate(call)
    check_query_options(call)
    q = call.query
    flt_text = q.get("$filter")
    flt = odata.compile_entity_filter(flt_text) if flt_text and flt_text.strip() else None
    top = odata.parse_top(q["$top"]) if "$top" in q else None
    select, select_text = _select(call)
    npk = q.get("NextPartitionKey")
    nrk = q.get("NextRowKey")
    start: tuple[str, str] | None = None
    start_rank: int | None = None
    cosmos_tokens = call.flavor.cosmos_tokens
    # Present but empty is a malformed token (400 InvalidInput), not "absent".
    if npk is not None:
        position = odata.decode_cosmos_continuation(npk) if cosmos_tokens else None
        if position is not None:
            start_rank, start = position
        else:
            start = (
                odata.decode_continuation(npk),
                odata.decode_continuation(nrk) if nrk is not None else "",
            )
    elif nrk is not None:
        raise errors.invalid_input()
    page = partitions.query(
        call.request,
        call.backend,
        call.account,
        table,
        flt,
        top,
        start,
        principal.key_filter,
        start_rank,
    )
    headers = odata_headers(fmt, feed=True, select=select is not None)
    if page.next_key is not None and cosmos_tokens:
        npk, nrk = odata.encode_cosmos_continuation(page.next_key, page.next_rank or 0)
        headers["x-ms-continuation-NextPartitionKey"] = npk
        headers["x-ms-continuation-NextRowKey"] = nrk
    elif page.next_key is not None:
        headers["x-ms-continuation-NextPartitionKey"] = odata.encode_continuation(page.next_key[0])
        # An empty RowKey means "the start of that partition" (a range-partition boundary):
        # the service then sends NextPartitionKey alone (PROTOCOL.md 7.7), which resumes
        # at exactly the same key.
        if page.next_key[1]:
            headers["x-ms-continuation-NextRowKey"] = odata.encode_continuation(page.next_key[1])
    if fmt is Fmt.ATOM:
        body = atom_fmt.AtomWriter(call.endpoint, call.account, table, select).feed(page.entities)
    else:
        writer = json_fmt.EntityWriter(
            fmt,
            call.endpoint,
            call.account,
            table,
            select,
            form=call.flavor.json_form,
        )
        body = writer.feed(page.entities, select_text)
    return web.Response(status=200, body=body, headers=headers)


def _no_text(_: Entity) -> str:
    return ""


#: (endpoint, table, form) -> what precedes a single entity's members in a minimal metadata
#: body: ``{"odata.metadata":"<endpoint>/$metadata#<table>/@Element",`` (the form's URL).
#: Bounded.
_ELEMENT_PREFIXES: dict[tuple[str, str, JsonForm], bytes] = {}


def _element_prefix(endpoint: str, table: str, form: JsonForm) -> bytes:
    prefix = _ELEMENT_PREFIXES.get((endpoint, table, form))
    if prefix is None:
        writer = json_fmt.EntityWriter(Fmt.MINIMAL, endpoint, "", table, form=form)
        url = writer.metadata_url(element=True)
        prefix = ('{"odata.metadata":' + encode_basestring_ascii(url) + ",").encode("ascii")
        if len(_ELEMENT_PREFIXES) >= 1024:
            _ELEMENT_PREFIXES.clear()
        _ELEMENT_PREFIXES[endpoint, table, form] = prefix
    return prefix


def _entity_body(call: Call, table: str, entity: Entity, fmt: Fmt) -> bytes:
    select, select_text = _select(call) if call.method == "GET" else (None, None)
    form = call.flavor.json_form
    if select is None and select_text is None and (fmt is Fmt.MINIMAL or fmt is Fmt.NOMETADATA):
        # EntityWriter.single's text (the remembered entity text), without the writer
        meta = fmt is Fmt.MINIMAL
        layout = layout_for(
            meta=meta,
            fixed=form.fixed_fraction,
            cosmos_order=form.cosmos_order,
            key_places=form.key_places,
        )
        text = json_feed.write_entity(entity, layout, _no_text)
        if text:
            if meta:
                return _element_prefix(call.endpoint, table, form) + text[1:]
            return text
    if fmt is Fmt.ATOM:
        return atom_fmt.AtomWriter(call.endpoint, call.account, table, select).single(entity)
    writer = json_fmt.EntityWriter(fmt, call.endpoint, call.account, table, select, form=form)
    return writer.single(entity, select_text)


def get_entity(call: Call, raw_path: str) -> web.Response:
    """Point query (``GET /t(PartitionKey='..',RowKey='..')``).

    Example::

        response = get_entity(call, raw_path)
    """
    table = call.resource.table
    keys = call.resource.keys
    assert table is not None
    assert keys is not None
    principal = authenticate(call, raw_path, table)
    restricted = principal.grant is not None or principal.secondary  # (else nothing refuses)
    if restricted:
        principal.authorize(Operation.QUERY_ENTITIES, table)
    fmt = negotiate(call)
    check_query_options(call)
    table_exists(call, table)
    if restricted and not principal.key_allowed(*keys):
        raise errors.authorization_failure()
    entity = call.backend.get_entity(call.account, table, keys[0], keys[1])
    headers = odata_headers(fmt, select="$select" in call.query)
    headers["ETag"] = entity_etag(entity.timestamp)
    return web.Response(status=200, body=_entity_body(call, table, entity, fmt), headers=headers)


def entity_location(endpoint: str, table: str, pk: str, rk: str) -> str:
    """The ``Location`` header value of an entity.

    Example::

        >>> entity_location("http://h/a", "t", "p", "r")
        "http://h/a/t(PartitionKey='p',RowKey='r')"
    """
    # entity_path's text, written out (a call less per answer; tests/stub/test_request_fastpath.py
    # holds the two equal)
    pk_literal = pk.replace("'", "''")
    rk_literal = rk.replace("'", "''")
    return header_safe(f"{endpoint}/{table}(PartitionKey='{pk_literal}',RowKey='{rk_literal}')")


def parse_insert(body: bytes, content_type: str | None, version: str) -> tuple[str, str, Any]:
    """``(PartitionKey, RowKey, properties)`` of an insert body (JSON or Atom).

    Example::

        >>> body = b'{"PartitionKey": "p", "RowKey": "r"}'
        >>> parse_insert(body, "application/json", "2019-02-02")[:2]
        ('p', 'r')
    """
    req_fmt = request_format(content_type, version)
    if req_fmt is Fmt.ATOM:
        return atom_fmt.parse_entity(body)
    return json_fmt.parse_entity(body)


def insert_op(
    body: bytes,
    content_type: str | None,
    version: str,
    places: bool = False,
    flavor: StubFlavor = STORAGE,
) -> WriteOp:
    """The write of an Insert Entity body: what :func:`parse_insert` reads, as a write;
    ``places``: note where a JSON body had its keys among the properties (``keys_at``,
    for a flavour that writes them there: :attr:`JsonForm.key_places`). ``flavor``: the
    members it drops from a JSON body (:meth:`StubFlavor.drop_shadowed`).

    A JSON entity of the usual kinds is converted and checked in one pass
    (:func:`~azt_server_stub.handlers.batch_plain.plain_entity`, as change-set parts are):
    its write says whether validation would accept it (``checked``), so the backend does
    not validate it again. Any other body is read by :func:`parse_insert`'s steps, with
    the same answers and the same errors.

    Example::

        >>> body = b'{"PartitionKey": "p", "RowKey": "r", "n": 1}'
        >>> op = insert_op(body, "application/json", "2019-02-02")
        >>> op.kind, op.pk, op.rk, op.props
        ('insert', 'p', 'r', {'n': ('Edm.Int32', 1)})
        >>> body = b'{"n": 1, "PartitionKey": "p", "RowKey": "r"}'
        >>> insert_op(body, "application/json", "2019-02-02", places=True).keys_at > 0
        True
    """
    if request_format(content_type, version) is Fmt.ATOM:
        pk, rk, props = atom_fmt.parse_entity(body)
        return WriteOp("insert", pk, rk, props)
    members = flavor.drop_shadowed(json_fmt.loads_object(body))
    got = plain_entity(members, None, None)
    if got is not None:
        at = key_places(members, got[2]) if places else 0
        return WriteOp("insert", got[0], got[1], got[2], None, got[3], at)
    key_pk, key_rk, props = json_fmt.entity_from_members(members, keys_required=True)
    assert key_pk is not None
    assert key_rk is not None
    return WriteOp(
        "insert", key_pk, key_rk, props, keys_at=key_places(members, props) if places else 0
    )


def parse_update(
    body: bytes, content_type: str | None, version: str, pk: str, rk: str
) -> dict[str, Any]:
    """The properties of an update/merge body (JSON or Atom; empty body: none).

    Example::

        >>> parse_update(b"", "application/json", "2019-02-02", "p", "r")
        {}
    """
    return update_props(body, content_type, version, pk, rk)[0]


def update_props(
    body: bytes,
    content_type: str | None,
    version: str,
    pk: str,
    rk: str,
    *,
    places: bool = False,
    flavor: StubFlavor = STORAGE,
) -> tuple[dict[str, Any], int]:
    """:func:`parse_update`'s properties, and with ``places`` where a JSON body had the
    keys among them (``WriteOp.keys_at``; 0 without ``places``, for an Atom or empty body,
    or a body without both keys: then they are written first). ``flavor``: the members it
    drops from a JSON body (:meth:`StubFlavor.drop_shadowed`).

    Example::

        >>> body = b'{"PartitionKey": "p", "a": 1, "RowKey": "r"}'
        >>> props, at = update_props(body, "application/json", "2019-02-02", "p", "r",
        ...                          places=True)
        >>> props, at == 1 << 16
        ({'a': ('Edm.Int32', 1)}, True)
    """
    if not body.strip():
        return {}, 0
    req_fmt = request_format(content_type, version)
    if req_fmt is Fmt.ATOM:
        return atom_fmt.parse_entity_update(body, pk, rk), 0
    if not places and not flavor.shadowed_names:
        return json_fmt.parse_entity_update(body, pk, rk), 0
    members = flavor.drop_shadowed(json_fmt.loads_object(body))
    _, _, props = json_fmt.entity_from_members(members, keys_required=False)
    return props, key_places(members, props) if places else 0


async def insert_entity(call: Call, raw_path: str) -> web.Response:
    """Insert Entity (``POST /t``), with Prefer handling.

    Example::

        response = await insert_entity(call, raw_path)
    """
    table = call.resource.table
    assert table is not None
    principal = authenticate(call, raw_path, table)
    restricted = principal.grant is not None or principal.secondary  # (else nothing refuses)
    if restricted:
        principal.authorize(Operation.INSERT_ENTITY, table)
    prefer = preference(call)
    fmt = negotiate(call)
    request = call.request
    body = await read_body(request)
    table_exists(call, table)
    sent = call.headers
    flavor = call.flavor
    op = insert_op(  # (positional: a keyword call costs more, on every insert)
        body, sent.get("Content-Type"), call.version, flavor.json_form.key_places, flavor
    )
    pk, rk = op.pk, op.rk
    if restricted:
        principal.check_key(pk, rk)
    result = await write_entity(call, table, op)
    entity = result.entity
    assert entity is not None
    location = entity_location(call.endpoint, table, pk, rk)
    if prefer is False:  # no_content's answer, its text in one step
        text = (
            f"{_NO_CONTENT_HEAD}{location}\r\nDataServiceId: {location}"
            f"\r\nETag: {etag_for(entity.timestamp)}"
        )
        return LinedResponse(204, text)
    headers = odata_headers(fmt)
    if prefer is True:
        headers["Preference-Applied"] = "return-content"
    headers["Location"] = location
    headers["ETag"] = etag_for(entity.timestamp)
    return web.Response(status=201, body=_entity_body(call, table, entity, fmt), headers=headers)


#: The lines of an Insert Entity's ``204`` before its ``Location`` value: :data:`COMMON`,
#: ``Preference-Applied`` and ``DataServiceVersion`` (then ``DataServiceId`` and ``ETag``).
_NO_CONTENT_HEAD = (
    "".join(
        f"{name}: {value}\r\n"
        for name, value in {
            **COMMON,
            "Preference-Applied": "return-no-content",
            "DataServiceVersion": "3.0;",
        }.items()
    )
    + "Location: "
)


def write_kind_and_operation(
    method: str, if_match: str | None, version: str
) -> tuple[str, Operation]:
    """(backend write kind, operation for authorization) of a PUT/MERGE/PATCH.

    Without If-Match these are upserts, which need 2011-08-18 (before: 400).

    Example::

        >>> write_kind_and_operation("MERGE", "*", "2019-02-02")
        ('merge', <Operation.MERGE_ENTITY: 'MergeEntity'>)
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


async def update_entity(call: Call, raw_path: str) -> web.Response:
    """Update / Merge / Insert-or-Replace / Insert-or-Merge on an entity URL.

    Example::

        response = await update_entity(call, raw_path)
    """
    table = call.resource.table
    keys = call.resource.keys
    assert table is not None
    assert keys is not None
    if_match = if_match_of(call.headers)
    kind, op = write_kind_and_operation(call.method, if_match, call.version)
    principal = authenticate(call, raw_path, table)
    principal.authorize(op, table)
    negotiate(call)
    body = await read_body(call.request)
    table_exists(call, table)
    pk, rk = keys
    props, at = update_props(
        body,
        call.headers.get("Content-Type"),
        call.version,
        pk,
        rk,
        places=call.flavor.json_form.key_places,
        flavor=call.flavor,
    )
    principal.check_key(pk, rk)
    result = await write_entity(
        call,
        table,
        WriteOp(kind, pk, rk, props, if_match, keys_at=at),  # type: ignore[arg-type]
    )
    assert result.entity is not None
    return no_content({"ETag": etag_for(result.entity.timestamp), "DataServiceVersion": "1.0;"})


async def delete_entity(call: Call, raw_path: str) -> web.Response:
    """Delete Entity (If-Match required: 400 InvalidInput without it).

    Example::

        response = await delete_entity(call, raw_path)
    """
    table = call.resource.table
    keys = call.resource.keys
    assert table is not None
    assert keys is not None
    if_match = if_match_of(call.headers)
    principal = authenticate(call, raw_path, table)
    principal.authorize(Operation.DELETE_ENTITY, table)
    negotiate(call)
    if if_match is None:
        raise errors.invalid_input()
    table_exists(call, table)
    principal.check_key(*keys)
    await write_entity(call, table, WriteOp("delete", keys[0], keys[1], {}, if_match))
    return no_content({"DataServiceVersion": "1.0;"})
