"""The stored form of an entity's properties (private): lossless JSON text.

Values are stored as ASCII JSON (so lone surrogates survive):
``[[name, code, value], ...]`` with codes ``s`` String, ``i`` Int32, ``l`` Int64
(exact Python int), ``d`` Double (``NaN``/``Infinity`` allowed), ``b`` Boolean,
``t`` DateTime ticks, ``g`` Guid (32 hex digits), ``x`` Binary (base64).

Example::

    >>> from azt_server_stub.model import Edm
    >>> text = encode_props({"n": (Edm.INT64, 2**40), "ok": (Edm.BOOLEAN, True)})
    >>> text
    '[["n","l",1099511627776],["ok","b",true]]'
    >>> decode_props(text)["n"]
    ('Edm.Int64', 1099511627776)
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

from .model import EDM_NAMES, EDM_TYPES, Edm, EdmName, TypedValue

_CODE: dict[EdmName, str] = {
    Edm.STRING: "s",
    Edm.INT32: "i",
    Edm.INT64: "l",
    Edm.DOUBLE: "d",
    Edm.BOOLEAN: "b",
    Edm.DATETIME: "t",
    Edm.GUID: "g",
    Edm.BINARY: "x",
}
_EDM: dict[str, EdmName] = {code: edm for edm, code in _CODE.items()}
#: ``json.dumps(value, separators=(",", ":"))`` without building an encoder per call.
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode


def encode_props(props: dict[str, TypedValue]) -> str:
    """Encode typed properties as the ASCII JSON text described in the module docstring."""
    # The entities of a table mostly share their property names and types: each tuple of
    # names gets straight-line code for the types its first properties had, which answers
    # None for properties of other types (then the loop below writes them).
    names = tuple(props)
    encoder: _Encoder | None = _ENCODERS.get(names, _UNSET)
    if encoder is _UNSET:
        encoder = _compile_encoder(names, props)
    if encoder is not None:
        text = encoder(props)
        if text is not None:
            return text
    return _encode_loop(props)


_Encoder = Callable[[dict[str, TypedValue]], "str | None"]
_UNSET: Any = object()
#: Property-name tuples -> :func:`encode_props` compiled for the types of the first
#: properties seen with those names (None: an unusual first value, the loop). Bounded.
_ENCODERS: dict[tuple[str, ...], _Encoder | None] = {}


def _compile_encoder(names: tuple[str, ...], sample: dict[str, TypedValue]) -> _Encoder | None:
    """What :func:`_encode_loop` writes for properties typed as ``sample``'s, compiled."""
    if len(_ENCODERS) >= 1024:
        _ENCODERS.clear()
    _ENCODERS[names] = None
    # Each type as a global of its own: a global name is cheaper than an attribute lookup
    # (Edm.X); while the types were Enum members, that lookup cost more than the rest of
    # a property's line.
    namespace: dict[str, Any] = {"esc": encode_basestring_ascii, "uuid": uuid}
    namespace.update((EDM_NAMES[edm], edm) for edm in EDM_TYPES)
    lines: list[str] = []
    # The text is one f-string: each property's head (``[<name>,"<code>",``, a default
    # argument: a fast local, and no escaping of the name into the source) and its value.
    # Built in one step, it costs about half what joining a tuple of pieces did.
    defaults = ["q='\"'"]
    text: list[str] = []
    for i, name in enumerate(names):
        typed = sample[name]
        if type(name) is not str or type(typed) is not tuple or len(typed) != 2:
            return None
        edm, value = typed
        t = type(value)
        e, v = f"e{i}", f"v{i}"
        lines.append(f"{e}, {v} = p[{name!r}]")
        if t is str and edm is Edm.STRING:
            lines.append(f"if {e} is not STRING or type({v}) is not str: return None")
            x = f"esc({v})"
        elif t is int and edm in _INT_CODED:
            lines.append(f"if {e} is not {EDM_NAMES[edm]} or type({v}) is not int: return None")
            x = f"{v}!r"  # an exact int: its repr (format() would reach it by way of str())
        elif t is bool and edm is Edm.BOOLEAN:
            lines.append(f"if {e} is not BOOLEAN or type({v}) is not bool: return None")
            x = f'"true" if {v} else "false"'
        elif t is float and edm is Edm.DOUBLE and value - value == 0.0:
            lines.append(
                f"if {e} is not DOUBLE or type({v}) is not float or {v} - {v} != 0.0: return None"
            )
            x = f"{v}!r"  # an exact finite float: float.__repr__ (what format() writes)
        elif t is uuid.UUID and edm is Edm.GUID:
            lines.append(f"if {e} is not GUID or type({v}) is not uuid.UUID: return None")
            x = f"q}}{{{v}.hex}}{{q"  # the hex digits, quoted (q: a default argument)
        else:
            return None
        namespace[f"h{i}"] = ("[" if i == 0 else "],") + (
            _HEADS.get((name, edm)) or _head(name, edm)
        )
        defaults.append(f"h{i}=h{i}")
        text.append(f"{{h{i}}}{{{x}}}")
    if not names:
        return None
    source = f"def encode(p, {', '.join(defaults)}):\n"
    source += "".join(f"    {line}\n" for line in lines)
    source += f"    return f'{''.join(text)}]]'\n"
    exec(compile(source, "<azt-stub property encoder>", "exec"), namespace)
    encoder: _Encoder = namespace["encode"]
    _ENCODERS[names] = encoder
    return encoder


def _encode_loop(props: dict[str, TypedValue]) -> str:
    """:func:`encode_props` property by property (any properties)."""
    # What json.dumps writes for [[name, code, value], ...] with these separators, written
    # directly: names and their codes once per name, values by type. A value of another
    # Python type than its type's goes the way of the list for json.dumps (its text, or
    # the error that way raises).
    pieces = ["["]
    heads = _HEADS
    for name, typed in props.items():
        edm, value = typed
        head = heads.get((name, edm))
        if head is None:
            head = _head(name, edm)
        t = type(value)
        if t is str and edm is Edm.STRING:
            text = encode_basestring_ascii(value)
        elif t is int and edm in _INT_CODED:
            text = int.__repr__(value)
        elif t is bool and edm is Edm.BOOLEAN:
            text = "true" if value else "false"
        elif t is float and edm is Edm.DOUBLE and value - value == 0.0:
            text = float.__repr__(value)
        elif t is uuid.UUID and edm is Edm.GUID:
            text = '"' + value.hex + '"'
        else:
            return _encode_list(props)
        pieces += (head, text, "],")
    if len(pieces) == 1:
        return "[]"
    pieces[-1] = "]]"
    return "".join(pieces)


def _encode_list(props: dict[str, TypedValue]) -> str:
    """:func:`encode_props` by way of the list of lists and the JSON encoder."""
    codes = _CODE
    return _ENCODE(
        [
            [name, codes[edm], _stored_value(edm, value) if edm in _TEXT_CODED else value]
            for name, (edm, value) in props.items()
        ]
    )


#: Types stored as JSON integers.
_INT_CODED = frozenset({Edm.INT32, Edm.INT64, Edm.DATETIME})


#: (name, type) -> the text of a stored property up to its value: ``[<name>,"<code>",``
#: (with the leading comma the separator needs). Bounded.
_HEADS: dict[tuple[str, EdmName], str] = {}


def _head(name: str, edm: EdmName) -> str:
    head = "[" + _ENCODE(name) + ',"' + _CODE[edm] + '",'
    if len(_HEADS) < 4096 and isinstance(name, str):
        _HEADS[(name, edm)] = head
    return head


#: Types whose values are stored as text (Guid as 32 hex digits, Binary as base64).
_TEXT_CODED = frozenset({Edm.GUID, Edm.BINARY})


def _stored_value(edm: EdmName, value: Any) -> Any:
    if edm is Edm.GUID:
        return value.hex
    return base64.b64encode(value).decode("ascii")


def decode_props(text: str) -> dict[str, TypedValue]:
    """Inverse of :func:`encode_props`."""
    # msgspec reads what the store writes about twice as fast as json's scanner, into the
    # same lists; what it refuses (NaN and Infinity, lone surrogates, out-of-range
    # numbers, a str UTF-8 cannot encode) is read by json, as before.
    try:
        items = _fast_json(text)
    except _FAST_JSON_ERRORS:
        items = None
    if type(items) is not list:
        try:
            items, end = _JSON_VALUE(text, 0)
        except StopIteration:
            items, end = None, -1
        if end != len(text) or type(items) is not list:
            items = json.loads(text)  # what the store never writes: json's own verdict
    edms = _EDM
    return {
        name: (edms[code], value) if code in _PLAIN_CODES else _read_value(code, value)
        for name, code, value in items
    }


def _first_fast_json(text: str) -> Any:
    """Import msgspec at the first stored row read (start-up does not pay its ~10 ms and
    its memory), make its JSON decoder :func:`_fast_json`, and read ``text`` with it."""
    global _fast_json, _FAST_JSON_ERRORS
    import msgspec

    _FAST_JSON_ERRORS = (msgspec.DecodeError, ValueError)
    _fast_json = msgspec.json.Decoder().decode
    return _fast_json(text)


#: msgspec's JSON decoder (any JSON value) once imported.
_fast_json: Callable[[str], Any] = _first_fast_json
#: What it raises for a text it refuses (ValueError: a str no UTF-8 can encode).
_FAST_JSON_ERRORS: tuple[type[Exception], ...] = (ValueError,)
#: Codes whose stored JSON value is the value itself.
_PLAIN_CODES = frozenset({"s", "i", "l", "b", "t"})
#: json's default decoder's scanner: one JSON value from an index -> (value, end index).
_JSON_VALUE: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _read_value(code: str, value: Any) -> TypedValue:
    edm = _EDM[code]
    if edm is Edm.GUID:
        value = uuid.UUID(hex=value)
    elif edm is Edm.BINARY:
        value = base64.b64decode(value)
    elif edm is Edm.DOUBLE:
        value = float(value)
    return (edm, value)


__all__ = ["decode_props", "encode_props"]
