"""The journal of a re-key's moves across partitions in flight, kept in the table of
applied migrations so that a run after a crash knows the copies a dead run made.

A move across partitions is three writes: the old row is read (its ETag), the new row
inserted, the old row deleted ``If-Match`` the ETag read. Between the read and the insert
the application may write the old row; the copy then holds the row as it was *before*
that write, yet carries the later Timestamp. A run that sees the answer of its insert
knows the copy by its ETag; a run whose answer was lost knows it by its content (it
holds exactly what was sent). A run killed between the insert and the delete knows
nothing, and the next run would take the copy for the application's later write of the
new keys, and drop the application's write to the old row with the old row.

So before a run sends the inserts of a page's moves (or a copy over a new row after a
conflict) it writes one journal row: for each move a digest of the old keys, of the
ETag the old row was read with and of the content of the new row as planned (its
properties, their EDM types and values: :func:`content_digest`). Once the page's moves
are done, the row is deleted in the transaction of the next journal write (no request
of its own; the last ones when the migration is done); what a killed run left is loaded
by the next run and deleted when the migration is done. A new row whose content digest
a dead run journalled for the old keys is that run's copy: copied again from the old row
if the old row changed since (its ETag), or taken as the move's copy if not.

Journal rows live in the table of applied migrations, PartitionKey
``"<table>.<migration name>"`` (a table name has no ``.``, so no record's partition),
RowKey ``"<run>-<n>"``; their entries are fixed-size (48 bytes) in Binary properties of at
most 64 KiB each, whatever the length of the keys.

Example::

    journal = MoveJournal(service.get_table_client(MIGRATIONS_TABLE), migration)
    await journal.load()          # what killed runs left
    row = await journal.note([(("p", "1"), etag, planned_entity)])
    ...                           # insert the new rows, delete the old ones
    journal.finished([row])       # deleted with the next journal write
    await journal.clear()         # the migration is done
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from azt._core.batch import BatchOperation
from azt._core.results import UpdateMode
from azt._core.table_client import TableClient
from azt._edm.types import EdmType, coerce_value, resolved_type
from azt._errors import (
    AmbiguousOutcomeError,
    EntityNotFoundError,
    ServiceError,
    TransactionError,
    TransportError,
)
from azt._orm.evolution import stored_type
from azt._orm.migration_records import retrying
from azt._orm.migrations import Migration

__all__ = ["MoveJournal", "content_digest"]

_DIGEST = 16
_ENTRY = 3 * _DIGEST
#: a Binary property holds at most 64 KiB
_CHUNK = (65536 // _ENTRY) * _ENTRY
#: operations of an entity group transaction
_MAX_OPS = 100


def content_digest(entity: Mapping[str, Any]) -> bytes:
    """A stable digest of a row's content: every property (the keys too) with its EDM
    type and its value in canonical form; properties holding ``None`` are not stored and
    do not count. A row as planned and the same row read back have the same digest; a row
    that differs in a value or a type has another.

    Example::

        >>> from azt._edm.entity import TableEntity
        >>> a = TableEntity(PartitionKey="p", RowKey="r", N=5)
        >>> b = TableEntity(PartitionKey="p", RowKey="r", N=5); b.edm_types["N"] = EdmType.INT64
        >>> content_digest(a) == content_digest(dict(a)), content_digest(a) == content_digest(b)
        (True, False)
    """
    h = hashlib.blake2b(digest_size=_DIGEST)
    for name in sorted(entity):
        value = entity[name]
        if value is None:
            continue
        try:
            t, bare = resolved_type(name, value, stored_type(entity, name, json=False))
            text = _canonical(coerce_value(bare, t), t)
        except (ValueError, TypeError):  # not a value the service stores: as it is
            t, text = EdmType.STRING, f"?{type(value).__name__}:{value!r}"
        for part in (name, t.value, text):
            data = part.encode("utf-8", "surrogatepass")
            h.update(len(data).to_bytes(4, "big"))
            h.update(data)
    return h.digest()


def _canonical(value: Any, t: EdmType) -> str:
    if t is EdmType.DOUBLE:
        return float(value).hex()
    if t is EdmType.BOOLEAN:
        return "1" if value else "0"
    if t is EdmType.DATETIME:
        return str(value.to_wire())
    if t is EdmType.BINARY:
        return bytes(value).hex()
    return str(value)  # strings, Int32 and Int64 (decimal), Guid (lower-case hyphenated)


def _digest(*parts: str) -> bytes:
    h = hashlib.blake2b(digest_size=_DIGEST)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(4, "big"))
        h.update(data)
    return h.digest()


class MoveJournal:
    """The journal rows of one migration (see the module text): :meth:`load` what killed
    runs left, :meth:`note` moves before their copies are sent, :meth:`finished` a page's
    rows once its moves are done, :meth:`clear` every row left once the migration is
    done; :meth:`earlier_copy` says whether a new row is a killed run's copy.

    Example::

        journal = MoveJournal(log, migration)
        row = await journal.note([(("p", "1"), etag, planned)])
    """

    def __init__(self, log: TableClient, m: Migration) -> None:
        self.log = log
        self.partition = f"{m.table}.{m.name}"
        #: the killed runs' moves: old keys' digest -> (ETag's digest, content digest)
        self.earlier: dict[bytes, list[tuple[bytes, bytes]]] = {}
        #: the journal rows (RowKeys) not yet deleted: loaded, or written by this run
        self.rows: set[str] = set()
        #: ... of which those whose moves are done (deleted with the next journal write)
        self.done: list[str] = []
        self.run = uuid.uuid4().hex[:12]
        self.written = 0

    async def load(self) -> None:
        """Read the journal rows killed runs left (one query of the journal's partition)."""
        rows = await retrying(
            lambda: self.log.query_entities(
                "PartitionKey eq @pk", parameters={"pk": self.partition}
            ).to_list()
        )
        for row in rows:
            self.rows.add(row["RowKey"])
            data = b"".join(
                bytes(row[name]) for name in sorted(row, key=_chunk_order) if _is_chunk(name)
            )
            for at in range(0, len(data) - _ENTRY + 1, _ENTRY):
                keys, etag, content = (
                    data[at : at + _DIGEST],
                    data[at + _DIGEST : at + 2 * _DIGEST],
                    data[at + 2 * _DIGEST : at + _ENTRY],
                )
                self.earlier.setdefault(keys, []).append((etag, content))

    async def note(self, moves: Sequence[tuple[tuple[str, str], str, Mapping[str, Any]]]) -> str:
        """Write one journal row for ``moves`` (old keys, the ETag the old row was read
        with, the new row as it is to be written) before their copies are sent, in one
        transaction with the deletes of the rows :meth:`finished` since the last write;
        returns its RowKey."""
        data = b"".join(
            _digest(pk, rk) + _digest(etag) + content_digest(new) for (pk, rk), etag, new in moves
        )
        self.written += 1
        key = f"{self.run}-{self.written:08d}"
        entity: dict[str, Any] = {
            "PartitionKey": self.partition,
            "RowKey": key,
            "Moves": len(moves),
            "Written": datetime.now(UTC),
        }
        for i, at in enumerate(range(0, len(data), _CHUNK)):
            entity[f"M{i}"] = data[at : at + _CHUNK]
        self.rows.add(key)
        gone, self.done = self.done[: _MAX_OPS - 1], self.done[_MAX_OPS - 1 :]
        write = BatchOperation("upsert", entity, mode=UpdateMode.REPLACE)
        if gone:
            try:
                await self._submit([write, *self._deletes(gone)])
            except (TransactionError, AmbiguousOutcomeError):
                pass  # a row to delete is gone already (an answer lost): clear() deletes
            else:  # the rest one by one, a row gone already being fine
                self.rows.difference_update(gone)
                return key
        await retrying(lambda: self.log.upsert_entity(entity, UpdateMode.REPLACE))
        return key

    def finished(self, keys: Sequence[str]) -> None:
        """The moves of these journal rows are done: the rows are deleted with the next
        journal write (no request of their own), or by :meth:`clear`."""
        self.done.extend(keys)

    async def clear(self) -> None:
        """Delete every journal row left (the migration is done: no move is in flight),
        in transactions of up to 100."""
        left = sorted(self.rows)
        self.done.clear()
        for at in range(0, len(left), _MAX_OPS):
            await self._clear(left[at : at + _MAX_OPS])

    async def _clear(self, keys: list[str]) -> None:
        try:
            await self._submit(self._deletes(keys))
        except (TransactionError, AmbiguousOutcomeError):  # one is gone already
            await asyncio.gather(*(self._delete(key) for key in keys))
        else:
            self.rows.difference_update(keys)

    async def _submit(self, ops: list[BatchOperation]) -> None:
        await retrying(lambda: self.log.submit_transaction(ops))

    def _deletes(self, keys: Sequence[str]) -> list[BatchOperation]:
        return [
            BatchOperation("delete", {"PartitionKey": self.partition, "RowKey": k}, etag="*")
            for k in keys
        ]

    async def _delete(self, key: str) -> None:
        try:
            await retrying(lambda: self.log.delete_entity(self.partition, key))
        except (EntityNotFoundError, AmbiguousOutcomeError):
            pass  # gone already (an earlier attempt's answer was lost)
        except (ServiceError, TransportError):
            return  # left (a later run's clear() deletes it)
        self.rows.discard(key)

    def earlier_copy(
        self, keys: tuple[str, str], old_etag: str, new: Mapping[str, Any]
    ) -> bool | None:
        """Whether ``new`` is a killed run's copy of the old row at ``keys``: ``None`` if
        no killed run journalled this content for these keys; ``True`` if one did and the
        old row changed since it read it (its ETag now is ``old_etag``): the copy is
        stale; ``False`` if the old row is still as that run read it."""
        entries = self.earlier.get(_digest(*keys))
        if not entries:
            return None
        content = content_digest(new)
        etag = _digest(old_etag)
        found: bool | None = None
        for was, planned in entries:
            if planned == content:
                if was == etag:
                    return False
                found = True
        return found


def _is_chunk(name: str) -> bool:
    return name[:1] == "M" and name[1:].isdigit()


def _chunk_order(name: str) -> tuple[int, str]:
    return (int(name[1:]), name) if _is_chunk(name) else (-1, name)
