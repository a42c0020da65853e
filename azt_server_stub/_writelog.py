"""The write-behind log of the durable store at ``--durability process`` (private).

At ``process`` durability a write must be in the operating system's hands when it is
acknowledged (it survives ``kill -9`` of the stub), not on the disk. Committing each
write as its own SQLite transaction does that, but a commit is most of a lone write's
cost (locks, WAL frames, the WAL index). Instead the store runs a write's statements
inside one long SQLite transaction and appends the write's rows to this log before it
answers: the log is what survives a kill. On filesystems that write a reserved block in
place (:data:`MAPPABLE_FILESYSTEMS`, Linux) the log is a shared memory map of its file,
its blocks reserved ahead (``posix_fallocate``), and an append is a copy into the pages
the file is made of, with no system call (a ``write`` also updates the file's times and
the filesystem's journal, system time on every write). Elsewhere each record is one
``os.write``. Either way the bytes are the kernel's once
copied, so a kill of the stub loses none of them. The open transaction
is committed in groups later (:class:`Flusher`: after :data:`FLUSH_DELAY`, past
:data:`FLUSH_RECORDS` writes or :data:`FLUSH_BYTES` of log, before a read of the
committed state, before a table-level write, at close), and the log emptied once the
commit is done. A store opened over a non-empty log replays it first
(:func:`replay`): every record holds the final rows of one write request (a lone
write, or every entity of a change set, or a group commit's writes), so replaying it
twice changes nothing, and a torn or corrupt record ends the replay: a write is
replayed whole or not at all.

A record: ``<payload length: u32><crc32 of the payload: u32>`` then the payload,
``<last Timestamp: i64><puts: u32><deletes: u32>``, each put ``<tid: i64><pk length:
u32><rk length: u32><props length: u32><ts: i64><created: i64><keys_at: i64>`` and its
pk, rk (UTF-16-BE, as stored) and properties (the stored JSON, ASCII), each delete
``<tid: i64><pk length: u32><rk length: u32>`` and its pk and rk; little-endian. A mapped
log's file is reserved past its records and reads as zeros there: a zero length ends the
records, as a torn record does.

Example::

    >>> row = (1, b"\\x00p", b"\\x00r", 5, "[]", 5, 0)
    >>> record = encode_record([row], [], 5)
    >>> decode_records(record + record[:-1])  # the torn second record is left out
    ([(5, [(1, b'\\x00p', b'\\x00r', 5, '[]', 5, 0)], [])], 74)
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import re
import sqlite3
import struct
import threading
import zlib
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from ._sql import DELETE, TIMESTAMP_RESERVE, put_rows, read_last, write_last

log = logging.getLogger("azt_server_stub")

__all__ = [
    "FLUSH_BYTES",
    "FLUSH_DELAY",
    "FLUSH_RECORDS",
    "LOG_FILE",
    "MAPPABLE_FILESYSTEMS",
    "MAP_RESERVE",
    "Flusher",
    "Record",
    "WriteLog",
    "decode_records",
    "encode_insert",
    "encode_record",
    "filesystem_type",
    "mount_type",
    "replay",
]

#: The log's file name in the store's directory.
LOG_FILE = "azt-stub.wlog"
#: Seconds a logged write waits at most before its group is committed to SQLite.
FLUSH_DELAY = 0.2
#: Logged writes that make the open transaction commit at once.
FLUSH_RECORDS = 2000
#: Bytes of log that make the open transaction commit at once.
FLUSH_BYTES = 4 << 20
#: Bytes a mapped log reserves at first; the reservation doubles when a record does not fit.
MAP_RESERVE = 1 << 20
#: Filesystems whose reserved blocks are written in place, so a copy into a reserved page
#: of the mapped log cannot fail for want of space. On a copy-on-write filesystem (btrfs,
#: ZFS) a rewrite takes new blocks, and a full disk would fault the copy (SIGBUS, the
#: process lost) instead of refusing one write: the log is written there.
MAPPABLE_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "tmpfs", "overlay"})

_HEAD = struct.Struct("<II")
_BODY = struct.Struct("<qII")
_PUT_HEAD = struct.Struct("<qIIIqqq")
_DELETE_HEAD = struct.Struct("<qII")
_ONE_PUT = struct.Struct("<qII" + "qIIIqqq")  # _BODY then one _PUT_HEAD

Row = tuple[int, Any, Any, int, str, int, int]
"""A stored row as bound: ``(tid, pk, rk, ts, props, created, keys_at)`` (keys as BLOBs)."""
Removal = tuple[int, Any, Any]
"""A removed row's key as bound: ``(tid, pk, rk)``."""
Record = tuple[int, list[Row], list[Removal]]
"""A decoded record: ``(last Timestamp, puts, deletes)``."""


def encode_record(puts: Sequence[Row], deletes: Sequence[Removal], last_timestamp: int) -> bytes:
    """One write request's final rows as a log record (framed: length and checksum).

    Example::

        >>> len(encode_record([], [(1, b"\\x00p", b"\\x00r")], 9))
        44
    """
    parts = [b"", _BODY.pack(last_timestamp, len(puts), len(deletes))]
    extend, head = parts.extend, _PUT_HEAD.pack  # (a change set's hundred rows)
    for tid, pk, rk, ts, props, created, keys_at in puts:
        text = props.encode()
        extend((head(tid, len(pk), len(rk), len(text), ts, created, keys_at), pk, rk, text))
    for tid, pk, rk in deletes:
        parts += (_DELETE_HEAD.pack(tid, len(pk), len(rk)), pk, rk)
    payload = b"".join(parts)
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


def encode_insert(row: Row, last_timestamp: int) -> bytes:
    """:func:`encode_record` of one put and no delete (a lone insert), in fewer steps.

    Example::

        >>> row = (1, b"\\x00p", b"\\x00r", 5, "[]", 5, 0)
        >>> encode_insert(row, 5) == encode_record([row], [], 5)
        True
    """
    tid, pk, rk, ts, props, created, keys_at = row
    text = props.encode()
    payload = b"".join(
        (
            _ONE_PUT.pack(
                last_timestamp, 1, 0, tid, len(pk), len(rk), len(text), ts, created, keys_at
            ),
            pk,
            rk,
            text,
        )
    )
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


def decode_records(data: bytes) -> tuple[list[Record], int]:
    """The whole records at the start of ``data`` and the bytes they take: decoding stops
    at the first record that is cut short or fails its checksum (a torn tail).

    Example::

        >>> decode_records(b"\\x05\\x00")
        ([], 0)
    """
    records: list[Record] = []
    at = 0
    while at + _HEAD.size <= len(data):
        size, crc = _HEAD.unpack_from(data, at)
        start = at + _HEAD.size
        payload = data[start : start + size]
        if len(payload) < size or size < _BODY.size or zlib.crc32(payload) != crc:
            break
        try:
            records.append(_decode_payload(payload))
        except (struct.error, UnicodeDecodeError, ValueError):  # (a checksum collision)
            break
        at = start + size
    return records, at


def _decode_payload(payload: bytes) -> Record:
    last, n_puts, n_deletes = _BODY.unpack_from(payload, 0)
    at = _BODY.size
    puts: list[Row] = []
    for _ in range(n_puts):
        tid, pk_len, rk_len, props_len, ts, created, keys_at = _PUT_HEAD.unpack_from(payload, at)
        at += _PUT_HEAD.size
        pk, rk = payload[at : at + pk_len], payload[at + pk_len : at + pk_len + rk_len]
        at += pk_len + rk_len
        props = payload[at : at + props_len].decode()
        at += props_len
        puts.append((tid, pk, rk, ts, props, created, keys_at))
    deletes: list[Removal] = []
    for _ in range(n_deletes):
        tid, pk_len, rk_len = _DELETE_HEAD.unpack_from(payload, at)
        at += _DELETE_HEAD.size
        deletes.append(
            (tid, payload[at : at + pk_len], payload[at + pk_len : at + pk_len + rk_len])
        )
        at += pk_len + rk_len
    if at != len(payload):
        raise ValueError("the record's rows do not fill its payload")
    return last, puts, deletes


def replay(db: sqlite3.Connection, path: Path) -> int:
    """Apply the whole records of the log at ``path`` to the store on ``db`` (no open
    transaction) in one transaction, raising the stored Timestamp bound to the last
    Timestamp they carry; the number of records applied (0: no log, or nothing whole in
    it). Rows of a table no longer stored are skipped. Idempotent: the records hold final
    rows, applied in their order.

    Example::

        replay(db, directory / LOG_FILE)
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    records, _ = decode_records(data)
    if not records:
        return 0
    tids = {row[0] for row in db.execute("SELECT tid FROM table_meta")}
    db.execute("BEGIN IMMEDIATE")
    try:
        bound = read_last(db)
        for last, puts, deletes in records:
            put_rows(db, [row for row in puts if row[0] in tids])
            db.executemany(DELETE, [key for key in deletes if key[0] in tids])
            if last > bound:  # as the write's own commit would have moved it
                bound = last + TIMESTAMP_RESERVE
        write_last(db, bound)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return len(records)


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem that holds ``path`` (from Linux's
    ``/proc/self/mountinfo``); None where that cannot be read.

    Example::

        >>> filesystem_type(Path("/")) is None or isinstance(filesystem_type(Path("/")), str)
        True
    """
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    return mount_type(lines, os.path.realpath(path))


def mount_type(lines: list[str], target: str) -> str | None:
    """The filesystem type of the mount holding the absolute path ``target``, among the
    ``/proc/self/mountinfo`` ``lines`` (the deepest mount point; of two at one point, the
    later mount, which hides the earlier).

    Example::

        >>> lines = ["22 1 8:1 / / rw - ext4 /dev/vda rw",
        ...          "40 22 0:5 / /tmp\\\\040x rw - tmpfs tmpfs rw"]
        >>> mount_type(lines, "/tmp x/log"), mount_type(lines, "/tmpx/log")
        ('tmpfs', 'ext4')
    """
    best, kind = -1, None
    for line in lines:
        fields = line.split()
        try:
            dash = fields.index("-", 6)
        except ValueError:
            continue
        if dash + 1 >= len(fields):
            continue
        point = _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= best:
            best, kind = len(point), fields[dash + 1]
    return kind


#: mountinfo's escapes of a space, tab, newline and backslash in a path (``\040``...).
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")


class WriteLog:
    """The log file, opened empty for appending (replay it first: :func:`replay`).

    ``mapped``: keep it as a shared memory map of its file (default: where the system has
    ``mmap`` and ``posix_fallocate`` and the file's filesystem is one of
    :data:`MAPPABLE_FILESYSTEMS`; if mapping fails, written); otherwise each record is one
    ``os.write``. A mapped log reserves its file's blocks ahead of the records, so a full
    disk refuses the record that needs more (``OSError``, nothing copied) instead of
    failing the copy; past the records the file reads as zeros, which end a replay as a
    torn record does. Emptied, the file is cut to nothing (the committed records can no
    longer be replayed, their pages dropped unwritten) and reserved again; closed, it is
    cut to its records.

    Example::

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     log = WriteLog(Path(folder) / LOG_FILE)
        ...     log.append(encode_record([], [], 1))
        ...     size = log.size
        ...     log.close(remove=True)
        >>> size
        24
    """

    def __init__(self, path: Path, *, mapped: bool | None = None) -> None:
        self.path = path
        #: The mapped file (None: written with ``os.write``), and how many of its bytes
        #: are reserved on disk and mapped.
        self._map: mmap.mmap | None = None
        self._capacity = 0
        #: Bytes in the log (every one of them whole records).
        self.size = 0
        #: Records appended since the log was last emptied.
        self.records = 0
        if mapped is None:
            mapped = _MAPPING and filesystem_type(path.parent) in MAPPABLE_FILESYSTEMS
            if mapped:
                try:
                    self._fd = self._open_mapped()
                    return
                except OSError:  # (cannot map or reserve there after all: written)
                    pass
        elif mapped:
            if not _MAPPING:
                raise OSError(errno.EOPNOTSUPP, "this system cannot map the write-behind log")
            self._fd = self._open_mapped()
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_BINARY", 0)
        self._fd = os.open(path, flags, 0o644)
        try:
            os.ftruncate(self._fd, 0)
        except BaseException:
            os.close(self._fd)
            raise

    def _open_mapped(self) -> int:
        fd = self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 0)
            self._grow(MAP_RESERVE)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @property
    def mapped(self) -> bool:
        """Whether the log is kept as a memory map of its file (else written).

        Example::

            log.mapped  # True on Linux's ext4
        """
        return self._map is not None

    def append(self, record: bytes) -> None:
        """Hand one record to the operating system (a copy into the mapped file, or one
        ``write``); ``OSError`` (the log left as it was: its whole records) when it could
        not be written whole."""
        size = self.size
        mapped = self._map
        if mapped is not None:
            end = size + len(record)
            if end > self._capacity:
                mapped = self._grow(end)  # (a full disk: OSError, nothing copied)
            mapped[size:end] = record
            self.size = end
            self.records += 1
            return
        try:
            written = os.write(self._fd, record)
        except OSError:
            self._cut()
            raise
        if written != len(record):  # (a full disk)
            self._cut()
            raise OSError(errno.ENOSPC, "the write-behind log could not be written whole")
        self.size = size + written
        self.records += 1

    def _grow(self, end: int) -> mmap.mmap:
        """Reserve and map the file up to at least ``end`` bytes (doubling); the new map.
        On failure (``OSError``) the map and the capacity are as they were."""
        capacity = max(self._capacity * 2, MAP_RESERVE)
        while capacity < end:
            capacity *= 2
        os.posix_fallocate(self._fd, 0, capacity)
        grown = mmap.mmap(self._fd, capacity)  # (a new map: mremap is Linux's alone)
        if self._map is not None:
            self._map.close()
        self._map = grown
        self._capacity = capacity
        return grown

    def _cut(self) -> None:
        with suppress(OSError):  # (else the torn record is ignored by the replay)
            os.ftruncate(self._fd, self.size)

    def reset(self) -> None:
        """Empty the log (every record in it is committed to SQLite)."""
        os.ftruncate(self._fd, 0)
        self.size = self.records = 0
        if self._map is not None:
            try:
                os.posix_fallocate(self._fd, 0, self._capacity)
            except OSError:
                # nothing may touch the map past the (empty) file: the next append
                # reserves again first, or is refused
                self._capacity = 0

    def close(self, *, remove: bool) -> None:
        """Close the file; ``remove`` it too once its records are committed (a log kept
        for the next start is cut to its records)."""
        if self._map is not None:
            self._map.close()
            self._map = None
            if not remove:
                self._cut()
        os.close(self._fd)
        if remove:
            with suppress(OSError):
                self.path.unlink()


#: Whether this system can keep the log as a shared memory map at all.
_MAPPING = hasattr(os, "posix_fallocate") and hasattr(mmap, "MAP_SHARED")


class Flusher:
    """A thread that runs ``flush`` :data:`FLUSH_DELAY` seconds after :meth:`wake`, so
    logged writes reach SQLite while the stub is idle too.

    Example::

        >>> import time
        >>> calls = []
        >>> flusher = Flusher(lambda: calls.append(1), delay=0.01)
        >>> flusher.wake(); time.sleep(0.2); flusher.stop(); calls
        [1]
    """

    def __init__(self, flush: Callable[[], None], *, delay: float | None = None) -> None:
        self._flush = flush
        self._delay = FLUSH_DELAY if delay is None else delay  # (the module's, when made)
        self._due = threading.Event()
        self._woken = False  # whether _due is set (or about to be)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="azt-stub-flusher", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """A write was logged: flush within the delay (cheap when a flush is due already)."""
        if not self._woken:  # (an attribute: cheaper than asking the event)
            self._woken = True
            self._due.set()

    def _run(self) -> None:
        while True:
            self._due.wait()
            if self._stopping.wait(self._delay):
                return
            self._due.clear()  # then the flag: a write woken now is flushed now or wakes it
            self._woken = False  # (both before the flush: a write logged after it wakes)
            try:
                self._flush()
            except Exception:  # (a failing disk: the next read or write reports it too)
                log.exception("the write-behind log could not be committed to SQLite")

    def stop(self) -> None:
        """End the thread (what is due is left to the caller: :meth:`SqliteStore.close`
        commits it, a crash leaves it in the log)."""
        self._stopping.set()
        self._due.set()
        self._thread.join()
