"""Fixtures for the ORM tests.

Query tests run against two tables (``params``):

* ``backend``: the stub's in-process backend (its real ``$filter`` parser, evaluator,
  planner and paging, and its JSON entity writer) without HTTP; rows go through the
  client's wire decoder (``azt._core.wire.json.decode_feed``), so the layers are the real ones
  minus the network. Fast, and independent of the HTTP client.
* ``stub``: the real ``azt.TableClient`` against an in-process ``StubServer`` over loopback.

``cosmos-backend`` and ``cosmos-stub`` are the same two as the Cosmos DB Table API
(case-sensitive table names, results not in key order; ``tests/orm/test_cosmos_order.py``).

All are wrapped in :class:`Recording`, which records each request's filter, select and
top, and (``small_pages_table``) caps pages at 3 entities so that every query crosses
several continuation tokens.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

import azt
from azt._core.config import Flavor, WireFormat
from azt._core.pagination import ContinuationToken, Page
from azt._core.wire.json import decode_feed, encode_entity
from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.formats.json import EntityWriter, parse_entity
from azt_server_stub.formats.negotiation import Fmt
from azt_server_stub.odata._filter import compile_entity_filter
from azt_server_stub.validation import COSMOS_TABLE_NAMES


class _Pager:
    def __init__(self, table: BackendTable, args: tuple[Any, ...]) -> None:
        self._table = table
        self._args = args

    async def first_page(self) -> Page[Any]:
        return self._table._page(*self._args)


_WIRE_FORMAT = {
    Fmt.NOMETADATA: WireFormat.JSON_NONE,
    Fmt.MINIMAL: WireFormat.JSON_MINIMAL,
    Fmt.FULL: WireFormat.JSON_FULL,
}


class BackendTable:
    """The query surface of ``azt.TableClient`` over ``azt_server_stub.Backend``, including
    ``page_decoder=`` (the page's JSON rows, as parsed from a body in ``fmt``, go to the
    decoder instead of becoming ``TableEntity`` rows)."""

    def __init__(self, fmt: Fmt = Fmt.MINIMAL, *, flavor: Flavor = Flavor.STORAGE) -> None:
        cosmos = flavor is Flavor.COSMOS
        self.flavor = flavor
        self.backend = (
            Backend(table_naming=COSMOS_TABLE_NAMES, key_order=False) if cosmos else Backend()
        )
        self.name = self.backend.create_table("acct", "Orm")
        self.fmt = fmt
        self.wire_format = _WIRE_FORMAT[fmt]

    async def insert(self, entity: Any) -> None:
        body = encode_entity(entity.to_entity())
        pk, rk, props = parse_entity(body)
        self.backend.write("acct", self.name, WriteOp("insert", pk, rk, props))

    def query_entities(
        self,
        filter: str | None = None,
        *,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | None = None,
        page_decoder: Callable[[list[Any]], list[Any]] | None = None,
    ) -> _Pager:
        return _Pager(self, (filter, select, results_per_page, continuation, page_decoder))

    def _page(
        self,
        filter: str | None,
        select: Sequence[str] | None,
        top: int | None,
        continuation: ContinuationToken | None,
        page_decoder: Callable[[list[Any]], list[Any]] | None,
    ) -> Page[Any]:
        flt = compile_entity_filter(filter) if filter else None
        start = None
        if continuation is not None:
            start = (continuation.next_partition_key or "", continuation.next_row_key or "")
        page = self.backend.query_entities("acct", self.name, flt, top, start)
        writer = EntityWriter(self.fmt, "http://127.0.0.1/acct", "acct", self.name, select)
        body = json.dumps({"value": [writer.entity(e) for e in page.entities]}).encode()
        nxt = None
        if page.next_key is not None:
            nxt = ContinuationToken(
                next_partition_key=page.next_key[0], next_row_key=page.next_key[1]
            )
        if page_decoder is not None:
            return Page(page_decoder(json.loads(body)["value"]), nxt, request_id=None)
        return Page(decode_feed(body), nxt, request_id=None)


class Recording:
    """A table client proxy: records requests, optionally caps the page size; its wire
    format is the wrapped client's."""

    def __init__(self, inner: Any, max_page: int | None = None) -> None:
        self.inner = inner
        self.max_page = max_page
        self.requests: list[dict[str, Any]] = []

    @property
    def wire_format(self) -> WireFormat:
        fmt: WireFormat = self.inner.wire_format
        return fmt

    @property
    def flavor(self) -> Flavor:
        flavor: Flavor = getattr(self.inner, "flavor", Flavor.STORAGE)
        return flavor

    async def insert(self, entity: Any) -> None:
        if isinstance(self.inner, BackendTable):
            await self.inner.insert(entity)
        else:
            await self.inner.insert_entity(entity.to_entity())

    def query_entities(
        self,
        filter: str | None = None,
        *,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | None = None,
        page_decoder: Callable[[list[Any]], list[Any]] | None = None,
    ) -> Any:
        self.requests.append(
            {
                "filter": filter,
                "select": select,
                "top": results_per_page,
                "page_decoder": page_decoder is not None,
            }
        )
        if self.max_page is not None:
            results_per_page = min(results_per_page or 1000, self.max_page)
        extra = {"page_decoder": page_decoder} if page_decoder is not None else {}
        return self.inner.query_entities(
            filter,
            select=select,
            results_per_page=results_per_page,
            continuation=continuation,
            **extra,
        )


@asynccontextmanager
async def table_of(kind: str, max_page: int | None) -> AsyncIterator[Recording]:
    flavor = Flavor.COSMOS if kind.startswith("cosmos-") else Flavor.STORAGE
    if kind.endswith("backend"):
        yield Recording(BackendTable(flavor=flavor), max_page)
        return
    from azt_server_stub import StubServer

    async with StubServer(flavor=flavor.value) as stub:
        service = azt.TableServiceClient.from_connection_string(
            stub.connection_string, flavor=flavor
        )
        async with service:
            client = await service.create_table("orm" + uuid.uuid4().hex[:12])
            yield Recording(client, max_page)


@pytest.fixture(params=["backend", "stub"])
async def orm_table(request: pytest.FixtureRequest) -> AsyncIterator[Recording]:
    async with table_of(request.param, None) as t:
        yield t


@pytest.fixture(params=["backend", "stub"])
async def small_pages_table(request: pytest.FixtureRequest) -> AsyncIterator[Recording]:
    async with table_of(request.param, 3) as t:
        yield t
