"""What the generated functions of every entity codec share: the value hooks by EDM type and
wire form (structure: a JSON or ``TableEntity`` value to the property's; unstructure: back),
the converter they are registered with (:func:`wire_type` keys them), the type tables, the
stored-type check of annotated rows, each property's slot setter, and the partial-read
markers (what a row held that its object does not). ``azt._orm.codec`` builds the codecs
from them, ``azt._orm.page_decoder`` the query path's page decoder.

Example::

    >>> t = wire_type(EdmType.INT64, "json")
    >>> converter.get_structure_hook(t)("12345678901", t)
    12345678901
"""

from __future__ import annotations

import base64
import keyword
import math
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, Optional

import cattrs
from cattrs.fns import identity

from azt._core.wire import WireDecodeError, decode_base64, decode_guid
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import PARTIAL_ATTR, PartialRead
from azt._edm.types import EdmType
from azt._errors import ValidationError
from azt._orm.columns import EntityInfo, LazyTimestamp, Prop, entity_info

__all__ = [
    "ANNOTATED",
    "Form",
    "MissingPropertyError",
    "converter",
    "layout_twin",
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


# --------------------------------------------------------------------------------------------
# Layout twins: slots filled by plain attribute stores
# --------------------------------------------------------------------------------------------

#: entity class -> its layout twin (None: it has none, its slots are filled by setters)
_TWINS: dict[type, type | None] = {}


def layout_twin(cls: type) -> type | None:
    """A class with the memory layout of the entity class ``cls`` (the same base, the same
    slots) whose instances take plain attribute stores (``object.__setattr__``, and the raw
    slot under ``Timestamp``'s :class:`LazyTimestamp`), or ``None`` where none can be made.

    An entity class's ``__setattr__`` is attrs' (each assignment checked), so a decoder
    fills its slots through the slots' setters: a call each (about seven times the cost of
    a store into a dict). A decoder instead makes the twin's instance, fills it by stores
    the interpreter specialises to slot writes, and sets its ``__class__`` to ``cls`` (one
    assignment, checked by Python for the same layout): the object is then exactly what
    the setters make. Not made for a class some base of which defines
    ``__init_subclass__`` (making the twin would call it); the twin is otherwise invisible
    but for ``__subclasses__()`` of ``cls``'s base, where its ``__azt_layout_twin__`` is
    True (docs/entities.md, "How query results become objects").

    Example::

        >>> o = object.__new__(layout_twin(Movie))
        >>> o.rating = 4.5
        >>> o.__class__ = Movie
        >>> type(o).__name__, o.rating
        ('Movie', 4.5)
    """
    if cls in _TWINS:
        return _TWINS[cls]
    twin = _make_twin(cls)
    _TWINS[cls] = twin
    return twin


def _make_twin(cls: type) -> type | None:
    mro = type.__getattribute__(cls, "__mro__")
    own = type.__getattribute__(cls, "__dict__")
    slots = own.get("__slots__")
    if not isinstance(slots, tuple) or any(
        "__init_subclass__" in type.__getattribute__(k, "__dict__") for k in mro[1:-1]
    ):
        return None
    ns: dict[str, Any] = {
        "__slots__": slots,
        "__setattr__": object.__setattr__,
        "__azt_layout_twin__": True,  # (what code that walks __subclasses__() may skip)
        "__module__": own.get("__module__"),
        "__qualname__": f"{type.__getattribute__(cls, '__qualname__')}.<azt layout twin>",
    }
    for klass in mro:
        lazy = type.__getattribute__(klass, "__dict__").get("Timestamp")
        if lazy is not None:
            if isinstance(lazy, LazyTimestamp):
                ns["Timestamp"] = lazy.slot
            break
    try:
        twin: type = type.__new__(type(cls), type.__getattribute__(cls, "__name__"), mro[1:2], ns)
        probe: Any = object.__new__(twin)
        probe.__class__ = cls  # refused (TypeError) unless the layouts are the same
    except TypeError:
        return None
    return twin


def _plain_store(cls: type, twin: type, attr: str) -> bool:
    """Whether ``o.<attr> = v`` on an instance of ``twin`` writes the slot
    ``_slot_setter(cls, attr)`` writes: the name found first in the twin's classes is the
    same slot (the twin's own slot of that name where ``cls`` has its own, else the same
    descriptor, ``Timestamp``'s raw slot for its ``LazyTimestamp``)."""
    if not attr.isidentifier() or keyword.iskeyword(attr) or attr.startswith("__"):
        return False
    want = _slot(cls, attr)
    got = _slot(twin, attr)
    if want is None or got is None:
        return False
    if got is want:
        return True
    own = type.__getattribute__(cls, "__dict__").get(attr)
    return own is want and type.__getattribute__(twin, "__dict__").get(attr) is got


def _slot(cls: type, attr: str) -> Any:
    """The descriptor an instance's ``attr`` store meets (``LazyTimestamp``: its slot)."""
    for klass in type.__getattribute__(cls, "__mro__"):
        found = type.__getattribute__(klass, "__dict__").get(attr)
        if found is not None:
            return found.slot if isinstance(found, LazyTimestamp) else found
    return None
