"""``BatchWriter``: write many entities as entity group transactions without building them
by hand. Operations are grouped by PartitionKey; a partition's group is sent when it
reaches 100 operations or its next operation would take the request body past 4 MiB
(2 MB on Cosmos DB; exact encoded sizes, each operation encoded once), when the buffered
bytes pass a bound, and on exit. Every operation gets an outcome; failures are raised together on
exit (:class:`BatchWriteError`), none is dropped.

Example::

    async with table.batch_writer() as writer:
        for row in rows:
            await writer.upsert(row)
    print(len(writer.results))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Self, overload

import attrs

from azt._core.base import EntityArg, EntityObject, entity_source
from azt._core.batch import (
    BatchOperation,
    Prepared,
    TableBatch,
    add_prepared,
    delete_operation,
    droppable_companion,
    encode_operation,
    operation_companions,
)
from azt._core.packing import (
    EntityWrite,
    check_group_alone,
    entity_write,
    group_fits,
    prepare_group,
)
from azt._core.results import UpdateMode, WriteResult
from azt._core.wire.batch import MAX_BATCH_OPERATIONS
from azt._errors import AztError, TransactionError, ValidationError

__all__ = ["BatchWriteError", "BatchWriteOutcome", "BatchWriter"]

#: Default bound on the encoded bytes a writer buffers before it sends its largest group.
DEFAULT_MAX_BUFFER_BYTES = 32 * 1024 * 1024


@attrs.frozen
class BatchWriteOutcome:
    """What became of one operation given to a :class:`BatchWriter`.

    ``index`` is its 0-based position among the writer's calls; ``result`` the service's
    :class:`WriteResult` when it was applied, else ``error``: the error of the transaction
    it travelled in (a :class:`azt.TransactionError` names the failing operation; the
    others of that transaction were not applied because transactions are atomic).

    Example::

        for outcome in writer.results:
            if not outcome.ok:
                print(outcome.index, outcome.partition_key, outcome.row_key, outcome.error)
    """

    index: int
    operation: BatchOperation
    result: WriteResult | None = None
    error: AztError | None = None
    batch: int | None = None

    @property
    def ok(self) -> bool:
        """Whether the operation was applied.

        Example::

            applied = [o for o in writer.results if o.ok]
        """
        return self.error is None and self.result is not None

    @property
    def partition_key(self) -> str:
        """The operation's PartitionKey.

        Example::

            keys = {o.partition_key for o in writer.results}
        """
        return self.operation.partition_key

    @property
    def row_key(self) -> str:
        """The operation's RowKey.

        Example::

            failed = [o.row_key for o in writer.results if not o.ok]
        """
        return self.operation.row_key

    @property
    def caused_failure(self) -> bool:
        """Whether this operation is the one its failed transaction names (the others of
        that transaction failed with it, unapplied).

        Example::

            culprits = [o for o in exc.failures if o.caused_failure]
        """
        err = self.error
        return isinstance(err, TransactionError) and err.operation is self.operation


class BatchWriteError(AztError):
    """Operations given to a :class:`BatchWriter` were not applied; raised on exit.

    ``failures`` are their :class:`BatchWriteOutcome` (index, keys, error), in call order;
    ``results`` every outcome, applied ones included.

    Example::

        try:
            async with table.batch_writer() as writer:
                await writer.insert(row)
        except BatchWriteError as exc:
            for failure in exc.failures:
                print(failure.index, failure.row_key, failure.error)
    """

    def __init__(self, results: list[BatchWriteOutcome]) -> None:
        self.results = results
        self.failures = [r for r in results if not r.ok]
        lines = []
        for f in self.failures[:10]:
            if f.caused_failure and isinstance(f.error, TransactionError):
                why = f"{f.error.status} {f.error.code}: {f.error.error or f.error.message}"
            elif isinstance(f.error, TransactionError):
                why = f"not applied: its transaction failed at operation {f.error.index}"
            else:
                why = f"{type(f.error).__name__}: {f.error}"
            lines.append(
                f"operation {f.index} ({f.operation.kind} PartitionKey={f.partition_key!r}, "
                f"RowKey={f.row_key!r}): {why}"
            )
        more = len(self.failures) - len(lines)
        if more > 0:
            lines.append(f"... and {more} more (see .failures)")
        super().__init__(
            f"{len(self.failures)} of {len(results)} operations were not applied:\n  "
            + "\n  ".join(lines)
        )


class _Group:
    """One partition's buffered transaction: ``indexes`` are the writer's operations it
    carries; ``owners`` has, for each of the batch's operations, its index among the
    writer's operations, or ``None`` for an index row travelling with one."""

    __slots__ = ("batch", "indexes", "owners")

    def __init__(self, batch: TableBatch) -> None:
        self.batch = batch
        self.indexes: list[int] = []
        self.owners: list[int | None] = []


class BatchWriter:
    """Buffers writes, groups them by PartitionKey and sends each group as entity group
    transactions: at 100 operations, at the exact body limit (4 MiB; 2 MB on Cosmos DB),
    when the buffered bytes pass ``max_buffer_bytes`` (its largest group is sent), on
    :meth:`flush` and on a clean exit. Get one with :meth:`TableClient.batch_writer`.

    The methods are coroutines: a call may send a transaction. An invalid operation is
    refused at the call (:class:`azt.ValidationError`) and nothing of it is buffered.
    Within a partition, operations are sent in call order (a second operation on the same
    entity starts a new transaction). A failed transaction does not stop the others;
    every operation gets a :class:`BatchWriteOutcome` in :attr:`results`, and a clean
    exit with failures raises :class:`BatchWriteError` listing them. When the ``async
    with`` body raises, what is still buffered is not sent: it is listed in
    :attr:`unsent` (and a note on the exception says how many). An entity object whose
    class declares secondary indexes (``azt.indexes``) travels with its index rows in the
    same transaction; its outcome is the main row's.

    Example::

        async with table.batch_writer() as writer:
            await writer.insert({"PartitionKey": "p", "RowKey": "1"})
            await writer.upsert({"PartitionKey": "p", "RowKey": "2", "n": 2})
            await writer.delete("q", "3")
    """

    def __init__(
        self,
        new_batch: Callable[[], TableBatch],
        submit: Callable[[TableBatch], Awaitable[list[WriteResult]]],
        *,
        max_buffer_bytes: int = DEFAULT_MAX_BUFFER_BYTES,
    ) -> None:
        if (
            not isinstance(max_buffer_bytes, int)
            or isinstance(max_buffer_bytes, bool)
            or max_buffer_bytes < 1
        ):
            raise ValidationError(f"max_buffer_bytes must be an int >= 1, got {max_buffer_bytes!r}")
        self._new_batch = new_batch
        self._submit = submit
        self._max_buffer = max_buffer_bytes
        self._groups: dict[str, _Group] = {}
        self._buffered = 0
        self._outcomes: dict[int, BatchWriteOutcome] = {}
        self._operations: list[BatchOperation] = []
        self._transactions = 0
        self._closed = False
        self._probe = new_batch()
        # how entity_write checks this writer's entities: against the client flavour's
        # limits, in one pass with the body where its bodies are JSON checked against
        # Azure Table storage's limits (the probe's _plain)
        self._limits = self._probe.limits
        self._route = self._probe._plain

    # -- operations -------------------------------------------------------------------------

    async def insert(self, entity: EntityArg) -> None:
        """Insert ``entity`` (its transaction fails if the entity exists). ``entity`` is a
        mapping or an entity object (``azt.Entity``, ``azt.DynamicEntity``), which gets
        the new ``ETag`` and ``Timestamp`` written back once its transaction succeeds.

        Example::

            await writer.insert({"PartitionKey": "p", "RowKey": "1", "n": 1})
            await writer.insert(Movie("Action", "Heat"))   # ETag, Timestamp set when sent
        """
        await self._put_write(
            entity_write("create", entity, limits=self._limits, route=self._route)
        )

    async def upsert(
        self,
        entity: EntityArg,
        mode: UpdateMode = UpdateMode.MERGE,
        *,
        allow_property_loss: bool = False,
    ) -> None:
        """Insert ``entity`` or merge into / replace the stored one (unconditionally); an
        entity object gets the new ``ETag`` and ``Timestamp`` once its transaction succeeds.
        ``REPLACE`` of an entity read with ``select`` (or by a narrower class) raises
        :class:`azt.PropertyLossError` unless ``allow_property_loss``.

        Example::

            await writer.upsert({"PartitionKey": "p", "RowKey": "1", "n": 2}, UpdateMode.REPLACE)
        """
        await self._put_write(
            entity_write(
                "upsert",
                entity,
                mode,
                allow_property_loss=allow_property_loss,
                limits=self._limits,
                route=self._route,
            )
        )

    async def update(
        self,
        entity: EntityArg,
        mode: UpdateMode = UpdateMode.MERGE,
        *,
        etag: str | None = None,
        allow_property_loss: bool = False,
    ) -> None:
        """Merge into or replace an existing entity (conditional on ``etag`` unless ``"*"``;
        left out, the ETag an entity object carries, else ``"*"``). An entity object gets
        the new ``ETag`` and ``Timestamp`` once its transaction succeeds. ``REPLACE``: as
        :meth:`upsert`.

        Example::

            await writer.update({"PartitionKey": "p", "RowKey": "1", "n": 3}, etag=etag)
            hero.rating = 5.0
            await writer.update(hero)                # If-Match: hero.ETag
        """
        await self._put_write(
            entity_write(
                "update",
                entity,
                mode,
                etag=etag,
                allow_property_loss=allow_property_loss,
                limits=self._limits,
                route=self._route,
            )
        )

    @overload
    async def delete(
        self, partition_key: str, row_key: str, *, etag: str | None = None
    ) -> None: ...
    @overload
    async def delete(self, entity: EntityArg, /, *, etag: str | None = None) -> None: ...
    async def delete(
        self,
        partition_key: str | EntityArg,
        row_key: str | None = None,
        *,
        etag: str | None = None,
    ) -> None:
        """Delete an entity, by its keys or given the entity (a mapping or an entity
        object); conditional on ``etag`` unless ``"*"``; left out, the ETag an entity
        object carries, else ``"*"``.

        Example::

            await writer.delete("p", "1")
            await writer.delete(hero)                # an azt.Entity: If-Match hero.ETag
        """
        if isinstance(partition_key, str) and not isinstance(row_key, str):
            raise ValidationError(
                "delete() takes (partition_key, row_key) or one entity; "
                f"got a PartitionKey and row_key={row_key!r}"
            )
        source = None if isinstance(partition_key, str) else entity_source(partition_key)[1]
        await self._put(
            delete_operation(
                partition_key, row_key, etag=etag, what="delete()", limits=self._probe.limits
            ),
            source,
        )

    async def _put_write(self, write: EntityWrite) -> None:
        """Buffer a create, update or upsert (:func:`entity_write`: its entity checked and
        encoded in one pass where the bodies are JSON checked against Azure Table
        storage's limits; by an entity class's generated code for an entity object)."""
        if self._closed:
            raise ValidationError("this batch writer is closed; get a new one")
        prepared = prepare_group(self._probe, write)
        if len(prepared) > 1:
            check_group_alone(self._new_batch, prepared, None)
        await self._buffer(prepared)

    async def _put(self, operation: BatchOperation, source: EntityObject | None = None) -> None:
        if self._closed:
            raise ValidationError("this batch writer is closed; get a new one")
        obj = operation.source if operation.source is not None else source
        extra = operation_companions(operation, obj, self._probe.limits)
        # BatchValidationError (an entity whose index rows cannot share its transaction):
        # nothing of it is buffered.
        prepared = [encode_operation(self._probe, op) for op in (operation, *extra)]
        if extra:
            check_group_alone(self._new_batch, prepared, None)
        await self._buffer(prepared)

    async def _buffer(self, prepared: list[Prepared]) -> None:
        pk = prepared[0].operation.partition_key
        group = self._groups.get(pk)
        if group is not None and not group_fits(group.batch, prepared):
            await self._send(pk)
            group = None
        if group is None:
            group = self._groups[pk] = _Group(self._new_batch())
        before = group.batch.size or 0
        index = len(self._operations)
        self._operations.append(prepared[0].operation)
        group.indexes.append(index)
        for k, p in enumerate(prepared):
            add_prepared(group.batch, p)
            group.owners.append(index if k == 0 else None)
        self._buffered += (group.batch.size or 0) - before
        if len(group.batch) >= MAX_BATCH_OPERATIONS:
            await self._send(pk)
        while self._buffered > self._max_buffer and self._groups:
            largest = max(self._groups, key=lambda k: self._groups[k].batch.size or 0)
            await self._send(largest)

    # -- sending ----------------------------------------------------------------------------

    async def _send(self, pk: str) -> None:
        group = self._groups.pop(pk)
        self._buffered -= group.batch.size or 0
        number = self._transactions
        self._transactions += 1
        batch, owners = group.batch, group.owners
        while True:
            ops = batch.operations
            try:
                writes = await self._submit(batch)
            except TransactionError as exc:
                drop = droppable_companion(exc, ops)
                if drop is not None and owners[drop] is None:
                    # An index row to delete was already gone: send the rest again.
                    batch, owners = self._without(batch, drop), owners[:drop] + owners[drop + 1 :]
                    continue
                self._failed(owners, ops, exc, number)
                return
            except AztError as exc:
                self._failed(owners, ops, exc, number)
                return
            break
        for i, op, wr in zip(owners, ops, writes, strict=True):
            if i is not None:
                self._outcomes[i] = BatchWriteOutcome(i, op, result=wr, batch=number)

    def _failed(
        self, owners: list[int | None], ops: list[BatchOperation], exc: AztError, number: int
    ) -> None:
        for i, op in zip(owners, ops, strict=True):
            if i is not None:
                self._outcomes[i] = BatchWriteOutcome(i, op, error=exc, batch=number)

    def _without(self, batch: TableBatch, drop: int) -> TableBatch:
        """``batch`` again without its operation ``drop`` (each operation re-encoded)."""
        fresh = self._new_batch()
        for k, op in enumerate(batch.operations):
            if k != drop:
                add_prepared(fresh, encode_operation(fresh, op))
        return fresh

    async def flush(self) -> None:
        """Send every buffered operation now (one transaction per partition group).

        Example::

            await writer.flush()
            assert not writer.unsent
        """
        for pk in list(self._groups):
            await self._send(pk)

    # -- outcomes ---------------------------------------------------------------------------

    @property
    def results(self) -> list[BatchWriteOutcome]:
        """The outcome of every operation sent so far, in call order.

        Example::

            applied = sum(o.ok for o in writer.results)
        """
        return [self._outcomes[i] for i in sorted(self._outcomes)]

    @property
    def unsent(self) -> list[BatchWriteOutcome]:
        """The buffered operations not sent yet (``result`` and ``error`` are ``None``).

        Example::

            for o in writer.unsent:
                print("not written:", o.partition_key, o.row_key)
        """
        return sorted(
            (
                BatchWriteOutcome(i, self._operations[i])
                for g in self._groups.values()
                for i in g.indexes
            ),
            key=lambda o: o.index,
        )

    @property
    def transactions(self) -> int:
        """How many transactions the writer has sent.

        Example::

            print(writer.transactions, "transactions")
        """
        return self._transactions

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._closed:
            return
        if exc is not None:
            self._closed = True
            left = sum(len(g.indexes) for g in self._groups.values())
            if left:
                exc.add_note(
                    f"azt BatchWriter: {left} buffered operations were not sent (the body of "
                    "'async with' raised); they are listed in writer.unsent"
                )
            return
        try:
            await self.flush()
        finally:
            self._closed = True
        results = self.results
        if any(not r.ok for r in results):
            raise BatchWriteError(results)
