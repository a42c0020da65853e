"""Old vs new decoders on random input: the query path's generated page decoder
(``EntityCodec.decode_rows``) against the general row-by-row path it replaced
(``EntityCodec._decode_general``), and the JSON body reader (msgspec, ``json.loads`` for what
it refuses) against ``json.loads``. Rows hold every EDM type with edge values, in the forms
the service writes and in forms it does not (wrong types, nulls, absent members, wrong
annotations, undeclared members, trimmed and malformed DateTimes): both sides must give the
same objects (same value types, 100 ns digits, partial-read records) or the same error."""

from __future__ import annotations

import base64
import json
import math
import uuid
from datetime import datetime
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from azt._core.wire import json as wire_json
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import PARTIAL_ATTR
from azt._orm.codec import codec_for
from azt.entity import Entity

from .models import AllTypes, Movie, Required

_MISSING = object()


def _slots(obj: Any) -> dict[str, Any]:
    """Every slot's raw content (Timestamp unparsed), with the value's exact type."""
    out: dict[str, Any] = {}
    names = [a.name for a in attrs.fields(type(obj))] + [PARTIAL_ATTR]
    for name in names:
        for klass in type.__getattribute__(type(obj), "__mro__"):
            d = type.__getattribute__(klass, "__dict__")
            if name in d:
                slot = d[name]
                slot = getattr(slot, "slot", slot)  # LazyTimestamp: the raw text
                try:
                    v = slot.__get__(obj, type(obj))
                except AttributeError:
                    v = _MISSING
                break
        else:  # pragma: no cover - every attribute is a slot
            raise AssertionError(name)
        extra = v.nanosecond if isinstance(v, EdmDateTime) else None
        if isinstance(v, float) and math.isnan(v):
            v = "<nan>"
        out[name] = (type(v), v, extra)
    return out


def _outcome(fn: Any, rows: list[Any]) -> Any:
    try:
        objs = fn(rows)
    except Exception as exc:
        return ("error", type(exc), str(exc))
    return ("ok", [(type(o), _slots(o)) for o in objs])


# --- random rows ----------------------------------------------------------------------------

_ints32 = st.integers(-(2**31), 2**31 - 1)
_ints64 = st.integers(-(2**63), 2**63 - 1)
_floats = st.floats(allow_nan=True, allow_infinity=True)


@st.composite
def _datetimes(draw: st.DrawFn) -> str:
    dt = draw(
        st.datetimes(
            min_value=datetime(1, 1, 1),
            max_value=datetime(9999, 12, 31, 23, 59, 59, 999999),
        )
    )
    digits = f"{dt.microsecond:06d}{draw(st.integers(0, 9))}"
    keep = draw(st.sampled_from([7, 7, 0, 1, 2, 3, 4, 5, 6]))
    frac = "." + digits[:keep] if keep else ""
    text = dt.strftime("%Y-%m-%dT%H:%M:%S").rjust(19, "0") + frac + "Z"
    # and some the service does not write: offsets, no zone, a bad field, a bare dot
    return draw(
        st.sampled_from(
            [
                text,
                text,
                text[:-1],
                text[:-1] + "+01:00",
                text.replace("T", "t"),
                text[:19] + ".Z",
                text[:5] + "13" + text[7:],
                text[:17] + "61" + text[19:],
                text[:-2] + "x" + text[-1:],
            ]
        )
    )


_guids = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.uuids().map(lambda u: "{" + str(u) + "}"),
    st.uuids().map(lambda u: u.hex),
)
_binaries = st.one_of(
    st.binary(max_size=40).map(lambda b: base64.b64encode(b).decode()),
    st.sampled_from(["AA E=", "A", "====", "Zm9v\n"]),
)
_texts = st.text(max_size=12)

#: per EDM type: (value strategy in the service's form, annotation it writes or None)
_FORMS: dict[str, tuple[st.SearchStrategy[Any], str | None]] = {
    "Edm.String": (_texts, None),
    "Edm.Int32": (_ints32, None),
    "Edm.Int64": (_ints64.map(str), "Edm.Int64"),
    "Edm.Double": (_floats.map(lambda f: f if math.isfinite(f) else str(f)), None),
    "Edm.Boolean": (st.booleans(), None),
    "Edm.DateTime": (_datetimes(), "Edm.DateTime"),
    "Edm.Guid": (_guids, "Edm.Guid"),
    "Edm.Binary": (_binaries, "Edm.Binary"),
}
_ANY_VALUE = st.one_of(
    _texts,
    _ints32,
    _ints64,
    st.integers(),
    _floats,
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)
_ANNOTATIONS = st.sampled_from([None, *_FORMS, "Edm.Foo"])


@st.composite
def _row(draw: st.DrawFn, cls: type[Entity], projected: frozenset[str] | None) -> Any:
    info = cls.__azt_info__  # type: ignore[attr-defined]
    row: dict[str, Any] = {}
    if draw(st.booleans()):
        row["odata.etag"] = draw(st.sampled_from(["W/\"datetime'x'\"", "e", None]))
    for key in ("PartitionKey", "RowKey"):
        if draw(st.integers(0, 20)):
            row[key] = draw(st.one_of(_texts, st.just(""))) if draw(st.integers(0, 20)) else 5
    if draw(st.booleans()):
        row["Timestamp"] = draw(_datetimes())
    for p in info.data_props:
        if p.is_key:
            continue
        if projected is not None and p.wire not in projected and draw(st.booleans()):
            continue
        shape = draw(st.integers(0, 12))
        if shape == 0:
            continue  # absent
        edm = p.edm.value if p.converter is None else p.converter.edm.value
        if p.converter is not None and p.attr == "genre":
            values: st.SearchStrategy[Any] = st.sampled_from(["Action", "Comedy", "Drama"])
        elif p.converter is not None and p.attr == "price":
            values = st.sampled_from(["1.5", "0", "x"])
        else:
            values = _FORMS[edm][0]
        ann = _FORMS[edm][1]
        if shape <= 8:  # the service's form, annotated as it would be (or not: nometadata)
            row[p.wire] = draw(values)
            if ann is not None and draw(st.integers(0, 4)):
                row[p.wire + "@odata.type"] = ann
        elif shape <= 10:  # a value of another type, maybe annotated as another type
            other = draw(st.sampled_from(sorted(_FORMS)))
            row[p.wire] = draw(_FORMS[other][0])
            a = draw(_ANNOTATIONS)
            if a is not None:
                row[p.wire + "@odata.type"] = a
        else:
            row[p.wire] = draw(_ANY_VALUE)
    for _ in range(draw(st.integers(0, 2)) if not draw(st.integers(0, 3)) else 0):
        name = draw(st.sampled_from(["Extra", "odata.id", "X@odata.type", "Other"]))
        row[name] = draw(_ANY_VALUE)
    return row


_CASES: st.SearchStrategy[tuple[type[Entity], frozenset[str] | None]] = st.sampled_from(
    [
        (AllTypes, None),
        (AllTypes, frozenset({"s", "dt", "i64"})),
        (Movie, None),
        (Movie, frozenset({"Rating"})),
        (Required, None),
    ]
)


@st.composite
def _page(draw: st.DrawFn) -> tuple[type[Entity], frozenset[str] | None, list[Any]]:
    cls, select = draw(_CASES)
    rows = draw(st.lists(_row(cls, select), min_size=1, max_size=4))
    if not draw(st.integers(0, 30)):
        rows.append(draw(st.sampled_from([None, [], "row", 5])))
    return cls, select, rows


@given(_page())
def test_page_decoder_matches_the_general_path(
    case: tuple[type[Entity], frozenset[str] | None, list[Any]],
) -> None:
    cls, select, rows = case
    codec = codec_for(cls, select)
    assert _outcome(codec.decode_rows, rows) == _outcome(codec._decode_general, rows)


@given(st.lists(_row(AllTypes, None), min_size=1, max_size=3))
def test_service_form_rows_round_trip_alike(rows: list[Any]) -> None:
    """Rows of AllTypes, any form: the same through a JSON body as from the dicts."""
    codec = codec_for(AllTypes)
    body = json.dumps({"value": rows}).encode()
    assert _outcome(codec.decode_rows, wire_json.decode_rows(body)) == _outcome(
        codec._decode_general, json.loads(body)["value"]
    )


def test_plain_rows_take_the_generated_decoder() -> None:
    """The differential tests would pass vacuously if every page fell back: a page in the
    service's form must be decoded by the generated function alone."""
    codec = codec_for(AllTypes)
    row = {
        "odata.etag": 'W/"x"',
        "PartitionKey": "p",
        "RowKey": "r",
        "Timestamp": "2024-01-01T00:00:00.1234567Z",
        "s": "text",
        "i32": 5,
        "i64@odata.type": "Edm.Int64",
        "i64": "12345678901",
        "d": 1.5,
        "b": True,
        "dt@odata.type": "Edm.DateTime",
        "dt": "2020-09-15T23:02:10.4363943Z",
        "g@odata.type": "Edm.Guid",
        "g": str(uuid.UUID(int=7)),
        "bin@odata.type": "Edm.Binary",
        "bin": "AAEC",
        "genre": "Comedy",
        "level": 2,
        "price": "1.25",
    }
    objs = codec._decode_page([row])
    assert _slots(objs[0]) == _slots(codec._decode_general([row])[0])
    assert isinstance(objs[0].dt, EdmDateTime)
    assert objs[0].dt.nanosecond == 300
    assert objs[0].i64 == 12345678901


# --- the JSON body reader -------------------------------------------------------------------

_json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (1 == 1.0 == True would hide a change)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return bool(a == b)


@given(_json_values, st.booleans())
def test_json_reader_matches_json_loads(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    for body in (text, text.encode("utf-8", "surrogatepass")):
        try:
            expected: Any = json.loads(body)
        except ValueError as exc:
            with pytest.raises(type(exc)):
                wire_json._loads(body)
            continue
        assert _same(wire_json._loads(body), expected)


def test_json_reader_edge_texts() -> None:
    """What the fast decoder refuses or reads differently still reads as json.loads does."""
    bodies: list[bytes | str] = [
        b'{"a":NaN,"b":Infinity,"c":-Infinity}',
        b'{"a":1e400}',
        b'{"a":123456789012345678901234567890,"b":-9223372036854775809}',
        b'{"a":"\\ud800"}',
        b'{"a":"\xed\xa0\x80"}',
        b'\xef\xbb\xbf{"a":1}',
        b'{"a":1,"a":2}',
        b'{"a":-0,"b":-0.0,"c":5e-324,"d":1.7976931348623157e308}',
        '{"a":"\ud800"}',
    ]
    for body in bodies:
        assert _same(wire_json._loads(body), json.loads(body)), body


def test_pages_of_several_shapes_take_the_generated_decoder() -> None:
    """Rows switching between shapes (an annotation left out, an undeclared member, the
    members in another order, a projection) are decoded by the per-shape functions alone,
    each shape's function taking up where the other left, with the partial-read records
    the general path gives."""
    base = {
        "odata.etag": 'W/"x"',
        "PartitionKey": "p",
        "RowKey": "r",
        "Timestamp": "2024-01-01T00:00:00.1234567Z",
        "s": "text",
        "i64@odata.type": "Edm.Int64",
        "i64": "12345678901",
        "dt@odata.type": "Edm.DateTime",
        "dt": "2020-09-15T23:02:10.43Z",
    }
    bare: dict[str, Any] = {k: v for k, v in base.items() if k != "i64@odata.type"}
    bare["i64"] = 5
    extra = {**base, "Undeclared": 1}
    reordered = dict(reversed(list(base.items())))
    rows = [base, base, bare, extra, extra, reordered, base, bare]
    for select in (None, frozenset({"s", "i64"})):
        codec = codec_for(AllTypes, select)
        fast = codec._decode_page(rows)
        general = codec._decode_general(rows)
        assert [_slots(o) for o in fast] == [_slots(o) for o in general]
        assert [_slots(o) for o in codec.decode_rows(rows)] == [_slots(o) for o in general]
    objs = codec_for(AllTypes)._decode_page(rows)
    assert getattr(objs[3], PARTIAL_ATTR).missing == ("Undeclared",)
    assert getattr(objs[0], PARTIAL_ATTR, None) is None
    assert objs[2].i64 == 5
    assert objs[0].dt is not None
    assert objs[0].dt.microsecond == 430000


def test_the_shapes_kept_are_bounded() -> None:
    codec = codec_for(Movie)
    rows = [{"PartitionKey": "p", "RowKey": str(i), f"x{i}": i} for i in range(200)]
    assert [_slots(o) for o in codec._decode_page(rows)] == [
        _slots(o) for o in codec._decode_general(rows)
    ]
