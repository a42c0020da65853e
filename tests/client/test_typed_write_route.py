"""The typed write route against the reference route (differential tests on random
objects): an entity class's generated ``__azt_encoded__`` (each property read once, the
entity built as ``to_entity`` builds it, the body written by
``wire.writers.declared_writer``) vs ``to_entity`` then ``encode_valid`` (or
``validate_entity`` and ``encode_entity``). Over every EDM type, ``None`` values, keys that
need escaping in URLs, values that bypassed the columns' checks, objects with unset
properties and an indexed class's index rows: the same entities, the same request bytes
in a transaction, the same errors, the same stored entities."""

from __future__ import annotations

import enum
import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import azt
from azt import Entity, Int64, Prop, TableClient, TableServiceClient, UpdateMode, prop
from azt._core.wire import json as wire_json
from azt._core.wire.writers import declared_writer, encode_valid
from azt._edm.entity import TableEntity
from azt._edm.validation import validate_entity
from azt._orm.codec import codec_for

from ..indexes.models import Item


class Color(enum.Enum):
    """A property with a converter (its wire value through the converter's hook)."""

    RED = "red"
    BLUE = "blue"


class Every(Entity):
    """Each EDM type twice: required, and optional (``None``: left out)."""

    s: Prop[str] = prop(default="")
    i32: Prop[int] = prop(default=0)
    i64: Prop[Int64] = prop(default=0)
    f: Prop[float] = prop(default=0.0)
    b: Prop[bool] = prop(default=False)
    dt: Prop[datetime] = prop(default=datetime(2000, 1, 1, tzinfo=UTC))
    g: Prop[uuid.UUID] = prop(default=uuid.UUID(int=0))
    y: Prop[bytes] = prop(default=b"")
    os: Prop[str | None] = prop(name="OS", default=None)
    oi32: Prop[int | None] = prop(name="OI32", default=None)
    oi64: Prop[Int64 | None] = prop(name="OI64", default=None)
    of: Prop[float | None] = prop(name="OF", default=None)
    ob: Prop[bool | None] = prop(name="OB", default=None)
    odt: Prop[datetime | None] = prop(name="ODT", default=None)
    og: Prop[uuid.UUID | None] = prop(name="OG", default=None)
    oy: Prop[bytes | None] = prop(name="OY", default=None)
    color: Prop[Color] = prop(default=Color.RED)


class Wide(Entity):
    """Many long optional strings: which are ``None`` decides whether the entity is over
    the service's 1 MiB (the size the writer estimates counts only those present)."""

    s0: Prop[str | None] = prop(default=None)
    s1: Prop[str | None] = prop(default=None)
    s2: Prop[str | None] = prop(default=None)
    s3: Prop[str | None] = prop(default=None)
    s4: Prop[str | None] = prop(default=None)
    s5: Prop[str | None] = prop(default=None)
    s6: Prop[str | None] = prop(default=None)
    s7: Prop[str | None] = prop(default=None)
    s8: Prop[str | None] = prop(default=None)
    s9: Prop[str | None] = prop(default=None)
    s10: Prop[str | None] = prop(default=None)
    s11: Prop[str | None] = prop(default=None)
    s12: Prop[str | None] = prop(default=None)
    s13: Prop[str | None] = prop(default=None)
    s14: Prop[str | None] = prop(default=None)
    s15: Prop[str | None] = prop(default=None)
    s16: Prop[str | None] = prop(default=None)
    s17: Prop[str | None] = prop(default=None)
    s18: Prop[str | None] = prop(default=None)
    s19: Prop[str | None] = prop(default=None)


CONN = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTBKBaSBCF8x+Q==;"
    "TableEndpoint=http://127.0.0.1:1/devstoreaccount1;"
)
#: a client that never sends: transactions are only built and encoded here
TABLE = TableServiceClient.from_connection_string(CONN).get_table_client("typed")

# --- values ------------------------------------------------------------------------------

#: key characters: plain ones and ones a URL escapes (the forbidden / \ # ? are refused)
_KEY_CHARS = st.sampled_from([*"aZ09-_.~ '\"%&+=:;,!()*@$é\u00a0\u4e2d😀", "\x7f"])
_KEYS = st.text(_KEY_CHARS, min_size=0, max_size=12)
_TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", "x" * 32768, "é" * 32768, "😀" * 16384, "x" * 32769]),
)
_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.one_of(st.integers(-(2**63), 2**63 - 1), _INT32)
_FLOATS = st.one_of(
    st.floats(),
    st.sampled_from([0.0, -0.0, 1e-4, 9.99e-5, 1e16, 9.999e15, -1e16, math.inf, math.nan]),
)
_ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(0), "Z")]
)
_DATETIMES = st.datetimes(
    min_value=datetime(1601, 1, 2), max_value=datetime(9999, 12, 30), timezones=_ZONES
)
_BYTES = st.one_of(st.binary(max_size=40), st.sampled_from([b"\0" * 65536, b"\0" * 65537]))


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


@st.composite
def _every(draw: st.DrawFn) -> dict[str, Any]:
    """The arguments of an :class:`Every` (which its columns' checks may refuse)."""
    return {
        "PartitionKey": draw(_KEYS),
        "RowKey": draw(_KEYS),
        "s": draw(_TEXT),
        "i32": draw(_INT32),
        "i64": draw(_INT64),
        "f": draw(_FLOATS),
        "b": draw(st.booleans()),
        "dt": draw(_DATETIMES),
        "g": draw(st.uuids()),
        "y": draw(_BYTES),
        "os": draw(_maybe(_TEXT)),
        "oi32": draw(_maybe(_INT32)),
        "oi64": draw(_maybe(_INT64)),
        "of": draw(_maybe(_FLOATS)),
        "ob": draw(_maybe(st.booleans())),
        "odt": draw(_maybe(_DATETIMES)),
        "og": draw(_maybe(st.uuids())),
        "oy": draw(_maybe(_BYTES)),
        "color": draw(st.sampled_from(Color)),
    }


#: values put straight into an object's slots, past its columns' checks (what the
#: generated writer must refuse, or take exactly as the reference route does)
_ODD = st.sampled_from(
    [
        ("f", 1),
        ("f", True),
        ("i32", 2**40),
        ("i32", 1.5),
        ("i64", "5"),
        ("s", 5),
        ("s", "lone \ud800 surrogate"),
        ("b", 1),
        ("dt", datetime(2020, 1, 1)),
        ("dt", datetime(2020, 1, 1, tzinfo=UTC)),
        ("g", "not a uuid"),
        ("y", bytearray(b"ab")),
        ("os", None),
        ("RowKey", 5),
        ("RowKey", "a/b"),
        ("color", "red"),
    ]
)


def _build(kwargs: dict[str, Any]) -> Every | None:
    try:
        return Every(**kwargs)
    except azt.ValidationError:
        return None  # refused by a column's check: not a write's business


def _put(obj: Any, attr: str, value: Any) -> None:
    object.__setattr__(obj, attr, value)  # the slot itself, past attrs' __setattr__


# --- the two routes ----------------------------------------------------------------------


def _reference(obj: Any) -> tuple[TableEntity, bytes | None]:
    """What the writes did before the typed route: ``to_entity``, then the per-shape
    writer of its ``TableEntity``."""
    entity = obj.to_entity()
    return entity, encode_valid(entity)


def _typed_types(entity: Any) -> dict[str, Any]:
    return dict(entity.edm_types)


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except (azt.ValidationError, TypeError, ValueError, AttributeError) as exc:
        return type(exc).__name__, str(exc)


def _requests(
    monkeypatch: pytest.MonkeyPatch,
    fast: bool,
    add: Callable[[azt.TableBatch], None],
    cls: type[Any] = Every,
) -> tuple[str, Any]:
    """The requests (and each operation's entity and types) a transaction holds once
    ``add`` built it, by the typed route (``fast``) or the reference one (the hook
    answering ``None``: ``__azt_entity__`` then the per-shape writer), or the error."""
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(cls, "__azt_encoded__", lambda self: None)

        def build() -> Any:
            batch = TABLE.batch()
            add(batch)
            assert batch._changeset is not None
            return (
                list(batch._changeset._requests),
                [(dict(op.entity), _typed_types(op.entity)) for op in batch.operations],
            )

        return _outcome(build)


# --- the entity and the body -------------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_every(), st.lists(_ODD, max_size=2))
def test_the_encoder_gives_what_to_entity_and_the_writers_give(
    kwargs: dict[str, Any], odd: list[tuple[str, Any]]
) -> None:
    obj = _build(kwargs)
    if obj is None:
        return
    for attr, value in odd:
        _put(obj, attr, value)
    found = obj.__azt_encoded__()
    if found is None:
        # to_entity's hooks refused a value (the general route then raises as before)
        assert odd
        assert _outcome(obj.to_entity)[0] != "ok"
        return
    entity, source, etag, body, more = found
    ref_entity, ref_body = _reference(obj)
    assert source is obj
    assert etag is obj.ETag
    assert more is False
    assert type(entity) is TableEntity
    assert dict(entity) == dict(ref_entity)
    assert list(entity) == list(ref_entity)
    assert entity.edm_types == ref_entity.edm_types
    if body is not None:
        # checked and encoded in one pass: what the service limits accept, and the bytes
        # the general encoder writes
        validate_entity(ref_entity)
        assert body == wire_json.encode_entity(ref_entity)
        # (the per-shape writer of TableEntity objects types a shape by the first values
        # it met: after odd ones it may leave a plain entity to the general path)
        assert ref_body is None or body == ref_body
    if not odd:
        # a plain object's values are all the writer takes: it takes them unless a
        # value is outside what it writes as the general encoder does
        special = not all(
            v is None or not isinstance(v, float) or 1e-4 <= abs(v) < 1e16 or v == 0.0
            for v in (obj.f, obj.of)
        )
        assert body is not None or special


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([None, 0, 32700, 32768, 32768, 32768]), min_size=20, max_size=20))
def test_the_size_counts_only_the_properties_present(lengths: list[int | None]) -> None:
    values: dict[str, Any] = {
        f"s{i}": None if n is None else "é" * n for i, n in enumerate(lengths)
    }
    obj = Wide("p", "r", **values)
    found = obj.__azt_encoded__()
    assert found is not None
    body = found[3]
    entity = obj.to_entity()
    try:
        validate_entity(entity)
    except azt.ValidationError:
        assert body is None  # over 1 MiB: the general path raises the service limit
    else:
        assert body == wire_json.encode_entity(entity)


@pytest.mark.parametrize(("full", "over"), [(15, False), (16, True)])
def test_the_size_limit_is_met_with_the_properties_present(full: int, over: bool) -> None:
    # 15 strings of 64 KiB (as UTF-16) and five None ones are under 1 MiB; 16 are over
    values: dict[str, Any] = {f"s{i}": "é" * 32768 for i in range(full)}
    obj = Wide("p", "r", **values)
    body = obj.__azt_encoded__()[3]  # type: ignore[index]
    assert (body is None) is over
    if over:
        with pytest.raises(azt.ValidationError, match="1 MiB"):
            validate_entity(obj.to_entity())


def test_an_object_with_unset_properties_takes_the_general_route() -> None:
    partial = codec_for(Every, frozenset({"PartitionKey", "RowKey", "s"})).from_entity(
        {"PartitionKey": "p", "RowKey": "r", "s": "x"}
    )
    assert partial.__azt_encoded__() is None
    batch = TABLE.batch()
    batch.upsert(partial)
    assert dict(batch.operations[0].entity) == {"PartitionKey": "p", "RowKey": "r", "s": "x"}


def test_declared_writer_refuses_shapes_it_cannot_write() -> None:
    assert (
        declared_writer(("PartitionKey", "RowKey", "x"), ("", "", "Edm.Odd"), (False,) * 3) is None
    )
    assert declared_writer(("PartitionKey", "RowKey"), ("", ""), (True, False)) is None
    assert declared_writer(("PartitionKey", "x"), ("", "str"), (False, False)) is None
    assert (
        declared_writer(("PartitionKey", "RowKey", "bad-name"), ("", "", "str"), (False,) * 3)
        is None
    )


# --- transactions ------------------------------------------------------------------------


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(st.tuples(_every(), st.lists(_ODD, max_size=1)), min_size=1, max_size=4),
    st.sampled_from(["create", "update", "upsert"]),
    st.sampled_from([UpdateMode.MERGE, UpdateMode.REPLACE]),
)
def test_a_transaction_holds_the_same_requests_by_either_route(
    monkeypatch: pytest.MonkeyPatch,
    drawn: list[tuple[dict[str, Any], list[tuple[str, Any]]]],
    kind: str,
    mode: UpdateMode,
) -> None:
    objs = []
    for i, (kwargs, odd) in enumerate(drawn):
        kwargs["PartitionKey"] = drawn[0][0]["PartitionKey"]
        kwargs["RowKey"] += f"-{i}"
        obj = _build(kwargs)
        if obj is None:
            return
        obj.ETag = "W/\"datetime'2026-01-01T00%3A00%3A00Z'\"" if i % 2 else None
        for attr, value in odd:
            _put(obj, attr, value)
        objs.append(obj)

    def add(batch: azt.TableBatch) -> None:
        for obj in objs:
            if kind == "create":
                batch.create(obj)
            elif kind == "update":
                batch.update(obj, mode)
            else:
                batch.upsert(obj, mode)

    fast = _requests(monkeypatch, True, add)
    assert fast == _requests(monkeypatch, False, add)


def _item(rk: str, **values: Any) -> Item:
    return Item("p", rk, **values)


def test_an_indexed_objects_index_rows_come_alike_by_either_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def creates(batch: azt.TableBatch) -> None:
        batch.create(_item("a", color="red", size=3, tag="t"))
        batch.create(_item("b 'q'", color="blue", size=-1))

    fast = _requests(monkeypatch, True, creates, Item)
    assert fast[0] == "ok"
    assert len(fast[1][0]) == 2 + 2 + 2 + 1  # the two rows, their by_color and by_size, a by_tag
    assert fast == _requests(monkeypatch, False, creates, Item)

    def unconditional(batch: azt.TableBatch) -> None:
        batch.upsert(_item("c", color="red"))

    refused = _requests(monkeypatch, True, unconditional, Item)
    assert refused[0] == "ValidationError"
    assert refused == _requests(monkeypatch, False, unconditional, Item)


def test_a_reserved_rowkey_is_refused_alike_by_either_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def create(batch: azt.TableBatch) -> None:
        batch.create(Every("p", "\ufffdix;by_x;1"))

    refused = _requests(monkeypatch, True, create)
    assert refused[0] == "ValidationError"
    assert "reserved" in refused[1]
    assert refused == _requests(monkeypatch, False, create)


# --- against the stub (tests/client/conftest.py's table) ---------------------------------


def _sample(pk: str, i: int) -> Every:
    return Every(
        pk,
        f"k '{i}' %é",
        s=f"s{i}",
        i32=-i,
        i64=2**40 + i,
        f=i / 8,
        b=i % 2 == 0,
        dt=datetime(2024, 5, 6, 7, 8, 9, i, tzinfo=UTC),
        g=uuid.UUID(int=i),
        y=bytes([i]),
        os=None if i % 2 else "o",
        oi64=None if i % 3 else i,
        odt=None if i % 2 else datetime(1999, 1, 1, tzinfo=UTC),
        og=uuid.UUID(int=i + 1) if i % 2 else None,
        color=Color.BLUE,
    )


async def test_the_stored_entities_and_write_back_are_alike(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored: dict[str, Any] = {}
    for route in ("fast", "reference"):
        with monkeypatch.context() as m:
            if route == "reference":
                m.setattr(Every, "__azt_encoded__", lambda self: None)
            objs = [_sample(route, i) for i in range(6)]
            batch = table.batch()
            for obj in objs:
                batch.create(obj)
            results = await table.submit_transaction(batch)
        assert [o.ETag for o in objs] == [r.etag for r in results]
        assert all(
            o.Timestamp is not None and o.Timestamp == r.timestamp
            for o, r in zip(objs, results, strict=True)
        )
        got = [e async for e in table.query_entities("PartitionKey eq @p", parameters={"p": route})]
        stored[route] = [
            ({k: v for k, v in e.items() if k != "PartitionKey"}, e.edm_types) for e in got
        ]
    assert stored["fast"] == stored["reference"]
    assert len(stored["fast"]) == 6
