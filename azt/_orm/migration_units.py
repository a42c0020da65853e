"""What a migration run writes, unit by unit: a row's :class:`Unit` (its operations, the
row as read, and for a move across partitions what was sent to the new keys), a scan
:class:`Page` in flight, and the comparisons by which a move tells a new row as the
migration's own copy (:func:`own_copy`) or the application's (:func:`stamp`). The run
itself is :mod:`azt._orm.migration_runner`.

Example::

    unit = Unit(row, migration.plan_row(row), Page(token))
    if own_copy(unit, new_row, new_row.metadata.etag):
        ...  # copy the old row over it again
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from azt._core.batch import BatchOperation
from azt._edm.entity import TableEntity
from azt._orm.migration_journal import content_digest
from azt._orm.migrations import RowPlan

__all__ = ["Page", "Unit", "describe", "holds", "keys_of", "own_copy", "stamp"]


class Unit:
    """The operations of one row's rewrite (one transaction's worth, or the first of a
    move across partitions), and the row as read."""

    __slots__ = (
        "copied",
        "deleted",
        "deleting",
        "noted",
        "ops",
        "page",
        "plan",
        "row",
        "sent",
        "size",
        "then",
    )

    def __init__(self, row: TableEntity, plan: RowPlan, page: Page) -> None:
        self.row = row
        self.plan = plan
        self.page = page
        self.ops: list[BatchOperation] = []
        self.then: list[BatchOperation] = []  # a move across partitions: the delete after
        self.deleted: list[BatchOperation] = []  # a move: the old row's delete (+ index rows)
        #: a move across partitions: the ETag of the new row as this run wrote it (the
        #: insert's answer, or a copy's), or known to be the migration's copy
        self.copied: str | None = None
        #: ... and the new row as this run last sent it (the insert, or a copy over the new
        #: row) in a transaction that may have been applied: the copy, if the new row holds
        #: exactly this and the answer was lost
        self.sent: TableEntity | None = None
        #: a move: the old row's delete was sent in a transaction that may have been
        #: applied (if the old row is gone, it may be this run's delete that took it)
        self.deleting = False
        #: a move across partitions: the journal rows its copy was last noted in
        self.noted: tuple[str, ...] = ()
        #: a generous estimate of the encoded size (a transaction stays under 4 MiB); set
        #: by the writers that group units themselves (the loader measures its own)
        self.size = 0


class Page:
    """A scan page in flight: ``left`` rows still to write (or to find done), ``done``
    once every one is; then the scan's token after it may be saved."""

    __slots__ = ("done", "failed", "journal", "left", "settled", "token")

    def __init__(self, token: str | None) -> None:
        self.token = token
        self.left = 0
        self.settled = False
        self.done = asyncio.Event()
        #: the journal rows of its moves across partitions (deleted once they are done)
        self.journal: list[str] = []
        self.failed = False

    def resolved(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.done.set()


def own_copy(u: Unit, new: TableEntity, etag: str) -> bool:
    """Whether ``new`` (the new row as read, its ETag ``etag``) is the copy this run
    wrote for ``u``, unchanged since: the ETag of the write's answer; where the answer
    was lost, the content sent, exactly (every property, its type and value).

    Example::

        >>> from azt._orm.migrations import Migration, rekey
        >>> row = TableEntity(PartitionKey="p", RowKey="1", N=1)
        >>> m = Migration("m", "things", [rekey(lambda r: ("b-p", "1"))])
        >>> u = Unit(row, m.plan_row(row), Page(None)); u.sent = u.plan.entity  # sent
        >>> copy = TableEntity(PartitionKey="b-p", RowKey="1", N=1)
        >>> own_copy(u, copy, 'W/"x"'), own_copy(u, TableEntity(copy, N=2), 'W/"x"')
        (True, False)
    """
    if u.copied is not None:
        return etag == u.copied
    return u.sent is not None and content_digest(new) == content_digest(u.sent)


def holds(stored: TableEntity, entity: TableEntity) -> bool:
    """Whether the stored row holds ``entity``'s properties and values, and no others.

    Example::

        >>> holds(TableEntity(PartitionKey="p", RowKey="r", N=1), TableEntity(PartitionKey="p",
        ...       RowKey="r", N=1, M=2))
        False
    """
    return dict(stored) == dict(entity)


def stamp(row: TableEntity) -> datetime:
    """The row's Timestamp (the service's time of its last write); the earliest time for
    a row never written.

    Example::

        >>> stamp(TableEntity(PartitionKey="p", RowKey="r")).year
        1
    """
    ts = row.metadata.timestamp
    return ts if ts is not None else datetime.min.replace(tzinfo=UTC)


def keys_of(row: TableEntity) -> dict[str, Any]:
    """The row's keys, as an entity (what a delete sends).

    Example::

        >>> keys_of(TableEntity(PartitionKey="p", RowKey="r", N=1))
        {'PartitionKey': 'p', 'RowKey': 'r'}
    """
    return {"PartitionKey": row["PartitionKey"], "RowKey": row["RowKey"]}


def describe(u: Unit) -> str:
    """A dry run's line for a unit: its keys (and new keys), the row before and after.

    Example::

        >>> from azt._orm.migrations import Migration, rename
        >>> row = TableEntity(PartitionKey="p", RowKey="1", A=1)
        >>> m = Migration("m", "things", [rename("A", "B")])
        >>> describe(Unit(row, m.plan_row(row), Page(None)))
        "'p'/'1': {'A': 1} -> {'B': 1}"
    """
    pk, rk = u.plan.old_keys
    new = {k: v for k, v in u.plan.entity.items() if k not in ("PartitionKey", "RowKey")}
    where = f"{pk!r}/{rk!r}"
    if u.plan.moved:
        where += f" -> {u.plan.entity['PartitionKey']!r}/{u.plan.entity['RowKey']!r}"
    old = {k: v for k, v in u.row.items() if k not in ("PartitionKey", "RowKey")}
    return f"{where}: {old} -> {new}"
