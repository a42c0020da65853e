"""Entity group transactions (``POST /$batch``, PROTOCOL.md 9): change sets and a lone read.

Example::

    response = await batch_operation(call, raw_path)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from .. import errors
from ..addressing import AccountAddress, Kind, Resource, parse_resource, split_account
from ..auth import Operation, Principal
from ..backend import WriteOp
from ..errors import StubError
from ..formats import atom as atom_fmt
from ..formats import batch as batch_fmt
from ..formats import json as json_fmt
from ..formats.negotiation import (
    Fmt,
    error_format_guess,
    negotiate_response,
    parse_prefer,
    request_format,
)
from ..model import Entity, etag_for, key_places
from ..request_state import ODATA_XML, REQUEST_ID, parse_query
from ..writes import WriteKind
from .batch_plain import plain_entity
from .call import (
    COMMON,
    COMMON_HEADERS,
    Call,
    authenticate,
    error_style_for,
    header_safe,
    negotiate,
    table_exists,
    write_batch,
)
from .entities import entity_location, parse_insert, update_props, write_kind_and_operation
from .error_payload import render_error
from .parsing import (
    check_content_encoding,
    check_data_service_versions,
    if_match_of,
    read_body,
    split_target,
    tunnelled_method,
)


@dataclass(slots=True)
class _BatchOp:
    index: int
    part: batch_fmt.BatchPart
    op: WriteOp
    operation: Operation  # what the principal must be allowed to do
    fmt: Fmt  # response format of this part
    prefer: bool | None


@dataclass(slots=True)
class _Memo:
    """What the parts of one batch usually share, worked out once per distinct input.

    Every value is a pure function of its key (and of the call, fixed for the batch), so
    a hit returns what the computation would; a failure is never stored, so a part that
    fails still fails at its own turn with its own error.
    """

    resources: dict[str, Resource] = field(default_factory=dict)  # target -> resource
    formats: dict[tuple[str, str | None], Fmt] = field(default_factory=dict)
    versions: set[tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=set)
    etags: dict[int, str] = field(default_factory=dict)  # timestamp -> ETag

    def part_resource(self, call: Call, part: batch_fmt.BatchPart) -> Resource:
        resource = self.resources.get(part.target)
        if resource is None:
            resource = self.resources[part.target] = _part_resource(call, part)
        return resource

    def part_format(self, part: batch_fmt.BatchPart, version: str) -> Fmt:
        key = (part.target, part.headers.get("Accept"))
        fmt = self.formats.get(key)
        if fmt is None:
            fmt = self.formats[key] = _part_format(part, version)
        return fmt

    def check_versions(self, headers: CIMultiDict[str] | CIMultiDictProxy[str]) -> None:
        key = (tuple(headers.getall(_DSV, ())), tuple(headers.getall(_MAX_DSV, ())))
        if key not in self.versions:
            check_data_service_versions(headers)
            self.versions.add(key)

    def etag(self, timestamp: int) -> str:
        etag = self.etags.get(timestamp)
        if etag is None:
            etag = self.etags[timestamp] = etag_for(timestamp)
        return etag


_DSV, _MAX_DSV = "DataServiceVersion", "MaxDataServiceVersion"


def _part_format(part: batch_fmt.BatchPart, version: str) -> Fmt:
    target_query = split_target(part.target)[2]
    fmt_param = parse_query(target_query).get("$format") if "$format=" in target_query else None
    return negotiate_response(part.headers.get("Accept"), fmt_param, version).fmt


def _part_resource(call: Call, part: batch_fmt.BatchPart) -> Resource:
    host, raw_path, _ = split_target(part.target)
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
    call: Call, index: int, part: batch_fmt.BatchPart, fmt: Fmt, memo: _Memo
) -> tuple[str, _BatchOp]:
    """The write of one change-set part (``fmt``: its negotiated response format)."""
    memo.check_versions(part.headers)
    check_content_encoding(part.headers)
    resource = memo.part_resource(call, part)
    method = tunnelled_method(part.method, part.headers)
    prefer = parse_prefer(part.headers.get("Prefer"), call.version)
    ctype = part.headers.get("Content-Type")
    flavor = call.flavor
    places = flavor.json_form.key_places
    if resource.kind is Kind.COLLECTION and method == "POST":
        assert resource.table is not None
        if request_format(ctype, call.version) is Fmt.ATOM or not (places or flavor.shadowed_names):
            pk, rk, props = parse_insert(part.body, ctype, call.version)
            at = 0
        else:
            members = flavor.drop_shadowed(json_fmt.loads_object(part.body))
            key_pk, key_rk, props = json_fmt.entity_from_members(members, keys_required=True)
            assert key_pk is not None
            assert key_rk is not None
            pk, rk = key_pk, key_rk
            at = key_places(members, props) if places else 0
        insert = WriteOp("insert", pk, rk, props, keys_at=at)
        return resource.table, _BatchOp(index, part, insert, Operation.INSERT_ENTITY, fmt, prefer)
    if resource.kind is not Kind.ENTITY:
        raise errors.invalid_input()
    assert resource.table is not None
    assert resource.keys is not None
    pk, rk = resource.keys
    if_match = if_match_of(part.headers)
    if method == "DELETE":
        if if_match is None:
            raise errors.invalid_input()
        delete = WriteOp("delete", pk, rk, {}, if_match)
        return resource.table, _BatchOp(index, part, delete, Operation.DELETE_ENTITY, fmt, prefer)
    if method in ("PUT", "MERGE", "PATCH"):
        kind, operation = write_kind_and_operation(method, if_match, call.version)
        props, at = update_props(
            part.body, ctype, call.version, pk, rk, places=places, flavor=flavor
        )
        return resource.table, _BatchOp(
            index,
            part,
            WriteOp(kind, pk, rk, props, if_match, keys_at=at),  # type: ignore[arg-type]
            operation,
            fmt,
            prefer,
        )
    raise errors.invalid_input()


def _answer_ids(call: Call, part: batch_fmt.BatchPart | None, index: int) -> _Ids:
    """The ``Content-ID`` lines of the answer to operation ``index`` (``part``).

    Storage echoes a Content-ID the operation carried among its inner HTTP headers,
    first after the status line (legacy SDK, recorded 2017-2019), and none given as a
    MIME part header (azure-data-tables, recorded 2020-2021). Cosmos numbers every part
    from 1, last among its headers, whatever the request said (recorded 2021).
    """
    if call.flavor.numbers_batch_parts:
        return None, str(index + 1)
    return (part.headers.get("Content-ID") if part is not None else None), None


def _part_error(
    call: Call, err: StubError, fmt: Fmt | None, part: batch_fmt.BatchPart | None = None
) -> batch_fmt.PartResponse:
    style: Fmt | str = fmt if fmt is not None and fmt.is_json else ODATA_XML
    if part is not None:  # the part's Accept, negotiated as a request's (*/*: OData XML)
        style = error_style_for(part.headers.get("Accept"), None, call.version)
    if err.index is None:
        err = err.at(0)
    lead, tail = _answer_ids(call, part, err.index or 0)
    accept = part.headers.get("Accept") if part is not None else None
    flavor = call.flavor
    ctype, body = render_error(flavor, err, call.request[REQUEST_ID], style, accept, None)
    headers = list(COMMON_HEADERS)
    if part is not None and part.method == "POST" and "X-HTTP-Method" not in part.headers:
        # an insert that asked for a preference: Storage names it on the error too
        prefer = parse_prefer(part.headers.get("Prefer"), call.version)
        if prefer is not None:
            applied = "return-content" if prefer else "return-no-content"
            headers.append(("Preference-Applied", applied))
    headers += [("DataServiceVersion", "3.0;"), ("Content-Type", ctype)]
    return batch_fmt.PartResponse(err.status, _with_ids(headers, lead, tail), body)


#: The Content-ID lines of one answer part: (first after the status line, last).
_Ids = tuple[str | None, str | None]

#: An answer part with no Content-ID line.
_NO_IDS: _Ids = (None, None)


def _with_ids(
    headers: list[tuple[str, str]], lead: str | None, tail: str | None
) -> list[tuple[str, str]]:
    if lead is not None:
        headers.insert(0, ("Content-ID", lead))
    if tail is not None:
        headers.append(("Content-ID", tail))
    return headers


#: How a no-content insert's part starts, up to its Location value (see _batch_success).
_NO_CONTENT_INSERT = (
    batch_fmt.part_head(
        204,
        [
            *COMMON_HEADERS,
            ("Preference-Applied", "return-no-content"),
            ("DataServiceVersion", "3.0;"),
        ],
    )
    + "Location: "
)


def _batch_success(
    call: Call,
    table: str,
    op: WriteOp,
    prefer: bool | None,
    fmt: Fmt,
    ids: _Ids,
    entity: Entity | None,
    memo: _Memo,
) -> batch_fmt.PartResponse | bytes:
    lead, tail = ids
    if prefer is False and op.kind == "insert" and lead is None:
        # The common answer (what the PartResponse below encodes to), written directly.
        assert entity is not None
        location = entity_location(call.endpoint, table, op.pk, op.rk)
        text = _NO_CONTENT_INSERT + location + "\r\nDataServiceId: " + location
        text += "\r\nETag: " + memo.etag(entity.timestamp)
        if tail is not None:
            text += "\r\nContent-ID: " + tail
        return (text + "\r\n\r\n\r\n").encode()
    headers: list[tuple[str, str]] = list(COMMON_HEADERS)
    body = b""
    if op.kind == "insert" and prefer is False:
        assert entity is not None
        location = entity_location(call.endpoint, table, op.pk, op.rk)
        status = 204
        headers += [
            ("Preference-Applied", "return-no-content"),
            ("DataServiceVersion", "3.0;"),
            ("Location", location),
            ("DataServiceId", location),
            ("ETag", memo.etag(entity.timestamp)),
        ]
    elif op.kind == "insert":
        assert entity is not None
        location = entity_location(call.endpoint, table, op.pk, op.rk)
        status = 201
        if prefer is True:
            headers.append(("Preference-Applied", "return-content"))
        ctype = fmt.content_type
        headers += [
            ("DataServiceVersion", "3.0;"),
            ("Content-Type", ctype),
            ("Location", location),
            ("ETag", memo.etag(entity.timestamp)),
        ]
        if fmt is Fmt.ATOM:
            body = atom_fmt.AtomWriter(call.endpoint, call.account, table).single(entity)
        else:
            writer = json_fmt.EntityWriter(
                fmt, call.endpoint, call.account, table, form=call.flavor.json_form
            )
            body = writer.single(entity)
    else:
        status = 204
        headers.append(("DataServiceVersion", "1.0;"))
        if entity is not None and op.kind != "delete":
            headers.append(("ETag", memo.etag(entity.timestamp)))
        upsert = op.kind != "delete" and op.if_match is None
        if upsert and call.flavor.no_content_type is not None:
            # Cosmos: an upsert part's 204 is typed, an update's (If-Match) and a delete's
            # are not (recorded 2020-2022, docs/cosmos.md "Fidelity decisions")
            headers.append(("Content-Type", call.flavor.no_content_type))
    return batch_fmt.PartResponse(status, _with_ids(headers, lead, tail), body)


def _batch_response(
    parts: list[batch_fmt.PartResponse | bytes | str], *, changeset: bool
) -> web.Response:
    ctype, body = batch_fmt.build_response(parts, changeset=changeset)
    return web.Response(
        status=202,
        body=body,
        headers={"Content-Type": ctype, **COMMON},
    )


async def batch_operation(call: Call, raw_path: str) -> web.Response:
    """Entity group transaction (``POST /$batch``), PROTOCOL.md 9.

    Example::

        response = await batch_operation(call, raw_path)
    """
    request = call.request
    negotiate(call)
    body = await read_body(request)
    try:
        parsed = batch_fmt.parse_batch(body, request.headers.get("Content-Type"))
    except StubError:
        authenticate(call, raw_path, None)
        raise
    memo = _Memo()
    # The addressed table (for a service SAS's tn) is the first part's.
    first_table: str | None = None
    try:
        if parsed.parts:
            first_table = memo.part_resource(call, parsed.parts[0]).table
    except StubError:
        first_table = None
    principal = authenticate(call, raw_path, first_table)
    if not parsed.changeset:
        # A lone query is a read (allowed on the secondary): its part is authorized as one.
        return _batch_query(call, principal, parsed.parts[0])
    principal.authorize(Operation.BATCH, first_table)
    if not parsed.parts:
        # Storage answers an empty change set with an empty change-set answer (recorded
        # 2017, docs/stub.md "Fidelity decisions"); nothing is written.
        return _batch_response([], changeset=True)
    if len(parsed.parts) > 100:
        too_many = errors.batch_too_many_operations().at(99)
        return _batch_response(
            [_part_error(call, too_many, Fmt.MINIMAL, parsed.parts[99])], changeset=True
        )
    if PLAIN_CHANGESETS:
        answer = await _plain_changeset(call, principal, parsed.parts, memo)
        if answer is not None:
            return answer
    ops: list[_BatchOp] = []
    table: str | None = None
    unrestricted = principal.unrestricted
    for index, part in enumerate(parsed.parts):
        fmt: Fmt | None = None
        try:
            fmt = memo.part_format(part, call.version)
            part_table, bop = _batch_write_op(call, index, part, fmt, memo)
            if table is None:
                table = part_table
            elif part_table is not table and (
                call.backend.table_key(part_table) != call.backend.table_key(table)
            ):
                raise errors.invalid_input()
            if not unrestricted:
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
                        part,
                    )
                ],
                changeset=True,
            )
    assert table is not None
    try:
        results = await write_batch(call, table, [b.op for b in ops])
    except StubError as exc:
        index = exc.index if exc.index is not None else 0
        fmt = ops[index].fmt if index < len(ops) else Fmt.MINIMAL
        failed = ops[index].part if index < len(ops) else None
        return _batch_response([_part_error(call, exc.at(index), fmt, failed)], changeset=True)
    return _batch_response(
        [
            _batch_success(
                call, table, b.op, b.prefer, b.fmt, _answer_ids(call, b.part, i), r.entity, memo
            )
            for i, (b, r) in enumerate(zip(ops, results, strict=True))
        ],
        changeset=True,
    )


#: Whether change sets of plain parts take :func:`_plain_changeset` (tests compare both).
PLAIN_CHANGESETS = True

#: The headers a plain part may have, each at most once (anything else: the general path).
_PLAIN_HEADERS = (
    "Accept",
    "Content-Type",
    "Prefer",
    _DSV,
    _MAX_DSV,
    "If-Match",
    "Content-Length",
    "Content-ID",
)


@dataclass(slots=True, frozen=True)
class _Plan:
    """What a plain part's method and headers make of it (the same for equal headers)."""

    kind: WriteKind
    operation: Operation
    prefer: bool | None
    if_match: str | None


def _plain_plan(call: Call, part: batch_fmt.BatchPart, memo: _Memo) -> _Plan | None:
    """The plan of a part whose headers are all plain and valid, else None."""
    headers = part.headers
    if len(headers) != sum(1 for name in _PLAIN_HEADERS if name in headers):
        return None  # another header, or one of these twice
    method = part.method
    try:
        memo.check_versions(headers)
        prefer = parse_prefer(headers.get("Prefer"), call.version)
        if_match = if_match_of(headers)
        if method == "DELETE":
            if if_match is None:
                return None
            return _Plan("delete", Operation.DELETE_ENTITY, prefer, if_match)
        if request_format(headers.get("Content-Type"), call.version) is Fmt.ATOM:
            return None
        if method == "POST":
            return _Plan("insert", Operation.INSERT_ENTITY, prefer, None)
        if method in ("PUT", "MERGE", "PATCH"):
            kind, operation = write_kind_and_operation(method, if_match, call.version)
            return _Plan(kind, operation, prefer, if_match)  # type: ignore[arg-type]
    except StubError:
        return None
    return None


async def _plain_changeset(
    call: Call, principal: Principal, parts: list[batch_fmt.BatchPart], memo: _Memo
) -> web.Response | None:
    """A change set of plain parts, parsed, converted, checked and answered in one loop.

    Plain: JSON writes (insert, insert-or-replace/merge, update, merge, delete) with only
    the usual headers, each valid, whose bodies convert without error, all addressing
    the batch's table and allowed to the principal. Anything else before the write
    (any error included) answers None, having changed nothing: the general loop of
    :func:`batch_operation` then decides the answer. The write and the answer are the
    general loop's: the same operations, so the same outcome, error or success.
    """
    plans: dict[tuple[object, ...], _Plan] = {}
    version = call.version
    backend = call.backend
    unrestricted = principal.unrestricted
    ops: list[WriteOp] = []
    fmts: list[Fmt] = []
    prefers: list[bool | None] = []
    table: str | None = None
    collection, entity_kind = Kind.COLLECTION, Kind.ENTITY
    # Parts read from a remembered header block share its pairs: their plan (and Accept)
    # is looked up by the block's identity, without reading the headers.
    by_block: dict[tuple[str, int], tuple[_Plan, str | None]] = {}
    resources, formats = memo.resources, memo.formats
    flavor = call.flavor
    places = flavor.json_form.key_places
    try:
        for part in parts:
            block = part.block
            known = by_block.get((part.method, id(block))) if block is not None else None
            if known is None:
                headers = part.headers
                get = headers.get
                key = (
                    part.method,
                    get("Accept"),
                    get("Content-Type"),
                    get("Prefer"),
                    get(_DSV),
                    get(_MAX_DSV),
                    get("If-Match"),
                    len(headers),
                    "Content-Length" in headers,
                    "Content-ID" in headers,
                )
                plan = plans.get(key)
                if plan is None:
                    plan = _plain_plan(call, part, memo)
                    if plan is None:
                        return None
                    plans[key] = plan
                known = (plan, key[1])
                if block is not None:
                    by_block[(part.method, id(block))] = known
            plan = known[0]
            resource = resources.get(part.target) or memo.part_resource(call, part)
            fmt = formats.get((part.target, known[1])) or memo.part_format(part, version)
            kind = plan.kind
            if kind == "insert":
                if resource.kind is not collection:
                    return None
                members = flavor.drop_shadowed(json_fmt.loads_object(part.body))
                got = plain_entity(members, None, None)
                if got is None:
                    return None
                at = key_places(members, got[2]) if places else 0
                op = WriteOp("insert", got[0], got[1], got[2], None, got[3], at)
            else:
                if resource.kind is not entity_kind or resource.keys is None:
                    return None
                pk, rk = resource.keys
                body = part.body
                if kind == "delete":
                    op = WriteOp("delete", pk, rk, {}, plan.if_match)
                elif not body.strip():
                    op = WriteOp(kind, pk, rk, {}, plan.if_match)
                else:
                    members = flavor.drop_shadowed(json_fmt.loads_object(body))
                    got = plain_entity(members, pk, rk)
                    if got is None:
                        return None
                    at = key_places(members, got[2]) if places else 0
                    op = WriteOp(kind, pk, rk, got[2], plan.if_match, got[3], at)
            part_table = resource.table
            if part_table is None:
                return None
            if table is None:
                table = part_table
            elif part_table is not table and backend.table_key(part_table) != backend.table_key(
                table
            ):
                return None
            if not unrestricted:
                principal.authorize(plan.operation, part_table)
                principal.check_key(op.pk, op.rk)
            ops.append(op)
            fmts.append(fmt)
            prefers.append(plan.prefer)
    except StubError:
        return None
    if table is None:
        return None
    try:
        results = await write_batch(call, table, ops)
    except StubError as exc:
        index = exc.index if exc.index is not None else 0
        fmt = fmts[index] if index < len(ops) else Fmt.MINIMAL
        failed = parts[index] if index < len(ops) else None
        return _batch_response([_part_error(call, exc.at(index), fmt, failed)], changeset=True)
    answers: list[batch_fmt.PartResponse | bytes | str] = []
    # A no-content insert's part as _batch_success writes it (as text), from pieces made
    # once: the Location up to the RowKey once per PartitionKey, the ETag line once per
    # Timestamp.
    prefix = call.endpoint + "/" + table + "(PartitionKey='"
    last_timestamp = -1
    etag_line = ""
    last_pk: str | None = None
    pk_prefix = ""
    prefix_safe = False
    numbered = call.flavor.numbers_batch_parts
    for i, (op, prefer, fmt, part, result) in enumerate(
        zip(ops, prefers, fmts, parts, results, strict=True)
    ):
        entity = result.entity
        ids = _answer_ids(call, part, i) if numbered or "Content-ID" in part.headers else _NO_IDS
        if prefer is False and op.kind == "insert" and entity is not None and ids[0] is None:
            if entity.timestamp != last_timestamp:
                last_timestamp = entity.timestamp
                etag_line = "\r\nETag: " + memo.etag(last_timestamp) + "\r\n"
            pk, rk = op.pk, op.rk
            if pk != last_pk:  # (equal, not the same: each part has its own)
                last_pk = pk
                pk_prefix = prefix + (pk.replace("'", "''") if "'" in pk else pk) + "',RowKey='"
                prefix_safe = header_safe(pk_prefix) is pk_prefix  # (answered as it is)
            if "'" in rk:
                rk = rk.replace("'", "''")
            location = pk_prefix + rk + "')"
            # header_safe's test is of each character: a safe prefix and RowKey make a
            # safe URL, so only the RowKey is read (the prefix once a PartitionKey)
            if not (prefix_safe and rk.isascii() and rk.isprintable() and " " not in rk):
                location = header_safe(location)
            content_id = ids[1]
            answers.append(
                "".join(
                    (
                        _NO_CONTENT_INSERT,
                        location,
                        "\r\nDataServiceId: ",
                        location,
                        etag_line,
                        "\r\n\r\n"
                        if content_id is None
                        else "Content-ID: " + content_id + "\r\n\r\n\r\n",
                    )
                )
            )
        else:
            answers.append(_batch_success(call, table, op, prefer, fmt, ids, entity, memo))
    return _batch_response(answers, changeset=True)


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
        table_exists(call, resource.table)
        if not principal.key_allowed(*resource.keys):
            raise errors.authorization_failure()
        entity = call.backend.get_entity(call.account, resource.table, *resource.keys)
    except StubError as exc:
        return _batch_response([_part_error(call, exc, fmt, part)], changeset=False)
    if fmt is Fmt.ATOM:
        body = atom_fmt.AtomWriter(call.endpoint, call.account, resource.table).single(entity)
    else:
        body = json_fmt.EntityWriter(
            fmt,
            call.endpoint,
            call.account,
            resource.table,
            form=call.flavor.json_form,
        ).single(entity)
    headers = [
        *COMMON_HEADERS,
        ("DataServiceVersion", "3.0;"),
        ("Content-Type", fmt.content_type),
        ("ETag", etag_for(entity.timestamp)),
    ]
    headers = _with_ids(headers, *_answer_ids(call, part, 0))
    return _batch_response([batch_fmt.PartResponse(200, headers, body)], changeset=False)
