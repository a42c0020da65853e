"""The codec at its edges, each checked both ways: every optional EDM type written with a
value and with ``None`` (dropped, never sent as null), non-finite doubles, a plain
``datetime`` and raw bytes written in the service's forms; a stored type read only where the
declared one reads it (Int32 widens to Int64 and Double, nothing else does), with the hint
that names the fix."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from azt._core.wire import WireDecodeError
from azt._edm.entity import PARTIAL_ATTR, PartialRead
from azt._orm.codec import codec_for
from azt.edm import EdmDateTime, EdmType, TableEntity
from azt.entity import Entity, Int64, Prop, prop


class Optionals(Entity):
    """An optional property of each EDM type that has a JSON form of its own."""

    i64: Prop[Int64 | None] = prop(default=None)
    d: Prop[float | None] = prop(default=None)
    dt: Prop[datetime | None] = prop(default=None)
    g: Prop[uuid.UUID | None] = prop(default=None)
    bin: Prop[bytes | None] = prop(default=None)


class Required(Entity):
    """The same types, required."""

    i32: Prop[int] = prop(default=0)
    i64: Prop[Int64] = prop(default=0)
    d: Prop[float] = prop(default=0.0)
    dt: Prop[datetime] = prop(default=datetime(2000, 1, 1, tzinfo=UTC))
    bin: Prop[bytes] = prop(default=b"")
    s: Prop[str] = prop(default="")
    flag: Prop[bool] = prop(default=False)


GUID = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")


def test_optional_values_are_written_in_the_service_forms() -> None:
    obj = Optionals(
        "p",
        "r",
        i64=2**40,
        d=1.5,
        dt=EdmDateTime(2020, 1, 1, nanosecond=300),
        g=GUID,
        bin=b"\x00\x01",
    )
    body = codec_for(Optionals).to_json(obj)
    assert body["i64"] == "1099511627776"
    assert body["i64@odata.type"] == "Edm.Int64"
    assert body["d"] == 1.5
    assert body["dt"] == "2020-01-01T00:00:00.0000003Z"
    assert body["dt@odata.type"] == "Edm.DateTime"
    assert body["g"] == str(GUID)
    assert body["bin"] == "AAE="
    assert body["bin@odata.type"] == "Edm.Binary"
    assert codec_for(Optionals).from_json(body) == obj


def test_optional_none_values_are_left_out() -> None:
    body = codec_for(Optionals).to_json(Optionals("p", "r"))
    assert {k for k in body if not k.startswith(("PartitionKey", "RowKey"))} == set()
    entity = codec_for(Optionals).to_entity(Optionals("p", "r"))
    assert set(entity) == {"PartitionKey", "RowKey"}


@pytest.mark.parametrize(
    ("value", "wire"),
    [(math.inf, "Infinity"), (-math.inf, "-Infinity"), (math.nan, "NaN"), (0.0, 0.0), (-2.5, -2.5)],
)
def test_doubles_optional_or_not_are_written_with_non_finite_names(
    value: float, wire: object
) -> None:
    for cls in (Optionals, Required):
        body = codec_for(cls).to_json(cls("p", "r", d=value))
        assert body["d"] == wire
        if isinstance(wire, str):
            assert body["d@odata.type"] == "Edm.Double"


def test_a_plain_aware_datetime_and_bytes_are_written() -> None:
    cet = timezone(timedelta(hours=1))
    obj = Required("p", "r", dt=datetime(2020, 1, 1, 1, 0, 0, 5, tzinfo=cet), bin=b"\xff")
    body = codec_for(Required).to_json(obj)
    assert body["dt"] == "2020-01-01T00:00:00.0000050Z"
    assert body["bin"] == "/w=="
    opt = codec_for(Optionals).to_json(Optionals("p", "r", dt=datetime(2020, 1, 1, tzinfo=cet)))
    assert opt["dt"] == "2019-12-31T23:00:00.0000000Z"


def _stored(name: str, value: object, edm: EdmType) -> TableEntity:
    entity = TableEntity(PartitionKey="p", RowKey="r", **{name: value})
    entity.edm_types = {name: edm}
    return entity


@pytest.mark.parametrize(("name", "expected"), [("i64", 7), ("d", 7.0), ("i32", 7)])
def test_a_stored_int32_widens_to_int64_and_double(name: str, expected: object) -> None:
    obj = Required.from_entity(_stored(name, 7, EdmType.INT32))
    assert getattr(obj, name) == expected
    row = {"PartitionKey": "p", "RowKey": "r", name: 7, f"{name}@odata.type": "Edm.Int32"}
    assert getattr(codec_for(Required).from_json(row), name) == expected


@pytest.mark.parametrize("name", ["s", "flag", "bin", "dt"])
def test_a_stored_int32_is_refused_where_nothing_widens_it(name: str) -> None:
    with pytest.raises(WireDecodeError, match=rf"property '{name}' is stored as Edm.Int32"):
        Required.from_entity(_stored(name, 7, EdmType.INT32))
    row = {"PartitionKey": "p", "RowKey": "r", name: 7, f"{name}@odata.type": "Edm.Int32"}
    with pytest.raises(WireDecodeError, match=rf"property '{name}' is stored as Edm.Int32"):
        codec_for(Required).from_json(row)


def test_an_int64_stored_for_an_int32_property_names_the_fix() -> None:
    with pytest.raises(WireDecodeError, match=r"\(declare it Prop\[Int64\]\)") as caught:
        Required.from_entity(_stored("i32", 2**40, EdmType.INT64))
    assert "row PartitionKey='p' RowKey='r'" in str(caught.value)
    # the hint is for that case only
    with pytest.raises(WireDecodeError) as caught:
        Required.from_entity(_stored("i64", 1.5, EdmType.DOUBLE))
    assert "declare it" not in str(caught.value)
    with pytest.raises(WireDecodeError) as caught:
        Required.from_entity(_stored("i32", "x", EdmType.STRING))
    assert "declare it" not in str(caught.value)


def _partial(obj: object) -> PartialRead | None:
    return getattr(obj, PARTIAL_ATTR, None)


def test_a_row_with_an_undeclared_property_is_marked_partial() -> None:
    codec = codec_for(Required)
    row = {
        "PartitionKey": "p",
        "RowKey": "r",
        "i32": 1,
        "Extra": "x",
        "Extra@odata.type": "Edm.String",
    }
    for obj in (codec.from_json(row), codec.decode_rows([row])[0]):
        assert _partial(obj) == PartialRead(missing=("Extra",))
    # annotations and metadata alone are not stored properties
    bare = {
        "PartitionKey": "p",
        "RowKey": "r",
        "odata.etag": 'W/"1"',
        "Other@odata.type": "Edm.String",
    }
    for obj in (codec.from_json(bare), codec.decode_rows([bare])[0]):
        assert _partial(obj) is None


def test_a_projection_marks_every_object_with_what_it_did_not_select() -> None:
    codec = codec_for(Required, frozenset({"i32"}))
    assert (codec.cls, codec.select) == (Required, frozenset({"i32"}))
    assert codec_for(Required).select is None
    row = {"PartitionKey": "p", "RowKey": "r", "i32": 1}
    expected = PartialRead(missing=("i64", "d", "dt", "bin", "s", "flag"), projection=True)
    for obj in (codec.from_json(row), codec.decode_rows([row])[0]):
        assert _partial(obj) == expected
    wider = {**row, "Extra": "x"}
    assert _partial(codec.from_json(wider)) == PartialRead(
        missing=("i64", "d", "dt", "bin", "s", "flag", "Extra"), projection=True
    )


class _NoDefaults(Entity):
    """Required properties without defaults, of types checked exactly."""

    n: Prop[int]
    d: Prop[float]
    flag: Prop[bool]


def test_required_properties_without_defaults_are_read_and_checked() -> None:
    codec = codec_for(_NoDefaults)
    row = {"PartitionKey": "p", "RowKey": "r", "n": 5, "d": 1.5, "flag": True}
    for obj in (codec.from_json(row), codec.decode_rows([row])[0], _NoDefaults.from_entity(row)):
        assert (obj.n, obj.d, obj.flag) == (5, 1.5, True)
    with pytest.raises(WireDecodeError, match="'n'"):
        codec.from_json({**row, "n": "five"})


def test_a_projection_reads_its_required_properties_and_leaves_the_others_unset() -> None:
    codec = codec_for(_NoDefaults, frozenset({"n", "flag"}))
    obj = codec.from_json({"PartitionKey": "p", "RowKey": "r", "n": 5, "flag": False})
    assert (obj.n, obj.flag) == (5, False)
    with pytest.raises(AttributeError):
        _ = obj.d
    with pytest.raises(WireDecodeError, match="'n'"):
        codec.from_json({"PartitionKey": "p", "RowKey": "r", "n": "five"})
    absent = codec.from_json({"PartitionKey": "p", "RowKey": "r", "flag": True})
    with pytest.raises(AttributeError):
        _ = absent.n
