"""The bulk loader: streams an input of entities or operations into entity group
transactions grouped by table and partition, and sends them in parallel under adaptive
flow control, resending what the service pushed back and resolving lost answers.

How it runs (:func:`load`):

* **Reading** (one task): each input item gets its position; positions done by an
  earlier run (the checkpoint) are skipped; the rest are checked and encoded once
  (:func:`azt._core.packing.prepare_group`; an entity object's JSON body by its class's
  generated code, in one pass with its checks) and queued on their partition (an indexed
  entity object with its index rows, in one transaction). An invalid item fails at once.
  The reader stops while ``window`` operations (or ``window_bytes``) are read but not
  finished, so memory stays bounded whatever the input's size.
* **Dispatching** (the calling task): a partition is sent when it holds a full
  transaction (100 operations or 4 MiB), waited ``linger``, the window is full (oldest
  first) or the input ended; one transaction per partition in flight (input order kept),
  at most ``concurrency`` in all, paced by an account token bucket and one per partition.
* **Adapting** (:mod:`azt._core.bulk.pacing`): throttling answers (``503 ServerBusy``,
  ``429``, ``OperationTimedOut``) cut the pace (the account's, and the number in flight,
  or the partition's) to what was admitted; rising latency cuts the number in flight; a
  pace grows back while it limits. A throttled transaction waits for room in its cut pace
  (a service hint, as Cosmos's ``429`` sends, its floor); one refused when nothing was
  admitted in the last second (the budget may be shared) backs off in time instead,
  exponentially, the pace uncut; other failures wait the retry policy's back-off (a hint
  its floor); other partitions go on.
* **Exactly once**: sending is single-attempt (the loader retries, not the pipeline); a
  lost answer is resolved by reading the entities back (:mod:`azt._core.bulk.settle`)
  before a resend; a failed operation is reported (index, error), the others resent.
  The checkpoint is saved before the first request (a load killed at once can be
  resumed), then with the acknowledged positions periodically and at the end.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncIterable, Callable, Iterable
from typing import Any

from azt._core.base import write_back
from azt._core.batch import (
    BatchOperation,
    Prepared,
    _checked_operation,
    add_prepared,
    delete_operation,
    operation_source,
)
from azt._core.bulk.checkpoint import CheckpointStore, DonePositions, OrderedSaves
from azt._core.bulk.outcomes import (
    WRITE_KINDS,
    BulkFailure,
    BulkOptions,
    BulkProgress,
    BulkResult,
    TableWrite,
    WriteKind,
    describe_item,
)
from azt._core.bulk.pacing import Pacing
from azt._core.bulk.queues import (
    Op,
    Partition,
    Send,
    TableRef,
    describe_op,
    ops_in,
    throttle_scope,
)
from azt._core.bulk.settle import predicted_failure, read_back, reflects, stored_keys
from azt._core.config import AmbiguousOutcomePolicy, RetryPolicy
from azt._core.packing import EntityWrite, check_group_alone, entity_write, prepare_group
from azt._core.results import UpdateMode, WriteResult
from azt._core.retry import BackoffWait, hinted_wait, is_retryable, may_have_been_applied
from azt._core.service_client import TableServiceClient
from azt._core.table_client import TableClient
from azt._core.tasks import wait_until
from azt._core.wire.writers import encode_valid
from azt._edm.entity import TableEntity
from azt._edm.validation import STORAGE_LIMITS
from azt._errors import (
    AmbiguousOutcomeError,
    AuthenticationError,
    AuthorizationError,
    AztError,
    EntityAlreadyExistsError,
    EntityNotFoundError,
    PreconditionFailedError,
    ServiceError,
    TableNotFoundError,
    TransactionError,
    TransportError,
    ValidationError,
)

__all__ = ["load"]

ProgressCallback = Callable[[BulkProgress], object]
#: the kinds of load that update stored entities (the upserts insert or update)
_UPDATES = ("merge", "replace")
ResultCallback = Callable[[int, WriteResult | BulkFailure], object]


class _Loader:
    def __init__(
        self,
        target: TableClient | TableServiceClient,
        *,
        table: str | None,
        kind: WriteKind,
        options: BulkOptions,
        checkpoint: CheckpointStore | None,
        progress: ProgressCallback | None,
        on_result: ResultCallback | None,
        clock: Callable[[], float],
    ) -> None:
        if not isinstance(target, TableClient | TableServiceClient):
            raise ValidationError(
                f"bulk loads need a TableClient or TableServiceClient, got {type(target).__name__}"
            )
        if kind not in WRITE_KINDS:
            raise ValidationError(f"kind must be one of {', '.join(WRITE_KINDS)}, got {kind!r}")
        if checkpoint is not None and not isinstance(checkpoint, CheckpointStore):
            raise ValidationError("checkpoint must have load() and save(state) (CheckpointStore)")
        core = target._core
        core.check_open()
        self._core = core
        # Transactions go out single-attempt: the loader retries them itself, on the
        # partition's own back-off, seeing every throttling answer.
        send_core = core.view()
        send_core.pipeline = copy.copy(core.pipeline)
        send_core.pipeline.retry = RetryPolicy.no_retries()
        self._send_core = send_core
        self._policy = core.pipeline.retry
        self._uniform = core.pipeline.uniform
        self._sleep = core.pipeline.sleep
        self._default_table = table or (
            target.table_name if isinstance(target, TableClient) else None
        )
        self._kind = kind
        self.options = options
        self._store = checkpoint
        self._saves = None if checkpoint is None else OrderedSaves(checkpoint)
        self._progress = progress
        self._on_result = on_result
        self._clock = clock
        self._tables: dict[str, TableRef] = {}
        self._parts: dict[tuple[str, str], Partition] = {}
        #: partitions with queued operations or a transaction to resend, oldest first
        self._waiting: dict[tuple[str, str], Partition] = {}
        self._wake = asyncio.Event()
        self._space = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending = 0
        self._pending_bytes = 0
        self._inflight = 0
        self._eof = False
        self._pressure = False
        self._input_error: BaseException | None = None
        self.result = BulkResult()
        self._done = DonePositions()
        self._resumed = False
        self._acknowledged = 0  # positions added to _done; and that count as of the last
        self._saved_at = 0  # state whose save returned (see _save)
        self._start = clock()
        self._pacing = Pacing(options, clock, backoff_cap=self._policy.maximum)

    # -- input ------------------------------------------------------------------------------

    def _table(self, name: str) -> TableRef:
        key = name.lower()
        found = self._tables.get(key)
        if found is None:
            sender = TableClient._from_core(self._send_core, name)
            reader = TableClient._from_core(self._core, name)
            found = self._tables[key] = TableRef(sender, reader)
        return found

    def _operation(self, item: Any) -> tuple[TableRef, list[Prepared]]:
        """The item's table and its operation with the companion operations (the index
        rows of an entity object whose class declares indexes, refused when they cannot
        be kept exact: :func:`azt._core.batch.operation_companions`), encoded. Entities
        are checked against Azure Table storage's limits (whatever the table's flavour),
        in one pass with their JSON body (:func:`azt._core.packing.entity_write`) unless
        the table is known to take other bodies."""
        table = self._default_table
        if isinstance(item, TableWrite):
            table, item = item.table, item.item
        if table is None:
            raise ValidationError(
                "no table: give table= to load(), a TableClient, or TableWrite(table, item)"
            )
        # (a table not given as a str fails at its lookup, after the item's own checks)
        known = self._tables.get(table.lower()) if isinstance(table, str) else None
        route = known is None or known.probe._plain
        if isinstance(item, BatchOperation):
            op, body = _checked_operation(item, STORAGE_LIMITS, encode_valid if route else None)
            where = self._table(table)
            write: EntityWrite = (op, body, operation_source(item), True)
        else:
            kind = self._kind
            if kind == "delete":
                op = delete_operation(item)
                source = item if getattr(type(item), "__azt_entity__", None) else None
                write = (op, None, source, True)
            else:
                write = entity_write(
                    "create" if kind == "insert" else "update" if kind in _UPDATES else "upsert",
                    item,
                    UpdateMode.REPLACE if kind.endswith("replace") else UpdateMode.MERGE,
                    route=route,
                )
            where = self._table(table)
        return where, prepare_group(where.probe, write)

    async def _read(self, items: Iterable[Any] | AsyncIterable[Any]) -> None:
        try:
            if isinstance(items, AsyncIterable):
                index = 0
                async for item in items:
                    await self._take(index, item)
                    index += 1
            else:
                for index, item in enumerate(items):
                    await self._take(index, item)
                    if index % 64 == 63:
                        await asyncio.sleep(0)  # let the dispatcher run
        except BaseException as exc:
            self._input_error = exc
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._eof = True
            self._wake.set()

    async def _take(self, index: int, item: Any) -> None:
        result = self.result
        result.read += 1
        if index in self._done:
            result.skipped += 1
            return
        try:
            table, group = self._operation(item)
            if len(group) > 1:
                check_group_alone(table.sender.batch, group, None)
        except ValidationError as exc:
            self._fail(index, describe_item(item, self._default_table), exc)
            return
        op = group[0].operation
        entry = Op(index, group[0], group[1:])
        opts = self.options
        while self._pending and (
            self._pending >= opts.window or self._pending_bytes + entry.size > opts.window_bytes
        ):
            self._pressure = True
            self._space.clear()
            self._wake.set()
            await self._space.wait()
        self._pressure = False
        self._pending += 1
        self._pending_bytes += entry.size
        key = (table.name.lower(), op.partition_key)
        part = self._parts.get(key)
        now = self._clock()
        if part is None:
            part = self._parts[key] = Partition(key, table, self._pacing.partition(now), now)
        if key not in self._waiting:
            part.first_at = now
            self._waiting[key] = part
            self._wake.set()  # its linger starts now: the dispatcher may be idle
        was_full = part.full()
        part.queue.append(entry)
        part.qbytes += entry.size
        part.qops += entry.count
        if part.full() and not was_full:
            self._wake.set()

    # -- dispatching ------------------------------------------------------------------------

    def _pick(self, now: float) -> tuple[Partition | None, float | None]:
        """The next partition to send, or ``None`` and how long to wait at most: the first
        ready one in waiting order, where a partition goes to the end each time it is
        sent (:meth:`_rotate`), so partitions with a full transaction or one to resend
        take turns."""
        wait: float | None = None
        flush = self._eof or self._pressure
        linger = self.options.linger
        for part in self._waiting.values():
            if part.busy:
                continue
            if part.not_before > now:
                until = part.not_before - now
                wait = until if wait is None else min(wait, until)
                continue
            if part.retry is not None or part.full() or flush:
                return part, None
            until = part.first_at + linger - now
            if until <= 0:
                return part, None
            wait = until if wait is None else min(wait, until)
        return None, wait

    async def _idle(self, at_most: float | None) -> None:
        self._wake.clear()
        if at_most is None:
            await self._wake.wait()
            return
        await wait_until(self._wake, max(at_most, 0.001))

    async def _dispatch(self) -> None:
        while not (self._eof and not self._pending):
            if self._inflight >= self._pacing.room():
                await self._idle(None)
                continue
            now = self._clock()
            part, wait = self._pick(now)
            if part is None:
                await self._idle(wait)
                continue
            n = part.next_size()
            delay = part.pace.delay(n, now)
            if delay > 0:
                part.not_before = now + delay
                continue
            delay = self._pacing.account.delay(n, now)
            if delay > 0:
                await self._sleep(delay)
                continue
            send = part.retry or self._group(part)
            part.retry = None
            n = ops_in(send.ops)
            send.partition_bound = part.pace.take(n, now)
            send.account_bound = self._pacing.account.take(n, now)
            self._rotate(part)
            part.busy = True
            self._inflight += 1
            task = asyncio.create_task(self._run(part, send))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _rotate(self, part: Partition) -> None:
        """Move a partition just sent to the end of the waiting order: ready partitions
        take turns (round robin), so the first ones in the input are not sent again and
        again into their own limit while the others wait."""
        if self._waiting.pop(part.key, None) is not None:
            self._waiting[part.key] = part

    def _group(self, part: Partition) -> Send:
        """The partition's next transaction: its oldest operations, as many as fit."""
        send = part.next_transaction()
        if not part.queue:
            self._waiting.pop(part.key, None)
        return send

    # -- sending ----------------------------------------------------------------------------

    async def _run(self, part: Partition, send: Send) -> None:
        try:
            await self._attempt(part, send)
        except Exception as exc:  # never lose operations to an unexpected error
            self._fail_all(part, send, exc)
        finally:
            part.busy = False
            self._inflight -= 1
            if send.ops:
                part.retry = send
                self._waiting[part.key] = part
            elif not part.queue:
                self._waiting.pop(part.key, None)
                if self._parts.get(part.key) is part and part.not_before <= self._clock():
                    del self._parts[part.key]  # idle: its pace is relearned if it returns
            self._wake.set()

    async def _attempt(self, part: Partition, send: Send) -> None:
        policy = self.options.ambiguous_outcome
        if send.uncertain and policy is AmbiguousOutcomePolicy.ASSUME_SUCCEEDED:
            if await self._settle(part, send, None) is None:
                return
            send.uncertain = False
            if not send.ops:
                return
        batch = part.table.sender.batch()
        for entry in send.ops:
            for prepared in entry.parts():
                add_prepared(batch, prepared)
        send.attempts += 1
        result = self.result
        result.requests += 1
        if send.attempts > 1:
            result.retries += 1
        started = self._clock()
        try:
            writes = await part.table.sender.submit_transaction(batch)
        except TransactionError as exc:
            await self._op_failed(part, send, exc)
            return
        except (ServiceError, TransportError) as exc:
            self._pushed_back(part, send, exc)
            return
        now = self._clock()
        self._pacing.succeeded(
            part.pace,
            ops_in(send.ops),
            now,
            took=now - started,
            account_bound=send.account_bound,
            partition_bound=send.partition_bound,
        )
        position = 0
        for entry in send.ops:  # each entry's own write (its index rows' follow it)
            self._succeed(entry, writes[position])
            position += entry.count
        send.ops = []

    def _pushed_back(self, part: Partition, send: Send, exc: ServiceError | TransportError) -> None:
        now = self._clock()
        scope = throttle_scope(exc)
        if scope is not None:
            self.result.throttled += 1
            # The pace is the back-off: the transaction goes again when the cut pace has
            # room for it, not after the retry policy's waits for a lone request (3 s,
            # 33 s, ...).
            n = ops_in(send.ops)
            wait = self._pacing.refused(part.pace, scope, n, now, self._uniform)
            asked = exc.retry_after if isinstance(exc, ServiceError) else None
            if asked is not None:  # the service's hint (Cosmos's 429) is a floor, jittered
                maximum = self._policy.maximum
                wait = max(wait, hinted_wait(asked, send.attempts, maximum, self._uniform))
        else:
            # the client's rule: the policy's back-off, a service hint a floor under it
            wait = BackoffWait(self._policy, self._uniform).delay(send.attempts, exc)
        if may_have_been_applied(exc):
            send.uncertain = True
            for entry in send.ops:
                entry.ambiguous = True
            if self.options.ambiguous_outcome is AmbiguousOutcomePolicy.RAISE:
                what = f"bulk transaction ({part.table.name!r}, PartitionKey={part.key[1]!r})"
                error: AztError = exc
                if isinstance(exc, ServiceError):
                    error = AmbiguousOutcomeError(what, exc, attempts=send.attempts)
                self._fail_all(part, send, error)
                return
        if not is_retryable(exc) or send.attempts >= self.options.max_attempts:
            self._fail_all(part, send, exc)
            return
        part.not_before = now + wait

    async def _op_failed(self, part: Partition, send: Send, exc: TransactionError) -> None:
        """One operation failed the transaction (nothing of it was applied): report it and
        resend the others; a conflict that may be our own earlier write is read back.
        After a conflict, the others that would meet one too are reported at once
        (:meth:`_fail_predicted`), not found one transaction at a time."""
        inner = exc.error
        if exc.earlier_attempt_may_have_applied:
            for entry in send.ops:
                entry.ambiguous = True
        flat = [(entry, k) for entry in send.ops for k in range(entry.count)]
        if exc.index is None or not 0 <= exc.index < len(flat):
            self._fail_all(part, send, exc)
            return
        owner, k = flat[exc.index]
        if k > 0:  # one of an entity's index rows
            if (
                isinstance(inner, EntityNotFoundError)
                and owner.extra[k - 1].operation.kind == "delete"
                and not exc.earlier_attempt_may_have_applied
            ):
                # an index row to delete was already gone: send again without it
                owner.extra.pop(k - 1)
                owner.count -= 1
                return
            send.ops.remove(owner)
            self._fail_entry(owner, part, inner or exc)
            return
        index = send.ops.index(owner)
        if isinstance(inner, TableNotFoundError | AuthenticationError | AuthorizationError) or (
            inner is not None and inner.status >= 500
        ):
            self._fail_all(part, send, exc)
            return
        conflict = isinstance(
            inner, EntityAlreadyExistsError | EntityNotFoundError | PreconditionFailedError
        )
        stored: dict[str, TableEntity | None] | None = None
        if (
            conflict
            and (send.uncertain or self._resumed or exc.earlier_attempt_may_have_applied)
            and self.options.ambiguous_outcome is AmbiguousOutcomePolicy.ASSUME_SUCCEEDED
        ):
            culprit = send.ops[index]
            stored = await self._settle(part, send, culprit)
            if stored is None:
                return
            if culprit not in send.ops:  # it was ours: the rest go again
                return
            index = send.ops.index(culprit)
        self._fail_entry(send.ops.pop(index), part, inner or exc)
        if conflict and send.ops:
            await self._fail_predicted(part, send, stored)

    async def _fail_predicted(
        self, part: Partition, send: Send, stored: dict[str, TableEntity | None] | None
    ) -> None:
        """Report the operations of ``send`` that would fail against what is stored (read
        back already, or now with one keys-only query of the transaction's RowKey range);
        keep the others to resend. When the read fails or would be too long, all are
        kept (the service names them one by one)."""
        found: dict[str, str | None]
        if stored is None:
            rks = [entry.prepared.operation.row_key for entry in send.ops]
            try:
                keys = await stored_keys(part.table.reader, part.key[1], rks)
            except (ServiceError, TransportError):
                return
            if keys is None:
                return
            self.result.reads += 1
            found = keys
        else:
            found = {rk: e.metadata.etag for rk, e in stored.items() if e is not None}
        keep: list[Op] = []
        for entry in send.ops:
            op = entry.prepared.operation
            rk = op.row_key
            error = predicted_failure(op, rk in found, found.get(rk))
            if error is None:
                keep.append(entry)
            else:
                self._fail_entry(entry, part, error)
        send.ops = keep

    async def _settle(
        self, part: Partition, send: Send, culprit: Op | None
    ) -> dict[str, TableEntity | None] | None:
        """Read back the transaction's entities; complete the operations whose effect is
        already stored, keep the others in ``send``; what was read, by RowKey. ``None``
        when reading failed (the transaction is tried again later)."""
        ops = [entry.prepared.operation for entry in send.ops]
        try:
            stored = await read_back(part.table.reader, ops)
        except (ServiceError, TransportError) as exc:
            send.attempts += 1
            if send.attempts >= self.options.max_attempts or not is_retryable(exc):
                self._fail_all(part, send, exc)
            else:
                part.not_before = self._clock() + self._policy.backoff(
                    max(send.attempts, 1), self._uniform
                )
            return None
        keep: list[Op] = []
        found: dict[str, TableEntity | None] = {}
        for entry, entity in zip(send.ops, stored, strict=True):
            op = entry.prepared.operation
            found[op.row_key] = entity
            if reflects(op, entity):
                etag = entity.metadata.etag if entity is not None else None
                write_back(op.source, etag)
                self.result.resolved += 1
                self._succeed(entry, WriteResult(etag, None, 200, ambiguity_resolved=True))
            else:
                keep.append(entry)
        send.ops = keep
        return found

    # -- outcomes ---------------------------------------------------------------------------

    def _finish(self, entry: Op) -> None:
        self._pending -= 1
        self._pending_bytes -= entry.size
        self._space.set()

    def _succeed(self, entry: Op, write: WriteResult) -> None:
        self.result.written += 1
        self._done.add(entry.index)
        self._acknowledged += 1
        self._finish(entry)
        if self._on_result is not None:
            self._on_result(entry.index, write)

    def _fail_all(self, part: Partition, send: Send, exc: BaseException) -> None:
        for entry in send.ops:
            self._fail_entry(entry, part, exc)
        send.ops = []

    def _fail_entry(self, entry: Op, part: Partition, exc: BaseException) -> None:
        self._fail(entry.index, describe_op(entry, part), exc, ambiguous=entry.ambiguous)
        self._finish(entry)

    def _fail(
        self,
        index: int,
        what: tuple[str, str | None, str | None, str],
        exc: BaseException,
        *,
        ambiguous: bool = False,
    ) -> None:
        table, pk, rk, kind = what
        failure = BulkFailure(
            index=index,
            table=table,
            partition_key=pk,
            row_key=rk,
            kind=kind,
            status=getattr(exc, "status", None),
            code=getattr(exc, "code", None),
            message=str(getattr(exc, "message", None) or exc),
            error=exc,
            ambiguous=ambiguous,
        )
        self.result.failures.append(failure)
        if self._on_result is not None:
            self._on_result(index, failure)

    # -- checkpoint and progress ------------------------------------------------------------

    async def _save(self) -> None:
        # One at a time, in order (OrderedSaves); a state counts as saved only once its save
        # returned: a saver cancelled while it waited (the load ended) saved nothing.
        saves = self._saves
        if saves is None:
            return
        acknowledged = self._acknowledged
        if acknowledged == self._saved_at and not await saves.failed():
            return
        await saves.save(self._done.state())
        self._saved_at = acknowledged

    async def _saver(self) -> None:
        while True:
            await asyncio.sleep(self.options.checkpoint_interval)
            await self._save()

    def snapshot(self, *, done: bool = False) -> BulkProgress:
        """The load's progress now."""
        r = self.result
        now = self._clock()
        return BulkProgress(
            read=r.read,
            written=r.written,
            failed=len(r.failures),
            skipped=r.skipped,
            pending=self._pending,
            requests=r.requests,
            retries=r.retries,
            throttled=r.throttled,
            resolved=r.resolved,
            rate=self._pacing.account.meter.rate(now, since=self._start),
            concurrency=self._pacing.room(),
            account_rate=self._pacing.account.value,
            elapsed=now - self._start,
            done=done,
        )

    async def _reporter(self, callback: ProgressCallback) -> None:
        while True:
            await asyncio.sleep(self.options.progress_interval)
            callback(self.snapshot())

    async def run(self, items: Iterable[Any] | AsyncIterable[Any]) -> BulkResult:
        if self._store is not None:
            state = await asyncio.to_thread(self._store.load)
            self._done = DonePositions.from_state(state)
            # A checkpoint that exists (even with nothing done yet) may belong to a load
            # killed after sending: its conflicts may be its own writes (read back).
            self._resumed = state is not None
            if state is None and self._saves is not None:
                # The checkpoint exists from the start, before anything is sent: a load
                # killed before its first periodic save can be resumed.
                await self._saves.save(self._done.state())
        helpers: list[asyncio.Task[None]] = []
        if self._store is not None:
            helpers.append(asyncio.create_task(self._saver()))
        if self._progress is not None:
            helpers.append(asyncio.create_task(self._reporter(self._progress)))
        reader = asyncio.create_task(self._read(items))
        try:
            await self._dispatch()
            await reader
        finally:
            for task in (reader, *helpers, *self._tasks):
                task.cancel()
            await asyncio.gather(reader, *helpers, *self._tasks, return_exceptions=True)
            await asyncio.shield(self._save())
        self.result.failures.sort(key=lambda f: f.index)
        self.result.elapsed = self._clock() - self._start
        if self._progress is not None:
            self._progress(self.snapshot(done=True))
        if self._input_error is not None:
            raise self._input_error
        return self.result


async def load(
    target: TableClient | TableServiceClient,
    items: Iterable[Any] | AsyncIterable[Any],
    *,
    table: str | None = None,
    kind: WriteKind = "insert",
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
    progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
    _clock: Callable[[], float] = time.monotonic,
) -> BulkResult:
    """Write ``items`` (a plain or async iterable) as entity group transactions, in
    parallel under adaptive flow control, and return the :class:`BulkResult`.

    ``target``: a :class:`TableClient` (its table is the default) or a
    :class:`TableServiceClient`; ``table``: the table of items not routed with
    :class:`TableWrite`. An item is an entity (a mapping or an entity object), written as
    ``kind`` (``"insert"``, ``"upsert-merge"``, ``"upsert-replace"``, ``"merge"``,
    ``"replace"`` or ``"delete"``), or a :class:`BatchOperation`. ``options``: limits,
    window and policies (:class:`BulkOptions`). ``checkpoint``: where acknowledged input
    positions are kept (:class:`FileCheckpoint`); a load given the checkpoint of an
    interrupted one (and the same input) skips what was done. ``progress`` is called
    with a :class:`BulkProgress` every ``options.progress_interval`` seconds and once at
    the end; ``on_result`` with ``(index, WriteResult or BulkFailure)`` per operation.
    Operations that fail are reported in ``result.failures``, never raised; an exception
    raised by the input itself is raised after what was read before it is written.

    Example::

        result = await load(table, ({"PartitionKey": f"p{i % 50}", "RowKey": str(i)}
                                    for i in range(100_000)), kind="upsert-replace")
        print(result.written, result.throttled_share)
    """
    loader = _Loader(
        target,
        table=table,
        kind=kind,
        options=options or BulkOptions(),
        checkpoint=checkpoint,
        progress=progress,
        on_result=on_result,
        clock=_clock,
    )
    return await loader.run(items)
