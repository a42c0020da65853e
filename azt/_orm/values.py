"""Which values a property column takes: converters for custom types, and the checks that
turn a Python value into its stored value (on construction, on assignment and in query
literals).

Example::

    >>> from decimal import Decimal
    >>> money = Converter(EdmType.STRING, to_wire=str, from_wire=Decimal)
    >>> money.to_wire(Decimal("1.50"))
    '1.50'
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import attrs

from azt._edm.datetime import EdmDateTime
from azt._edm.types import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, EdmType
from azt._edm.validation import (
    _KEY_FORBIDDEN,
    MAX_BINARY_BYTES,
    MAX_KEY_UTF16,
    MAX_STRING_UTF16,
    utf16_len,
    validate_key,
)
from azt._errors import ValidationError

__all__ = [
    "PY_TO_EDM",
    "Column",
    "Converter",
    "check_property_name",
    "converter_for",
    "refuse_lone_surrogate",
    "register_converter",
    "storage_value",
]

T = TypeVar("T")

_MIN_YEAR = 1601

#: the EDM type of each native Python type (``int`` is Int32 unless declared Int64)
PY_TO_EDM: dict[type, EdmType] = {
    str: EdmType.STRING,
    int: EdmType.INT32,
    float: EdmType.DOUBLE,
    bool: EdmType.BOOLEAN,
    datetime: EdmType.DATETIME,
    uuid.UUID: EdmType.GUID,
    bytes: EdmType.BINARY,
}


@attrs.frozen
class Converter(Generic[T]):
    """How a custom Python type is stored: as which EDM type, and the two conversions.

    Example::

        >>> from decimal import Decimal
        >>> money = Converter(EdmType.STRING, to_wire=str, from_wire=Decimal)
        >>> register_converter(Decimal, money)
        >>> money.to_wire(Decimal("1.50"))
        '1.50'
    """

    edm: EdmType
    to_wire: Callable[[T], Any]
    from_wire: Callable[[Any], T]


_CONVERTERS: dict[type, Converter[Any]] = {}


def register_converter(py_type: type[T], converter: Converter[T]) -> None:
    """Register how properties annotated with ``py_type`` are stored.

    Applies to entity classes defined after the call. ``Enum`` types need no registration.

    Example::

        >>> from decimal import Decimal
        >>> register_converter(Decimal, Converter(EdmType.STRING, str, Decimal))
    """
    if py_type in PY_TO_EDM:
        raise ValueError(f"{py_type.__name__} is a native EDM type and cannot be re-registered")
    _CONVERTERS[py_type] = converter


def _enum_converter(enum_type: type[enum.Enum]) -> Converter[Any]:
    values = [m.value for m in enum_type]
    if values and all(isinstance(v, str) for v in values):
        edm = EdmType.STRING
    elif values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        fits32 = all(INT32_MIN <= v <= INT32_MAX for v in values)
        edm = EdmType.INT32 if fits32 else EdmType.INT64
    else:
        raise TypeError(
            f"enum {enum_type.__name__} needs all-str or all-int values to be stored; "
            "register a Converter for it instead"
        )
    return Converter(edm, _enum_value, enum_type)


def _enum_value(member: enum.Enum) -> Any:
    return member.value


def converter_for(where: str, tp: Any) -> Converter[Any] | None:
    """The converter of a non-native property type: an ``Enum``'s, or a registered one;
    ``None`` for the native EDM types (subclasses of them are refused).

    Example::

        >>> converter_for("Movie.rating", float) is None
        True
    """
    if not isinstance(tp, type) or tp in PY_TO_EDM:
        return None
    if issubclass(tp, enum.Enum):
        return _enum_converter(tp)
    if tp in _CONVERTERS:
        return _CONVERTERS[tp]
    if issubclass(tp, bool | int | float | str | bytes | datetime | uuid.UUID):
        raise TypeError(f"{where}: subclasses of EDM types need a registered Converter")
    return None


class Column(Generic[T]):
    """What azt knows about one property of an entity class (``T``: its values): names,
    EDM type, converter. :class:`azt.entity.Prop` is the column with its operators; the
    condition tree and the value checks need only this.

    Example::

        >>> Movie.rating.wire, Movie.rating.edm.value, Movie.rating.label()
        ('rating', 'Edm.Double', 'Movie.rating')
    """

    __slots__ = (
        "attr",
        "converter",
        "edm",
        "is_key",
        "optional",
        "owner",
        "py_type",
        "system",
        "wire",
    )

    attr: str
    wire: str
    edm: EdmType
    optional: bool
    py_type: Any
    converter: Converter[Any] | None
    owner: type
    system: bool
    is_key: bool

    def label(self) -> str:
        """``Class.attribute``, as messages name the property.

        Example::

            >>> Movie.release_year.label()
            'Movie.release_year'
        """
        return f"{self.owner.__name__}.{self.attr}"


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", repr(tp))


def storage_value(p: Column[Any], value: Any, *, key_rules: bool = True) -> Any:
    """``value`` (not None) as stored: through the converter if any, checked against the
    EDM type and normalised (``key_rules=False`` for query literals, which may name keys
    that cannot exist)."""
    conv = p.converter
    if conv is not None:
        if not isinstance(value, p.py_type):
            raise ValidationError(
                f"{p.label()} expects {_type_name(p.py_type)}, got {type(value).__name__}"
            )
        value = conv.to_wire(value)
    return _check_storage(p, value, p.edm, key_rules=key_rules)


def value_checker(p: Column[Any], general: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``general`` (the property's ``check``, which construction and assignment call for
    each value) with the plain case of ``p``'s EDM type answered first: a value of the
    exact type that needs no normalising and passes every check (an ASCII string within
    the limit, an ``int`` in range, a ``float``, a ``bool``, a UTC ``EdmDateTime`` from
    1601, a ``UUID``, ``bytes`` within the limit) is returned as is; anything else goes
    through ``general``, which gives the same result or raises the precise error (None
    of an optional property: None). Properties with a converter always take ``general``;
    keys take the plain case only for ASCII text within the limit without a forbidden
    character (the rules of Azure Table storage, which construction checks).

    Example::

        >>> value_checker(Movie.rating, Movie.rating.check)(4.5)
        4.5
    """
    if p.converter is not None:
        return general
    edm = p.edm
    none_ok = p.optional

    def other(v: Any) -> Any:  # the general check, None of an optional property first
        if v is None and none_ok:
            return None
        return general(v)

    if p.is_key:
        if edm is not EdmType.STRING:  # pragma: no cover (keys are strings)
            return general
        key_limit, forbidden = MAX_KEY_UTF16, _KEY_FORBIDDEN.search

        def check(v: Any) -> Any:
            if v.__class__ is str and len(v) <= key_limit and v.isascii() and forbidden(v) is None:
                return v
            return other(v)

    elif edm is EdmType.STRING:
        limit = MAX_STRING_UTF16

        def check(v: Any) -> Any:
            if v.__class__ is str and len(v) <= limit and v.isascii():
                return v
            return other(v)

    elif edm is EdmType.INT32 or edm is EdmType.INT64:
        lo, hi = (INT32_MIN, INT32_MAX) if edm is EdmType.INT32 else (INT64_MIN, INT64_MAX)

        def check(v: Any) -> Any:
            if v.__class__ is int and lo <= v <= hi:
                return v
            return other(v)

    elif edm is EdmType.DATETIME:
        edt, dt, utc, min_year = EdmDateTime, datetime, UTC, _MIN_YEAR
        from_dt = EdmDateTime.from_datetime

        def check(v: Any) -> Any:
            c = v.__class__
            if (c is edt or c is dt) and v.tzinfo is utc and v.year >= min_year:
                return v if c is edt else from_dt(v)
            return other(v)

    elif edm is EdmType.BINARY:
        max_bytes = MAX_BINARY_BYTES

        def check(v: Any) -> Any:
            if v.__class__ is bytes and len(v) <= max_bytes:
                return v
            return other(v)

    else:
        exact = {EdmType.DOUBLE: float, EdmType.BOOLEAN: bool, EdmType.GUID: uuid.UUID}.get(edm)
        if exact is None:  # pragma: no cover (every EDM type is handled above or here)
            return general

        def check(v: Any) -> Any:
            if v.__class__ is exact:
                return v
            return other(v)

    return check


def refuse_lone_surrogate(label: str, v: str) -> None:
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad_char = exc.object[exc.start : exc.end]
        raise ValidationError(
            f"{label} contains a lone surrogate ({bad_char!r}), which cannot be sent as UTF-8"
        ) from None


def _check_storage(p: Column[Any], v: Any, edm: EdmType, *, key_rules: bool = True) -> Any:
    """Check ``v`` against ``edm``; returns the normalised value."""
    tv = type(v)
    if edm is EdmType.STRING:
        if tv is not str and not isinstance(v, str):
            raise ValidationError(f"{p.label()} expects str, got {tv.__name__}")
        if not v.isascii():
            refuse_lone_surrogate(p.label(), v)
        if key_rules and p.is_key:
            validate_key(p.label(), v)
        elif len(v) > MAX_STRING_UTF16 // 2 and utf16_len(v) > MAX_STRING_UTF16:
            raise ValidationError(
                f"{p.label()} exceeds 64 KiB (32768 UTF-16 code units): {utf16_len(v)}"
            )
        return v
    if edm is EdmType.INT32 or edm is EdmType.INT64:
        if tv is bool or not isinstance(v, int):
            raise ValidationError(f"{p.label()} expects int, got {tv.__name__}")
        lo, hi = (INT32_MIN, INT32_MAX) if edm is EdmType.INT32 else (INT64_MIN, INT64_MAX)
        if not lo <= v <= hi:
            raise ValidationError(f"{p.label()} = {v} is outside the {edm} range [{lo}, {hi}]")
        return int(v)
    if edm is EdmType.DOUBLE:
        if tv is float:
            return v
        if tv is bool or not isinstance(v, int | float):
            raise ValidationError(f"{p.label()} expects float, got {tv.__name__}")
        try:
            return float(v)
        except OverflowError:
            raise ValidationError(
                f"{p.label()} got an int of {int(v).bit_length()} bits, too big for an Edm.Double"
            ) from None
    if edm is EdmType.BOOLEAN:
        if tv is not bool:
            raise ValidationError(f"{p.label()} expects bool, got {tv.__name__}")
        return v
    if edm is EdmType.DATETIME:
        if not isinstance(v, datetime):
            raise ValidationError(f"{p.label()} expects datetime, got {tv.__name__}")
        off = v.utcoffset()
        if off is None:
            raise ValidationError(
                f"{p.label()} got a naive datetime; azt refuses to guess its zone. "
                "Use an aware datetime, e.g. datetime.now(UTC) or dt.replace(tzinfo=UTC)"
            )
        v = EdmDateTime.from_datetime(v)
        if v.year < _MIN_YEAR:
            raise ValidationError(f"{p.label()} = {v.to_wire()} is before 1601-01-01 UTC")
        return v
    if edm is EdmType.GUID:
        if not isinstance(v, uuid.UUID):
            raise ValidationError(f"{p.label()} expects uuid.UUID, got {tv.__name__}")
        return v
    if edm is EdmType.BINARY:
        if tv is not bytes:
            if not isinstance(v, bytes | bytearray | memoryview):
                raise ValidationError(f"{p.label()} expects bytes, got {tv.__name__}")
            v = bytes(v)
        if len(v) > MAX_BINARY_BYTES:
            raise ValidationError(f"{p.label()} exceeds 64 KiB: {len(v)} bytes")
        return v
    raise ValidationError(f"{p.label()}: unsupported EDM type {edm}")  # pragma: no cover


def check_property_name(where: str, name: str) -> None:
    if not name or len(name) > 255 or not name.isidentifier() or name.startswith("odata"):
        raise TypeError(
            f"{where}: {name!r} is not a valid Table property name (a C# identifier: letter or "
            "'_' first, then letters, digits or '_', at most 255 characters)"
        )


# --------------------------------------------------------------------------------------------
# The generated __init__ of an entity class
# --------------------------------------------------------------------------------------------

#: the names the plain-case expressions of :func:`_plain_case` use
_INIT_GLOBALS: dict[str, Any] = {
    "_str": str,
    "_int": int,
    "_float": float,
    "_bool": bool,
    "_bytes": bytes,
    "_UUID": uuid.UUID,
    "_edt": EdmDateTime,
    "_dt": datetime,
    "_utc": UTC,
    "_from_dt": EdmDateTime.from_datetime,
    "_forbidden": _KEY_FORBIDDEN.search,
    "_NOTHING": attrs.NOTHING,
}


def _plain_case(p: Column[Any], v: str) -> list[str] | None:
    """The statements :func:`value_checker`'s plain case runs on the variable ``v``,
    inline (the same conditions, the same value kept or normalised), ending in the call of
    the whole check ``_CHECK`` when the value is not plain (``None`` of an optional column
    kept, as the check keeps it); ``None`` when the column has no plain case (a converter:
    always the whole check)."""
    if p.converter is not None:
        return None
    lines = _plain_lines(p, v)
    if lines is None or not p.optional:
        return lines
    return [f"if {v} is not None:", *(f"    {line}" for line in lines)]


def _plain_lines(p: Column[Any], v: str) -> list[str] | None:
    edm = p.edm
    if p.is_key:
        if edm is not EdmType.STRING:  # pragma: no cover (keys are strings)
            return None
        cond = (
            f"{v}.__class__ is _str and len({v}) <= {MAX_KEY_UTF16} and {v}.isascii() "
            f"and _forbidden({v}) is None"
        )
    elif edm is EdmType.STRING:
        cond = f"{v}.__class__ is _str and len({v}) <= {MAX_STRING_UTF16} and {v}.isascii()"
    elif edm is EdmType.INT32:
        cond = f"{v}.__class__ is _int and {INT32_MIN} <= {v} <= {INT32_MAX}"
    elif edm is EdmType.INT64:
        cond = f"{v}.__class__ is _int and {INT64_MIN} <= {v} <= {INT64_MAX}"
    elif edm is EdmType.DATETIME:
        same = f"{v}.tzinfo is _utc and {v}.year >= {_MIN_YEAR}"
        return [
            f"if {v}.__class__ is _edt and {same}: pass",
            f"elif {v}.__class__ is _dt and {same}: {v} = _from_dt({v})",
            f"else: {v} = _CHECK({v})",
        ]
    elif edm is EdmType.BINARY:
        cond = f"{v}.__class__ is _bytes and len({v}) <= {MAX_BINARY_BYTES}"
    else:
        exact = {EdmType.DOUBLE: "_float", EdmType.BOOLEAN: "_bool", EdmType.GUID: "_UUID"}
        cond = f"{v}.__class__ is {exact[edm]}"
    return [f"if not ({cond}): {v} = _CHECK({v})"]


def fast_init(
    cls: type,
    fields: Any,
    columns: Mapping[str, Column[Any]],
    setters: Mapping[str, Callable[[Any, Any], None]] | None = None,
) -> Any:
    """A generated ``__init__`` for the attrs class ``cls`` (``fields``: its
    ``attrs.fields``, each column's check as its converter; ``columns``: by attribute
    name; ``setters``: the slot setter of an attribute, which the instance's
    ``object.__setattr__`` would reach, else that is called), doing what attrs' generated
    one does (the same parameters and defaults, each value through its converter and
    stored in field order, factories called for defaults left out) with the plain case of
    each check inline rather than a call per value; ``None`` when
    attrs' own must stay (a class with its own ``__init__`` or attrs' pre/post init
    hooks, a field without a column).

    Example::

        >>> class Point:
        ...     def __init__(self, x: int) -> None:
        ...         self.x = x
        >>> fast_init(Point, (), {}) is None   # not attrs' generated __init__: kept
        True
    """
    own = type.__getattribute__(cls, "__dict__").get("__init__")
    code = getattr(own, "__code__", None)
    if code is None or not code.co_filename.startswith("<attrs generated"):
        return None
    for hook in ("__attrs_pre_init__", "__attrs_post_init__"):
        if hasattr(cls, hook):
            return None
    ns: dict[str, Any] = dict(_INIT_GLOBALS)
    ns["_get_setattr"] = object.__setattr__.__get__
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for i, a in enumerate(fields):
        name = a.name
        column = columns.get(name)
        if column is None or a.converter is None or not name.isidentifier() or a.alias != name:
            return None
        param = name
        if a.default is attrs.NOTHING:
            pass
        elif isinstance(a.default, attrs.Factory):  # type: ignore[arg-type]
            if a.default.takes_self:  # pragma: no cover (prop() factories take no self)
                return None
            ns[f"_f{i}"] = a.default.factory
            param = f"{name}=_NOTHING"
            body.append(f"    if {name} is _NOTHING: {name} = _f{i}()")
        else:
            ns[f"_d{i}"] = a.default
            param = f"{name}=_d{i}"
        (keyword if a.kw_only else positional).append(param)
        ns[f"_c{i}"] = a.converter
        inline = _plain_case(column, name)
        if inline is None:
            body.append(f"    {name} = _c{i}({name})")
        else:
            body += [f"    {line.replace('_CHECK(', f'_c{i}(')}" for line in inline]
        setter = (setters or {}).get(name)
        if setter is None:
            body.append(f"    _setattr({name!r}, {name})")
        else:
            ns[f"_s{i}"] = setter
            body.append(f"    _s{i}(self, {name})")
    if any("_setattr(" in line for line in body):  # (a field whose slot has no setter)
        body.insert(0, "    _setattr = _get_setattr(self)")
    params = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    src = f"def __init__({params}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(compile(src, f"<azt init {cls.__qualname__}>", "exec"), ns)
    init = ns["__init__"]
    init.__qualname__ = own.__qualname__
    init.__module__ = own.__module__
    init.__annotations__ = dict(own.__annotations__)
    init.__doc__ = own.__doc__
    return init


def fast_store(
    names: tuple[str, ...],
    columns: Mapping[str, Column[Any]],
    checks: Mapping[str, Callable[[Any], Any]],
    setters: Mapping[str, Callable[[Any, Any], None]],
) -> Callable[..., None] | None:
    """A generated ``store(obj, *values)`` assigning the attributes ``names`` of an entity
    object as attrs' ``__setattr__`` does (each value through its column's check, ``checks``,
    then into its slot, ``setters``), with the plain case of each check inline as
    :func:`fast_init` has it; ``None`` when a name lacks a column, a check or a setter.

    Example::

        >>> fast_store(("x",), {}, {}, {}) is None
        True
    """
    ns: dict[str, Any] = dict(_INIT_GLOBALS)
    body: list[str] = []
    for i, name in enumerate(names):
        column, check, setter = columns.get(name), checks.get(name), setters.get(name)
        if column is None or check is None or setter is None:
            return None
        ns[f"_c{i}"], ns[f"_s{i}"] = check, setter
        inline = _plain_case(column, f"v{i}")
        if inline is None:
            body.append(f"    v{i} = _c{i}(v{i})")
        else:
            body += [f"    {line.replace('_CHECK(', f'_c{i}(')}" for line in inline]
        body.append(f"    _s{i}(obj, v{i})")
    params = ", ".join(["obj", *(f"v{i}" for i in range(len(names)))])
    src = f"def store({params}):\n" + "\n".join(body) + "\n"
    exec(compile(src, f"<azt store {', '.join(names)}>", "exec"), ns)
    store: Callable[..., None] = ns["store"]
    return store
