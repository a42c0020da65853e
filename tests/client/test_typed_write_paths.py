"""The batch writer, the bulk loader and the context's transactions (``prepare_operation``)
against check-then-encode (differential tests on random entities): an entity write is now
checked and encoded in one pass (an entity class's generated ``__azt_encoded__``, a
mapping's per-shape writer: ``azt._core.packing.entity_write`` and ``prepare_group``;
``prepare_operation`` with the batch's ``_valid_body``) where before the entity was checked
(``check_entity``) and then encoded (``encode_entity``). The reference is the code those
paths ran before, called as it was (``create_operation`` and its siblings, no body). Over
every EDM type, ``None`` values, keys that need escaping, values past the columns' checks,
unset properties, the 1 MiB entity, the 4 MiB body and the 100 operations of a
transaction, an indexed class's index rows, JSON and AtomPub and the Cosmos DB flavour:
the same requests byte for byte, the same operations, the same errors (type and message)
and outcomes; the same stored entities and written-back ETags against the stub; and that
the one-pass route is the one taken where it applies."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeAlias, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import azt
from azt import BatchOperation, TableClient, TableServiceClient, UpdateMode
from azt._core import batch as batch_module
from azt._core import batch_writer as writer_module
from azt._core import table_client as table_client_module
from azt._core.base import check_entity
from azt._core.batch import (
    Prepared,
    checked_head,
    checked_operation,
    create_operation,
    delete_operation,
    encode_operation,
    operation_companions,
    operation_source,
    prepare_operation,
    update_operation,
    upsert_operation,
)
from azt._core.batch_writer import BatchWriter
from azt._core.bulk.loader import _Loader
from azt._core.bulk.queues import TableRef
from azt._core.packing import EntityWrite
from azt._core.results import WriteResult
from azt._core.wire import atom as wire_atom
from azt._core.wire import json as wire_json
from azt._core.wire.writers import encode_valid
from azt._edm.validation import STORAGE_LIMITS, ServiceLimits
from azt.bulk import BulkOptions, TableWrite, load
from azt_server_stub import StubServer

from ..indexes.models import Item
from .test_typed_write_route import _ODD, CONN, Every, Wide, _build, _every, _put, _sample

_CREDENTIAL = azt.SharedKeyCredential("acct", "a2V5")
#: clients that never send: JSON (the route), AtomPub and Cosmos DB (check-then-encode)
_JSON = TableServiceClient.from_connection_string(CONN).get_table_client("typed")
_ATOM = TableServiceClient(
    "https://acct.table.core.windows.net/", _CREDENTIAL, wire_format=azt.WireFormat.ATOM
).get_table_client("typed")
_COSMOS = TableServiceClient("https://acct.table.cosmos.azure.com/", _CREDENTIAL).get_table_client(
    "typed"
)
_CLIENTS = {"json": _JSON, "atom": _ATOM, "cosmos": _COSMOS}
_ERRORS = (azt.ValidationError, TypeError, ValueError, AttributeError)
_ETAG = "W/\"datetime'2026-01-01T00%3A00%3A00Z'\""
#: writes to make: (the writer's method, the entity, its keywords)
Calls: TypeAlias = list[tuple[str, Any, dict[str, Any]]]


# --- the code the paths ran before -------------------------------------------------------


def _old_entity_write(
    kind: str,
    entity: Any,
    mode: UpdateMode = UpdateMode.MERGE,
    *,
    etag: str | None = None,
    allow_property_loss: bool = False,
    limits: ServiceLimits = STORAGE_LIMITS,
    route: bool = True,
) -> EntityWrite:
    """The writer's and the loader's operation before: ``create_operation`` and its
    siblings (``check_entity``), with no body (encoded from the entity by the encoder)."""
    if kind == "create":
        op = create_operation(entity, limits=limits)
    elif kind == "update":
        op = update_operation(
            entity, mode, etag=etag, allow_property_loss=allow_property_loss, limits=limits
        )
    else:
        op = upsert_operation(entity, mode, allow_property_loss=allow_property_loss, limits=limits)
    return op, None, op.source, True


def _old_operation(self: _Loader, item: Any) -> tuple[TableRef, list[Prepared]]:
    """The loader's ``_operation`` before (its ``_take`` then encoded each operation, no
    body: ``encode_operation``), as it was."""
    table = self._default_table
    if isinstance(item, TableWrite):
        table, item = item.table, item.item
    if table is None:
        raise azt.ValidationError(
            "no table: give table= to load(), a TableClient, or TableWrite(table, item)"
        )
    if isinstance(item, BatchOperation):
        op = checked_operation(item)
        where = self._table(table)
        extra = operation_companions(op, operation_source(item), where.probe.limits)
        return where, [encode_operation(where.probe, o) for o in (op, *extra)]
    kind = self._kind
    if kind == "insert":
        op = create_operation(item)
    elif kind == "upsert-merge":
        op = upsert_operation(item, UpdateMode.MERGE)
    elif kind == "upsert-replace":
        op = upsert_operation(item, UpdateMode.REPLACE)
    elif kind == "merge":
        op = update_operation(item, UpdateMode.MERGE)
    elif kind == "replace":
        op = update_operation(item, UpdateMode.REPLACE)
    else:
        op = delete_operation(item)
    where = self._table(table)
    source = item if getattr(type(item), "__azt_entity__", None) else None
    extra = operation_companions(op, source, where.probe.limits)
    return where, [encode_operation(where.probe, o) for o in (op, *extra)]


class _Clock:
    """AtomPub's ``<updated>`` stamp, fixed (the bodies are compared across runs)."""

    @staticmethod
    def now(tz: Any = None) -> datetime:
        return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@contextmanager
def _route(monkeypatch: pytest.MonkeyPatch, new: bool) -> Iterator[None]:
    """The new route (as is) or the one before (the modules' names swapped back)."""
    with monkeypatch.context() as m:
        m.setattr(wire_atom, "datetime", _Clock)
        if not new:
            m.setattr(writer_module, "entity_write", _old_entity_write)
            m.setattr(_Loader, "_operation", _old_operation)
        yield


def _operation(op: BatchOperation) -> tuple[Any, ...]:
    """What an operation carries, comparable across runs on the same objects."""
    types = getattr(op.entity, "edm_types", None)
    return (
        repr(op),
        op.kind,
        op.mode,
        op.etag,
        type(op.entity).__name__,
        list(op.entity.items()),
        None if types is None else dict(types),
        None if op.source is None else id(op.source),
    )


def _error(exc: BaseException) -> tuple[str, str, Any]:
    return type(exc).__name__, str(exc), getattr(exc, "index", None)


async def _outcomes(target: Any, calls: Calls) -> list[Any]:
    """Each call on ``target`` (a writer, a client): ``"ok"`` or its error."""
    said: list[Any] = []
    for method, entity, options in calls:
        try:
            await getattr(target, method)(entity, **options)
            said.append("ok")
        except _ERRORS as exc:
            said.append(_error(exc))
    return said


# --- entities ----------------------------------------------------------------------------


def _form(obj: Every, form: str) -> Any:
    """The object, its ``TableEntity`` or a plain ``dict`` of it (types inferred)."""
    if form == "object":
        return obj
    try:
        entity = obj.to_entity()
    except _ERRORS:
        return obj  # an odd value to_entity refuses: the object's write refuses it too
    return entity if form == "entity" else dict(entity)


@st.composite
def _writes(draw: st.DrawFn) -> Calls:
    """A few writes (method, entity, keywords) over two partitions."""
    drawn = draw(st.lists(st.tuples(_every(), st.lists(_ODD, max_size=1)), min_size=2, max_size=6))
    pks = [drawn[0][0]["PartitionKey"], drawn[0][0]["PartitionKey"] + "2"]
    calls = []
    for i, (kwargs, odd) in enumerate(drawn):
        kwargs["PartitionKey"] = pks[draw(st.integers(0, 1))]
        kwargs["RowKey"] += f"-{i}"
        obj = _build(kwargs)
        if obj is None:
            continue
        obj.ETag = _ETAG if draw(st.booleans()) else None
        for attr, value in odd:
            _put(obj, attr, value)
        entity = _form(obj, draw(st.sampled_from(["object", "object", "entity", "dict"])))
        method = draw(st.sampled_from(["insert", "update", "upsert", "delete"]))
        options: dict[str, Any] = {}
        if method in ("update", "upsert"):
            options["mode"] = draw(st.sampled_from([UpdateMode.MERGE, UpdateMode.REPLACE]))
        if method == "update":
            options["etag"] = draw(st.sampled_from([None, "*", 'W/"other"']))
        calls.append((method, entity, options))
    return calls


def _strings(n: int) -> dict[str, Any]:
    """``n`` strings of :class:`Wide` at 64 KiB each (as UTF-16): over 1 MiB from 16."""
    return {f"s{k}": "é" * 32768 for k in range(n)}


# --- the batch writer --------------------------------------------------------------------


async def _write(
    calls: Calls, client: TableClient = _JSON
) -> tuple[list[Any], list[Any], list[Any]]:
    """Each call's outcome (``"ok"`` or its error), each transaction the writer submitted
    (its requests and operations) and the writer's outcomes."""
    sent: list[Any] = []

    async def submit(batch: azt.TableBatch) -> list[WriteResult]:
        assert batch._changeset is not None
        sent.append((list(batch._changeset._requests), [_operation(op) for op in batch.operations]))
        return [WriteResult(etag=_ETAG, request_id=None, status=204) for _ in batch.operations]

    writer = BatchWriter(client.batch, submit)
    said = await _outcomes(writer, calls)
    await writer.flush()
    outcomes = [(o.index, _operation(o.operation), o.ok, o.batch) for o in writer.results]
    return said, sent, outcomes


def _both_writers(
    monkeypatch: pytest.MonkeyPatch,
    calls: Calls,
    client: TableClient = _JSON,
) -> Any:
    found = {}
    for new in (True, False):
        with _route(monkeypatch, new):
            found[new] = asyncio.run(_write(calls, client))
    assert found[True] == found[False]
    return found[True]


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(_writes(), st.sampled_from(sorted(_CLIENTS)))
def test_the_writer_buffers_the_same_requests_by_either_route(
    monkeypatch: pytest.MonkeyPatch, calls: Calls, client: str
) -> None:
    _both_writers(monkeypatch, calls, _CLIENTS[client])


def test_the_writer_cuts_at_100_operations_and_4_mib_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    small: Calls = [("insert", _sample("p", i), {}) for i in range(150)]
    _, sent, _ = _both_writers(monkeypatch, small)
    assert [len(ops) for _, ops in sent] == [100, 50]
    # 15 strings of 64 KiB (as UTF-16) each: 0.94 MiB of JSON an entity, 4 in 4 MiB
    big: Calls = [("upsert", Wide("p", f"w{i}", **_strings(15)), {}) for i in range(7)]
    _, sent, _ = _both_writers(monkeypatch, big)
    assert [len(ops) for _, ops in sent] == [4, 3]
    assert sum(map(len, sent[0][0])) > 3.7 * 2**20


@pytest.mark.parametrize("form", ["object", "entity", "dict"])
def test_an_entity_over_1_mib_is_refused_alike_by_the_writer(
    monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    over = Wide("p", "r", **_strings(16))
    entity = over if form == "object" else _form(over, form)  # type: ignore[arg-type]
    said, sent, outcomes = _both_writers(
        monkeypatch, [("insert", entity, {}), ("upsert", _sample("p", 1), {})]
    )
    assert said[0][0] == "ValidationError"
    assert "1 MiB" in said[0][1]
    assert said[1] == "ok"
    assert len(sent) == 1
    assert len(outcomes) == 1


@pytest.mark.parametrize("client", sorted(_CLIENTS))
def test_an_indexed_objects_index_rows_come_alike_by_the_writer(
    monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    stored = Item("p", "c", color="green", size=1)
    stored.__azt_written__(_ETAG, None)  # as written: its indexed values are known
    stored.color = "red"
    calls: Calls = [
        ("insert", Item("p", "a", color="red", size=3, tag="t"), {}),
        ("insert", Item("p", "b 'q'", color="blue", size=-1), {}),
        ("update", stored, {"mode": UpdateMode.REPLACE}),
        ("upsert", Item("p", "d", color="red"), {}),  # unconditional: refused
        ("insert", Every("p", "\ufffdix;by_x;1"), {}),  # a reserved RowKey: refused
    ]
    said, sent, _ = _both_writers(monkeypatch, calls, _CLIENTS[client])
    assert said[:3] == ["ok", "ok", "ok"]
    assert said[3][0] == said[4][0] == "ValidationError"
    assert "reserved" in said[4][1]
    # the rows, their by_color and by_size rows, a by_tag row; the update's row and the
    # old and new rows of its by_color and by_size (the colour changed)
    assert len(sent) == 1
    assert len(sent[0][0]) == 2 + 2 + 2 + 1 + 1 + 2 + 2


def test_a_projection_takes_the_general_route_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    partial = Every.__azt_decode__(
        azt.TableEntity(PartitionKey="p", RowKey="r", s="x"), frozenset({"s"})
    )
    said, sent, _ = _both_writers(
        monkeypatch,
        [
            ("upsert", partial, {"mode": UpdateMode.REPLACE}),  # PropertyLossError
            ("upsert", partial, {"mode": UpdateMode.MERGE}),
        ],
    )
    assert said[0][0] == "PropertyLossError"
    assert said[1] == "ok"
    assert sent[0][1][0][5] == [("PartitionKey", "p"), ("RowKey", "r"), ("s", "x")]


# --- the bulk loader ---------------------------------------------------------------------

_KINDS = ["insert", "upsert-merge", "upsert-replace", "merge", "replace", "delete"]


async def _take(items: list[Any], kind: str, client: TableClient) -> tuple[Any, Any]:
    """The loader's queues once it took ``items`` (each entry's position, requests and
    operations) and its failures."""
    loader = _Loader(
        client,
        table=None,
        kind=kind,  # type: ignore[arg-type]
        options=BulkOptions(),
        checkpoint=None,
        progress=None,
        on_result=None,
        clock=time.monotonic,
    )
    raised = []
    for index, item in enumerate(items):
        try:
            await loader._take(index, item)
        except _ERRORS as exc:  # (not a ValidationError: the input's error, as before)
            raised.append((index, _error(exc)))
    queues = {
        key: [
            (e.index, [p.request for p in e.parts()], [_operation(p.operation) for p in e.parts()])
            for e in part.queue
        ]
        for key, part in loader._parts.items()
    }
    failures = [
        (f.index, f.table, f.partition_key, f.row_key, f.kind, f.message, repr(f.error))
        for f in loader.result.failures
    ]
    return queues, (failures, raised)


def _both_loads(
    monkeypatch: pytest.MonkeyPatch, items: list[Any], kind: str, client: TableClient = _JSON
) -> Any:
    found = {}
    for new in (True, False):
        with _route(monkeypatch, new):
            found[new] = asyncio.run(_take(items, kind, client))
    assert found[True] == found[False]
    return found[True]


def _as_operation(entity: Any, kind: str) -> BatchOperation:
    if kind == "insert":
        return BatchOperation("create", entity)
    if kind == "delete":
        return BatchOperation("delete", entity)
    mode = UpdateMode.REPLACE if kind.endswith("replace") else UpdateMode.MERGE
    return BatchOperation("upsert" if kind.startswith("upsert") else "update", entity, mode)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    _writes(),
    st.sampled_from(_KINDS),
    st.sampled_from(sorted(_CLIENTS)),
    st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_the_loader_queues_the_same_requests_by_either_route(
    monkeypatch: pytest.MonkeyPatch,
    calls: Calls,
    kind: str,
    client: str,
    wrapped: list[bool],
) -> None:
    items: list[Any] = [
        _as_operation(entity, kind) if w else entity
        for (_, entity, _), w in zip(calls, wrapped[: len(calls)], strict=True)
    ]
    if not items:
        return
    items[-1] = TableWrite("other", items[-1])  # another table: its first item, then known
    items.append(TableWrite("other", items[0]))
    _both_loads(monkeypatch, items, kind, _CLIENTS[client])


def test_the_loader_refuses_and_indexes_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    over = Wide("p", "r", **_strings(16))
    items = [
        Item("p", "a", color="red", size=3, tag="t"),
        over,
        dict(over.to_entity()),
        Every("p", "\ufffdix;by_x;1"),
        _sample("p", 1),
        BatchOperation("create", cast(Any, _sample("p", 2))),
        BatchOperation("create", cast(Any, over)),
    ]
    queues, (failures, raised) = _both_loads(monkeypatch, items, "insert")
    assert not raised
    assert [f[0] for f in failures] == [1, 2, 3, 6]
    assert all("1 MiB" in failures[k][5] for k in (0, 1, 3))
    assert [e[0] for e in queues[("typed", "p")]] == [0, 4, 5]
    assert len(queues[("typed", "p")][0][1]) == 1 + 3  # Item's row and its three index rows
    stored = Item("p", "s", color="red", size=2, tag="t")
    stored.__azt_written__(_ETAG, None)  # as written: its index rows are known
    for kind, rows in (("delete", 1 + 3), ("replace", 1 + 1)):
        for client in _CLIENTS.values():  # (the second entity of a table: its JSON known)
            queues, (failures, _) = _both_loads(monkeypatch, [stored, stored], kind, client)
            assert [f[0] for f in failures] == []
            assert [len(e[1]) for e in queues[("typed", "p")]] == [rows, rows]  # (by_size: a copy)
    partial = Every.__azt_decode__(
        azt.TableEntity(PartitionKey="p", RowKey="r", s="x"), frozenset({"s"})
    )
    for kind in ("upsert-replace", "replace"):
        queues, (failures, _) = _both_loads(monkeypatch, [partial, partial], kind)
        assert [(f[0], f[6].split("(")[0]) for f in failures] == [
            (0, "PropertyLossError"),
            (1, "PropertyLossError"),
        ]
    # a table that is not a str: the item's own refusal first, else the lookup's error
    odd_table = [TableWrite(cast(Any, 5), over), TableWrite(cast(Any, 5), _sample("p", 3))]
    queues, (failures, raised) = _both_loads(monkeypatch, odd_table, "insert")
    assert [f[0] for f in failures] == [0]
    assert [(i, e[0]) for i, e in raised] == [(1, "AttributeError")]
    queues, (failures, _) = _both_loads(monkeypatch, items[:1], "upsert-merge")
    assert "unconditional" in failures[0][5] or "If-Match" in failures[0][5]
    assert not queues


# --- the context's transactions (prepare_operation) --------------------------------------


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(_writes(), st.sampled_from(sorted(_CLIENTS)))
def test_prepared_operations_are_alike_by_either_route(
    monkeypatch: pytest.MonkeyPatch, calls: Calls, client: str
) -> None:
    with _route(monkeypatch, True):  # (AtomPub's stamp fixed)
        _prepared_alike(calls, _CLIENTS[client].batch())


def _prepared_alike(calls: Calls, probe: azt.TableBatch) -> None:
    for method, entity, options in calls:
        payload = entity
        if getattr(type(entity), "__azt_entity__", None) is not None:
            try:
                payload = entity.to_entity()  # what the context's tracker sends
            except _ERRORS:
                continue
        kind = "insert" if method == "insert" else "delete" if method == "delete" else "merge"
        op = _as_operation(
            payload, kind if options.get("mode") is not UpdateMode.REPLACE else "replace"
        )

        def new(op: BatchOperation = op) -> Any:
            p = prepare_operation(probe, op)
            return p.request, _operation(p.operation)

        def old(op: BatchOperation = op) -> Any:
            p = encode_operation(probe, checked_operation(op, probe.limits))
            return p.request, _operation(p.operation)

        assert _outcome(new) == _outcome(old)


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return "ok", fn()
    except _ERRORS as exc:
        return _error(exc)


# --- the route is the one taken ----------------------------------------------------------


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each entity ``check_entity`` checks on its own and each ``encode_entity`` encodes
    (the two passes of the old route)."""
    seen: list[Any] = []
    real = check_entity

    def spy(entity: Any, limits: ServiceLimits = STORAGE_LIMITS) -> Any:
        seen.append(entity)
        return real(entity, limits)

    monkeypatch.setattr("azt._core.batch.check_entity", spy)
    real_encode = wire_json.encode_entity

    def encode(entity: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(("encoded", entity))
        return real_encode(entity, *args, **kwargs)

    monkeypatch.setattr(wire_json, "encode_entity", encode)
    return seen


def test_the_writer_and_the_loader_check_in_one_pass(checks: list[Any]) -> None:
    objs = [_sample("p", i) for i in range(4)]
    calls: Calls = [
        ("insert", objs[0], {}),
        ("upsert", objs[1], {"mode": UpdateMode.REPLACE}),
        ("update", objs[2], {}),
        ("insert", objs[3].to_entity(), {}),
        ("insert", {"PartitionKey": "p", "RowKey": "d", "n": 1}, {}),
    ]
    said, sent, _ = asyncio.run(_write(calls))
    assert said == ["ok"] * 5
    assert len(sent[0][0]) == 5
    assert checks == []
    items = [_sample("q", i) for i in range(3)] + [
        BatchOperation("create", {"PartitionKey": "q", "RowKey": "x"})
    ]
    queues, _ = asyncio.run(_take(items, "upsert-replace", _JSON))
    assert len(queues[("typed", "q")]) == 4
    assert checks == []
    prepare_operation(_JSON.batch(), BatchOperation("create", objs[0].to_entity()))
    assert checks == []
    # where the bodies are not Storage's JSON, the entities are checked on their own
    # (the loader's first entity of a table not seen yet is checked with its JSON body)
    asyncio.run(_write(calls[:1], _COSMOS))
    assert [type(c).__name__ for c in checks] == ["TableEntity", "tuple"]  # checked, encoded
    del checks[:]
    asyncio.run(_take(items[:3], "insert", _ATOM))
    assert [type(c).__name__ for c in checks] == ["TableEntity", "TableEntity"]  # (AtomPub)


# --- against the stub --------------------------------------------------------------------


async def test_stored_entities_and_write_back_are_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stored: dict[str, Any] = {}
    async with (
        StubServer() as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        table = await service.create_table("typedpaths")
        for route in ("new", "old"):
            with _route(monkeypatch, route == "new"):
                written = [_sample(f"w{route}", i) for i in range(5)]
                async with table.batch_writer() as writer:
                    for obj in written:
                        await writer.insert(obj)
                loaded = [_sample(f"l{route}", i) for i in range(5)]
                result = await load(table, loaded, kind="upsert-replace")
            assert result.written == 5
            assert not result.failures
            for obj, outcome in zip(written, writer.results, strict=True):
                assert outcome.result is not None
                assert obj.ETag == outcome.result.etag
                assert obj.Timestamp is not None
                assert obj.Timestamp == outcome.result.timestamp
            assert all(o.ETag and o.Timestamp for o in loaded)
            for pk in (f"w{route}", f"l{route}"):
                got = [
                    e
                    async for e in table.query_entities("PartitionKey eq @p", parameters={"p": pk})
                ]
                stored[pk[0] + route] = [
                    ({k: v for k, v in e.items() if k != "PartitionKey"}, e.edm_types) for e in got
                ]
    assert stored["wnew"] == stored["wold"] == stored["lnew"] == stored["lold"]
    assert len(stored["wnew"]) == 5


# --- an indexed object's single writes (one transaction with its index rows) ------------


def _old_checked_head(
    batch: azt.TableBatch, operation: BatchOperation, body: bytes | None = None
) -> tuple[BatchOperation, bytes | None]:
    """``TableClient._write_group``'s first step before: the main operation checked again
    (``check_entity``), no body (encoded from the entity by the encoder)."""
    return checked_operation(operation, batch.limits), None


async def _single_writes(client: TableClient) -> tuple[list[Any], list[Any]]:
    """Insert, update and upsert of indexed objects through ``client`` (sending nothing):
    each call's outcome and each transaction it submitted (its requests and operations)."""
    sent: list[Any] = []

    async def submit(batch: Any) -> list[WriteResult]:
        assert batch._changeset is not None
        # (each run writes objects of its own: their classes compared, not their ids)
        ops = [(*_operation(op)[:-1], type(op.source).__name__) for op in batch.operations]
        sent.append((list(batch._changeset._requests), ops))
        return [WriteResult(etag=_ETAG, request_id=None, status=204) for _ in batch.operations]

    stored = Item("p", "c", color="green", size=1)
    stored.__azt_written__(_ETAG, None)  # as written: its indexed values are known
    stored.color = "red"
    again = Item("p", "e", color="blue", size=2)
    again.__azt_written__(_ETAG, None)
    again.size = 5
    calls: Calls = [
        ("insert_entity", Item("p", "a", color="red", size=3, tag="t"), {}),
        ("insert_entity", Item("p", "b 'q'", color="blue", size=-1, note="é\U0001f600"), {}),
        ("update_entity", stored, {"mode": UpdateMode.REPLACE}),
        ("upsert_entity", again, {"mode": UpdateMode.MERGE}),
        ("insert_entity", Item("p", "\ufffdix;by_x;1", color="x"), {}),  # a reserved RowKey
    ]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(client, "submit_transaction", submit)
        said = await _outcomes(client, calls)
    return said, sent


@pytest.mark.parametrize("client", sorted(_CLIENTS))
def test_an_indexed_objects_single_writes_send_alike(
    monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    """``insert_entity``/``update_entity`` of an indexed object send the same transactions
    (requests byte for byte, operations) and refuse alike (an upsert: unconditional) whether
    the main entity's body is the one the call checked and encoded in one pass (now) or the
    entity is checked again and encoded from scratch (before); on the JSON route the main
    entity is neither checked nor encoded a second time."""
    table = _CLIENTS[client]
    checks: list[int] = []
    real_check = check_entity

    def counted(*args: Any, **kwargs: Any) -> Any:
        checks.append(1)
        return real_check(*args, **kwargs)

    encodes: list[int] = []
    real_encode = encode_valid

    def encode_counted(data: Any) -> Any:
        encodes.append(1)
        return real_encode(data)

    monkeypatch.setattr(batch_module, "check_entity", counted)
    monkeypatch.setattr(batch_module, "encode_valid", encode_counted)
    with _route(monkeypatch, True):
        new = asyncio.run(_single_writes(table))
    checked_now, encoded_now = len(checks), len(encodes)
    real_head = checked_head
    with _route(monkeypatch, True), monkeypatch.context() as m:  # the call's body not taken
        m.setattr(
            table_client_module, "checked_head", lambda batch, op, body=None: real_head(batch, op)
        )
        assert asyncio.run(_single_writes(table)) == new
    encoded_again = len(encodes) - encoded_now
    checks.clear()
    with _route(monkeypatch, False), monkeypatch.context() as m:
        m.setattr(table_client_module, "checked_head", _old_checked_head)
        old = asyncio.run(_single_writes(table))
    checked_before = len(checks)
    assert new == old
    said, sent = new
    assert said[:3] == ["ok", "ok", "ok"]
    assert said[3][0] == said[4][0] == "ValidationError"
    assert "unconditional" in said[3][1]
    assert "reserved" in said[4][1]
    # the rows and their by_color and by_size rows, a by_tag row; the update's row and the
    # old and new rows of its by_color and by_size (the colour changed)
    assert [len(requests) for requests, _ in sent] == [4, 3, 5]
    if client == "json":  # the three main entities: checked once each before, now not again
        assert checked_before - checked_now == 3
        assert encoded_again - encoded_now == 3  # (their bodies are the calls' own)
    else:  # check-then-encode both ways (AtomPub, Cosmos DB limits)
        assert checked_before == checked_now
