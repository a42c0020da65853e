"""Durable SQLite store of the stub's ``--location`` mode (private).

The store is the durable backend's storage, read through (nothing is loaded at
start but table metadata, ACLs and service documents). Entities live in one
``WITHOUT ROWID`` table keyed by ``(tid, pk, rk)``: ``tid`` numbers the table,
``pk``/``rk`` are BLOBs of the key's UTF-16-BE code units, so SQLite's bytewise
(memcmp) order of the key equals the service's UTF-16 code-unit order
(:func:`key_blob`) and a key range is one indexed ``(pk, rk) >= (?, ?)`` scan:
O(log n + k).

One writer connection (WAL journal, ``synchronous=FULL``; ``NORMAL`` at ``process``
durability) commits each write, or a group of writes, as one transaction; one reader
connection serves reads from the last committed state, so readers never wait for an
fsync and never see half a transaction (a write's own checks read through the writer
connection: :meth:`SqliteStore.writer_reads`). A lock file keeps a location to one store
at a time. Properties are stored as lossless JSON (:mod:`~azt_server_stub._props`).

At ``process`` durability writes go through a write-behind log
(:mod:`~azt_server_stub._writelog`): each is acknowledged once appended to it, and its
statements run in one open transaction committed in groups; reads of the committed state
commit it first.

Example::

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     store = SqliteStore(Path(folder), durability="process")
    ...     store.create_table("acct", "t", "T")
    ...     logged = store.insert_new_entity("acct", "t", Entity("p", "r", 5), 5)
    ...     found = store.get("acct", "t", "p", "r")  # (commits the logged insert first)
    ...     store.close()
    >>> logged, found.timestamp
    (True, 5)
"""

from __future__ import annotations

import json
import sqlite3
import threading
from codecs import utf_16_be_encode
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ._props import decode_props, encode_props
from ._rowcache import DEFAULT_CACHE_BYTES, RowCache, RowKey, entry_size
from ._sql import DELETE as _DELETE
from ._sql import (
    LOCK_FILE,
    SYNCHRONOUS,
    TIMESTAMP_RESERVE,
    add_columns,
    connect,
    key_blob,
    key_param,
    key_text,
    lock_directory,
    migrate_v1,
    partition_params,
    put_rows,
)
from ._sql import PARTITIONS as _PARTITIONS
from ._sql import PUT_NEW as _PUT_NEW
from ._sql import SCHEMA as _SCHEMA
from ._sql import SET_LAST as _SET_LAST
from ._sql import read_last as _read_last
from ._sql import write_last as _write_last
from ._writelog import (
    FLUSH_BYTES,
    FLUSH_RECORDS,
    LOG_FILE,
    Flusher,
    WriteLog,
    encode_insert,
    encode_record,
    replay,
)
from .model import Entity
from .query_pages import sort_str

DB_FILE = "azt-stub.sqlite3"

_ROW = "SELECT pk, rk, ts, props, created, keys_at FROM entity_rows WHERE tid = ? AND "
_GET = _ROW + "pk = ? AND rk = ?"
_GET_ROWS = _ROW + "pk = ? AND rk IN ({})"
_ANY_ROW_BETWEEN = "SELECT 1 FROM entity_rows WHERE tid=? AND pk=? AND rk BETWEEN ? AND ? LIMIT 1"
#: Most RowKeys one read of :meth:`SqliteStore.get_rows` asks for (SQLite's parameter limit).
_ROWS_PER_READ = 500
_SCAN = _ROW + "(pk, rk) {op} (?, ?)"
_SCAN_FROM = _SCAN.format(op=">=") + " ORDER BY pk, rk LIMIT ?"
_SCAN_AFTER = _SCAN.format(op=">") + " ORDER BY pk, rk LIMIT ?"
_SCAN_FROM_TO = _SCAN.format(op=">=") + " AND (pk, rk) < (?, ?) ORDER BY pk, rk LIMIT ?"
_SCAN_AFTER_TO = _SCAN.format(op=">") + " AND (pk, rk) < (?, ?) ORDER BY pk, rk LIMIT ?"
#: The creation-order index (:meth:`SqliteStore.scan_created`): the Cosmos order of a
#: table's rows, ``query_pages.cosmos_order`` (the key BLOBs sort as UTF-16 code units).
_CREATED_INDEX = (
    "CREATE INDEX IF NOT EXISTS entity_rows_created ON entity_rows (tid, created, pk, rk)"
)
_SCAN_CREATED = _ROW + "(created, pk, rk) >= (?, ?, ?) ORDER BY created, pk, rk LIMIT ?"
_SCAN_CREATED_AFTER = _ROW + "(created, pk, rk) > (?, ?, ?) ORDER BY created, pk, rk LIMIT ?"


@dataclass(slots=True)
class LoadedTable:
    """A table's metadata as read back from disk (its entities stay on disk)."""

    name: str
    acl: list[dict[str, str | None]]


@dataclass(slots=True)
class LoadedState:
    """What is read at start: ``tables[account][lower name]``, service documents, and
    ``last_timestamp``, at or above every Timestamp issued (see :data:`TIMESTAMP_RESERVE`)."""

    tables: dict[str, dict[str, LoadedTable]]
    service: dict[str, bytes]
    last_timestamp: int


class SqliteStore:
    """The durable storage of the backend: one SQLite database in ``directory``.

    Methods are thread-safe: writes run one at a time on the writer connection,
    reads on the reader connection (after :meth:`close`, on a short-lived read-only
    connection, so a closed store still answers reads but refuses writes).

    Rows read are decoded once: a :class:`~azt_server_stub._rowcache.RowCache` of at most
    ``cache_bytes`` (estimated) keeps the entities, each used again only for a row read
    later with the same key and Timestamp (the same stored version).

    ``creation_index``: keep the index of rows in creation order on ``(tid, created, pk,
    rk)`` (the Cosmos flavour's query order, :meth:`scan_created`), built when a store
    written without it is opened; once built it is kept up to date by SQLite on every write.
    """

    def __init__(
        self,
        directory: Path,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        durability: str = "full",
        creation_index: bool = False,
        write_behind: bool | None = None,
    ) -> None:
        if durability not in SYNCHRONOUS:
            raise ValueError(f"durability must be one of {sorted(SYNCHRONOUS)}, not {durability!r}")
        directory.mkdir(parents=True, exist_ok=True)
        self.durability = durability
        self.path = directory / DB_FILE
        self._lock_handle: IO[bytes] | None = lock_directory(directory)
        self._db: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.RLock()
        self._tids: dict[tuple[str, str], int] = {}
        self._partitions = _PARTITIONS  # (imported, its get() would make a bound method)
        self._cache = RowCache(cache_bytes)  # used with the read lock held
        #: Write transactions begun and ended (odd: one is open); see _rowcache.
        self._writes = 0
        #: (tid, PartitionKey blob) -> the write count when a write last began to change a
        #: row of that partition (odd); bounded, see :meth:`_touch`.
        self._touched: dict[tuple[int, bytes], int] = {}
        #: Verified entries stamped below this count lapse whatever their partition: a
        #: write whose rows are not tracked (:meth:`transaction`) or a forgotten map.
        self._touch_floor = 0
        #: The thread whose reads use the writer connection (:meth:`writer_reads`), or 0.
        self._writer_reads = 0
        #: The stored bound of the Timestamps issued (see :data:`TIMESTAMP_RESERVE`), and
        #: the last Timestamp a commit stored (the bound read at open until one does).
        self._reserved = self._committed = 0
        #: Held while the writer connection is used (a write, a commit, a write's checks).
        self._write_mutex = threading.RLock()
        #: The write-behind log (``process`` durability, see _writelog), and whether the
        #: writer connection holds an open transaction of logged writes.
        self._log: WriteLog | None = None
        self._flusher: Flusher | None = None
        #: Wakes the flusher after a logged write (no-op without a log).
        self._wake: Callable[[], None] = _no_flusher
        self._pending = False
        try:
            self._db = db = connect(self.path, timeout=5.0, durability=durability)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            migrate_v1(db)
            add_columns(db)
            if creation_index:  # built once, for a store written without it
                db.execute(_CREATED_INDEX)
            replay(db, directory / LOG_FILE)  # what a killed stub acknowledged
            if durability == "process" if write_behind is None else write_behind:
                self._log = WriteLog(directory / LOG_FILE)
                self._flusher = Flusher(self.flush)
                self._wake = self._flusher.wake
                self._insert_cursor = db.cursor()
            else:
                (directory / LOG_FILE).unlink(missing_ok=True)
            self._reader = connect(self.path, timeout=5.0, durability=durability)
            self._reader.execute("PRAGMA query_only=ON")
            for account, lname, tid in db.execute("SELECT account, lname, tid FROM table_meta"):
                self._tids[(account, lname)] = tid
            self._reserved = self._committed = _read_last(db)
        except BaseException:
            self._close_connections()
            raise

    @property
    def db(self) -> sqlite3.Connection:
        """The open writer connection (``RuntimeError`` after :meth:`close`)."""
        if self._db is None:
            raise RuntimeError("the durable store is closed")
        return self._db

    def _close_connections(self) -> None:
        if self._flusher is not None:
            self._flusher.stop()
            self._flusher = None
        if self._log is not None:  # (kept on disk while its writes are not committed)
            self._log.close(remove=not self._pending)
            self._log = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._db is not None:
            try:
                if not self._db.in_transaction:  # (else rolled back: the log keeps its writes)
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._db.close()
                self._db = None
        if self._lock_handle is not None:
            self._lock_handle.close()
            self._lock_handle = None

    def close(self, last_timestamp: int | None = None) -> None:
        """Checkpoint and close the database and release the location; idempotent.

        ``last_timestamp``, the last Timestamp issued, replaces the stored bound (which
        may be ahead of it, see :data:`TIMESTAMP_RESERVE`): a clean restart continues
        from the exact last Timestamp. Never lowered below a Timestamp a commit stored.
        """
        if self._flusher is not None:
            self._flusher.stop()
            self._flusher = None
        if self._pending:
            with suppress(sqlite3.Error, OSError):  # (else the log is replayed at next open)
                self.flush()
        with self._read_lock:
            self._cache.clear()
            db = self._db
            if (
                db is not None
                and not self._pending
                and last_timestamp is not None
                and max(last_timestamp, self._committed) < self._reserved
            ):
                with suppress(sqlite3.Error):  # (else the bound on disk stays: still safe)
                    db.execute(_SET_LAST, (max(last_timestamp, self._committed),))
            self._close_connections()

    def flush(self) -> None:
        """Commit the writes logged so far (write-behind, see _writelog) to SQLite and
        empty the log; no-op when none is pending. A failed commit is replayed from the
        log, which stays until a commit succeeds (``sqlite3.Error``/``OSError`` raised)."""
        with self._write_mutex:
            if not self._pending:
                return
            db, log = self.db, self._log
            assert log is not None
            try:
                db.execute("COMMIT")
            except sqlite3.Error:  # rolled back or not: the log holds every logged write
                if db.in_transaction:
                    db.execute("ROLLBACK")
                replay(db, log.path)
            log.reset()
            self._pending = False

    def _begin_logged(self, db: sqlite3.Connection) -> None:
        """Open the transaction of logged writes, if none is (call with the mutex held)."""
        if not db.in_transaction:
            if self._pending:  # logged writes not in SQLite (a failing disk rolled them
                self.flush()  # back): replayed from the log, or raises: write refused
            db.execute("BEGIN IMMEDIATE")
            self._pending = True

    def _flush_if_full(self) -> None:
        """Commit the logged writes at once past the log's thresholds (a write's last step)."""
        log = self._log
        if log is not None and (log.records >= FLUSH_RECORDS or log.size >= FLUSH_BYTES):
            with suppress(sqlite3.Error, OSError):  # (the writes are logged: acknowledged)
                self.flush()

    def _settle(self) -> None:
        """Before a read of the committed state: commit the logged writes (unless this
        thread's reads use the writer connection, which sees them)."""
        if self._writer_reads != threading.get_ident():
            self.flush()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed (and synced) when the block ends (the logged
        writes are committed before it)."""
        with self._write_mutex:
            self.flush()
            db = self.db
            self._writes += 1  # before anything changes: the cache's verified rows lapse
            self._touch_floor = self._writes + 1  # (rows of any partition may change)
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            finally:
                self._writes += 1

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Hold one read transaction: every read inside the block sees the same
        committed state (a commit landing meanwhile is seen after the block)."""
        if self._pending:
            self._settle()
        with self._read_lock:
            reader = self._reader
            if reader is None or reader.in_transaction:
                yield
                return
            reader.execute("BEGIN")
            try:
                yield
            finally:
                reader.execute("COMMIT")

    @contextmanager
    def writer_reads(self) -> Iterator[None]:
        """Inside the block, this thread's reads use the writer connection (the last
        committed state and the logged writes): call it with the store's writes serialized
        and none running, as the backend's write checks are. The writer's page cache stays
        warm across its own commits, where the reader's is dropped after each commit."""
        with self._write_mutex:  # (no commit of logged writes meanwhile)
            if self._pending and self._db is not None and not self._db.in_transaction:
                self.flush()  # (logged writes a failing disk rolled back: replayed first)
            owner = self._writer_reads
            self._writer_reads = threading.get_ident()
            try:
                yield
            finally:
                self._writer_reads = owner

    def _connection(self) -> sqlite3.Connection | None:
        """The connection this thread reads with (call with the read lock held): the
        writer's inside :meth:`writer_reads`, else the reader's; None once closed."""
        if self._writer_reads == threading.get_ident() and self._db is not None:
            return self._db
        return self._reader

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        if self._pending:
            self._settle()
        with self._read_lock:
            db = self._connection()
            if db is not None:
                yield db
                return
            uri = self.path.resolve().as_uri() + "?mode=ro"
            with closing(sqlite3.connect(uri, uri=True, check_same_thread=False)) as db:
                yield db

    def load(self) -> LoadedState:
        """Read what start needs: tables and their ACLs, service documents, last Timestamp.

        Entities are not read: :meth:`get` and :meth:`scan` read them when asked.
        """
        with self._reading() as db:
            last = _read_last(db)
            tables: dict[str, dict[str, LoadedTable]] = {}
            for account, lname, name, acl in db.execute(
                "SELECT account, lname, name, acl FROM table_meta"
            ):
                tables.setdefault(account, {})[lname] = LoadedTable(name, json.loads(acl))
            service = {
                account: bytes(doc)
                for account, doc in db.execute("SELECT account, doc FROM service")
            }
        return LoadedState(tables, service, last)

    # -- reads -------------------------------------------------------------------------

    def _entities(
        self, tid: int, rows: Iterable[tuple[bytes, bytes, int, str, int, int]]
    ) -> list[Entity]:
        """The entities of rows of table ``tid`` (call with the read lock held): a row
        whose stored version (key, Timestamp) was decoded before is that entity, others
        are decoded and kept (a PartitionKey decoded once per run of rows sharing it)."""
        cache = self._cache
        entry_of = cache.entry_of  # RowCache.get's lookup, inline (a page reads 1,000 rows)
        keep = cache.put
        out: list[Entity] = []
        last_blob: bytes | None = None
        pk = ""
        for pk_blob, rk_blob, ts, props, created, keys_at in rows:
            key = (tid, pk_blob, rk_blob)
            entry = entry_of(key)
            if entry is not None and entry[0].timestamp == ts:
                entity = entry[0]
            else:
                if pk_blob != last_blob:
                    last_blob, pk = pk_blob, key_text(pk_blob)
                rk = key_text(rk_blob)
                entity = Entity(pk, rk, ts, decode_props(props), created, keys_at)
                keep(key, entity, entry_size(key, len(props)))
            out.append(entity)
        return out

    def get(self, account: str, lname: str, pk: str, rk: str) -> Entity | None:
        """The stored entity at a key, or None (also for an unknown table).

        ``pk``/``rk`` may be the keys or their sort strings (the same code units).
        """
        tid = self._tids.get((account, lname))
        if tid is None:
            return None
        key = (
            tid,
            utf_16_be_encode(pk, "surrogatepass")[0],  # (key_blob, inline)
            utf_16_be_encode(rk, "surrogatepass")[0],
        )
        if self._pending:
            self._settle()
        with self._read_lock:
            db = self._connection()
            if db is not None:
                return self._get_on(db, key)
            with self._reading() as closed:  # a closed store's short-lived connection
                return self._get_on(closed, key)

    def _get_on(self, db: sqlite3.Connection, key: RowKey) -> Entity | None:
        """:meth:`get` on ``db`` (call with the read lock held); ``key`` as stored."""
        writes = self._writes
        latest = not db.in_transaction and not writes & 1  # reads the last commit
        if latest:
            touched = self._touched.get((key[0], key[1]), -1)
            since = max(touched + 1, self._touch_floor)
            entity = self._cache.current(key, since)
            if entity is not None:  # verified, and no write to its partition since
                return entity
        rows = db.execute(_GET, (key[0], bytearray(key[1]), bytearray(key[2]))).fetchall()
        if not rows:
            return None
        entity = self._entities(key[0], rows)[0]
        if latest and self._writes == writes:  # no write began meanwhile
            self._cache.verify(key, entity, writes)
        return entity

    def get_rows(self, account: str, lname: str, pk: str, rks: Sequence[str]) -> list[Entity]:
        """The stored entities of one partition among the RowKeys ``rks`` (those found, in
        no particular order): a change set's current rows in one indexed read.

        ``pk``/``rks`` may be the keys or their sort strings (the same code units).
        """
        tid = self._tids.get((account, lname))
        if tid is None or not rks:
            return []
        pk_blob = key_param(pk)
        found: list[Entity] = []
        with self._reading() as db:
            # No row from the least to the greatest RowKey asked (a change set into a new
            # partition, or appending to one): nothing to read, one index probe. The least
            # and greatest are found among the sort strings (code-point order is UTF-16
            # order there), so only those two are encoded for it.
            if len(rks) > 1:
                ordered = list(map(sort_str, rks))
                lo, hi = min(ordered), max(ordered)
            else:
                lo = hi = rks[0]
            probe = (tid, pk_blob, key_param(lo), key_param(hi))
            if db.execute(_ANY_ROW_BETWEEN, probe).fetchone() is None:
                return found
            blobs = [key_param(rk) for rk in rks]
            for at in range(0, len(blobs), _ROWS_PER_READ):
                chunk = blobs[at : at + _ROWS_PER_READ]
                sql = _GET_ROWS.format(", ".join("?" * len(chunk)))
                found += self._entities(tid, db.execute(sql, (tid, pk_blob, *chunk)))
        return found

    def scan(
        self,
        account: str,
        lname: str,
        lo: tuple[str, str],
        hi: tuple[str, str] | None,
        limit: int,
        *,
        after: bool = False,
    ) -> list[Entity]:
        """At most ``limit`` entities from ``lo`` (inclusive; exclusive with ``after``)
        below ``hi`` (exclusive; None: unbounded), in UTF-16 key order. One indexed read."""
        tid = self._tids.get((account, lname))
        if tid is None:
            return []
        args: tuple[Any, ...] = (tid, key_param(lo[0]), key_param(lo[1]))
        if hi is None:
            sql = _SCAN_AFTER if after else _SCAN_FROM
        else:
            sql = _SCAN_AFTER_TO if after else _SCAN_FROM_TO
            args += (key_param(hi[0]), key_param(hi[1]))
        with self._reading() as db:
            rows = db.execute(sql, (*args, limit)).fetchall()
            return self._entities(tid, rows)

    def scan_created(
        self,
        account: str,
        lname: str,
        start: tuple[int, str, str],
        limit: int,
        *,
        after: bool = False,
    ) -> list[Entity]:
        """At most ``limit`` entities from the position ``start`` (creation rank, key;
        inclusive; exclusive with ``after``) in Cosmos order: by creation rank, then UTF-16
        key. One read of the creation-order index when the store was opened with
        ``creation_index`` (without it, a sort of the table's rows)."""
        tid = self._tids.get((account, lname))
        if tid is None:
            return []
        sql = _SCAN_CREATED_AFTER if after else _SCAN_CREATED
        args = (tid, start[0], key_param(start[1]), key_param(start[2]), limit)
        with self._reading() as db:
            return self._entities(tid, db.execute(sql, args).fetchall())

    # -- writes (each one transaction) ---------------------------------------------------

    def create_table(self, account: str, lname: str, name: str) -> None:
        """Persist a new, empty table."""
        with self.transaction() as db:
            old = self._tids.get((account, lname))
            if old is not None:
                db.execute("DELETE FROM entity_rows WHERE tid = ?", (old,))
            row = db.execute("SELECT v FROM meta WHERE k = 'next_tid'").fetchone()
            tid = int(row[0]) if row else 1
            db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES ('next_tid', ?)", (tid + 1,))
            db.execute(
                "INSERT OR REPLACE INTO table_meta (account, lname, name, acl, tid) "
                "VALUES (?, ?, ?, '[]', ?)",
                (account, lname, name, tid),
            )
        self._tids[(account, lname)] = tid
        if old is not None:
            with self._read_lock:
                self._cache.forget_table(old)

    def delete_table(self, account: str, lname: str) -> None:
        """Forget a table, its entities and its ACL."""
        tid = self._tids.get((account, lname))
        with self.transaction() as db:
            db.execute("DELETE FROM table_meta WHERE account = ? AND lname = ?", (account, lname))
            if tid is not None:
                db.execute("DELETE FROM entity_rows WHERE tid = ?", (tid,))
        self._tids.pop((account, lname), None)
        if tid is not None:
            with self._read_lock:
                self._cache.forget_table(tid)

    def set_acl(self, account: str, lname: str, acl: list[dict[str, str | None]]) -> None:
        """Replace a table's stored access policies."""
        with self.transaction() as db:
            db.execute(
                "UPDATE table_meta SET acl = ? WHERE account = ? AND lname = ?",
                (json.dumps(acl), account, lname),
            )

    def set_service(self, account: str, document: bytes) -> None:
        """Store an account's service-properties document."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO service (account, doc) VALUES (?, ?)", (account, document)
            )

    def insert_new_entity(
        self, account: str, lname: str, entity: Entity, last_timestamp: int
    ) -> bool:
        """Store an entity whose key is not stored yet, with the last Timestamp issued, in
        one transaction; False (nothing changed) when the key is stored already. The
        insert's own uniqueness check is the existence check: no read before it."""
        tid = self._tids.get((account, lname))
        if tid is None:
            raise RuntimeError(f"no stored table {lname!r} in account {account!r}")
        pk = entity.pk
        keys = self._partitions.get(pk)  # (a partition's inserts share its key's blob)
        if keys is None:
            keys = partition_params(pk)
        row = (
            tid,
            keys[1],
            bytearray(utf_16_be_encode(entity.rk, "surrogatepass")[0]),  # (key_param, inline)
            entity.timestamp,
            encode_props(entity.props),
            entity.created,
            entity.keys_at,
        )
        db = self._db
        if db is None:
            raise RuntimeError("the durable store is closed")
        log = self._log
        if log is not None:
            # The INSERT in the open transaction (it sees the logged writes), then logged.
            mutex = self._write_mutex  # (acquire and release: cheaper than a with)
            mutex.acquire()
            try:
                if not db.in_transaction:  # (also after a failing disk rolled it back)
                    self._begin_logged(db)
                self._writes += 1  # before anything changes: the cache's verified rows lapse
                touched = self._touched
                if len(touched) < _TOUCHED_MAX:  # (_touch, inline)
                    touched[tid, keys[0]] = self._writes
                else:
                    self._touch(tid, keys[0])
                try:
                    try:  # (one cursor for every insert: Connection.execute makes one a call)
                        self._insert_cursor.execute(_PUT_NEW, row)
                    except sqlite3.IntegrityError:
                        return False  # (the primary key: the only constraint a row can break)
                    try:
                        log.append(encode_insert(row, last_timestamp))
                    except BaseException:
                        db.execute(_DELETE, row[:3])  # (a new key: its removal undoes the insert)
                        raise
                    if last_timestamp > self._reserved:
                        self._note_timestamp(db, last_timestamp)
                    self._committed = last_timestamp
                finally:
                    self._writes += 1
            finally:
                mutex.release()
            if log.records >= FLUSH_RECORDS or log.size >= FLUSH_BYTES:
                self._flush_if_full()
            else:
                self._wake()
            return True
        self._writes += 1  # before anything changes: the cache's verified rows lapse
        self._touch(tid, keys[0])
        try:
            if last_timestamp <= self._reserved:
                # One autocommitted statement does what BEGIN, INSERT and COMMIT below do.
                try:
                    db.execute(_PUT_NEW, row)
                except sqlite3.IntegrityError:
                    return False  # (the primary key: the only constraint a row can break)
                self._committed = last_timestamp
                return True
            db.execute("BEGIN IMMEDIATE")
            try:
                try:
                    db.execute(_PUT_NEW, row)
                except sqlite3.IntegrityError:
                    db.execute("ROLLBACK")
                    return False  # (the primary key: the only constraint a row can break)
                reserve = last_timestamp > self._reserved
                if reserve:
                    _write_last(db, last_timestamp + TIMESTAMP_RESERVE)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            self._committed = last_timestamp
            if reserve:
                self._reserved = last_timestamp + TIMESTAMP_RESERVE
            return True
        finally:
            self._writes += 1

    def _note_timestamp(self, db: sqlite3.Connection, last_timestamp: int) -> None:
        """The Timestamp bound rewritten in the open transaction when ``last_timestamp``
        passes it (see :data:`TIMESTAMP_RESERVE`); a logged write's last statement."""
        if last_timestamp > self._reserved:
            with suppress(sqlite3.Error):  # (the replay of the log raises it too)
                _write_last(db, last_timestamp + TIMESTAMP_RESERVE)
                self._reserved = last_timestamp + TIMESTAMP_RESERVE
        self._committed = last_timestamp

    def write_entity_groups(
        self,
        groups: Iterable[tuple[str, str, Iterable[Entity], Iterable[tuple[str, str]]]],
        last_timestamp: int,
        *,
        new: bool = False,
    ) -> None:
        """Store and remove entities of several tables ``(account, lname, puts, deletes)``
        in one transaction (one fsync: the backend's group commit); a key at most once a
        table. ``new``: no put's key is stored (else ``sqlite3.IntegrityError``, no change)."""
        # What transaction() does, spelled out: this runs for every write request.
        db = self.db
        logged = self._log is not None
        if logged:  # one savepoint of the open transaction, undone unless logged whole
            self._write_mutex.acquire()
        self._writes += 1  # before anything changes: the cache's verified rows lapse
        try:
            if logged:
                self._begin_logged(db)
                db.execute("SAVEPOINT azt_write")
            else:
                db.execute("BEGIN IMMEDIATE")
            record_rows: list[tuple[Any, ...]] = []
            record_removed: list[tuple[Any, ...]] = []
            try:
                for account, lname, puts, deletes in groups:
                    tid = self._tids.get((account, lname))
                    if tid is None:
                        raise RuntimeError(f"no stored table {lname!r} in account {account!r}")
                    # Each PartitionKey encoded once (a change set's puts share one).
                    pk_params: dict[str, bytearray] = {}
                    rows = []
                    for e in puts:
                        pk_param = pk_params.get(e.pk)
                        if pk_param is None:
                            pk_param = pk_params[e.pk] = key_param(e.pk)
                        rk_param = key_param(e.rk)
                        props = encode_props(e.props)
                        rows.append(
                            (tid, pk_param, rk_param, e.timestamp, props, e.created, e.keys_at)
                        )
                    removed = []
                    partitions = set(pk_params)
                    for pk, rk in deletes:
                        removed.append((tid, key_param(pk), key_param(rk)))
                        partitions.add(pk)
                    for pk in partitions:  # once per partition (a change set: one)
                        self._touch(tid, key_blob(pk))
                    if rows:
                        put_rows(db, rows, new=new)
                    if removed:
                        db.executemany(_DELETE, removed)
                    if logged:
                        record_rows += rows
                        record_removed += removed
                if logged:
                    assert self._log is not None
                    self._log.append(encode_record(record_rows, record_removed, last_timestamp))
                    self._wake()
                    db.execute("RELEASE azt_write")
                    self._note_timestamp(db, last_timestamp)
                    return
                reserve = last_timestamp > self._reserved
                if reserve:
                    _write_last(db, last_timestamp + TIMESTAMP_RESERVE)
            except BaseException:
                if logged:
                    db.execute("ROLLBACK TO azt_write")
                    db.execute("RELEASE azt_write")
                else:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            self._committed = last_timestamp
            if reserve:
                self._reserved = last_timestamp + TIMESTAMP_RESERVE
        finally:
            self._writes += 1
            if logged:
                self._write_mutex.release()
                self._flush_if_full()

    def _touch(self, tid: int, pk_blob: bytes) -> None:
        """Note that the write open now (odd count) changes a row of the partition, before
        it changes it: the partition's verified cache entries lapse (see :meth:`_get_on`).
        Past :data:`_TOUCHED_MAX` partitions the map is forgotten and every entry lapses."""
        touched = self._touched
        if len(touched) >= _TOUCHED_MAX and (tid, pk_blob) not in touched:
            touched.clear()
            self._touch_floor = self._writes + 1
        touched[tid, pk_blob] = self._writes


def _no_flusher() -> None:
    """What a logged write wakes in a store without a write-behind log: nothing."""


#: Most partitions :meth:`SqliteStore._touch` remembers (about 2 MiB of keys).
_TOUCHED_MAX = 16_384


__all__ = [
    "DB_FILE",
    "LOCK_FILE",
    "TIMESTAMP_RESERVE",
    "LoadedState",
    "LoadedTable",
    "SqliteStore",
    "decode_props",
    "encode_props",
    "key_blob",
    "key_param",
    "key_text",
]
