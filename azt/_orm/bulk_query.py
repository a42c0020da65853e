"""Bulk update and delete by query on the bulk engine: every entity a :class:`Query`
selects is changed (``update_where``: properties set, written back as a MERGE or a
REPLACE) or deleted (``delete_where``), at the bulk loader's pace, each write conditional
on the ETag the query just read, so an entity changed meanwhile is never overwritten
with a stale value.

How it runs:

* the query is read page by page; each entity, with the changes applied, becomes one
  input item of :func:`azt.bulk.load` (entity objects keep their index rows exact, as in
  any load);
* an item refused with ``412`` (the entity changed after it was read) is read again by
  its keys *and the query's filter*: when it still matches, the changes are applied to
  the new version and it goes again (with its new ETag); when it no longer matches (or is
  gone), it is left alone and reported (``412``, "changed meanwhile and no longer
  selected");
* an item whose answer was lost (the service may have applied it) and that is then
  refused on the resend (``412``/``404``/``409``: perhaps the consequence of our own
  write, or of a change made after it) is read by its keys alone: when the entity already
  carries every change (each property set, with its value and type; for a replace a
  property set to ``None`` is absent; a delete: the entity is gone), it is done (counted
  written); else it goes on as any ``412`` (read again with the filter) or is reported;
* a checkpoint keeps the query's continuation after the last page whose entities are all
  finished (saved before the first request, then every ``checkpoint_interval`` and at
  the end); resuming reads the query from there: the entities of later pages are read
  again as they are now (those already changed are changed again to the same values, or
  were deleted and are not read), so nothing is missed or applied with a stale value.

Example::

    result = await update_where(
        Query(Movie, table).where(Movie.year < 1950), {"classic": True}
    )
    gone = await delete_where(Query(Movie, table).where(Movie.rating < 1.0))
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Coroutine, Mapping, MutableMapping
from typing import Any, Literal

from azt._core.batch import BatchOperation
from azt._core.bulk.checkpoint import CheckpointStore, DonePositions, OrderedSaves
from azt._core.bulk.loader import ProgressCallback, load
from azt._core.bulk.outcomes import BulkFailure, BulkOptions, BulkResult
from azt._core.results import UpdateMode, WriteResult
from azt._core.table_client import TableClient
from azt._core.tasks import cancel_and_wait
from azt._edm.entity import TableEntity
from azt._errors import (
    PreconditionFailedError,
    ServiceError,
    TransportError,
    ValidationError,
    error_from_response,
)
from azt._orm.entity import Entity
from azt._orm.query import Query

__all__ = ["delete_where", "update_where"]

#: rounds of "read again and re-apply" for an entity that keeps changing under us
_MAX_ROUNDS = 5

_GONE = (
    "The entity changed after it was read and no longer matches the query (or was "
    "deleted): not written."
)


def _apply(obj: Any, changes: Mapping[str, Any]) -> Any:
    """``obj`` with ``changes`` set: items of a mapping (``DynamicEntity``), attributes of
    an entity object."""
    for name, value in changes.items():
        if isinstance(obj, MutableMapping):
            obj[name] = value
        else:
            setattr(obj, name, value)
    return obj


def _value(obj: Any, name: str) -> Any:
    """A property of an entity object or a mapping (``None`` when absent)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _carries(found: Any, changes: Mapping[str, Any], action: str) -> bool:
    """Whether the stored entity ``found`` (``None``: absent) already carries the effect
    of the by-query write: gone for a delete; else each change's property with the value
    (and type) the write set, read through a copy of ``found`` with the changes applied
    (so an entity class's conversions apply alike). A change to ``None`` in a merge sets
    nothing (a merge cannot remove a property); in a replace it means absent."""
    if action == "delete":
        return found is None
    if found is None:
        return False
    wanted = _apply(copy.copy(found), changes)
    for name, value in changes.items():
        if value is None and action == "merge":
            continue
        want, got = _value(wanted, name), _value(found, name)
        if type(got) is not type(want) or got != want:
            return False
    return True


def _keys(obj: Any) -> tuple[str, str]:
    """The keys of an entity object (``DynamicEntity`` included) or a ``TableEntity``."""
    if hasattr(obj, "PartitionKey"):
        return obj.PartitionKey, obj.RowKey
    return obj["PartitionKey"], obj["RowKey"]


class _ByQuery:
    def __init__(
        self,
        source: Query[Any] | TableClient,
        filter: str | None,
        parameters: Mapping[str, Any] | None,
        action: Literal["merge", "replace", "delete"],
        changes: Mapping[str, Any],
        checkpoint: CheckpointStore | None,
        options: BulkOptions,
    ) -> None:
        if isinstance(source, Query):
            if filter is not None or parameters is not None:
                raise ValidationError("give the filter in the Query, not as filter=")
            table = source._need_client()
            if not isinstance(table, TableClient):
                raise ValidationError("a bulk update or delete needs an azt.TableClient")
            self.query: Query[Any] | None = source
        elif isinstance(source, TableClient):
            table, self.query = source, None
        else:
            raise ValidationError(
                f"a bulk update or delete needs a Query or a TableClient, got {source!r}"
            )
        self.table = table
        self.filter = filter
        self.parameters = dict(parameters or {})
        self.action = action
        self.changes = dict(changes)
        self.store = checkpoint
        self.saves = None if checkpoint is None else OrderedSaves(checkpoint)
        self.options = options
        self.origin: list[int] = []  # input position -> the first position of its entity
        self.keys: list[tuple[str, str]] = []  # input position -> keys
        self.outcome: dict[int, bool] = {}  # first positions finished (True: by a write)
        self.done = DonePositions()  # first positions finished, for the checkpoint
        self.pages: list[tuple[int, str | None]] = []  # (positions read so far, token)
        self.saved: str | None = None
        self.again: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()
        self.retried: set[int] = set()  # positions answered 412 and read again
        self.checked: set[int] = set()  # positions refused after a lost answer, checked
        self.absorbed: set[int] = set()  # of them, those found done (our write applied)
        self.reread_failures: list[BulkFailure] = []
        self.rounds: dict[int, int] = {}
        self.waiting = 0
        self.wake = asyncio.Event()
        # the checks and reads again in flight, held (the loop keeps only weak references
        # to tasks) and cancelled if the run ends without them; the first one that failed
        # otherwise than as expected ends the run with its error instead of leaving it
        # waiting for an outcome that never comes
        self.followups: set[asyncio.Task[None]] = set()
        self.crashed: BaseException | None = None

    def _follow_up(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.followups.add(task)
        task.add_done_callback(self._followed_up)

    def _followed_up(self, task: asyncio.Task[None]) -> None:
        self.followups.discard(task)
        if not task.cancelled() and task.exception() is not None and self.crashed is None:
            self.crashed = task.exception()
            self.wake.set()

    def _item(self, first: int, obj: Any) -> Any:
        self.origin.append(first)
        self.keys.append(_keys(obj))
        if getattr(type(obj), "__azt_entity__", None) is None:
            return self._operation(obj)  # a TableEntity: its ETag is in its metadata
        return obj if self.action == "delete" else _apply(obj, self.changes)

    def _operation(self, row: Any) -> BatchOperation:
        """The write of a ``TableEntity`` read by a raw query, If-Match its ETag."""
        etag = row.metadata.etag
        if not etag:
            raise ValidationError("the query returned an entity without an ETag")
        pk, rk = _keys(row)
        if self.action == "delete":
            return BatchOperation("delete", {"PartitionKey": pk, "RowKey": rk}, etag=etag)
        data = TableEntity(row)
        types = getattr(row, "edm_types", None)
        if types:
            data.edm_types = dict(types)
        data.pop("Timestamp", None)
        data.update(self.changes)
        mode = UpdateMode.MERGE if self.action == "merge" else UpdateMode.REPLACE
        return BatchOperation("update", data, mode=mode, etag=etag)

    async def _pages(self, continuation: str | None) -> AsyncIterator[tuple[list[Any], str | None]]:
        if self.query is not None:
            async for page in self.query.pages(continuation):
                yield page.items, page.continuation
            return
        pager = self.table.query_entities(self.filter, parameters=self.parameters or None)
        async for raw in pager.by_page(continuation):
            token = raw.continuation
            yield list(raw.items), (str(token) if token is not None else None)

    async def _find(self, pk: str, rk: str, *, filtered: bool = True) -> list[Any]:
        """The entity with these keys if it still matches the query's filter (any entity
        with these keys when not ``filtered``)."""
        if self.query is not None:
            query = self.query if filtered else self.query._copy(_cond=None, _select=None)
            return await query.where(Entity.PartitionKey == pk, Entity.RowKey == rk).to_list()
        keys = "PartitionKey eq @bulk_pk and RowKey eq @bulk_rk"
        text = keys if self.filter is None or not filtered else f"({self.filter}) and {keys}"
        params = {**self.parameters, "bulk_pk": pk, "bulk_rk": rk}
        return [e async for e in self.table.query_entities(text, parameters=params)]

    async def items(self, continuation: str | None) -> AsyncIterator[Any]:
        read = 0
        async for items, token in self._pages(continuation):
            for obj in items:
                yield self._item(len(self.origin), obj)
                read += 1
            self.pages.append((read, token))
        while True:  # entities to read again (412), until every outcome is known
            while self.again.empty() and len(self.outcome) + self.waiting < read:
                if self.crashed is not None:
                    raise self.crashed
                self.wake.clear()
                await self.wake.wait()
            if self.crashed is not None:
                raise self.crashed
            if self.again.empty() and not self.waiting:
                return
            first, obj = await self.again.get()
            self.waiting -= 1
            yield self._item(first, obj)

    def on_result(self, index: int, outcome: WriteResult | BulkFailure) -> None:
        first = self.origin[index]
        if (
            isinstance(outcome, BulkFailure)
            and outcome.ambiguous
            and outcome.status in (404, 409, 412)
            and index not in self.checked
        ):
            # the refusal may be the consequence of our own write, whose answer was lost
            self.waiting += 1
            self.checked.add(index)
            self._follow_up(self._check(first, index, outcome))
            return
        if isinstance(outcome, BulkFailure) and isinstance(outcome.error, PreconditionFailedError):
            rounds = self.rounds.get(first, 0)
            if rounds < _MAX_ROUNDS:
                self.rounds[first] = rounds + 1
                self.retried.add(index)
                self.waiting += 1
                self._follow_up(self._read_again(first, index))
                return
        self.outcome[first] = isinstance(outcome, WriteResult)
        self.done.add(first)
        self.wake.set()

    async def _check(self, first: int, index: int, failure: BulkFailure) -> None:
        """After a refusal that followed a lost answer: done when the entity, read by its
        keys alone, already carries every change; else the refusal is handled as any."""
        pk, rk = self.keys[index]
        found: list[Any] | None = None
        for attempt in range(_MAX_ROUNDS):
            try:
                found = await self._find(pk, rk, filtered=False)
                break
            except (ServiceError, TransportError):
                await asyncio.sleep(0.1 * (attempt + 1))
        self.waiting -= 1
        if found is not None and _carries(found[0] if found else None, self.changes, self.action):
            self.absorbed.add(index)
            self.outcome[first] = True
            self.done.add(first)
            self.wake.set()
            return
        self.on_result(index, failure)  # not ours (or unknown): handled as any refusal

    async def _read_again(self, first: int, index: int) -> None:
        pk, rk = self.keys[index]
        found: list[Any] = []
        error: BaseException | None = None
        for attempt in range(_MAX_ROUNDS):  # the client retried each; a few more rounds
            try:
                found = await self._find(pk, rk)
                error = None
                break
            except (ServiceError, TransportError) as exc:
                error = exc
                await asyncio.sleep(0.1 * (attempt + 1))
        if found:
            await self.again.put((first, found[0]))
        else:
            self.waiting -= 1
            if error is None:
                error = error_from_response(412, "UpdateConditionNotSatisfied", _GONE)
            self.reread_failures.append(
                BulkFailure(
                    index=first,
                    table=self.table.table_name,
                    partition_key=pk,
                    row_key=rk,
                    kind=self.action,
                    status=getattr(error, "status", None),
                    code=getattr(error, "code", None),
                    message=str(getattr(error, "message", None) or error),
                    error=error,
                )
            )
            self.outcome[first] = False
            self.done.add(first)
        self.wake.set()

    def token(self) -> str | None:
        """The continuation after the last page whose entities are all finished."""
        below = self.done.state()["done_below"]
        token = self.saved
        for read, cont in self.pages:
            if read > below:
                break
            token = cont
        return token

    async def save(self, *, finished: bool = False) -> None:
        if self.saves is None:
            return
        state: dict[str, Any] = {"version": 1, "query": self.action, "continuation": None}
        state["continuation"] = None if finished else self.token()
        state["finished"] = finished
        await self.saves.save(state)

    async def saver(self) -> None:
        while True:
            await asyncio.sleep(self.options.checkpoint_interval)
            await self.save()

    async def run(self, progress: ProgressCallback | None) -> BulkResult:
        continuation = None
        if self.store is not None:
            state = await asyncio.to_thread(self.store.load)
            if state is not None:
                if not isinstance(state, dict) or state.get("query") != self.action:
                    raise ValidationError("this checkpoint is not one of a bulk " + self.action)
                if state.get("finished"):
                    return BulkResult()
                continuation = state.get("continuation")
                self.saved = continuation
            await self.save()  # the checkpoint exists from the start
        table = self.table
        kind: Any = self.action
        saver = asyncio.create_task(self.saver())
        try:
            result = await load(
                table,
                self.items(continuation),
                kind=kind,
                options=self.options,
                progress=progress,
                on_result=self.on_result,
            )
        finally:
            await cancel_and_wait(saver, *self.followups)
        dropped = self.retried | self.absorbed  # read again, or found done after all
        complete = result.ok or not [f for f in result.failures if f.index not in dropped]
        await self.save(finished=complete and not self.reread_failures)
        failures = [
            BulkFailure(
                index=self.origin[f.index],
                table=f.table,
                partition_key=f.partition_key,
                row_key=f.row_key,
                kind=f.kind,
                status=f.status,
                code=f.code,
                message=f.message,
                error=f.error,
                ambiguous=f.ambiguous,
            )
            for f in result.failures
            if f.index not in dropped
        ]
        result.written += len(self.absorbed)
        result.resolved += len(self.absorbed)
        result.failures = sorted([*failures, *self.reread_failures], key=lambda f: f.index)
        result.read = len(self.outcome)
        return result


async def update_where(
    query: Query[Any] | TableClient,
    changes: Mapping[str, Any],
    *,
    filter: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    mode: Literal["merge", "replace"] = "merge",
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
    progress: ProgressCallback | None = None,
) -> BulkResult:
    """Set ``changes`` (property -> value; attribute names for an entity class) on every
    entity ``query`` selects, written back as a MERGE or (``mode="replace"``) a REPLACE of
    the entity as read with the changes, each conditional on the ETag just read; on the
    bulk engine (its pace, exactly-once resolution and results). An entity changed
    meanwhile is read again and changed again when it still matches, else reported.
    ``checkpoint``: where the query's progress is kept (a :class:`FileCheckpoint`), so an
    interrupted update, run again with it, goes on where it stood. ``query`` may also be
    a :class:`TableClient` with an OData ``filter`` (and ``@name`` ``parameters``): the
    entities are then ``TableEntity`` mappings.

    Example::

        result = await update_where(
            Query(Movie, table).where(Movie.year < 1950), {"classic": True}
        )
        assert result.ok
    """
    if mode not in ("merge", "replace"):
        raise ValidationError(f"mode must be 'merge' or 'replace', got {mode!r}")
    if not isinstance(changes, Mapping) or not changes:
        raise ValidationError("changes must be a non-empty mapping of property names to values")
    runner = _ByQuery(
        query, filter, parameters, mode, changes, checkpoint, options or BulkOptions()
    )
    return await runner.run(progress)


async def delete_where(
    query: Query[Any] | TableClient,
    *,
    filter: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
    progress: ProgressCallback | None = None,
) -> BulkResult:
    """Delete every entity ``query`` selects, on the bulk engine, each delete conditional
    on the ETag just read (an entity changed meanwhile is read again: deleted when it
    still matches, else reported). ``checkpoint``, ``filter`` and ``parameters`` as
    :func:`update_where`.

    Example::

        result = await delete_where(Query(Movie, table).where(Movie.rating < 1.0))
        print(result.written, "deleted")
    """
    runner = _ByQuery(query, filter, parameters, "delete", {}, checkpoint, options or BulkOptions())
    return await runner.run(progress)
