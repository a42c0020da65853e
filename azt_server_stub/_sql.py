"""The durable store's files and SQL: its lock, connections, layout, write statements, key
encoding and migrations (private).

Shared by the store (:mod:`~azt_server_stub._store`) and its write-behind log
(:mod:`~azt_server_stub._writelog`), which replays logged rows with these statements.

Example::

    >>> key_text(key_blob("p")) == "p"
    True
"""

from __future__ import annotations

import sqlite3
import sys
from codecs import utf_16_be_decode, utf_16_be_encode
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import IO, Any

__all__ = [
    "DELETE",
    "LOCK_FILE",
    "PARTITIONS",
    "PARTITIONS_MAX",
    "PUT",
    "PUT_NEW",
    "SCHEMA",
    "SET_LAST",
    "SYNCHRONOUS",
    "TIMESTAMP_RESERVE",
    "add_columns",
    "connect",
    "key_blob",
    "key_param",
    "key_text",
    "lock_directory",
    "migrate_v1",
    "partition_params",
    "put_rows",
    "read_last",
    "write_last",
]

#: The lock file that keeps a location to one store at a time.
LOCK_FILE = "azt-stub.lock"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS table_meta (
    account TEXT NOT NULL, lname TEXT NOT NULL, name TEXT NOT NULL, acl TEXT NOT NULL,
    tid INTEGER NOT NULL UNIQUE,
    PRIMARY KEY (account, lname)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entity_rows (
    tid INTEGER NOT NULL, pk BLOB NOT NULL, rk BLOB NOT NULL,
    ts INTEGER NOT NULL, props TEXT NOT NULL, created INTEGER NOT NULL DEFAULT 0,
    keys_at INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tid, pk, rk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS service (account TEXT PRIMARY KEY, doc BLOB NOT NULL) WITHOUT ROWID;
"""

COLUMNS = "(tid, pk, rk, ts, props, created, keys_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
PUT = "INSERT OR REPLACE INTO entity_rows " + COLUMNS
PUT_NEW = "INSERT INTO entity_rows " + COLUMNS
DELETE = "DELETE FROM entity_rows WHERE tid = ? AND pk = ? AND rk = ?"
SET_LAST = "UPDATE meta SET v = ? WHERE k = 'last_timestamp'"
INSERT_LAST = "INSERT INTO meta (k, v) VALUES ('last_timestamp', ?)"
#: The most rows :func:`put_rows` writes with one statement (seven parameters a row: 700,
#: within the 999 variables of SQLite builds before 3.32).
PUT_CHUNK = 100
#: (Row count, new) -> :data:`PUT` (new: :data:`PUT_NEW`) of that many rows in one
#: ``VALUES`` list (the counts :func:`put_rows` uses: PUT_CHUNK and the powers of two
#: below it).
_PUT_ROWS: dict[tuple[int, bool], str] = {}


def put_rows(db: sqlite3.Connection, rows: Sequence[tuple[Any, ...]], *, new: bool = False) -> None:
    """``db.executemany(PUT, rows)`` (``new``: :data:`PUT_NEW`, the keys not stored yet,
    ``sqlite3.IntegrityError`` where one is) in as few statements as the rows allow: one
    multi-row ``INSERT OR REPLACE`` of up to :data:`PUT_CHUNK` rows at a time (the
    remainder by powers of two, so a handful of statement texts serve every count).
    The same rows end up stored: a multi-row insert writes its rows in order, a later
    row of a key replacing the earlier as the next statement's would. A change set's
    hundred rows cost about a third less than a statement run per row (the step, its
    reset and the GIL's release and return, per row).

    Example::

        >>> db = sqlite3.connect(":memory:"); db.executescript(SCHEMA) and None
        >>> rows = [(1, b"p", bytes([r]), 1, "[]", 1, 0) for r in range(5)]
        >>> put_rows(db, rows + [(1, b"p", bytes([4]), 2, "[]", 2, 0)])
        >>> db.execute("SELECT count(*), max(ts) FROM entity_rows").fetchone()
        (5, 2)
    """
    n = len(rows)
    at = 0
    while at < n:
        left = n - at
        size = PUT_CHUNK if left >= PUT_CHUNK else 1 << (left.bit_length() - 1)
        sql = _PUT_ROWS.get((size, new))
        if sql is None:
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * size)
            sql = _PUT_ROWS[size, new] = (PUT_NEW if new else PUT).replace(
                "(?, ?, ?, ?, ?, ?, ?)", values
            )
        chunk = rows if size == n else rows[at : at + size]
        db.execute(sql, list(chain.from_iterable(chunk)))
        at += size


#: How far ahead of the last Timestamp issued the stored bound is set (ticks of 100 ns:
#: 0.1 s). Every Timestamp issued stays at or below the stored bound, which a restart
#: continues from, so Timestamps keep increasing across restarts, a crash included;
#: the bound is rewritten only when a commit's Timestamp passes it, not by every commit
#: (the meta row was a third of a single insert's WAL writes). A clean close stores the
#: exact last Timestamp; after a crash the first Timestamps may be up to this far ahead
#: of the clock (a process restart takes longer than that).
TIMESTAMP_RESERVE = 1_000_000


def key_blob(key: str) -> bytes:
    """A key as stored: its UTF-16-BE code units, so bytewise order is UTF-16 order.

    Big-endian 2-byte units compare bytewise exactly as the units compare as
    numbers, and a shorter prefix sorts first in both orders. Lone surrogates pass
    through, so any Python ``str`` is stored (a key given as two surrogate code
    points reads back as the one astral character they encode: the same key).

    Example::

        >>> key_blob("\\U0001f600") < key_blob("\\uffff")  # D83D DE00 < FFFF
        True
    """
    return utf_16_be_encode(key, "surrogatepass")[0]


def key_param(key: str) -> bytearray:
    """:func:`key_blob` as a statement parameter.

    Python's sqlite3 binds ``int``, ``float``, ``str`` and ``bytearray`` parameters
    directly but looks for an adapter for any other type, ``bytes`` included (two
    failed attribute lookups a parameter): a ``bytearray`` of the same bytes binds as
    the same BLOB at a third of the cost (100 rows of two keys: 240 -> 157 us). The codec's
    own function encodes without looking the codec up by its name (``bytearray(key,
    "utf-16-be", ...)``'s lookup was half its cost).

    Example::

        >>> key_param("a") == key_blob("a")
        True
    """
    return bytearray(utf_16_be_encode(key, "surrogatepass")[0])


def partition_params(pk: str) -> tuple[bytes, bytearray]:
    """A PartitionKey's :func:`key_blob` and :func:`key_param` (the same bytes: a parameter
    is only bound, which copies it), kept in :data:`PARTITIONS` for the partition's next
    inserts, which look them up there first (at most :data:`PARTITIONS_MAX` keys).

    Example::

        >>> partition_params("p") == (key_blob("p"), key_param("p")) == PARTITIONS["p"]
        True
    """
    if len(PARTITIONS) >= PARTITIONS_MAX:
        PARTITIONS.clear()
    blob = key_blob(pk)
    params = PARTITIONS[pk] = (blob, bytearray(blob))
    return params


#: PartitionKey -> its :func:`partition_params` (a key is at most 1 KiB).
PARTITIONS: dict[str, tuple[bytes, bytearray]] = {}
#: Most PartitionKeys :data:`PARTITIONS` holds.
PARTITIONS_MAX = 1024


def key_text(blob: bytes) -> str:
    """Inverse of :func:`key_blob`.

    Example::

        >>> key_text(key_blob("é\\U0001f600"))
        'é\\U0001f600'
    """
    return utf_16_be_decode(blob, "surrogatepass", True)[0]


def read_last(db: sqlite3.Connection) -> int:
    """The stored bound of the Timestamps issued (0 for a new store)."""
    row = db.execute("SELECT v FROM meta WHERE k = 'last_timestamp'").fetchone()
    return int(row[0]) if row else 0


def write_last(db: sqlite3.Connection, last_timestamp: int) -> None:
    """Store the bound of the Timestamps issued, in the write transaction open on ``db``."""
    # An UPDATE rewrites the row in place: one page of the WAL, where INSERT OR REPLACE
    # (a new rowid) rewrites the meta table's page and its key index's.
    if db.execute(SET_LAST, (last_timestamp,)).rowcount == 0:  # the first commit
        db.execute(INSERT_LAST, (last_timestamp,))


#: Columns of ``entity_rows`` a store written by an older stub may lack, each added with
#: its default when such a store is opened: ``created`` (creation ranks; the old rows rank
#: 0: in key order, before every row created since) and ``keys_at`` (where an entity's
#: keys were sent among its properties, ``Entity.keys_at``; the old rows 0: keys first, as
#: they were written then).
ADDED_COLUMNS = (
    ("created", "INTEGER NOT NULL DEFAULT 0"),
    ("keys_at", "INTEGER NOT NULL DEFAULT 0"),
)


def add_columns(db: sqlite3.Connection) -> None:
    """Give a store written before a column of :data:`ADDED_COLUMNS` existed that column
    (a new store has them all: no-op)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(entity_rows)")}
    for name, kind in ADDED_COLUMNS:
        if name not in columns:
            db.execute(f"ALTER TABLE entity_rows ADD COLUMN {name} {kind}")


def migrate_v1(db: sqlite3.Connection) -> None:
    """Convert a store written before read-through (``tables``/``entities`` keyed by UTF-8
    key BLOBs) to the current layout, in one transaction; no-op for a current store."""
    old = db.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'entities'"
    ).fetchone()[0]
    if not old:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        last = 0
        row = db.execute("SELECT v FROM meta WHERE k = 'last_timestamp'").fetchone()
        if row:
            last = int(row[0])
        tids: dict[tuple[str, str], int] = {}
        for account, lname, name, acl in db.execute(
            "SELECT account, lname, name, acl FROM tables"
        ).fetchall():
            new_tid = tids[(account, lname)] = len(tids) + 1
            db.execute(
                "INSERT INTO table_meta (account, lname, name, acl, tid) VALUES (?, ?, ?, ?, ?)",
                (account, lname, name, acl, new_tid),
            )
        cursor = db.execute("SELECT account, lname, pk, rk, ts, props FROM entities")
        while batch := cursor.fetchmany(10_000):
            puts = []
            for account, lname, pk, rk, ts, props in batch:
                tid = tids.get((account, lname))
                if tid is None:
                    continue
                last = max(last, ts)
                puts.append(
                    (
                        tid,
                        key_blob(bytes(pk).decode("utf-8", "surrogatepass")),
                        key_blob(bytes(rk).decode("utf-8", "surrogatepass")),
                        ts,
                        props,
                        ts,
                        0,  # keys first: as the stub wrote them then
                    )
                )
            db.executemany(PUT, puts)
        db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES ('next_tid', ?)", (len(tids) + 1,))
        db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES ('last_timestamp', ?)", (last,))
        db.execute("DROP TABLE entities")
        db.execute("DROP TABLE tables")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def lock_directory(directory: Path) -> IO[bytes]:
    """Hold ``directory``'s lock file exclusively until the returned file is closed."""
    handle = open(directory / LOCK_FILE, "a+b")  # noqa: SIM115 - held until close()
    try:
        if sys.platform == "win32":
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.close()
        raise RuntimeError(
            f"the stub's data directory {directory} is in use by another process"
        ) from exc
    return handle


#: ``durability`` -> SQLite's ``synchronous`` setting (WAL journal). ``full``: every
#: commit is fsynced before it is acknowledged (survives power loss and OS crashes).
#: ``process``: a commit is in the operating system's hands when acknowledged (survives
#: the stub's process being killed, ``kill -9`` included; an OS crash or power loss may
#: lose the last commits, never half of one).
SYNCHRONOUS = {"full": "FULL", "process": "NORMAL"}


def connect(path: Path, *, timeout: float, durability: str = "full") -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=timeout)
    db.execute(f"PRAGMA synchronous={SYNCHRONOUS[durability]}")
    return db
