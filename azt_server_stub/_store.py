"""Durable SQLite store behind the in-memory backend (private).

The backend keeps every table sorted in memory and serves all reads from there;
this module only makes writes durable and loads them back at start. One
SQLite transaction per write (or per batch), committed before the backend
method returns: WAL journal, ``synchronous=FULL``.

Values are stored losslessly as JSON (ASCII only, so lone surrogates survive):
``[[name, code, value], ...]`` with codes ``s`` String, ``i`` Int32, ``l`` Int64
(exact Python int), ``d`` Double (``NaN``/``Infinity`` allowed), ``b`` Boolean,
``t`` DateTime ticks, ``g`` Guid (32 hex digits), ``x`` Binary (base64). Keys are
BLOBs of UTF-8 with surrogates passed through, so any Python ``str`` round-trips.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model import Edm, Entity, TypedValue

DB_FILE = "azt-stub.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tables (
    account TEXT NOT NULL, lname TEXT NOT NULL, name TEXT NOT NULL, acl TEXT NOT NULL,
    PRIMARY KEY (account, lname)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entities (
    account TEXT NOT NULL, lname TEXT NOT NULL, pk BLOB NOT NULL, rk BLOB NOT NULL,
    ts INTEGER NOT NULL, props TEXT NOT NULL,
    PRIMARY KEY (account, lname, pk, rk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS service (account TEXT PRIMARY KEY, doc BLOB NOT NULL) WITHOUT ROWID;
"""

_CODE = {
    Edm.STRING: "s",
    Edm.INT32: "i",
    Edm.INT64: "l",
    Edm.DOUBLE: "d",
    Edm.BOOLEAN: "b",
    Edm.DATETIME: "t",
    Edm.GUID: "g",
    Edm.BINARY: "x",
}
_EDM = {code: edm for edm, code in _CODE.items()}


def _key_blob(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


def _key_str(blob: bytes) -> str:
    return blob.decode("utf-8", "surrogatepass")


def encode_props(props: dict[str, TypedValue]) -> str:
    """Encode typed properties as the ASCII JSON text described in the module docstring."""
    out: list[list[Any]] = []
    for name, (edm, value) in props.items():
        if edm is Edm.GUID:
            value = value.hex
        elif edm is Edm.BINARY:
            value = base64.b64encode(value).decode("ascii")
        out.append([name, _CODE[edm], value])
    return json.dumps(out, separators=(",", ":"))


def decode_props(text: str) -> dict[str, TypedValue]:
    """Inverse of :func:`encode_props`."""
    props: dict[str, TypedValue] = {}
    for name, code, value in json.loads(text):
        edm = _EDM[code]
        if edm is Edm.GUID:
            value = uuid.UUID(hex=value)
        elif edm is Edm.BINARY:
            value = base64.b64decode(value)
        elif edm is Edm.DOUBLE:
            value = float(value)
        props[name] = (edm, value)
    return props


@dataclass(slots=True)
class LoadedTable:
    """A table as read back from disk."""

    name: str
    acl: list[dict[str, str | None]]
    entities: list[Entity] = field(default_factory=list)


@dataclass(slots=True)
class LoadedState:
    """Everything on disk: ``tables[account][lower name]``, service documents, last Timestamp."""

    tables: dict[str, dict[str, LoadedTable]]
    service: dict[str, bytes]
    last_timestamp: int


class SqliteStore:
    """The durable side of the backend: one SQLite database in ``directory``."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / DB_FILE
        self._db: sqlite3.Connection | None = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=0.2
        )
        db = self._db
        try:
            # EXCLUSIVE: one stub per location; a second one would silently diverge.
            db.execute("PRAGMA locking_mode=EXCLUSIVE")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("BEGIN IMMEDIATE")
            db.execute("COMMIT")
            db.executescript(_SCHEMA)
        except sqlite3.OperationalError as exc:
            db.close()
            self._db = None
            if "locked" in str(exc):
                raise RuntimeError(
                    f"the stub's data directory {directory} is in use by another process"
                ) from exc
            raise

    @property
    def db(self) -> sqlite3.Connection:
        """The open connection (``RuntimeError`` after :meth:`close`)."""
        if self._db is None:
            raise RuntimeError("the durable store is closed")
        return self._db

    def close(self) -> None:
        """Checkpoint and close the database; idempotent."""
        if self._db is not None:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._db.close()
                self._db = None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed (and synced) when the block ends."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def load(self) -> LoadedState:
        """Read the whole store (done once, at start)."""
        db = self.db
        row = db.execute("SELECT v FROM meta WHERE k = 'last_timestamp'").fetchone()
        last = int(row[0]) if row else 0
        tables: dict[str, dict[str, LoadedTable]] = {}
        for account, lname, name, acl in db.execute("SELECT account, lname, name, acl FROM tables"):
            tables.setdefault(account, {})[lname] = LoadedTable(name, json.loads(acl))
        for account, lname, pk, rk, ts, props in db.execute(
            "SELECT account, lname, pk, rk, ts, props FROM entities"
        ):
            table = tables.get(account, {}).get(lname)
            if table is not None:
                table.entities.append(Entity(_key_str(pk), _key_str(rk), ts, decode_props(props)))
                last = max(last, ts)
        service = {
            account: bytes(doc) for account, doc in db.execute("SELECT account, doc FROM service")
        }
        return LoadedState(tables, service, last)

    # -- writes (each one transaction) -----------------------------------------------

    def create_table(self, account: str, lname: str, name: str) -> None:
        """Persist a new, empty table."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO tables (account, lname, name, acl) VALUES (?, ?, ?, '[]')",
                (account, lname, name),
            )
            db.execute("DELETE FROM entities WHERE account = ? AND lname = ?", (account, lname))

    def delete_table(self, account: str, lname: str) -> None:
        """Forget a table, its entities and its ACL."""
        with self.transaction() as db:
            db.execute("DELETE FROM tables WHERE account = ? AND lname = ?", (account, lname))
            db.execute("DELETE FROM entities WHERE account = ? AND lname = ?", (account, lname))

    def set_acl(self, account: str, lname: str, acl: list[dict[str, str | None]]) -> None:
        """Replace a table's stored access policies."""
        with self.transaction() as db:
            db.execute(
                "UPDATE tables SET acl = ? WHERE account = ? AND lname = ?",
                (json.dumps(acl), account, lname),
            )

    def set_service(self, account: str, document: bytes) -> None:
        """Store an account's service-properties document."""
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO service (account, doc) VALUES (?, ?)", (account, document)
            )

    def write_entity_groups(
        self,
        groups: Iterable[tuple[str, str, Iterable[Entity], Iterable[tuple[str, str]]]],
        last_timestamp: int,
    ) -> None:
        """Store and remove entities of several tables ``(account, lname, puts, deletes)``
        in one transaction (one fsync: the backend's group commit). A key appears at most
        once per table across puts and deletes."""
        with self.transaction() as db:
            for account, lname, puts, deletes in groups:
                db.executemany(
                    "INSERT OR REPLACE INTO entities (account, lname, pk, rk, ts, props) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        (
                            account,
                            lname,
                            _key_blob(e.pk),
                            _key_blob(e.rk),
                            e.timestamp,
                            encode_props(e.props),
                        )
                        for e in puts
                    ],
                )
                db.executemany(
                    "DELETE FROM entities WHERE account = ? AND lname = ? AND pk = ? AND rk = ?",
                    [(account, lname, _key_blob(pk), _key_blob(rk)) for pk, rk in deletes],
                )
            db.execute(
                "INSERT OR REPLACE INTO meta (k, v) VALUES ('last_timestamp', ?)",
                (last_timestamp,),
            )
