"""Queries: ``$filter`` with ``@name`` parameters (:func:`format_filter`), ``$select`` and
``$top``, and the pager that fetches a query's pages and decodes them."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from azt._core.base import ClientCore
from azt._core.pagination import AsyncPager, ContinuationToken, Page
from azt._core.tracing import run_traced
from azt._core.wire import json as wire_json
from azt._core.wire import urls
from azt._edm.entity import TableEntity
from azt._edm.types import format_literal
from azt._errors import ResourceKind, ValidationError

__all__ = ["etag_from_timestamp", "format_filter"]

_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def format_filter(filter: str, parameters: Mapping[str, Any] | None = None) -> str:
    """Substitute ``@name`` placeholders in an OData filter with escaped literals.

    Placeholders inside quoted literals are left alone. Each value is rendered by
    :func:`azt.edm.format_literal` (so ``"O'Brien"`` becomes ``'O''Brien'``, ``2**40``
    becomes ``1099511627776L`` and a :class:`azt.edm.Typed` value keeps its type). A
    placeholder without a value, or a value without a placeholder, raises
    :class:`azt.ValidationError`.

    Example::

        >>> format_filter("PartitionKey eq @pk and Rating ge @r", {"pk": "O'Brien", "r": 4})
        "PartitionKey eq 'O''Brien' and Rating ge 4"
    """
    if not isinstance(filter, str):
        raise ValidationError(f"a filter must be a str, got {type(filter).__name__}")
    params = dict(parameters or {})
    if not params and "@" not in filter:
        return filter
    out: list[str] = []
    used: set[str] = set()
    i = 0
    n = len(filter)
    in_string = False
    while i < n:
        ch = filter[i]
        if in_string:
            out.append(ch)
            if ch == "'":
                if i + 1 < n and filter[i + 1] == "'":
                    out.append("'")
                    i += 2
                    continue
                in_string = False
            i += 1
            continue
        if ch == "'":
            in_string = True
            out.append(ch)
            i += 1
            continue
        if ch == "@":
            match = _PARAM.match(filter, i + 1)
            if match is None:
                raise ValidationError(f"'@' at position {i} of the filter is not a parameter name")
            name = match.group(0)
            if name not in params:
                raise ValidationError(f"the filter uses @{name} but no value was given for it")
            out.append(format_literal(params[name]))
            used.add(name)
            i = match.end()
            continue
        out.append(ch)
        i += 1
    if in_string:
        raise ValidationError("the filter has an unterminated string literal")
    unused = set(params) - used
    if unused:
        raise ValidationError("parameters not used in the filter: " + ", ".join(sorted(unused)))
    return "".join(out)


def select_names(select: Sequence[str]) -> list[str]:
    """The property names of a ``select``: a sequence of names, or one ``str`` of
    comma-separated names (``azure-data-tables`` takes both; a property name never holds a
    comma, so the ``str`` cannot be misread).

    Example::

        >>> select_names("Name, Rating"), select_names(["Name"])
        (['Name', 'Rating'], ['Name'])
    """
    if isinstance(select, str):
        select = select.split(",")
    names = []
    for name in select:
        if not isinstance(name, str) or not name.strip() or "," in name:
            raise ValidationError(f"invalid $select property name {name!r}")
        names.append(name.strip())
    return names


def select_text(select: Sequence[str]) -> str:
    return ",".join(select_names(select))


def check_top(top: int) -> int:
    if not isinstance(top, int) or isinstance(top, bool) or not 1 <= top <= 1000:
        raise ValidationError(f"results_per_page must be an int from 1 to 1000, got {top!r}")
    return top


def query_params(
    filter: str | None,
    parameters: Mapping[str, Any] | None,
    select: Sequence[str] | None,
    results_per_page: int | None,
) -> dict[str, str]:
    """The ``$filter``, ``$select`` and ``$top`` of a query, checked."""
    params: dict[str, str] = {}
    if filter is not None and filter.strip():
        params["$filter"] = format_filter(filter, parameters)
    elif parameters:
        raise ValidationError("parameters were given without a filter")
    if select:
        params["$select"] = select_text(select)
    if results_per_page is not None:
        params["$top"] = str(check_top(results_per_page))
    return params


def query_pager(
    core: ClientCore,
    path: str,
    params: Mapping[str, str],
    continuation: ContinuationToken | str | None,
    resource: ResourceKind,
    decode: Callable[[bytes], list[Any]],
    *,
    table: str | None = None,
) -> AsyncPager[Any]:
    """A pager of GET ``path`` pages (read location), each decoded by ``decode`` and
    followed by the continuation headers of the one before. Each page fetch is one traced
    operation: ``query_entities`` of ``table``, or ``query_tables`` without one."""
    if isinstance(continuation, str):
        continuation = ContinuationToken.from_string(continuation)
    base_query = urls.encode_query(params)
    headers = core.odata_read

    async def fetch(token: ContinuationToken | None) -> Page[Any]:
        query = base_query
        if token is not None:
            extra = urls.encode_query(token.query_params())
            query = f"{query}&{extra}" if query else extra
        resp = await core.send(
            "GET", path, query=query, headers=headers, resource=resource, location="read"
        )
        rh = resp.headers
        return Page(
            decode(resp.body),
            ContinuationToken.from_headers(rh),
            request_id=rh.get("x-ms-request-id"),
        )

    tracing = core.tracing
    operation = "query_entities" if table else "query_tables"

    async def traced_fetch(token: ContinuationToken | None) -> Page[Any]:
        return await run_traced(tracing, operation, table, lambda: fetch(token), entities=len)

    return AsyncPager(traced_fetch, continuation=continuation)


# --- page decoding ------------------------------------------------------------------------


def etag_from_timestamp(timestamp: str) -> str:
    """The ETag the service gives an entity whose ``Timestamp`` is ``timestamp`` (the wire
    string), for responses that carry none (JSON no metadata): ``W/"datetime'<Timestamp,
    percent-encoded>'"`` (PROTOCOL.md 8.1), as the legacy Python SDK derives it.

    Example::

        >>> print(etag_from_timestamp("2020-09-15T23:02:10.4363943Z"))
        W/"datetime'2020-09-15T23%3A02%3A10.4363943Z'"
    """
    return "W/\"datetime'" + urllib.parse.quote(timestamp, safe="") + "'\""


def decode_feed_deriving_etags(body: bytes) -> list[TableEntity]:
    entities = wire_json.decode_feed(body)
    for entity in entities:
        if getattr(entity, "_etag", None) is None:
            entity._etag = derived_etag(getattr(entity, "_ts", None))
    return entities


def derived_etag(timestamp: object) -> str | None:
    """The derived ETag of a row without one (JSON no metadata), if its Timestamp is a
    wire string."""
    return etag_from_timestamp(timestamp) if type(timestamp) is str else None


def atom_rows_decoder(
    codec: ModuleType, page_decoder: Callable[[list[dict[str, Any]]], list[Any]]
) -> Callable[[bytes], list[Any]]:
    def decode(body: bytes) -> list[Any]:
        rows: list[dict[str, Any]] = []
        for entity in codec.decode_feed(body):
            row: dict[str, Any] = {}
            meta = entity.metadata
            if meta.etag is not None:
                row["odata.etag"] = meta.etag
            pk, rk = entity.get("PartitionKey"), entity.get("RowKey")
            if pk is not None:
                row["PartitionKey"] = pk
            if rk is not None:
                row["RowKey"] = rk
            if meta.timestamp is not None:
                row["Timestamp"] = meta.timestamp.to_wire()
            row.update(wire_json.entity_json(entity))
            rows.append(row)
        return page_decoder(rows)

    return decode
