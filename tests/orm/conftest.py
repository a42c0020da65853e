"""Fixtures for the ORM tests.

``backend_table``: a table client over the stub's in-process backend (its real ``$filter``
parser, evaluator, planner and paging, and its JSON entity writer), without HTTP. The rows
it returns go through the client's own wire decoder (``azt._wire.json.decode_feed``), so a
query runs through the same layers as with the real ``TableClient``, minus the network.
``max_page`` forces short pages, as range-partition boundaries do on Azure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from azt._wire.json import decode_feed, encode_entity
from azt.pagination import ContinuationToken, Page
from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.formats.json import EntityWriter, parse_entity
from azt_server_stub.formats.negotiation import Fmt
from azt_server_stub.odata._filter import compile_entity_filter


class _Pager:
    def __init__(self, table: BackendTable, args: tuple[Any, ...]) -> None:
        self._table = table
        self._args = args

    async def first_page(self) -> Page[Any]:
        return self._table._page(*self._args)


class BackendTable:
    """The query/insert surface of ``azt.TableClient`` over ``azt_server_stub.Backend``."""

    def __init__(self, max_page: int | None = None) -> None:
        self.backend = Backend()
        self.name = self.backend.create_table("acct", "Orm")
        self.max_page = max_page
        self.requests: list[dict[str, Any]] = []

    async def insert(self, entity: Any) -> None:
        body = encode_entity(entity.to_entity())
        pk, rk, props = parse_entity(body)
        self.backend.write("acct", self.name, WriteOp("insert", pk, rk, props))

    def query_entities(
        self,
        filter: str | None = None,
        *,
        select: Sequence[str] | None = None,
        top: int | None = None,
        continuation: ContinuationToken | None = None,
    ) -> _Pager:
        return _Pager(self, (filter, select, top, continuation))

    def _page(
        self,
        filter: str | None,
        select: Sequence[str] | None,
        top: int | None,
        continuation: ContinuationToken | None,
    ) -> Page[Any]:
        self.requests.append({"filter": filter, "select": select, "top": top})
        flt = compile_entity_filter(filter) if filter else None
        start = None
        if continuation is not None:
            start = (continuation.next_partition_key or "", continuation.next_row_key or "")
        if self.max_page is not None:
            top = min(top or 1000, self.max_page)
        page = self.backend.query_entities("acct", self.name, flt, top, start)
        writer = EntityWriter(Fmt.MINIMAL, "http://127.0.0.1/acct", "acct", self.name, select)
        body = json.dumps({"value": [writer.entity(e) for e in page.entities]}).encode()
        rows = decode_feed(body)
        nxt = None
        if page.next_key is not None:
            nxt = ContinuationToken(
                next_partition_key=page.next_key[0], next_row_key=page.next_key[1]
            )
        return Page(rows, nxt, request_id=None)


@pytest.fixture
def backend_table() -> BackendTable:
    return BackendTable()


@pytest.fixture
def small_pages_table() -> BackendTable:
    return BackendTable(max_page=3)
