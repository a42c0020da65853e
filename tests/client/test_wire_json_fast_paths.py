"""The JSON entity encoder's fast paths against the code they replaced (differential tests
on random entities): msgspec instead of the stdlib encoder for plain objects, the
aware-UTC ``datetime`` written without ``coerce_value``, and the per-shape writers that
check and encode a plain dict in one pass (``encode_valid`` vs ``validate_entity`` then
``encode_entity``)."""

from __future__ import annotations

import enum
import math
import pickle
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt._core.wire import decode_guid, writers
from azt._core.wire import json as wire_json
from azt._core.wire.writers import encode_valid
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import SharedEdmTypes, TableEntity
from azt._edm.types import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    EdmType,
    Typed,
    coerce_value,
)
from azt._edm.validation import validate_entity
from azt._errors import ValidationError

_ANN = "@odata.type"


def _reference_entity_json(entity: Any, types: dict[str, EdmType] | None = None) -> dict[str, Any]:
    """entity_json as it was before its fast paths (every float and datetime through the
    per-type encoders)."""
    tmap = getattr(entity, "_types", None) or None
    if types:
        tmap = {**tmap, **types} if tmap else types
    out: dict[str, Any] = {}
    for name, v in entity.items():
        if tmap is not None and name in tmap:
            if v is not None:
                enc = wire_json._EXPLICIT.get((tmap[name], type(v)))
                if enc is None:
                    wire_json._put_explicit(out, name, v, tmap[name])
                else:
                    enc(out, name, v)
            continue
        tv = type(v)
        if tv is str or tv is bool:
            out[name] = v
        elif tv is int:
            if INT32_MIN <= v <= INT32_MAX:
                out[name] = v
            elif INT64_MIN <= v <= INT64_MAX:
                out[name + _ANN] = "Edm.Int64"
                out[name] = str(v)
            else:
                coerce_value(v, EdmType.INT64, name)
        elif v is None:
            continue
        else:
            enc = wire_json._ENCODERS.get(tv)
            if enc is None:
                wire_json._put_other(out, name, v)
            else:
                enc(out, name, v)
    out.pop("Timestamp", None)
    out.pop("Timestamp" + _ANN, None)
    for key in ("PartitionKey", "RowKey"):
        if key + _ANN in out or (key in out and type(out[key]) is not str):
            raise ValidationError(f"{key} must be a str, got {entity[key]!r}")
    return out


def _outcome(call: Any) -> Any:
    try:
        return call()
    except Exception as exc:  # the same exception, with the same message, is the point
        return f"{type(exc).__name__}: {exc}"


def _typed(value: Any, edm_type: EdmType) -> Any:
    """``Typed(value, edm_type)``, or ``value`` itself when Typed refuses the pair."""
    try:
        return Typed(value, edm_type)
    except (ValidationError, TypeError, ValueError):
        return value


class _Str(str):
    pass


class _Int(int):
    pass


class _Float(float):
    pass


class _Colour(enum.StrEnum):
    RED = "red"


class _Size(enum.IntEnum):
    BIG = 7


_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [0.0, -0.0, 1e-4, -1e-4, 9.999999999999999e-05, 1e16, -1e16, 9999999999999998.0, 1e-5]
    ),
    st.floats(min_value=1e-6, max_value=1e-3),
    st.floats(min_value=1e15, max_value=1e17),
)
_ZONES = st.sampled_from([UTC, timezone(timedelta(0)), timezone(timedelta(hours=2))])
_DATETIMES = st.one_of(
    st.datetimes(timezones=_ZONES),
    st.datetimes(),  # naive
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1700, 1, 1), timezones=_ZONES),
    st.builds(
        EdmDateTime.from_ticks, st.integers(504911232000000000, 3155378975999999999)
    ),  # 1601..9999
)
_VALUES = st.one_of(
    st.text(),
    st.text(st.characters(codec="utf-8")),
    st.sampled_from(["\ud800", "a\udfffb", "\x00\x1f\x7f", "\u2028\u2029", "\U0001f600"]),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    _FLOATS,
    _DATETIMES,
    st.uuids(),
    st.binary(max_size=20),
    st.binary(max_size=5).map(bytearray),
    st.none(),
    st.builds(_Str, st.text(max_size=5)),
    st.builds(_Int, st.integers(-5, 2**40)),
    st.builds(_Float, _FLOATS),
    st.just(_Colour.RED),
    st.just(_Size.BIG),
    st.builds(
        _typed, st.integers(-(2**33), 2**33), st.sampled_from([EdmType.INT32, EdmType.INT64])
    ),
    st.builds(_typed, _FLOATS, st.just(EdmType.DOUBLE)),
    st.builds(_typed, st.integers(-5, 5), st.just(EdmType.DOUBLE)),
    st.builds(_typed, st.text(max_size=5), st.just(EdmType.STRING)),
    st.builds(_typed, st.uuids().map(str), st.just(EdmType.GUID)),
    st.builds(_typed, _DATETIMES, st.just(EdmType.DATETIME)),
    st.just(object()),
)
_NAMES = st.one_of(
    st.sampled_from(["A", "Name", "Timestamp", "PartitionKey", "RowKey", "x1", "é"]),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from([1, 1.5, 1e16, True, None, _Str("S")]),
)
_TYPES = st.sampled_from(list(EdmType))


@st.composite
def _entities(draw: st.DrawFn) -> tuple[Any, dict[str, EdmType] | None]:
    props = draw(st.dictionaries(_NAMES, _VALUES, max_size=8))
    entity: dict[Any, Any] = {}
    if draw(st.integers(0, 3)):
        entity["PartitionKey"] = draw(st.one_of(st.text(max_size=5), _VALUES))
        entity["RowKey"] = draw(st.text(max_size=5))
    entity.update(props)
    types = None
    if draw(st.integers(0, 3)) == 0:
        str_names = [n for n in entity if isinstance(n, str)]
        if str_names:
            types = draw(st.dictionaries(st.sampled_from(str_names), _TYPES, max_size=3))
    if draw(st.integers(0, 3)) == 0:
        table_entity = TableEntity({k: v for k, v in entity.items() if isinstance(k, str)})
        str_names = list(table_entity)
        if str_names:
            table_entity._types = draw(
                st.dictionaries(st.sampled_from(str_names), _TYPES, max_size=3)
            )
        return table_entity, types
    return entity, types


@settings(max_examples=3000, deadline=None)
@given(_entities())
def test_encode_entity_writes_what_the_stdlib_path_wrote(
    case: tuple[Any, dict[str, EdmType] | None],
) -> None:
    entity, types = case
    reference = _outcome(lambda: wire_json._dumps(_reference_entity_json(entity, types)))
    assert _outcome(lambda: wire_json.encode_entity(entity, types=types)) == reference
    expected_json = _outcome(lambda: _reference_entity_json(entity, types))
    got_json = _outcome(lambda: wire_json.entity_json(entity, types=types))
    if isinstance(expected_json, dict) and isinstance(got_json, dict):
        assert list(got_json.items()) == list(expected_json.items()) or _same_nan(
            got_json, expected_json
        )
    else:
        assert got_json == expected_json


def _same_nan(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal but for float NaNs (NaN != NaN)."""
    if list(a) != list(b):
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if x != y or type(x) is not type(y):
            return False
    return True


@settings(max_examples=2000, deadline=None)
@given(_FLOATS)
def test_every_float_encodes_as_repr_does(value: float) -> None:
    entity = {"PartitionKey": "p", "RowKey": "r", "F": value}
    assert wire_json.encode_entity(entity) == wire_json._dumps(_reference_entity_json(entity))


def test_aware_utc_datetimes_and_their_neighbours() -> None:
    for value in (
        datetime(2024, 1, 1, 12, 0, 0, 1000, tzinfo=UTC),
        datetime(2024, 1, 1, tzinfo=UTC),
        datetime(1601, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2024, 1, 1, tzinfo=timezone(timedelta(0))),
        datetime(2024, 1, 1, fold=1, tzinfo=UTC),
    ):
        entity = {"PartitionKey": "p", "RowKey": "r", "When": value}
        assert wire_json.encode_entity(entity) == wire_json._dumps(_reference_entity_json(entity))
    early = {"PartitionKey": "p", "RowKey": "r", "When": datetime(1600, 12, 31, tzinfo=UTC)}
    assert _outcome(lambda: wire_json.encode_entity(early)) == _outcome(
        lambda: wire_json._dumps(_reference_entity_json(early))
    )
    assert "ValidationError" in _outcome(lambda: wire_json.encode_entity(early))


def test_plain_entity_and_guid() -> None:
    entity = {
        "PartitionKey": "p",
        "RowKey": "r",
        "Id": uuid.UUID(int=5),
        "When": datetime(2024, 1, 1, 12, 0, 0, 1000, tzinfo=UTC),
        "Score": 0.5,
    }
    assert wire_json.encode_entity(entity) == (
        b'{"PartitionKey":"p","RowKey":"r","Id@odata.type":"Edm.Guid",'
        b'"Id":"00000000-0000-0000-0000-000000000005","When@odata.type":"Edm.DateTime",'
        b'"When":"2024-01-01T12:00:00.0010000Z","Score@odata.type":"Edm.Double","Score":0.5}'
    )


# --- per-shape writers (check and encode in one pass) --------------------------------------


def _checked_then_encoded(entity: Any) -> Any:
    """What the write paths do without a writer: validate_entity, then encode_entity."""
    try:
        validate_entity(entity)
        return wire_json.encode_entity(entity)
    except (ValidationError, TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=3000, deadline=None)
@given(_entities())
def test_encode_valid_is_validate_then_encode(case: tuple[Any, dict[str, EdmType] | None]) -> None:
    entity, _ = case
    fast = encode_valid(entity)
    if fast is not None:
        assert fast == _checked_then_encoded(entity)


_PLAIN_KINDS = {
    "str": st.text(max_size=20),
    "long str": st.builds(
        lambda n, k: "a" * n + "\U0001f600" * k, st.integers(32760, 32770), st.integers(0, 3)
    ),
    "int32": st.integers(-(2**31) - 2, 2**31 + 1),
    "int64": st.integers(-(2**63) - 2, 2**63 + 1),
    "float": _FLOATS,
    "bool": st.booleans(),
    "datetime": st.one_of(
        st.datetimes(timezones=st.just(UTC)),
        st.datetimes(min_value=datetime(1599, 1, 1), max_value=datetime(1602, 1, 1)).map(
            lambda d: d.replace(tzinfo=UTC)
        ),
        st.datetimes(timezones=_ZONES),
    ),
    "EdmDateTime": st.builds(EdmDateTime.from_ticks, st.integers(0, 3155378975999999999)),
    "UUID": st.uuids(),
    "bytes": st.binary(max_size=10) | st.integers(65530, 65540).map(lambda n: b"x" * n),
    "any": _VALUES,
}
_GOOD_KEY = st.text(
    st.characters(blacklist_categories=["Cc", "Cs"], blacklist_characters="/\\#?"), max_size=12
)
_ODD_KEY = st.text(max_size=8) | st.sampled_from(
    ["a/b", "x#", "\x7f", "é" * 1024, "é" * 1025, "\U0001f600" * 513, ""]
)


@st.composite
def _shaped(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Entities of one shape (names and value kinds), of random values."""
    names = draw(st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True), max_size=6))
    names = [n for n in dict.fromkeys(names) if n not in ("PartitionKey", "RowKey", "Timestamp")]
    kinds = [draw(st.sampled_from(sorted(_PLAIN_KINDS))) for _ in names]
    order = ["PartitionKey", "RowKey", *names]
    if draw(st.booleans()):
        order = draw(st.permutations(order))
    out = []
    for _ in range(draw(st.integers(1, 4))):
        entity: dict[str, Any] = {}
        for name in order:
            if name in ("PartitionKey", "RowKey"):
                entity[name] = draw(_ODD_KEY if draw(st.integers(0, 7)) == 0 else _GOOD_KEY)
            else:
                entity[name] = draw(_PLAIN_KINDS[kinds[names.index(name)]])
        out.append(entity)
    return out


@settings(max_examples=1500, deadline=None)
@given(_shaped())
def test_writers_of_random_shapes(entities: list[dict[str, Any]]) -> None:
    writers._writers.clear()
    for entity in entities:
        fast = encode_valid(entity)
        if fast is not None:
            assert fast == _checked_then_encoded(entity)


def test_a_plain_valid_entity_takes_the_writer() -> None:
    writers._writers.clear()
    entity = {
        "PartitionKey": "p",
        "RowKey": "r",
        "S": "é" * 10,
        "I": 5,
        "L": 2**40,
        "F": 0.5,
        "B": True,
        "D": datetime(2024, 1, 1, tzinfo=UTC),
        "E": EdmDateTime(2024, 1, 1, nanosecond=300),
        "G": uuid.UUID(int=7),
        "X": b"\x00\xff",
    }
    fast = encode_valid(entity)
    assert fast is not None
    assert fast == _checked_then_encoded(entity)
    second = dict(entity, I=-(2**31), L=-(2**63), F=-1e15, S="x" * 32768)
    assert encode_valid(second) == _checked_then_encoded(second)
    # the same shape with a value of another kind, or out of its kind's range: not here
    for name, value in (("I", 2**31), ("L", 5), ("F", 1e16), ("S", None), ("G", "x")):
        assert encode_valid(dict(entity, **{name: value})) is None
    assert encode_valid(dict(entity, RowKey="a/b")) is None
    assert "ValidationError" in _checked_then_encoded(dict(entity, RowKey="a/b"))
    assert len(writers._writers) == 1


@settings(max_examples=1500, deadline=None)
@given(_shaped(), st.data())
def test_typed_writers_of_random_shapes(
    entities: list[dict[str, Any]], data: st.DataObject
) -> None:
    """``TableEntity`` shapes whose ``edm_types`` declare some properties Int64 (what entity
    objects send): the writer's bytes are validate_entity then encode_entity's, or None."""
    names = [n for n in entities[0] if n not in ("PartitionKey", "RowKey")]
    declared = data.draw(st.lists(st.sampled_from(names), unique=True) if names else st.just([]))
    writers._typed_writers.clear()
    for plain in entities:
        entity = TableEntity(plain)
        for name in declared:
            entity.edm_types[name] = EdmType.INT64
        fast = encode_valid(entity)
        if fast is not None:
            assert fast == _checked_then_encoded(entity)
            for name in declared:
                assert f'"{name}@odata.type":"Edm.Int64"'.encode() in fast


class SharedDict(dict[str, Any]):
    """A dict subclass: not a plain dict nor a TableEntity."""


def test_writers_are_bounded_and_not_for_other_mappings() -> None:
    writers._writers.clear()
    for i in range(300):
        encode_valid({"PartitionKey": "p", "RowKey": "r", f"P{i}": i})
    assert len(writers._writers) <= 256
    typed = TableEntity(PartitionKey="p", RowKey="r", N=1)
    typed.edm_types["N"] = EdmType.DOUBLE  # only declared Int64s take a writer
    assert encode_valid(typed) is None
    typed.edm_types["N"] = EdmType.INT64
    assert encode_valid(typed) == _checked_then_encoded(typed)
    keyed = TableEntity(PartitionKey="p", RowKey="r")
    keyed.edm_types["PartitionKey"] = EdmType.INT64
    assert encode_valid(keyed) is None
    assert encode_valid(SharedDict(PartitionKey="p", RowKey="r")) is None
    small = TableEntity(PartitionKey="p", RowKey="r", N=5, M=2**40, S="s")
    small.edm_types.update(N=EdmType.INT64, M=EdmType.INT64)
    assert encode_valid(small) == (
        b'{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"5",'
        b'"M@odata.type":"Edm.Int64","M":"1099511627776","S":"s"}'
    )
    assert encode_valid({"PartitionKey": "p", "RowKey": "r", "Timestamp": 1}) is None
    assert encode_valid({"PartitionKey": "p"}) is None
    assert encode_valid({"PartitionKey": "p", "RowKey": "r", "a-b": 1}) is None
    lone = {"PartitionKey": "p", "RowKey": "r", "S": "\ud800"}
    assert encode_valid(lone) is None
    assert "ValidationError" in _checked_then_encoded(lone)


def test_writers_count_the_entity_size_as_validate_entity_does() -> None:
    # 16 strings of up to 32 Ki UTF-16 units pass 1 MiB as the service counts it: the
    # sizes around the limit (names of several lengths, keys, an astral character) are
    # accepted and refused alike
    for name_length in (1, 7, 40):
        names = [f"P{i:02d}".ljust(name_length, "x") for i in range(16)]
        base: dict[str, Any] = {"PartitionKey": "pk", "RowKey": "\U0001f600r"}
        for name in names[:-1]:
            base[name] = "s" * 32768
        size = 4 + 2 * 2 + 2 * 3 + sum(8 + 2 * len(n) + 2 * 32768 + 4 for n in names[:-1])
        room = (1024 * 1024 - size - 8 - 2 * len(names[-1]) - 4) // 2
        writers._writers.clear()
        for length in range(room - 2, room + 3):
            entity = dict(base, **{names[-1]: "t" * length})
            expected = _checked_then_encoded(entity)
            assert isinstance(expected, bytes) == (length <= room)
            assert encode_valid(entity) == (expected if length <= room else None)


# --- DateTime reading ----------------------------------------------------------------------


def _parsed(parse: Any, text: str) -> Any:
    try:
        value = parse(text)
    except Exception as exc:  # the same exception, with the same message, is the point
        return f"{type(exc).__name__}: {exc}"
    return (type(value), value, value.nanosecond, value.tzinfo, value.fold, value.to_wire())


def _wire_forms(value: EdmDateTime) -> list[str]:
    """The service's form of ``value`` with 0-7 fraction digits, and neighbours of it."""
    base = value.to_wire()[:19]
    digits = value.to_wire()[20:27]
    forms = [base + "Z"] + [f"{base}.{digits[:k]}Z" for k in range(1, 8)]
    forms += [f"{base}.Z", f"{base}.12345678Z", base, base + "+01:00", base.replace("T", " ")]
    forms += [base.replace("T", "t") + "Z", f"{base}.{digits}z", f"{base},{digits}Z"]
    return forms


@settings(max_examples=1500, deadline=None)
@given(st.builds(EdmDateTime.from_ticks, st.integers(0, 3155378975999999999)))
def test_parse_fast_path_reads_what_the_general_parse_reads(value: EdmDateTime) -> None:
    for text in _wire_forms(value):
        assert _parsed(EdmDateTime.parse, text) == _parsed(EdmDateTime._parse_general, text)


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        st.text(max_size=30),
        st.text("0123456789-:TZ.+ ", min_size=18, max_size=30),
        st.from_regex(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,8})?Z", fullmatch=True),
    )
)
def test_parse_on_any_text(text: str) -> None:
    assert _parsed(EdmDateTime.parse, text) == _parsed(EdmDateTime._parse_general, text)


# --- page decoding: per-shape row decoders -------------------------------------------------

_ANNOTATED = {
    "Edm.Int64": st.sampled_from(["5", "-9223372036854775808", "x", "1.5", 7, None]),
    "Edm.DateTime": st.sampled_from(
        ["2024-01-01T12:00:00.001Z", "2024-01-01T12:00:00Z", "2024-13-01T00:00:00Z", None, 5]
    ),
    "Edm.Guid": st.sampled_from(["00000000-0000-0000-0000-000000000005", "zz", None]),
    "Edm.Binary": st.sampled_from(["AAEC/w==", "A", None]),
    "Edm.Double": st.sampled_from([1.5, "NaN", "Infinity", "x", 2, None]),
    "Edm.Int32": st.sampled_from([3, "3", None]),
    "Edm.Boolean": st.sampled_from([True, "true", "maybe", None]),
    "Edm.String": st.sampled_from(["s", 5, None]),
    "Edm.Unknown": st.sampled_from(["v", None]),
}


@st.composite
def _page_rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows of a page: most share one shape (names, annotations); values vary."""
    props = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["A", "B", "C", "a.b", "Timestamp"]),
                st.sampled_from([None, *sorted(_ANNOTATED)]),
                st.booleans(),
            ),
            max_size=4,
            unique_by=lambda p: p[0],
        )
    )
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        row: dict[str, Any] = {}
        if draw(st.integers(0, 5)):
            row["odata.etag"] = 'W/"x"'
        row["PartitionKey"] = "p"
        row["RowKey"] = draw(st.sampled_from(["r", "s"]))
        if draw(st.integers(0, 5)):
            row["Timestamp"] = "2024-01-01T00:00:00.1234567Z"
        for name, declared, ann_first in props:
            ann: object = declared
            if ann is None:
                row[name] = draw(st.sampled_from(["v", 1, None]))
                continue
            if draw(st.integers(0, 7)) == 0:
                ann = draw(st.sampled_from([*sorted(_ANNOTATED), 5]))
            value = draw(_ANNOTATED.get(ann, st.just("v")) if isinstance(ann, str) else st.just(1))
            if ann_first:
                row[name + "@odata.type"] = ann
                row[name] = value
            else:
                row[name] = value
                row[name + "@odata.type"] = ann
        rows.append(row)
    return rows


def _decoded(rows: list[dict[str, Any]], *, row_decoders: bool) -> Any:
    wire_json._row_decoders.clear()
    generate = wire_json._generate_row_decoder
    if not row_decoders:
        wire_json._generate_row_decoder = lambda keys, sample: None
    try:
        entities = wire_json._decode_list([dict(r) for r in rows])
    except Exception as exc:  # the same exception, with the same message, is the point
        return f"{type(exc).__name__}: {exc}"
    finally:
        wire_json._generate_row_decoder = generate
    return [
        (
            [(k, "<NaN>" if v != v else v) for k, v in e.items()],  # NaN != NaN
            getattr(e, "_types", None),
            getattr(e, "_etag", None),
            getattr(e, "_ts", None),
        )
        for e in entities
    ]


@settings(max_examples=2000, deadline=None)
@given(_page_rows())
def test_row_decoders_decode_as_the_loop_does(rows: list[dict[str, Any]]) -> None:
    assert _decoded(rows, row_decoders=True) == _decoded(rows, row_decoders=False)


def test_a_usual_page_takes_the_row_decoder() -> None:
    wire_json._row_decoders.clear()
    row = {
        "odata.etag": 'W/"x"',
        "PartitionKey": "p",
        "RowKey": "r",
        "Timestamp": "2024-01-01T00:00:00.1234567Z",
        "Big@odata.type": "Edm.Int64",
        "Big": "1099511627776",
        "When@odata.type": "Edm.DateTime",
        "When": "2024-01-01T12:00:00.001Z",
    }
    entity = wire_json._decode_list([row])[0]
    decoder = wire_json._row_decoders[tuple(row)]
    assert decoder is not None
    assert (
        decoder(dict(row))
        == entity
        == {
            "PartitionKey": "p",
            "RowKey": "r",
            "Big": 2**40,
            "When": EdmDateTime(2024, 1, 1, 12, 0, 0, 1000),
        }
    )
    assert decoder(dict(row, Big=None)) is None  # a null: the loop's
    assert decoder(dict(row, **{"Big@odata.type": "Edm.Int32"})) is None


def test_rows_of_a_shape_share_one_read_only_types_mapping() -> None:
    """Decoded entities of one shape share their ``_types`` (one object fewer per entity);
    ``edm_types`` gives each its own mutable copy, so no caller ever sees the sharing."""
    wire_json._row_decoders.clear()
    rows = [
        {"PartitionKey": "p", "RowKey": r, "Big@odata.type": "Edm.Int64", "Big": "5"}
        for r in ("a", "b", "c")
    ]
    a, b, c = wire_json._decode_list([dict(r) for r in rows])
    assert a._types is b._types
    assert type(a._types) is SharedEdmTypes
    assert a._types == {"Big": EdmType.INT64}
    with pytest.raises(TypeError, match="read-only"):
        a._types["Big"] = EdmType.INT32
    shared: Any = a._types
    mutations: list[Callable[[], object]] = [
        lambda: shared.update(x=1),
        lambda: shared.pop("Big"),
        lambda: shared.popitem(),
        lambda: shared.setdefault("x", 1),
        lambda: shared.clear(),
        lambda: shared.__delitem__("Big"),
        lambda: shared.__ior__({"x": 1}),
    ]
    for mutate in mutations:
        with pytest.raises(TypeError, match="read-only"):
            mutate()
    assert a._types == {"Big": EdmType.INT64}
    a.edm_types["Big"] = EdmType.INT32  # a's own copy from now on
    assert type(a.edm_types) is dict
    assert a.edm_types == {"Big": EdmType.INT32}
    assert b.edm_types == {"Big": EdmType.INT64}
    assert b._types is not c._types
    assert type(b._types) is dict
    assert c._types == {"Big": EdmType.INT64}
    # copies, pickles and the encoders read the shared mapping as the dict it replaced
    d = wire_json._decode_list([dict(rows[0])])[0]
    assert type(d._types) is SharedEdmTypes
    assert type(d.copy()._types) is dict
    assert d.copy().edm_types == {"Big": EdmType.INT64}
    again = pickle.loads(pickle.dumps(d))
    assert again == d
    assert again.edm_types == {"Big": EdmType.INT64}
    assert wire_json.entity_json(d) == {
        "PartitionKey": "p",
        "RowKey": "a",
        "Big@odata.type": "Edm.Int64",
        "Big": "5",
    }


def test_decode_list_consumes_its_rows_and_keeps_their_order() -> None:
    """Each JSON row is released as soon as its entity is built (the list is emptied);
    the entities come out in the rows' order, through row decoders and the loop alike."""
    wire_json._row_decoders.clear()
    rows: list[dict[str, Any]] = [
        {"PartitionKey": "p", "RowKey": str(i), "N@odata.type": "Edm.Int64", "N": str(i)}
        for i in range(5)
    ]
    rows[2]["N"] = None  # the loop's row
    rows.insert(3, {"PartitionKey": "p", "RowKey": "odd", "A": 1})  # another shape
    expected = [r["RowKey"] for r in rows]
    entities = wire_json._decode_list(rows)
    assert rows == []
    assert [e["RowKey"] for e in entities] == expected
    assert entities[2]["N"] is None
    assert entities[4]["N"] == 3


# --- Guid reading ---------------------------------------------------------------------------

_CANONICAL_GUID = re.compile(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def _guid_reference(text: str) -> Any:
    """What decode_guid reads, by the canonical pattern and ``uuid.UUID``."""
    if _CANONICAL_GUID.fullmatch(text) is None:
        return "ValueError"
    value = uuid.UUID(text)
    return (value, value.int, value.is_safe)


def _guid_fast(text: str) -> Any:
    try:
        value = decode_guid(text)
    except ValueError:
        return "ValueError"
    return (value, value.int, value.is_safe)


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        st.uuids().map(str),
        st.uuids().map(lambda u: str(u).upper()),
        st.text("0123456789abcdefABCDEF-_+ gx{}", min_size=30, max_size=40),
        st.uuids()
        .map(str)
        .flatmap(
            lambda s: st.tuples(st.integers(0, 35), st.sampled_from("-_+ g\u0660\uff11{")).map(
                lambda p: s[: p[0]] + p[1] + s[p[0] + 1 :]
            )
        ),
        st.text(max_size=40),
    )
)
def test_decode_guid_reads_the_canonical_form_only(text: str) -> None:
    # differential: the fast reading against the canonical pattern and uuid.UUID
    assert _guid_fast(text) == _guid_reference(text)
