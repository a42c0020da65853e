"""Entity tracking for the unit of work: states, descriptors, identity map, snapshots.

This module is pure bookkeeping (no I/O); :mod:`azt.context` drives it. The design
follows the legacy ``TableServiceContext`` as the seed article "How to get most out of
Windows Azure Tables" describes it:

* Every tracked object has a side record, an :class:`EntityDescriptor`: its
  :class:`EntityState`, identity key ``(table, PartitionKey, RowKey)``, the ETag the
  context will send in ``If-Match``, and a *snapshot* of its property values (a tuple of
  immutable values) taken when the object was last known to match what is stored.
* The identity map holds one object per identity key. Tracking a *different* object for a
  key that is already tracked raises :class:`IdentityConflictError` ("Context is already
  tracking a different entity with the same resource Uri").
* Changes are found by comparing the object with its snapshot: no explicit ``update``
  call is needed. A MERGE sends the changed properties only.

States and transitions (anything else raises :class:`TrackingError`)::

    Detached  --add-->              Added
    Detached  --attach(etag)-->     Unchanged   (etag "*": unconditional; None: upsert on save)
    Unchanged --update / edit-->    Modified
    Added     --delete-->           Detached    (never sent)
    Unchanged/Modified --delete-->  Deleted
    any tracked --detach-->         Detached
    after a successful save: Added/Modified -> Unchanged (new ETag), Deleted -> Detached

Objects are read and written through an :class:`EntityAccess` chosen by type:
declarative :class:`azt.entity.Entity` classes, :class:`azt.dynamic.DynamicEntity`, and
mappings (``dict`` / :class:`azt.edm.TableEntity`). :func:`register_access` adds others.

Example::

    >>> from azt.dynamic import DynamicEntity
    >>> tracker = Tracker()
    >>> e = DynamicEntity("Action", "Heat", Rating=4.5)
    >>> _ = tracker.attach("movies", e, 'W/"1"')
    >>> tracker.state_of(e)
    <EntityState.UNCHANGED: 'unchanged'>
    >>> e["Rating"] = 5.0
    >>> tracker.state_of(e)          # found by diff, no update() call
    <EntityState.MODIFIED: 'modified'>
    >>> [c.payload["Rating"] for c in tracker.plan()]
    [5.0]
"""

from __future__ import annotations

import enum
import math
import operator
from collections.abc import Callable, Collection, Mapping, MutableMapping
from typing import Any, Final, Literal, Protocol

from azt._edm.entity import EntityMetadata, TableEntity
from azt._edm.types import EdmType, Typed
from azt._errors import AztError, ValidationError

__all__ = [
    "ChangeKind",
    "DeclarativeAccess",
    "DynamicAccess",
    "EntityAccess",
    "EntityDescriptor",
    "EntityState",
    "IdentityConflictError",
    "IdentityKey",
    "MappingAccess",
    "MergeOption",
    "PendingChange",
    "Tracker",
    "TrackingError",
    "access_for",
    "register_access",
]

IdentityKey = tuple[str, str, str]
"""``(table name lower-cased, PartitionKey, RowKey)``: table names are case-insensitive."""

Snapshot = tuple[Any, ...]


class _Unset:
    """A property a projection (``$select``) did not load."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Final = _Unset()


class TrackingError(AztError, RuntimeError):
    """An operation the entity's tracking state does not allow (the .NET
    ``InvalidOperationException`` of ``DataServiceContext``).

    Example::

        >>> from azt.dynamic import DynamicEntity
        >>> try:
        ...     Tracker().update(DynamicEntity("p", "r"))
        ... except TrackingError as exc:
        ...     print("not tracking" in str(exc))
        True
    """


class IdentityConflictError(TrackingError):
    """A different object is already tracked for the same (table, PartitionKey, RowKey).

    ``key`` is the identity key; ``tracked`` the object the context already tracks.

    Example::

        >>> from azt.dynamic import DynamicEntity
        >>> t = Tracker()
        >>> _ = t.attach("movies", DynamicEntity("p", "r"), None)
        >>> try:
        ...     t.attach("Movies", DynamicEntity("p", "r"), None)
        ... except IdentityConflictError as exc:
        ...     print(exc.key)
        ('movies', 'p', 'r')
    """

    def __init__(self, message: str, *, key: IdentityKey, tracked: object) -> None:
        super().__init__(message)
        self.key = key
        self.tracked = tracked


class EntityState(enum.Enum):
    """Where an object stands in the unit of work.

    Example::

        >>> EntityState("modified") is EntityState.MODIFIED
        True
    """

    DETACHED = "detached"  #: not tracked
    UNCHANGED = "unchanged"  #: tracked; matches its snapshot
    ADDED = "added"  #: inserted on the next save
    MODIFIED = "modified"  #: updated (or upserted) on the next save
    DELETED = "deleted"  #: deleted on the next save


class MergeOption(enum.Enum):
    """How query results are merged with entities the context already tracks (the seed's
    ``MergeOption``).

    * ``APPEND_ONLY``: a tracked entity is returned as it is: neither its values nor its
      ETag change (a later conditional update may fail with 412).
    * ``OVERWRITE_CHANGES``: the tracked entity is overwritten with the server's values and
      ETag and becomes Unchanged; local edits (and a pending delete) are discarded.
    * ``PRESERVE_CHANGES`` (default, as in the legacy ``TableServiceContext``): local edits
      are kept, the ETag becomes the server's (the way to recover from a 412). Properties
      without local edits take the server's values, so a later save sends exactly the
      local edits again.
    * ``NO_TRACKING``: results are not tracked (and not matched with tracked objects);
      updating one requires ``attach``.

    An entity that is Added (not yet inserted) is left alone by every option except
    ``OVERWRITE_CHANGES``, which replaces it with the stored entity (Unchanged).

    Example::

        >>> MergeOption.PRESERVE_CHANGES.value
        'preserve_changes'
    """

    APPEND_ONLY = "append_only"
    OVERWRITE_CHANGES = "overwrite_changes"
    PRESERVE_CHANGES = "preserve_changes"
    NO_TRACKING = "no_tracking"


class ChangeKind(enum.Enum):
    """The request a pending change becomes.

    Example::

        >>> ChangeKind.UPSERT.value
        'upsert'
    """

    INSERT = "insert"  #: POST (409 if the entity exists)
    UPDATE = "update"  #: MERGE/PUT with If-Match (the ETag, or "*")
    UPSERT = "upsert"  #: MERGE/PUT without If-Match (attached with no ETag)
    DELETE = "delete"  #: DELETE with If-Match (the ETag, or "*")


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

    __slots__ = ("_attrs", "_codec", "_conv", "_getter", "_names", "_props", "cls")

    def __init__(self, cls: type) -> None:
        from azt._orm.codec import codec_for
        from azt._orm.columns import entity_info

        info = entity_info(cls)
        props = [p for p in info.props if not p.system]
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

    def keys(self, obj: Any) -> tuple[str, str]:
        return obj.PartitionKey, obj.RowKey

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
        if names is None:
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
    from azt._orm.dynamic import DynamicEntity
    from azt._orm.entity import Entity

    if isinstance(obj, Entity):
        acc = DeclarativeAccess(cls)
    elif isinstance(obj, DynamicEntity):
        acc = _DYNAMIC
    elif isinstance(obj, MutableMapping):
        acc = _MAPPING
    else:
        raise ValidationError(
            f"cannot track a {cls.__name__}: entities are azt.entity.Entity subclasses, "
            "DynamicEntity, or dict/TableEntity mappings (see azt._uow.tracking.register_access)"
        )
    _ACCESS[cls] = acc
    return acc


# ============================================================================ descriptors


class EntityDescriptor:
    """The side record of one tracked object.

    ``table`` is the table name as given; ``key`` the identity key; ``etag`` the
    ``If-Match`` value for updates and deletes (``"*"``: unconditional; ``None``: updates
    become upserts); ``snapshot`` the values last known to match the store (or, for
    attached entities, the values at attach time); ``seq`` orders changes. (An explicit
    ``update`` without a detected change is the MODIFIED state itself: planning writes
    every property then.)

    Example::

        >>> from azt.dynamic import DynamicEntity
        >>> d = Tracker().attach("movies", DynamicEntity("p", "r"), "*")
        >>> (d.state, d.etag, d.key)
        (<EntityState.UNCHANGED: 'unchanged'>, '*', ('movies', 'p', 'r'))
    """

    __slots__ = ("access", "etag", "key", "obj", "seq", "snapshot", "state", "table")

    def __init__(
        self,
        obj: Any,
        access: EntityAccess,
        table: str,
        key: IdentityKey,
        state: EntityState,
        etag: str | None,
        snapshot: Snapshot,
        seq: int,
    ) -> None:
        self.obj = obj
        self.access = access
        self.table = table
        self.key = key
        self.state = state
        self.etag = etag
        self.snapshot = snapshot
        self.seq = seq

    def __repr__(self) -> str:
        _, pk, rk = self.key
        return (
            f"<EntityDescriptor {self.table}(PartitionKey={pk!r}, RowKey={rk!r}) "
            f"{self.state.value} etag={self.etag!r}>"
        )

    def changes(self) -> tuple[list[str], list[str]]:
        """(changed, removed) property names relative to the snapshot.

        Example::

            >>> e = {"PartitionKey": "p", "RowKey": "r", "A": 1}
            >>> d = Tracker().attach("t", e, "*"); del e["A"]; d.changes()
            ([], ['A'])
        """
        return self.access.diff(self.snapshot, self.access.snapshot(self.obj))

    def is_dirty(self) -> bool:
        """Whether a save would send something for this entity.

        Example::

            >>> Tracker().attach("t", {"PartitionKey": "p", "RowKey": "r"}, "*").is_dirty()
            False
        """
        state = self.state
        if state is EntityState.UNCHANGED:
            changed, removed = self.changes()
            return bool(changed or removed)
        return state is not EntityState.DETACHED


class PendingChange:
    """One planned request: what to send for one tracked entity and what its snapshot
    becomes once it succeeds.

    ``mode`` is ``"merge"`` or ``"replace"`` for updates and upserts; ``if_match`` the
    ETag (or ``"*"``) for updates and deletes; ``payload`` the entity to send (``None``
    for deletes); ``changed`` the property names a MERGE carries.

    Example::

        >>> from azt.dynamic import DynamicEntity
        >>> t = Tracker(); e = DynamicEntity("p", "r", A=1)
        >>> _ = t.add("movies", e)
        >>> [ (c.kind.value, dict(c.payload)) for c in t.plan() ]
        [('insert', {'A': 1, 'PartitionKey': 'p', 'RowKey': 'r'})]
    """

    __slots__ = (
        "changed",
        "descriptor",
        "if_match",
        "kind",
        "mode",
        "new_snapshot",
        "payload",
        "table",
    )

    def __init__(
        self,
        descriptor: EntityDescriptor,
        kind: ChangeKind,
        mode: Literal["merge", "replace"] | None,
        if_match: str | None,
        payload: TableEntity | None,
        new_snapshot: Snapshot,
        changed: tuple[str, ...],
    ) -> None:
        self.descriptor = descriptor
        self.table = descriptor.table
        self.kind = kind
        self.mode = mode
        self.if_match = if_match
        self.payload = payload
        self.new_snapshot = new_snapshot
        self.changed = changed

    @property
    def partition_key(self) -> str:
        """The entity's PartitionKey.

        Example::

            >>> t = Tracker(); _ = t.add("t", {"PartitionKey": "p", "RowKey": "r"})
            >>> t.plan()[0].partition_key
            'p'
        """
        return self.descriptor.key[1]

    @property
    def row_key(self) -> str:
        """The entity's RowKey.

        Example::

            >>> t = Tracker(); _ = t.add("t", {"PartitionKey": "p", "RowKey": "r"})
            >>> t.plan()[0].row_key
            'r'
        """
        return self.descriptor.key[2]

    def __repr__(self) -> str:
        mode = f" {self.mode}" if self.mode else ""
        return (
            f"<PendingChange {self.kind.value}{mode} {self.table}"
            f"(PartitionKey={self.partition_key!r}, RowKey={self.row_key!r})>"
        )


# ============================================================================ tracker


def _describe(key: IdentityKey) -> str:
    return f"(table {key[0]!r}, PartitionKey={key[1]!r}, RowKey={key[2]!r})"


def _check_table(table: str) -> str:
    if not isinstance(table, str) or not table:
        raise ValidationError(f"a table name must be a non-empty str, got {table!r}")
    return table


def _check_etag(etag: str | None) -> str | None:
    if etag is not None and (not isinstance(etag, str) or not etag):
        raise ValidationError(f"etag must be None, '*' or an ETag string, got {etag!r}")
    return etag


class Tracker:
    """The identity map and the state machine of the unit of work (no I/O).

    Example::

        >>> from azt.dynamic import DynamicEntity
        >>> t = Tracker()
        >>> e = DynamicEntity("p", "r")
        >>> _ = t.add("movies", e); t.state_of(e)
        <EntityState.ADDED: 'added'>
        >>> t.delete(e); t.state_of(e)     # an Added entity is simply forgotten
        <EntityState.DETACHED: 'detached'>
    """

    __slots__ = ("_by_id", "_by_key", "_seq")

    def __init__(self) -> None:
        self._by_key: dict[IdentityKey, EntityDescriptor] = {}
        self._by_id: dict[int, EntityDescriptor] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._by_id)

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    # -- lookups ----------------------------------------------------------------------------

    def descriptor(self, obj: object) -> EntityDescriptor | None:
        """The descriptor of a tracked object, or ``None``.

        Example::

            >>> from azt.dynamic import DynamicEntity
            >>> Tracker().descriptor(DynamicEntity("p", "r")) is None
            True
        """
        return self._by_id.get(id(obj))

    def lookup(self, table: str, partition_key: str, row_key: str) -> EntityDescriptor | None:
        """The descriptor tracked for a key, or ``None``.

        Example::

            >>> from azt.dynamic import DynamicEntity
            >>> t = Tracker(); _ = t.add("Movies", DynamicEntity("p", "r"))
            >>> t.lookup("movies", "p", "r").state
            <EntityState.ADDED: 'added'>
        """
        return self._by_key.get((table.lower(), partition_key, row_key))

    def descriptors(self) -> list[EntityDescriptor]:
        """Every descriptor, in tracking order.

        Example::

            >>> Tracker().descriptors()
            []
        """
        return sorted(self._by_id.values(), key=operator.attrgetter("seq"))

    def state_of(self, obj: object) -> EntityState:
        """The object's state; an Unchanged object whose values differ from its snapshot
        reports MODIFIED.

        Example::

            >>> Tracker().state_of({"PartitionKey": "p", "RowKey": "r"})
            <EntityState.DETACHED: 'detached'>
        """
        d = self._by_id.get(id(obj))
        if d is None:
            return EntityState.DETACHED
        if d.state is EntityState.UNCHANGED and d.is_dirty():
            return EntityState.MODIFIED
        return d.state

    def _require(self, obj: object, what: str) -> EntityDescriptor:
        d = self._by_id.get(id(obj))
        if d is None:
            raise TrackingError(
                f"cannot {what} an entity the context is not tracking ({_label(obj)}); "
                "add it, attach it, or read it through this context first"
            )
        return d

    def _identity(self, table: str, obj: object, access: EntityAccess) -> IdentityKey:
        pk, rk = access.keys(obj)
        if not isinstance(pk, str) or not isinstance(rk, str):
            raise ValidationError(
                f"an entity needs str PartitionKey and RowKey to be tracked, got {pk!r}, {rk!r}"
            )
        return (table.lower(), pk, rk)

    def _claim(self, key: IdentityKey, obj: object) -> None:
        cur = self._by_key.get(key)
        if cur is not None:
            if cur.obj is obj:
                raise TrackingError(
                    f"the entity {_describe(key)} is already tracked ({cur.state.value})"
                )
            raise IdentityConflictError(
                f"the context is already tracking a different object for {_describe(key)} "
                f"({cur.state.value}); detach it first or use that object",
                key=key,
                tracked=cur.obj,
            )
        if id(obj) in self._by_id:
            d = self._by_id[id(obj)]
            raise TrackingError(
                f"this object is already tracked as {_describe(d.key)} ({d.state.value})"
            )

    def _track(
        self, table: str, obj: object, state: EntityState, etag: str | None, server: bool
    ) -> EntityDescriptor:
        access = access_for(obj)
        key = self._identity(table, obj, access)
        self._claim(key, obj)
        snap = access.snapshot(obj)
        d = EntityDescriptor(obj, access, table, key, state, etag, snap, self._next())
        self._by_key[key] = d
        self._by_id[id(obj)] = d
        return d

    # -- transitions ------------------------------------------------------------------------

    def add(self, table: str, obj: object) -> EntityDescriptor:
        """Detached -> Added: the object is inserted on the next save.

        Example::

            >>> Tracker().add("movies", {"PartitionKey": "p", "RowKey": "r"}).state
            <EntityState.ADDED: 'added'>
        """
        return self._track(_check_table(table), obj, EntityState.ADDED, None, False)

    def attach(self, table: str, obj: object, etag: str | None) -> EntityDescriptor:
        """Detached -> Unchanged with ``etag`` (``"*"``: unconditional writes; ``None``:
        updates become upserts, deletes are unconditional).

        Example::

            >>> Tracker().attach("movies", {"PartitionKey": "p", "RowKey": "r"}, "*").etag
            '*'
        """
        d = self._track(_check_table(table), obj, EntityState.UNCHANGED, _check_etag(etag), False)
        if etag is not None and etag != "*":
            d.access.set_etag(obj, etag)
        return d

    def update(self, obj: object) -> None:
        """Unchanged/Modified -> Modified (written on the next save even if no property
        changed); Added stays Added; Deleted refuses.

        Example::

            >>> t = Tracker(); e = {"PartitionKey": "p", "RowKey": "r"}
            >>> _ = t.attach("movies", e, "*"); t.update(e); t.state_of(e)
            <EntityState.MODIFIED: 'modified'>
        """
        d = self._require(obj, "update")
        if d.state is EntityState.DELETED:
            raise TrackingError(
                f"cannot update {_describe(d.key)}: it is marked for deletion "
                "(detach it, or save the delete first)"
            )
        if d.state is EntityState.ADDED:
            return
        d.state = EntityState.MODIFIED
        d.seq = self._next()

    def delete(self, obj: object) -> None:
        """Unchanged/Modified -> Deleted; Added -> Detached (nothing was sent yet);
        Deleted stays Deleted.

        Example::

            >>> t = Tracker(); e = {"PartitionKey": "p", "RowKey": "r"}
            >>> _ = t.attach("movies", e, "*"); t.delete(e); t.state_of(e)
            <EntityState.DELETED: 'deleted'>
        """
        d = self._require(obj, "delete")
        if d.state is EntityState.ADDED:
            self._forget(d)
            return
        if d.state is EntityState.DELETED:
            return
        d.state = EntityState.DELETED
        d.seq = self._next()

    def detach(self, obj: object) -> bool:
        """Stop tracking; returns whether the object was tracked. Pending changes of the
        object are dropped.

        Example::

            >>> t = Tracker(); e = {"PartitionKey": "p", "RowKey": "r"}
            >>> _ = t.add("movies", e); t.detach(e), t.detach(e)
            (True, False)
        """
        d = self._by_id.get(id(obj))
        if d is None:
            return False
        self._forget(d)
        return True

    def clear(self) -> None:
        """Detach everything.

        Example::

            >>> t = Tracker(); _ = t.add("movies", {"PartitionKey": "p", "RowKey": "r"})
            >>> t.clear(); len(t)
            0
        """
        self._by_key.clear()
        self._by_id.clear()

    def _forget(self, d: EntityDescriptor) -> None:
        self._by_key.pop(d.key, None)
        self._by_id.pop(id(d.obj), None)
        d.state = EntityState.DETACHED

    # -- planning and committing ------------------------------------------------------------

    def plan(self, *, replace: bool = False) -> list[PendingChange]:
        """The pending changes in the order they were made.

        Updates are MERGEs of the changed properties (all properties when ``update()``
        was called without a detected change, and for upserts, which may insert);
        ``replace`` sends every property with PUT instead. A property removed locally
        (set to ``None`` or deleted) cannot be removed by a MERGE: planning refuses it
        with :class:`azt.ValidationError` and names ``replace``. A tracked entity whose
        keys were changed is refused too. Nothing is changed by planning.

        Example::

            >>> t = Tracker(); e = {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": 2}
            >>> _ = t.attach("movies", e, 'W/"1"'); e["B"] = 3
            >>> (c,) = t.plan(); (c.kind.value, c.mode, c.if_match, dict(c.payload))
            ('update', 'merge', 'W/"1"', {'PartitionKey': 'p', 'RowKey': 'r', 'B': 3})
        """
        out: list[PendingChange] = []
        for d in sorted(self._by_id.values(), key=operator.attrgetter("seq")):
            state = d.state
            if state is EntityState.DETACHED:  # pragma: no cover - forgotten ones are gone
                continue
            access = d.access
            obj = d.obj
            if state is EntityState.DELETED:
                out.append(
                    PendingChange(d, ChangeKind.DELETE, None, d.etag or "*", None, d.snapshot, ())
                )
                continue
            key = self._identity(d.table, obj, access)
            if key != d.key:
                raise ValidationError(
                    f"the keys of the tracked entity {_describe(d.key)} were changed to "
                    f"({key[1]!r}, {key[2]!r}); keys are its identity: detach it and add a "
                    "new entity instead"
                )
            snap = access.snapshot(obj)
            if state is EntityState.ADDED:
                payload = access.payload(obj, None)
                out.append(
                    PendingChange(d, ChangeKind.INSERT, None, None, payload, snap, tuple(payload))
                )
                continue
            changed, removed = access.diff(d.snapshot, snap)
            if not (changed or removed or state is EntityState.MODIFIED):
                continue
            upsert = d.etag is None
            kind = ChangeKind.UPSERT if upsert else ChangeKind.UPDATE
            if replace:
                payload = access.payload(obj, None)
                mode: Literal["merge", "replace"] = "replace"
            else:
                if removed:
                    raise ValidationError(
                        f"{_describe(d.key)}: properties {sorted(removed)} were removed "
                        "locally, but a MERGE cannot remove properties (the service ignores "
                        "nulls); save with SaveChangesOptions.REPLACE_ON_UPDATE to replace "
                        "the whole entity"
                    )
                mode = "merge"
                payload = access.payload(obj, None if (upsert or not changed) else changed)
            out.append(
                PendingChange(
                    d, kind, mode, None if upsert else d.etag, payload, snap, tuple(payload)
                )
            )
        return out

    def commit(self, change: PendingChange, etag: str | None) -> None:
        """Record the success of ``change``: Added/Modified -> Unchanged with the new ETag
        and the snapshot that was sent; Deleted -> Detached.

        Example::

            >>> t = Tracker(); e = {"PartitionKey": "p", "RowKey": "r"}
            >>> _ = t.add("movies", e); (c,) = t.plan(); t.commit(c, 'W/"2"')
            >>> t.state_of(e), t.descriptor(e).etag
            (<EntityState.UNCHANGED: 'unchanged'>, 'W/"2"')
        """
        d = change.descriptor
        if self._by_id.get(id(d.obj)) is not d:
            return  # detached meanwhile: nothing to record
        if change.kind is ChangeKind.DELETE:
            self._forget(d)
            return
        d.state = EntityState.UNCHANGED
        d.etag = etag
        d.snapshot = change.new_snapshot
        d.access.set_etag(d.obj, etag)

    # -- query results ----------------------------------------------------------------------

    def materialize(
        self, table: str, obj: Any, option: MergeOption, *, partial: bool = False
    ) -> Any:
        """Merge one query result into the identity map per ``option`` and return the
        object the caller should see (the tracked one where there is one).

        ``obj`` is a freshly decoded object carrying the server's ETag; ``partial`` says
        it came from a projection (``$select``).

        Example::

            >>> from azt.dynamic import DynamicEntity
            >>> t = Tracker(); local = DynamicEntity("p", "r", A=1)
            >>> _ = t.attach("movies", local, 'W/"1"'); local["A"] = 2
            >>> row = DynamicEntity("p", "r", A=5, B=1); row.ETag = 'W/"2"'
            >>> t.materialize("movies", row, MergeOption.PRESERVE_CHANGES) is local
            True
            >>> dict(local), t.descriptor(local).etag
            ({'A': 2, 'B': 1}, 'W/"2"')
        """
        if option is MergeOption.NO_TRACKING:
            return obj
        access = access_for(obj)
        key = self._identity(table, obj, access)
        d = self._by_key.get(key)
        server_etag = access.etag(obj)
        if d is None:
            nd = EntityDescriptor(
                obj,
                access,
                table,
                key,
                EntityState.UNCHANGED,
                server_etag,
                access.snapshot(obj),
                self._next(),
            )
            self._by_key[key] = nd
            self._by_id[id(obj)] = nd
            return obj
        tracked = d.obj
        if type(tracked) is not type(obj):
            raise IdentityConflictError(
                f"{_describe(key)} is tracked as a {type(tracked).__name__}, but this query "
                f"reads it as a {type(obj).__name__}; use one type per context, or "
                "MergeOption.NO_TRACKING",
                key=key,
                tracked=tracked,
            )
        if option is MergeOption.APPEND_ONLY:
            return tracked
        if option is MergeOption.OVERWRITE_CHANGES:
            access.refresh(tracked, obj, (), partial)
            d.snapshot = access.rebase(d.snapshot, access.snapshot(obj), ())
            d.etag = server_etag
            d.state = EntityState.UNCHANGED
            access.set_etag(tracked, server_etag)
            return tracked
        if option is not MergeOption.PRESERVE_CHANGES:
            raise ValidationError(f"unknown merge option {option!r}")
        if d.state is EntityState.ADDED:
            return tracked
        changed, removed = d.changes()
        keep = set(changed) | set(removed)
        access.refresh(tracked, obj, keep, partial)
        d.snapshot = access.rebase(d.snapshot, access.snapshot(obj), keep)
        d.etag = server_etag
        access.set_etag(tracked, server_etag)
        return tracked


def _label(obj: object) -> str:
    try:
        pk, rk = access_for(obj).keys(obj)
    except Exception:  # only for a message
        return type(obj).__name__
    return f"{type(obj).__name__}(PartitionKey={pk!r}, RowKey={rk!r})"
