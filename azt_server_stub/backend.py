# Over 800 lines: one class, the semantics of every operation under one lock (tables, writes,
# change sets checked once for the in-memory path and the group commit, queries).
"""Storage and semantics of the stub: accounts -> tables -> sorted entities, no aiohttp.

Every :class:`Backend` method is synchronous and atomic with respect to other requests;
with a durable location a write returns only once committed to disk. Refusals are raised
as :class:`~azt_server_stub.errors.StubError`.

Example::

    >>> b = Backend()
    >>> b.create_table("devstoreaccount1", "Movies")
    'Movies'
    >>> r = b.write("devstoreaccount1", "movies", WriteOp("insert", "Action", "Heat"))
    >>> b.get_entity("devstoreaccount1", "MOVIES", "Action", "Heat").etag == r.entity.etag
    True
"""

from __future__ import annotations

import bisect
import functools
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from pathlib import Path

from sortedcontainers import SortedDict

from . import errors
from ._acl import SignedIdentifier, acl_from_json, acl_to_json, checked_acl
from ._rows import MemoryRows, StoredRows, TableRows, read_ahead, unordered_page
from ._store import SqliteStore
from .errors import StubError
from .model import Entity, wall_clock_ticks
from .query_pages import (
    EntityFilter,
    Key,
    KeyRange,
    QueryPage,
    TablePage,
    page_size,
    range_lo,
    sort_key,
    sort_str,
)
from .validation import STORAGE_TABLE_NAMES, TableNaming
from .writes import (
    GroupWrite,
    WriteKind,
    WriteOp,
    WriteResult,
    apply_write,
    invalid_etag,
    is_weak_etag,
)

__all__ = [
    "Backend",
    "EntityFilter",
    "GroupWrite",
    "KeyRange",
    "QueryPage",
    "SignedIdentifier",
    "TablePage",
    "WriteKind",
    "WriteOp",
    "WriteResult",
    "invalid_etag",
    "is_weak_etag",
]


# --- helpers ------------------------------------------------------------------------

#: Most operations in one change set.
MAX_BATCH = 100


def _current(tbl: _Table, key: Key, overlay: _Overlay, read: _Read | None = None) -> Entity | None:
    """The entity at ``key`` as earlier writes of the same group left it, else as stored
    (as ``read`` ahead for the group if it was: :meth:`Backend._read_inserts`)."""
    pending = overlay.get((id(tbl), key))
    if pending is not None:
        return pending[3]
    return read[(id(tbl), key)] if read and (id(tbl), key) in read else tbl.rows.get(key)


class _Table:
    __slots__ = ("account", "acl", "key", "name", "rows")

    def __init__(
        self,
        name: str,
        account: str,
        key: str,
        store: SqliteStore | None,
        by_creation: bool = False,
    ) -> None:
        self.name = name
        self.account = account
        self.key = key  # the durable store's name for the table
        self.rows: TableRows = (
            MemoryRows(by_creation) if store is None else StoredRows(store, account, key)
        )
        self.acl: list[SignedIdentifier] = []


_Overlay = dict[tuple[int, Key], tuple[_Table, Key, Key, "Entity | None"]]
"""Changes of a group so far: (table id, sort key) -> (table, sort key, key, new entity)."""
_Read = dict[tuple[int, Key], "Entity | None"]
"""Stored entities read ahead for a group: (table id, sort key) -> entity or None."""


class _Account:
    __slots__ = ("service_properties", "tables")

    def __init__(self) -> None:
        self.tables: SortedDict[str, _Table] = SortedDict()  # keyed by TableNaming.key
        self.service_properties: bytes | None = None


# Storage model:
#
# * Each table keeps its entities behind _rows.TableRows, keyed by the entity's
#   sort key: (PartitionKey, RowKey) compared by UTF-16 code units, as the service does
#   (PROTOCOL.md 7.5; query_pages.sort_key). In memory that is a SortedDict; with a
#   location it is the SQLite store itself, read through (keys stored as UTF-16-BE
#   BLOBs, whose byte order is that order). A query scans only the filter planner's
#   ranges from the continuation key: O(log n + k) either way.
# * Stored Entity objects are never mutated: a write stores a new object. Entities
#   handed out by reads stay valid snapshots; callers must not mutate them.
# * Timestamps are 100 ns ticks from the wall clock, strictly increasing across the
#   whole backend (a write never reuses an earlier Timestamp). All entities written by
#   one batch share its Timestamp, as on the service.
# * With a location, every write is first committed to SQLite (_store), then applied
#   (a no-op for stored rows); at start only table metadata, ACLs and service
#   documents are read, so start-up time and memory do not grow with the entities.
#   A page is read inside one SQLite read transaction. commit_group commits
#   several write requests with one transaction (group commit); the HTTP layer feeds it
#   from one writer thread (_commit), so reads are served while a group waits for its
#   fsync.
# * Two locks: writers serialize on a write lock (held from the checks to the in-memory
#   apply, across the disk commit); the in-memory state has its own lock, which a write
#   holds only to check and to apply. Readers never wait for an fsync: until a group is
#   applied (and only then acknowledged) they see the state before it, never half of it.
#   Every change to the tables is made holding both, so a writer's checks read them under
#   the write lock alone where nothing in memory changes (a lone insert on disk:
#   insert_alone), and table_name's single look-up takes no lock. Hot paths take a lock
#   with acquire and release: a with statement's look-ups and __exit__ call cost as much.


class Backend:
    """All accounts' tables and entities (the storage model is in the comment above).

    ``location``: a directory for the durable SQLite store, or None for memory only.
    ``clock``: returns the current time in 100 ns ticks since 0001-01-01 (tests may fix it;
    Timestamps still strictly increase).
    ``table_naming``: the service's table-name rule (validity, and whether names are
    case-sensitive; default Azure Table storage's). ``key_order``: whether queries return
    entities in key order (Storage) or in the Cosmos DB Table API's unsorted order
    (:func:`~azt_server_stub.query_pages.cosmos_order`). ``sorted_updates``: whether a
    replace or merge stores the properties in name order (Storage) or keeps the order they
    come in (Cosmos; :func:`~azt_server_stub.writes.apply_write`).
    ``table_deletion_seconds``: how long a deleted table's name stays unavailable
    (``409 TableBeingDeleted`` on create), as on the service (about 40 s there). Default 0:
    the name is free at once. ``monotonic`` is the clock for that delay (a test hook).

    Example::

        >>> b = Backend()
        >>> b.create_table("acct", "People")
        'People'
        >>> b.table_name("acct", "PEOPLE")
        'People'
    """

    def __init__(
        self,
        location: Path | None = None,
        *,
        clock: Callable[[], int] | None = None,
        table_deletion_seconds: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
        table_naming: TableNaming = STORAGE_TABLE_NAMES,
        key_order: bool = True,
        durability: str = "full",
        sorted_updates: bool = True,
    ) -> None:
        self._naming = table_naming
        self._fold = not table_naming.case_sensitive  # (TableNaming.key: lower-cased)
        self._key_order = key_order
        self._apply = functools.partial(apply_write, sorted_updates=sorted_updates)
        self._lock = threading.RLock()  # the in-memory state
        self._write_lock = threading.RLock()  # one writer at a time, across its disk commit
        self._clock = clock or wall_clock_ticks
        self._deletion_seconds = table_deletion_seconds
        self._monotonic = monotonic
        self._being_deleted: dict[tuple[str, str], float] = {}  # (account, lname) -> until
        self._last_ts = 0
        self._accounts: dict[str, _Account] = {}
        self._store: SqliteStore | None = None
        if location is not None:
            self._store = SqliteStore(
                Path(location), durability=durability, creation_index=not key_order
            )
            try:
                self._load(self._store)
            except BaseException:
                self._store.close()  # release the folder's lock: nothing was served
                raise

    def _load(self, store: SqliteStore) -> None:
        state = store.load()
        self._last_ts = state.last_timestamp
        for account_name, tables in state.tables.items():
            account = self._account(account_name)
            for lname, loaded in tables.items():
                table = _Table(loaded.name, account_name, lname, store, not self._key_order)
                table.acl = acl_from_json(loaded.acl)
                key = self._naming.key(loaded.name)
                if key in account.tables:
                    raise ValueError(
                        f"the store holds tables {account.tables[key].name!r} and "
                        f"{loaded.name!r}, one table under this service's case-insensitive "
                        "names; open it with the flavour that wrote it"
                    )
                account.tables[key] = table
        for account_name, doc in state.service.items():
            self._account(account_name).service_properties = doc

    @property
    def durable(self) -> bool:
        """Whether writes go to a durable store.

        Example::

            >>> Backend().durable
            False
        """
        return self._store is not None

    @property
    def fsyncs(self) -> bool:
        """Whether each commit waits for an fsync (a durable store at ``full`` durability).

        Example::

            >>> Backend().fsyncs
            False
        """
        return self._store is not None and self._store.durability == "full"

    def close(self) -> None:
        """Flush and close the durable store (no-op in memory). Idempotent.

        Example::

            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as folder:
            ...     backend = Backend(Path(folder))
            ...     _ = backend.create_table("acct", "Kept")
            ...     backend.close()
            ...     backend.close()  # a second close does nothing
            ...     with Backend(Path(folder)) as reopened:
            ...         reopened.table_name("acct", "kept")
            'Kept'
        """
        with self._write_lock, self._lock:
            if self._store is not None:
                self._store.close(self._last_ts)

    def __enter__(self) -> Backend:
        """Use as a context manager that closes the store on exit.

        Example::

            >>> with Backend() as b:
            ...     _ = b.create_table("acct", "Scoped")
        """
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the store."""
        self.close()

    # -- internals --------------------------------------------------------------------
    def _account(self, name: str) -> _Account:
        account = self._accounts.get(name)
        if account is None:
            account = self._accounts[name] = _Account()
        return account

    def _table(self, account: str, name: str) -> _Table:
        """The table, or 400 for an invalid name, or 404 TableNotFound."""
        table = self._account(account).tables.get(self._naming.key(name))
        if table is None:
            self._naming.validate(name)
            raise errors.table_not_found()
        return table

    def _found_table(self, account: str, name: str) -> _Table | None:
        """The table, or None (:meth:`_table`'s look-up, without its refusal and without
        making the account: the write paths and ``table_name`` read it unlocked, see the
        storage-model comment above ``Backend``)."""
        found = self._accounts.get(account)
        if found is None:
            return None
        return found.tables.get(name.lower() if self._fold else name)

    def _acl_table(self, account: str, name: str) -> _Table:
        """The table an ACL operation names, or 404 ResourceNotFound: the ACL operations
        are plain-XML storage operations and answer a missing table with the storage
        services' common code, not TableNotFound (real account, bearer token:
        azure-sdk-for-python recording test_table_aad.pyTestTableAADtest_aad_access_policy_error,
        Get and Set Table ACL on a missing table -> 404 ResourceNotFound, "The specified
        resource does not exist."; evidence: medium, one recording)."""
        table = self._account(account).tables.get(self._naming.key(name))
        if table is None:
            self._naming.validate(name)
            raise errors.resource_not_found()
        return table

    def _next_timestamp(self, ranks: int = 1) -> int:
        now = self._clock()  # (ranks: new rows' creation ranks from it, unique in Cosmos order)
        if now <= self._last_ts:
            now = self._last_ts + 1
        self._last_ts = now if self._key_order else now + ranks - 1
        return now

    def _durably(self, write: Callable[..., None], *args: object) -> None:
        """Run one store write; an I/O failure becomes ``500 InternalError``.

        Called before the in-memory change, so a failure leaves memory untouched.
        A closed store raises ``RuntimeError`` (a programming error, not a request error).
        """
        try:
            write(*args)
        except (sqlite3.Error, OSError) as exc:  # disk full, I/O error
            raise errors.internal_error() from exc

    def _checking(self) -> AbstractContextManager[None]:
        """The block of a group's checks (write lock held, no write running): a durable
        store's probes read through its writer connection (warm pages)."""
        if self._store is None:
            return nullcontext()
        return self._store.writer_reads()

    def _persist(self, overlay: _Overlay) -> None:
        """Commit the final state of every changed key to disk in one transaction, if durable."""
        if self._store is None:
            return
        groups: dict[int, tuple[_Table, list[Entity], list[Key]]] = {}
        for tbl, _, original, new in overlay.values():
            group = groups.get(id(tbl))
            if group is None:
                group = groups[id(tbl)] = (tbl, [], [])
            if new is None:
                group[2].append(original)
            else:
                group[1].append(new)
        self._durably(
            self._store.write_entity_groups,
            [(tbl.account, tbl.key, puts, deletes) for tbl, puts, deletes in groups.values()],
            self._last_ts,
        )

    # -- tables -----------------------------------------------------------------------
    def create_table(self, account: str, name: str) -> str:
        """Create a table; return its name as created.

        ``400 OutOfRangeInput`` / ``400 InvalidResourceName`` for a bad name,
        ``409 TableAlreadyExists`` if the name exists in any casing.

        Example::

            >>> Backend().create_table("acct", "Orders")
            'Orders'
        """
        self._naming.validate(name)
        with self._write_lock, self._lock:
            acct = self._account(account)
            lname = self._naming.key(name)
            if lname in acct.tables:
                raise errors.table_already_exists()
            if self._being_deleted:
                until = self._being_deleted.get((account, lname))
                if until is not None:
                    if self._monotonic() < until:
                        raise errors.table_being_deleted()
                    del self._being_deleted[(account, lname)]
            if self._store is not None:
                self._durably(self._store.create_table, account, lname, name)
            acct.tables[lname] = _Table(name, account, lname, self._store, not self._key_order)
            return name

    def delete_table(self, account: str, name: str) -> None:
        """Delete a table and its entities and ACL. 404 ResourceNotFound.

        Example::

            >>> b = Backend(); _ = b.create_table("acct", "Tmp"); b.delete_table("acct", "tmp")
            >>> b.table_name("acct", "Tmp") is None
            True
        """
        with self._write_lock, self._lock:
            acct = self._account(account)
            lname = self._naming.key(name)
            if lname not in acct.tables:
                self._naming.validate(name)
                raise errors.resource_not_found()
            if self._store is not None:
                self._durably(self._store.delete_table, account, acct.tables[lname].key)
            del acct.tables[lname]
            if self._deletion_seconds > 0:
                self._being_deleted[(account, lname)] = self._monotonic() + self._deletion_seconds

    def table_key(self, name: str) -> str:
        """The key two table names share exactly when they name the same table (the
        lower-cased name on Storage, the name itself on Cosmos DB).

        Example::

            >>> Backend().table_key("Movies")
            'movies'
        """
        return self._naming.key(name)

    def table_name(self, account: str, name: str) -> str | None:
        """The table's name as created (case-insensitive lookup on Storage), or None.

        Example::

            >>> Backend().table_name("acct", "Missing") is None
            True
        """
        # Every request asks, so no lock: two dict look-ups, each atomic, and no write
        # ever removes an account, so the answer is the table as some moment's state
        # holds it, as under the lock (a table made or deleted meanwhile is seen or not, as
        # the lock would let it be). No account is made for a miss.
        table = self._found_table(account, name)
        return None if table is None else table.name

    def query_tables(
        self,
        account: str,
        predicate: Callable[[str], bool] | None,
        top: int | None,
        next_table_name: str | None,
    ) -> TablePage:
        """Tables in order of their names (lower-cased on Storage), at most ``top``
        (default 1000).

        ``next_table_name`` resumes at that table (inclusive, any casing on Storage). The returned
        ``next_name`` is the next table after the page, present whenever more tables
        follow (they may all fail the predicate: the next page is then empty).

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Bbb"); _ = b.create_table("a", "Aaa")
            >>> b.query_tables("a", None, 1, None)
            TablePage(names=['Aaa'], next_name='Bbb')
        """
        limit = page_size(top)
        with self._lock:
            tables = self._account(account).tables
            start = self._naming.key(next_table_name) if next_table_name else None
            names: list[str] = []
            for lname in tables.irange(minimum=start):
                table_name = tables[lname].name
                if len(names) >= limit:
                    return TablePage(names, table_name)
                if predicate is None or predicate(table_name):
                    names.append(table_name)
            return TablePage(names, None)

    def get_acl(self, account: str, table: str) -> list[SignedIdentifier]:
        """The table's stored access policies. 404 ResourceNotFound for a missing table.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Acl1"); b.get_acl("a", "Acl1")
            []
        """
        with self._lock:
            return list(self._acl_table(account, table).acl)

    def set_acl(self, account: str, table: str, acl: Sequence[SignedIdentifier]) -> None:
        """Replace the table's policies. 404 ResourceNotFound for a missing table.

        More than 5 policies, an Id that is empty or longer than 64 characters, a
        repeated Id, or permission letters outside ``raud`` -> ``400 InvalidXmlDocument``.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Acl2")
            >>> b.set_acl("a", "Acl2", [SignedIdentifier("p1", permission="ra")])
            >>> b.get_acl("a", "Acl2")[0].permission
            'ra'
        """
        policies = checked_acl(acl)
        with self._write_lock, self._lock:
            tbl = self._acl_table(account, table)
            if self._store is not None:
                self._durably(self._store.set_acl, account, tbl.key, acl_to_json(policies))
            tbl.acl = policies

    def get_service_properties(self, account: str) -> bytes | None:
        """The last service-properties XML document stored (None: never set).

        Example::

            >>> Backend().get_service_properties("acct") is None
            True
        """
        with self._lock:
            return self._account(account).service_properties

    def set_service_properties(self, account: str, document: bytes) -> None:
        """Store the (already validated and normalised) service-properties XML document.

        Example::

            >>> b = Backend(); b.set_service_properties("a", b"<StorageServiceProperties/>")
            >>> b.get_service_properties("a")
            b'<StorageServiceProperties/>'
        """
        document = bytes(document)
        with self._write_lock, self._lock:
            if self._store is not None:
                self._durably(self._store.set_service, account, document)
            self._account(account).service_properties = document

    # -- entities ---------------------------------------------------------------------
    def get_entity(self, account: str, table: str, pk: str, rk: str) -> Entity:
        """Point read. 404 TableNotFound / 404 ResourceNotFound.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Pts")
            >>> b.get_entity("a", "Pts", "p", "r")
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 404 ResourceNotFound: The specified resource \
does not exist.
        """
        with self._lock:
            entity = self._table(account, table).rows.get(sort_key(pk, rk))
            if entity is None:
                raise errors.resource_not_found()
            return entity

    def write(self, account: str, table: str, op: WriteOp) -> WriteResult:
        """Apply one write with the service's If-Match matrix (PROTOCOL.md 4.18).

        insert: ``409 EntityAlreadyExists``. replace/merge: If-Match None upserts,
        ``*`` needs the entity (``404 ResourceNotFound``), an ETag must match
        (``412 UpdateConditionNotSatisfied``; malformed ETag ``400 InvalidInput``).
        delete: If-Match required (``400 InvalidInput``), then as for replace.
        Missing table: ``404 TableNotFound``. Validation errors: 400 (``validation``).

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Write1")
            >>> b.write("a", "Write1", WriteOp("replace", "p", "r", if_match="*"))
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 404 ResourceNotFound: The specified resource \
does not exist.
        """
        if self._store is None:
            # commit_group's checks and change for one write, without its bookkeeping
            # (acquire and release: a with statement's look-ups and __exit__ call cost twice)
            write_lock, lock = self._write_lock, self._lock
            write_lock.acquire()
            try:
                lock.acquire()
                try:
                    tbl = self._found_table(account, table) or self._table(account, table)
                    pk, rk = op.pk, op.rk  # (sort_key: an ASCII key is its own)
                    key = (pk, rk) if pk.isascii() and rk.isascii() else sort_key(pk, rk)
                    rows = tbl.rows
                    current = rows.get(key)
                    now = self._next_timestamp()
                    if op.kind != "insert":
                        new = self._apply(op, current, now)
                    elif op.checked and current is None:  # (apply_write, inline)
                        new = Entity(op.pk, op.rk, now, dict(op.props), now, op.keys_at)
                    else:  # (sorted_updates concerns replaces and merges)
                        new = apply_write(op, current, now)
                    rows.apply(key, new)
                finally:
                    lock.release()
            finally:
                write_lock.release()
            return WriteResult(new, current is None and new is not None)
        outcome = self.commit_group([GroupWrite(account, table, [op], batch=False)])[0]
        if isinstance(outcome, StubError):
            raise outcome
        return outcome[0]

    def execute_batch(self, account: str, table: str, ops: Sequence[WriteOp]) -> list[WriteResult]:
        """Apply a change set atomically: all or nothing, in order (PROTOCOL.md 9.1, 9.5).

        Checks, each reported as a StubError with ``index`` set: table exists (``404
        TableNotFound`` at index 0); at most 100 operations (``400 InvalidInput`` at index
        99, the last operation allowed); one PartitionKey
        (``CommandsInBatchActOnDifferentPartitions`` at the first offender); each entity
        once (``InvalidDuplicateRow`` at the second occurrence). Then the operations run
        in order against a private view of the partition with the single-operation rules;
        the first failure raises with its index and nothing is applied. All entities of
        a successful batch share one Timestamp.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Batch1")
            >>> ops = [WriteOp("insert", "p", "1"), WriteOp("insert", "q", "2")]
            >>> b.execute_batch("a", "Batch1", ops)
            Traceback (most recent call last):
            ...
            azt_server_stub.errors.StubError: 400 CommandsInBatchActOnDifferentPartitions: \
All commands in a batch must operate on same entity group.
        """
        if self._store is None:
            # commit_group's checks and changes for one change set, without its overlay
            with self._write_lock, self._lock:
                try:
                    tbl = self._table(account, table)
                except StubError as exc:
                    raise exc.at(0) from None
                results, changes = self._change_set(tbl, ops, {})
                tbl.rows.apply_all(changes)  # only once every operation passed
                return results
        outcome = self.commit_group([GroupWrite(account, table, list(ops), batch=True)])[0]
        if isinstance(outcome, StubError):
            raise outcome
        return outcome

    def commit_group(self, items: Sequence[GroupWrite]) -> list[list[WriteResult] | StubError]:
        """Run several write requests as one durable commit (group commit); per-item outcomes.

        Each item is a single write or a change set with exactly the rules of
        :meth:`write` / :meth:`execute_batch`, run in order against the state the
        earlier items leave. A refused item changes nothing and its outcome is the
        error; the others are committed to disk together (one transaction, one fsync),
        then applied in memory at once, so a reader sees all of them or none. A disk
        failure raises ``500 InternalError`` for the whole group, with nothing applied.

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Group1")
            >>> out = b.commit_group([
            ...     GroupWrite("a", "Group1", [WriteOp("insert", "p", "1")]),
            ...     GroupWrite("a", "Group1", [WriteOp("insert", "p", "1")]),
            ... ])
            >>> out[0][0].created, out[1].code
            (True, 'EntityAlreadyExists')
        """
        if len(items) == 1 and self._store is not None:
            item = items[0]
            if not item.batch and item.ops[0].kind == "insert":
                outcome = self.insert_alone(item.account, item.table, item.ops[0])
                return [outcome if isinstance(outcome, StubError) else [outcome]]
            if item.batch:
                inserted = self.inserts_alone(item.account, item.table, item.ops)
                if inserted is not None:
                    return [inserted]
        with self._write_lock:
            outcomes: list[list[WriteResult] | StubError] = []
            overlay: _Overlay = {}
            with self._lock, self._checking():
                read = self._read_inserts(items)
                for item in items:
                    try:
                        outcomes.append(self._check_item(item, overlay, read))
                    except StubError as exc:
                        outcomes.append(exc)
            if not overlay:
                return outcomes
            self._persist(overlay)
            with self._lock:
                for tbl, key, _, new in overlay.values():
                    tbl.rows.apply(key, new)
            return outcomes

    def insert_alone(self, account: str, table: str, op: WriteOp) -> WriteResult | StubError:
        """:meth:`commit_group` of one insert (``op``) on disk, without a group: the same
        checks in the same order (table, then the entity, then the key's absence), the
        key's absence checked by the store's insert itself rather than by a read before
        it; the refusal returned, a disk failure raised (``500 InternalError``).

        Example::

            outcome = backend.insert_alone("devstoreaccount1", "t", WriteOp("insert", "p", "r"))
        """
        store = self._store
        if store is None:
            raise RuntimeError("insert_alone needs a durable store")
        # Only the write lock: every change to the tables is made holding it, so the
        # table found stays; nothing in memory changes (the table's rows read the store),
        # and the last Timestamp is read and written by writers alone, holding it.
        # (acquire and release: a with statement's look-ups and __exit__ call cost twice)
        lock = self._write_lock
        lock.acquire()
        try:
            tbl = self._found_table(account, table)
            if tbl is None:
                with self._lock:
                    try:
                        self._table(account, table)  # (the refusal it raises)
                    except StubError as exc:
                        return exc
                raise AssertionError("_table found a table the lookup did not")
            now = self._next_timestamp()
            if op.checked:  # (apply_write of a checked insert, inline)
                new = Entity(op.pk, op.rk, now, dict(op.props), now, op.keys_at)
            else:
                try:
                    applied = apply_write(op, None, now)
                except StubError as exc:
                    return exc
                assert applied is not None
                new = applied
            try:
                stored = store.insert_new_entity(tbl.account, tbl.key, new, now)
            except (sqlite3.Error, OSError) as exc:  # disk full, I/O error
                raise errors.internal_error() from exc
        finally:
            lock.release()
        if not stored:  # (stored: nothing to apply, the table's rows read the store)
            return errors.entity_already_exists()
        return WriteResult(new, True)  # created

    def inserts_alone(
        self, account: str, table: str, ops: Sequence[WriteOp]
    ) -> list[WriteResult] | None:
        """:meth:`commit_group` of one change set of new entities on disk, without a
        group, or None: the change set is not one this path takes (anything but checked
        inserts into one partition with distinct RowKeys, at most :data:`MAX_BATCH`; a
        table not found) or one of its keys is stored already, and nothing was changed;
        the general path then decides the answer (the refusal and its index). The keys'
        absence is checked by the store's inserts themselves, not by a read before them
        (as :meth:`insert_alone`); the entities are what :meth:`_change_set` makes of
        them. A disk failure raises ``500 InternalError``.

        Example::

            results = backend.inserts_alone("devstoreaccount1", "t", change_set_ops)
        """
        store = self._store
        if store is None or not 0 < len(ops) <= MAX_BATCH:
            return None
        pk = ops[0].pk
        for op in ops:
            if op.kind != "insert" or not op.checked or op.pk != pk:
                return None
        if len({op.rk for op in ops}) != len(ops):
            return None
        lock = self._write_lock
        lock.acquire()
        try:
            tbl = self._found_table(account, table)
            if tbl is None:
                return None
            last = self._last_ts
            now = self._next_timestamp(len(ops))
            entities = [
                Entity(op.pk, op.rk, now, dict(op.props), now + i, op.keys_at)
                for i, op in enumerate(ops)
            ]
            try:
                store.write_entity_groups(
                    [(tbl.account, tbl.key, entities, ())], self._last_ts, new=True
                )
            except sqlite3.IntegrityError:  # a key stored already: rolled back
                self._last_ts = last  # (nothing issued: the general path's Timestamps)
                return None
            except (sqlite3.Error, OSError) as exc:  # disk full, I/O error
                raise errors.internal_error() from exc
        finally:
            lock.release()
        return [WriteResult(entity, True) for entity in entities]

    def _read_inserts(self, items: Sequence[GroupWrite]) -> _Read:
        """What a durable group's single inserts find: one indexed read per partition two
        or more of them write, not a point read each (a new key is never in the cache)."""
        wanted: list[tuple[int, TableRows, Key]] = []
        for item in items if self._store is not None and len(items) > 1 else ():
            if not item.batch and item.ops[0].kind == "insert":
                with suppress(StubError):  # (refused by the checks, in their order)
                    tbl = self._table(item.account, item.table)
                    wanted.append((id(tbl), tbl.rows, sort_key(item.ops[0].pk, item.ops[0].rk)))
        return read_ahead(wanted)

    def _check_item(self, item: GroupWrite, overlay: _Overlay, read: _Read) -> list[WriteResult]:
        """Check one write request against the state plus ``overlay``; record its changes."""
        ops = item.ops
        if not item.batch:
            op = ops[0]
            tbl = self._table(item.account, item.table)
            key = sort_key(op.pk, op.rk)
            current = _current(tbl, key, overlay, read)
            new = self._apply(op, current, self._next_timestamp())
            overlay[(id(tbl), key)] = (tbl, key, (op.pk, op.rk), new)
            return [WriteResult(new, created=current is None and new is not None)]
        try:
            tbl = self._table(item.account, item.table)
        except StubError as exc:
            raise exc.at(0) from None
        results, changes = self._change_set(tbl, ops, overlay)
        tid = id(tbl)
        for key, original, new in changes:  # only once every operation passed: all or nothing
            overlay[(tid, key)] = (tbl, key, original, new)
        return results

    def _change_set(
        self, tbl: _Table, ops: Sequence[WriteOp], overlay: _Overlay
    ) -> tuple[list[WriteResult], list[tuple[Key, Key, Entity | None]]]:
        """Check a change set on ``tbl`` against the state plus ``overlay``: its results and
        its changes ``(sort key, (PartitionKey, RowKey), new entity or None)``, in order,
        for the caller to record once it returns (a refusal raises, with its index, having
        recorded nothing)."""
        if len(ops) > MAX_BATCH:
            raise errors.batch_too_many_operations().at(MAX_BATCH - 1)
        if not ops:
            return [], []
        pk = ops[0].pk
        for i, op in enumerate(ops):
            if op.pk != pk:
                raise errors.commands_in_batch_act_on_different_partitions().at(i)
        rks = [op.rk for op in ops]
        if len(set(rks)) != len(rks):  # the first repeated RowKey's operation is the culprit
            seen: set[str] = set()
            for i, rk in enumerate(rks):
                if rk in seen:
                    raise errors.invalid_duplicate_row().at(i)
                seen.add(rk)
        timestamp = self._next_timestamp(len(ops))
        changes: list[tuple[Key, Key, Entity | None]] = []
        results: list[WriteResult] = []
        spk, tid = sort_str(pk), id(tbl)  # one partition: its sort string once
        # (an ASCII RowKey is its own sort string: sort_str's first test, without the call)
        keys = [(spk, rk if rk.isascii() else sort_str(rk)) for rk in rks]
        # read at once what the group has not written yet
        unread = [key[1] for key in keys if not overlay or (tid, key) not in overlay]
        stored = tbl.rows.get_partition_rows(spk, unread) if unread else {}
        apply = self._apply
        for i, (key, op) in enumerate(zip(keys, ops, strict=True)):
            pending = overlay.get((tid, key)) if overlay else None
            current = pending[3] if pending is not None else stored.get(key)
            if current is None and op.checked and op.kind == "insert":
                # apply_write's insert of a new key whose entity is known valid, inline
                new: Entity | None = Entity(
                    op.pk, op.rk, timestamp, dict(op.props), timestamp + i, op.keys_at
                )
                changes.append((key, (op.pk, op.rk), new))
                results.append(WriteResult(new, True))
                continue
            try:
                new = apply(op, current, timestamp, timestamp + i)
            except StubError as exc:
                raise exc.at(i) from None
            changes.append((key, (op.pk, op.rk), new))
            results.append(WriteResult(new, current is None and new is not None))
        return results, changes

    def query_entities(
        self,
        account: str,
        table: str,
        flt: EntityFilter | None,
        top: int | None,
        start_after: tuple[str, str] | None,
        restrict: Callable[[str, str], bool] | None = None,
        *,
        scan_budget: int | None = None,
        boundaries: Sequence[str] | None = None,
        start_rank: int | None = None,
    ) -> QueryPage:
        """One page in ordinal order, at most ``top`` (default and max 1000).

        ``start_after`` is the continuation (NextPartitionKey, NextRowKey): the page starts
        at that key, inclusive. ``restrict`` (a SAS key range) excludes keys it rejects.
        Only the filter's ranges are scanned, from the continuation key: O(log n + k).

        The page ends early, with ``next_key`` set, when ``top`` entities matched (the
        next key is the next entity in the ranges, matching or not), when ``scan_budget``
        entities were examined, or when the scan reaches a PartitionKey ``boundary``
        above the page's starting PartitionKey (hooks for range-partition realism; a
        page may then be empty). ``scan_budget`` must be >= 1.

        Without ``key_order`` (the Cosmos flavour) the page is cut the same way from the
        matching ranges in :func:`~azt_server_stub.query_pages.cosmos_order` (creation order;
        the continuation: ``next_key`` and ``next_rank``; ``boundaries`` do not apply).

        Example::

            >>> b = Backend(); _ = b.create_table("a", "Query1")
            >>> for rk in "abc":
            ...     _ = b.write("a", "Query1", WriteOp("insert", "p", rk))
            >>> page = b.query_entities("a", "Query1", None, 2, None)
            >>> [e.rk for e in page.entities], page.next_key
            (['a', 'b'], ('p', 'c'))
        """
        limit = page_size(top)
        if scan_budget is not None and scan_budget < 1:
            raise ValueError("scan_budget must be at least 1")
        with self._lock:
            rows = self._table(account, table).rows
            ranges = [(("", ""), None)] if flt is None else flt.ranges
            sorted_ranges = [
                (sort_key(*lo), None if hi is None else sort_key(*hi)) for lo, hi in ranges
            ]
            if not sorted_ranges:
                return QueryPage([], None, 0)
            sorted_ranges.sort(key=range_lo)
            if not self._key_order:
                cut = (limit, start_after, restrict, scan_budget, start_rank)
                with rows.snapshot():  # one committed state for the whole page
                    return unordered_page(rows, sorted_ranges, flt, *cut)
            start = sorted_ranges[0][0]
            if start_after is not None:
                start = max(start, sort_key(*start_after))
            stop: Key | None = None
            if boundaries:
                bounds = sorted(sort_str(b) for b in boundaries)
                i = bisect.bisect_right(bounds, start[0])
                if i < len(bounds):
                    stop = (bounds[i], "")
            # An exact filter's ranges hold only matches (the planner's promise).
            matches = None if flt is None or getattr(flt, "exact", False) else flt.matches
            found: list[Entity] = []
            scanned = 0
            with rows.snapshot():
                if stop is None and scan_budget is None and restrict is None and matches is None:
                    # All in the ranges match: the page is their first ``limit``, the next
                    # key the one after (what the loop below finds, without its steps).
                    found = rows.take(sorted_ranges, start, limit + 1)
                    after = found.pop() if len(found) > limit else None
                    return QueryPage(found, None if after is None else after.key, len(found))
                scan = rows.scan(sorted_ranges, start, limit + 1)
                for key, entity in scan:
                    if (stop is not None and key >= stop) or scanned == scan_budget:
                        return QueryPage(found, (entity.pk, entity.rk), scanned)
                    scanned += 1
                    if restrict is not None and not restrict(entity.pk, entity.rk):
                        continue
                    if matches is not None and not matches(entity):
                        continue
                    found.append(entity)
                    if len(found) >= limit:
                        following = next(scan, None)
                        next_key = None if following is None else following[1].key
                        return QueryPage(found, next_key, scanned)
                return QueryPage(found, None, scanned)
