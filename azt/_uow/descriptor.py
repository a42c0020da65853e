"""The records of the unit of work: an :class:`EntityDescriptor` per tracked object (its
state, identity key, ETag and snapshot) and a :class:`PendingChange` per request a save
will send.

Example::

    >>> from azt._uow.tracker import Tracker
    >>> t = Tracker(); e = {"PartitionKey": "p", "RowKey": "r", "A": 1}
    >>> d = t.attach("movies", e, 'W/"1"'); e["A"] = 2
    >>> d.changes(), d.is_dirty()
    ((['A'], []), True)
"""

from __future__ import annotations

from typing import Any, Literal

from azt._edm.entity import TableEntity
from azt._uow.access import EntityAccess, Snapshot
from azt._uow.types import ChangeKind, EntityState, IdentityKey

__all__ = ["EntityDescriptor", "PendingChange"]


class EntityDescriptor:
    """The side record of one tracked object.

    ``table`` is the table name as given; ``key`` the identity key; ``etag`` the
    ``If-Match`` value for updates and deletes (``"*"``: unconditional; ``None``: updates
    become upserts); ``snapshot`` the values last known to match the store (or, for
    attached entities, the values at attach time); ``seq`` orders changes. (An explicit
    ``update`` without a detected change is the MODIFIED state itself: planning writes
    every property then.)

    Example::

        >>> from azt._uow.tracker import Tracker
        >>> from azt.dynamic import DynamicEntity
        >>> d = Tracker().attach("movies", DynamicEntity("p", "r"), "*")
        >>> (d.state, d.etag, d.key)
        (<EntityState.UNCHANGED: 'unchanged'>, '*', ('movies', 'p', 'r'))
    """

    __slots__ = ("access", "complete", "etag", "key", "obj", "seq", "snapshot", "state", "table")

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
        #: the object is known (or declared, ``TableContext.mark_complete``) to hold every
        #: property the stored entity should keep, so a replace of it may remove the others
        self.complete = False

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
            >>> from azt._uow.tracker import Tracker
            >>> d = Tracker().attach("t", e, "*"); del e["A"]; d.changes()
            ([], ['A'])
        """
        return self.access.diff(self.snapshot, self.access.snapshot(self.obj))

    def is_dirty(self) -> bool:
        """Whether a save would send something for this entity.

        Example::

            >>> from azt._uow.tracker import Tracker
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

        >>> from azt._uow.tracker import Tracker
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

            >>> from azt._uow.tracker import Tracker
            >>> t = Tracker(); _ = t.add("t", {"PartitionKey": "p", "RowKey": "r"})
            >>> t.plan()[0].partition_key
            'p'
        """
        return self.descriptor.key[1]

    @property
    def row_key(self) -> str:
        """The entity's RowKey.

        Example::

            >>> from azt._uow.tracker import Tracker
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
