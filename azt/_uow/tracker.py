"""The tracker: the identity map (one object per ``(table, PartitionKey, RowKey)``) and the
state machine of the unit of work, with change planning and query-result merging. Pure
bookkeeping, no I/O; :class:`azt.context.TableContext` drives it.

States and transitions (anything else raises :class:`TrackingError`)::

    Detached  --add-->              Added
    Detached  --attach(etag)-->     Unchanged   (etag "*": unconditional; None: upsert on save)
    Unchanged --update / edit-->    Modified
    Added     --delete-->           Detached    (never sent)
    Unchanged/Modified --delete-->  Deleted
    any tracked --detach-->         Detached
    after a successful save: Added/Modified -> Unchanged (new ETag), Deleted -> Detached

Example::

    >>> from azt.dynamic import DynamicEntity
    >>> tracker = Tracker()
    >>> e = DynamicEntity("Action", "Heat", Rating=4.5)
    >>> _ = tracker.attach("movies", e, 'W/"1"')
    >>> e["Rating"] = 5.0
    >>> tracker.state_of(e)          # found by diff, no update() call
    <EntityState.MODIFIED: 'modified'>
    >>> [c.payload["Rating"] for c in tracker.plan()]
    [5.0]
"""

from __future__ import annotations

import operator
from typing import Any, Literal

from azt._edm.datetime import EdmDateTime
from azt._edm.entity import (
    PartialRead,
    TableEntity,
    partial_of,
    property_loss_error,
    set_partial,
)
from azt._errors import ValidationError
from azt._orm.indexes import copy_index_record
from azt._uow.access import DeclarativeAccess, EntityAccess, Snapshot, access_for
from azt._uow.descriptor import EntityDescriptor, PendingChange
from azt._uow.types import (
    ChangeKind,
    EntityState,
    IdentityConflictError,
    IdentityKey,
    MergeOption,
    TrackingError,
)

__all__ = ["Tracker"]


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
        # One object per identity key, as in the legacy TableServiceContext (whose message
        # is "Context is already tracking a different entity with the same resource Uri").
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

    def mark_complete(self, obj: object) -> None:
        """Declare that a tracked object holds every property the stored entity should
        keep: a replace of it may remove the others (until it is read again).

        Example::

            >>> from azt._edm.entity import PartialRead, set_partial
            >>> t = Tracker(); e = TableEntity(PartitionKey="p", RowKey="r", A=1)
            >>> set_partial(e, PartialRead(projection=True))
            >>> _ = t.attach("movies", e, "*"); t.update(e)
            >>> t.mark_complete(e); t.plan(replace=True)[0].mode
            'replace'
        """
        self._require(obj, "mark complete").complete = True

    def plan(
        self, *, replace: bool = False, allow_property_loss: bool = False
    ) -> list[PendingChange]:
        """The pending changes in the order they were made.

        Updates are MERGEs of the changed properties (all properties when ``update()``
        was called without a detected change, and for upserts, which may insert);
        ``replace`` sends every property with PUT instead. A property removed locally
        (set to ``None`` or deleted) cannot be removed by a MERGE: planning refuses it
        with :class:`azt.ValidationError` and names ``replace``. A tracked entity whose
        keys were changed is refused too. A replace of an object that does not hold every
        stored property (read with a projection, or from a row with properties its class
        does not declare) would delete them: refused with :class:`azt.PropertyLossError`
        naming them, unless ``allow_property_loss`` or the object was marked complete.
        Nothing is changed by planning.

        Example::

            >>> t = Tracker(); e = {"PartitionKey": "p", "RowKey": "r", "A": 1, "B": 2}
            >>> _ = t.attach("movies", e, 'W/"1"'); e["B"] = 3
            >>> (c,) = t.plan(); (c.kind.value, c.mode, c.if_match, dict(c.payload))
            ('update', 'merge', 'W/"1"', {'PartitionKey': 'p', 'RowKey': 'r', 'B': 3})
        """
        # Changes are found by comparing each object with its snapshot (taken when it was
        # last known to match the store), so edits need no update() call.
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
                if not (allow_property_loss or d.complete):
                    _refuse_loss(d, kind, snap, payload)
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

    def commit(
        self, change: PendingChange, etag: str | None, timestamp: EdmDateTime | None = None
    ) -> None:
        """Record the success of ``change``: Added/Modified -> Unchanged with the new ETag
        and ``Timestamp`` (the service's, from the ETag) on the object and the snapshot that
        was sent; Deleted -> Detached. After an insert or a replace the object is the
        stored entity: whatever a read had left out of it no longer exists.

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
        d.access.set_written(d.obj, etag, timestamp)
        if change.kind is ChangeKind.INSERT or change.mode == "replace":
            d.complete = True
            set_partial(d.obj, None)

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
        if not partial:  # a whole read says afresh what the object lacks
            set_partial(tracked, partial_of(obj))
            d.complete = False
        if option is MergeOption.OVERWRITE_CHANGES:
            access.refresh(tracked, obj, (), partial)
            d.snapshot = access.rebase(d.snapshot, access.snapshot(obj), ())
            d.etag = server_etag
            copy_index_record(obj, tracked)
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
        copy_index_record(obj, tracked)
        access.set_etag(tracked, server_etag)
        return tracked


def _refuse_loss(
    d: EntityDescriptor, kind: ChangeKind, snap: Snapshot, payload: TableEntity
) -> None:
    """Raise :class:`azt.PropertyLossError` if replacing the stored entity with the payload
    of ``d``'s object would delete stored properties the object does not hold."""
    rec = partial_of(d.obj)
    access = d.access
    unset = access.unset(snap) if isinstance(access, DeclarativeAccess) else []
    if rec is None and not unset:
        return
    rec = (rec or PartialRead()).with_missing(tuple(unset))
    lost = tuple(n for n in rec.missing if n not in payload)
    if not lost and not rec.projection:
        return  # every property the read left out has been set since
    raise property_loss_error(
        PartialRead(lost, rec.projection),
        f"a replace ({kind.value} with REPLACE_ON_UPDATE)",
        d.key[1],
        d.key[2],
        "save_changes(..., allow_property_loss=True) for one save, or "
        "ctx.mark_complete(entity) for this entity",
    )


def _label(obj: object) -> str:
    try:
        pk, rk = access_for(obj).keys(obj)
    except Exception:  # only for a message
        return type(obj).__name__
    return f"{type(obj).__name__}(PartitionKey={pk!r}, RowKey={rk!r})"
