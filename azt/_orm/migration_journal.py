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

Once every copy of the row's moves is inserted, and before any of their old rows'
deletes is sent, the row is marked *deleting* (:meth:`MoveJournal.mark`). An old row
found gone whose keys only rows not so marked hold was not deleted by a killed run: the
application deleted it while the move was in flight, and the copy goes too
(:meth:`MoveJournal.orphans`, once every row is migrated: the old row is not in the scan).

Journal rows live in the table of applied migrations, PartitionKey
``"<table>.<migration name>"`` (a table name has no ``.``, so no record's partition),
RowKey ``"<run>-<n>"``; their entries are fixed-size (48 bytes), and the old and new
keys, in Binary properties of at most 64 KiB each (a page whose keys need more than
512 KiB takes more rows, written in one transaction).

Example::

    journal = MoveJournal(service.get_table_client(MIGRATIONS_TABLE), migration)
    await journal.load()          # what killed runs left
    rows = await journal.note([(("p", "1"), etag, planned_entity)])
    ...                           # insert the new rows
    await journal.mark(rows)      # then delete the old ones
    journal.finished(rows)        # deleted with the next journal write
    await journal.clear()         # the migration is done
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

from azt._core.batch import BatchOperation
from azt._core.results import UpdateMode
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._edm.types import EdmType, coerce_value, resolved_type
from azt._errors import (
    AmbiguousOutcomeError,
    EntityNotFoundError,
    PreconditionFailedError,
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
#: a journal row's entries and keys at most (an entity holds at most 1 MiB); more moves
#: take more rows, in one transaction (at most 4 MiB)
_ROW_BYTES = 512 * 1024


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
    runs left, :meth:`note` moves before their copies are sent, :meth:`mark` them before
    their deletes are, :meth:`finished` a page's rows once its moves are done,
    :meth:`clear` every row left once the migration is done; :meth:`earlier_copy` says
    whether a new row is a killed run's copy, :meth:`orphans` deletes a killed run's
    copies whose old row the application deleted.

    Example::

        journal = MoveJournal(log, migration)
        rows = await journal.note([(("p", "1"), etag, planned)])
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
        #: the journal rows marked deleting (their old rows' deletes may have been sent)
        self.marked: set[str] = set()
        #: the killed runs' moves of rows marked deleting: old keys' digests
        self.deleting: set[bytes] = set()
        #: ... of rows not marked: (old keys, new keys, content digest): no delete of the
        #: old row was sent by that run
        self.unsent: list[tuple[tuple[str, str], tuple[str, str], bytes]] = []
        #: the old keys whose delete this run sent
        self.sent: set[tuple[str, str]] = set()

    async def load(self) -> None:
        """Read the journal rows killed runs left (one query of the journal's partition)."""
        rows = await retrying(
            lambda: self.log.query_entities(
                "PartitionKey eq @pk", parameters={"pk": self.partition}
            ).to_list()
        )
        for row in rows:
            self.rows.add(row["RowKey"])
            marked = bool(row.get("Deleting"))
            data = _joined(row, "M")
            names = _parsed(_joined(row, "K"))
            for i, at in enumerate(range(0, len(data) - _ENTRY + 1, _ENTRY)):
                keys, etag, content = (
                    data[at : at + _DIGEST],
                    data[at + _DIGEST : at + 2 * _DIGEST],
                    data[at + 2 * _DIGEST : at + _ENTRY],
                )
                self.earlier.setdefault(keys, []).append((etag, content))
                if marked:
                    self.deleting.add(keys)
                elif 4 * i + 3 < len(names):
                    old, new = (names[4 * i], names[4 * i + 1]), names[4 * i + 2 : 4 * i + 4]
                    self.unsent.append((old, (new[0], new[1]), content))

    async def note(
        self, moves: Sequence[tuple[tuple[str, str], str, Mapping[str, Any]]]
    ) -> list[str]:
        """Write the journal rows for ``moves`` (old keys, the ETag the old row was read
        with, the new row as it is to be written) before their copies are sent, in one
        transaction with the deletes of the rows :meth:`finished` since the last write;
        returns their RowKeys (one row, unless the keys need more than ``_ROW_BYTES``)."""
        rows: list[dict[str, Any]] = []
        data, keys = bytearray(), bytearray()
        n = 0
        for (pk, rk), etag, new in moves:
            named = _strings(pk, rk, str(new["PartitionKey"]), str(new["RowKey"]))
            if n and len(data) + len(keys) + len(named) + _ENTRY > _ROW_BYTES:
                rows.append(self._row(n, bytes(data), bytes(keys)))
                data, keys, n = bytearray(), bytearray(), 0
            data += _digest(pk, rk) + _digest(etag) + content_digest(new)
            keys += named
            n += 1
        rows.append(self._row(n, bytes(data), bytes(keys)))
        written = [row["RowKey"] for row in rows]
        self.rows.update(written)
        ops = [BatchOperation("upsert", row, mode=UpdateMode.REPLACE) for row in rows]
        await self._write(ops)
        return written

    def _row(self, n: int, data: bytes, keys: bytes) -> dict[str, Any]:
        self.written += 1
        entity: dict[str, Any] = {
            "PartitionKey": self.partition,
            "RowKey": f"{self.run}-{self.written:08d}",
            "Moves": n,
            "Written": datetime.now(UTC),
        }
        for prefix, blob in (("M", data), ("K", keys)):
            for i, at in enumerate(range(0, len(blob), _CHUNK)):
                entity[f"{prefix}{i}"] = blob[at : at + _CHUNK]
        return entity

    async def mark(self, keys: Sequence[str]) -> None:
        """Mark these journal rows *deleting* before the deletes of their moves' old rows
        are sent (every copy of theirs is inserted): a run after a crash takes an old row
        of an unmarked row found gone for the application's delete (:meth:`orphans`).
        One write (a merge per row, up to 50 rows), deleting the rows :meth:`finished`
        since the last journal write in the same transaction."""
        todo = [k for k in dict.fromkeys(keys) if k not in self.marked]
        if not todo:
            return
        for at in range(0, len(todo), _MAX_OPS // 2):
            some = todo[at : at + _MAX_OPS // 2]
            ops = [
                BatchOperation(
                    "upsert",
                    {"PartitionKey": self.partition, "RowKey": k, "Deleting": True},
                    mode=UpdateMode.MERGE,
                )
                for k in some
            ]
            await self._write(ops)
            self.marked.update(some)
            self.rows.update(some)

    async def _write(self, ops: list[BatchOperation]) -> None:
        room = _MAX_OPS - len(ops)
        gone, self.done = self.done[:room], self.done[room:]
        if gone:
            try:
                await self._submit([*ops, *self._deletes(gone)])
            except (TransactionError, AmbiguousOutcomeError):
                pass  # a row to delete is gone already (an answer lost): clear() deletes
            else:
                self.rows.difference_update(gone)
                return
        if len(ops) == 1:
            op = ops[0]
            await retrying(lambda: self.log.upsert_entity(op.entity, op.mode or UpdateMode.MERGE))
        else:
            await self._submit(ops)

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

    async def orphans(
        self,
        table: TableClient,
        companions: Callable[[TableEntity, str], list[BatchOperation]],
    ) -> list[str]:
        """Once every row is migrated: delete the copies killed runs made whose old row
        is gone though no run sent its delete (no row of a killed run marked deleting
        holds its keys, and this run sent none): the application deleted the old row
        while the move was in flight, and the copy must not bring it back. A copy goes
        only if it still holds exactly what the killed run journalled, ``If-Match`` it as
        read, with its index rows (``companions``); a new row the application wrote
        stands. Returns the failures (the copy stays; the migration is not done)."""
        failures: list[str] = []
        gone: dict[tuple[str, str], bool] = {}
        for old, (npk, nrk), content in self.unsent:
            if old in self.sent or _digest(*old) in self.deleting:
                continue
            if old not in gone:
                gone[old] = await _missing(table, old)
            if not gone[old]:
                continue
            try:
                new = await retrying(partial(table.get_entity, npk, nrk))
            except EntityNotFoundError:
                continue
            if content_digest(new) != content:
                continue  # the application's row at the new keys (or changed since)
            etag = new.metadata.etag or "*"
            keys = {"PartitionKey": npk, "RowKey": nrk}
            ops = [BatchOperation("delete", keys, etag=etag), *companions(new, etag)]
            try:
                await retrying(partial(table.submit_transaction, ops))
            except AmbiguousOutcomeError:
                pass  # the answer lost: taken, or the application wrote the row since
            except TransactionError as exc:
                if not isinstance(exc.error, (PreconditionFailedError, EntityNotFoundError)):
                    failures.append(f"{npk!r}/{nrk!r}: {exc}")
        return failures

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


async def _missing(table: TableClient, keys: tuple[str, str]) -> bool:
    try:
        await retrying(lambda: table.get_entity(*keys))
    except EntityNotFoundError:
        return True
    return False


def _strings(*parts: str) -> bytes:
    out = bytearray()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        out += len(data).to_bytes(4, "big") + data
    return bytes(out)


def _parsed(blob: bytes) -> list[str]:
    out, at = [], 0
    while at + 4 <= len(blob):
        n = int.from_bytes(blob[at : at + 4], "big")
        out.append(blob[at + 4 : at + 4 + n].decode("utf-8", "surrogatepass"))
        at += 4 + n
    return out


def _joined(row: Mapping[str, Any], prefix: str) -> bytes:
    chunks = [n for n in row if n[:1] == prefix and n[1:].isdigit()]
    return b"".join(bytes(row[n]) for n in sorted(chunks, key=lambda n: int(n[1:])))
