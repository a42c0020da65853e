"""Recorded intents: writes to other partitions that an entity group transaction cannot
hold, recorded by a row that the transaction does hold.

The service makes a transaction atomic within one partition only. A write that must also
change rows of other partitions (a cross-partition secondary index, see ``azt.indexes``)
puts an *intent row* into its own transaction: a row of the main row's partition whose
:data:`INTENT_PROPERTY` lists the rows to put (key-only rows) and to delete elsewhere.
Once the transaction has committed, :func:`carry_out` writes them, one by one, and then
deletes the intent row (conditional on its ETag). A crash, a cancellation or a failure in
between leaves the intent row behind, so a repair can find exactly what was left undone;
a transaction that failed wrote no intent and nothing else.

Example::

    >>> intent = Intent(put=(("ix", "a"),), delete=(("ix", "b"),))
    >>> Intent.decode(intent.encode()) == intent
    True
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

import attrs

from azt._core.batch import BatchOperation
from azt._core.results import UpdateMode
from azt._core.wire.batch import MAX_BATCH_OPERATIONS
from azt._edm.entity import TableEntity
from azt._errors import AztError, EntityNotFoundError, PreconditionFailedError

__all__ = ["INTENT_PROPERTY", "Intent", "IntentWriter", "carry_out", "intent_of"]

#: the property of an intent row that holds its :class:`Intent` (JSON text)
INTENT_PROPERTY: Final = "AztIntent"
#: intent rows of one transaction carried out at once, at most
CONCURRENCY: Final = 8

logger = logging.getLogger("azt")

Key = tuple[str, str]


@attrs.frozen
class Intent:
    """Rows to write outside a transaction once it commits: ``put`` key-only rows
    (PartitionKey, RowKey) to insert or replace, ``delete`` rows to remove.

    Example::

        >>> Intent(put=(("p", "r"),)).encode()
        '{"v":1,"put":[["p","r"]],"del":[]}'
    """

    put: tuple[Key, ...] = ()
    delete: tuple[Key, ...] = ()

    def encode(self) -> str:
        """The intent as the JSON text an intent row stores.

        Example::

            >>> Intent(delete=(("p", "r"),)).encode()
            '{"v":1,"put":[],"del":[["p","r"]]}'
        """
        doc = {"v": 1, "put": [list(k) for k in self.put], "del": [list(k) for k in self.delete]}
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def decode(cls, text: object) -> Intent | None:
        """The intent an intent row's text holds; ``None`` when it is not one (another
        version, or damaged).

        Example::

            >>> Intent.decode('{"v":1,"put":[["p","r"]],"del":[]}')
            Intent(put=(('p', 'r'),), delete=())
            >>> Intent.decode("nonsense") is None
            True
        """
        if not isinstance(text, str):
            return None
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        if not isinstance(doc, dict) or doc.get("v") != 1:
            return None
        put, delete = _keys(doc.get("put")), _keys(doc.get("del"))
        if put is None or delete is None:
            return None
        return cls(put, delete)


def _keys(value: object) -> tuple[Key, ...] | None:
    if not isinstance(value, list):
        return None
    out: list[Key] = []
    for item in value:
        if not (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], str)
        ):
            return None
        out.append((item[0], item[1]))
    return tuple(out)


def intent_of(entity: Mapping[str, Any]) -> Intent | None:
    """The intent a row (an entity sent or read) records, ``None`` for other rows.

    Example::

        >>> intent_of({"PartitionKey": "p", "RowKey": "r"}) is None
        True
    """
    text = entity.get(INTENT_PROPERTY)
    return None if text is None else Intent.decode(text)


class IntentWriter(Protocol):
    """What :func:`carry_out` writes through (a ``TableClient``).

    Example::

        writer: IntentWriter = table
    """

    @property
    def table_name(self) -> str: ...

    async def upsert_entity(self, entity: Any, mode: Any = ...) -> Any: ...

    async def delete_entity(
        self, partition_key: str, row_key: str, *, etag: str | None = None
    ) -> Any: ...

    async def submit_transaction(self, batch: Any) -> Any: ...


async def carry_out(
    writer: IntentWriter, intent_rows: Sequence[tuple[Mapping[str, Any], str | None]]
) -> int:
    """Carry out the intents of committed intent rows (``(row sent, its new ETag)``, all
    of one transaction): put and delete the rows each lists (at most :data:`CONCURRENCY`
    intents at once), then delete the intent rows carried out, conditional on their ETags
    (in one transaction when there are several). A failure leaves that intent row for a
    repair and is logged as a WARNING on the ``azt`` logger, never raised: the transaction
    it belongs to has committed. Returns how many intents were carried out completely.

    Example::

        done = await carry_out(table, [(intent_row, result.etag)])
    """
    if not intent_rows:
        return 0
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(row: Mapping[str, Any]) -> bool:
        intent = intent_of(row)
        if intent is None:
            return False
        async with gate:
            try:
                await apply_intent(writer, intent)
            except AztError as exc:
                _left(writer, row, exc)
                return False
        return True

    applied = await asyncio.gather(*(one(row) for row, _ in intent_rows))
    finished = [pair for pair, ok in zip(intent_rows, applied, strict=True) if ok]
    if len(finished) > 1:
        operations = [
            BatchOperation("delete", _keys_of(row), etag=etag or "*") for row, etag in finished
        ]
        try:
            for start in range(0, len(operations), MAX_BATCH_OPERATIONS):
                await writer.submit_transaction(operations[start : start + MAX_BATCH_OPERATIONS])
        except AztError:
            pass  # one was settled meanwhile (or the request failed): one by one below
        else:
            return len(finished)
    done = 0
    for row, etag in finished:
        try:
            await writer.delete_entity(row["PartitionKey"], row["RowKey"], etag=etag or "*")
        except (EntityNotFoundError, PreconditionFailedError):
            pass  # a repair settled it meanwhile
        except AztError as exc:
            _left(writer, row, exc)
            continue
        done += 1
    return done


def _keys_of(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"PartitionKey": row["PartitionKey"], "RowKey": row["RowKey"]}


def _left(writer: IntentWriter, row: Mapping[str, Any], exc: AztError) -> None:
    logger.warning(
        "table %r: the writes recorded by intent row (%r, %r) were not all carried out "
        "(%s: %s); the row stays for `azt index repair`",
        writer.table_name,
        row["PartitionKey"],
        row["RowKey"],
        type(exc).__name__,
        exc,
    )


async def apply_intent(writer: IntentWriter, intent: Intent) -> None:
    """Write what ``intent`` lists: its key-only rows, then its deletions (a row already
    gone is fine). Idempotent, so a repair may run it again.

    Example::

        await apply_intent(table, Intent(put=(("ix", "a"),)))
    """
    for pk, rk in intent.put:
        await writer.upsert_entity(TableEntity(PartitionKey=pk, RowKey=rk), UpdateMode.REPLACE)
    for pk, rk in intent.delete:
        with contextlib.suppress(EntityNotFoundError):
            await writer.delete_entity(pk, rk, etag="*")
