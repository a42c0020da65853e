"""The query path's page decoder against the general path where it takes its own ways:
DateTime texts decoded inline (``page_decoder.DATETIME_INLINE``, ``EdmDateTime.parse``'s
fast path written out) for every length the service sends, and objects filled through a
layout twin of their class (``page_decoder.layout_twin``). Both sides must give the same
value (type, fields, hundreds of nanoseconds, zone) or the same error, and the service's
forms must take the inline path (else these tests would pass with it switched off)."""

from __future__ import annotations

import base64
import json
import uuid
import weakref
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from azt._core.wire import json as wire_json
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import PARTIAL_ATTR
from azt._orm import codec as codec_module
from azt._orm import page_decoder as page_decoder_module
from azt._orm.codec import codec_for
from azt._orm.codec_hooks import layout_twin
from azt._orm.page_decoder import DATETIME_INLINE, INLINE_NAMES
from azt.entity import Entity, EntityBase, Int64, Prop, prop

_MISSING = object()


def _inline(fallback: Any = None) -> Any:
    """DATETIME_INLINE alone as a function of ``v``; ``fallback`` replaces
    ``EdmDateTime.parse`` where the statements hand a text on to it."""
    ns = dict(INLINE_NAMES)
    if fallback is not None:
        ns["_dt"] = fallback
    src = "def conv(v):\n" + "".join(f"    {line}\n" for line in DATETIME_INLINE) + "    return v\n"
    exec(compile(src, "<test datetime inline>", "exec"), ns)
    return ns["conv"]


_CONV = _inline()


def _outcome(fn: Any, text: Any) -> Any:
    try:
        v = fn(text)
    except Exception as exc:
        return ("error", type(exc), str(exc))
    assert type(v) is EdmDateTime
    return ("ok", v.to_wire(), v.nanosecond, v.tzinfo, v.utcoffset(), v.fold, v.ticks)


def _service_text(dt: datetime, hns: int, keep: int, trim: bool) -> str:
    """``dt`` as the service writes it: seven digits (Cosmos DB), or ``keep`` of them
    (``trim``: trailing zeros trimmed, as Azure does; no fraction when it is zero)."""
    digits = f"{dt.microsecond:06d}{hns}"
    frac = digits.rstrip("0") if trim else digits[:keep]
    head = (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    )
    return head + ("." + frac if frac else "") + "Z"


_DATES = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)
)


@st.composite
def _texts(draw: st.DrawFn) -> str:
    dt = draw(_DATES)
    # fractions of every length: the microseconds often with trailing zeros
    dt = dt.replace(microsecond=dt.microsecond // (k := 10 ** draw(st.integers(0, 6))) * k)
    text = _service_text(dt, draw(st.integers(0, 9)), draw(st.integers(0, 7)), draw(st.booleans()))
    i = draw(st.integers(0, len(text) - 1))
    return draw(
        st.sampled_from(
            [
                text,
                text,
                text,
                text[:-1],  # no zone
                text[:-1] + "+00:00",
                text[:-1] + "-01:30",
                text[:-1] + "z",
                text.replace("T", "t"),
                text.replace("T", " "),
                text.replace(".", ","),
                text[:-1] + "1Z" if "." in text else text[:-1] + ".12345678Z",  # 8 digits
                text[:i] + draw(st.sampled_from("x:-.T ZAa/\u0663\uff12+")) + text[i + 1 :],
                text[:i] + text[i + 1 :],
                text[:i] + draw(st.sampled_from("0123456789")) + text[i:],
            ]
        )
    )


@given(_texts())
def test_inline_datetime_matches_parse(text: str) -> None:
    assert _outcome(_CONV, text) == _outcome(EdmDateTime.parse, text)


EDGES = [
    "2024-02-29T00:00:00Z",  # leap day
    "2024-02-29T23:59:59.9999999Z",
    "2023-02-29T00:00:00Z",  # no leap day that year
    "2000-02-29T12:00:00.5Z",
    "1900-02-29T12:00:00.5Z",
    "1601-01-01T00:00:00Z",  # the service's earliest
    "1600-12-31T23:59:59.9999999Z",
    "0001-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59.9999999Z",  # the latest
    "9999-12-31T23:59:59Z",
    "2026-11-29T16:25:32Z",
    "2026-11-29T16:25:32.1Z",
    "2026-11-29T16:25:32.12Z",
    "2026-11-29T16:25:32.123Z",
    "2026-11-29T16:25:32.1234Z",
    "2026-11-29T16:25:32.12345Z",
    "2026-11-29T16:25:32.123456Z",
    "2026-11-29T16:25:32.1234567Z",
    "2026-11-29T16:25:32.0000001Z",
    "2026-11-29T16:25:32.0000000Z",
    "2026-11-29T16:25:32.12345678Z",  # eight digits
    "2026-11-29T16:25:32.Z",
    "2026-11-29T16:25:32.1234567",  # 'Z' missing
    "2026-11-29T16:25:32",
    "2026-11-29T16:25:32.123+00:00",
    "2026-11-29T16:25:32.123+01:00",
    "2026-11-29T16:25:32,123Z",
    "2026-11-29t16:25:32.123Z",
    "2026-11-29 16:25:32.123Z",
    "2026-11-29T16:25:32.12a4Z",
    "2026-11-29T16:25:32.1\u06634Z",  # an Arabic-Indic digit
    "2026-11-29T16:25:3\uff12.1234Z",  # a full-width digit
    "2026-11-29T24:00:00Z",
    "2026-11-29T23:60:00Z",
    "2026-11-29T23:59:60Z",
    "2026-13-29T16:25:32Z",
    "2026-00-10T16:25:32.5Z",
    "2026-11-00T16:25:32.5Z",
    "2026-11-31T16:25:32.5Z",
    "+026-11-29T16:25:32.5Z",
    "2026-W48-7T16:25:32Z",
    "20261129T162532.1234567Z",
    "2026-11-29T16:25:32.1234567ZZ",
    "2026-11-29",
    "",
    "Z",
]


@pytest.mark.parametrize("text", EDGES)
def test_inline_datetime_edges(text: str) -> None:
    assert _outcome(_CONV, text) == _outcome(EdmDateTime.parse, text)


@pytest.mark.parametrize("value", [None, 5, 1.5, b"2026-11-29T16:25:32Z", ["x"]])
def test_inline_datetime_non_strings(value: Any) -> None:
    assert _outcome(_CONV, value) == _outcome(EdmDateTime.parse, value)


def _no_fallback(text: Any) -> Any:
    raise AssertionError(f"the service's form {text!r} left the inline path")


@given(_DATES, st.integers(0, 9), st.integers(0, 7), st.booleans())
def test_service_forms_stay_inline(dt: datetime, hns: int, keep: int, trim: bool) -> None:
    """Every length the service sends is decoded without EdmDateTime.parse, to the value
    parse gives."""
    text = _service_text(dt, hns, keep, trim)
    assert _outcome(_inline(_no_fallback), text) == _outcome(EdmDateTime.parse, text)


def test_every_length_stays_inline() -> None:
    conv = _inline(_no_fallback)
    base = datetime(2024, 2, 29, 23, 59, 58, 123456)
    for keep in range(8):
        text = _service_text(base, 7, keep, False)
        assert len(text) == (20 if keep == 0 else 21 + keep)
        v = conv(text)
        assert (v.to_wire(), v.nanosecond) == (EdmDateTime.parse(text).to_wire(), 700 * (keep == 7))
        assert v.tzinfo is UTC


# --- through the page decoder -----------------------------------------------------------------


class Every(Entity):
    """A property of every EDM type, optional and not."""

    s: Prop[str] = prop(name="S", default="")
    i32: Prop[int] = prop(name="I32", default=0)
    i64: Prop[Int64] = prop(name="I64", default=0)
    d: Prop[float] = prop(name="D", default=0.0)
    b: Prop[bool] = prop(name="B", default=False)
    dt: Prop[datetime | None] = prop(name="When", default=None)
    dt2: Prop[datetime] = prop(name="When2", default=datetime(2000, 1, 1, tzinfo=UTC))
    g: Prop[uuid.UUID | None] = prop(name="G", default=None)
    bin: Prop[bytes | None] = prop(name="Bin", default=None)
    gone: Prop[str | None] = prop(name="Gone", default=None)


def _slots(obj: Any) -> dict[str, Any]:
    """Every slot's raw content (Timestamp unparsed) with the value's exact type."""
    out: dict[str, Any] = {"__class__": type(obj)}
    for name in [a.name for a in attrs.fields(type(obj))] + [PARTIAL_ATTR]:
        for klass in type.__getattribute__(type(obj), "__mro__"):
            d = type.__getattribute__(klass, "__dict__")
            if name in d:
                slot = getattr(d[name], "slot", d[name])
                try:
                    v = slot.__get__(obj, type(obj))
                except AttributeError:
                    v = _MISSING
                break
        extra = (v.nanosecond, v.tzinfo) if isinstance(v, EdmDateTime) else None
        out[name] = (type(v), v, extra)
    return out


def _page_outcome(fn: Any, rows: list[Any]) -> Any:
    try:
        objs = fn(rows)
    except Exception as exc:
        return ("error", type(exc), str(exc))
    return ("ok", [_slots(o) for o in objs])


_TS = EdmDateTime(2026, 11, 29, 16, 25, 32, 123456, nanosecond=700).to_wire()


@st.composite
def _rows(draw: st.DrawFn) -> dict[str, Any]:
    row: dict[str, Any] = {
        "odata.etag": f"W/\"datetime'{_TS}'\"",
        "PartitionKey": "p",
        "RowKey": draw(st.text(max_size=4)),
        "Timestamp": _TS,
    }
    values: dict[str, tuple[Any, str | None]] = {
        "S": (draw(st.text(max_size=6)), None),
        "I32": (draw(st.integers(-(2**31), 2**31 - 1)), None),
        "I64": (str(draw(st.integers(-(2**63), 2**63 - 1))), "Edm.Int64"),
        "D": (draw(st.floats(allow_nan=False, allow_infinity=False)), None),
        "B": (draw(st.booleans()), None),
        "When": (draw(_texts()), "Edm.DateTime"),
        "When2": (draw(_texts()), "Edm.DateTime"),
        "G": (str(draw(st.uuids())), "Edm.Guid"),
        "Bin": (base64.b64encode(draw(st.binary(max_size=20))).decode(), "Edm.Binary"),
    }
    for name, (value, ann) in values.items():
        shape = draw(st.integers(0, 9))
        if shape == 0:
            continue  # missing
        if shape == 1:
            row[name] = None
            continue
        if ann is not None and shape > 2:
            row[name + "@odata.type"] = ann
        row[name] = value
    return row


@given(st.lists(_rows(), min_size=1, max_size=4), st.sampled_from([None, frozenset({"When", "G"})]))
def test_page_decoder_matches_general_path_for_every_type(
    rows: list[dict[str, Any]], select: frozenset[str] | None
) -> None:
    codec = codec_for(Every, select)
    assert _page_outcome(codec.decode_rows, rows) == _page_outcome(codec._decode_general, rows)


def test_service_rows_take_the_generated_decoder_with_a_twin() -> None:
    """A page as the stub and Azure send it (trimmed fractions of every length, Int64 as
    text, a missing property) is decoded by the generated function alone, into objects
    equal to the general path's, built through the layout twin."""
    rows = []
    base = datetime(2024, 2, 29, 23, 59, 58, 123456)
    for i in range(16):
        when = _service_text(base + timedelta(seconds=i), i % 10, i % 8, i % 3 == 0)
        rows.append(
            {
                "odata.etag": 'W/"x"',
                "PartitionKey": "p",
                "RowKey": f"{i:04d}",
                "Timestamp": _TS,
                "S": "text",
                "I32": i,
                "I64@odata.type": "Edm.Int64",
                "I64": str(2**40 + i),
                "D": i * 0.5,
                "B": i % 2 == 0,
                "When@odata.type": "Edm.DateTime",
                "When": when,
                "When2@odata.type": "Edm.DateTime",
                "When2": when,
                "G@odata.type": "Edm.Guid",
                "G": str(uuid.UUID(int=i)),
                "Bin@odata.type": "Edm.Binary",
                "Bin": "AAEC",
            }
        )
    codec = codec_for(Every)
    fast = codec._decode_page(rows)  # raises if the page leaves the generated decoder
    assert [_slots(o) for o in fast] == [_slots(o) for o in codec._decode_general(rows)]
    assert layout_twin(Every) is not None
    o = fast[7]  # seven digits: the last one kept
    assert type(o) is Every
    assert isinstance(o.dt, EdmDateTime)
    assert o.dt.nanosecond == 700
    assert o.Timestamp == EdmDateTime.parse(_TS)
    assert weakref.ref(o)() is o
    o.s = "changed"  # the class's own __setattr__ again: checked
    with pytest.raises(Exception, match="i32"):
        o.i32 = "not an int"  # type: ignore[assignment]


# --- layout twins -----------------------------------------------------------------------------


class Keyed(EntityBase):
    """A user's base class with its keys renamed and a property of its own."""

    region: Prop[str] = prop(name="PartitionKey")
    code: Prop[str] = prop(name="RowKey")
    shared: Prop[str] = prop(name="Shared", default="")


class Derived(Keyed):
    """A subclass adding a property."""

    n: Prop[Int64] = prop(name="N", default=0)


#: the classes Registered.__init_subclass__ has seen
SEEN: list[type] = []


class Registered(Entity):
    """A base whose __init_subclass__ a twin would call: its subclasses get none."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        SEEN.append(cls)


class Member(Registered):
    x: Prop[int] = prop(name="X", default=0)


@pytest.mark.parametrize("cls", [Every, Derived, Member])
def test_twins_and_setters_fill_the_same_objects(cls: type[Entity]) -> None:
    rows = [
        {"PartitionKey": "p", "RowKey": "r", "Timestamp": _TS, "Shared": "s", "N": "7", "X": 3},
        {"PartitionKey": "p", "RowKey": "r2", "Shared": "t", "N@odata.type": "Edm.Int64", "N": "8"},
    ]
    codec = codec_for(cls)
    fast = codec._decode_page(rows)
    assert [_slots(o) for o in fast] == [_slots(o) for o in codec._decode_general(rows)]
    assert all(type(o) is cls for o in fast)


def test_no_twin_where_making_one_would_call_init_subclass() -> None:
    before = list(SEEN)
    assert layout_twin(Member) is None
    assert before == SEEN
    assert layout_twin(Derived) is not None
    twin = layout_twin(Derived)
    assert twin is not None
    assert twin.__qualname__.endswith("<azt layout twin>")


def test_a_twin_is_marked_where_subclasses_are_listed() -> None:
    """The one place a twin shows: ``__subclasses__()`` of its class's base, marked there
    so that code listing entity classes can skip it (docs/entities.md)."""
    twin = layout_twin(Every)
    assert twin is not None
    base = Every.__mro__[1]
    listed: list[type] = base.__subclasses__()
    assert Every in listed
    assert twin in listed
    assert getattr(twin, "__azt_layout_twin__", False) is True
    assert getattr(Every, "__azt_layout_twin__", False) is False
    assert [c for c in listed if not getattr(c, "__azt_layout_twin__", False)].count(Every) == 1


def _setter_codec(cls: type[Entity], monkeypatch: pytest.MonkeyPatch) -> Any:
    """A codec of ``cls`` built as it was before layout twins: every slot filled by its
    setter (not cached, so the twin codecs stay as they are)."""
    with monkeypatch.context() as m:
        m.setattr(codec_module, "layout_twin", lambda cls: None)
        m.setattr(page_decoder_module, "layout_twin", lambda cls: None)
        return codec_module._build(cls, None)


@pytest.mark.parametrize("cls", [Every, Derived])
def test_twin_objects_equal_setter_objects(
    cls: type[Entity], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The twin codecs (page decoder, from_json, from_entity) against the same codecs
    filling every slot by its setter: the same objects, slot by slot."""
    old = _setter_codec(cls, monkeypatch)
    new = codec_for(cls)
    assert layout_twin(cls) is not None
    rows = [
        {
            "odata.etag": 'W/"x"',
            "PartitionKey": "p",
            "RowKey": f"r{i}",
            "Timestamp": _TS,
            "Shared": "s",
            "N@odata.type": "Edm.Int64",
            "N": str(i),
            "S": "t",
            "I32": i,
            "When@odata.type": "Edm.DateTime",
            "When": "2024-02-29T01:02:03.45Z",
            "G@odata.type": "Edm.Guid",
            "G": str(uuid.UUID(int=i)),
            "Bin@odata.type": "Edm.Binary",
            "Bin": "AAEC",
            **({"Undeclared": 1} if i == 2 else {}),
        }
        for i in range(4)
    ]
    assert [_slots(o) for o in new._decode_page(rows)] == [
        _slots(o) for o in old._decode_page(rows)
    ]
    assert [_slots(new.from_json(r)) for r in rows] == [_slots(old.from_json(r)) for r in rows]
    entities = wire_json.decode_feed(json.dumps({"value": rows}).encode())
    assert [_slots(new.from_entity(e)) for e in entities] == [
        _slots(old.from_entity(e)) for e in entities
    ]
    assert "Undeclared" in getattr(new._decode_page(rows)[2], PARTIAL_ATTR).missing


class Made(Entity):
    """Absent properties with a default value and with a factory, one after the other."""

    before: Prop[int] = prop(name="Before", default=5)
    tags: Prop[str] = prop(name="Tags", factory=lambda: "made")
    after: Prop[str | None] = prop(name="After", default=None)


def test_absent_defaults_and_factories() -> None:
    rows = [{"PartitionKey": "p", "RowKey": "r"}, {"PartitionKey": "p", "RowKey": "s", "Tags": "t"}]
    codec = codec_for(Made)
    fast = codec._decode_page(rows)
    assert [(o.before, o.tags, o.after) for o in fast] == [(5, "made", None), (5, "t", None)]
    assert [_slots(o) for o in fast] == [_slots(o) for o in codec._decode_general(rows)]
