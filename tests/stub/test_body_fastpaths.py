"""Entity-body fast paths against their standard readings: JSON objects, DateTimes.

``loads_object`` reads a body with msgspec when that reading is certainly the standard
library's (``_fast_object``); everything else goes to the standard scanner. These tests
hold the two to the same answer on random bodies (duplicates, escapes, nesting, odd
numbers, whitespace, broken text): the same object, with the same types and key order,
or the same refusal.
"""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from azt_server_stub import model
from azt_server_stub.errors import StubError
from azt_server_stub.formats import json as jsonfmt


def _outcome(read: Any, body: bytes) -> tuple[Any, ...]:
    try:
        value = read(body)
    except StubError as err:
        return ("refused", err.status, err.code)
    return ("read", _typed(value))


def _typed(value: Any) -> Any:
    """A value with its types spelled out (1 != 1.0 != True, -0.0 != 0.0, order kept)."""
    if isinstance(value, dict):
        return ("object", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("array", [_typed(v) for v in value])
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    return (type(value).__name__, value)


_names = st.one_of(
    st.sampled_from(["PartitionKey", "RowKey", "Name", "Name@odata.type", "odata.etag", ""]),
    st.text(max_size=8),
    st.text(alphabet='a:"\\,{}[] \u00e9\ud800', max_size=6),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.text(alphabet='a:"\\/\n\t\u00e9\U0001f600\ud800', max_size=8),
    st.sampled_from(["2024-01-01T12:00:00.313000Z", "1099511628089", "Edm.Int64"]),
)
_values = st.one_of(
    _scalars,
    st.lists(_scalars, max_size=3),
    st.dictionaries(st.text(max_size=3), _scalars, max_size=3),
)
_separators = st.sampled_from([(",", ":"), (", ", ": "), (" ,", " :"), ("\n,\t", "\r:\n")])


@st.composite
def _bodies(draw: st.DrawFn) -> bytes:
    """An object's text from member pairs (a name may repeat), perhaps then damaged."""
    pairs: list[tuple[str, Any]] = draw(st.lists(st.tuples(_names, _values), max_size=8))
    repeat: bool = draw(st.booleans())
    if pairs and repeat:
        pairs.insert(draw(st.integers(0, len(pairs))), draw(st.sampled_from(pairs)))
    item, key = draw(_separators)
    ascii_only = draw(st.booleans())

    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=ascii_only, allow_nan=True)

    text = "{" + item.join(dump(k) + key + dump(v) for k, v in pairs) + "}"
    text = draw(st.sampled_from(["", " ", "\n\t"])) + text + draw(st.sampled_from(["", " \r\n"]))
    body = text.encode("utf-8", "surrogatepass")
    damage = draw(st.sampled_from(["none", "none", "cut", "insert", "trail"]))
    if damage != "none" and body:
        at = draw(st.integers(0, len(body)))
        if damage == "cut":
            body = body[:at] + body[at + 1 :]
        elif damage == "insert":
            body = body[:at] + draw(st.sampled_from([b'"', b"\\", b",", b":", b"\xff", b"1"]))
            body += body[at:]
        else:
            body += draw(st.sampled_from([b"x", b"{}", b"\x00"]))
    return body


@settings(max_examples=1000, deadline=None)
@given(_bodies())
@example(b'{"a":1,"a":2}')
@example(b'{"a":"x:y","a":"z"}')
@example(b'{"a":"\\u0022","a":1}')
@example(b'{"a":1e400}')
@example(b'{"a":NaN}')
@example(b'\xef\xbb\xbf{"a":1}')
@example(b'{"a":"\xed\xa0\x80"}')
@example(b'{"a":{"b":1,"b":2}}')
@example(b'{"a":[1,{"b":1}]}')
@example(b'{"a":' + b"9" * 5000 + b"}")
@example('{"a":1}'.encode("utf-16-le"))
def test_fast_reading_is_the_standard_reading(body: bytes) -> None:
    assert _outcome(jsonfmt.loads_object, body) == _outcome(jsonfmt._standard_object, body)


def test_entity_bodies_take_the_fast_path() -> None:
    """What SDKs send (annotations, DateTimes with colons, keys) is read by msgspec; a
    repeated member, an escape or a nested value is not."""
    body = (
        b'{"PartitionKey":"p","RowKey":"r","Name":"n","Count":3,"Score@odata.type":"Edm.Double",'
        b'"Score":1.5,"When@odata.type":"Edm.DateTime","When":"2024-01-01T12:00:00.313Z",'
        b'"Big@odata.type":"Edm.Int64","Big":"1099511628089","On":true,"Nothing":null}'
    )
    assert jsonfmt._fast_object(body) == json.loads(body)
    for other in (
        b'{"a":"x","b":1,"a":"y"}',
        b'{"a":1,"a":1}',
        b'{"a":"\\u003a"}',
        b'{"a":{"b":1}}',
        b'{"a":[1]}',
        b"[1]",
    ):
        assert jsonfmt._fast_object(other) is None, other
    with pytest.raises(StubError) as caught:
        jsonfmt.loads_object(b'{"a":"x:y","a":"z"}')
    assert (caught.value.status, caught.value.code) == (400, "DuplicatePropertiesSpecified")


_digits = st.text(alphabet="0123456789", min_size=1, max_size=8)


@st.composite
def _datetime_texts(draw: st.DrawFn) -> str:
    """DateTime texts near the forms clients send: every fraction length, with and
    without a zone, offsets, and a few broken ones."""
    when: datetime.datetime = draw(
        st.datetimes(datetime.datetime(1601, 1, 1), datetime.datetime(9999, 12, 30))
    )
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    digits = draw(st.integers(0, 8))
    if digits:
        text += "." + draw(_digits)[:digits]
    elif draw(st.booleans()):
        text += "."
    text += draw(st.sampled_from(["Z", "Z", "", "+01:30", "-00:00", "z", "Z\n", " Z"]))
    return text


def _ticks(text: str) -> int | str:
    try:
        return model.parse_datetime(text)
    except ValueError:
        return "refused"


@settings(max_examples=800, deadline=None)
@given(_datetime_texts(), _datetime_texts())
@example("2024-01-01T12:00:00.313000Z", "2024-01-01T12:00:00Z")
@example("2024-01-01T12:00:00.Z", "2024-01-01T12:00:00.1Z")
@example("2024-01-01T12:00:00.12345678Z", "2024-01-01T12:00:00Z")
@example("2024-01-01T12:00:00.1234567Z", "2024-01-01T12:00:00.0000001Z")  # seven digits
@example("2024-01-01T12:00:00.000000\u0663Z", "2024-01-01T12:00:00.1234567Z")  # not ASCII
@example("2024-01-01T12:00:00.12345-7Z", "2024-01-01T12:00:00Z")
def test_datetime_ticks_do_not_depend_on_the_seconds_cache(text: str, other: str) -> None:
    """A DateTime reads the same whether its whole seconds were cached (by itself or by
    another text of the same second) or not."""
    model._SECOND_TICKS.clear()
    cold = _ticks(text)
    same_second = other[:19] == text[:19]
    _ticks(other)  # may cache the seconds text and other share
    assert _ticks(text) == cold, (text, other, same_second)
    assert _ticks(text) == cold
    model._SECOND_TICKS.clear()


@settings(max_examples=500, deadline=None)
@given(st.integers(0, model.MAX_DATETIME_TICKS), st.integers(0, 10_000_000 - 1))
def test_etags_from_remembered_seconds_are_the_formatted_ones(ticks: int, other: int) -> None:
    """``etag_for`` reuses the text of a Timestamp's whole second: the same ETag as
    formatting the whole Timestamp, for the first Timestamp of a second and later ones."""

    def formatted(t: int) -> str:
        return "W/\"datetime'" + model.format_datetime_7(t).replace(":", "%3A") + "'\""

    same_second = ticks - ticks % 10_000_000 + other
    for t in (ticks, same_second, ticks):
        assert model.etag_for(t) == formatted(t)
