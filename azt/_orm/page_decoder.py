"""The query path's page decoder: JSON rows straight into entity objects, one generated
function per class, projection and row shape (``EntityCodec.decode_rows`` calls it first and
falls back to the general path, ``from_json``, for a page it leaves).

Per row it costs about what a dict costs: the values are read by position from one
unpacking of ``row.values()``, converted inline (the service's DateTime texts of every
length included, :data:`DATETIME_INLINE`) and stored in the object's slots by plain
attribute stores on a layout twin of the class (``codec_hooks.layout_twin``), whose class is then
set to the entity class.

Example::

    >>> page_decoder(Movie, entity_info(Movie), None)([{"PartitionKey": "a", "RowKey": "b"}])[0]
    Movie(PartitionKey='a', RowKey='b', ...)
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

import attrs

from azt._core.wire import decode_guid
from azt._edm.datetime import EdmDateTime
from azt._edm.types import EdmType
from azt._orm.codec_hooks import (
    _ANN,
    _MISSING,
    _READS,
    _known,
    _partial_markers,
    _plain_store,
    _slot_setter,
    _struct_hook,
    layout_twin,
)
from azt._orm.columns import EntityInfo

E = TypeVar("E")

__all__ = ["DATETIME_INLINE", "INLINE_NAMES", "page_decoder"]


class _Slow(Exception):
    """Raised by a generated page decoder on anything but the plain case; the page is then
    decoded by the general path (``from_json``), which gives the result or the error."""


_fromiso = datetime.fromisoformat
# the packed fields of a datetime, as pickle takes them: datetime.__new__(cls, state, tz)
_state = datetime.__reduce__
_unpack = datetime.__new__
_EDT = EdmDateTime
_UTC = UTC
_a2b = binascii.a2b_base64
_parse_dt = EdmDateTime.parse

#: The statements turning ``v``, a DateTime's JSON value (not None), into its
#: ``EdmDateTime``: :meth:`EdmDateTime.parse`'s fast path written out, so that the service's
#: forms cost no call: ``YYYY-MM-DDTHH:MM:SSZ`` and ``YYYY-MM-DDTHH:MM:SS.f{1,7}Z`` (Azure and
#: the stub trim trailing zeros of the fraction, and the whole fraction when it is zero; the
#: Cosmos DB Table API sends seven digits), ASCII only, by the same tests in the same order;
#: the fields read by ``datetime.fromisoformat`` (which truncates past six digits; a
#: malformed field, a day out of range raise ``ValueError``), the value built from their
#: packed state, the seventh digit kept as the hundreds of nanoseconds. Anything else
#: (offsets, no zone, a comma, a non-ASCII digit, a field out of range, eight digits, a
#: non-string) goes to ``EdmDateTime.parse`` itself, which gives the value or the error.
#: Locals: ``dn``, ``df``, ``dw``. ``tests/orm/test_datetime_inline.py`` holds it to
#: ``parse`` text by text.
DATETIME_INLINE: tuple[str, ...] = (
    "if v.__class__ is _str:",
    "    dn = len(v)",
    "    df = v[4:20:3]",
    "    if ((dn == 20 and df == '--T::Z') or (21 < dn < 29 and df == '--T::.'"
    " and v[dn - 1] == 'Z' and v[20:dn - 1].isdigit())) and v.isascii():",
    "        try:",
    "            dw = _unpack(_EDT, _state(_fromiso(v))[1][0], _UTC)",
    "        except ValueError:",
    "            v = _dt(v)",
    "        else:",
    "            dw._hns = ord(v[26]) - 48 if dn == 28 else 0",
    "            v = dw",
    "    else:",
    "        v = _dt(v)",
    "else:",
    "    v = _dt(v)",
)

#: what the statements above (and ``_INLINE``'s) name: pass it as the generated code's
#: namespace (``tests/orm/test_datetime_inline.py`` runs them alone with it)
INLINE_NAMES: dict[str, Any] = {
    "_str": str,
    "_int": int,
    "_bool": bool,
    "_float": float,
    "_dt": _parse_dt,
    "_fromiso": _fromiso,
    "_state": _state,
    "_unpack": _unpack,
    "_EDT": _EDT,
    "_UTC": _UTC,
    "_guid": decode_guid,
    "_a2b": _a2b,
    "_Slow": _Slow,
}

#: per EDM type without a Converter: the statements turning ``v`` (a JSON value, not None)
#: into the property's value, raising on anything the general path might read otherwise
_INLINE: dict[EdmType, tuple[str, ...]] = {
    EdmType.STRING: ("if v.__class__ is not _str: raise _Slow",),
    EdmType.INT32: ("if v.__class__ is not _int: raise _Slow",),
    EdmType.BOOLEAN: ("if v.__class__ is not _bool: raise _Slow",),
    EdmType.INT64: (
        "c = v.__class__",
        "if c is _str: v = _int(v)",
        "elif c is not _int: raise _Slow",
    ),
    EdmType.DOUBLE: (
        "c = v.__class__",
        "if c is not _float:",
        "    if c is _int or c is _str: v = _float(v)",
        "    else: raise _Slow",
    ),
    EdmType.DATETIME: DATETIME_INLINE,
    EdmType.GUID: ("v = _guid(v)",),
    EdmType.BINARY: ("v = _a2b(v, strict_mode=True)",),
}


# --------------------------------------------------------------------------------------------
# The page decoder
# --------------------------------------------------------------------------------------------


def page_decoder(
    cls: type[E], info: EntityInfo, select: frozenset[str] | None
) -> Callable[[list[Any]], list[E]]:
    """The query path's decoder of a page of JSON rows, which also records on each object
    what its row held beyond it (``_partial_markers``' ``mark_one``): per class and
    projection, one generated function per row shape (its member names, in order) reads
    each row's values by position (one unpacking of ``row.values()``, no lookups) straight
    into the slots, while the rows keep that shape. A shape's members are known when its
    function is generated, so an annotation or a property the shape lacks costs nothing per
    row, and a shape with no member the class has no place for needs no partial-read check
    per row. It handles the plain case only (values of their declared types, annotations
    the declared types read, no nulls, required properties present) and raises on anything
    else, leaving that page to the general path, so that it never reads a row otherwise
    than ``from_json`` does.

    Example::

        >>> rows = [{"PartitionKey": "a", "RowKey": "b", "rating": 4}]
        >>> page_decoder(Movie, entity_info(Movie), None)(rows)[0].rating
        4.0
    """
    shapes: dict[tuple[Any, ...], Callable[[list[Any], int, list[Any]], int]] = {}
    mark_one, _ = _partial_markers(cls, info, select, "json")
    known = _known(info, select, "json")
    twin = layout_twin(cls)

    def decode_page(rows: list[Any]) -> list[E]:
        out: list[E] = []
        i, n = 0, len(rows)
        while i < n:
            row = rows[i]
            if row.__class__ is not dict:
                raise _Slow
            keys = tuple(row)
            run = shapes.get(keys)
            if run is None:
                if len(shapes) >= _SHAPES_MAX:
                    shapes.clear()
                run = shapes[keys] = _shape_decoder(cls, info, select, keys, known, mark_one, twin)
            i = run(rows, i, out)
        return out

    return decode_page


#: row shapes a class's page decoder keeps functions for (then it starts again)
_SHAPES_MAX = 64


def _shape_decoder(
    cls: type[E],
    info: EntityInfo,
    select: frozenset[str] | None,
    keys: tuple[Any, ...],
    known: frozenset[str],
    mark_one: Callable[[Any, Mapping[str, Any]], None],
    twin: type | None,
) -> Callable[[list[Any], int, list[Any]], int]:
    """The generated function decoding ``rows[i:]`` into ``out`` while they have the
    shape ``keys`` (``rows[i]`` has it); returns the index of the first row it left.
    With a layout ``twin``, each object is made as the twin's, filled by stores, and then
    given its class."""
    fields = {a.name: a for a in attrs.fields(cast(Any, cls))}
    at = {k: j for j, k in enumerate(keys)}
    ns: dict[str, Any] = {
        **INLINE_NAMES,
        "_new": object.__new__,
        "_cls": cls,
        "_TW": cls if twin is None else twin,
        "_dict": dict,
        "_SHAPE": keys,
        "_mark": mark_one,
    }
    unpack = "".join(f"v{j}, " for j in range(len(keys)))
    body = [
        "def run(rows, i, out):",
        "    append = out.append",
        "    n = len(rows)",
        "    row = rows[i]",
        "    while True:",
        f"        ({unpack}) = row.values()" if keys else "        pass",
        "        o = _new(_TW)",
    ]
    ind = " " * 8

    def store(i: int, a: str, value: str) -> str:
        if twin is not None and _plain_store(cls, twin, a):
            return f"o.{a} = {value}"
        ns[f"_S{i}"] = _slot_setter(cls, a)
        return f"_S{i}(o, {value})"

    for i, p in enumerate(info.props):
        a = p.attr
        default = fields[a].default
        if a in ("Timestamp", "ETag"):
            wire = "Timestamp" if a == "Timestamp" else "odata.etag"
            if wire in at:
                body.append(ind + store(i, a, f"v{at[wire]}"))
            else:
                ns[f"_D{i}"] = default
                body.append(ind + store(i, a, f"_D{i}"))
            continue
        ann = p.wire + _ANN
        if not p.is_key and ann in at:  # every declared property, as _json_type_check does
            ok = " and ".join(f"t != {t.value!r}" for t in sorted(_READS[p.edm]))
            body += [
                f"{ind}t = v{at[ann]}",
                f"{ind}if t is not None and {ok}: raise _Slow",
            ]
        if not (select is None or p.wire in select or p.is_key):
            continue  # outside the projection: left unset
        if default is attrs.NOTHING and p.optional:
            default = None
        elif default is attrs.NOTHING and select is not None and not p.is_key:
            default = _MISSING
        if default is attrs.NOTHING:
            absent = ["raise _Slow"]  # the general path names the row and property
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            ns[f"_F{i}"] = default.factory
            absent = [store(i, a, f"_F{i}()")]
        elif default is _MISSING:
            absent = ["pass"]  # projected but absent: left unset
        else:
            ns[f"_D{i}"] = default
            absent = [store(i, a, f"_D{i}")]
        if p.wire not in at:
            body += [f"{ind}{line}" for line in absent]
            continue
        if p.converter is None:
            convert = list(_INLINE[p.edm])
        else:
            ns[f"_H{i}"] = _struct_hook(p, "json")
            convert = [f"v = _H{i}(v, None)"]
        body += [f"{ind}v = v{at[p.wire]}", f"{ind}if v is None:"]
        body += [f"{ind}    {line}" for line in absent]
        body.append(f"{ind}else:")
        body += [f"{ind}    {line}" for line in convert]
        body.append(f"{ind}    {store(i, a, 'v')}")
    if twin is not None:
        body.append(f"{ind}o.__class__ = _cls")
    body.append(f"{ind}append(o)")
    if select is not None or not known.issuperset(keys):
        body.append(f"{ind}_mark(o, row)")  # what the row had beyond the object
    body += [
        f"{ind}i += 1",
        f"{ind}if i == n: return i",
        f"{ind}row = rows[i]",
        f"{ind}if row.__class__ is not _dict or tuple(row) != _SHAPE: return i",
    ]
    src = "\n".join(body) + "\n"
    exec(compile(src, f"<azt page decoder {cls.__qualname__}>", "exec"), ns)
    fn: Callable[[list[Any], int, list[Any]], int] = ns["run"]
    return fn
