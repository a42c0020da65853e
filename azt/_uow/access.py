"""How the tracker reads and writes entity objects: one :class:`EntityAccess` per kind
(declarative :class:`azt.entity.Entity` classes, :class:`azt.dynamic.DynamicEntity`,
``dict``/:class:`azt.edm.TableEntity` mappings), chosen by type; :func:`register_access`
adds others. An access takes *snapshots* (tuples of immutable property values), diffs
them, and builds the payloads a save sends.

Example::

    >>> acc = access_for({"PartitionKey": "p", "RowKey": "r", "A": 1})
    >>> old = acc.snapshot({"PartitionKey": "p", "RowKey": "r", "A": 1})
    >>> acc.diff(old, acc.snapshot({"PartitionKey": "p", "RowKey": "r", "A": 2}))
    (['A'], [])
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Collection, Mapping, MutableMapping
from typing import Any, Final, Protocol

from azt._edm.datetime import EdmDateTime
from azt._edm.entity import EntityMetadata, TableEntity
from azt._edm.types import EdmType, Typed
from azt._errors import ValidationError
from azt._orm.codec import codec_for
from azt._orm.columns import entity_info
from azt._orm.dynamic import DynamicEntity
from azt._orm.entity import EntityBase

__all__ = [
    "UNSET",
    "DeclarativeAccess",
    "DynamicAccess",
    "EntityAccess",
    "MappingAccess",
    "Snapshot",
    "access_for",
    "register_access",
]

Snapshot = tuple[Any, ...]
"""A tracked object's property values (keys excluded), as a tuple of immutable values."""


class _Unset:
    """A property a projection (``$select``) did not load."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Final = _Unset()


# ============================================================================ value helpers


def _norm(v: Any) -> Any:
    """An immutable, comparable stand-in for a property value."""
    if v.__class__ is bytearray or v.__class__ is memoryview:
        return bytes(v)
    return v


def _same(a: Any, b: Any) -> bool:
    """Equal as stored values: same type and value (so 1, 1.0 and True differ); NaN equals
    NaN."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if a == b:
        return True
    return a.__class__ is float and math.isnan(a) and math.isnan(b)


def _plain(v: Any) -> Any:
    return v.value if isinstance(v, Typed) else v


# ============================================================================ entity access


class EntityAccess(Protocol):
    """How the tracker reads and writes one kind of entity object.

    Implementations exist for declarative classes (:class:`DeclarativeAccess`),
    :class:`azt.dynamic.DynamicEntity` (:class:`DynamicAccess`) and mappings
    (:class:`MappingAccess`); :func:`register_access` adds more.

    Example::

        >>> access_for({"PartitionKey": "p", "RowKey": "r"}).keys({"PartitionKey": "p",
        ...                                                        "RowKey": "r"})
        ('p', 'r')
    """

    def keys(self, obj: Any) -> tuple[str, str]:
        """(PartitionKey, RowKey) as the object holds them now.

        Example::

            >>> MappingAccess().keys({"PartitionKey": "p", "RowKey": "r"})
            ('p', 'r')
        """
        ...

    def snapshot(self, obj: Any) -> Snapshot:
        """The property values (keys excluded) as a tuple of immutable values.

        Example::

            >>> MappingAccess().snapshot({"PartitionKey": "p", "RowKey": "r", "B": b"x"})
            (('B', b'x', <class 'bytes'>),)
        """
        ...

    def diff(self, old: Snapshot, new: Snapshot) -> tuple[list[str], list[str]]:
        """(names set or changed, names removed) between two snapshots of one object.

        Example::

            >>> acc = MappingAccess()
            >>> acc.diff((("A", 1, int), ("B", 2, int)), (("A", 5, int),))
            (['A'], ['B'])
        """
        ...

    def payload(self, obj: Any, names: Collection[str] | None) -> TableEntity:
        """The entity to send: keys plus ``names`` (``None``: every property).

        Example::

            >>> dict(MappingAccess().payload({"PartitionKey": "p", "RowKey": "r", "A": 1,
            ...                               "B": 2}, ["B"]))
            {'PartitionKey': 'p', 'RowKey': 'r', 'B': 2}
        """
        ...

    def etag(self, obj: Any) -> str | None:
        """The ETag the object itself carries (``None`` if it has none).

        Example::

            >>> MappingAccess().etag({"PartitionKey": "p", "RowKey": "r"}) is None
            True
        """
        ...

    def set_etag(self, obj: Any, etag: str | None) -> None:
        """Mirror the tracked ETag onto the object (where it has a place for one).

        Example::

            >>> e = TableEntity(PartitionKey="p", RowKey="r")
            >>> MappingAccess().set_etag(e, 'W/"1"'); e.metadata.etag
            'W/"1"'
        """
        ...

    def set_written(self, obj: Any, etag: str | None, timestamp: EdmDateTime | None) -> None:
        """Record a successful write on the object: its new ETag and, when the ETag
        carries it, the ``Timestamp`` the service gave the entity (kept otherwise).

        Example::

            >>> from azt.edm import EdmDateTime
            >>> e = TableEntity(PartitionKey="p", RowKey="r")
            >>> ts = EdmDateTime.parse("2026-01-02T03:04:05Z")
            >>> MappingAccess().set_written(e, 'W/"1"', ts); e.metadata.timestamp.year
            2026
        """
        ...

    def refresh(self, obj: Any, source: Any, keep: Collection[str], partial: bool) -> None:
        """Copy property values from ``source`` (a fresh object of the same kind) into
        ``obj``, except ``keep``; ``partial`` means ``source`` came from a projection, so
        properties it lacks are left alone.

        Example::

            >>> e = {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": 2}
            >>> MappingAccess().refresh(e, {"A": 5}, keep=["B"], partial=False); e
            {'PartitionKey': 'p', 'RowKey': 'r', 'A': 5, 'B': 2}
        """
        ...

    def rebase(self, old: Snapshot, fresh: Snapshot, keep: Collection[str]) -> Snapshot:
        """``fresh`` with the values of ``keep`` taken from ``old`` (a snapshot after a
        refresh that preserved local edits).

        Example::

            >>> MappingAccess().rebase((("A", 1, int),), (("A", 5, int), ("B", 2, int)), ["A"])
            (('B', 2, <class 'int'>), ('A', 1, <class 'int'>))
        """
        ...


class DeclarativeAccess:
    """Access to instances of one :class:`azt.entity.Entity` class (slot reads, compiled
    codec for payloads).

    Example::

        >>> from azt.entity import Entity, Prop, prop
        >>> class Counter(Entity):
        ...     n: Prop[int] = prop(default=0)
        >>> acc = DeclarativeAccess(Counter)
        >>> acc.snapshot(Counter("p", "r", n=3))
        (3,)
    """

    __slots__ = (
        "_attrs",
        "_codec",
        "_conv",
        "_getter",
        "_keys",
        "_names",
        "_props",
        "_whole",
        "cls",
    )

    def __init__(self, cls: type) -> None:
        info = entity_info(cls)
        props = [p for p in info.props if not p.system]
        pk, rk = info.key_props()
        #: the keys by their Python names (``customer_id``): a slot read, not the alias
        self._keys: Callable[[Any], tuple[str, str]] = operator.attrgetter(pk.attr, rk.attr)
        self.cls = cls
        self._props = props
        self._names = tuple(p.wire for p in props)
        self._attrs = tuple(p.attr for p in props)
        self._conv = tuple(p.converter.to_wire if p.converter else None for p in props)
        self._getter: Callable[[Any], Any] | None = None
        if len(props) == 1:
            g = operator.attrgetter(props[0].attr)
            self._getter = lambda o: (g(o),)
        elif props:
            self._getter = operator.attrgetter(*self._attrs)
        self._codec: Any = codec_for(cls)
        #: a class with a schema evolution MERGEs every property and its shape marker: a
        #: MERGE of the changed ones alone onto a row of an older shape would leave a row
        #: that is neither (azt.migrate)
        self._whole = info.evolution is not None

    def keys(self, obj: Any) -> tuple[str, str]:
        return self._keys(obj)

    def snapshot(self, obj: Any) -> Snapshot:
        getter = self._getter
        if getter is None:
            return ()
        try:
            values = getter(obj)
        except AttributeError:  # a projection left some slots unset
            values = tuple(getattr(obj, a, UNSET) for a in self._attrs)
        if any(self._conv):
            values = tuple(
                v if c is None or v is None or v is UNSET else c(v)
                for v, c in zip(values, self._conv, strict=True)
            )
        return tuple(values)

    def diff(self, old: Snapshot, new: Snapshot) -> tuple[list[str], list[str]]:
        changed: list[str] = []
        removed: list[str] = []
        if old == new:
            return changed, removed
        for name, a, b in zip(self._names, old, new, strict=True):
            if b is UNSET or _same(a, b):
                continue
            if b is None:
                if a is not None and a is not UNSET:
                    removed.append(name)
            else:
                changed.append(name)
        return changed, removed

    def payload(self, obj: Any, names: Collection[str] | None) -> TableEntity:
        full: TableEntity = self._codec.to_entity(obj)
        if names is None or self._whole:
            return full
        out = TableEntity(PartitionKey=full["PartitionKey"], RowKey=full["RowKey"])
        types = full.edm_types
        kept: dict[str, EdmType] = {}
        for n in names:
            if n in full:
                out[n] = full[n]
                t = types.get(n)
                if t is not None:
                    kept[n] = t
        if kept:
            out.edm_types = kept
        return out

    def etag(self, obj: Any) -> str | None:
        etag: str | None = getattr(obj, "ETag", None)
        return etag

    def set_etag(self, obj: Any, etag: str | None) -> None:
        obj.ETag = etag

    def set_written(self, obj: Any, etag: str | None, timestamp: EdmDateTime | None) -> None:
        obj.ETag = etag
        if timestamp is not None:
            object.__setattr__(obj, "Timestamp", timestamp)

    def unset(self, snapshot: Snapshot) -> list[str]:
        """The wire names of the properties a projection left unset (in ``snapshot``).

        Example::

            >>> from azt.entity import Entity, Prop, prop
            >>> class Counter(Entity):
            ...     n: Prop[int] = prop(default=0)
            >>> DeclarativeAccess(Counter).unset((UNSET,))
            ['n']
        """
        return [n for n, v in zip(self._names, snapshot, strict=True) if v is UNSET]

    def refresh(self, obj: Any, source: Any, keep: Collection[str], partial: bool) -> None:
        for p in self._props:
            if p.wire in keep:
                continue
            try:
                value = getattr(source, p.attr)
            except AttributeError:
                continue  # not in the projection
            object.__setattr__(obj, p.attr, value)
        ts = getattr(source, "Timestamp", None)
        if ts is not None:
            object.__setattr__(obj, "Timestamp", ts)

    def rebase(self, old: Snapshot, fresh: Snapshot, keep: Collection[str]) -> Snapshot:
        if not keep:
            return tuple(o if f is UNSET else f for o, f in zip(old or fresh, fresh, strict=True))
        return tuple(
            o if (n in keep or f is UNSET) else f
            for n, o, f in zip(self._names, old, fresh, strict=True)
        )


def _mapping_diff(old: Snapshot, new: Snapshot) -> tuple[list[str], list[str]]:
    """Diff of snapshots made of ``(name, value, type tag)`` triples."""
    changed: list[str] = []
    if old == new:
        return changed, []
    before = {n: (v, t) for n, v, t in old}
    seen = set()
    for n, v, t in new:
        seen.add(n)
        prev = before.get(n)
        if prev is None or prev[1] != t or not _same(prev[0], v):
            changed.append(n)
    removed = [n for n in before if n not in seen]
    return changed, removed


def _mapping_rebase(old: Snapshot, fresh: Snapshot, keep: Collection[str]) -> Snapshot:
    if not keep:
        return fresh
    out = [item for item in fresh if item[0] not in keep]
    out.extend(item for item in old if item[0] in keep)
    return tuple(out)


class DynamicAccess:
    """Access to :class:`azt.dynamic.DynamicEntity` objects (values and EDM types).

    Example::

        >>> from azt.dynamic import DynamicEntity
        >>> DynamicAccess().snapshot(DynamicEntity("p", "r", A=1))
        (('A', 1, <EdmType.INT32: 'Edm.Int32'>),)
    """

    __slots__ = ()

    def keys(self, obj: Any) -> tuple[str, str]:
        return obj.PartitionKey, obj.RowKey

    def snapshot(self, obj: Any) -> Snapshot:
        types = obj.types
        return tuple((n, _norm(obj[n]), types[n]) for n in obj)

    def diff(self, old: Snapshot, new: Snapshot) -> tuple[list[str], list[str]]:
        return _mapping_diff(old, new)

    def payload(self, obj: Any, names: Collection[str] | None) -> TableEntity:
        full: TableEntity = obj.to_entity()
        if names is None:
            return full
        out = TableEntity(PartitionKey=full["PartitionKey"], RowKey=full["RowKey"])
        types = full.edm_types
        for n in names:
            if n in full:
                out[n] = full[n]
        out.edm_types = {n: types[n] for n in names if n in types}
        return out

    def etag(self, obj: Any) -> str | None:
        etag: str | None = obj.ETag
        return etag

    def set_etag(self, obj: Any, etag: str | None) -> None:
        obj.ETag = etag

    def set_written(self, obj: Any, etag: str | None, timestamp: EdmDateTime | None) -> None:
        obj.ETag = etag
        if timestamp is not None:
            obj.Timestamp = timestamp

    def refresh(self, obj: Any, source: Any, keep: Collection[str], partial: bool) -> None:
        types = source.types
        for n in list(obj):
            if n not in keep and n not in source and not partial:
                del obj[n]
        for n in source:
            if n not in keep:
                obj.set(n, source[n], types[n])
        if source.Timestamp is not None:
            obj.Timestamp = source.Timestamp

    def rebase(self, old: Snapshot, fresh: Snapshot, keep: Collection[str]) -> Snapshot:
        return _mapping_rebase(old, fresh, keep)


_SKIP: Final = frozenset({"PartitionKey", "RowKey", "Timestamp"})


class MappingAccess:
    """Access to dict-shaped entities (``dict``, :class:`azt.edm.TableEntity`): a ``None``
    value counts as absent; the ETag is mirrored into ``TableEntity.metadata``.

    Example::

        >>> MappingAccess().snapshot({"PartitionKey": "p", "RowKey": "r", "A": 1})
        (('A', 1, <class 'int'>),)
    """

    __slots__ = ()

    def keys(self, obj: Any) -> tuple[str, str]:
        return _plain(obj.get("PartitionKey")), _plain(obj.get("RowKey"))

    def snapshot(self, obj: Any) -> Snapshot:
        explicit: Mapping[str, EdmType] = getattr(obj, "_types", None) or {}
        out = []
        for n, v in obj.items():
            if v is None or n in _SKIP:
                continue
            t: Any = explicit.get(n)
            if t is None:
                t = v.edm_type if isinstance(v, Typed) else type(v)
            out.append((n, _norm(v), t))
        return tuple(out)

    def diff(self, old: Snapshot, new: Snapshot) -> tuple[list[str], list[str]]:
        return _mapping_diff(old, new)

    def payload(self, obj: Any, names: Collection[str] | None) -> TableEntity:
        out = TableEntity()
        explicit: Mapping[str, EdmType] = getattr(obj, "_types", None) or {}
        out["PartitionKey"] = obj["PartitionKey"]
        out["RowKey"] = obj["RowKey"]
        wanted = obj.keys() if names is None else names
        types: dict[str, EdmType] = {}
        for n in wanted:
            if n in _SKIP:
                continue
            v = obj.get(n)
            if v is None:
                continue
            out[n] = v
            t = explicit.get(n)
            if t is not None:
                types[n] = t
        if types:
            out.edm_types = types
        return out

    def etag(self, obj: Any) -> str | None:
        meta = getattr(obj, "metadata", None)
        return meta.etag if isinstance(meta, EntityMetadata) else None

    def set_etag(self, obj: Any, etag: str | None) -> None:
        if isinstance(obj, TableEntity):
            obj.metadata = EntityMetadata(etag, obj.metadata.timestamp)

    def set_written(self, obj: Any, etag: str | None, timestamp: EdmDateTime | None) -> None:
        if isinstance(obj, TableEntity):
            if timestamp is None:
                timestamp = obj.metadata.timestamp
            obj.metadata = EntityMetadata(etag, timestamp)

    def refresh(self, obj: Any, source: Any, keep: Collection[str], partial: bool) -> None:
        assert isinstance(obj, MutableMapping)
        for n in list(obj):
            if n in _SKIP or n in keep:
                continue
            if n not in source and not partial:
                del obj[n]
        src_types: Mapping[str, EdmType] = getattr(source, "_types", None) or {}
        for n, v in source.items():
            if n in _SKIP or n in keep or v is None:
                continue
            obj[n] = v
            if isinstance(obj, TableEntity):
                t = src_types.get(n)
                if t is not None:
                    obj.edm_types[n] = t
                else:
                    obj.edm_types.pop(n, None)

    def rebase(self, old: Snapshot, fresh: Snapshot, keep: Collection[str]) -> Snapshot:
        return _mapping_rebase(old, fresh, keep)


_ACCESS: dict[type, EntityAccess] = {}
_DYNAMIC: Final = DynamicAccess()
_MAPPING: Final = MappingAccess()


def register_access(cls: type, access: EntityAccess) -> None:
    """Use ``access`` for instances of ``cls`` (exact type).

    Example::

        >>> class Row(dict): pass
        >>> register_access(Row, MappingAccess())
    """
    _ACCESS[cls] = access


def access_for(obj: object) -> EntityAccess:
    """The :class:`EntityAccess` for an object; :class:`azt.ValidationError` if azt does
    not know how to track its type.

    Example::

        >>> type(access_for({"PartitionKey": "p", "RowKey": "r"})).__name__
        'MappingAccess'
    """
    cls = type(obj)
    acc = _ACCESS.get(cls)
    if acc is not None:
        return acc
    if isinstance(obj, EntityBase):
        acc = DeclarativeAccess(cls)
    elif isinstance(obj, DynamicEntity):
        acc = _DYNAMIC
    elif isinstance(obj, MutableMapping):
        acc = _MAPPING
    else:
        raise ValidationError(
            f"cannot track a {cls.__name__}: entities are azt.entity.Entity subclasses, "
            "DynamicEntity, or dict/TableEntity mappings (see azt._uow.access.register_access)"
        )
    _ACCESS[cls] = acc
    return acc
