"""``TableContext``: the unit of work over a :class:`azt.TableServiceClient`: tracks
entities, finds what changed, and sends the changes on :meth:`TableContext.save_changes`
(one request per change, or entity group transactions).

Example::

    ctx = TableContext(service)
    ctx.add("movies", Movie("Action", "White Water Rapids Survival"))
    await ctx.save_changes()
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar, overload

from azt._core.batch import BatchOperation, TableBatch, companions, droppable_companion
from azt._core.packing import pack_groups
from azt._core.results import UpdateMode
from azt._core.service_client import TableServiceClient
from azt._core.table_client import TableClient
from azt._core.tracing import run_traced
from azt._edm.validation import validate_entity
from azt._errors import (
    AztError,
    ClientClosedError,
    EntityNotFoundError,
    TransactionError,
    ValidationError,
)
from azt._orm.columns import default_table
from azt._orm.indexes import note_index_keys, recorded_index_keys
from azt._orm.pages import decoder_for
from azt._orm.query import Query
from azt._uow.descriptor import EntityDescriptor, PendingChange
from azt._uow.query import ContextQuery
from azt._uow.tracker import Tracker
from azt._uow.types import (
    ChangeKind,
    ContextBusyError,
    EntityState,
    MergeOption,
    OperationResult,
    SaveChangesError,
    SaveChangesOptions,
    SaveChangesResult,
    check_merge_option,
    check_save_options,
)

__all__ = ["TableContext"]

R = TypeVar("R")
T = TypeVar("T")

_NO_ARG: Any = object()  # an argument not given (None is a value)


def _operation(change: PendingChange) -> BatchOperation:
    """The transaction operation that carries ``change``."""
    kind = change.kind
    if kind is ChangeKind.DELETE:
        return BatchOperation(
            "delete",
            {"PartitionKey": change.partition_key, "RowKey": change.row_key},
            etag=change.if_match or "*",
        )
    assert change.payload is not None
    if kind is ChangeKind.INSERT:
        return BatchOperation("create", change.payload)
    if kind is ChangeKind.UPDATE:
        assert change.if_match is not None
        return BatchOperation("update", change.payload, mode=_mode(change), etag=change.if_match)
    return BatchOperation("upsert", change.payload, mode=_mode(change))


def _companions(change: PendingChange) -> list[BatchOperation]:
    """The index-row operations that go with ``change`` in one transaction (none for a
    class without indexes); refused (``ValidationError``) as the ORM decides."""
    main = _operation(change)
    return companions(change.descriptor.obj, main.kind, main.mode, main.entity, main.etag)


async def _bounded(jobs: list[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """Run ``jobs`` in order, at most ``limit`` at a time; their results in order. An
    exception (anything a job does not turn into a result) cancels the jobs still running
    and propagates as itself, so nothing of a save goes on after it has raised."""
    if limit == 1:
        return [await job() for job in jobs]
    sem = asyncio.Semaphore(limit)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with sem:
            return await job()

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(job)) for job in jobs]
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return [t.result() for t in tasks]


def _owner(sizes: list[int], index: int) -> tuple[int, int]:
    """(which group, position in it) of operation ``index`` of a transaction whose groups
    hold ``sizes`` operations each (a change first, then its index rows)."""
    for group, n in enumerate(sizes):
        if index < n:
            return group, index
        index -= n
    raise IndexError(index)


def _mode(change: PendingChange) -> UpdateMode:
    return UpdateMode.REPLACE if change.mode == "replace" else UpdateMode.MERGE


def _result(
    change: PendingChange,
    *,
    status: int | None,
    etag: str | None,
    error: BaseException | None,
    sent: bool,
    batch: int | None = None,
    request_id: str | None = None,
) -> OperationResult:
    return OperationResult(
        entity=change.descriptor.obj,
        table=change.table,
        partition_key=change.partition_key,
        row_key=change.row_key,
        kind=change.kind,
        mode=change.mode,
        status=status,
        etag=etag,
        error=error,
        sent=sent,
        batch=batch,
        request_id=request_id,
    )


# ============================================================================ the context


class TableContext:
    """The unit of work: tracks entities, detects changes, saves them.

    ``service`` is the :class:`azt.TableServiceClient` requests go through (its retry
    policy applies to each request). ``merge_option`` decides how query results meet
    tracked entities (default ``PRESERVE_CHANGES``); ``ignore_resource_not_found`` makes
    point queries of missing entities return nothing instead of raising.

    Bookkeeping (``add``, ``attach``, ``update``, ``delete``, ``detach``) is synchronous;
    only what does I/O is ``async``. The context is not safe for concurrent use: it
    refuses overlapping saves clearly (:class:`ContextBusyError`).

    Example::

        ctx = TableContext(service)
        movie = Movie("Action", "Cop Out")
        ctx.attach("movies", movie, "*")     # unconditional
        ctx.delete(movie)
        await ctx.save_changes()
    """

    def __init__(
        self,
        service: TableServiceClient,
        *,
        merge_option: MergeOption = MergeOption.PRESERVE_CHANGES,
        ignore_resource_not_found: bool = False,
    ) -> None:
        self._service = service
        self._tracker = Tracker()
        self._merge_option = check_merge_option(merge_option)
        self.ignore_resource_not_found = bool(ignore_resource_not_found)
        self._saving = False
        self._fetching = 0
        self._tables: dict[tuple[int, str], tuple[TableServiceClient, TableClient]] = {}

    def __repr__(self) -> str:
        return f"<TableContext {len(self._tracker)} tracked, merge_option={self._merge_option}>"

    @property
    def service(self) -> TableServiceClient:
        """The service client the context sends through.

        Example::

            table = ctx.service.get_table_client("movies")
        """
        return self._service

    @property
    def merge_option(self) -> MergeOption:
        """How query results are merged with tracked entities (settable).

        Example::

            ctx.merge_option = MergeOption.OVERWRITE_CHANGES
        """
        return self._merge_option

    @merge_option.setter
    def merge_option(self, value: MergeOption) -> None:
        self._merge_option = check_merge_option(value)

    # -- guards -----------------------------------------------------------------------------

    def _idle(self, what: str) -> None:
        if self._saving:
            raise ContextBusyError(
                f"cannot {what} while save_changes() is running on this context; a context "
                "serves one logical operation at a time (await the save first, or use "
                "another context)"
            )

    def _table(self, service: TableServiceClient, name: str) -> TableClient:
        key = (id(service), name)
        entry = self._tables.get(key)
        if entry is None or entry[0] is not service:  # (an id can be reused once freed)
            entry = self._tables[key] = (service, service.get_table_client(name))
        return entry[1]

    # -- bookkeeping ------------------------------------------------------------------------

    def _table_name(self, table: object) -> str:
        """A table argument as a name: a name, or a :class:`TableClient` of the account the
        context sends to (its name is what the context tracks and sends to)."""
        if isinstance(table, TableClient):
            if table.endpoint != self._service.endpoint:
                raise ValidationError(
                    f"the table client's endpoint {table.endpoint!r} is not the context's "
                    f"({self._service.endpoint!r}); the context sends through its service client"
                )
            return table.table_name
        if not isinstance(table, str):
            raise ValidationError(f"a table is a name or a TableClient, got {type(table).__name__}")
        return table

    @staticmethod
    def _class_table(target: object, what: str) -> str:
        """The table an entity class names, for a call that gave none."""
        name = default_table(target)
        if name is None:
            label = getattr(target, "__qualname__", type(target).__qualname__)
            raise ValidationError(
                f"{what}: no table given and {label} names none; pass the table "
                "(a name or a TableClient) or declare it: class ...(Entity, table='name')"
            )
        return name

    @overload
    def add(self, entity: object, /) -> None: ...
    @overload
    def add(self, table: str | TableClient, entity: object, /) -> None: ...
    def add(self, table: object, entity: object = _NO_ARG) -> None:
        """Track a new entity: it is inserted on the next save (the seed's ``AddObject``).

        The table is a name or a :class:`TableClient`; left out, it is the one the entity's
        class names (``class Movie(Entity, table="movies")``). Raises
        :class:`IdentityConflictError` when another object is tracked for the key.

        Example::

            ctx.add("movies", Movie("Action", "Heat", rating=4.5))
            ctx.add(Review("Heat", "r1"))      # class Review(Entity, table="reviews")
        """
        self._idle("add an entity")
        if entity is _NO_ARG:
            entity, name = table, self._class_table(type(table), "add()")
        else:
            name = self._table_name(table)
        self._tracker.add(name, entity)

    @overload
    def attach(self, table: str | TableClient, entity: object, etag: str | None = None) -> None: ...
    @overload
    def attach(self, entity: object, etag: str | None = None, /) -> None: ...
    @overload
    def attach(self, entity: object, /, *, etag: str | None) -> None: ...
    def attach(self, table: object, entity: object = _NO_ARG, etag: object = None) -> None:
        """Track an existing entity without reading it (the seed's ``AttachTo``).

        The table is a name or a :class:`TableClient`; left out, it is the one the entity's
        class names (then ``etag`` may follow the entity: ``ctx.attach(review, "*")``).
        ``etag`` is what later updates and deletes send in ``If-Match``: the entity's ETag
        (optimistic concurrency), ``"*"`` (unconditional), or ``None`` (updates become
        upserts; a delete is unconditional). Attaching an object that is already tracked
        raises :class:`TrackingError`; another object with the same key,
        :class:`IdentityConflictError`.

        Example::

            ctx.attach("movies", Movie("Action", "Cop Out"), "*")
            ctx.attach(Review("Heat", "r1"), "*")
        """
        self._idle("attach an entity")
        if isinstance(table, str | TableClient):
            if entity is _NO_ARG:
                raise ValidationError("attach(table, entity, etag): no entity given")
            name = self._table_name(table)
        else:
            if entity is not _NO_ARG:
                if etag is not None:
                    raise ValidationError(
                        "attach(entity, etag) takes one etag; the table argument comes first"
                    )
                etag = entity
            entity, name = table, self._class_table(type(table), "attach()")
        if etag is not None and not isinstance(etag, str):
            raise ValidationError(f"etag must be a str or None, got {type(etag).__name__}")
        self._tracker.attach(name, entity, etag)
        if recorded_index_keys(entity) is None:  # attached as matching the store
            note_index_keys(entity)

    def update(self, entity: object) -> None:
        """Mark a tracked entity Modified (the seed's ``UpdateObject``).

        Not needed for changes to tracked objects: they are found by comparing with the
        snapshot. Calling it writes the entity even when nothing changed (every property,
        as a MERGE unless ``REPLACE_ON_UPDATE``). Refused for untracked and deleted
        entities.

        Example::

            ctx.update(movie)
        """
        self._idle("update an entity")
        self._tracker.update(entity)

    def delete(self, entity: object) -> None:
        """Mark a tracked entity for deletion (the seed's ``DeleteObject``); an Added
        entity is simply forgotten.

        Example::

            ctx.delete(movie)
        """
        self._idle("delete an entity")
        self._tracker.delete(entity)

    def detach(self, entity: object) -> bool:
        """Stop tracking an entity (its pending change is dropped); returns whether it
        was tracked.

        Example::

            ctx.detach(movie)
        """
        self._idle("detach an entity")
        return self._tracker.detach(entity)

    def clear(self) -> None:
        """Detach every entity.

        Example::

            ctx.clear()
        """
        self._idle("clear the context")
        self._tracker.clear()

    def state_of(self, entity: object) -> EntityState:
        """The entity's state (an Unchanged entity with changed values reports MODIFIED).

        Example::

            assert ctx.state_of(movie) is EntityState.UNCHANGED
        """
        return self._tracker.state_of(entity)

    def etag_of(self, entity: object) -> str | None:
        """The ETag the context tracks for an entity (``None`` if untracked or unknown).

        Example::

            etag = ctx.etag_of(movie)
        """
        d = self._tracker.descriptor(entity)
        return d.etag if d is not None else None

    def entries(self) -> list[EntityDescriptor]:
        """The descriptors of all tracked entities, in tracking order.

        Example::

            pending = [d for d in ctx.entries() if d.is_dirty()]
        """
        return self._tracker.descriptors()

    @property
    def has_changes(self) -> bool:
        """Whether a save would send anything.

        Example::

            if ctx.has_changes:
                await ctx.save_changes()
        """
        return any(d.is_dirty() for d in self._tracker.descriptors())

    # -- saving -----------------------------------------------------------------------------

    async def save_changes(
        self,
        options: SaveChangesOptions = SaveChangesOptions.NONE,
        *,
        max_concurrency: int = 1,
        allow_property_loss: bool = False,
    ) -> SaveChangesResult:
        """Send the pending changes; see :class:`SaveChangesOptions`.

        Returns a :class:`SaveChangesResult` when every change was applied and raises
        :class:`SaveChangesError` (carrying the same result) otherwise. Applied changes are
        Unchanged with their new ETags as soon as their answer arrives; failed or unsent
        ones stay pending, so saving again resends exactly those. Invalid input (bad
        options, an invalid entity, a MERGE that would need to remove a property) raises
        :class:`azt.ValidationError` before anything is sent. ``max_concurrency`` > 1 runs
        requests (``CONTINUE_ON_ERROR``) or transactions (``BATCH``) in parallel.

        With ``REPLACE_ON_UPDATE``, replacing an entity with an object that does not hold
        every stored property (read with ``select``, or from a row with properties its
        class does not declare) would delete the others: the save raises
        :class:`azt.PropertyLossError` naming them before anything is sent, and the change
        stays pending. ``allow_property_loss=True`` replaces anyway for this save;
        :meth:`mark_complete` does so for one entity.

        Example::

            result = await ctx.save_changes(SaveChangesOptions.BATCH)
            print(len(result.succeeded))
        """
        save = functools.partial(
            self._save, options, max_concurrency, self._service, allow_property_loss
        )
        # One span for the save; its requests and transactions are the client's child spans.
        return await run_traced(
            self._service._core.tracing, "save_changes", None, save, entities=len
        )

    def mark_complete(self, entity: object) -> None:
        """Declare that a tracked entity holds every property the stored entity should
        keep, so that replacing it (``REPLACE_ON_UPDATE``) may delete the stored properties
        it does not hold, e.g. after a projection (``select``) or a read into a class that
        declares fewer properties than are stored. It lasts until the entity is read again
        through the context. Refused (:class:`TrackingError`) for untracked entities.

        Example::

            slim = await ctx.query(Movie, "movies").select(Movie.rating).first()
            slim.rating = 5.0
            ctx.mark_complete(slim)  # the other stored properties go: intended
            await ctx.save_changes(SaveChangesOptions.REPLACE_ON_UPDATE)
        """
        self._idle("mark an entity complete")
        self._tracker.mark_complete(entity)

    async def _save(
        self,
        options: SaveChangesOptions,
        max_concurrency: int,
        service: TableServiceClient,
        allow_property_loss: bool = False,
    ) -> SaveChangesResult:
        options = check_save_options(options)
        if not isinstance(allow_property_loss, bool):
            raise ValidationError(
                f"allow_property_loss must be a bool, got {allow_property_loss!r}"
            )
        if (
            not isinstance(max_concurrency, int)
            or isinstance(max_concurrency, bool)
            or max_concurrency < 1
        ):
            raise ValidationError(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
        batch = SaveChangesOptions.BATCH in options
        keep_going = SaveChangesOptions.CONTINUE_ON_ERROR in options
        if max_concurrency > 1 and not (batch or keep_going):
            raise ValidationError(
                "max_concurrency > 1 needs BATCH or CONTINUE_ON_ERROR: the default option "
                "sends changes one by one and stops at the first failure"
            )
        if self._saving:
            raise ContextBusyError(
                "save_changes() is already running on this context; a context serves one "
                "logical operation at a time"
            )
        if service.closed:
            raise ClientClosedError(
                "the service client of this context has been closed; nothing was sent"
            )
        if self._fetching:
            raise ContextBusyError(
                "cannot save while a query of this context is fetching results; finish "
                "the query first"
            )
        self._saving = True
        try:
            plan = self._tracker.plan(
                replace=SaveChangesOptions.REPLACE_ON_UPDATE in options,
                allow_property_loss=allow_property_loss,
            )
            # Every change's index rows, refused or not, are known before anything is sent.
            extra = {id(c): _companions(c) for c in plan}
            if batch:
                results = await self._save_batches(plan, max_concurrency, service, extra)
            else:
                for change in plan:
                    if change.payload is not None:
                        validate_entity(change.payload)
                results = await self._save_singles(
                    plan, keep_going, max_concurrency, service, extra
                )
        finally:
            self._saving = False
        result = SaveChangesResult(results)
        if not result.ok:
            raise SaveChangesError(result)
        return result

    async def _send_one(
        self,
        change: PendingChange,
        service: TableServiceClient,
        extra: list[BatchOperation] | None = None,
    ) -> OperationResult:
        table = self._table(service, change.table)
        kind = change.kind
        try:
            if extra:  # an indexed entity: with its index rows, in one transaction
                wr = await table._write_group(_operation(change), extra)
            elif kind is ChangeKind.INSERT:
                assert change.payload is not None
                wr = await table.insert_entity(change.payload)
            elif kind is ChangeKind.UPDATE:
                assert change.payload is not None
                assert change.if_match is not None
                wr = await table.update_entity(change.payload, _mode(change), etag=change.if_match)
            elif kind is ChangeKind.UPSERT:
                assert change.payload is not None
                wr = await table.upsert_entity(change.payload, _mode(change))
            else:
                wr = await table.delete_entity(
                    change.partition_key, change.row_key, etag=change.if_match or "*"
                )
        except AztError as exc:
            status = getattr(exc, "status", None)
            return _result(change, status=status, etag=None, error=exc, sent=True)
        self._commit(change, wr.etag, wr.timestamp)
        return _result(
            change, status=wr.status, etag=wr.etag, error=None, sent=True, request_id=wr.request_id
        )

    def _commit(self, change: PendingChange, etag: str | None, timestamp: Any) -> None:
        self._tracker.commit(change, etag, timestamp)
        if change.kind is not ChangeKind.DELETE:
            note_index_keys(change.descriptor.obj)  # the stored version's index keys

    async def _save_singles(
        self,
        plan: list[PendingChange],
        keep_going: bool,
        max_concurrency: int,
        service: TableServiceClient,
        extra: dict[int, list[BatchOperation]],
    ) -> list[OperationResult]:
        if max_concurrency > 1:
            return await _bounded(
                [functools.partial(self._send_one, c, service, extra[id(c)]) for c in plan],
                max_concurrency,
            )
        results: list[OperationResult] = []
        stopped = False
        for change in plan:
            if stopped:
                results.append(_result(change, status=None, etag=None, error=None, sent=False))
                continue
            r = await self._send_one(change, service, extra[id(change)])
            results.append(r)
            if r.error is not None and not keep_going:
                stopped = True
        return results

    async def _save_batches(
        self,
        plan: list[PendingChange],
        max_concurrency: int,
        service: TableServiceClient,
        extra: dict[int, list[BatchOperation]],
    ) -> list[OperationResult]:
        groups: dict[tuple[str, str], list[PendingChange]] = {}
        for change in plan:
            groups.setdefault((change.descriptor.key[0], change.partition_key), []).append(change)
        # Build (and so validate) every transaction before anything is sent. Each change is
        # encoded once, into the part it is sent as; transactions are cut on those exact
        # sizes (100 operations, 4 MiB of request body: the table client's flavour's limit,
        # 2 MB on Cosmos DB), keeping the plan's order, and a change never leaves its index
        # rows (a group too large for one transaction is refused here).
        built: list[tuple[TableClient, TableBatch, list[PendingChange]]] = []
        for members in groups.values():
            table = self._table(service, members[0].table)
            start = 0
            packed = pack_groups(table.batch, [[_operation(c), *extra[id(c)]] for c in members])
            for tx, n in packed:
                built.append((table, tx, members[start : start + n]))
                start += n
        out: dict[int, list[OperationResult]] = {}
        failed = False

        async def send(table: TableClient, tx: TableBatch, chunk: list[PendingChange]) -> Any:
            """Submit ``tx``; a companion delete of a row already gone is dropped and the
            rest sent again. Returns each change's result (its first operation's)."""
            sizes = [1 + len(extra[id(c)]) for c in chunk]
            operations = list(tx.operations)
            while True:
                try:
                    writes = await table.submit_transaction(tx)
                except TransactionError as exc:
                    drop = droppable_companion(exc, operations)
                    if drop is None or _owner(sizes, drop)[1] == 0:
                        raise
                    owner, _ = _owner(sizes, drop)
                    sizes[owner] -= 1
                    del operations[drop]
                    tx = table.batch()
                    for op in operations:
                        tx.add(op)
                    continue
                firsts = []
                at = 0
                for n in sizes:
                    firsts.append(writes[at])
                    at += n
                return firsts, sizes

        async def run(number: int) -> None:
            nonlocal failed
            table, tx, chunk = built[number]
            if failed:  # stop at the first failed transaction, as NONE does at a request
                out[number] = [
                    _result(c, status=None, etag=None, error=None, sent=False, batch=number)
                    for c in chunk
                ]
                return
            try:
                writes, _ = await send(table, tx, chunk)
            except AztError as exc:
                failed = True
                culprit = None
                if isinstance(exc, TransactionError) and exc.index is not None:
                    sizes = [1 + len(extra[id(c)]) for c in chunk]
                    culprit = _owner(sizes, exc.index)[0]
                status = getattr(exc, "status", None)
                out[number] = [
                    _result(
                        c,
                        status=status if i == culprit else None,
                        etag=None,
                        error=exc,
                        sent=True,
                        batch=number,
                    )
                    for i, c in enumerate(chunk)
                ]
                return
            rs = []
            for c, wr in zip(chunk, writes, strict=True):
                self._commit(c, wr.etag, wr.timestamp)
                rs.append(
                    _result(
                        c,
                        status=wr.status,
                        etag=wr.etag,
                        error=None,
                        sent=True,
                        batch=number,
                        request_id=wr.request_id,
                    )
                )
            out[number] = rs

        await _bounded([functools.partial(run, n) for n in range(len(built))], max_concurrency)
        # Report in plan order.
        by_change = {
            id(r_change): r for n in out for r_change, r in zip(built[n][2], out[n], strict=True)
        }
        return [by_change[id(c)] for c in plan]

    # -- queries ----------------------------------------------------------------------------

    @overload
    def query(self, target: type[R], table: str | TableClient | None = None) -> ContextQuery[R]: ...
    @overload
    def query(self, target: Any, table: str | TableClient | None = None) -> ContextQuery[Any]: ...
    def query(self, target: Any, table: str | TableClient | None = None) -> ContextQuery[Any]:
        """A query over ``table`` whose results the context tracks (per its merge option).

        ``target`` is an entity class, ``DynamicEntity`` or a resolver
        (:mod:`azt.dynamic`), as for :class:`azt.query.Query`. ``table`` is a name or a
        :class:`TableClient`; left out, the table the entity class names. Build it further
        with ``where``/``select``/``take``/``page_size``; iterate it, or call ``to_list`` /
        ``first`` / ``one_or_none`` / ``pages``.

        Example::

            async for m in ctx.query(Movie, "movies").where(Movie.PartitionKey == "Action"):
                m.favorite = True
            top = await ctx.query(Review).where(Review.stars >= 4).to_list()
        """
        name = self._class_table(target, "query()") if table is None else self._table_name(table)
        return ContextQuery(self, name, Query(target, self._table(self._service, name)))

    @overload
    async def get(
        self,
        target: type[R],
        table: str | TableClient,
        partition_key: str,
        row_key: str,
        *,
        ignore_resource_not_found: Literal[False],
        merge_option: MergeOption | None = None,
    ) -> R: ...
    @overload
    async def get(
        self,
        target: type[R],
        table: str | TableClient,
        partition_key: str,
        row_key: str,
        *,
        ignore_resource_not_found: bool | None = None,
        merge_option: MergeOption | None = None,
    ) -> R | None: ...
    @overload
    async def get(
        self,
        target: Any,
        table: str | TableClient,
        partition_key: str,
        row_key: str,
        *,
        ignore_resource_not_found: bool | None = None,
        merge_option: MergeOption | None = None,
    ) -> Any: ...
    async def get(
        self,
        target: Any,
        table: str | TableClient,
        partition_key: str,
        row_key: str,
        *,
        ignore_resource_not_found: bool | None = None,
        merge_option: MergeOption | None = None,
    ) -> Any:
        """Read one entity by its keys (a GET on the entity) and track it.

        ``table`` is a name or a :class:`TableClient`. A missing entity raises
        :class:`azt.EntityNotFoundError` unless
        ``ignore_resource_not_found`` (default: the context's setting), which returns
        ``None``. Pass ``ignore_resource_not_found=False`` for a non-optional type.

        Example::

            movie = await ctx.get(Movie, "movies", "Action", "Heat")
        """
        self._idle("query")
        ignore = (
            self.ignore_resource_not_found
            if ignore_resource_not_found is None
            else ignore_resource_not_found
        )
        option = self._merge_option if merge_option is None else check_merge_option(merge_option)
        table = self._table_name(table)
        client = self._table(self._service, table)
        self._fetching += 1
        try:
            row = await client.get_entity(partition_key, row_key)
        except EntityNotFoundError:
            if ignore:
                return None
            raise
        finally:
            self._fetching -= 1
        self._idle("track a query result")
        obj = decoder_for(target, None)(row)
        return self._tracker.materialize(table, obj, option)
