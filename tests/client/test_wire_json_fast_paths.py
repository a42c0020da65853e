"""The JSON entity encoder's fast paths against the code they replaced (differential tests
on random entities): msgspec instead of the stdlib encoder for plain objects, and the
aware-UTC ``datetime`` written without ``coerce_value``."""

from __future__ import annotations

import enum
import math
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from azt._core.wire import json as wire_json
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    EdmType,
    Typed,
    coerce_value,
)
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
