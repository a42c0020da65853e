"""Running migrations online: read the table with a parallel scan (partition-parallel,
resumable), plan each row (:meth:`Migration.plan_row`), and write the rows that change in
entity group transactions conditional on the ETag each was read with, with their index
rows in the same transaction; record progress in the table of applied migrations.

Why it is exactly once per row and safe next to live writers:

* every write of a row is conditional on the ETag it was read with (``If-Match``), so a row
  the application changed in the meantime is never overwritten with a stale copy: the
  transaction fails ``412``, the row is read again and planned again (``read again, apply
  again``), and written if it still needs it;
* a step changes only rows of the old shape, so a row written by an earlier (killed) run,
  or by the application in the new shape, is planned as "nothing to do";
* a move to new keys that meets a conflict (the old row changed after the copy, or the
  new row is there already) reads both rows (:meth:`_Run._moved_again`). The old row's
  content is copied over the new row when the new row is the migration's copy: by the
  ETag of its write's answer; where that answer was lost, by holding exactly what was
  sent; after a crash, by the journal of moves in flight
  (:mod:`azt._orm.migration_journal`: for each move across partitions, written before
  its insert, the old row's ETag as read and a digest of the new row as planned). Any
  other new row is the application's: it stands if it is the later write (their
  Timestamps). So a write to the old keys made after the migration read the row, even
  before its copy was inserted, is carried over, not dropped for the copy's later
  Timestamp. What stays ambiguous: an application writing the new keys itself that
  puts back, while the migration's answer is lost or its run dead, exactly the content
  of the migration's stale copy (every property, type and value): that write is taken
  for the copy, and the old row's last write copied over it. An old row the
  application deletes after the copy is deleted at the new keys too (where this run
  never sent the old row's delete, or a killed run never marked its journal row
  deleting: :meth:`MoveJournal.orphans`);
* the checkpoint (the scan's token, kept in the migration's record row) only moves past
  pages whose every row is written or found done, so after ``kill -9`` a run again
  resumes there, and reads what came after it again (finding the rows already done).

Example::

    report = await run_migrations(service, [Migration("0002_rename", "customers",
                                                      [rename("Name", "FullName")])])
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from azt._core.batch import BatchOperation, checked_operation, companions
from azt._core.bulk.loader import load
from azt._core.bulk.outcomes import BulkFailure, BulkOptions
from azt._core.results import UpdateMode, WriteResult
from azt._core.retry import is_retryable
from azt._core.service_client import TableServiceClient
from azt._edm.entity import TableEntity
from azt._errors import (
    AmbiguousOutcomeError,
    EntityAlreadyExistsError,
    EntityNotFoundError,
    PreconditionFailedError,
    ServiceError,
    TransactionError,
    TransportError,
)
from azt._orm.columns import entity_info
from azt._orm.indexes import declared_indexes, is_index_row_key
from azt._orm.migration_journal import MoveJournal
from azt._orm.migration_records import (
    MAX_ATTEMPTS,
    MIGRATIONS_TABLE,
    SAMPLE,
    STEP_ERRORS,
    MigrationProgress,
    MigrationReport,
    MigrationStatus,
    main_rows,
    migration_status,
    ordered,
    record_of,
    retrying,
    verify_migrations,
)
from azt._orm.migration_units import Page, Unit, describe, holds, keys_of, own_copy, stamp
from azt._orm.migrations import Migration
from azt._orm.scan import parallel_scan

__all__ = [  # the records' names too, so this module stays the one the faces import
    "MIGRATIONS_TABLE",
    "MigrationProgress",
    "MigrationReport",
    "MigrationStatus",
    "migration_status",
    "ordered",
    "pacing",
    "run_migrations",
    "verify_migrations",
]

#: a row changed since it was read (412), gone (404) or a moved row's target there (409)
_CONFLICTS = (PreconditionFailedError, EntityNotFoundError, EntityAlreadyExistsError)
_MAX_BYTES = 3 * 1024 * 1024
#: scan pages of this many rows, at most this many read and not yet written: a throttling
#: service charges a read per entity as a write, and a burst of large pages read ahead
#: overdraws the account (and the partitions) the writes then wait for (measured with
#: benchmarks/migrate_bench.py, throttled: pages of 500 read 4 ahead ran at a fifth of the
#: pace of pages of 200 read 8 ahead)
_PAGE_SIZE = 200
_PAGES_AHEAD = 8
#: ... but a page reads at most this share of a partition's budget per second (the
#: loader's ``partition_rate``: Azure's 2,000 gives pages of 200), and no fewer rows than
#: this: reading a partition's page spends the partition's budget its writes then need,
#: and a page the size of the whole budget has its first write refused, which cuts the
#: loader's pace of that partition (benchmarks/migrate_bench.py, throttled at 200 a
#: partition: pages of 200 ran at about half the pace of pages of 20); smaller pages
#: are read further ahead (up to this many rows, at most this many pages) by more readers
_PAGE_SHARE = 0.1
_MIN_PAGE = 20
_ROWS_AHEAD = 1600
_MAX_PAGES_AHEAD = 32
_SMALL_PAGE_READERS = 16
#: ... starting at this many, one more each time a page is written (a slow start: a burst
#: of reads at the start would overdraw the account's bucket the first writes then find
#: empty, and a loader refused before its first success cuts its pace to the floor), and
#: the scan holds at most this many read and not yet taken
_START_AHEAD = 2
#: the longest the loader holds a partition's partial transaction for more of its rows
_LINGER = 0.02


async def run_migrations(
    service: TableServiceClient,
    migrations: Sequence[Migration],
    *,
    dry_run: bool = False,
    concurrency: int = 16,
    scan_concurrency: int | None = None,
    checkpoint_interval: float = 1.0,
    progress: Callable[[MigrationProgress], object] | None = None,
    options: BulkOptions | None = None,
) -> list[MigrationReport]:
    """Apply the migrations not yet recorded as applied, in name order, each resuming
    from its recorded checkpoint; ``dry_run`` reports what would change and writes
    nothing. A migration with failures stops the run (the later ones wait).

    Rows that keep their keys and carry no index rows are written by the bulk loader
    (``options``: its limits and pacing, :class:`azt.bulk.BulkOptions`); rows with index
    rows or new keys in transactions of whole rows, ``concurrency`` at a time.
    ``scan_concurrency``: the reads in flight (default 8, or 16 where the options'
    ``partition_rate`` makes the pages small).

    Example::

        reports = await run_migrations(service, migrations, progress=print)
        assert all(r.ok for r in reports)
    """
    reports = []
    pending: list[Migration] = []  # not applied yet, in run order
    for m in ordered(migrations):
        rec = await record_of(service, m)
        if rec is not None and rec.get("State") == "done":
            reports.append(MigrationReport(m.name, m.table, skipped=True))
            continue
        run = _Run(service, m, rec, dry_run, concurrency, scan_concurrency, progress, options)
        if dry_run:
            # a dry run writes nothing: each row is planned as the pending migrations of
            # its table before this one would leave it
            run.before = [e for e in pending if e.table.lower() == m.table.lower()]
        run.interval = checkpoint_interval
        report = await run.run()
        reports.append(report)
        pending.append(m)
        if not report.ok:
            break
    return reports


class _Run:
    def __init__(
        self,
        service: TableServiceClient,
        m: Migration,
        record: TableEntity | None,
        dry_run: bool,
        concurrency: int,
        scan_concurrency: int | None,
        progress: Callable[[MigrationProgress], object] | None,
        options: BulkOptions | None = None,
    ) -> None:
        self.service = service
        self.m = m
        self.table = service.get_table_client(m.table)
        self.log = service.get_table_client(MIGRATIONS_TABLE)
        self.record = record
        self.dry_run = dry_run
        self.sem = asyncio.Semaphore(max(1, concurrency))
        # pages read but not written: enough to keep the writers busy, few enough that the
        # reads (which a throttling service charges per entity, as the writes) do not
        # run far ahead and starve the writes of the account's budget
        self.report = MigrationReport(m.name, m.table, dry_run=dry_run)
        self.stats = MigrationProgress(m.name)
        self.report.progress = self.stats
        self.on_progress = progress
        self.pages: list[Page] = []
        self.settled = 0  # pages[:settled] are all written
        self.interval = 1.0
        self.started = time.monotonic()
        self.entity = m.entity
        self.indexed = self.entity is not None and bool(declared_indexes(self.entity))
        self.limits = self.table._core.flavor.limits
        #: rows without index rows that stay on their keys go through the bulk loader
        #: (its adaptive pacing, grouping and lost-answer resolution); the others, whose
        #: rows must share a transaction with their index rows or move, through _partition
        self.bulk = not self.indexed and not any(s.kind == "rekey" for s in m.steps)
        told = options or BulkOptions()
        self.page_size, self.pages_ahead, readers = pacing(told, scan_concurrency)
        self.scan_concurrency = readers
        self.window = asyncio.Semaphore(_START_AHEAD)
        self.ahead = _START_AHEAD
        # a page's rows reach the loader all at once: a partition's partial transaction
        # has nothing more to wait for but the range's next page, a round trip away;
        # lingering longer stalls the pages waiting on it (and so the scan)
        self.options = attrs.evolve(told, linger=min(told.linger, _LINGER))
        #: a dry run's earlier pending migrations of the table, applied to each row first
        self.before: list[Migration] = []
        #: what the loader is to write: a page's units at a time (one handoff a page, not
        #: one a row), or ``None`` once every page is settled
        self.feed: asyncio.Queue[list[Unit] | None] = asyncio.Queue()
        self.sent: dict[int, Unit] = {}
        self.followups: set[asyncio.Task[None]] = set()
        #: a re-key's journal of moves across partitions in flight (none for the others)
        self.journal: MoveJournal | None = None
        if not dry_run and any(s.kind == "rekey" for s in m.steps):
            self.journal = MoveJournal(self.log, m)

    # -- the run ---------------------------------------------------------------------------

    async def run(self) -> MigrationReport:
        token = None if self.record is None else self.record.get("Token") or None
        rows_before = 0 if self.record is None else int(self.record.get("Rows", 0))
        if not self.dry_run:
            await self.service.create_table_if_not_exists(MIGRATIONS_TABLE)
            await self._save(token, rows_before, state="running")
            if self.journal is not None and self.record is not None:
                await self.journal.load()  # the moves a killed run left in flight
        tasks: set[asyncio.Task[None]] = set()
        saver = None if self.dry_run else asyncio.create_task(self._saver(rows_before))
        loading = None
        if self.bulk and not self.dry_run:
            loading = asyncio.create_task(self._load())
        try:
            attempts = 0
            while True:
                try:
                    await self._scan(token, tasks)
                    break
                except (ServiceError, TransportError) as exc:
                    # a read the client's retries (and the scan's) gave up on: once every
                    # page before it is written, scan again from there (rows already
                    # migrated are found so); a migration outlasts a bad minute
                    attempts += 1
                    if not is_retryable(exc) or attempts >= MAX_ATTEMPTS:
                        raise
                    if tasks:
                        await asyncio.gather(*tasks)
                    token = self._token()
                    await asyncio.sleep(min(0.05 * 2**attempts, 2.0))
            if tasks:
                await asyncio.gather(*tasks)
            if loading is not None:
                self.feed.put_nowait(None)  # every page settled: nothing more to write
                await loading
        except ServiceError as exc:
            if exc.code != "TableNotFound":
                raise
            self.report.errors.append(f"table {self.m.table!r} does not exist")
        finally:
            for t in (*tasks, *self.followups):
                t.cancel()
            if loading is not None and not loading.done():
                loading.cancel()
            if saver is not None:
                saver.cancel()
        self.stats.done = True
        self._tick(force=True)
        r = self.report
        if not self.dry_run:
            if r.ok and self.journal is not None:  # a killed run's copy of a row deleted
                for error in await self.journal.orphans(  # meanwhile goes too
                    self.table, lambda new, etag: self._companions(new, None, "delete", etag)
                ):
                    self.report.failed += 1
                    self.report.errors.append(error)
            if r.ok:
                if self.journal is not None:
                    await self.journal.clear()  # every row moved: no move in flight
                await self._save(None, rows_before + r.written, state="done")
            else:
                await self._save(self._token(), rows_before + r.written, state="running")
        return r

    async def _scan(self, token: str | None, tasks: set[asyncio.Task[None]]) -> None:
        """Read the table from ``token`` on, each page planned and written by a task of
        its own (at most ``pages_ahead`` at once)."""
        scan = parallel_scan(
            self.table,
            filter=main_rows(self.m),
            concurrency=self.scan_concurrency,
            page_size=self.page_size,
            token=token,
            read_ahead=_START_AHEAD,
        )
        async with scan:
            async for page in scan.by_page():
                await self.window.acquire()
                task = asyncio.create_task(self._page(page.items, page.token))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                self._tick()

    async def _page(self, rows: list[TableEntity], token: str | None) -> None:
        page = Page(token)
        self.pages.append(page)
        try:
            units = []
            for row in rows:
                if is_index_row_key(row["RowKey"]):
                    continue
                self.stats.scanned += 1
                self.report.scanned += 1
                try:
                    for earlier in self.before:
                        chained = earlier.plan_row(row)
                        if chained is not None:
                            row = chained.entity
                    unit = self._plan(row, page)
                except STEP_ERRORS as exc:  # a step or conversion refused this row
                    self._refused(row, exc)
                    continue
                if unit is not None:
                    units.append(unit)
            self.report.pending += len(units)
            self.stats.changed += len(units)
            if self.dry_run:
                for u in units[: max(0, SAMPLE - len(self.report.samples))]:
                    self.report.samples.append(describe(u))
            elif self.bulk:
                page.left = len(units)
                if units:
                    self.feed.put_nowait(units)
                    await page.done.wait()
            else:
                moves = [u for u in units if u.then]
                if moves and self.journal is not None:
                    await self._note(moves)
                await self._write(units)
                if page.journal and not page.failed and self.journal is not None:
                    self.journal.finished(page.journal)  # deleted with the next journal write
        finally:
            page.settled = True
            self._settle()
            self.window.release()
            if self.ahead < self.pages_ahead:
                self.ahead += 1
                self.window.release()

    def _settle(self) -> None:
        while self.settled < len(self.pages) and self.pages[self.settled].settled:
            self.settled += 1

    def _token(self) -> str | None:
        if self.settled == 0:
            return None if self.record is None else self.record.get("Token") or None
        return self.pages[self.settled - 1].token

    async def _saver(self, rows_before: int) -> None:
        last: tuple[str | None, int] | None = None
        while True:
            await asyncio.sleep(self.interval)
            now = (self._token(), self.report.written)
            if now != last:
                await self._save(now[0], rows_before + now[1], state="running")
                last = now
            self._tick()

    async def _save(self, token: str | None, rows: int, *, state: str) -> None:
        now = datetime.now(UTC)
        entity: dict[str, Any] = {
            "PartitionKey": self.m.table,
            "RowKey": self.m.name,
            "State": state,
            "Rows": rows,
            "Updated": now,
            "Steps": "; ".join(s.describe for s in self.m.steps)[:4000],
        }
        if token is not None:
            entity["Token"] = token
        if state == "done":
            entity["Finished"] = now
        await retrying(lambda: self.log.upsert_entity(entity, UpdateMode.REPLACE))

    def _tick(self, force: bool = False) -> None:
        self.stats.elapsed = time.monotonic() - self.started
        self.stats.written = self.report.written
        self.stats.conflicts = self.report.conflicts
        if self.on_progress is not None:
            now = time.monotonic()
            if force or now - getattr(self, "_last_tick", 0.0) >= 1.0:
                self._last_tick = now
                self.on_progress(self.stats)

    # -- planning a row --------------------------------------------------------------------

    def _plan(self, row: TableEntity, page: Page) -> Unit | None:
        plan = self.m.plan_row(row)
        if plan is None:
            return None
        unit = Unit(row, plan, page)
        # the ETag as decoded (row.metadata would build the metadata object and parse
        # the Timestamp of every row read, which nothing here needs)
        etag = getattr(row, "_etag", None) or row.metadata.etag or "*"
        new = plan.entity
        limits = self.limits
        if not plan.moved:
            op = BatchOperation("update", new, mode=UpdateMode.REPLACE, etag=etag)
            if self.bulk:  # the loader checks it (a refusal is a failure with its keys)
                unit.ops = [op]
                return unit
            unit.size = 2048 + 2 * len(repr(dict(new)))
            unit.ops = [checked_operation(op, limits), *self._companions(row, new, "update", etag)]
            return unit
        create = checked_operation(BatchOperation("create", new), limits)
        delete = BatchOperation("delete", keys_of(row), etag=etag)
        created = [create, *self._companions(None, new, "create", None)]
        deleted = [delete, *self._companions(row, None, "delete", etag)]
        unit.deleted = deleted
        unit.size = 2 * (2048 + 2 * len(repr(dict(new))))
        if new["PartitionKey"] == row["PartitionKey"]:
            unit.ops = created + deleted
        else:
            unit.ops, unit.then = created, deleted
        return unit

    def _companions(
        self, old: TableEntity | None, new: TableEntity | None, kind: str, etag: str | None
    ) -> list[BatchOperation]:
        """The index-row operations of writing ``new`` over ``old`` (entity class with
        indexes only): built from an object read from ``old`` (it records the index rows
        that row implies) holding ``new``'s values."""
        if not self.indexed:
            return []
        cls: Any = self.entity
        if old is not None:
            obj = cls.__azt_decode__(old, None)
            if new is not None:
                fresh = cls.from_entity(new)
                for p in entity_info(cls).data_props:
                    setattr(obj, p.attr, getattr(fresh, p.attr))
        else:
            assert new is not None
            obj = cls.from_entity(new)
        mode = UpdateMode.REPLACE if kind == "update" else None
        return companions(obj, kind, mode, new, etag, self.limits)

    # -- writing through the bulk loader -----------------------------------------------------

    async def _load(self) -> None:
        """Run the bulk loader over the units fed by the pages (and re-planned after a
        conflict) until the run ends; each outcome resolves its unit."""

        async def items() -> AsyncIterator[BatchOperation]:
            index = 0
            while True:
                units = await self.feed.get()
                if units is None:
                    return
                sent = self.sent
                for unit in units:
                    sent[index] = unit
                    index += 1
                    yield unit.ops[0]

        result = await load(self.table, items(), options=self.options, on_result=self._outcome)
        self.stats.throttled += result.throttled
        self.stats.requests += result.requests

    def _outcome(self, index: int, outcome: WriteResult | BulkFailure) -> None:
        unit = self.sent.pop(index)
        if isinstance(outcome, WriteResult):
            self.report.written += 1
            unit.page.resolved()
        elif outcome.status in (404, 409, 412):  # changed (or gone) since read: again
            task = asyncio.create_task(self._again_bulk(unit))
            self.followups.add(task)
            task.add_done_callback(self.followups.discard)
        else:
            self._failed(unit, outcome.error or Exception(outcome.message))
            unit.page.resolved()

    async def _again_bulk(self, unit: Unit) -> None:
        again = await self._again(unit, None)
        if again:
            self.feed.put_nowait(again)  # the same row, planned from what it is now
        else:
            unit.page.resolved()

    # -- writing ---------------------------------------------------------------------------

    async def _write(self, units: list[Unit]) -> None:
        """Write ``units``: every copy of a move across partitions first, then its
        journal rows marked deleting (:meth:`MoveJournal.mark`), then the deletes."""
        while units:
            by_partition: dict[str, list[Unit]] = {}
            for u in units:
                by_partition.setdefault(u.ops[0].partition_key, []).append(u)
            held: list[Unit] = []
            await asyncio.gather(*(self._partition(us, held) for us in by_partition.values()))
            if held and self.journal is not None:
                await self.journal.mark([k for u in held for k in u.noted])
            units = held

    async def _partition(self, units: list[Unit], held: list[Unit]) -> None:
        """Send one partition's units, as many whole units per transaction as fit (a
        row's index rows always share its transaction); the deletes of moves across
        partitions whose journal rows are not marked deleting yet go to ``held``."""
        marked: set[str] = set() if self.journal is None else self.journal.marked
        while units:
            # a unit's operations share a partition; the units do not always (a move's
            # second half, the delete of the old row, is in the old row's partition)
            pk = units[0].ops[0].partition_key
            group: list[Unit] = []
            rest: list[Unit] = []
            n = size = 0
            for u in units:
                if u.ops[0].partition_key != pk or (
                    group and (n + len(u.ops) > 100 or size + u.size > _MAX_BYTES)
                ):
                    rest.append(u)
                    continue
                group.append(u)
                n += len(u.ops)
                size += u.size
            for u in await self._send(group):
                if u.noted and not marked.issuperset(u.noted) and u.ops is u.deleted:
                    held.append(u)
                else:
                    rest.append(u)
            units = rest

    async def _send(self, group: list[Unit]) -> list[Unit]:
        """Send one transaction of ``group``; returns the units to send again (the rest
        of a transaction one unit failed, or the unit re-planned after a conflict)."""
        ops = [op for u in group for op in u.ops]
        was = [(u.sent, u.deleting) for u in group]
        for u in group:
            if u.then:  # a move across partitions: the new row is written (insert or copy)
                u.sent = u.plan.entity
            elif u.deleted:  # the old row's delete is sent: if it is gone, moved
                u.deleting = True
                if u.noted and self.journal is not None:
                    self.journal.sent.add(u.plan.old_keys)
        maybe = False  # an attempt of this transaction may have been applied
        attempts = 0
        while True:
            attempts += 1
            self.stats.requests += 1
            try:
                async with self.sem:
                    results = await self.table.submit_transaction(ops)
            except TransactionError as exc:
                if not (maybe or exc.earlier_attempt_may_have_applied):
                    for u, (sent, deleting) in zip(group, was, strict=True):
                        u.sent, u.deleting = sent, deleting  # refused whole: none applied
                return await self._op_failed(group, exc)
            except AmbiguousOutcomeError:
                # a resend met 412/404/409 after an attempt without an answer: ours may
                # have been applied, or the application wrote: read every row again
                again: list[Unit] = []
                for u in group:
                    again.extend(await self._again(u, None))
                return again
            except (ServiceError, TransportError) as exc:
                maybe = True
                if not is_retryable(exc) or attempts >= MAX_ATTEMPTS:
                    for u in group:
                        self._failed(u, exc)
                    return []
                if isinstance(exc, ServiceError) and exc.status in (429, 503):
                    self.stats.throttled += 1
                # an answer lost after the service applied it: the resend fails 412 on the
                # row's old ETag (or 409 on a moved row's insert) and is read again
                await asyncio.sleep(min(0.05 * 2**attempts, 2.0))
                continue
            break
        later: list[Unit] = []
        at = 0
        for u in group:
            first, at = at, at + len(u.ops)
            if u.then:
                u.copied = results[first].etag  # the new row as inserted
                u.ops, u.then = u.then, []
                later.append(u)
            else:
                self.report.written += 1
        return later

    async def _op_failed(self, group: list[Unit], exc: TransactionError) -> list[Unit]:
        i = exc.index if exc.index is not None else 0
        at = 0
        culprit = group[0]
        for u in group:
            if at <= i < at + len(u.ops):
                culprit = u
                break
            at += len(u.ops)
        rest = [u for u in group if u is not culprit]
        error = exc.error
        if isinstance(error, _CONFLICTS):
            again = await self._again(culprit, error)
            return rest + again
        if isinstance(error, ServiceError) and is_retryable(error):
            self.stats.throttled += 1
            await asyncio.sleep(0.1)  # throttled inside the change set: all again, later
            return group
        self._failed(culprit, exc)
        return rest

    async def _again(self, u: Unit, error: BaseException | None) -> list[Unit]:
        """Read the row again and plan it again (the application changed it, or an earlier
        attempt of ours was applied)."""
        self.report.conflicts += 1
        if u.deleted:
            return await self._moved_again(u)
        pk, rk = u.plan.old_keys
        try:
            row = await retrying(lambda: self.table.get_entity(pk, rk))
        except EntityNotFoundError:
            if u.deleted:
                self.report.written += 1  # the old row of a move is gone: moved
            return []
        try:
            fresh = self._plan(row, u.page)
        except STEP_ERRORS as exc:
            self._refused(row, exc, u.page)
            return []
        if fresh is None:
            return []  # already in the new shape
        return [fresh]

    async def _moved_again(self, u: Unit) -> list[Unit]:
        """A move met a conflict: the new row exists (its insert failed ``409``), the old
        row changed since it was read (its delete failed ``412``), or an answer was lost.
        Read both rows again; the old row's content reaches the new keys unless the new
        row is the application's later write:

        * the old row is gone: moved; but if this run never sent a delete that could have
          taken it, the application deleted it after the copy, and the copy, if still
          the migration's, is deleted too (:meth:`_deleted_meanwhile`);
        * no new row: insert it (and delete the old one), as planned;
        * the new row holds what the old one would move now, or is a killed run's copy
          of the old row as it is now (the journal): it stands, and the old row is
          deleted if it is still as read now;
        * the new row is the migration's copy (:func:`own_copy`, or a killed run's by the
          journal), made from the old row as read before it changed: the old row is
          copied again over the new row (``If-Match`` the new row as read) and deleted,
          in one transaction within a partition;
        * else the application wrote the new row: it stands if it is the later write
          (their Timestamps), else the old row is copied over it.

        A write of the application to the old row is carried over, never dropped.
        """
        pk, rk = u.plan.old_keys
        try:
            old = await retrying(lambda: self.table.get_entity(pk, rk))
        except EntityNotFoundError:
            self.report.written += 1  # the old row is gone: moved
            if not u.deleting and u.plan.entity["PartitionKey"] != pk:
                await self._deleted_meanwhile(u)  # across partitions: by the application
            return []
        try:
            fresh = self._plan(old, u.page)
        except STEP_ERRORS as exc:
            self._refused(old, exc, u.page)
            return []
        if fresh is None:
            return []  # no longer to be moved
        entity = fresh.plan.entity
        npk, nrk = entity["PartitionKey"], entity["RowKey"]
        try:
            new = await retrying(lambda: self.table.get_entity(npk, nrk))
        except EntityNotFoundError:
            if npk != pk:
                await self._note([fresh])  # a copy of the row as it is now
            return [fresh]
        new_etag = new.metadata.etag or "*"
        ours, now = own_copy(u, new, new_etag), False
        if not ours and self.journal is not None:
            earlier = self.journal.earlier_copy((pk, rk), old.metadata.etag or "*", new)
            ours, now = earlier is not None, earlier is False
        if holds(new, entity) or now or not (ours or stamp(old) > stamp(new)):
            fresh.ops, fresh.then = fresh.deleted, []
            fresh.copied = new_etag if ours or holds(new, entity) else None
            fresh.noted = u.noted
            return [fresh]
        replace = checked_operation(
            BatchOperation("update", entity, mode=UpdateMode.REPLACE, etag=new_etag), self.limits
        )
        copy = [replace, *self._companions(new, entity, "update", new_etag)]
        if npk == pk:
            fresh.ops, fresh.then = copy + fresh.deleted, []
        else:
            fresh.ops, fresh.then = copy, fresh.deleted
            await self._note([fresh])  # a killed run's successor knows this copy too
        return [fresh]

    async def _deleted_meanwhile(self, u: Unit) -> None:
        """The old row of a move across partitions is gone, and this run never sent its
        delete: the application deleted it after the migration's copy was made. The copy
        goes too (with its index rows, ``If-Match`` it as read) if it is still the
        migration's (:func:`own_copy`, or a killed run's by the journal); a new row the
        application wrote stands."""
        planned = u.sent if u.sent is not None else u.plan.entity
        npk, nrk = planned["PartitionKey"], planned["RowKey"]
        try:
            new = await retrying(lambda: self.table.get_entity(npk, nrk))
        except EntityNotFoundError:
            return
        etag = new.metadata.etag or "*"
        ours = own_copy(u, new, etag) or (
            self.journal is not None
            and self.journal.earlier_copy(u.plan.old_keys, "", new) is not None
        )
        if not ours:
            return  # the application's row at the new keys
        ops = [
            BatchOperation("delete", keys_of(new), etag=etag),
            *self._companions(new, None, "delete", etag),
        ]
        try:
            await retrying(lambda: self.table.submit_transaction(ops))
        except AmbiguousOutcomeError:
            pass  # the answer to this delete was lost, or the application wrote the row
        except TransactionError as exc:
            if not isinstance(exc.error, _CONFLICTS):
                self._failed(u, exc)  # the copy stays; the migration is not done
            # else the application wrote the new row since (it stands), or deleted it

    async def _note(self, units: list[Unit]) -> None:
        """Journal a page's moves across partitions before their copies are sent: one
        row for them all, deleted with the page's others once its moves are done."""
        if self.journal is None:
            return
        moves = [(u.plan.old_keys, u.then[0].etag or "*", u.plan.entity) for u in units]
        rows = await self.journal.note(moves)
        units[0].page.journal.extend(rows)
        for u in units:
            u.noted = tuple(rows)

    def _refused(self, row: TableEntity, exc: BaseException, page: Page | None = None) -> None:
        if page is not None:
            page.failed = True  # its journal rows stay (a move of it may be in flight)
        self.report.failed += 1
        if len(self.report.errors) < SAMPLE:
            self.report.errors.append(
                f"{row['PartitionKey']!r}/{row['RowKey']!r}: cannot be migrated: {exc}"
            )

    def _failed(self, u: Unit, exc: BaseException) -> None:
        u.page.failed = True
        self.report.failed += 1
        if len(self.report.errors) < SAMPLE:
            pk, rk = u.plan.old_keys
            self.report.errors.append(f"{pk!r}/{rk!r}: {exc}")


def pacing(told: BulkOptions, scan_concurrency: int | None) -> tuple[int, int, int]:
    """A migration's page size, most pages read ahead of the writes, and readers, for a
    loader told ``told`` (its ``partition_rate``) and the ``scan_concurrency`` asked.

    Example::

        >>> pacing(BulkOptions(), None), pacing(BulkOptions(partition_rate=200), None)
        ((200, 8, 8), (20, 32, 16))
    """
    page = min(_PAGE_SIZE, max(_MIN_PAGE, int(told.partition_rate * _PAGE_SHARE)))
    ahead = min(_MAX_PAGES_AHEAD, max(_PAGES_AHEAD, _ROWS_AHEAD // page))
    if scan_concurrency is None:
        scan_concurrency = 8 if page == _PAGE_SIZE else _SMALL_PAGE_READERS
    return page, ahead, scan_concurrency
