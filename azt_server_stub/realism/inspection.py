"""What the realism layers know of a request, and how they refuse one.

:func:`describe_request` computes a :class:`RequestInfo` once per request (effective
method, account, table, keys; with ``inspect_body`` the PartitionKey of an insert and a
batch's table and size); :func:`prepare_refusal` makes a refusal raised before the
handler ran render as the handler's own errors; :data:`BUSY_MESSAGES` are the service's
``503 ServerBusy`` texts.

Example::

    >>> RequestInfo("POST", "/a/t", "a", Kind.COLLECTION, "t", None).is_write
    True
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from aiohttp import web

from .. import versions
from ..addressing import Kind, parse_resource, split_account
from ..errors import StubError
from ..formats import atom as atom_fmt
from ..formats.batch import parse_batch
from ..request_state import ERR_STYLE, SERVICES_KEY, STORAGE_XML, VERSION, query_of

BUSY_MESSAGES = {
    "server": "The server is currently unable to receive requests. Please retry your request.",
    "account": "Operations per second is over the account limit.",
    "ingress": "Ingress is over the account limit.",
    "egress": "Egress is over the account limit.",
}
"""The service's ``503 ServerBusy`` texts, by variant: ``busy=account`` etc. in a spec."""


WRITE_METHODS = frozenset({"POST", "PUT", "MERGE", "PATCH", "DELETE"})
"""Effective methods that change state (entity writes, batches, table and ACL changes)."""


@dataclass(slots=True)
class RequestInfo:
    """What the realism layers need to know about a request, computed once per request.

    ``method`` is the effective method (``X-HTTP-Method`` applied to a POST); ``raw_path``
    the request path without the query; ``account``, ``kind``, ``table`` and ``keys`` come
    from the stub's addressing rules (``None`` when the path does not parse: the handler
    will refuse the request). For ``$batch`` requests, :func:`describe_request` with
    ``inspect_body=True`` fills ``table``, ``keys`` (the first operation's PartitionKey and
    RowKey) and ``operations`` from the body; for inserts it fills ``keys`` from the body.

    Example::

        >>> info = RequestInfo("DELETE", "/a/t(PartitionKey='p',RowKey='r')", "a",
        ...                    Kind.ENTITY, "t", ("p", "r"))
        >>> info.is_write, info.partition_key
        (True, 'p')
    """

    method: str
    raw_path: str
    account: str | None
    kind: Kind | None
    table: str | None
    keys: tuple[str, str] | None
    operations: int = 1
    inspected: bool = False

    @property
    def is_write(self) -> bool:
        """True for state-changing methods (POST, PUT, MERGE, PATCH, DELETE).

        Example::

            >>> RequestInfo("MERGE", "/a/t(PartitionKey='p',RowKey='r')", "a", None, "t",
            ...             None).is_write
            True
            >>> RequestInfo("GET", "/a/t()", "a", None, "t", None).is_write
            False
        """
        return self.method in WRITE_METHODS

    @property
    def partition_key(self) -> str | None:
        """The PartitionKey the request addresses, when known.

        Example::

            >>> RequestInfo("GET", "/a/t()", "a", None, "t", None).partition_key is None
            True
            >>> RequestInfo("GET", "/a/t(PartitionKey='p',RowKey='r')", "a", Kind.ENTITY, "t",
            ...             ("p", "r")).partition_key
            'p'
        """
        return None if self.keys is None else self.keys[0]


_INFO_KEY = web.RequestKey("azt.realism.info", RequestInfo)


def _split_target(raw: str) -> tuple[str | None, str]:
    """(host or None, raw path without query) of a request target."""
    if raw.startswith(("http://", "https://")):
        parts = urlsplit(raw)
        return parts.netloc, parts.path or "/"
    return None, raw.partition("?")[0]


def _effective_method(method: str, tunnel: Sequence[str]) -> str:
    method = method.upper()
    if method == "POST" and len(tunnel) == 1:
        value = tunnel[0].strip().upper()
        if value in ("MERGE", "PUT", "DELETE", "PATCH"):
            return value
    return method


def _product_style(request: web.Request) -> bool:
    services = request.app.get(SERVICES_KEY)
    return True if services is None else services.product_style_urls


def _basic_info(request: web.Request) -> RequestInfo:
    host, raw_path = _split_target(request.raw_path)
    method = _effective_method(request.method, request.headers.getall("X-HTTP-Method", []))
    try:
        addr = split_account(host or request.host, raw_path, product_style=_product_style(request))
    except StubError:
        return RequestInfo(method, raw_path, None, None, None, None)
    try:
        resource = parse_resource(addr.resource)
    except StubError:
        return RequestInfo(method, raw_path, addr.account, None, None, None)
    return RequestInfo(method, raw_path, addr.account, resource.kind, resource.table, resource.keys)


def _insert_partition_key(body: bytes, content_type: str | None) -> str | None:
    """The PartitionKey of an insert body (JSON or Atom), None when it cannot be read."""
    ctype = (content_type or "").lower()
    try:
        if "atom" in ctype or "xml" in ctype:
            return atom_fmt.parse_entity(body)[0]
        value = json.loads(body).get("PartitionKey")
    except (StubError, ValueError, AttributeError, TypeError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def _inspect_batch(info: RequestInfo, body: bytes, content_type: str | None) -> None:
    try:
        batch = parse_batch(body, content_type)
    except StubError:
        return
    if not batch.parts:
        return
    info.operations = len(batch.parts) if batch.changeset else 1
    first = batch.parts[0]
    _, path = _split_target(first.target)
    try:
        resource = parse_resource(unquote(path.rsplit("/", 1)[-1]))
    except StubError:
        return
    info.table = resource.table
    if resource.keys is not None:
        info.keys = resource.keys
    elif resource.kind is Kind.COLLECTION and first.method.upper() == "POST":
        pk = _insert_partition_key(first.body, first.headers.get("Content-Type"))
        if pk is not None:
            info.keys = (pk, "")


async def describe_request(request: web.Request, *, inspect_body: bool = False) -> RequestInfo:
    """The :class:`RequestInfo` of ``request`` (cached on the request).

    With ``inspect_body`` the body of an insert or a ``$batch`` is read (aiohttp keeps it
    for the handler) to find the PartitionKey, the batch's table and operation count.

    Example::

        info = await describe_request(request, inspect_body=True)
        info.table, info.partition_key, info.operations
    """
    info = request.get(_INFO_KEY)
    if info is None:
        info = _basic_info(request)
        request[_INFO_KEY] = info
    if inspect_body and not info.inspected:
        info.inspected = True
        batch = info.kind is Kind.BATCH and request.method.upper() == "POST"
        insert = info.kind is Kind.COLLECTION and info.method == "POST" and request.can_read_body
        body = await _body_or_none(request) if batch or insert else None
        if body is None:
            return info
        if batch:
            _inspect_batch(info, body, request.headers.get("Content-Type"))
        else:
            pk = _insert_partition_key(body, request.headers.get("Content-Type"))
            if pk is not None:
                info.keys = (pk, "")
    return info


async def _body_or_none(request: web.Request) -> bytes | None:
    """The body, or None when it cannot be read (too large, broken off):
    the handler reads it again and answers the service's error."""
    try:
        return await request.read()
    except (web.HTTPRequestEntityTooLarge, web.RequestPayloadError, ConnectionError):
        return None


def prepare_refusal(request: web.Request) -> None:
    """Set up ``request`` so that a refusal raised before the handler ran (an injected fault,
    a throttle's ``503``) is rendered exactly as the handler would render its own errors:
    the request's ``x-ms-version`` is echoed, and operations the service answers with Storage
    XML errors (service properties/stats, table ACLs, CORS preflight) get that body; entity
    and table operations keep the OData style chosen from ``Accept``/``$format``.

    Example::

        prepare_refusal(request)
        raise errors.server_busy()
    """
    if VERSION not in request:
        query = query_of(request)
        services = request.app.get(SERVICES_KEY)
        lenient = False if services is None else services.lenient_versions
        with contextlib.suppress(StubError):
            request[VERSION] = versions.request_version(
                request.headers.get("x-ms-version"), query.get("sv"), lenient=lenient
            )
    if ERR_STYLE in request:
        return
    info = request.get(_INFO_KEY)
    if info is None:
        info = _basic_info(request)
    comp = query_of(request).get("comp")
    storage_xml = (
        request.method.upper() == "OPTIONS"
        or info.kind is Kind.SERVICE
        or (comp == "acl" and info.kind is Kind.COLLECTION and not info.raw_path.endswith(")"))
    )
    if storage_xml:
        request[ERR_STYLE] = STORAGE_XML
