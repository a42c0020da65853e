"""Declarative entity classes: the ``Entity`` base and its metaclass ``EntityMeta``, which
builds an ``attrs`` slotted class and its columns from typed annotations.

Example::

    >>> class Rental(Entity):
    ...     movie: Prop[str] = prop(default="")
    >>> Rental("member-1", "Rental_Alien", movie="Alien").movie
    'Alien'
"""

from __future__ import annotations

import contextvars
import operator
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from types import MemberDescriptorType
from typing import TYPE_CHECKING, Any, Self, cast, dataclass_transform, overload

import attrs

from azt._edm.entity import PartialSlot, TableEntity
from azt._orm.codec import ANNOTATED, codec_for, json_hook, object_encoder
from azt._orm.columns import (
    KEY_NAMES,
    NOTHING,
    EntityInfo,
    LazyTimestamp,
    Prop,
    PropSpec,
    analyse_annotation,
    class_table,
    copy_prop,
    entity_info,
    make_prop,
    partition_key,
    prop,
    resolve_annotation,
    row_key,
)
from azt._orm.evolution import BoundEvolution, Evolution
from azt._orm.indexes import (
    INDEX_RECORD,
    RESERVED,
    Index,
    bind_indexes,
    companion_operations,
    declared_indexes,
    note_index_keys,
)
from azt._orm.values import fast_init, fast_store, value_checker

__all__ = ["Entity", "EntityBase", "EntityMeta"]


_RESERVED_ATTRS = frozenset({"from_entity", "to_entity"})
_BUILDING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "azt_entity_building", default=False
)
#: class -> {python attribute name: Prop}, in declaration order (bases first)
_CLASS_PROPS: dict[type, dict[str, Prop[Any]]] = {}
#: class -> its columns by every name they answer to on the class: the Python names, and
#: ``PartitionKey`` / ``RowKey`` for keys with domain names; read by
#: EntityMeta.__getattribute__
_CLASS_COLUMNS: dict[type, dict[str, Prop[Any]]] = {}
#: class -> the Index declarations it has (its own Meta.indexes, or its base's)
_INDEXES: dict[type, tuple[Index, ...]] = {}
#: class -> ``store(obj, etag, timestamp)``: what assigning its ``ETag`` and ``Timestamp``
#: does, for ``__azt_written__`` (see _note_written_setters)
_WRITTEN: dict[type, Callable[[Any, Any, Any], None]] = {}
#: class -> whether it declares indexes (``declared_indexes``, which reads the class's
#: ``__azt_info__`` through the metaclass: per write, this is one dict lookup)
_INDEXED: dict[type, bool] = {}
#: class -> its generated ``__azt_encoded__`` (``object_encoder``; ``None``: it has none)
_ENCODERS: dict[type, Callable[[Any], Any] | None] = {}
#: class -> the ``__init__`` attrs generated for it, replaced by ``fast_init``'s (kept for
#: the differential tests, which compare the two)
_ATTRS_INIT: dict[type, Callable[..., None]] = {}


class IndexSlot(PartialSlot):
    """The slots every entity object has: the partial-read record, and the record of the
    index RowKeys of its stored version (:mod:`azt._orm.indexes`)."""

    __slots__ = (INDEX_RECORD,)


def _assign_hook(check: Callable[[Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """attrs ``on_setattr`` hook: validate and normalise an assigned value (one call,
    instead of attrs' generic convert-then-validate pipe)."""

    def hook(_inst: Any, _attrib: Any, value: Any) -> Any:
        return check(value)

    return hook


@dataclass_transform(kw_only_default=True, field_specifiers=(prop, partition_key, row_key))
class EntityMeta(type):
    """Metaclass of :class:`Entity`: builds the attrs slotted class and the columns.

    Example::

        >>> type(Movie) is EntityMeta
        True
    """

    def __new__(
        mcls,
        name: str,
        bases: tuple[type, ...],
        ns: dict[str, Any],
        *,
        table: str | None = None,
        **kwargs: Any,
    ) -> EntityMeta:
        if _BUILDING.get():
            return super().__new__(mcls, name, bases, ns, **kwargs)
        own_table = class_table(name, table, ns.get("Meta"))
        own_indexes = getattr(ns.get("Meta"), "indexes", None)
        own_evolution = getattr(ns.get("Meta"), "evolution", None)
        if own_evolution is not None and not isinstance(own_evolution, Evolution):
            raise TypeError(f"{name}.Meta.evolution must be an azt.migrate.Evolution")
        frame = sys._getframe(1)  # the frame running the class statement
        module = sys.modules.get(ns.get("__module__", ""), None)
        globalns = dict(vars(module)) if module is not None else {}
        globalns.update(frame.f_globals)
        localns = dict(frame.f_locals) if frame.f_locals is not frame.f_globals else {}
        base_keys = {
            p.wire: p
            for base in bases
            for klass in type.__getattribute__(base, "__mro__")
            for p in _CLASS_PROPS.get(klass, {}).values()
            if p.is_key
        }
        raw_ann: dict[str, Any] = dict(ns.get("__annotations__", {}))
        own: dict[str, Prop[Any]] = {}
        specs: dict[str, PropSpec] = {}
        for attr_name, raw in raw_ann.items():
            tp = resolve_annotation(raw, globalns, localns)
            py_type, optional, ann_edm, is_classvar = analyse_annotation(tp)
            if is_classvar:
                continue
            if attr_name.startswith("_"):
                raise TypeError(f"{name}.{attr_name}: property names cannot start with '_'")
            if attr_name in _RESERVED_ATTRS:
                raise TypeError(
                    f"{name}.{attr_name} would hide Entity.{attr_name}(); use another Python "
                    f"name and prop(name={attr_name!r}) for the wire name"
                )
            value = ns.pop(attr_name, NOTHING)
            spec = value if isinstance(value, PropSpec) else PropSpec(default=value)
            taken = base_keys.get(spec.name or "")
            if taken is not None and taken.attr != attr_name:
                raise TypeError(_second_key(name, taken, attr_name))
            specs[attr_name] = spec
            own[attr_name] = make_prop(name, attr_name, py_type, optional, ann_edm, spec)
        cls = super().__new__(mcls, name, bases, ns, **kwargs)
        inherited: dict[str, Prop[Any]] = {}
        for base in reversed(cls.__mro__[1:]):
            base_props = _CLASS_PROPS.get(base)
            if base_props:
                inherited.update(base_props)
        for attr_name in own:
            if attr_name in inherited and inherited[attr_name].system:
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
            props[attr_name] = own[attr_name] if attr_name in own else copy_prop(bp)
        for attr_name, p in own.items():
            props.setdefault(attr_name, p)
        these: dict[str, Any] = {}
        positional: dict[str, bool] = {}
        for p in props.values():
            p.owner = cls  # provisional, for messages while the class is built
        for attr_name, p in props.items():
            if attr_name in own:
                spec = specs[attr_name]
                default: Any = spec.default
                if spec.factory is not None:
                    default = attrs.Factory(spec.factory)
                elif default is not NOTHING:
                    default = p.check(default)  # a bad default fails at class creation
                kw_only = spec.kw_only
                eq = spec.eq and attr_name not in ("Timestamp", "ETag")
            else:
                a = base_fields[attr_name]
                default, kw_only, eq = a.default, a.kw_only, a.eq
            check = value_checker(p, p.check)  # p.check with its plain case first
            these[attr_name] = attrs.field(
                default=default,
                converter=check,
                on_setattr=_assign_hook(check),
                kw_only=kw_only,
                eq=eq,
            )
            positional[attr_name] = not kw_only
        these = _keys_first(these, props, positional)
        token = _BUILDING.set(True)
        try:
            built = attrs.define(cls, these=these, slots=True, weakref_slot=True, repr=False)
        finally:
            _BUILDING.reset(token)
        type.__setattr__(built, "__eq__", _projection_safe_eq(built))
        fields = attrs.fields(cast(Any, built))
        setters = _slot_setters(built, props)
        init = fast_init(built, fields, props, setters)
        if init is not None:  # attrs' own __init__, with each value's plain check inline
            _ATTRS_INIT[built] = type.__getattribute__(built, "__init__")
            type.__setattr__(built, "__init__", init)
        _note_written_setters(built, fields, props, setters)
        for p in props.values():
            p.owner = built
        by_wire = _by_wire(name, props)
        pk, rk = by_wire.get("PartitionKey"), by_wire.get("RowKey")
        # keys first (the order of to_entity() and repr), then the rest as declared
        all_props = {p.attr: p for p in (pk, rk) if p is not None}
        all_props.update(props)
        columns = dict(props)
        for key in (pk, rk):
            if key is not None and key.attr != key.wire:
                # the key's service name answers too: Order.PartitionKey (a column) and
                # order.PartitionKey (the value), which generic code (indexes, queries'
                # continuations, messages) reads; classes whose keys keep their names
                # have no such alias, and their reads stay plain slot reads
                columns[key.wire] = key
                type.__setattr__(built, key.wire, _key_alias(key.attr))
        _CLASS_PROPS[built] = props
        _CLASS_COLUMNS[built] = columns
        if own_table is None:  # a subclass keeps the table its base names
            own_table = next(
                (
                    info.table
                    for base in built.__mro__[1:]
                    if isinstance(info := base.__dict__.get("__azt_info__"), EntityInfo)
                ),
                None,
            )
        if own_indexes is None:  # a subclass keeps the indexes its base declares
            own_indexes = next(
                (_INDEXES[base] for base in built.__mro__[1:] if _INDEXES.get(base)),
                None,
            )
        _INDEXES[built] = tuple(own_indexes) if own_indexes is not None else ()
        indexes = bind_indexes(name, own_indexes, all_props)
        if own_evolution is None:  # a subclass keeps the evolution its base declares
            own_evolution = next(
                (
                    info.evolution.evolution
                    for base in built.__mro__[1:]
                    if isinstance(info := base.__dict__.get("__azt_info__"), EntityInfo)
                    and info.evolution is not None
                ),
                None,
            )
        evolution = (
            None
            if own_evolution is None
            else BoundEvolution(name, own_evolution, all_props, json_hook, ANNOTATED)
        )
        type.__setattr__(
            built,
            "__azt_info__",
            EntityInfo(
                built,
                tuple(all_props.values()),
                dict(all_props),
                by_wire,
                own_table,
                indexes,
                pk,
                rk,
                evolution,
            ),
        )
        _INDEXED[built] = bool(declared_indexes(built))
        return built

    def __init__(
        cls,
        name: str,
        bases: tuple[type, ...],
        ns: dict[str, Any],
        *,
        table: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name, bases, ns, **kwargs)

    if not TYPE_CHECKING:

        def __getattribute__(cls, name):
            if name[:1] == "_":  # no column starts with "_" (refused above): dunders fast
                return type.__getattribute__(cls, name)
            props = _CLASS_COLUMNS.get(cls)
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


def _slot_setters(cls: type, props: Mapping[str, Prop[Any]]) -> dict[str, Any]:
    """The setter of each property's slot, as an instance's ``object.__setattr__`` finds
    it (the first class of the MRO holding the name): a slot's own ``__set__``, and the
    slot under :class:`LazyTimestamp` (whose ``__set__`` only forwards to it)."""
    found: dict[str, Any] = {}
    for attr in props:
        for klass in type.__getattribute__(cls, "__mro__"):
            d = type.__getattribute__(klass, "__dict__")
            if attr in d:
                desc = d[attr]
                if isinstance(desc, LazyTimestamp):
                    desc = desc.slot
                if isinstance(desc, MemberDescriptorType):
                    found[attr] = desc.__set__
                break
    return found


def _indexed(cls: type) -> bool:
    """Whether ``cls`` declares indexes (``declared_indexes``, recorded per class)."""
    found = _INDEXED.get(cls)
    return bool(declared_indexes(cls)) if found is None else found


def _note_written_setters(
    cls: type, fields: Any, props: Mapping[str, Prop[Any]], setters: Mapping[str, Any]
) -> None:
    """Record for ``__azt_written__`` what assigning ``ETag`` and ``Timestamp`` does on
    ``cls``: attrs' generated ``__setattr__`` runs the field's check (its ``on_setattr``
    hook, the check that is also its converter) and stores the result in the slot, so
    ``__azt_written__`` does the two in one generated call (``fast_store``: the plain case
    of each check inline). Nothing is recorded when the class's ``__setattr__`` is not
    attrs' (``__azt_written__`` then assigns)."""
    own = type.__getattribute__(cls, "__dict__").get("__setattr__")
    code = getattr(own, "__code__", None)
    if code is None or not code.co_filename.endswith(_ATTRS_MAKE):
        return
    by_name = {a.name: a for a in fields}
    try:
        etag, ts = by_name["ETag"], by_name["Timestamp"]
    except KeyError:  # pragma: no cover (every entity class has both slots)
        return
    if etag.on_setattr is None or ts.on_setattr is None:
        return  # pragma: no cover (prop() always gives both their check)
    checks = {"ETag": etag.converter, "Timestamp": ts.converter}
    store = fast_store(("ETag", "Timestamp"), props, checks, setters)
    if store is not None:
        _WRITTEN[cls] = store


#: where attrs' generated methods (``__setattr__``) are compiled
_ATTRS_MAKE = "/attr/_make.py"


def _keys_first(
    these: dict[str, Any], props: Mapping[str, Prop[Any]], positional: Mapping[str, bool]
) -> dict[str, Any]:
    """The attrs fields with the keys first (the order of ``attrs.fields()`` and
    ``attrs.asdict()``; ``Entity``'s keys follow the ``Timestamp`` and ``ETag`` of
    ``EntityBase`` in declaration order), unless that would move a key ahead of a
    positional property declared before it: ``__init__`` takes positional arguments in
    declaration order, as type checkers see it."""
    keys = [a for a in these if props[a].is_key]
    for key in keys:
        for a in these:
            if a == key:
                break
            if positional[a] and not props[a].is_key:
                return these
    return {a: these[a] for a in [*keys, *(a for a in these if a not in keys)]}


def _by_wire(name: str, props: Mapping[str, Prop[Any]]) -> dict[str, Prop[Any]]:
    """The class's columns by wire name; refuses two columns stored under one name, and a
    key's domain name that is another property's stored name (``Order.customer_id`` as
    the PartitionKey beside a property stored as ``customer_id`` would read two ways)."""
    by_wire: dict[str, Prop[Any]] = {}
    for p in props.values():
        other = by_wire.get(p.wire)
        if other is not None:
            if p.wire in KEY_NAMES:
                raise TypeError(_second_key(name, other, p.attr))
            raise TypeError(f"{name}: two properties map to wire name {p.wire!r}")
        by_wire[p.wire] = p
    for p in props.values():
        other = by_wire.get(p.attr)
        if p.is_key and other is not None and other is not p:
            raise TypeError(
                f"{name}.{p.attr} (the {p.wire}) has the name {name}.{other.attr} is stored "
                f"under ({other.wire!r}); rename one of them"
            )
    if len(by_wire) - 4 > 252:
        raise TypeError(f"{name}: more than 252 properties")
    return by_wire


def _second_key(name: str, key: Prop[Any], attr: str) -> str:
    """The refusal of a second property stored as a key the class already has."""
    hint = (
        "; to give the keys domain names, derive from azt.entity.EntityBase (azt.Entity "
        "names them PartitionKey and RowKey) and declare them with partition_key() / row_key()"
        if key.attr == key.wire
        else ""
    )
    return (
        f"{name}.{attr} would be a second {key.wire}: {name} has one, "
        f"{key.owner.__name__}.{key.attr}{hint}"
    )


def _key_alias(attr: str) -> property:
    """``order.PartitionKey`` on a class whose PartitionKey is ``customer_id``: reads and
    assigns (checked) that slot."""

    def assign(obj: Any, value: Any) -> None:
        setattr(obj, attr, value)

    return property(operator.attrgetter(attr), assign, doc=f"The key, also named {attr!r}.")


def _refuse_column_change(cls: type, name: str) -> None:
    """``Movie.rating = 4`` would replace the slot every instance reads (meant: an
    instance); refuse it once the class is built."""
    props = _CLASS_COLUMNS.get(cls)
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

    def _key_column() -> Prop[str]:
        """How type checkers see ``EntityBase.PartitionKey`` / ``RowKey``: a ``str`` on
        instances, a column on the class, and not a field of ``__init__``."""
        ...


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


class EntityBase(IndexSlot, metaclass=EntityMeta):
    """Base class of every declarative entity class; it declares ``Timestamp`` and
    ``ETag`` but no keys. Derive from it to give the keys domain names, declared with
    :func:`~azt.entity.partition_key` and :func:`~azt.entity.row_key`;
    :class:`Entity` is this base with the keys named ``PartitionKey`` and ``RowKey``.
    Either way the keys are stored as PartitionKey and RowKey, the column answers to its
    domain name and to the service's (``Order.customer_id`` is ``Order.PartitionKey``),
    and so does the value on instances.

    Example::

        >>> class Order(EntityBase, table="orders"):
        ...     customer_id: Prop[str] = partition_key()
        ...     order_id: Prop[str] = row_key()
        ...     total: Prop[float] = prop(default=0.0)
        >>> o = Order(customer_id="c-1", order_id="o-7", total=9.5)
        >>> o
        Order(customer_id='c-1', order_id='o-7', Timestamp=None, ETag=None, total=9.5)
        >>> o.PartitionKey, Order.PartitionKey is Order.customer_id
        ('c-1', True)
    """

    if TYPE_CHECKING:  # not fields: the keys' service names, answered on every class
        PartitionKey = _key_column()
        RowKey = _key_column()
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
        obj: Self = codec_for(cls).from_entity(entity)
        return obj

    def to_entity(self) -> TableEntity:
        """The dict-shaped entity to send (an ``azt.edm.TableEntity``; None values omitted).

        Example::

            >>> Rental("m", "r", movie="Alien").to_entity()
            TableEntity({'PartitionKey': 'm', 'RowKey': 'r', 'movie': 'Alien'})
        """
        return codec_for(type(self)).to_entity(self)

    # -- what the client core asks of entity objects (azt._core.base.EntityObject) ----------

    def __azt_entity__(self) -> tuple[TableEntity, str | None]:
        """The entity to send and this object's ETag (``TableClient`` writes call it).

        Example::

            >>> Rental("m", "r", movie="Alien").__azt_entity__()
            (TableEntity({'PartitionKey': 'm', 'RowKey': 'r', 'movie': 'Alien'}), None)
        """
        return codec_for(type(self)).to_entity(self), self.ETag

    def __azt_encoded__(self) -> tuple[TableEntity, Self, str | None, bytes | None, bool] | None:
        """The entity to send, this object, its ETag, the entity's JSON body checked
        against Azure Table storage's limits (``None``: check and encode it as usual), and
        whether the write may carry index rows, in one call (``TableClient`` writes call
        it: ``azt._core.base.encoded_source``); ``None`` when the object has unset
        properties (then ``__azt_entity__``).

        Example::

            >>> entity, obj, etag, body, more = Rental("m", "r", movie="Alien").__azt_encoded__()
            >>> body, more
            (b'{"PartitionKey":"m","RowKey":"r","movie":"Alien"}', False)
        """
        cls = type(self)
        try:
            encode = _ENCODERS[cls]
        except KeyError:
            encode = _ENCODERS[cls] = object_encoder(cls, _indexed(cls), RESERVED)
        found: tuple[TableEntity, Self, str | None, bytes | None, bool] | None = (
            None if encode is None else encode(self)
        )
        return found

    def __azt_written__(self, etag: str | None, timestamp: datetime | None) -> None:
        """Take the ETag and Timestamp of a successful write.

        Example::

            >>> r = Rental("m", "r", movie="Alien")
            >>> r.__azt_written__('W/"x"', None)
            >>> r.ETag
            'W/"x"'
        """
        cls = type(self)
        store = _WRITTEN.get(cls)
        if store is None:
            self.ETag = etag
            self.Timestamp = timestamp
        else:  # what the two assignments do, without attrs' __setattr__ dispatch
            store(self, etag, timestamp)
        indexed = _INDEXED.get(cls)
        if indexed or (indexed is None and declared_indexes(cls)):
            note_index_keys(self)

    def __azt_companions__(
        self,
        kind: str,
        mode: Any,
        payload: Mapping[str, Any] | None,
        etag: str | None,
    ) -> list[Any]:
        """The index-row operations a write of this object carries in its transaction
        (empty for a class without indexes; see ``azt.indexes``).

        Example::

            >>> Rental("m", "r", movie="Alien").__azt_companions__("create", None, {}, None)
            []
        """
        indexed = _INDEXED.get(type(self))
        if indexed is False:
            rk = getattr(self, "RowKey", None)
            if not (isinstance(rk, str) and rk.startswith(RESERVED)):  # is_index_row_key
                return []  # what companion_operations answers for a class without indexes
        return companion_operations(self, kind, mode, payload, etag)

    @classmethod
    def __azt_decode__(cls, entity: TableEntity, select: frozenset[str] | None) -> Self:
        """An instance from a read entity (``select``: the projection read, by wire name).

        Example::

            >>> Rental.__azt_decode__(TableEntity(PartitionKey="m", RowKey="r", movie="A"), None)
            Rental(PartitionKey='m', RowKey='r', Timestamp=None, ETag=None, movie='A')
        """
        obj: Self = codec_for(cls, select).from_entity(entity)
        if declared_indexes(cls):
            note_index_keys(obj)
        return obj


class Entity(EntityBase):
    """Base class of declarative entities whose keys keep the service's names,
    ``PartitionKey`` and ``RowKey`` (positional in ``__init__``); see the module docstring.
    (To name them ``customer_id`` and ``order_id``, derive from :class:`EntityBase`.)

    Example::

        >>> class Rental(Entity):
        ...     movie: Prop[str]
        >>> r = Rental("member-1", "Rental_Alien", movie="Alien")
        >>> (r.PartitionKey, r.RowKey, r.movie, r.ETag)
        ('member-1', 'Rental_Alien', 'Alien', None)
    """

    PartitionKey: Prop[str] = prop(kw_only=False)
    RowKey: Prop[str] = prop(kw_only=False)


# Instances parse the Timestamp text decoders store on first read (see LazyTimestamp).
type.__setattr__(
    EntityBase,
    "Timestamp",
    LazyTimestamp(type.__getattribute__(EntityBase, "__dict__")["Timestamp"]),
)
