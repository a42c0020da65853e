"""Declarative entity classes over the eight EDM types.

An entity class lists its properties as typed annotations::

    from datetime import datetime
    from azt._orm.entity import Entity, Int64, Prop, prop

    class Movie(Entity):
        rating: Prop[float] = prop(default=0.0)
        release_year: Prop[int] = prop(name="ReleaseYear", default=2000)
        views: Prop[Int64] = prop(default=0)
        language: Prop[str | None] = prop(default=None)
        favorite: Prop[bool] = prop(default=False)

    m = Movie("Action", "Terminator", rating=4.5)
    m.rating            # 4.5  (a float, at native slot speed)
    Movie.rating > 4.0  # a query condition (azt.query.Comparison)

Design, in short:

* The class is an ``attrs`` slotted class built by the metaclass :class:`EntityMeta`, which
  carries ``typing.dataclass_transform`` so mypy and IDEs see the generated ``__init__``
  (``PartitionKey`` and ``RowKey`` positional, every other property keyword-only).
* ``Prop[T]`` is the annotation: on an instance it reads and writes a ``T``; on the class it
  is the column object used to build queries. At run time instance reads go straight to the
  slot (no Python-level descriptor); class-level reads are answered by the metaclass. The
  alternative (a Python descriptor wrapping each slot) was measured in
  ``benchmarks/orm_bench.py`` and is several times slower per read.
* EDM types are inferred from ``T``: ``str`` String, ``int`` Int32, ``Int64`` (an
  ``Annotated[int, EdmType.INT64]`` alias) Int64, ``float`` Double, ``bool`` Boolean,
  ``datetime`` DateTime, ``uuid.UUID`` Guid, ``bytes`` Binary; ``Enum`` subclasses and types
  registered with :func:`register_converter` are stored through a converter.
* Values are checked when constructed and when assigned (:class:`azt.ValidationError`):
  Int32/Int64 ranges, string and binary sizes (64 KiB), key characters and length, and
  DateTime rules. **DateTime rule:** naive datetimes are refused (there is no safe guess of
  their zone); aware datetimes are converted to UTC; the range is 1601-01-01 .. 9999-12-31.
* ``None`` is only accepted for ``Optional`` properties and is never sent (the service does
  not store nulls).
* Typing: ``Movie.rating > 4.0`` is a ``Comparison``; a comparison the builder refuses
  (``Movie.rating == "x"``, ``Movie.language == None``) has the static type ``bool``, which
  ``Query.where()``, ``&``, ``|`` and ``~`` reject, so mypy flags it where it is used. (It
  cannot be flagged at the ``==`` itself: mypy then falls back to ``object.__eq__``.)
  ``<``/``>`` with a value of the wrong type are errors on the spot. ``bool`` is an ``int``
  to type checkers, so ``Movie.year == True`` is only refused at run time.
* System properties keep their wire names, as in .NET code ported from
  ``TableServiceEntity``: ``PartitionKey``, ``RowKey``, ``Timestamp`` (server-set) and
  ``ETag`` (from the response; never sent as a property). ``Timestamp`` and ``ETag`` do not
  take part in ``==``.
"""

from __future__ import annotations

import contextvars
import enum
import sys
import types
import typing
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Generic,
    Self,
    TypeVar,
    dataclass_transform,
    overload,
)

import attrs

from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, EdmType
from azt._edm.validation import MAX_BINARY_BYTES, MAX_STRING_UTF16, utf16_len, validate_key
from azt._errors import ValidationError

if TYPE_CHECKING:
    from azt._orm.query import Comparison, Condition, _Conditional

__all__ = [
    "Converter",
    "Entity",
    "EntityInfo",
    "EntityMeta",
    "Int64",
    "Prop",
    "entity_info",
    "prop",
    "register_converter",
]

T = TypeVar("T")
E = TypeVar("E", bound="Entity")
_V = TypeVar("_V")
if TYPE_CHECKING:
    from typing import TypeAlias

    #: a Boolean column, which is a condition on its own (``Movie.favorite``)
    _BoolColumn: TypeAlias = "Prop[bool] | Prop[bool | None]"

#: Annotation for an Edm.Int64 property: ``views: Prop[Int64]``. The value is a plain ``int``.
Int64 = Annotated[int, EdmType.INT64]

_MIN_YEAR = 1601
_SYSTEM_NAMES = frozenset({"PartitionKey", "RowKey", "Timestamp", "ETag"})

_PY_TO_EDM: dict[type, EdmType] = {
    str: EdmType.STRING,
    int: EdmType.INT32,
    float: EdmType.DOUBLE,
    bool: EdmType.BOOLEAN,
    datetime: EdmType.DATETIME,
    uuid.UUID: EdmType.GUID,
    bytes: EdmType.BINARY,
}


# --------------------------------------------------------------------------------------------
# Converters for custom types
# --------------------------------------------------------------------------------------------


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
    if py_type in _PY_TO_EDM:
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


# --------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------


class Prop(Generic[T]):
    """A typed entity property: ``T`` on instances, a query column on the class.

    Example::

        >>> class Movie(Entity):
        ...     rating: Prop[float] = prop(default=0.0)
        >>> Movie("Action", "Alien", rating=4.5).rating
        4.5
        >>> str(Movie.rating > 4.0)
        'rating gt 4.0'
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

    if TYPE_CHECKING:

        @overload
        def __get__(self, obj: None, owner: Any) -> Self: ...
        @overload
        def __get__(self, obj: object, owner: Any) -> T: ...
        def __get__(self, obj: object, owner: Any) -> Any: ...
        def __set__(self, obj: object, value: T) -> None: ...

    def __repr__(self) -> str:
        return f"<Prop {self.owner.__name__}.{self.attr} ({self.wire}: {self.edm})>"

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError(
            f"a property column ({self.owner.__name__}.{self.attr}) has no truth value; build "
            "conditions with ==, <, ..., &, |, ~ and pass them to Query.where()"
        )

    # -- comparisons build conditions (azt.query) ------------------------------------------
    def _cmp(self, op: str, value: Any) -> Comparison:
        from azt._orm.query import Comparison

        return Comparison.build(self, op, value)

    # Typing: a comparison with a value of the property's type is a Comparison. Comparing an
    # Optional property with None is refused at run time (null is not a $filter literal);
    # statically it is a bool, like a wrong-typed == (mypy falls back to object.__eq__
    # there), so that where(), &, | and ~ reject it as a type error. The first overload only
    # matches Optional properties (Prop[X | None]); for the others None is simply not a T.
    @overload  # type: ignore[override]
    def __eq__(self: Prop[_V | None], other: None) -> bool: ...
    @overload
    def __eq__(self, other: T) -> Comparison: ...
    def __eq__(self, other: Any) -> Any:
        return self._cmp("eq", other)

    @overload  # type: ignore[override]
    def __ne__(self: Prop[_V | None], other: None) -> bool: ...
    @overload
    def __ne__(self, other: T) -> Comparison: ...
    def __ne__(self, other: Any) -> Any:
        return self._cmp("ne", other)

    @overload
    def __lt__(self: Prop[_V | None], other: None) -> bool: ...
    @overload
    def __lt__(self, other: T) -> Comparison: ...
    def __lt__(self, other: Any) -> Any:
        return self._cmp("lt", other)

    @overload
    def __le__(self: Prop[_V | None], other: None) -> bool: ...
    @overload
    def __le__(self, other: T) -> Comparison: ...
    def __le__(self, other: Any) -> Any:
        return self._cmp("le", other)

    @overload
    def __gt__(self: Prop[_V | None], other: None) -> bool: ...
    @overload
    def __gt__(self, other: T) -> Comparison: ...
    def __gt__(self, other: Any) -> Any:
        return self._cmp("gt", other)

    @overload
    def __ge__(self: Prop[_V | None], other: None) -> bool: ...
    @overload
    def __ge__(self, other: T) -> Comparison: ...
    def __ge__(self, other: Any) -> Any:
        return self._cmp("ge", other)

    @overload
    def between(self: Prop[_V | None], low: _V, high: _V) -> Condition: ...
    @overload
    def between(self: Prop[_V | None], low: _V | None, high: _V | None) -> bool: ...
    @overload
    def between(self, low: T, high: T) -> Condition: ...
    def between(self, low: Any, high: Any) -> Any:
        """Inclusive range: ``low <= prop <= high``.

        Example::

            >>> str(Movie.rating.between(2.0, 4.0))
            'rating ge 2.0 and rating le 4.0'
        """
        from azt._orm.query import And

        return And.of(self._cmp("ge", low), self._cmp("le", high))

    @overload
    def in_(self: Prop[_V | None], values: Iterable[_V]) -> Condition: ...
    @overload
    def in_(self: Prop[_V | None], values: Iterable[_V | None]) -> bool: ...
    @overload
    def in_(self, values: Iterable[T]) -> Condition: ...
    def in_(self, values: Iterable[Any]) -> Any:
        """Membership, expanded to ``eq`` comparisons joined by ``or``.

        Example::

            >>> str(Movie.PartitionKey.in_(["Action", "War"]))
            "PartitionKey eq 'Action' or PartitionKey eq 'War'"
        """
        from azt._orm.query import Or

        items = [self._cmp("eq", v) for v in values]
        if not items:
            raise ValidationError(
                f"{self.owner.__name__}.{self.attr}.in_() got no values: the Table service "
                "has no 'false' filter; skip the query instead"
            )
        return Or.of(*items)

    def startswith(self: Prop[str] | Prop[str | None], prefix: str) -> Condition:
        """Prefix match, compiled to a range (``ge prefix and lt next``) the service can use.

        Example::

            >>> str(Movie.RowKey.startswith("Sh"))
            "RowKey ge 'Sh' and RowKey lt 'Si'"
        """
        from azt._orm.query import prefix_condition

        return prefix_condition(self, prefix)

    # Bare Boolean columns combine like conditions: (Movie.rating > 4) & Movie.favorite
    def _as_condition(self) -> Condition:
        if self.edm is not EdmType.BOOLEAN or self.converter is not None:
            raise TypeError(
                f"{self.owner.__name__}.{self.attr} is {self.edm}, not a Boolean; "
                "only Boolean properties can be used as conditions on their own"
            )
        return self._cmp("eq", True)

    def __and__(self: _BoolColumn, other: _Conditional) -> Condition:
        return self._as_condition() & other

    def __rand__(self: _BoolColumn, other: _Conditional) -> Condition:
        from azt._orm.query import as_condition

        return as_condition(other) & self._as_condition()

    def __or__(self: _BoolColumn, other: _Conditional) -> Condition:
        return self._as_condition() | other

    def __ror__(self: _BoolColumn, other: _Conditional) -> Condition:
        from azt._orm.query import as_condition

        return as_condition(other) | self._as_condition()

    def __invert__(self: _BoolColumn) -> Condition:
        return ~self._as_condition()

    # -- value checking ----------------------------------------------------------------------
    def check(self, value: Any) -> Any:
        """Validate and normalise a Python value for this property (used on construction,
        assignment and in query literals); returns the value to keep.

        Example::

            >>> Movie.rating.check(4)
            4.0
        """
        if value is None:
            if self.optional:
                return None
            raise ValidationError(f"{self._label()} is required and cannot be None")
        stored = _storage_value(self, value)
        return value if self.converter is not None else stored

    def _label(self) -> str:
        return f"{self.owner.__name__}.{self.attr}"


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", repr(tp))


def _storage_value(p: Prop[Any], value: Any, *, key_rules: bool = True) -> Any:
    """``value`` (not None) as stored: through the converter if any, checked against the
    EDM type and normalised (``key_rules=False`` for query literals, which may name keys
    that cannot exist)."""
    conv = p.converter
    if conv is not None:
        if not isinstance(value, p.py_type):
            raise ValidationError(
                f"{p._label()} expects {_type_name(p.py_type)}, got {type(value).__name__}"
            )
        value = conv.to_wire(value)
    return _check_storage(p, value, p.edm, key_rules=key_rules)


def _refuse_lone_surrogate(label: str, v: str) -> None:
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad_char = exc.object[exc.start : exc.end]
        raise ValidationError(
            f"{label} contains a lone surrogate ({bad_char!r}), which cannot be sent as UTF-8"
        ) from None


def _check_storage(p: Prop[Any], v: Any, edm: EdmType, *, key_rules: bool = True) -> Any:
    """Check ``v`` against ``edm``; returns the normalised value."""
    tv = type(v)
    if edm is EdmType.STRING:
        if tv is not str and not isinstance(v, str):
            raise ValidationError(f"{p._label()} expects str, got {tv.__name__}")
        if not v.isascii():
            _refuse_lone_surrogate(p._label(), v)
        if key_rules and p.is_key:
            validate_key(p._label(), v)
        elif len(v) > MAX_STRING_UTF16 // 2 and utf16_len(v) > MAX_STRING_UTF16:
            raise ValidationError(
                f"{p._label()} exceeds 64 KiB (32768 UTF-16 code units): {utf16_len(v)}"
            )
        return v
    if edm is EdmType.INT32 or edm is EdmType.INT64:
        if tv is bool or not isinstance(v, int):
            raise ValidationError(f"{p._label()} expects int, got {tv.__name__}")
        lo, hi = (INT32_MIN, INT32_MAX) if edm is EdmType.INT32 else (INT64_MIN, INT64_MAX)
        if not lo <= v <= hi:
            raise ValidationError(f"{p._label()} = {v} is outside the {edm} range [{lo}, {hi}]")
        return int(v)
    if edm is EdmType.DOUBLE:
        if tv is float:
            return v
        if tv is bool or not isinstance(v, int | float):
            raise ValidationError(f"{p._label()} expects float, got {tv.__name__}")
        try:
            return float(v)
        except OverflowError:
            raise ValidationError(
                f"{p._label()} got an int of {int(v).bit_length()} bits, too big for an Edm.Double"
            ) from None
    if edm is EdmType.BOOLEAN:
        if tv is not bool:
            raise ValidationError(f"{p._label()} expects bool, got {tv.__name__}")
        return v
    if edm is EdmType.DATETIME:
        if not isinstance(v, datetime):
            raise ValidationError(f"{p._label()} expects datetime, got {tv.__name__}")
        off = v.utcoffset()
        if off is None:
            raise ValidationError(
                f"{p._label()} got a naive datetime; azt refuses to guess its zone. "
                "Use an aware datetime, e.g. datetime.now(UTC) or dt.replace(tzinfo=UTC)"
            )
        v = EdmDateTime.from_datetime(v)
        if v.year < _MIN_YEAR:
            raise ValidationError(f"{p._label()} = {v.to_wire()} is before 1601-01-01 UTC")
        return v
    if edm is EdmType.GUID:
        if not isinstance(v, uuid.UUID):
            raise ValidationError(f"{p._label()} expects uuid.UUID, got {tv.__name__}")
        return v
    if edm is EdmType.BINARY:
        if tv is not bytes:
            if not isinstance(v, bytes | bytearray | memoryview):
                raise ValidationError(f"{p._label()} expects bytes, got {tv.__name__}")
            v = bytes(v)
        if len(v) > MAX_BINARY_BYTES:
            raise ValidationError(f"{p._label()} exceeds 64 KiB: {len(v)} bytes")
        return v
    raise ValidationError(f"{p._label()}: unsupported EDM type {edm}")  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Field specifier
# --------------------------------------------------------------------------------------------


_NOTHING: Any = attrs.NOTHING


class _PropSpec(typing.NamedTuple):
    default: Any = _NOTHING
    factory: Callable[[], Any] | None = None
    name: str | None = None
    edm: EdmType | None = None
    converter: Converter[Any] | None = None
    kw_only: bool = True
    eq: bool = True


@overload
def prop(
    *,
    default: T,
    name: str | None = None,
    edm: EdmType | None = None,
    converter: Converter[Any] | None = None,
    kw_only: bool = True,
    eq: bool = True,
) -> Prop[T]: ...
@overload
def prop(
    *,
    factory: Callable[[], T],
    name: str | None = None,
    edm: EdmType | None = None,
    converter: Converter[Any] | None = None,
    kw_only: bool = True,
    eq: bool = True,
) -> Prop[T]: ...
@overload
def prop(
    *,
    name: str | None = None,
    edm: EdmType | None = None,
    converter: Converter[Any] | None = None,
    kw_only: bool = True,
    eq: bool = True,
) -> Any: ...
def prop(
    *,
    default: Any = _NOTHING,
    factory: Callable[[], Any] | None = None,
    name: str | None = None,
    edm: EdmType | None = None,
    converter: Converter[Any] | None = None,
    kw_only: bool = True,
    eq: bool = True,
) -> Any:
    """Declare a property's options: default, wire name, explicit EDM type, converter.

    ``name`` is the property name on the wire (default: the Python name). ``edm`` overrides the
    inferred type (``EdmType.INT64`` for an ``int``; ``EdmType.STRING`` is not allowed for an
    ``int``: use a converter). ``kw_only=False`` makes the ``__init__`` parameter positional.

    Example::

        >>> class Member(Entity):
        ...     rental_count: Prop[int] = prop(name="RentalCount", default=0)
        >>> Member("m1", "Member").rental_count
        0
    """
    if default is not _NOTHING and factory is not None:
        raise TypeError("prop() takes default or factory, not both")
    return _PropSpec(default, factory, name, edm, converter, kw_only, eq)


# --------------------------------------------------------------------------------------------
# Metaclass and base
# --------------------------------------------------------------------------------------------

_RESERVED_ATTRS = frozenset({"from_entity", "to_entity"})
_BUILDING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "azt_entity_building", default=False
)
#: class -> {python attribute name: Prop}; read by EntityMeta.__getattribute__
_CLASS_PROPS: dict[type, dict[str, Prop[Any]]] = {}


@attrs.frozen
class EntityInfo:
    """What azt knows about an entity class: its properties in declaration order.

    Example::

        >>> info = entity_info(Movie)
        >>> [p.wire for p in info.props][:4]
        ['PartitionKey', 'RowKey', 'Timestamp', 'ETag']
    """

    cls: type
    props: tuple[Prop[Any], ...]
    by_attr: Mapping[str, Prop[Any]]
    by_wire: Mapping[str, Prop[Any]]

    @property
    def data_props(self) -> tuple[Prop[Any], ...]:
        """The properties that are sent on writes (everything but Timestamp and ETag).

        Example::

            >>> [p.wire for p in entity_info(Movie).data_props][:2]
            ['PartitionKey', 'RowKey']
        """
        return tuple(p for p in self.props if p.attr not in ("Timestamp", "ETag"))


def entity_info(cls: type[Entity]) -> EntityInfo:
    """The :class:`EntityInfo` of an entity class.

    Example::

        >>> entity_info(Movie).by_wire["ReleaseYear"].attr
        'release_year'
    """
    info = type.__getattribute__(cls, "__azt_info__")
    assert isinstance(info, EntityInfo)
    return info


def _resolve_annotation(raw: Any, globalns: dict[str, Any], localns: Mapping[str, Any]) -> Any:
    if isinstance(raw, str):
        ns = {"Prop": Prop, "Int64": Int64, **dict(localns)}
        try:
            return eval(raw, globalns, ns)
        except NameError as exc:
            raise TypeError(
                f"cannot resolve annotation {raw!r} ({exc}); define the types it names at "
                "module level"
            ) from exc
    return raw


def _analyse(tp: Any) -> tuple[Any, bool, EdmType | None, bool]:
    """Unwrap ``Prop[...]``, ``Optional`` and ``Annotated``:
    (python type, optional, edm from annotation, is ClassVar)."""
    origin = typing.get_origin(tp)
    if tp is ClassVar or origin is ClassVar:
        return None, False, None, True
    if origin is Prop:
        (tp,) = typing.get_args(tp)
        origin = typing.get_origin(tp)
    edm: EdmType | None = None
    optional = False
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) < len(typing.get_args(tp))
        if len(args) != 1:
            raise TypeError(f"a property must have one type (optionally | None), got {tp!r}")
        tp = args[0]
        origin = typing.get_origin(tp)
    if origin is Annotated:
        base, *extras = typing.get_args(tp)
        for x in extras:
            if isinstance(x, EdmType):
                edm = x
        tp = base
    return tp, optional, edm, False


def _make_prop(
    owner_name: str,
    attr_name: str,
    tp: Any,
    optional: bool,
    ann_edm: EdmType | None,
    spec: _PropSpec,
) -> Prop[Any]:
    p: Prop[Any] = Prop()
    p.attr = attr_name
    p.wire = spec.name or attr_name
    p.optional = optional
    p.py_type = tp
    p.system = attr_name in _SYSTEM_NAMES
    p.is_key = attr_name in ("PartitionKey", "RowKey")
    p.converter = spec.converter
    edm = spec.edm or ann_edm
    where = f"{owner_name}.{attr_name}"
    if p.wire in _SYSTEM_NAMES and not p.system:
        raise TypeError(f"{where}: wire name {p.wire!r} is reserved for a system property")
    if not p.system:
        _check_property_name(where, p.wire)
    if p.converter is None and isinstance(tp, type) and tp not in _PY_TO_EDM:
        if issubclass(tp, enum.Enum):
            p.converter = _enum_converter(tp)
        elif tp in _CONVERTERS:
            p.converter = _CONVERTERS[tp]
        elif issubclass(tp, bool | int | float | str | bytes | datetime | uuid.UUID):
            raise TypeError(f"{where}: subclasses of EDM types need a registered Converter")
    if p.converter is not None:
        if edm is not None and edm is not p.converter.edm:
            raise TypeError(f"{where}: edm={edm} contradicts the converter's {p.converter.edm}")
        p.edm = p.converter.edm
    else:
        base = _PY_TO_EDM.get(tp) if isinstance(tp, type) else None
        if base is None:
            raise TypeError(
                f"{where}: {tp!r} is not an EDM type (str, int, Int64, float, bool, datetime, "
                "uuid.UUID, bytes), an Enum, or a type with a registered Converter"
            )
        if edm is None:
            edm = base
        elif not (edm is base or (base is EdmType.INT32 and edm is EdmType.INT64)):
            raise TypeError(f"{where}: a {tp.__name__} cannot be stored as {edm}")
        p.edm = edm
    if p.is_key and (p.edm is not EdmType.STRING or p.converter is not None or optional):
        raise TypeError(f"{where}: keys are non-optional str properties")
    return p


def _copy_prop(p: Prop[Any]) -> Prop[Any]:
    q: Prop[Any] = Prop()
    for name in Prop.__slots__:
        setattr(q, name, getattr(p, name))
    return q


def _check_property_name(where: str, name: str) -> None:
    if not name or len(name) > 255 or not name.isidentifier() or name.startswith("odata"):
        raise TypeError(
            f"{where}: {name!r} is not a valid Table property name (a C# identifier: letter or "
            "'_' first, then letters, digits or '_', at most 255 characters)"
        )


def _assign_hook(check: Callable[[Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """attrs ``on_setattr`` hook: validate and normalise an assigned value (one call,
    instead of attrs' generic convert-then-validate pipe)."""

    def hook(_inst: Any, _attrib: Any, value: Any) -> Any:
        return check(value)

    return hook


@dataclass_transform(kw_only_default=True, field_specifiers=(prop,))
class EntityMeta(type):
    """Metaclass of :class:`Entity`: builds the attrs slotted class and the columns.

    Example::

        >>> type(Movie) is EntityMeta
        True
    """

    def __new__(
        mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kwargs: Any
    ) -> EntityMeta:
        if _BUILDING.get():
            return super().__new__(mcls, name, bases, ns, **kwargs)
        frame = sys._getframe(1)  # the frame running the class statement
        module = sys.modules.get(ns.get("__module__", ""), None)
        globalns = dict(vars(module)) if module is not None else {}
        globalns.update(frame.f_globals)
        localns = dict(frame.f_locals) if frame.f_locals is not frame.f_globals else {}
        raw_ann: dict[str, Any] = dict(ns.get("__annotations__", {}))
        own: dict[str, Prop[Any]] = {}
        specs: dict[str, _PropSpec] = {}
        for attr_name, raw in raw_ann.items():
            tp = _resolve_annotation(raw, globalns, localns)
            py_type, optional, ann_edm, is_classvar = _analyse(tp)
            if is_classvar:
                continue
            if attr_name.startswith("_"):
                raise TypeError(f"{name}.{attr_name}: property names cannot start with '_'")
            if attr_name in _RESERVED_ATTRS:
                raise TypeError(
                    f"{name}.{attr_name} would hide Entity.{attr_name}(); use another Python "
                    f"name and prop(name={attr_name!r}) for the wire name"
                )
            value = ns.pop(attr_name, _NOTHING)
            spec = value if isinstance(value, _PropSpec) else _PropSpec(default=value)
            specs[attr_name] = spec
            own[attr_name] = _make_prop(name, attr_name, py_type, optional, ann_edm, spec)
        cls = super().__new__(mcls, name, bases, ns, **kwargs)
        inherited: dict[str, Prop[Any]] = {}
        for base in reversed(cls.__mro__[1:]):
            base_props = _CLASS_PROPS.get(base)
            if base_props:
                inherited.update(base_props)
        for attr_name in own:
            if attr_name in inherited and attr_name in _SYSTEM_NAMES:
                raise TypeError(f"{name}.{attr_name} redefines a system property")
        # Every class redefines all its fields (inherited ones as copies owned by it), so
        # that messages and columns name the class the user works with.
        base_fields = {}
        for base in cls.__mro__[1:]:
            if base in _CLASS_PROPS:
                base_fields = {a.name: a for a in attrs.fields(base)}
                break
        props: dict[str, Prop[Any]] = {}
        for attr_name, bp in inherited.items():
            props[attr_name] = own[attr_name] if attr_name in own else _copy_prop(bp)
        for attr_name, p in own.items():
            props.setdefault(attr_name, p)
        these: dict[str, Any] = {}
        for p in props.values():
            p.owner = cls  # provisional, for messages while the class is built
        for attr_name, p in props.items():
            if attr_name in own:
                spec = specs[attr_name]
                default: Any = spec.default
                if spec.factory is not None:
                    default = attrs.Factory(spec.factory)
                elif default is not _NOTHING:
                    default = p.check(default)  # a bad default fails at class creation
                kw_only = spec.kw_only
                eq = spec.eq and attr_name not in ("Timestamp", "ETag")
            else:
                a = base_fields[attr_name]
                default, kw_only, eq = a.default, a.kw_only, a.eq
            these[attr_name] = attrs.field(
                default=default,
                converter=p.check,
                on_setattr=_assign_hook(p.check),
                kw_only=kw_only,
                eq=eq,
            )
        token = _BUILDING.set(True)
        try:
            built = attrs.define(cls, these=these, slots=True, weakref_slot=True, repr=False)
        finally:
            _BUILDING.reset(token)
        type.__setattr__(built, "__eq__", _projection_safe_eq(built))
        all_props = props
        for p in all_props.values():
            p.owner = built
        by_wire: dict[str, Prop[Any]] = {}
        for p in all_props.values():
            if p.wire in by_wire:
                raise TypeError(f"{name}: two properties map to wire name {p.wire!r}")
            by_wire[p.wire] = p
        if len(by_wire) - 4 > 252:
            raise TypeError(f"{name}: more than 252 properties")
        _CLASS_PROPS[built] = all_props
        type.__setattr__(
            built,
            "__azt_info__",
            EntityInfo(built, tuple(all_props.values()), dict(all_props), by_wire),
        )
        return built

    if not TYPE_CHECKING:

        def __getattribute__(cls, name):
            props = _CLASS_PROPS.get(cls)
            if props is not None:
                p = props.get(name)
                if p is not None and not _BUILDING.get():  # attrs reads the real slots
                    return p
            return type.__getattribute__(cls, name)

        def __setattr__(cls, name, value):
            _refuse_column_change(cls, name)
            type.__setattr__(cls, name, value)

        def __delattr__(cls, name):
            _refuse_column_change(cls, name)
            type.__delattr__(cls, name)


def _refuse_column_change(cls: type, name: str) -> None:
    """``Movie.rating = 4`` would replace the slot every instance reads (meant: an
    instance); refuse it once the class is built."""
    props = _CLASS_PROPS.get(cls)
    if props is not None and name in props and not _BUILDING.get():
        raise AttributeError(
            f"cannot replace or delete the column {cls.__name__}.{name} on the class "
            "(set it on an instance)"
        )


if TYPE_CHECKING:

    class _MetadataColumn:
        """How type checkers see ``Entity.ETag``: a ``str | None`` on instances, and on the
        class a column without comparison operators (the ETag is response metadata, not a
        stored property, and cannot be filtered). At run time it is a :class:`Prop`."""

        @overload
        def __get__(self, obj: None, owner: Any) -> Self: ...
        @overload
        def __get__(self, obj: object, owner: Any) -> str | None: ...
        def __get__(self, obj: object, owner: Any) -> Any: ...
        def __set__(self, obj: object, value: str | None) -> None: ...


class _NotSelected:
    """Shown by ``repr`` for a property outside a query's projection (left unset)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<not selected>"


_NOT_SELECTED = _NotSelected()


def _projection_safe_eq(cls: type) -> Callable[[Any, Any], Any]:
    """Wrap attrs' generated ``__eq__`` (``__ne__`` calls it) so that objects from a
    projection, whose unselected slots are unset, compare instead of raising: equal when
    the same properties are set, with equal values."""
    fast = type.__getattribute__(cls, "__eq__")
    names = tuple(a.name for a in attrs.fields(cls) if a.eq)

    def __eq__(self: Any, other: Any) -> Any:
        try:
            return fast(self, other)
        except AttributeError:
            pass
        for name in names:
            a = getattr(self, name, _NOT_SELECTED)
            b = getattr(other, name, _NOT_SELECTED)
            if a is not b and (a is _NOT_SELECTED or b is _NOT_SELECTED or a != b):
                return False
        return True

    return __eq__


class Entity(metaclass=EntityMeta):
    """Base class of declarative entities; see the module docstring.

    Example::

        >>> class Rental(Entity):
        ...     movie: Prop[str]
        >>> r = Rental("member-1", "Rental_Alien", movie="Alien")
        >>> (r.PartitionKey, r.RowKey, r.movie, r.ETag)
        ('member-1', 'Rental_Alien', 'Alien', None)
    """

    PartitionKey: Prop[str] = prop(kw_only=False)
    RowKey: Prop[str] = prop(kw_only=False)
    Timestamp: Prop[datetime | None] = prop(default=None)
    if TYPE_CHECKING:  # a column that cannot be filtered: no comparison operators
        ETag: _MetadataColumn = prop(default=None, eq=False)  # type: ignore[assignment]
    else:
        ETag: Prop[str | None] = prop(default=None, eq=False)

    def __repr__(self) -> str:
        """Every property by its Python name; properties outside a query's projection (see
        ``Query.select``) show as ``<not selected>``.

        Example::

            >>> Rental("m", "r", movie="Alien")
            Rental(PartitionKey='m', RowKey='r', Timestamp=None, ETag=None, movie='Alien')
        """
        cls = type(self)
        shown = ", ".join(
            f"{p.attr}={getattr(self, p.attr, _NOT_SELECTED)!r}" for p in entity_info(cls).props
        )
        return f"{cls.__name__}({shown})"

    @classmethod
    def from_entity(cls, entity: Mapping[str, Any]) -> Self:
        """Build an instance from a dict-shaped entity (``azt.edm.TableEntity``), fast path.

        Example::

            >>> Rental.from_entity({"PartitionKey": "m", "RowKey": "r", "movie": "Alien"}).movie
            'Alien'
        """
        from azt._orm.codec import codec_for

        obj: Self = codec_for(cls).from_entity(entity)
        return obj

    def to_entity(self) -> TableEntity:
        """The dict-shaped entity to send (an ``azt.edm.TableEntity``; None values omitted).

        Example::

            >>> Rental("m", "r", movie="Alien").to_entity()
            TableEntity({'PartitionKey': 'm', 'RowKey': 'r', 'movie': 'Alien'})
        """
        from azt._orm.codec import codec_for

        return codec_for(type(self)).to_entity(self)


class _LazyTimestamp:
    """``Entity.Timestamp`` on instances: decoders store the service's text and it is parsed
    on first read (most code never reads it; parsing is about a third of a page's decode
    time). Class-level access never gets here (the metaclass answers with the column)."""

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        v = self._slot.__get__(obj, owner)
        if v.__class__ is str:
            v = EdmDateTime.parse(v)
            self._slot.__set__(obj, v)
        return v

    def __set__(self, obj: object, value: Any) -> None:
        self._slot.__set__(obj, value)

    def __delete__(self, obj: object) -> None:
        self._slot.__delete__(obj)


_TIMESTAMP_SLOT: Any = type.__getattribute__(Entity, "__dict__")["Timestamp"]
#: stores a raw wire string (or a datetime) into an entity's Timestamp slot, unparsed
_set_raw_timestamp: Callable[[Any, Any], None] = _TIMESTAMP_SLOT.__set__
type.__setattr__(Entity, "Timestamp", _LazyTimestamp(_TIMESTAMP_SLOT))
