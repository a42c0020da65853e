"""The write path's fast pieces do what the straightforward code did.

The DateTime parser, the JSON entity converter and the entity validator take fast
paths for the common shapes (cached seconds, names seen before, ASCII text). Each is
compared here with the code it replaced, kept below as the reference, on generated
input: the same result, or the same error.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
import math
import re
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from azt_server_stub import _props, _rows, _store, errors, model
from azt_server_stub import validation as v
from azt_server_stub.errors import StubError
from azt_server_stub.formats import json as jf
from azt_server_stub.query_pages import KeyRange, sort_key

# --- the reference: the code the fast paths replaced ------------------------------------

_REF_DT_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?"
    r"(Z|[+-]\d{2}:\d{2})?\Z",
    re.ASCII,
)
_EPOCH_0001 = _dt.datetime(1, 1, 1, tzinfo=_dt.UTC)


def ref_parse_datetime(text: str) -> int:
    m = _REF_DT_RE.match(text)
    if m is None:
        raise ValueError(f"not an ISO 8601 DateTime: {text!r}")
    year, month, day, hour, minute = (int(m.group(i)) for i in range(1, 6))
    second = int(m.group(6) or 0)
    frac = (m.group(7) or "").ljust(7, "0")
    base = _dt.datetime(year, month, day, hour, minute, second, tzinfo=_dt.UTC)
    zone = m.group(8)
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        offset = _dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        base = base - sign * offset
    delta = base - _EPOCH_0001
    return (delta.days * 86_400 + delta.seconds) * model.TICKS_PER_SECOND + int(frac)


# --- comparing ----------------------------------------------------------------------------


def outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> object:
    """What a call did: ("ok", result), ("error", status, code, details) or the exception type."""
    try:
        result = fn(*args, **kwargs)
    except StubError as exc:
        return ("error", exc.status, exc.code, dict(exc.details))
    except (ValueError, OverflowError) as exc:
        return ("raised", type(exc))
    return ("ok", result)


def same(a: object, b: object) -> bool:
    """Equal, with NaN equal to NaN (a Double property may hold one)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# --- DateTime -----------------------------------------------------------------------------

digits = hs.sampled_from(list("0123456789")) | hs.sampled_from(["\u0661", "\u00b2", "a", " "])


@hs.composite
def datetime_texts(draw: hs.DrawFn) -> str:
    """DateTime texts: mostly the 28-character form clients send, valid or nearly."""
    year = draw(hs.integers(1, 9999))
    month = draw(hs.integers(0, 13))
    day = draw(hs.integers(0, 32))
    head = f"{year:04d}-{month:02d}-{day:02d}T{draw(hs.integers(0, 24)):02d}:"
    head += f"{draw(hs.integers(0, 60)):02d}:{draw(hs.integers(0, 61)):02d}"
    frac = "".join(draw(hs.lists(digits, min_size=0, max_size=8)))
    tail = draw(hs.sampled_from(["Z", "", "+01:30", "-14:00", "z", "Z\n"]))
    text = head + ("." + frac if frac or draw(hs.booleans()) else "") + tail
    if draw(hs.integers(0, 9)) == 0:
        at = draw(hs.integers(0, len(text)))
        text = text[:at] + draw(hs.sampled_from(["", "x", "0", ".", "\u0660"])) + text[at + 1 :]
    return text


@settings(max_examples=1000, deadline=None)
@given(datetime_texts(), hs.booleans())
def test_datetimes_parse_as_before(text: str, twice: bool) -> None:
    expected = outcome(ref_parse_datetime, text)
    assert outcome(model.parse_datetime, text) == expected
    if twice:  # the second time from the cache of seconds, when the first one filled it
        assert outcome(model.parse_datetime, text) == expected


def test_cached_seconds_serve_other_fractions_only_in_the_same_form() -> None:
    base = model.parse_datetime("2024-05-06T07:08:09.1234567Z")
    assert model.parse_datetime("2024-05-06T07:08:09.0000001Z") == base - 1234566
    for text in ("2024-05-06T07:08:09.000000\u00b2Z", "2024-05-06T07:08:09.000000 Z"):
        assert outcome(model.parse_datetime, text) == outcome(ref_parse_datetime, text)
    assert model.parse_datetime("2024-05-06T07:08:09.1234567+01:00") == base - 36_000_000_000


# --- JSON members to typed properties -----------------------------------------------------

_REF_INT64_RE = re.compile(r"[+-]?[0-9]{1,20}\Z")
_REF_INT32_TEXT_RE = re.compile(r"[+-]?[0-9]{1,11}\Z")
_REF_GUID_RE = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z"
)
_REF_SPECIAL_IN = {
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
    "INF": math.inf,
    "-INF": -math.inf,
}


def ref_convert_value(name: str, edm_name: str | None, raw: Any) -> model.TypedValue | None:
    """``convert_value`` as it was: one function, an if-chain per type."""
    Edm = model.Edm
    if raw is None:
        return None
    if edm_name is None:
        if isinstance(raw, str):
            return (Edm.STRING, raw)
        if isinstance(raw, bool):
            return (Edm.BOOLEAN, raw)
        if isinstance(raw, int):
            if model.INT32_MIN <= raw <= model.INT32_MAX:
                return (Edm.INT32, raw)
            return (Edm.DOUBLE, jf._number_as_double(raw))
        if isinstance(raw, float):
            return (Edm.DOUBLE, jf._number_as_double(raw))
        raise errors.invalid_input()
    edm = {str(e): e for e in model.EDM_TYPES}.get(edm_name)
    if edm is None:
        raise errors.invalid_input()
    if edm is Edm.STRING:
        if not isinstance(raw, str):
            raise errors.invalid_input()
        return (edm, raw)
    if edm is Edm.INT32:
        if isinstance(raw, str) and _REF_INT32_TEXT_RE.match(raw):
            number = int(raw)
            if not model.INT32_MIN <= number <= model.INT32_MAX:
                raise errors.invalid_input()
            return (edm, number)
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise errors.invalid_input()
        return (edm, raw)
    if edm is Edm.INT64:
        if isinstance(raw, str) and _REF_INT64_RE.match(raw):
            number = int(raw)
        elif isinstance(raw, int) and not isinstance(raw, bool):
            number = raw
        else:
            raise errors.invalid_input()
        return (edm, number)
    if edm is Edm.DOUBLE:
        if isinstance(raw, bool):
            raise errors.invalid_input()
        if isinstance(raw, int | float):
            return (edm, jf._number_as_double(raw))
        if isinstance(raw, str):
            if raw in _REF_SPECIAL_IN:
                return (edm, _REF_SPECIAL_IN[raw])
            if jf.DOUBLE_RE.match(raw):
                value = float(raw)
                if value - value == 0.0:
                    return (edm, value)
        raise errors.invalid_input()
    if edm is Edm.BOOLEAN:
        if isinstance(raw, bool):
            return (edm, raw)
        if isinstance(raw, str):
            word = {"true": True, "false": False}.get(raw.lower())
            if word is not None:
                return (edm, word)
        raise errors.invalid_input()
    if not isinstance(raw, str):
        raise errors.invalid_input()
    if edm is Edm.DATETIME:
        try:
            return (edm, ref_parse_datetime(raw))
        except (ValueError, OverflowError):
            raise errors.invalid_input() from None
    if edm is Edm.GUID:
        if not _REF_GUID_RE.match(raw):
            raise errors.invalid_input()
        return (edm, uuid.UUID(raw))
    try:
        return (edm, base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError):
        raise errors.invalid_input() from None


def ref_entity_from_members(
    members: dict[str, Any], *, keys_required: bool
) -> tuple[str | None, str | None, dict[str, model.TypedValue]]:
    """``entity_from_members`` as it was: string tests per member, ``convert_value`` per value."""
    props: dict[str, model.TypedValue] = {}
    pk: str | None = None
    rk: str | None = None
    for name, raw in members.items():
        if "@" in name or name.startswith("odata."):
            continue
        if name == "PartitionKey" or name == "RowKey":
            if keys_required:
                annotation = members.get(name + "@odata.type")
                if not isinstance(raw, str) or annotation not in (None, "Edm.String"):
                    if raw is None:
                        continue
                    raise errors.invalid_input()
                if name == "PartitionKey":
                    pk = raw
                else:
                    rk = raw
            continue
        if name == "Timestamp":
            continue
        annotation = members.get(name + "@odata.type")
        if annotation is not None and not isinstance(annotation, str):
            raise errors.invalid_input()
        typed = ref_convert_value(name, annotation, raw)
        if typed is not None:
            props[name] = typed
    if keys_required and (pk is None or rk is None):
        raise errors.properties_need_value()
    return pk, rk, props


_EDM_NAMES = [*model.EDM_TYPES, "Edm.Bogus", "edm.string", ""]
TEXTS = ["", "12", "-7", "+2147483648", "9" * 21, "NaN", "-INF", "1e400", "1.5e3", ".5"]
TEXTS += ["TRUE", "false", "2024-01-01T12:00:00.0000000Z", "2024-13-01T00:00:00Z", "AAE="]
TEXTS += ["AAE", "c9da6455-213d-42c9-9a79-3e9149a57833", "\u0661\u0662", "x"]
member_names = hs.sampled_from(
    ["PartitionKey", "RowKey", "Timestamp", "odata.etag", "A", "B", "Größe", "x@y", "odata"]
)
raw_values = (
    hs.none()
    | hs.booleans()
    | hs.integers(-(2**64), 2**64)
    | hs.sampled_from([2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 10**400])
    | hs.floats()
    | hs.sampled_from([math.inf, -math.inf, math.nan, 0.0, -0.0, 1e308])
    | hs.sampled_from(TEXTS)
    | hs.text(max_size=4)
    | hs.lists(hs.integers(), max_size=2)
    | hs.dictionaries(hs.text(max_size=2), hs.integers(), max_size=1)
)
annotation_values = hs.sampled_from(_EDM_NAMES) | hs.sampled_from([None, 5, True, ["Edm.String"]])


@hs.composite
def member_dicts(draw: hs.DrawFn) -> dict[str, Any]:
    """Decoded JSON entities: keys, properties, their annotations, odd members."""
    members: dict[str, Any] = {}
    for name in draw(hs.lists(member_names, max_size=7)):
        if draw(hs.integers(0, 2)) == 0:
            members[name + "@odata.type"] = draw(annotation_values)
        members[name] = draw(raw_values)
    if draw(hs.booleans()):  # an annotation before or after its value, or alone
        members = dict(reversed(list(members.items())))
    return members


@settings(max_examples=1500, deadline=None)
@given(member_dicts(), hs.booleans())
def test_members_convert_as_before(members: dict[str, Any], keys_required: bool) -> None:
    fast = outcome(jf.entity_from_members, members, keys_required=keys_required)
    ref = outcome(ref_entity_from_members, members, keys_required=keys_required)
    assert same(fast, ref), (fast, ref)


@settings(max_examples=300, deadline=None)
@given(hs.sampled_from([*_EDM_NAMES, None]), raw_values)
def test_values_convert_as_before(edm_name: str | None, raw: Any) -> None:
    fast = outcome(jf.convert_value, "n", edm_name, raw)
    assert same(fast, outcome(ref_convert_value, "n", edm_name, raw))


# --- entity validation --------------------------------------------------------------------


def ref_validate_entity(pk: object, rk: object, props: dict[str, Any]) -> None:
    """``validate_entity`` as it was: the full checks only."""
    v.validate_key("PartitionKey", pk)
    v.validate_key("RowKey", rk)
    assert isinstance(pk, str)
    assert isinstance(rk, str)
    size = v.validate_properties(props) + 4 + 2 * (v.utf16_len(pk) + v.utf16_len(rk))
    if size > v.MAX_ENTITY_BYTES:
        raise errors.entity_too_large()


GOOD_KEYS = ["", "p", "r-1", "k" * 1024]
BAD_KEYS: list[object] = ["a/b", "a#", "x?", "back\\slash", "tab\t", "\x7f", "\x85", "é"]
BAD_KEYS += ["\U0001f600", "\ud800", "k" * 1025, "é" * 1024, "\U0001f600" * 512]
BAD_KEYS += ["\U0001f600" * 513, None, 5, b"p"]
keys = hs.sampled_from(GOOD_KEYS) | hs.sampled_from(GOOD_KEYS) | hs.sampled_from(BAD_KEYS)
prop_names = hs.sampled_from(["A", "B", "Name", "_x", "n" * 255]) | hs.sampled_from(
    ["Größe", "1a", "", "Timestamp", "a b", "n" * 256, 5, ("A",)]
)
M = model.Edm
GOOD_VALUES: list[object] = [
    (M.STRING, "x"),
    (M.STRING, "é"),
    (M.STRING, "s" * 32768),
    (M.STRING, "é" * 32768),
    (M.STRING, "\U0001f600" * 16384),
    (M.INT32, 2**31 - 1),
    (M.INT32, -(2**31)),
    (M.INT64, 2**63 - 1),
    (M.INT64, -(2**63)),
    (M.DOUBLE, 1.5),
    (M.DOUBLE, math.nan),
    (M.BOOLEAN, True),
    (M.DATETIME, model.MIN_DATETIME_TICKS),
    (M.DATETIME, model.MAX_DATETIME_TICKS),
    (M.GUID, uuid.UUID(int=7)),
    (M.BINARY, b"x" * 65536),
]
BAD_VALUES: list[object] = [
    (M.STRING, "\ud800"),
    (M.STRING, "s" * 32769),
    (M.STRING, "\U0001f600" * 16385),
    (M.STRING, 5),
    (M.INT32, 2**31),
    (M.INT32, -(2**31) - 1),
    (M.INT32, True),
    (M.INT32, 1.0),
    (M.INT64, 2**63),
    (M.INT64, -(2**63) - 1),
    (M.INT64, False),
    (M.DOUBLE, 1),
    (M.BOOLEAN, 1),
    (M.DATETIME, model.MIN_DATETIME_TICKS - 1),
    (M.DATETIME, model.MAX_DATETIME_TICKS + 1),
    (M.DATETIME, 1.0),
    (M.GUID, "c9da6455-213d-42c9-9a79-3e9149a57833"),
    (M.BINARY, b"x" * 65537),
    (M.BINARY, bytearray(b"x")),
    ("Edm.String", "x"),
    (M.STRING, "x", 1),
    [M.STRING, "x"],
]
good_values = hs.sampled_from(GOOD_VALUES)
typed_values = good_values | good_values | good_values | hs.sampled_from(BAD_VALUES)


@hs.composite
def entities(draw: hs.DrawFn) -> tuple[object, object, dict[Any, Any]]:
    """Keys and properties, valid or not, some near the size and count limits."""
    props = {draw(prop_names): draw(typed_values) for _ in range(draw(hs.integers(0, 4)))}
    if draw(hs.integers(0, 5)) == 0:  # many big strings: near or past 1 MiB
        for i in range(draw(hs.integers(14, 17))):
            props[f"Big{i}"] = (M.STRING, "s" * draw(hs.sampled_from([32768, 32700, 32000])))
    if draw(hs.integers(0, 9)) == 0:
        for i in range(draw(hs.integers(248, 254))):
            props[f"P{i}"] = (M.INT32, i)
    return draw(keys), draw(keys), props


@settings(max_examples=1000, deadline=None)
@given(entities())
def test_entities_validate_as_before(entity: tuple[object, object, dict[Any, Any]]) -> None:
    pk, rk, props = entity
    first = outcome(v.validate_entity, pk, rk, props)  # names maybe not seen yet
    assert first == outcome(ref_validate_entity, pk, rk, props)
    assert outcome(v.validate_entity, pk, rk, props) == first  # names seen now


def test_each_edge_value_and_key_validates_as_before() -> None:
    """Every listed value alone, and every listed key, checked cold and then warm."""
    cases: list[tuple[object, object, dict[Any, Any]]] = []
    for typed in GOOD_VALUES + BAD_VALUES:
        cases.append(("p", "r", {"A": typed}))
        cases.append(("p", "r", {"Big1": (M.STRING, "s" * 32768), "A": typed}))
    for key in GOOD_KEYS + BAD_KEYS:
        cases += [(key, "r", {"A": (M.INT32, 1)}), ("p", key, {})]
    big = {f"Big{i}": (M.STRING, "s" * 32768) for i in range(16)}
    cases += [("p", "r", big), ("p", "r", dict(list(big.items())[:15]))]
    for pk, rk, props in cases:
        first = outcome(v.validate_entity, pk, rk, props)
        assert first == outcome(ref_validate_entity, pk, rk, props), (pk, rk, props)
        assert outcome(v.validate_entity, pk, rk, props) == first, (pk, rk, props)


# --- the durable store ----------------------------------------------------------------------


def ref_encode_props(props: dict[str, model.TypedValue]) -> str:
    """``encode_props`` as it was: a loop, ``json.dumps`` per call."""
    codes = {
        M.STRING: "s",
        M.INT32: "i",
        M.INT64: "l",
        M.DOUBLE: "d",
        M.BOOLEAN: "b",
        M.DATETIME: "t",
        M.GUID: "g",
        M.BINARY: "x",
    }
    out: list[list[Any]] = []
    for name, (edm, value) in props.items():
        if edm is M.GUID:
            value = value.hex
        elif edm is M.BINARY:
            value = base64.b64encode(value).decode("ascii")
        out.append([name, codes[edm], value])
    return json.dumps(out, separators=(",", ":"))


stored_values = hs.one_of(
    hs.tuples(
        hs.sampled_from(model.EDM_TYPES), hs.sampled_from([3, True, 1.5, math.nan, "x", None])
    ),
    hs.tuples(hs.just(M.STRING), hs.text(max_size=6)),
    hs.tuples(hs.just(M.INT32), hs.integers(-(2**31), 2**31 - 1)),
    hs.tuples(hs.just(M.INT64), hs.integers(-(2**63), 2**63 - 1)),
    hs.tuples(hs.just(M.DOUBLE), hs.floats()),
    hs.tuples(hs.just(M.BOOLEAN), hs.booleans()),
    hs.tuples(hs.just(M.DATETIME), hs.integers(0, model.MAX_DATETIME_TICKS)),
    hs.tuples(hs.just(M.GUID), hs.uuids()),
    hs.tuples(hs.just(M.BINARY), hs.binary(max_size=6)),
)


@settings(max_examples=400, deadline=None)
@given(hs.dictionaries(hs.text(max_size=4), stored_values, max_size=6))
def test_properties_encode_for_the_store_as_before(props: dict[str, model.TypedValue]) -> None:
    expected = store_outcome(ref_encode_props, props)
    assert store_outcome(_store.encode_props, props) == expected
    if expected[0] != "ok" or not all(
        edm in (M.GUID, M.BINARY) or type(value) in _STORED_TYPES[edm]
        for edm, value in props.values()
    ):
        return  # values the store never gets (validation refuses them): encoded as before
    text = _store.encode_props(props)
    assert same(_store.decode_props(text), props)
    assert same(_store.decode_props(text), ref_decode_props(text))


@settings(max_examples=400, deadline=None)
@given(hs.lists(hs.text(max_size=4), unique=True, max_size=6), hs.data())
def test_a_compiled_encoder_writes_any_properties_of_its_names_as_before(
    names: list[str], data: hs.DataObject
) -> None:
    """``encode_props`` compiles, per tuple of names, code for the types of the first
    properties of those names; later properties of the same names (of any types, usual
    or not) are written as the reference writes them, or fail alike."""
    usual = hs.one_of(
        hs.tuples(hs.just(M.STRING), hs.text(max_size=6)),
        hs.tuples(hs.sampled_from([M.INT32, M.INT64, M.DATETIME]), hs.integers(-5, 2**62)),
        hs.tuples(hs.just(M.DOUBLE), hs.floats(allow_nan=False, allow_infinity=False)),
        hs.tuples(hs.just(M.BOOLEAN), hs.booleans()),
        hs.tuples(hs.just(M.GUID), hs.uuids()),
    )
    first = {name: data.draw(usual) for name in names}
    _props._ENCODERS.pop(tuple(first), None)
    assert store_outcome(_store.encode_props, first) == store_outcome(ref_encode_props, first)
    later = {name: data.draw(usual | stored_values) for name in names}
    assert store_outcome(_store.encode_props, later) == store_outcome(ref_encode_props, later)
    assert store_outcome(_store.encode_props, first) == store_outcome(ref_encode_props, first)


_EVERY_STORED_KIND: dict[str, model.TypedValue] = {
    "S": (M.STRING, "t\u00e9xt"),
    "I": (M.INT32, 7),
    "L": (M.INT64, 2**40),
    "W": (M.DATETIME, 638397072003130000),
    "D": (M.DOUBLE, 2.5),
    "B": (M.BOOLEAN, True),
    "G": (M.GUID, uuid.UUID(int=5)),
    "X": (M.BINARY, b"\x00\x01"),
}
_STORED_SUBSTITUTES = [0, 2**63, True, 1.0, -0.0, math.nan, math.inf, "x", "", None]
_STORED_SUBSTITUTES += [uuid.UUID(int=1), b"\xff"]


@pytest.mark.parametrize("name", list(_EVERY_STORED_KIND))
def test_a_compiled_encoder_writes_other_types_as_before(name: str) -> None:
    """Each property of a compiled shape replaced by every type and value kind: written as
    the reference writes it (or failing alike)."""
    _props._ENCODERS.pop(tuple(_EVERY_STORED_KIND), None)
    first = store_outcome(_store.encode_props, _EVERY_STORED_KIND)
    assert first == store_outcome(ref_encode_props, _EVERY_STORED_KIND)
    usual = {k: v for k, v in _EVERY_STORED_KIND.items() if k != "X"}  # Binary: the loop
    _props._ENCODERS.pop(tuple(usual), None)
    assert store_outcome(_store.encode_props, usual) == store_outcome(ref_encode_props, usual)
    assert _props._ENCODERS[tuple(usual)] is not None
    if name not in usual:
        return
    for edm in model.EDM_TYPES:
        for value in _STORED_SUBSTITUTES:
            later = {**usual, name: (edm, value)}
            got = store_outcome(_store.encode_props, later)
            assert got == store_outcome(ref_encode_props, later), (edm, value)


_STORED_TYPES: dict[model.EdmName, tuple[type, ...]] = {
    M.STRING: (str,),
    M.INT32: (int,),
    M.INT64: (int,),
    M.DOUBLE: (float,),
    M.BOOLEAN: (bool,),
    M.DATETIME: (int,),
}


def ref_decode_props(text: str) -> dict[str, model.TypedValue]:
    """``decode_props`` as it was: ``json.loads``, a loop."""
    edms = {"s": M.STRING, "i": M.INT32, "l": M.INT64, "d": M.DOUBLE, "b": M.BOOLEAN}
    edms.update({"t": M.DATETIME, "g": M.GUID, "x": M.BINARY})
    props: dict[str, model.TypedValue] = {}
    for name, code, value in json.loads(text):
        edm = edms[code]
        if edm is M.GUID:
            value = uuid.UUID(hex=value)
        elif edm is M.BINARY:
            value = base64.b64decode(value)
        elif edm is M.DOUBLE:
            value = float(value)
        props[name] = (edm, value)
    return props


def store_outcome(fn: Callable[[Any], object], text: Any) -> tuple[str, object]:
    try:
        return ("ok", fn(text))
    except Exception as exc:  # what a broken stored text raises, compared by type
        return ("raised", type(exc))


STORED_TEXTS = ['[["a","i",1]]', ' [["a","d",1]] ', '[["a","d",2]]\n', '{"a":1}', "[]", ""]
STORED_TEXTS += ["[1]", '[["a","q",1]]', '[[["a"],"s","x"]]', '[["a","s","x"],["a","i",2]]']
STORED_TEXTS += ["[] x", '[["a",["s"],1]]', '[["g","g","00000000000000000000000000000001"]]']
STORED_TEXTS += ["[[]]", '[["b","x","AAE="],["n","d",NaN]]']


@pytest.mark.parametrize("text", STORED_TEXTS)
def test_stored_texts_decode_as_before(text: str) -> None:
    expected = store_outcome(ref_decode_props, text)
    got = store_outcome(_store.decode_props, text)
    assert same(got, expected) if expected[0] == "ok" else got == expected


stored_keys = hs.text(alphabet=hs.sampled_from(["a", "b", "é", "\U0001f600", "\ufffd", "'"]))


@settings(max_examples=60, deadline=None)
@given(
    hs.sampled_from(["p", "\U0001f600", "é"]),
    hs.lists(stored_keys, max_size=8, unique=True),
    hs.lists(stored_keys, max_size=8, unique=True),
)
def test_a_partitions_rows_read_together_as_one_by_one(
    pk: str, stored: list[str], asked: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = _store.SqliteStore(Path(folder))
        try:
            store.create_table("acct", "t", "T")
            store.write_entity_groups(
                [("acct", "t", [model.Entity(pk, rk, i) for i, rk in enumerate(stored)], [])], 99
            )
            for rows in (_rows.StoredRows(store, "acct", "t"), _rows.MemoryRows()):
                for i, rk in enumerate(stored):
                    rows.apply(sort_key(pk, rk), model.Entity(pk, rk, i))
                spk = sort_key(pk, "")[0]
                wanted = [sort_key(pk, rk)[1] for rk in asked]
                one_by_one = {
                    (spk, rk): e for rk in wanted if (e := rows.get((spk, rk))) is not None
                }
                assert rows.get_partition_rows(spk, wanted) == one_by_one
        finally:
            store.close()


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.tuples(stored_keys, stored_keys), max_size=12, unique=True), hs.integers(1, 5))
def test_stored_scans_read_as_memory_scans(keys: list[tuple[str, str]], hint: int) -> None:
    """Sort keys and entities of a read-through scan (PartitionKeys decoded once per run)."""
    with tempfile.TemporaryDirectory() as folder:
        store = _store.SqliteStore(Path(folder))
        try:
            store.create_table("acct", "t", "T")
            entities = [
                model.Entity(pk, rk, i, {"N": (M.INT32, i)}) for i, (pk, rk) in enumerate(keys)
            ]
            store.write_entity_groups([("acct", "t", entities, [])], 99)
            memory = _rows.MemoryRows()
            for e in entities:
                memory.apply(sort_key(e.pk, e.rk), e)
            stored = _rows.StoredRows(store, "acct", "t")
            everything: list[KeyRange] = [(("", ""), None)]
            with stored.snapshot():
                got = list(stored.scan(everything, ("", ""), hint))
            assert got == list(memory.scan(everything, ("", ""), hint))
        finally:
            store.close()
