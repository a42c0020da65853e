"""The write-behind log of ``--durability process`` (``azt_server_stub._writelog``).

A write is acknowledged once its record is in the log (a copy into the log's mapped file,
or one ``os.write`` where it is not mapped: both are tested); its statements
run in one open SQLite transaction, committed in groups later. These tests hold the
commits off (a flush delay of an hour) and check: reads see logged writes at once
(point reads, queries, continuations); a crash (the store's connections dropped, its
transaction lost) loses no logged write; a torn or corrupt tail is ignored and a torn
change set is applied not at all; a log that cannot be written refuses the write with
nothing applied; replaying twice changes nothing. The SIGKILL of a writing process is in
``test_storage_durability.py`` (``test_sigkill_keeps_exactly_the_acknowledged_writes``).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from azt_server_stub import _sql, _store, _writelog
from azt_server_stub._store import DB_FILE, key_blob, key_text
from azt_server_stub._writelog import (
    LOG_FILE,
    MAP_RESERVE,
    MAPPABLE_FILESYSTEMS,
    WriteLog,
    decode_records,
    encode_insert,
    encode_record,
    filesystem_type,
    mount_type,
)
from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, TypedValue

ACCOUNT = "devstoreaccount1"
TABLE = "Logged"


@pytest.fixture(autouse=True)
def _no_timed_flush(monkeypatch: pytest.MonkeyPatch) -> None:
    """Logged writes stay uncommitted until a read, a threshold or a close commits them."""
    monkeypatch.setattr(_writelog, "FLUSH_DELAY", 3600.0)


def _props(n: int) -> dict[str, TypedValue]:
    return {"N": (Edm.INT32, n), "S": (Edm.STRING, f"é\U0001f600 {n}"), "B": (Edm.BINARY, b"\0")}


def _state(b: Backend) -> dict[tuple[str, str], tuple[int, dict[str, Any]]]:
    """Every entity of the table, read page by page (continuations of 3 rows)."""
    out: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    token = None
    while True:
        page = b.query_entities(ACCOUNT, TABLE, None, 3, token)
        out.update((e.key, (e.timestamp, dict(e.props))) for e in page.entities)
        token = page.next_key
        if token is None:
            return out


def _crash(b: Backend) -> None:
    """What a kill leaves: the open transaction lost, the log file as written."""
    assert b._store is not None
    b._store._close_connections()


def _pending(b: Backend) -> bool:
    """Whether the store holds logged writes not committed to SQLite."""
    assert b._store is not None
    return b._store._pending


def _writes(b: Backend) -> None:
    """Inserts, a merge, a replace, a delete and a change set, every kind of record."""
    b.create_table(ACCOUNT, TABLE)
    for i in range(6):
        b.write(ACCOUNT, TABLE, WriteOp("insert", "p", f"{i:02d}", _props(i)))
    b.write(ACCOUNT, TABLE, WriteOp("merge", "p", "01", {"M": (Edm.INT64, 2**40)}, "*"))
    b.write(ACCOUNT, TABLE, WriteOp("replace", "p", "02", _props(20)))
    b.write(ACCOUNT, TABLE, WriteOp("delete", "p", "03", if_match="*"))
    b.execute_batch(
        ACCOUNT, TABLE, [WriteOp("insert", "q", f"{i:02d}", _props(i)) for i in range(5)]
    )


def test_reads_see_logged_writes_at_once(tmp_path: Path) -> None:
    with Backend(tmp_path / "logged", durability="process") as b, Backend() as memory:
        _writes(b)
        _writes(memory)
        assert b._store is not None
        assert _pending(b)  # nothing committed to SQLite yet
        assert b._store._log is not None
        assert b._store._log.records == 10
        got = b.get_entity(ACCOUNT, TABLE, "p", "01")
        assert got.props["M"] == (Edm.INT64, 2**40)
        assert not _pending(b)  # the read committed the logged writes first
        assert b._store._log.size == 0
        with pytest.raises(StubError):
            b.get_entity(ACCOUNT, TABLE, "p", "03")
        mem = {key: props for key, (_, props) in _state(memory).items()}
        assert {key: props for key, (_, props) in _state(b).items()} == mem
        # a write after the commit, then a query page and its continuation see it
        b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "03", _props(3)))
        assert b._store._pending
        page = b.query_entities(ACCOUNT, TABLE, None, 2, ("p", "02"))
        assert [e.rk for e in page.entities] == ["02", "03"]
        assert page.next_key == ("p", "04")


def test_a_write_checks_against_logged_writes(tmp_path: Path) -> None:
    """A write's own checks (an insert's key, a conditional write's ETag) see the logged
    writes, uncommitted as they are."""
    with Backend(tmp_path, durability="process") as b:
        b.create_table(ACCOUNT, TABLE)
        first = b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "r", _props(1))).entity
        assert first is not None
        with pytest.raises(StubError) as taken:
            b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "r"))
        assert taken.value.code == "EntityAlreadyExists"
        with pytest.raises(StubError) as batch_taken:
            b.execute_batch(ACCOUNT, TABLE, [WriteOp("insert", "p", "r")])
        assert batch_taken.value.code == "EntityAlreadyExists"
        b.write(ACCOUNT, TABLE, WriteOp("merge", "p", "r", {"X": (Edm.INT32, 1)}, first.etag))
        with pytest.raises(StubError) as stale:
            b.write(ACCOUNT, TABLE, WriteOp("merge", "p", "r", {}, first.etag))
        assert stale.value.code == "UpdateConditionNotSatisfied"
        assert b._store is not None
        assert b._store._pending
        assert b.get_entity(ACCOUNT, TABLE, "p", "r").props["X"] == (Edm.INT32, 1)


@pytest.fixture(params=["mapped", "written"])
def log_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The store's log as a memory map of its file (where this filesystem allows it) or
    written with ``os.write``."""
    kind = str(request.param)
    if kind == "written":
        monkeypatch.setattr(_writelog, "_MAPPING", False)
    return kind


def test_a_crash_loses_no_logged_write(tmp_path: Path, log_kind: str) -> None:
    with Backend() as memory:
        _writes(memory)
        expected = _state(memory)
    b = Backend(tmp_path, durability="process")
    _writes(b)
    assert b._store is not None
    assert b._store._pending
    assert b._store._log is not None
    mappable = filesystem_type(tmp_path) in MAPPABLE_FILESYSTEMS
    assert b._store._log.mapped is (log_kind == "mapped" and mappable)
    _crash(b)
    assert len(decode_records((tmp_path / LOG_FILE).read_bytes())[0]) == 10
    with Backend(tmp_path, durability="process") as again:
        got = _state(again)
    assert {key: props for key, (_, props) in got.items()} == {
        key: props for key, (_, props) in expected.items()
    }
    assert not (tmp_path / LOG_FILE).exists()  # replayed, committed, removed on close
    with Backend(tmp_path) as third:  # and a later Timestamp goes on above them all
        later = third.write(ACCOUNT, TABLE, WriteOp("insert", "z", "z")).entity
    assert later is not None
    assert later.timestamp > max(ts for ts, _ in got.values())


def test_lone_inserts_log_each_partitions_key_as_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone insert takes its PartitionKey's blob and statement parameter from the bounded
    map of them (``_sql.PARTITIONS``: a partition's inserts share them): every row, in
    SQLite and in the log, carries its own key's blob, across more partitions than the map
    keeps, lone surrogates and astral characters included, and a crash loses none of them."""
    monkeypatch.setattr(_sql, "PARTITIONS_MAX", 2)
    _sql.PARTITIONS.clear()  # (a cache shared by every store: other tests' keys out)
    pks = ["p", "q", "\ud800", "\U0001f600", "p", "r", "\ud800", "q", "p"]
    b = Backend(tmp_path, durability="process")
    b.create_table(ACCOUNT, TABLE)
    for n, pk in enumerate(pks):
        b.write(ACCOUNT, TABLE, WriteOp("insert", pk, f"{n}", _props(n), checked=True))
        assert len(_sql.PARTITIONS) <= 2
    _crash(b)
    records, _ = decode_records((tmp_path / LOG_FILE).read_bytes())
    assert [(row[1], row[2]) for _, puts, _ in records for row in puts] == [
        (key_blob(pk), key_blob(f"{n}")) for n, pk in enumerate(pks)
    ]
    with Backend(tmp_path, durability="process") as again:
        got = _state(again)
    assert sorted(got) == sorted((pk, f"{n}") for n, pk in enumerate(pks))
    assert all(props == _props(int(rk)) for (_, rk), (_, props) in got.items())


def _log_after_crash(tmp_path: Path) -> tuple[bytes, list[int]]:
    """The log of :func:`_writes` after a crash, and where each of its records ends."""
    b = Backend(tmp_path, durability="process")
    _writes(b)
    _crash(b)
    data = (tmp_path / LOG_FILE).read_bytes()
    ends, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "little")
        at += 8 + size
        ends.append(at)
    assert ends[-1] == len(data)
    return data, ends


@pytest.mark.parametrize("cut", [1, 8, 30, "half"])
def test_a_torn_change_set_is_applied_not_at_all(tmp_path: Path, cut: int | str) -> None:
    """The last record (the change set of five inserts) cut short anywhere: the writes
    before it are replayed, none of the change set's."""
    data, ends = _log_after_crash(tmp_path)
    last = ends[-1] - ends[-2]
    keep = ends[-2] + (last // 2 if cut == "half" else last - int(cut))
    (tmp_path / LOG_FILE).write_bytes(data[:keep])
    with Backend(tmp_path) as b:
        got = _state(b)
    assert not [key for key in got if key[0] == "q"]
    assert sorted(rk for pk, rk in got) == ["00", "01", "02", "04", "05"]
    assert got[("p", "01")][1]["M"] == (Edm.INT64, 2**40)


def test_a_corrupt_record_ends_the_replay(tmp_path: Path) -> None:
    """A record failing its checksum (a byte flipped in the merge's record): the records
    before it are replayed, it and every one after it are not (never a later write
    without an earlier one)."""
    data, ends = _log_after_crash(tmp_path)
    spoiled = bytearray(data)
    spoiled[ends[5] + 12] ^= 0xFF  # inside the seventh record, the merge
    (tmp_path / LOG_FILE).write_bytes(bytes(spoiled))
    with Backend(tmp_path) as b:
        got = _state(b)
    assert sorted(got) == [("p", f"{i:02d}") for i in range(6)]
    assert "M" not in got[("p", "01")][1]


def test_replaying_a_log_twice_changes_nothing(tmp_path: Path) -> None:
    _log_after_crash(tmp_path)
    shutil.copy(tmp_path / LOG_FILE, tmp_path / "copy")
    with Backend(tmp_path) as b:
        once = _state(b)
    shutil.copy(tmp_path / "copy", tmp_path / LOG_FILE)  # as if killed before emptying it
    with Backend(tmp_path) as b:
        assert _state(b) == once


def test_a_log_that_cannot_be_written_refuses_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log's write fails (a full disk): the insert, the change set and the upsert are
    answered 500 with nothing applied (in memory or in SQLite, now or after a crash), and
    the next writes are served."""
    b = Backend(tmp_path, durability="process")
    b.create_table(ACCOUNT, TABLE)
    b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "kept", _props(1)))
    assert b._store is not None
    log = b._store._log
    assert log is not None

    def full(record: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(log, "append", full)
    refused: list[Callable[[], object]] = [
        lambda: b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "new", _props(2))),
        lambda: b.execute_batch(ACCOUNT, TABLE, [WriteOp("insert", "b", str(i)) for i in range(3)]),
        lambda: b.write(ACCOUNT, TABLE, WriteOp("replace", "p", "kept", _props(9))),
    ]
    for attempt in refused:
        with pytest.raises(StubError) as exc:
            attempt()
        assert (exc.value.status, exc.value.code) == (500, "InternalError")
    monkeypatch.undo()
    assert sorted(_state(b)) == [("p", "kept")]
    assert _state(b)[("p", "kept")][1] == _props(1)
    b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "after"))
    _crash(b)
    with Backend(tmp_path) as again:
        assert sorted(_state(again)) == [("p", "after"), ("p", "kept")]


def test_a_transaction_rolled_back_under_the_log_is_replayed_from_it(tmp_path: Path) -> None:
    """A failing disk may make SQLite roll the open transaction back: the logged writes
    are then missing from SQLite, so the next write replays the log before its checks
    (an insert of a logged key is still refused) and reads see every logged write."""
    with Backend(tmp_path, durability="process") as b:
        b.create_table(ACCOUNT, TABLE)
        for rk in "abc":
            b.write(ACCOUNT, TABLE, WriteOp("insert", "p", rk, _props(1)))
        assert b._store is not None
        b._store.db.execute("ROLLBACK")  # (what SQLITE_FULL or SQLITE_IOERR may do)
        with pytest.raises(StubError) as taken:
            b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "b"))
        assert taken.value.code == "EntityAlreadyExists"
        b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "d"))
        b._store.db.execute("ROLLBACK")
        with pytest.raises(StubError) as batch_taken:  # (a change set's checks read first)
            b.execute_batch(ACCOUNT, TABLE, [WriteOp("insert", "p", "d")])
        assert batch_taken.value.code == "EntityAlreadyExists"
        b.execute_batch(ACCOUNT, TABLE, [WriteOp("insert", "q", "e")])
        assert sorted(_state(b)) == [("p", "a"), ("p", "b"), ("p", "c"), ("p", "d"), ("q", "e")]


def test_table_level_writes_commit_the_logged_writes_first(tmp_path: Path) -> None:
    """Table-level writes are their own transactions: the logged writes before them are
    committed first, so a crash after them keeps both, in order."""
    b = Backend(tmp_path, durability="process")
    b.create_table(ACCOUNT, TABLE)
    b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "r"))
    b.create_table(ACCOUNT, "Second")
    assert b._store is not None
    assert not b._store._pending
    b.write(ACCOUNT, "Second", WriteOp("insert", "p", "s"))
    b.delete_table(ACCOUNT, TABLE)
    b.write(ACCOUNT, "Second", WriteOp("insert", "p", "t"))
    _crash(b)
    with Backend(tmp_path) as again:
        assert again.table_name(ACCOUNT, TABLE.lower()) is None
        page = again.query_entities(ACCOUNT, "Second", None, None, None)
        assert [e.rk for e in page.entities] == ["s", "t"]


def test_the_thresholds_and_the_timer_commit_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past FLUSH_RECORDS writes the open transaction commits at once; the flusher
    thread commits what is left after FLUSH_DELAY."""
    monkeypatch.setattr(_store, "FLUSH_RECORDS", 5)
    with Backend(tmp_path, durability="process") as b:
        b.create_table(ACCOUNT, TABLE)
        assert b._store is not None
        log = b._store._log
        assert log is not None
        for i in range(5):
            b.write(ACCOUNT, TABLE, WriteOp("insert", "p", str(i)))
        assert (log.records, b._store._pending) == (0, False)
        b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "x"))
        assert log.records == 1
    monkeypatch.setattr(_writelog, "FLUSH_DELAY", 0.01)
    with Backend(tmp_path, durability="process") as b:
        assert b._store is not None
        b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "y"))
        flusher = b._store._flusher
        assert flusher is not None
        for _ in range(500):
            if not b._store._pending:
                break
            flusher._stopping.wait(0.01)
        assert not b._store._pending
        assert ("p", "y") in _committed_keys(tmp_path)


def _committed_keys(folder: Path) -> set[tuple[str, str]]:
    """The keys committed to the SQLite file, read by another connection."""
    with sqlite3.connect(folder / DB_FILE) as db:
        found = db.execute("SELECT pk, rk FROM entity_rows").fetchall()
    db.close()
    return {(key_text(pk), key_text(rk)) for pk, rk in found}


def test_records_round_trip() -> None:
    rows = [
        (3, key_blob("é"), key_blob("\U0001f600"), 7, '[["N","i",1]]', 7, 2),
        (3, key_blob(""), key_blob("r"), 8, "[]", -1, 0),
    ]
    gone = [(4, key_blob("p"), key_blob("\ud800"))]
    record = encode_record(rows, gone, 99)
    assert decode_records(record * 2) == ([(99, rows, gone)] * 2, 2 * len(record))
    assert encode_insert(rows[0], 5) == encode_record(rows[:1], [], 5)
    assert decode_records(record[:-1]) == ([], 0)
    assert decode_records(b"") == ([], 0)


# --- the log file itself: mapped and written ---------------------------------------------


def _record(n: int, size: int = 40) -> bytes:
    row = (1, key_blob("p"), key_blob(f"r{n}"), n, "x" * size, n, 0)
    return encode_record([row], [], n)


_MAPS = pytest.mark.skipif(not _writelog._MAPPING, reason="no mmap + posix_fallocate here")


@pytest.mark.parametrize("mapped", [pytest.param(True, marks=_MAPS), False])
def test_the_log_holds_its_records_until_emptied(tmp_path: Path, mapped: bool) -> None:
    """Appended records are in the file at once (read by another handle, as after a kill);
    emptied, none is; a record above the first reservation grows a mapped log; closed
    without removal, the file is exactly its records."""
    path = tmp_path / LOG_FILE
    log = WriteLog(path, mapped=mapped)
    assert log.mapped is mapped
    first = [_record(n) for n in range(3)]
    for record in first:
        log.append(record)
    assert (log.size, log.records) == (sum(map(len, first)), 3)
    assert decode_records(path.read_bytes()) == decode_records(b"".join(first))
    log.reset()
    assert (log.size, log.records) == (0, 0)
    assert decode_records(path.read_bytes()) == ([], 0)
    big = _record(7, MAP_RESERVE + 1000)  # more than the first reservation
    later = [_record(5), big, _record(6)]
    for record in later:
        log.append(record)
    assert decode_records(path.read_bytes())[0] == decode_records(b"".join(later))[0]
    log.close(remove=False)
    assert path.read_bytes() == b"".join(later)


def _no_space(*args: object) -> None:
    raise OSError(28, "No space left on device")


@_MAPS
def test_a_full_disk_refuses_a_mapped_record_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record past the mapped log's reservation when the disk is full: ``OSError`` and
    nothing copied (the records before it intact); once there is space, it is taken. An
    emptied log that cannot reserve again refuses the next record the same way."""
    path = tmp_path / LOG_FILE
    log = WriteLog(path, mapped=True)
    kept = _record(1)
    log.append(kept)
    big = _record(2, MAP_RESERVE)
    with monkeypatch.context() as m:
        m.setattr(os, "posix_fallocate", _no_space)
        with pytest.raises(OSError):
            log.append(big)
        assert (log.size, log.records) == (len(kept), 1)
        assert decode_records(path.read_bytes()) == ([decode_records(kept)[0][0]], len(kept))
        log.append(_record(3))  # (within the reservation: taken)
    log.append(big)
    assert log.records == 3
    with monkeypatch.context() as m:
        m.setattr(os, "posix_fallocate", _no_space)
        log.reset()  # committed: the file is cut, its reservation refused
        with pytest.raises(OSError):
            log.append(_record(4))
        assert (log.size, log.records) == (0, 0)
        assert path.read_bytes() == b""
    log.append(_record(5))
    assert decode_records(path.read_bytes())[0] == decode_records(_record(5))[0]
    log.close(remove=True)
    assert not path.exists()


def test_the_mount_of_a_path_is_the_deepest_latest() -> None:
    lines = [
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw",
        "30 22 0:5 / /data rw shared:2 - btrfs /dev/vdb rw",
        "31 30 0:6 / /data/fast rw shared:3 - xfs /dev/vdc rw",
        "32 22 0:7 / /data rw shared:4 - tmpfs tmpfs rw",  # mounted over /data later
        "33 22 0:8 / /my\\040dir rw - overlay overlay rw",
        "bad line",
    ]
    assert mount_type(lines, "/data/x") == "tmpfs"
    assert mount_type(lines, "/data/fast/x") == "xfs"
    assert mount_type(lines, "/datax") == "ext4"
    assert mount_type(lines, "/my dir/log") == "overlay"
    assert mount_type(lines[:2], "/data") == "btrfs"
    assert mount_type([], "/x") is None
    assert not {"btrfs", "zfs"} & MAPPABLE_FILESYSTEMS
