"""The columns of entity classes: ``Prop`` (a typed property: its value on instances, a
query column on the class), ``prop()`` to declare its options, building a column from an
annotation, and ``EntityInfo``, a class's columns.

Example::

    >>> Movie.rating > 4.0
    <Comparison rating gt 4.0>
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, TypeVar, cast, overload

import attrs

from azt._core.base import validate_table_name
from azt._edm.datetime import EdmDateTime
from azt._edm.types import EdmType
from azt._errors import ValidationError
from azt._orm.evolution import BoundEvolution
from azt._orm.expr import (
    And,
    Comparison,
    Condition,
    Conditional,
    Or,
    as_condition,
    prefix_condition,
)
from azt._orm.indexes import IndexDef
from azt._orm.values import (
    PY_TO_EDM,
    Column,
    Converter,
    check_property_name,
    converter_for,
    storage_value,
)

__all__ = [
    "KEY_NAMES",
    "NOTHING",
    "SYSTEM_NAMES",
    "EntityInfo",
    "Int64",
    "LazyTimestamp",
    "Prop",
    "PropSpec",
    "analyse_annotation",
    "class_table",
    "copy_prop",
    "default_table",
    "entity_info",
    "make_prop",
    "partition_key",
    "prop",
    "resolve_annotation",
    "row_key",
]

T = TypeVar("T")
_V = TypeVar("_V")
if TYPE_CHECKING:
    from typing import TypeAlias

    #: a Boolean column, which is a condition on its own (``Movie.favorite``)
    _BoolColumn: TypeAlias = "Prop[bool] | Prop[bool | None]"

#: Annotation for an Edm.Int64 property: ``views: Prop[Int64]``. The value is a plain ``int``.
Int64 = Annotated[int, EdmType.INT64]

SYSTEM_NAMES = frozenset({"PartitionKey", "RowKey", "Timestamp", "ETag"})
#: the wire names of the two keys; a class may give them other Python names
KEY_NAMES = ("PartitionKey", "RowKey")


class Prop(Column[T]):
    """A typed entity property: ``T`` on instances, a query column on the class.

    Example::

        >>> class Movie(Entity):
        ...     rating: Prop[float] = prop(default=0.0)
        >>> Movie("Action", "Alien", rating=4.5).rating
        4.5
        >>> str(Movie.rating > 4.0)
        'rating gt 4.0'
    """

    __slots__ = ()

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
        return prefix_condition(self, prefix)

    # Bare Boolean columns combine like conditions: (Movie.rating > 4) & Movie.favorite
    def __and__(self: _BoolColumn, other: Conditional) -> Condition:
        return as_condition(self) & other

    def __rand__(self: _BoolColumn, other: Conditional) -> Condition:
        return as_condition(other) & as_condition(self)

    def __or__(self: _BoolColumn, other: Conditional) -> Condition:
        return as_condition(self) | other

    def __ror__(self: _BoolColumn, other: Conditional) -> Condition:
        return as_condition(other) | as_condition(self)

    def __invert__(self: _BoolColumn) -> Condition:
        return ~as_condition(self)

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
            raise ValidationError(f"{self.label()} is required and cannot be None")
        stored = storage_value(self, value)
        return value if self.converter is not None else stored


NOTHING: Any = attrs.NOTHING


class PropSpec(typing.NamedTuple):
    default: Any = NOTHING
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
    default: Any = NOTHING,
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
    if default is not NOTHING and factory is not None:
        raise TypeError("prop() takes default or factory, not both")
    return PropSpec(default, factory, name, edm, converter, kw_only, eq)


def partition_key(*, kw_only: bool = True) -> Prop[str]:
    """Declare the PartitionKey under a domain name, on a class derived from
    :class:`azt.entity.EntityBase` (the same as ``prop(name="PartitionKey")``, typed
    ``Prop[str]``). Like every property it is a keyword argument of ``__init__``;
    ``kw_only=False`` makes it positional (spell it out: type checkers read only the
    literal argument).

    Example::

        >>> class Order(EntityBase):
        ...     customer_id: Prop[str] = partition_key()
        ...     order_id: Prop[str] = row_key()
        >>> o = Order(customer_id="c-1", order_id="o-7")
        >>> o.to_entity()
        TableEntity({'PartitionKey': 'c-1', 'RowKey': 'o-7'})
        >>> str(Order.customer_id == "c-1")
        "PartitionKey eq 'c-1'"
    """
    spec: Any = PropSpec(name="PartitionKey", kw_only=kw_only)
    return cast("Prop[str]", spec)


def row_key(*, kw_only: bool = True) -> Prop[str]:
    """Declare the RowKey under a domain name (see :func:`partition_key`).

    Example::

        >>> class Order(EntityBase):
        ...     customer_id: Prop[str] = partition_key(kw_only=False)
        ...     order_id: Prop[str] = row_key(kw_only=False)
        >>> Order("c-1", "o-7").order_id
        'o-7'
    """
    spec: Any = PropSpec(name="RowKey", kw_only=kw_only)
    return cast("Prop[str]", spec)


@attrs.frozen
class EntityInfo:
    """What azt knows about an entity class: its properties in declaration order, and the
    table it names (``class Movie(Entity, table="movies")`` or a ``Meta`` with ``table``;
    ``None`` when it names none), which the context and ``Query`` use when not given one.

    Example::

        >>> info = entity_info(Movie)
        >>> [p.wire for p in info.props][:4]
        ['PartitionKey', 'RowKey', 'Timestamp', 'ETag']
        >>> class Review(Entity, table="reviews"):
        ...     stars: Prop[int] = prop(default=0)
        >>> entity_info(Review).table
        'reviews'
    """

    cls: type
    props: tuple[Prop[Any], ...]
    by_attr: Mapping[str, Prop[Any]]
    by_wire: Mapping[str, Prop[Any]]
    table: str | None = None
    #: the secondary indexes the class declares (``Meta.indexes``; see azt.indexes)
    indexes: tuple[IndexDef, ...] = ()
    #: the PartitionKey and RowKey columns, whatever their Python names (``None`` on a
    #: class that declares no keys, such as ``EntityBase``, which cannot be stored)
    partition_key: Prop[Any] | None = None
    row_key: Prop[Any] | None = None
    #: the class's schema evolution (``Meta.evolution``; see azt.migrate), bound to its columns
    evolution: BoundEvolution | None = None

    def key_props(self) -> tuple[Prop[Any], Prop[Any]]:
        """(PartitionKey column, RowKey column); :class:`TypeError` for a class without keys.

        Example::

            >>> [p.attr for p in entity_info(Movie).key_props()]
            ['PartitionKey', 'RowKey']
        """
        pk, rk = self.partition_key, self.row_key
        if pk is None or rk is None:
            missing = " and no ".join(
                f"{wire} ({helper}())"
                for wire, helper, p in (
                    ("PartitionKey", "partition_key", pk),
                    ("RowKey", "row_key", rk),
                )
                if p is None
            )
            raise TypeError(
                f"{self.cls.__name__} declares no {missing}, so it cannot be stored: declare "
                "its keys, or derive from azt.Entity (keys named PartitionKey and RowKey)"
            )
        return pk, rk

    @property
    def data_props(self) -> tuple[Prop[Any], ...]:
        """The properties that are sent on writes (everything but Timestamp and ETag).

        Example::

            >>> [p.wire for p in entity_info(Movie).data_props][:2]
            ['PartitionKey', 'RowKey']
        """
        return tuple(p for p in self.props if p.attr not in ("Timestamp", "ETag"))


def entity_info(cls: type) -> EntityInfo:
    """The :class:`EntityInfo` of an entity class (:class:`TypeError` for anything else).

    Example::

        >>> entity_info(Movie).by_wire["ReleaseYear"].attr
        'release_year'
    """
    try:
        info = type.__getattribute__(cls, "__azt_info__")
    except (AttributeError, TypeError):
        raise TypeError(f"{cls!r} is not an entity class (a subclass of azt.Entity)") from None
    assert isinstance(info, EntityInfo)
    return info


def default_table(target: object) -> str | None:
    """The table an entity class names (``None`` for anything else, or a class naming none).

    Example::

        >>> class Review(Entity, table="reviews"):
        ...     stars: Prop[int] = prop(default=0)
        >>> default_table(Review), default_table(Movie), default_table("reviews")
        ('reviews', None, None)
    """
    info = getattr(target, "__azt_info__", None) if isinstance(target, type) else None
    return info.table if isinstance(info, EntityInfo) else None


def class_table(name: str, kwarg: object, meta: object) -> str | None:
    """The table a class statement names: the ``table=`` class keyword or ``Meta.table``
    (both: the same name, or a :class:`TypeError`); checked as a table name."""
    from_meta = getattr(meta, "table", None) if meta is not None else None
    if kwarg is not None and from_meta is not None and kwarg != from_meta:
        raise TypeError(
            f"{name}: table={kwarg!r} and Meta.table={from_meta!r} disagree; name the table once"
        )
    table = kwarg if kwarg is not None else from_meta
    if table is None:
        return None
    try:
        return validate_table_name(table)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise TypeError(f"{name}: {exc}") from None


def resolve_annotation(raw: Any, globalns: dict[str, Any], localns: Mapping[str, Any]) -> Any:
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


def analyse_annotation(tp: Any) -> tuple[Any, bool, EdmType | None, bool]:
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


def make_prop(
    owner_name: str,
    attr_name: str,
    tp: Any,
    optional: bool,
    ann_edm: EdmType | None,
    spec: PropSpec,
) -> Prop[Any]:
    p: Prop[Any] = Prop()
    p.attr = attr_name
    p.wire = spec.name or attr_name
    p.optional = optional
    p.py_type = tp
    p.is_key = p.wire in KEY_NAMES
    p.system = attr_name in SYSTEM_NAMES or p.is_key
    p.converter = spec.converter
    edm = spec.edm or ann_edm
    where = f"{owner_name}.{attr_name}"
    if attr_name in KEY_NAMES and p.wire != attr_name:
        raise TypeError(
            f"{where}: the Python name {attr_name!r} is the key's own; a property stored as "
            f"{p.wire!r} needs another Python name"
        )
    if p.wire in SYSTEM_NAMES and not p.system:
        raise TypeError(f"{where}: wire name {p.wire!r} is reserved for a system property")
    if not p.system:
        check_property_name(where, p.wire)
    if p.converter is None:
        p.converter = converter_for(where, tp)
    if p.converter is not None:
        if edm is not None and edm is not p.converter.edm:
            raise TypeError(f"{where}: edm={edm} contradicts the converter's {p.converter.edm}")
        p.edm = p.converter.edm
    else:
        base = PY_TO_EDM.get(tp) if isinstance(tp, type) else None
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
        raise TypeError(
            f"{where}: the {p.wire} is a non-optional str property (Prop[str]), without a "
            "converter; encode other values into the key string (see azt.keys)"
        )
    return p


def copy_prop(p: Prop[Any]) -> Prop[Any]:
    q: Prop[Any] = Prop()
    for name in Column.__slots__:
        setattr(q, name, getattr(p, name))
    return q


class LazyTimestamp:
    """``Entity.Timestamp`` on instances: decoders store the service's text and it is parsed
    on first read (most code never reads it; parsing is about a third of a page's decode
    time). Class-level access never gets here (the metaclass answers with the column).
    ``slot`` is the real slot: decoders write the service's text straight into it.

    Example::

        >>> type(type.__getattribute__(EntityBase, "__dict__")["Timestamp"]).__name__
        'LazyTimestamp'
    """

    __slots__ = ("slot",)

    def __init__(self, slot: Any) -> None:
        self.slot = slot

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        v = self.slot.__get__(obj, owner)
        if v.__class__ is str:
            v = EdmDateTime.parse(v)
            self.slot.__set__(obj, v)
        return v

    def __set__(self, obj: object, value: Any) -> None:
        self.slot.__set__(obj, value)

    def __delete__(self, obj: object) -> None:
        self.slot.__delete__(obj)
