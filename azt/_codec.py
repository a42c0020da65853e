"""Compiled per-class encode/decode between entity objects and wire-shaped dicts.

For each entity class (and each ``$select`` projection of it) this module generates, once,
plain Python functions specialised to that class's properties, and caches them:

* ``from_json(d)``: a JSON entity object exactly as the service sends it at minimal
  metadata (``{"odata.etag": ..., "PartitionKey": ..., "Timestamp": "...",
  "views@odata.type": "Edm.Int64", "views": "5", ...}``) -> an entity object. This is the
  read hot path: no intermediate ``TableEntity``, no validation beyond the conversions the
  declared EDM type needs (detailed validation is for user input, on construction).
* ``from_entity(e)``: a dict-shaped ``azt.edm.TableEntity`` (plain Python values) -> object.
* ``to_entity(obj)``: object -> ``TableEntity`` (``None`` omitted, Int64 typed in
  ``edm_types``, Timestamp and ETag never sent as properties).
* ``to_json(obj)``: object -> the JSON body dict with ``@odata.type`` annotations.

Objects are created with ``object.__new__`` and their slots filled through the slot
descriptors, bypassing the validating ``__init__``/``__setattr__``.

The generated source is written by hand here rather than through cattrs' structure hooks:
the conversion of each value depends on the declared EDM type *and* the wire form, which
fits one straight-line function per class better than a chain of per-type hooks, and it is
measured in ``benchmarks/orm_bench.py``.
"""

from __future__ import annotations

import base64
import binascii
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from azt._exceptions import ValidationError
from azt.edm import EdmDateTime, EdmType, TableEntity
from azt.entity import Entity, EntityInfo, Prop, _set_raw_timestamp, entity_info

E = TypeVar("E", bound=Entity)

_b64decode = binascii.a2b_base64
_b64encode = base64.b64encode
_parse_dt = EdmDateTime.parse
_from_dt = EdmDateTime.from_datetime
_UUID = uuid.UUID
_MISSING: Any = object()


def _meta(d: Mapping[str, Any]) -> tuple[Any, str | None]:
    """(Timestamp as text or datetime, ETag) of a decoded row, without forcing the
    TableEntity to parse its Timestamp."""
    if isinstance(d, TableEntity):
        meta = getattr(d, "_meta", None)
        if meta is not None:
            return meta.timestamp, meta.etag
        return getattr(d, "_ts", None), getattr(d, "_etag", None)
    return d.get("Timestamp"), d.get("odata.etag")


def _fast_uuid(v: str) -> uuid.UUID:
    """``uuid.UUID(v)`` for the service's canonical 36-character form, about 4x faster."""
    if len(v) == 36 and v[8] == "-" and v[13] == "-" and v[18] == "-" and v[23] == "-":
        try:
            n = int(v.replace("-", ""), 16)
        except ValueError:
            return _UUID(v)
        u = _new_uuid(_UUID)
        _set_uuid_int(u, n)
        _set_uuid_safe(u, _SAFE_UNKNOWN)
        return u
    return _UUID(v)


_new_uuid = object.__new__
_set_uuid_int = _UUID.__dict__["int"].__set__
_set_uuid_safe = _UUID.__dict__["is_safe"].__set__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown


def _any_dt(v: Any) -> EdmDateTime:
    return _parse_dt(v) if isinstance(v, str) else _from_dt(v)


def _b64(v: bytes) -> str:
    return _b64encode(v).decode("ascii")


def _json_double(v: float) -> Any:
    if math.isfinite(v):
        return v
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")


class MissingPropertyError(ValidationError):
    """A row lacks a property its entity class requires (no default, not Optional).

    Example::

        >>> issubclass(MissingPropertyError, ValidationError)
        True
    """


class EntityCodec(Generic[E]):
    """The compiled functions for one entity class (optionally one projection of it).

    Example::

        >>> codec = codec_for(Movie)
        >>> codec.from_entity({"PartitionKey": "a", "RowKey": "b"}).RowKey
        'b'
    """

    __slots__ = ("cls", "from_entity", "from_json", "info", "select", "to_entity", "to_json")

    cls: type[E]
    info: EntityInfo
    select: frozenset[str] | None
    from_json: Callable[[Mapping[str, Any]], E]
    from_entity: Callable[[Mapping[str, Any]], E]
    to_entity: Callable[[E], TableEntity]
    to_json: Callable[[E], dict[str, Any]]


_CACHE: dict[tuple[type, frozenset[str] | None], EntityCodec[Any]] = {}


def codec_for(cls: type[E], select: frozenset[str] | None = None) -> EntityCodec[E]:
    """The cached codec of ``cls``; ``select`` (wire names) builds a projection decoder,
    which leaves properties outside the projection unset on the objects it makes.

    Example::

        >>> codec_for(Movie) is codec_for(Movie)
        True
    """
    key = (cls, select)
    codec = _CACHE.get(key)
    if codec is None:
        codec = _build(cls, select)
        _CACHE[key] = codec
    return codec


def _slot_setter(cls: type, attr: str) -> Callable[[Any, Any], None]:
    for klass in type.__getattribute__(cls, "__mro__"):
        d = type.__getattribute__(klass, "__dict__")
        if attr in d:
            desc = d[attr]
            setter = desc.__set__
            return setter  # type: ignore[no-any-return]
    raise TypeError(f"{cls.__name__} has no slot {attr!r}")  # pragma: no cover


def _missing(cls_name: str, attr: str, wire: str, d: Mapping[str, Any]) -> None:
    raise MissingPropertyError(
        f"row PartitionKey={d.get('PartitionKey')!r} RowKey={d.get('RowKey')!r} has no "
        f"property {wire!r}, which {cls_name}.{attr} requires (declare it Optional or give "
        "it a default, or map the row to another class with a resolver)"
    )


_JSON_CONV: dict[EdmType, str | None] = {
    EdmType.STRING: None,
    EdmType.INT32: None,
    EdmType.BOOLEAN: None,
    EdmType.INT64: "_int",
    EdmType.DOUBLE: "_float",
    EdmType.DATETIME: "_parse_dt",
    EdmType.GUID: "_fast_uuid",
    EdmType.BINARY: "_b64decode",
}


def _build(cls: type[E], select: frozenset[str] | None) -> EntityCodec[E]:
    info = entity_info(cls)
    ns: dict[str, Any] = {
        "_new": object.__new__,
        "cls": cls,
        "M": _MISSING,
        "_int": int,
        "_float": float,
        "_parse_dt": _parse_dt,
        "_from_dt": _from_dt,
        "_any_dt": _any_dt,
        "_UUID": _UUID,
        "_fast_uuid": _fast_uuid,
        "_b64decode": _b64decode,
        "_b64": _b64,
        "_json_double": _json_double,
        "_missing": _missing,
        "_meta": _meta,
        "TableEntity": TableEntity,
        "EdmDateTime": EdmDateTime,
        "INT64": EdmType.INT64,
        "_MissingPropertyError": MissingPropertyError,
    }
    dec_json = ["def from_json(d):", " o = _new(cls)", " g = d.get"]
    dec_ent = ["def from_entity(d):", " o = _new(cls)", " g = d.get"]
    enc_ent = ["def to_entity(o):", " e = TableEntity()"]
    enc_json = ["def to_json(o):", " e = {}"]
    int64_names: list[str] = []
    for i, p in enumerate(info.props):
        a = p.attr
        s = f"S{i}"
        ns[s] = _slot_setter(cls, a)
        if a == "Timestamp":
            # stored as text, parsed on first read (see azt.entity._LazyTimestamp)
            ns[s] = _set_raw_timestamp
            dec_json += [f" {s}(o, g('Timestamp'))"]
            dec_ent += [" ts, etag = _meta(d)", f" {s}(o, ts)"]
            continue
        if a == "ETag":
            dec_json += [f" {s}(o, g('odata.etag'))"]
            dec_ent += [f" {s}(o, etag)"]
            continue
        w = p.wire
        wr = repr(w)
        selected = select is None or w in select or p.is_key
        if selected:
            # -- decode: value conversion per declared EDM type (+ converter) --------------
            jconv = _JSON_CONV[p.edm]
            conv = p.converter
            if conv is not None:
                ns[f"C{i}"] = conv.from_wire
            jexpr = f"{jconv}(v)" if jconv else "v"
            if p.edm is EdmType.DOUBLE:
                jexpr = "v if v.__class__ is float else _float(v)"
            # TableEntity values are already Python values, except with nometadata reads,
            # where unannotated Int64/DateTime/Guid/Binary arrive as JSON strings.
            eexpr = {
                EdmType.DOUBLE: "v if v.__class__ is float else _float(v)",
                EdmType.DATETIME: "v if v.__class__ is EdmDateTime else _any_dt(v)",
                EdmType.INT64: "v if v.__class__ is int else _int(v)",
                EdmType.GUID: "v if v.__class__ is _UUID else _fast_uuid(v)",
                EdmType.BINARY: "v if v.__class__ is bytes else _b64decode(v)",
            }.get(p.edm, "v")
            if conv is not None:
                jexpr = f"C{i}({jexpr})"
                eexpr = f"C{i}({eexpr})"
            if p.is_key:
                on_missing = [f"  _missing(cls.__name__, {a!r}, {wr}, d)"]
            elif p.optional:
                on_missing = [f"  {s}(o, None)"]
            elif _has_default(p):
                on_missing = [f"  {s}(o, F{i}())"]
                ns[f"F{i}"] = _default_maker(p)
            elif select is not None:
                on_missing = ["  pass"]  # projected and absent: left unset
            else:
                on_missing = [f"  _missing(cls.__name__, {a!r}, {wr}, d)"]
            for lines, expr in ((dec_json, jexpr), (dec_ent, eexpr)):
                if expr == "v" and p.is_key:
                    lines += [f" v = g({wr})", " if v is None:", *on_missing, f" {s}(o, v)"]
                    continue
                lines += [
                    f" v = g({wr})",
                    " if v is None:",
                    *on_missing,
                    " else:",
                    f"  {s}(o, {expr})",
                ]
        # -- encode ----------------------------------------------------------------------
        getter = f"o.{a}"
        enc_lines = [" try:", f"  v = {getter}", " except AttributeError:", "  v = None"]
        if p.converter is not None:
            ns[f"W{i}"] = p.converter.to_wire
            enc_lines += [" if v is not None:", f"  v = W{i}(v)"]
        enc_ent += [*enc_lines, " if v is not None:", f"  e[{wr}] = v"]
        if p.edm is EdmType.INT64:
            int64_names.append(w)
        jv = {
            EdmType.INT64: "str(v)",
            EdmType.DATETIME: "(v if v.__class__ is EdmDateTime else _from_dt(v)).to_wire()",
            EdmType.GUID: "str(v)",
            EdmType.BINARY: "_b64(v)",
            EdmType.DOUBLE: "_json_double(v)",
        }.get(p.edm, "v")
        ann = p.edm in (EdmType.INT64, EdmType.DATETIME, EdmType.GUID, EdmType.BINARY)
        enc_json += [*enc_lines, " if v is not None:"]
        if ann:
            enc_json += [f"  e[{(w + '@odata.type')!r}] = {p.edm.value!r}"]
        elif p.edm is EdmType.DOUBLE:
            enc_json += [f"  e[{(w + '@odata.type')!r}] = 'Edm.Double'"]
        enc_json += [f"  e[{wr}] = {jv}"]
    dec_json.append(" return o")
    dec_ent.append(" return o")
    if int64_names:
        ns["INT64_NAMES"] = tuple(int64_names)
        enc_ent += [
            " t = {n: INT64 for n in INT64_NAMES if n in e}",
            " if t:",
            "  e.edm_types = t",
        ]
    enc_ent.append(" return e")
    enc_json.append(" return e")
    src = "\n".join([*dec_json, *dec_ent, *enc_ent, *enc_json]) + "\n"
    code = compile(src, f"<azt codec {cls.__qualname__}>", "exec")
    exec(code, ns)
    codec: EntityCodec[E] = EntityCodec()
    codec.cls = cls
    codec.info = info
    codec.select = select
    codec.from_json = ns["from_json"]
    codec.from_entity = ns["from_entity"]
    codec.to_entity = ns["to_entity"]
    codec.to_json = ns["to_json"]
    return codec


def _has_default(p: Prop[Any]) -> bool:
    import attrs

    a = getattr(attrs.fields(p.owner), p.attr, None)
    return a is not None and a.default is not attrs.NOTHING


def _default_maker(p: Prop[Any]) -> Callable[[], Any]:
    import attrs

    a = getattr(attrs.fields(p.owner), p.attr)
    d = a.default
    if isinstance(d, attrs.Factory):  # type: ignore[arg-type]
        f: Callable[[], Any] = d.factory
        return f
    return lambda: d
