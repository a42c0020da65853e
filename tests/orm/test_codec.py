"""Compiled codecs: every EDM type both ways, checked against the wire layer's own codec."""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from azt._core.wire.json import decode_entry, encode_entity
from azt._orm.codec import MissingPropertyError, codec_for, converter, make_converter, wire_type
from azt.edm import EdmDateTime, EdmType, TableEntity
from azt.entity import Entity, Int64, Prop, entity_info, prop

from .models import AllTypes, Genre, Level, Movie, Required

SAMPLES: list[dict[str, Any]] = [
    {},
    {
        "s": "O'Brien \u00e9\U0001f600",
        "i32": -(2**31),
        "i64": 2**63 - 1,
        "d": 1e300,
        "b": True,
        "dt": EdmDateTime.parse("2020-09-15T23:02:10.4363943Z"),
        "g": uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
        "bin": bytes(range(256)),
        "genre": Genre.COMEDY,
        "level": Level.HIGH,
        "price": Decimal("-0.10"),
        "opt": "",
    },
    {"i64": -(2**63), "d": -0.0, "dt": datetime(1601, 1, 1, tzinfo=UTC), "bin": b""},
    {
        "d": 2.0,
        "i32": 2**31 - 1,
        "dt": EdmDateTime(9999, 12, 31, 23, 59, 59, 999999, nanosecond=900),
    },
    {"d": float("inf")},
    {"d": float("-inf")},
]


def _same(a: AllTypes, b: AllTypes) -> None:
    for p in entity_info(AllTypes).data_props:
        x, y = getattr(a, p.attr), getattr(b, p.attr)
        if isinstance(x, float) and math.isnan(x):
            assert isinstance(y, float)
            assert math.isnan(y)
        else:
            assert x == y, p.attr
            assert type(x) is type(y), p.attr
    if a.dt is not None:
        assert isinstance(b.dt, EdmDateTime)
        assert b.dt.to_wire() == EdmDateTime.from_datetime(a.dt).to_wire()


@pytest.mark.parametrize("values", [*SAMPLES, {"d": float("nan")}])
def test_json_roundtrip_through_the_wire_decoder(values: dict[str, Any]) -> None:
    obj = AllTypes("pk", "rk", **values)
    codec = codec_for(AllTypes)
    body = json.dumps(codec.to_json(obj)).encode()
    # the wire layer (independent code) reads what the ORM wrote
    decoded = decode_entry(body)
    back = codec.from_entity(decoded)
    _same(obj, back)
    # and the ORM reads raw JSON as the service sends it
    _same(obj, codec.from_json(json.loads(body)))


@pytest.mark.parametrize("values", SAMPLES)
def test_entity_roundtrip_through_the_wire_encoder(values: dict[str, Any]) -> None:
    obj = AllTypes("pk", "rk", **values)
    codec = codec_for(AllTypes)
    ent = codec.to_entity(obj)
    assert isinstance(ent, TableEntity)
    assert "Timestamp" not in ent
    assert "ETag" not in ent
    if "i64" in ent:
        assert ent.edm_types["i64"] is EdmType.INT64
    raw = json.loads(encode_entity(ent))
    assert raw.get("i64@odata.type") == "Edm.Int64"
    _same(obj, codec.from_json(raw))


def test_none_is_not_sent() -> None:
    obj = AllTypes("pk", "rk")
    ent = obj.to_entity()
    for name in ("dt", "g", "bin", "price", "opt"):
        assert name not in ent
    assert "opt" not in codec_for(AllTypes).to_json(obj)


def test_wire_names_and_system_properties_from_json() -> None:
    row = {
        "odata.etag": "W/\"datetime'2020-01-01T00%3A00%3A00.0000000Z'\"",
        "PartitionKey": "Action",
        "RowKey": "Alien",
        "Timestamp": "2020-01-01T00:00:00.1234567Z",
        "ReleaseYear": 1979,
        "Rating": 5,  # stored as Int32: read as a float for a Double property
        "Unknown": "ignored",
    }
    m = codec_for(Movie).from_json(row)
    assert m.release_year == 1979
    assert m.rating == 5.0
    assert type(m.rating) is float
    assert m.ETag == row["odata.etag"]
    assert isinstance(m.Timestamp, EdmDateTime)
    assert m.Timestamp.nanosecond == 700
    assert m.language is None
    assert m.favorite is False


def test_from_table_entity_keeps_metadata() -> None:
    body = (
        b'{"odata.etag":"W/\\"x\\"","PartitionKey":"a","RowKey":"b",'
        b'"Timestamp":"2021-01-01T00:00:00Z","Rating":4.5}'
    )
    ent = decode_entry(body)
    m = Movie.from_entity(ent)
    assert m.ETag == 'W/"x"'
    assert m.Timestamp == datetime(2021, 1, 1, tzinfo=UTC)


def test_nometadata_values_are_converted_by_declared_type() -> None:
    ent = TableEntity(
        PartitionKey="p",
        RowKey="r",
        i64="12345678901",
        dt="2020-01-01T00:00:00Z",
        g="c9da6455-213d-42c9-9a79-3e9149a57833",
        bin="AAE=",
        d="NaN",
    )
    obj = AllTypes.from_entity(ent)
    assert obj.i64 == 12345678901
    assert obj.bin == b"\x00\x01"
    assert obj.g == uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
    assert obj.dt == datetime(2020, 1, 1, tzinfo=UTC)
    assert math.isnan(obj.d)


def test_missing_required_property_is_an_error() -> None:
    with pytest.raises(MissingPropertyError, match="'title'"):
        codec_for(Required).from_json({"PartitionKey": "p", "RowKey": "r"})
    with pytest.raises(MissingPropertyError, match="'RowKey'"):
        codec_for(Required).from_json({"PartitionKey": "p", "title": "x"})


def test_projection_leaves_unselected_properties_unset() -> None:
    codec = codec_for(Movie, frozenset({"PartitionKey", "RowKey", "Timestamp", "Rating"}))
    m = codec.from_json({"PartitionKey": "a", "RowKey": "b", "Rating": 2.5})
    assert m.rating == 2.5
    with pytest.raises(AttributeError):
        _ = m.release_year
    # an unset property is not written back
    assert "ReleaseYear" not in codec.to_entity(m)
    assert "Rating" in codec.to_entity(m)
    # repr and == work on projected objects: unset properties show as not selected, and
    # two projections are equal when they have the same properties with the same values
    assert repr(m) == (
        "Movie(PartitionKey='a', RowKey='b', Timestamp=None, ETag=None, "
        "release_year=<not selected>, rating=2.5, language=<not selected>, "
        "favorite=<not selected>)"
    )
    twin = codec.from_json({"PartitionKey": "a", "RowKey": "b", "Rating": 2.5})
    assert m == twin
    assert (m != twin) is False
    assert m != codec.from_json({"PartitionKey": "a", "RowKey": "b", "Rating": 3.0})
    full = Movie("a", "b", rating=2.5)
    assert m != full
    assert full != m


def test_codecs_are_cached_per_class_and_projection() -> None:
    assert codec_for(Movie) is codec_for(Movie)
    assert codec_for(Movie, frozenset({"Rating"})) is not codec_for(Movie)


def test_one_configured_converter_with_hooks_per_edm_type() -> None:
    conv = make_converter()
    assert conv is not converter
    assert conv.detailed_validation is False
    for form in ("json", "value"):
        for edm in (EdmType.INT64, EdmType.DOUBLE, EdmType.DATETIME, EdmType.GUID, EdmType.BINARY):
            t = wire_type(edm, form)
            assert conv.get_structure_hook(t).__module__ == "azt._orm.codec_hooks", (edm, form)
    t64 = wire_type(EdmType.INT64, "json")
    assert conv.get_structure_hook(t64)("-9223372036854775808", t64) == -(2**63)
    assert conv.get_unstructure_hook(t64)(2**63 - 1) == "9223372036854775807"
    tdt = wire_type(EdmType.DATETIME, "json")
    dt = EdmDateTime.parse("2020-09-15T23:02:10.4363943Z")
    assert conv.get_unstructure_hook(tdt)(dt) == "2020-09-15T23:02:10.4363943Z"
    tv = wire_type(EdmType.INT64, "value")
    assert conv.get_structure_hook(tv)(5, tv) == 5
    assert conv.get_structure_hook(tv)("5", tv) == 5


def test_functions_are_generated_by_cattrs_with_wire_names() -> None:
    codec = codec_for(Movie)
    fast = codec._from_json_fast
    assert fast.__name__ == "structure_json_Movie"
    overrides: dict[str, Any] = fast.overrides  # type: ignore[attr-defined]
    assert overrides["release_year"].rename == "ReleaseYear"
    assert overrides["ETag"].rename == "odata.etag"


def test_full_metadata_extras_are_ignored() -> None:
    row = {
        "odata.type": "acct.Movies",
        "odata.id": "https://acct.table.core.windows.net/Movies(PartitionKey='a',RowKey='b')",
        "odata.etag": 'W/"x"',
        "odata.editLink": "Movies(PartitionKey='a',RowKey='b')",
        "PartitionKey": "a",
        "RowKey": "b",
        "Timestamp@odata.type": "Edm.DateTime",
        "Timestamp": "2021-01-01T00:00:00Z",
        "Rating@odata.type": "Edm.Double",
        "Rating": 4.5,
    }
    m = codec_for(Movie).from_json(row)
    assert (m.rating, m.ETag, m.Timestamp) == (4.5, 'W/"x"', datetime(2021, 1, 1, tzinfo=UTC))


def test_projection_objects_encode_what_they_have() -> None:
    codec = codec_for(AllTypes, frozenset({"PartitionKey", "RowKey", "Timestamp", "i64", "dt"}))
    obj = codec.from_json(
        {"PartitionKey": "p", "RowKey": "r", "i64": "7", "dt": "2020-01-01T00:00:00Z"}
    )
    body = codec.to_json(obj)
    assert body == {
        "PartitionKey": "p",
        "RowKey": "r",
        "i64": "7",
        "i64@odata.type": "Edm.Int64",
        "dt": "2020-01-01T00:00:00.0000000Z",
        "dt@odata.type": "Edm.DateTime",
    }
    assert codec.to_entity(obj).edm_types == {"i64": EdmType.INT64}


def test_read_path_builds_objects_without_the_validating_init() -> None:
    # the service only stores valid values; reads trust them once converted (the Int32
    # range is checked on construction and assignment, not on every row read)
    big = codec_for(AllTypes).from_json({"PartitionKey": "p", "RowKey": "r", "i32": 2**40})
    assert big.i32 == 2**40
    with pytest.raises(ValueError, match="Int32 range"):
        AllTypes("p", "r", i32=2**40)
    with pytest.raises(ValueError, match="Int32 range"):
        big.i32 = 2**40


class Clashing(Entity):
    """Property names that are also names inside generated code."""

    o: Prop[str] = prop(default="")
    cls: Prop[int] = prop(default=0)
    M: Prop[str | None] = prop(default=None)
    S0: Prop[float] = prop(default=0.0)
    D4: Prop[str] = prop(default="")
    res: Prop[str] = prop(default="")
    instance: Prop[Int64] = prop(default=0)
    errors: Prop[bool] = prop(default=False)


def test_property_names_that_generated_code_also_uses() -> None:
    obj = Clashing("p", "r", o="a", cls=1, M="m", S0=1.5, D4="d", res="x", instance=7, errors=True)
    codec = codec_for(Clashing)
    body = json.loads(json.dumps(codec.to_json(obj)))
    assert codec.from_json(body) == obj
    assert codec.from_entity(codec.to_entity(obj)) == obj
    assert codec.decode_rows([body]) == [obj]
    assert codec.from_json({"PartitionKey": "p", "RowKey": "r"}) == Clashing("p", "r")
