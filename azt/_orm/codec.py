# Over 800 lines: value hooks and per-class code generation share one set of type tables.
"""Per-class encode/decode between entity objects and wire-shaped dicts, generated once
per class (and per ``$select`` projection) with ``cattrs.gen`` and cached:
``from_json`` / ``decode_rows`` (the service's JSON rows, any metadata level, to objects),
``from_entity`` (a ``TableEntity``), ``to_entity`` and ``to_json``.

A JSON ``null`` (the service never sends one) counts as an absent property: default, None
or :class:`MissingPropertyError`. A value of another stored EDM type than the declared one
(bar the lossless widenings Int32 -> Int64 / Double) is refused with
:class:`azt.WireDecodeError` naming the row, the property and both types.

Example::

    >>> codec_for(Movie).decode_rows([{"PartitionKey": "a", "RowKey": "b", "rating": 4}])[0].rating
    4.0
"""

from __future__ import annotations

import base64
import binascii
import math
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, Literal, Optional, TypeVar, cast

import attrs
import cattrs
from cattrs.fns import identity
from cattrs.gen import (
    make_dict_structure_fn_from_attrs,
    make_dict_unstructure_fn_from_attrs,
    override,
)

from azt._core.wire import WireDecodeError, decode_base64, decode_guid
from azt._core.wire.writers import declared_writer
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import PARTIAL_ATTR, PartialRead, SharedEdmTypes, TableEntity
from azt._edm.types import EdmType
from azt._errors import ValidationError
from azt._orm.columns import EntityInfo, LazyTimestamp, Prop, entity_info

E = TypeVar("E")

__all__ = [
    "ANNOTATED",
    "EntityCodec",
    "MissingPropertyError",
    "codec_for",
    "converter",
    "json_hook",
    "make_converter",
    "wire_type",
]

_b64decode = decode_base64  # strict: the wire codecs' own
_b64encode = base64.b64encode
_parse_dt = EdmDateTime.parse
_from_dt = EdmDateTime.from_datetime
_UUID = uuid.UUID
_float = float
_int = int
#: read-path constructor argument default: "absent from the row"
_MISSING: Any = object()
_ANN = "@odata.type"


class MissingPropertyError(ValidationError):
    """A row lacks a property its entity class requires (no default, not Optional).

    Example::

        >>> issubclass(MissingPropertyError, ValidationError)
        True
    """


# --------------------------------------------------------------------------------------------
# Value conversions (the hooks)
# --------------------------------------------------------------------------------------------


def _meta(d: Mapping[str, Any]) -> tuple[Any, str | None, PartialRead | None]:
    """(Timestamp as text or datetime, ETag, what the row itself lacks) of a decoded row,
    without forcing the TableEntity to parse its Timestamp. A TableEntity with a
    :class:`PartialRead` record always has its metadata built (see ``set_partial``), so
    page rows, which have not, cost no lookup of the record."""
    if isinstance(d, TableEntity):
        meta = getattr(d, "_meta", None)
        if meta is not None:
            return meta.timestamp, meta.etag, getattr(d, PARTIAL_ATTR, None)
        return getattr(d, "_ts", None), getattr(d, "_etag", None), None
    return d.get("Timestamp"), d.get("odata.etag"), None


_fast_uuid = decode_guid  # strict canonical form: the wire codecs' own


# Structure hooks take (value, type) as cattrs calls them. JSON form: the value as JSON
# carries it. Value form: a TableEntity's value, already a Python value, except with
# nometadata reads, where unannotated Int64/DateTime/Guid/Binary arrive as JSON strings.


def _not_a(edm: EdmType, v: Any) -> Any:
    raise TypeError(f"a {type(v).__name__} is not an {edm} value")


def _json_int64(v: Any, _: Any) -> int:
    # Int64 travels as a string; an Int32 stored in the column is a JSON number. Never
    # truncate a Double or read a Boolean as a number.
    c = v.__class__
    return _int(v) if c is str or c is int else _not_a(EdmType.INT64, v)


def _json_double(v: Any, _: Any) -> float:
    # finite doubles are JSON numbers (ints when integral); NaN/Infinity are strings
    c = v.__class__
    if c is float:
        return v  # type: ignore[no-any-return]
    return _float(v) if c is not bool else _not_a(EdmType.DOUBLE, v)


def _json_datetime(v: Any, _: Any) -> EdmDateTime:
    return _parse_dt(v)


def _json_guid(v: Any, _: Any) -> uuid.UUID:
    return _fast_uuid(v)


def _json_binary(v: Any, _: Any) -> bytes:
    return _b64decode(v)


def _value_int64(v: Any, _: Any) -> int:
    c = v.__class__
    if c is int:
        return v  # type: ignore[no-any-return]
    return _int(v) if c is str else _not_a(EdmType.INT64, v)


def _value_datetime(v: Any, _: Any) -> EdmDateTime:
    if v.__class__ is EdmDateTime:
        return v
    if isinstance(v, str):
        return _parse_dt(v)
    return _from_dt(v) if isinstance(v, datetime) else _not_a(EdmType.DATETIME, v)


def _value_guid(v: Any, _: Any) -> uuid.UUID:
    if v.__class__ is _UUID:
        return v
    return _fast_uuid(v) if isinstance(v, str) else _not_a(EdmType.GUID, v)


def _value_binary(v: Any, _: Any) -> bytes:
    c = v.__class__
    if c is bytes:
        return v  # type: ignore[no-any-return]
    if c is str:
        return _b64decode(v)
    return bytes(v) if isinstance(v, bytes | bytearray | memoryview) else _not_a(EdmType.BINARY, v)


def _unstructure_datetime(v: datetime) -> str:
    return (v if v.__class__ is EdmDateTime else _from_dt(v)).to_wire()


def _unstructure_binary(v: bytes) -> str:
    return _b64encode(v).decode("ascii")


def _unstructure_double(v: float) -> Any:
    if math.isfinite(v):
        return v
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")


# Optional properties: the same, with None passed through (it is dropped afterwards); one
# function each rather than a None check wrapped around the hook, to save a call per value.


def _unstructure_text_opt(v: Any) -> str | None:
    return None if v is None else str(v)


def _unstructure_datetime_opt(v: datetime | None) -> str | None:
    if v is None:
        return None
    return (v if v.__class__ is EdmDateTime else _from_dt(v)).to_wire()


def _unstructure_binary_opt(v: bytes | None) -> str | None:
    return None if v is None else _b64encode(v).decode("ascii")


def _unstructure_double_opt(v: float | None) -> Any:
    if v is None or math.isfinite(v):
        return v
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")


Form = Literal["json", "value"]

_PY_TYPE: dict[EdmType, type] = {
    EdmType.STRING: str,
    EdmType.INT32: int,
    EdmType.INT64: int,
    EdmType.DOUBLE: float,
    EdmType.BOOLEAN: bool,
    EdmType.DATETIME: datetime,
    EdmType.GUID: uuid.UUID,
    EdmType.BINARY: bytes,
}
#: the same Python value on both sides: no hook, the generated code copies the value
_PASSTHROUGH = frozenset({EdmType.STRING, EdmType.INT32, EdmType.BOOLEAN})
#: properties whose JSON value is annotated with ``@odata.type`` when written
_ANNOTATED = frozenset(
    {EdmType.INT64, EdmType.DOUBLE, EdmType.DATETIME, EdmType.GUID, EdmType.BINARY}
)
ANNOTATED = _ANNOTATED

_STRUCTURE: dict[tuple[EdmType, Form], Callable[[Any, Any], Any]] = {
    (EdmType.INT64, "json"): _json_int64,
    (EdmType.DOUBLE, "json"): _json_double,
    (EdmType.DATETIME, "json"): _json_datetime,
    (EdmType.GUID, "json"): _json_guid,
    (EdmType.BINARY, "json"): _json_binary,
    (EdmType.INT64, "value"): _value_int64,
    (EdmType.DOUBLE, "value"): _json_double,
    (EdmType.DATETIME, "value"): _value_datetime,
    (EdmType.GUID, "value"): _value_guid,
    (EdmType.BINARY, "value"): _value_binary,
}
_UNSTRUCTURE: dict[tuple[EdmType, Form], Callable[[Any], Any]] = {
    (EdmType.INT64, "json"): str,
    (EdmType.DOUBLE, "json"): _unstructure_double,
    (EdmType.DATETIME, "json"): _unstructure_datetime,
    (EdmType.GUID, "json"): str,
    (EdmType.BINARY, "json"): _unstructure_binary,
}
_UNSTRUCTURE_OPTIONAL: dict[tuple[EdmType, Form], Callable[[Any], Any]] = {
    (EdmType.INT64, "json"): _unstructure_text_opt,
    (EdmType.DOUBLE, "json"): _unstructure_double_opt,
    (EdmType.DATETIME, "json"): _unstructure_datetime_opt,
    (EdmType.GUID, "json"): _unstructure_text_opt,
    (EdmType.BINARY, "json"): _unstructure_binary_opt,
}


#: declared EDM type -> the stored types it reads: its own, and the lossless widenings
_READS: dict[EdmType, frozenset[EdmType]] = {
    edm: frozenset({edm} | ({EdmType.INT32} if edm in (EdmType.INT64, EdmType.DOUBLE) else set()))
    for edm in EdmType
}


def _stored_as(cls: type, attr: str, stored: Any, row: Mapping[str, Any]) -> None:
    """Refuse a value whose stored EDM type (annotated in JSON, recorded in a TableEntity)
    the property's declared type does not read."""
    p = entity_info(cls).by_attr[attr]
    hint = " (declare it Prop[Int64])" if p.edm is EdmType.INT32 and stored == "Edm.Int64" else ""
    raise WireDecodeError(
        f"row PartitionKey={row.get('PartitionKey')!r} RowKey={row.get('RowKey')!r}: property "
        f"{p.wire!r} is stored as {getattr(stored, 'value', stored)}, but {cls.__name__}.{attr} "
        f"is {p.edm}{hint}; map the row to another class with a resolver if it differs"
    )


def _json_type_check(info: EntityInfo) -> Callable[[Mapping[str, Any]], None]:
    """A generated function refusing a JSON row whose ``@odata.type`` annotations name a
    stored type a declared property does not read (straight-line code: one ``get`` per
    property; rows without annotations, as at nometadata, pass)."""
    ns: dict[str, Any] = {"_bad": _stored_as, "_cls": info.cls}
    body = ["def check(row):", "    get = row.get"]
    for p in info.data_props:
        if p.is_key:
            continue
        ok = " and ".join(f"a != {t.value!r}" for t in sorted(_READS[p.edm]))
        body += [
            f"    a = get({p.wire + _ANN!r})",
            f"    if a is not None and {ok}:",
            f"        _bad(_cls, {p.attr!r}, a, row)",
        ]
    src = "\n".join(body) + "\n"
    exec(compile(src, f"<azt type check {info.cls.__qualname__}>", "exec"), ns)
    fn: Callable[[Mapping[str, Any]], None] = ns["check"]
    return fn


def wire_type(edm: EdmType, form: Form) -> Any:
    """The type the converter's hooks for ``edm`` in wire ``form`` are registered under:
    ``"json"`` is the value as a JSON body carries it, ``"value"`` a ``TableEntity`` value.

    Example::

        >>> t = wire_type(EdmType.INT64, "json")
        >>> converter.get_structure_hook(t)("12345678901", t)
        12345678901
        >>> converter.get_unstructure_hook(t)(12345678901)
        '12345678901'
    """
    return Annotated[_PY_TYPE[edm], edm, form]


# One cattrs.Converter, detailed validation off, with a structure and an unstructure hook per
# EDM type and wire form, keyed by wire_type(); String, Int32 and Boolean values are the same
# on both sides and get no hook.
def make_converter() -> cattrs.Converter:
    """Build the configured converter: detailed validation off (the read path), a
    structure and an unstructure hook per EDM type and wire form (see :func:`wire_type`).

    Example::

        >>> c = make_converter()
        >>> t = wire_type(EdmType.GUID, "json")
        >>> c.get_structure_hook(t)("c9da6455-213d-42c9-9a79-3e9149a57833", t).version
        4
    """
    conv = cattrs.Converter(detailed_validation=False, prefer_attrib_converters=True)
    for (edm, form), st in _STRUCTURE.items():
        conv.register_structure_hook_func(_is(wire_type(edm, form)), st)
    for (edm, form), un in _UNSTRUCTURE.items():
        conv.register_unstructure_hook_func(_is(wire_type(edm, form)), un)
    for (edm, form), un in _UNSTRUCTURE_OPTIONAL.items():
        conv.register_unstructure_hook_func(_is(Optional[wire_type(edm, form)]), un)  # noqa: UP045
    return conv


def _is(key: Any) -> Callable[[Any], bool]:
    """A cattrs dispatch predicate matching exactly one (``Annotated``) type."""

    def predicate(t: Any) -> bool:
        return bool(t == key)

    return predicate


#: The converter every codec is generated with.
converter: cattrs.Converter = make_converter()


# --------------------------------------------------------------------------------------------
# Per-class codecs
# --------------------------------------------------------------------------------------------


class EntityCodec(Generic[E]):
    """The compiled functions for one entity class (optionally one projection of it).

    Example::

        >>> codec = codec_for(Movie)
        >>> codec.from_entity({"PartitionKey": "a", "RowKey": "b"}).RowKey
        'b'
    """

    __slots__ = (
        "_check_json",
        "_decode_page",
        "_from_json_fast",
        "_mark_json",
        "_mark_rows",
        "cls",
        "from_entity",
        "from_json",
        "info",
        "select",
        "to_entity",
        "to_json",
    )

    cls: type[E]
    info: EntityInfo
    select: frozenset[str] | None
    from_json: Callable[[Mapping[str, Any]], E]
    from_entity: Callable[[Mapping[str, Any]], E]
    to_entity: Callable[[E], TableEntity]
    to_json: Callable[[E], dict[str, Any]]
    _from_json_fast: Callable[[Mapping[str, Any]], E]
    _check_json: Callable[[Mapping[str, Any]], None]
    _decode_page: Callable[[list[Any]], list[E]]
    #: record on one object (or, ``_mark_rows``, on a page's objects) what the row had
    #: that the object does not hold: see ``_partial_markers``
    _mark_json: Callable[[Any, Mapping[str, Any]], None]
    _mark_rows: Callable[[list[Any], list[Any]], None]

    # The second JSON decoder beside azt._core.wire.json (JSON -> TableEntity, for untyped
    # dicts): this one converts by the declared EDM types straight into objects.
    def decode_rows(self, rows: list[Any]) -> list[E]:
        """Decode the JSON entity objects of one query page (any metadata level); a
        malformed row raises :class:`azt.WireDecodeError` naming the row and property.

        Example::

            >>> codec_for(Movie).decode_rows([{"PartitionKey": "a", "RowKey": "b"}])[0].RowKey
            'b'
        """
        try:
            return self._decode_page(rows)  # (which marks what rows had beyond objects)
        except Exception:
            pass
        return self._decode_general(rows)

    def _decode_general(self, rows: list[Any]) -> list[E]:
        """``decode_rows`` of a page the generated decoder left: the annotations checked
        first, then every row through the general functions (nulls as absent, errors
        named)."""
        dec = self._from_json_fast
        check = self._check_json
        try:
            for r in rows:
                check(r)
            out = [dec(r) for r in rows]
        except WireDecodeError:
            raise
        except _DECODE_ERRORS:
            pass
        else:
            self._mark_rows(rows, out)
            return out
        # the slow path of a bad page: row by row, nulls as absent, errors named
        out = []
        for row in rows:
            if type(row) is not dict:
                raise WireDecodeError(
                    f"an entity must be a JSON object, got {type(row).__name__}"
                ) from None
            out.append(self.from_json(row))  # marks what the row had beyond the object
        return out


_DECODE_ERRORS = (ValueError, TypeError, AttributeError, KeyError, binascii.Error)


def _without_nulls(
    fn: Callable[[Mapping[str, Any]], E], d: Mapping[str, Any], exc: BaseException
) -> E:
    """Decode again with JSON nulls treated as absent (the service never sends null; other
    writers might), or re-raise ``exc`` if there is no null to blame."""
    if (
        isinstance(exc, MissingPropertyError)
        or not isinstance(d, Mapping)
        or None not in d.values()
    ):
        raise exc
    return fn({k: v for k, v in d.items() if v is not None})


def _retry_without_nulls(
    info: EntityInfo,
    fn: Callable[[Mapping[str, Any]], E],
    d: Mapping[str, Any],
    exc: BaseException,
    form: Form,
) -> E:
    """The slow path of a row that failed to decode: again without its nulls, else a
    :class:`WireDecodeError` naming the property (missing properties stay
    :class:`MissingPropertyError`)."""
    try:
        return _without_nulls(fn, d, exc)
    except MissingPropertyError:
        raise
    except _DECODE_ERRORS as again:
        if not isinstance(d, Mapping):
            raise
        raise _diagnose(info, d, again, form) from None


_CACHE: dict[tuple[type, frozenset[str] | None], EntityCodec[Any]] = {}
#: the codecs of whole reads and writes (``select`` None) by class alone: what every write
#: of an entity object asks for, without building the key tuple
_PLAIN: dict[type, EntityCodec[Any]] = {}


def codec_for(cls: type[E], select: frozenset[str] | None = None) -> EntityCodec[E]:
    """The cached codec of ``cls``; ``select`` (wire names) builds a projection decoder,
    which leaves properties outside the projection unset on the objects it makes.

    Example::

        >>> codec_for(Movie) is codec_for(Movie)
        True
    """
    if select is None:
        codec = _PLAIN.get(cls)
        if codec is not None:
            return codec
    key = (cls, select)
    codec = _CACHE.get(key)
    if codec is None:
        codec = _build(cls, select)
        if codec.info.evolution is not None:
            codec = _evolving(codec)
        _CACHE[key] = codec
    if select is None:
        _PLAIN[cls] = codec
    return codec


def json_hook(p: Prop[Any]) -> Callable[[Any], Any]:
    """A property's value as a JSON body carries it (its unstructure hook; ``None`` kept).

    Example::

        >>> json_hook(entity_info(Movie).by_attr["rating"])(float("nan"))
        'NaN'
    """
    return _unstruct_hook(p, "json")


class _EvolvingCodec(EntityCodec[E]):
    """The codec of a class with ``Meta.evolution``: each row is brought to the current
    shape (azt._orm.evolution) before the generated decoders read it, and every write
    carries the shape marker. Classes without an evolution never meet this type."""

    __slots__ = ()

    def decode_rows(self, rows: list[Any]) -> list[E]:
        up = self.info.evolution.upgrade_json  # type: ignore[union-attr]
        return super().decode_rows([up(r) if type(r) is dict else r for r in rows])


def _evolving(plain: EntityCodec[E]) -> EntityCodec[E]:
    evo = plain.info.evolution
    assert evo is not None
    codec: EntityCodec[E] = _EvolvingCodec()
    for name in EntityCodec.__slots__:
        setattr(codec, name, getattr(plain, name))
    up_json, up_value = evo.upgrade_json, evo.upgrade_value
    from_json, from_entity = plain.from_json, plain.from_entity
    to_entity, to_json = plain.to_entity, plain.to_json
    codec.from_json = lambda d: from_json(up_json(d))
    codec.from_entity = lambda d: from_entity(up_value(d))
    marker, version = evo.marker, evo.version
    if marker is not None:

        def marked_entity(obj: E) -> TableEntity:
            e = to_entity(obj)
            e[marker] = version
            return e

        def marked_json(obj: E) -> dict[str, Any]:
            e = to_json(obj)
            e[marker] = version
            return e

        codec.to_entity = marked_entity
        codec.to_json = marked_json
    return codec


def _slot_setter(cls: type, attr: str) -> Callable[[Any, Any], None]:
    for klass in type.__getattribute__(cls, "__mro__"):
        d = type.__getattribute__(klass, "__dict__")
        if attr in d:
            found = d[attr]
            if isinstance(found, LazyTimestamp):
                found = found.slot  # the service's text goes in raw, parsed on first read
            setter = found.__set__
            return setter  # type: ignore[no-any-return]
    raise TypeError(f"{cls.__name__} has no slot {attr!r}")  # pragma: no cover


def _missing(cls_name: str, attr: str, wire: str, pk: Any, rk: Any) -> None:
    raise MissingPropertyError(
        f"row PartitionKey={pk!r} RowKey={rk!r} has no property {wire!r}, which "
        f"{cls_name}.{attr} requires (declare it Optional or give it a default, or map the "
        "row to another class with a resolver)"
    )


def _struct_hook(p: Prop[Any], form: Form) -> Callable[[Any, Any], Any] | None:
    """The structure hook of one property: its EDM type's hook, then its Converter."""
    hook = None
    if p.edm not in _PASSTHROUGH:
        hook = converter.get_structure_hook(wire_type(p.edm, form))
    conv = p.converter
    if conv is None:
        return hook
    from_wire = conv.from_wire
    if hook is None:
        return lambda v, _t: from_wire(v)
    edm_hook = hook
    return lambda v, t: from_wire(edm_hook(v, t))


def _unstruct_hook(p: Prop[Any], form: Form) -> Callable[[Any], Any]:
    """The unstructure hook of one property: its Converter, then its EDM type's hook;
    ``None`` passes through (it is dropped afterwards)."""
    hook: Callable[[Any], Any] = identity
    conv = p.converter
    if p.edm not in _PASSTHROUGH and (p.edm, form) in _UNSTRUCTURE:
        if p.optional and conv is None:
            return converter.get_unstructure_hook(Optional[wire_type(p.edm, form)])  # noqa: UP045
        hook = converter.get_unstructure_hook(wire_type(p.edm, form))
    if conv is not None:
        to_wire = conv.to_wire
        if hook is identity:
            hook = to_wire
        else:
            edm_hook = hook
            hook = lambda v: edm_hook(to_wire(v))  # noqa: E731
    if p.optional and hook is not identity:
        inner = hook
        hook = lambda v: None if v is None else inner(v)  # noqa: E731
    return hook


def _wrong_type(cls: type, attr: str, exact: type, v: Any) -> Any:
    """The slow path of a value whose class is not exactly its property's: a subclass is
    kept (an ``IntEnum`` handed to ``from_entity``, say), anything else refused."""
    if isinstance(v, exact) and not (exact is int and isinstance(v, bool)):
        return v
    p = entity_info(cls).by_attr[attr]
    raise TypeError(
        f"{cls.__name__}.{attr} ({p.wire!r}) is {p.edm}, the row has {type(v).__name__} {v!r}"
    )


def _constructor(
    cls: type, fields: list[tuple[Prop[Any], Any, type | None]], kind: str
) -> Callable[..., Any]:
    """The read path's constructor: keyword arguments straight into the slots.

    ``fields`` is (property, default, exact) where default is ``attrs.NOTHING`` (required:
    a missing value raises :class:`MissingPropertyError`), an ``attrs.Factory``,
    ``_MISSING`` (left unset when absent) or a value, and ``exact`` is the class a value
    without a hook (String, Int32, Boolean) must have: one ``__class__`` test, so that a
    column stored with another type is refused rather than put in a typed slot. For such
    values a null counts as absent; values with a hook refuse a null, and the row is then
    decoded again without its nulls.
    """
    # Parameter names are the property names; every other name starts with "_", which
    # property names cannot.
    ns: dict[str, Any] = {
        "_new": object.__new__,
        "_cls": cls,
        "_M": _MISSING,
        "_miss": _missing,
        "_wrong": _wrong_type,
    }
    params: list[str] = []
    body = ["    _o = _new(_cls)"]
    # the keys' parameters (their Python names), for messages about the other properties
    key_attr = {p.wire: p.attr for p, _, _ in fields if p.is_key}
    pk_attr, rk_attr = key_attr.get("PartitionKey"), key_attr.get("RowKey")
    for i, (p, default, exact) in enumerate(fields):
        a = p.attr
        s = f"_S{i}"
        ns[s] = _slot_setter(cls, a)
        t = f"_T{i}"
        ns[t] = exact
        wrong = f"_wrong(_cls, {a!r}, {t}, {a})"
        if default is attrs.NOTHING:
            params.append(f"{a}=_M")
            pk = pk_attr if pk_attr is not None and p.wire != "PartitionKey" else "None"
            rk = rk_attr if rk_attr is not None and not p.is_key else "None"
            body += [
                f"    if {a} is _M or {a} is None:",
                f"        _miss(_cls.__name__, {a!r}, {p.wire!r}, {pk}, {rk})",
            ]
            if exact is not None:
                body += [f"    if {a}.__class__ is not {t}:", f"        {a} = {wrong}"]
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            ns[f"_F{i}"] = default.factory
            params.append(f"{a}=_M")
            if exact is not None:
                body += [
                    f"    if {a}.__class__ is not {t}:",
                    f"        {a} = _F{i}() if {a} is _M or {a} is None else {wrong}",
                ]
            else:
                body += [f"    if {a} is _M:", f"        {a} = _F{i}()"]
        elif default is _MISSING:
            params.append(f"{a}=_M")
            if exact is not None:
                body += [
                    f"    if {a} is not _M and {a} is not None:",
                    f"        if {a}.__class__ is not {t}:",
                    f"            {a} = {wrong}",
                    f"        {s}(_o, {a})",
                ]
            else:
                body += [f"    if {a} is not _M:", f"        {s}(_o, {a})"]
            continue
        else:
            ns[f"_D{i}"] = default
            params.append(f"{a}=_D{i}")
            if exact is not None and p.optional:
                body += [
                    f"    if {a} is not None and {a}.__class__ is not {t}:",
                    f"        {a} = {wrong}",
                ]
            elif exact is not None:
                body += [
                    f"    if {a}.__class__ is not {t}:",
                    f"        {a} = _D{i} if {a} is None else {wrong}",
                ]
        body.append(f"    {s}(_o, {a})")
    src = f"def {kind}(*, {', '.join(params)}):\n" + "\n".join(body) + "\n    return _o\n"
    exec(compile(src, f"<azt {kind} {cls.__qualname__}>", "exec"), ns)
    fn: Callable[..., Any] = ns[kind]
    # cattrs names the generated function and its linecache entry after its target
    fn.__qualname__ = cls.__qualname__
    fn.__module__ = cls.__module__
    return fn


# Read path: the generated function calls _constructor's slot-filling function, not the
# validating attrs __init__ (2.8-3.1x slower per page in benchmarks/orm_bench.py). Wire values
# are trusted once converted to their declared type (the service stores only valid values);
# what is checked is the stored type: an annotated (JSON) or recorded (TableEntity) type must
# be the declared one or a lossless widening, and unannotated text (nometadata) is parsed by
# the declared type. Known gap: at minimal metadata a String column of digits reads into an
# Int64 or Double property (a row does not say its metadata level).
def _structure_fn(
    cls: type[E], info: EntityInfo, select: frozenset[str] | None, form: Form
) -> Callable[[Mapping[str, Any]], E]:
    fields = {a.name: a for a in attrs.fields(cast(Any, cls))}
    st_attrs: list[attrs.Attribute[Any]] = []
    overrides: dict[str, Any] = {}
    ctor_fields: list[tuple[Prop[Any], Any, type | None]] = []
    for p in info.props:
        a = fields[p.attr]
        default = a.default
        exact: type | None = None
        if p.attr in ("Timestamp", "ETag"):
            if form == "value":
                continue  # TableEntity keeps them as metadata, not as keys: see _meta
            wire = "Timestamp" if p.attr == "Timestamp" else "odata.etag"
            overrides[p.attr] = override(rename=wire)
        else:
            if not (select is None or p.wire in select or p.is_key):
                continue  # outside the projection: left unset
            hook = _struct_hook(p, form)
            overrides[p.attr] = override(rename=p.wire, struct_hook=hook)
            if default is attrs.NOTHING and p.optional:
                default = None
            elif default is attrs.NOTHING and select is not None and not p.is_key:
                default = _MISSING  # projected but absent: left unset
            if hook is None:
                exact = _PY_TYPE[p.edm]
        ctor_fields.append((p, default, exact))
        # Every argument is passed by keyword and may be absent: the constructor supplies
        # defaults and reports missing required properties with the row's keys.
        st_attrs.append(a.evolve(default=_MISSING, kw_only=True, type=None))
    ctor = _constructor(cls, ctor_fields, f"{form}_{cls.__name__}")
    fn = make_dict_structure_fn_from_attrs(
        st_attrs,
        ctor,  # type: ignore[arg-type]
        converter,
        _cattrs_detailed_validation=False,
        _cattrs_prefer_attrib_converters=True,
        _cattrs_forbid_extra_keys=False,
        **overrides,
    )
    return fn


def _unstructure_fn(
    cls: type[E], info: EntityInfo, form: Form
) -> tuple[Callable[[E], dict[str, Any]], Callable[[E], dict[str, Any]]]:
    """(generated function, slow path for objects with unset properties)."""
    fields = {a.name: a for a in attrs.fields(cast(Any, cls))}
    un_attrs: list[attrs.Attribute[Any]] = []
    overrides: dict[str, Any] = {}
    hooks: list[tuple[str, str, Callable[[Any], Any]]] = []
    for p in info.data_props:
        hook = _unstruct_hook(p, form)
        hooks.append((p.attr, p.wire, hook))
        overrides[p.attr] = override(rename=p.wire, unstruct_hook=hook)
        un_attrs.append(fields[p.attr].evolve(default=attrs.NOTHING, type=None))
    fn = make_dict_unstructure_fn_from_attrs(un_attrs, cls, converter, **overrides)

    def partial(obj: E) -> dict[str, Any]:
        # objects from a projection lack the properties outside it
        out: dict[str, Any] = {}
        for attr, wire, hook in hooks:
            v = getattr(obj, attr, None)
            out[wire] = None if v is None else hook(v)
        return out

    return fn, partial


#: JSON members that are not stored properties (metadata, at every level)
_JSON_SYSTEM = frozenset(
    {
        "PartitionKey",
        "RowKey",
        "Timestamp",
        "Timestamp@odata.type",
        "odata.etag",
        "odata.metadata",
        "odata.type",
        "odata.id",
        "odata.editLink",
    }
)


def _known(info: EntityInfo, select: frozenset[str] | None, form: Form) -> frozenset[str]:
    """The members a row may have without holding a stored property the objects decoded
    from it (with projection ``select``) have no place for."""
    names = {p.wire for p in info.data_props if select is None or p.is_key or p.wire in select}
    if info.evolution is not None:  # the shape marker is the class's own, never "lost"
        names |= info.evolution.extra_names
    if form == "json":
        return frozenset(names | _JSON_SYSTEM | {n + _ANN for n in names})
    return frozenset(names | {"Timestamp"})


def _partial_markers(
    cls: type, info: EntityInfo, select: frozenset[str] | None, form: Form
) -> tuple[Callable[[Any, Mapping[str, Any]], None], Callable[[list[Any], list[Any]], None]]:
    """(mark one object, mark a page's objects): record on each object the
    :class:`PartialRead` of what its row held that the object does not, so that a
    whole-entity replace of it can be refused (``azt.PropertyLossError``).

    A projection's objects all carry one shared record (the declared properties it did not
    select, and "maybe more"); a full read's object gets one only when its row has stored
    properties the class does not declare. The common case, a row with nothing undeclared,
    costs one ``frozenset.issuperset`` per row (a C loop over the row's keys)."""
    known = _known(info, select, form)
    base = None
    if select is not None:
        names = {p.wire for p in info.data_props if p.is_key or p.wire in select}
        unselected = tuple(p.wire for p in info.data_props if p.wire not in names)
        base = PartialRead(unselected, projection=True)
    put = _slot_setter(cls, PARTIAL_ATTR)
    covered = known.issuperset

    def extra(row: Mapping[str, Any]) -> PartialRead | None:
        found = tuple(
            k for k in row if k not in known and not k.startswith("odata.") and "@odata." not in k
        )
        if not found:
            return base
        return (base or PartialRead()).with_missing(found)

    def mark_one(obj: Any, row: Mapping[str, Any]) -> None:
        if not covered(row):
            put(obj, extra(row))
        elif base is not None:
            put(obj, base)

    def mark_rows(rows: list[Any], objs: list[Any]) -> None:
        if base is None and all(map(covered, rows)):
            return
        for row, obj in zip(rows, objs, strict=True):
            mark_one(obj, row)

    return mark_one, mark_rows


# Built on cattrs (the project's dependency) rather than a hand-written generator
# (git show f403ac4:azt/_codec.py): measured within about 1.3x of it on JSON page decodes and
# both encoders, 1.8x on from_entity (Atom pages, point reads, user calls, where HTTP and
# parsing dominate); azure-data-tables' own dict conversions are 5x slower on a page.
def _build(cls: type[E], select: frozenset[str] | None) -> EntityCodec[E]:
    info = entity_info(cls)
    info.key_props()  # a class without keys (EntityBase, a mixin) cannot be stored
    from_json_fast = _structure_fn(cls, info, select, "json")
    from_value = _structure_fn(cls, info, select, "value")
    set_ts = _slot_setter(cls, "Timestamp")
    set_etag = _slot_setter(cls, "ETag")
    meta = _meta
    errors = _DECODE_ERRORS

    check_json = _json_type_check(info)
    reads = {p.wire: (p.attr, _READS[p.edm]) for p in info.data_props if not p.is_key}
    mark_json, mark_rows = _partial_markers(cls, info, select, "json")
    mark_value, _ = _partial_markers(cls, info, select, "value")
    covered = _known(info, select, "value").issuperset
    put_partial = _slot_setter(cls, PARTIAL_ATTR)
    projection = select is not None

    def from_json(d: Mapping[str, Any]) -> E:
        check_json(d)
        try:
            o = from_json_fast(d)
        except errors as exc:
            o = _retry_without_nulls(info, from_json_fast, d, exc, "json")
        mark_json(o, d)
        return o

    def from_entity(d: Mapping[str, Any]) -> E:
        types = getattr(d, "_types", None)  # the stored types a decoded TableEntity knows
        if types:
            for name, stored in types.items():
                r = reads.get(name)
                if r is not None and stored not in r[1]:
                    _stored_as(cls, r[0], stored, d)
        try:
            o = from_value(d)
        except errors as exc:
            o = _retry_without_nulls(info, from_value, d, exc, "value")
        ts, etag, lacking = meta(d)
        set_ts(o, ts)
        set_etag(o, etag)
        if lacking is not None:  # a client-core projection passes on what it lacks
            mark_value(o, d)
            own = getattr(o, PARTIAL_ATTR, None)
            put_partial(o, lacking.with_missing(own.missing) if own is not None else lacking)
        elif projection or not covered(d):
            mark_value(o, d)
        return o

    optional = tuple(p.wire for p in info.data_props if p.optional)
    int64 = tuple(p.wire for p in info.data_props if p.edm is EdmType.INT64)
    annotations = tuple(
        (p.wire, p.wire + _ANN, p.edm.value) for p in info.data_props if p.edm in _ANNOTATED
    )
    un_value, partial_value = _unstructure_fn(cls, info, "value")
    un_json, partial_json = _unstructure_fn(cls, info, "json")
    to_entity = _fast_to_entity(info, _general_to_entity(optional, int64, un_value, partial_value))

    def to_json(obj: E) -> dict[str, Any]:
        try:
            e = un_json(obj)
        except AttributeError:
            e = partial_json(obj)
            for k in [k for k, v in e.items() if v is None]:
                del e[k]
        else:
            for n in optional:
                if e[n] is None:
                    del e[n]
        for n, an, t in annotations:
            if n in e:
                e[an] = t
        return e

    codec: EntityCodec[E] = EntityCodec()
    codec.cls = cls
    codec.info = info
    codec.select = select
    codec.from_json = from_json
    codec._from_json_fast = from_json_fast
    codec._check_json = check_json
    codec._decode_page = _page_decoder(cls, info, select)
    codec._mark_json = mark_json
    codec._mark_rows = mark_rows
    codec.from_entity = from_entity
    codec.to_entity = to_entity
    codec.to_json = to_json
    return codec


def _general_to_entity(
    optional: tuple[str, ...],
    int64: tuple[str, ...],
    un_value: Callable[[E], dict[str, Any]],
    partial_value: Callable[[E], dict[str, Any]],
) -> Callable[[E], TableEntity]:
    """``to_entity`` by loops over the optional and Int64 properties: what
    :func:`_fast_to_entity` does in straight-line code, and what it calls for an object
    with unset properties (from a projection)."""
    int64_type = EdmType.INT64

    def to_entity(obj: E) -> TableEntity:
        try:
            e = TableEntity(un_value(obj))
        except AttributeError:
            e = TableEntity(partial_value(obj))
            for k in [k for k, v in e.items() if v is None]:
                del e[k]
        else:
            for n in optional:
                if e[n] is None:
                    del e[n]
        if int64:
            types = {n: int64_type for n in int64 if n in e}
            if types:
                e.edm_types = types
        return e

    return to_entity


def _fast_to_entity(
    info: EntityInfo, general: Callable[[E], TableEntity]
) -> Callable[[E], TableEntity]:
    """``to_entity`` generated for one class: the values read into a dict display as the
    ``value`` form's unstructure function reads them (each property's unstructure hook,
    ``_unstruct_hook``, called unless it is the identity), the optional properties that
    are None dropped one by one, and the ``edm_types`` of the Int64 properties written as
    a dict display (in declaration order, as ``general`` builds it; none when no Int64
    property is left); an object with unset properties goes to ``general``."""
    props = info.data_props
    ns: dict[str, Any] = {"_general": general}
    members = []
    for i, p in enumerate(props):
        hook = _unstruct_hook(p, "value")
        if hook is identity:
            members.append(f"{p.wire!r}: obj.{p.attr}")
        else:
            ns[f"_h{i}"] = hook
            members.append(f"{p.wire!r}: _h{i}(obj.{p.attr})")
    body = [
        "def to_entity(obj):",
        "    try:",
        "        d = {" + ", ".join(members) + "}",
        "    except AttributeError:",
        "        return _general(obj)",
    ]
    body += [f"    if d[{p.wire!r}] is None: del d[{p.wire!r}]" for p in props if p.optional]
    body += _entity_lines(props, ns)
    body.append("    return e")
    exec(compile("\n".join(body) + "\n", f"<azt to_entity {info.cls.__qualname__}>", "exec"), ns)
    fn: Callable[[E], TableEntity] = ns["to_entity"]
    return fn


def _entity_lines(props: tuple[Prop[Any], ...], ns: dict[str, Any]) -> list[str]:
    """The lines of generated code that make ``e``, the ``TableEntity`` of the dict ``d``
    (its optional properties that are None dropped already), with the ``edm_types`` of its
    Int64 properties: one read-only mapping shared by every entity of the class when none
    of them is optional (``SharedEdmTypes``: ``edm_types`` gives each entity its own copy
    on first use), else a dict of those present (none when none is)."""
    ns["_TE"] = TableEntity
    ns["_I64"] = EdmType.INT64
    lines = ["    e = _TE(d)"]
    int64 = [p for p in props if p.edm is EdmType.INT64]
    if int64 and not any(p.optional for p in int64):
        ns["_SHARED_TYPES"] = SharedEdmTypes({p.wire: EdmType.INT64 for p in int64})
        lines.append("    e._types = _SHARED_TYPES")
    elif int64:
        lines.append("    t = {}")
        for p in int64:
            put = f"t[{p.wire!r}] = _I64"
            lines.append(f"    if {p.wire!r} in d: {put}" if p.optional else f"    {put}")
        lines.append("    if t: e._types = t")
    return lines


#: the kind of :func:`azt._core.wire.writers.declared_writer` of each EDM type's values
_WRITER_KINDS: dict[EdmType, str] = {
    EdmType.STRING: "str",
    EdmType.INT32: "int32",
    EdmType.INT64: "Int64",
    EdmType.DOUBLE: "float",
    EdmType.BOOLEAN: "bool",
    EdmType.DATETIME: "EdmDateTime",
    EdmType.GUID: "UUID",
    EdmType.BINARY: "bytes",
}


def object_encoder(cls: type[E], indexed: bool, reserved: str) -> Callable[[E], Any] | None:
    """The ``__azt_encoded__`` of the entity class ``cls`` (see
    :func:`azt._core.base.encoded_source`), generated once: each property read once, the
    entity built as ``to_entity`` builds it, and the same values handed to a
    :func:`~azt._core.wire.writers.declared_writer` of the class's shape (the body checked
    and encoded in one pass, or ``None``), without the entity's shape looked up again.
    ``indexed``: whether the class declares indexes (its writes may then carry index rows),
    else only a RowKey starting with ``reserved`` (refused by ``__azt_companions__``) takes
    the companions' path. An object with unset properties (a projection) gives ``None``
    (``__azt_entity__`` then). ``None`` for a class with a schema evolution (its marker).

    Example::

        >>> encode = object_encoder(Movie, False, "\ufffdix;")
        >>> entity, obj, etag, body, more = encode(Movie("Action", "Heat"))
        >>> body.startswith(b'{"PartitionKey":"Action","RowKey":"Heat"'), more
        (True, False)
    """
    info = entity_info(cls)
    if info.evolution is not None:
        return None
    props = info.data_props
    write = declared_writer(
        tuple(p.wire for p in props),
        tuple(_WRITER_KINDS.get(p.edm, "") for p in props),
        tuple(p.optional for p in props),
    )
    if write is None:
        return None
    ns: dict[str, Any] = {"_write": write, "_isinstance": isinstance, "_str": str}
    ns["_reserved"] = reserved
    values = [f"v{i}" for i in range(len(props))]
    # (a hook's AttributeError too goes where to_entity's goes: the general path)
    body = ["def encoded(obj):", "    try:"]
    for i, p in enumerate(props):
        hook = _unstruct_hook(p, "value")
        if hook is identity:
            body.append(f"        v{i} = obj.{p.attr}")
        else:
            ns[f"_h{i}"] = hook
            body.append(f"        v{i} = _h{i}(obj.{p.attr})")
    body += ["        etag = obj.ETag", "    except AttributeError:", "        return None"]
    body.append("    d = {" + ", ".join(f"{p.wire!r}: v{i}" for i, p in enumerate(props)) + "}")
    body += [f"    if v{i} is None: del d[{p.wire!r}]" for i, p in enumerate(props) if p.optional]
    body += _entity_lines(props, ns)
    rk = values[[p.wire for p in props].index("RowKey")]
    more = "True" if indexed else f"_isinstance({rk}, _str) and {rk}.startswith(_reserved)"
    body.append(f"    return e, obj, etag, _write({', '.join(values)}), {more}")
    src = "\n".join(body) + "\n"
    exec(compile(src, f"<azt encoded {info.cls.__qualname__}>", "exec"), ns)
    fn: Callable[[E], Any] = ns["encoded"]
    return fn


# --------------------------------------------------------------------------------------------
# The query path's page decoder
# --------------------------------------------------------------------------------------------


class _Slow(Exception):
    """Raised by a generated page decoder on anything but the plain case; the page is then
    decoded by the general path (``from_json``), which gives the result or the error."""


_fromiso = datetime.fromisoformat
_dt_new = datetime.__new__
_EDT = EdmDateTime
_UTC = UTC
_a2b = binascii.a2b_base64


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
    EdmType.DATETIME: (  # EdmDateTime.parse's seven-digit case inline, the rest through it
        "if (v.__class__ is _str and len(v) == 28 and v[27] == 'Z' and v[19] == '.'"
        " and v[10] == 'T' and v[4] == '-' and v[7] == '-' and v[13] == ':'"
        " and v[16] == ':' and v.isascii() and v[20:27].isdigit()):",
        "    b = _fromiso(v[:19])",
        "    w = _dt_new(_EDT, b.year, b.month, b.day, b.hour, b.minute, b.second,"
        " _int(v[20:26]), _UTC)",
        "    w._hns = ord(v[26]) - 48",
        "    v = w",
        "else:",
        "    v = _dt(v)",
    ),
    EdmType.GUID: ("v = _guid(v)",),
    EdmType.BINARY: ("v = _a2b(v, strict_mode=True)",),
}


def _page_decoder(
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
    than ``from_json`` does."""
    shapes: dict[tuple[Any, ...], Callable[[list[Any], int, list[Any]], int]] = {}
    mark_one, _ = _partial_markers(cls, info, select, "json")
    known = _known(info, select, "json")

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
                run = shapes[keys] = _shape_decoder(cls, info, select, keys, known, mark_one)
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
) -> Callable[[list[Any], int, list[Any]], int]:
    """The generated function decoding ``rows[i:]`` into ``out`` while they have the
    shape ``keys`` (``rows[i]`` has it); returns the index of the first row it left."""
    fields = {a.name: a for a in attrs.fields(cast(Any, cls))}
    at = {k: j for j, k in enumerate(keys)}
    ns: dict[str, Any] = {
        "_new": object.__new__,
        "_cls": cls,
        "_Slow": _Slow,
        "_dict": dict,
        "_SHAPE": keys,
        "_mark": mark_one,
        "_str": str,
        "_int": int,
        "_bool": bool,
        "_float": float,
        "_dt": _parse_dt,
        "_fromiso": _fromiso,
        "_dt_new": _dt_new,
        "_EDT": _EDT,
        "_UTC": _UTC,
        "_guid": decode_guid,
        "_a2b": _a2b,
    }
    unpack = "".join(f"v{j}, " for j in range(len(keys)))
    body = [
        "def run(rows, i, out):",
        "    append = out.append",
        "    n = len(rows)",
        "    row = rows[i]",
        "    while True:",
        f"        ({unpack}) = row.values()" if keys else "        pass",
        "        o = _new(_cls)",
    ]
    ind = " " * 8
    for i, p in enumerate(info.props):
        a = p.attr
        s = f"_S{i}"
        ns[s] = _slot_setter(cls, a)
        default = fields[a].default
        if a in ("Timestamp", "ETag"):
            wire = "Timestamp" if a == "Timestamp" else "odata.etag"
            if wire in at:
                body.append(f"{ind}{s}(o, v{at[wire]})")
            else:
                ns[f"_D{i}"] = default
                body.append(f"{ind}{s}(o, _D{i})")
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
            absent = [f"{s}(o, _F{i}())"]
        elif default is _MISSING:
            absent = ["pass"]  # projected but absent: left unset
        else:
            ns[f"_D{i}"] = default
            absent = [f"{s}(o, _D{i})"]
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
        body.append(f"{ind}    {s}(o, v)")
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


def _diagnose(
    info: EntityInfo, row: Mapping[str, Any], exc: BaseException, form: Form = "json"
) -> WireDecodeError:
    """Name the property a row failed on (the slow path of an error)."""
    where = f"row PartitionKey={row.get('PartitionKey')!r} RowKey={row.get('RowKey')!r}"
    for p in info.props:
        if p.attr in ("Timestamp", "ETag") or p.wire not in row:
            continue
        hook = _struct_hook(p, form)
        raw = row[p.wire]
        if raw is None:
            continue
        try:
            if hook is None:
                _wrong_type(info.cls, p.attr, _PY_TYPE[p.edm], raw)
            else:
                hook(raw, None)
        except _DECODE_ERRORS as e:
            return WireDecodeError(
                f"{where}: property {p.wire!r} = {raw!r} is not a valid {p.edm} for "
                f"{info.cls.__name__}.{p.attr}: {e}"
            )
    return WireDecodeError(f"{where} cannot be decoded as {info.cls.__name__}: {exc!r}")
