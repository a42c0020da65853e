"""The backend's durable store: lossless round trips and crash safety (SIGKILL mid-stream)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from azt_server_stub import _store
from azt_server_stub._writelog import LOG_FILE, decode_records
from azt_server_stub.backend import Backend, SignedIdentifier, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, TypedValue, parse_datetime

ACCOUNT = "devstoreaccount1"


def _dump(b: Backend, table: str) -> dict[tuple[str, str], tuple[int, dict[str, Any]]]:
    out: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    token = None
    while True:
        page = b.query_entities(ACCOUNT, table, None, None, token)
        for e in page.entities:
            out[e.key] = (e.timestamp, dict(e.props))
        token = page.next_key
        if token is None:
            return out


ALL_TYPES: dict[str, TypedValue] = {
    "S": (Edm.STRING, "héllo \U0001f600 \U0010fffd astral"),
    "Empty": (Edm.STRING, ""),
    "I": (Edm.INT32, -(2**31)),
    "L": (Edm.INT64, 2**63 - 1),
    "Lmin": (Edm.INT64, -(2**63)),
    "D": (Edm.DOUBLE, 0.1),
    "Dneg0": (Edm.DOUBLE, -0.0),
    "Dinf": (Edm.DOUBLE, float("inf")),
    "Dninf": (Edm.DOUBLE, float("-inf")),
    "Dnan": (Edm.DOUBLE, float("nan")),
    "Dbig": (Edm.DOUBLE, 1.7976931348623157e308),
    "B": (Edm.BOOLEAN, True),
    "T": (Edm.DATETIME, parse_datetime("2020-09-15T23:02:10.4363943Z")),
    "Tmin": (Edm.DATETIME, parse_datetime("1601-01-01T00:00:00Z")),
    "G": (Edm.GUID, uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")),
    "X": (Edm.BINARY, bytes(range(256))),
    "Xempty": (Edm.BINARY, b""),
}


def _same_props(a: dict[str, TypedValue], b: dict[str, TypedValue]) -> bool:
    if list(a) != list(b):
        return False
    for name, (edm, value) in a.items():
        edm2, value2 = b[name]
        if edm is not edm2 or type(value) is not type(value2):
            return False
        if isinstance(value, float):
            if repr(value) != repr(value2):  # NaN, -0.0 and every bit of the mantissa
                return False
        elif value != value2:
            return False
    return True


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    with Backend(tmp_path) as b:
        b.create_table(ACCOUNT, "Types")
        b.create_table(ACCOUNT, "Dropped")
        b.create_table("second", "Other")
        b.write(ACCOUNT, "Dropped", WriteOp("insert", "p", "r"))
        b.delete_table(ACCOUNT, "dropped")
        for pk, rk in [("p", "r"), ("", ""), ("\U0001f600", "\ue000"), ("é", "\U0010fffdx")]:
            b.write(ACCOUNT, "Types", WriteOp("insert", pk, rk, dict(ALL_TYPES)))
        b.write(ACCOUNT, "Types", WriteOp("insert", "gone", "x"))
        b.write(ACCOUNT, "Types", WriteOp("delete", "gone", "x", if_match="*"))
        b.write(ACCOUNT, "Types", WriteOp("merge", "p", "r", {"S": (Edm.INT32, 5)}, "*"))
        policy = SignedIdentifier("pol", "2021-06-08", "2021-06-09T00:00:00.0000000Z", "ra")
        b.set_acl(ACCOUNT, "Types", [policy, SignedIdentifier("bare")])
        b.set_service_properties(ACCOUNT, b"<StorageServiceProperties>\xef\xbb\xbf</x>")
        before = _dump(b, "Types")
        last = max(ts for ts, _ in before.values())
    with Backend(tmp_path) as again:
        after = _dump(again, "Types")
        assert list(after) == list(before)
        for key, (ts, props) in before.items():
            assert after[key][0] == ts
            assert _same_props(after[key][1], props)
        assert after[("p", "r")][1]["S"] == (Edm.INT32, 5)
        assert again.table_name(ACCOUNT, "types") == "Types"
        assert again.table_name(ACCOUNT, "Dropped") is None
        assert again.table_name("second", "OTHER") == "Other"
        assert again.get_acl(ACCOUNT, "Types") == [policy, SignedIdentifier("bare")]
        assert again.get_service_properties(ACCOUNT) == (
            b"<StorageServiceProperties>\xef\xbb\xbf</x>"
        )
        assert again.get_entity(ACCOUNT, "Types", "\U0001f600", "\ue000").pk == "\U0001f600"
        # the order after loading is the UTF-16 order, and new writes get later timestamps
        pks = [k[0] for k in after]
        assert pks == sorted(pks, key=lambda s: s.encode("utf-16-be", "surrogatepass"))
        new = again.write(ACCOUNT, "Types", WriteOp("insert", "n", "n")).entity
        assert new is not None
        assert new.timestamp > last


def test_store_keeps_any_python_text(tmp_path: Path) -> None:
    """The store itself is lossless even for lone surrogates (which validation refuses)."""
    from azt_server_stub.model import Entity

    store = _store.SqliteStore(tmp_path)
    try:
        store.create_table(ACCOUNT, "types", "Types")
        entity = Entity("\ud800p", "r\udfff", 7, {"S": (Edm.STRING, "x \ud800 lone")})
        store.write_entity_groups([(ACCOUNT, "types", [entity], [])], 7)
    finally:
        store.close()
    again = _store.SqliteStore(tmp_path)
    try:
        assert again.load().tables[ACCOUNT]["types"].name == "Types"
        [loaded] = again.scan(ACCOUNT, "types", ("", ""), None, 10)
        assert again.get(ACCOUNT, "types", entity.pk, entity.rk) == loaded
    finally:
        again.close()
    assert (loaded.pk, loaded.rk, loaded.props) == (entity.pk, entity.rk, entity.props)


def test_timestamps_stay_increasing_across_restart_with_slow_clock(tmp_path: Path) -> None:
    early = parse_datetime("2000-01-01T00:00:00Z")
    with Backend(tmp_path) as b:
        b.create_table(ACCOUNT, "Clock")
        b.write(ACCOUNT, "Clock", WriteOp("insert", "p", "1"))
        b.write(ACCOUNT, "Clock", WriteOp("delete", "p", "1", if_match="*"))
        last = b.write(ACCOUNT, "Clock", WriteOp("insert", "p", "0")).entity
        b.write(ACCOUNT, "Clock", WriteOp("delete", "p", "0", if_match="*"))
    assert last is not None
    with Backend(tmp_path, clock=lambda: early) as b:  # table now empty; clock far behind
        entity = b.write(ACCOUNT, "Clock", WriteOp("insert", "p", "2")).entity
        assert entity is not None
        assert entity.timestamp > last.timestamp


def _stored_bound(folder: Path) -> int:
    with sqlite3.connect(folder / _store.DB_FILE) as db:
        row = db.execute("SELECT v FROM meta WHERE k = 'last_timestamp'").fetchone()
    db.close()
    return int(row[0])


class _Ticks:
    """A clock that moves one tick a call from ``start``."""

    def __init__(self, start: int) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1
        return self.now


@pytest.mark.parametrize("batch", [False, True])
def test_the_stored_timestamp_bound_is_written_once_per_reserve(
    tmp_path: Path, batch: bool
) -> None:
    """Commits store a bound TIMESTAMP_RESERVE ahead of their Timestamp, rewritten only
    once a Timestamp passes it; a crash restarts above every Timestamp issued, a clean
    close from the exact last one."""
    start = parse_datetime("2030-01-01T00:00:00Z")
    reserve = _store.TIMESTAMP_RESERVE
    b = Backend(tmp_path, clock=_Ticks(start), durability="process")
    issued = []
    try:
        b.create_table(ACCOUNT, "Bound")
        for i in range(50):
            op = WriteOp("insert", "p", f"{i:03d}")
            if batch:
                got = b.execute_batch(ACCOUNT, "Bound", [op])
            else:
                got = [b.write(ACCOUNT, "Bound", op)]
            assert got[0].entity is not None
            issued.append(got[0].entity.timestamp)
        assert b._store is not None
        b._store.flush()  # (the write-behind log's writes committed to SQLite)
        assert _stored_bound(tmp_path) == issued[0] + reserve  # written by the first commit only
        b._clock = lambda: issued[0] + reserve + 10
        passed = b.write(ACCOUNT, "Bound", WriteOp("insert", "p", "z")).entity
        assert passed is not None
        issued.append(passed.timestamp)
        b._store.flush()
        assert _stored_bound(tmp_path) == passed.timestamp + reserve
        b._clock = lambda: passed.timestamp + reserve + 10  # past it again: left in the log
        late = b.write(ACCOUNT, "Bound", WriteOp("insert", "p", "zz")).entity
        assert late is not None
        issued.append(late.timestamp)
    finally:
        assert b._store is not None
        b._store._close_connections()  # a crash: the exact last Timestamp is never stored
    # the log's write was not committed; the replay on opening moves the bound past it
    assert _stored_bound(tmp_path) == passed.timestamp + reserve
    _store.SqliteStore(tmp_path).close()  # (a store opened over the log replays it)
    assert _stored_bound(tmp_path) == issued[-1] + reserve
    with Backend(tmp_path, clock=lambda: start) as again:  # the clock went back, too
        after_crash = again.write(ACCOUNT, "Bound", WriteOp("insert", "q", "1")).entity
    assert after_crash is not None
    assert after_crash.timestamp == issued[-1] + reserve + 1
    assert _stored_bound(tmp_path) == after_crash.timestamp  # closed cleanly: exact
    with Backend(tmp_path, clock=lambda: start) as clean:
        after_close = clean.write(ACCOUNT, "Bound", WriteOp("insert", "q", "2")).entity
    assert after_close is not None
    assert after_close.timestamp == after_crash.timestamp + 1
    assert sorted(issued) == issued
    assert len(set(issued)) == len(issued)


def test_a_refused_commit_does_not_move_the_stored_bound(tmp_path: Path) -> None:
    """A write the store refuses (its insert finds the key taken, after a Timestamp past
    the bound was issued) rolls back and leaves the bound, on disk and in memory."""
    start = parse_datetime("2030-01-01T00:00:00Z")
    reserve = _store.TIMESTAMP_RESERVE
    with Backend(tmp_path, clock=_Ticks(start), durability="process") as b:
        b.create_table(ACCOUNT, "Refused")
        first = b.write(ACCOUNT, "Refused", WriteOp("insert", "p", "r")).entity
        assert first is not None
        assert b._store is not None
        b._clock = lambda: first.timestamp + 2 * reserve
        with pytest.raises(StubError) as taken:
            b.write(ACCOUNT, "Refused", WriteOp("insert", "p", "r"))
        assert taken.value.code == "EntityAlreadyExists"
        with pytest.raises(StubError):
            b.execute_batch(ACCOUNT, "Refused", [WriteOp("insert", "p", "r")])
        assert b._last_ts > first.timestamp + reserve  # (the refused writes' Timestamps)
        b._store.flush()  # (the write-behind log's writes committed to SQLite)
        assert b._store._reserved == _stored_bound(tmp_path) == first.timestamp + reserve


def test_refused_writes_and_batches_leave_disk_unchanged(tmp_path: Path) -> None:
    with Backend(tmp_path) as b:
        b.create_table(ACCOUNT, "Refused")
        b.write(ACCOUNT, "Refused", WriteOp("insert", "p", "a", {"V": (Edm.INT32, 1)}))
        before = _dump(b, "Refused")
        with pytest.raises(StubError):
            b.write(ACCOUNT, "Refused", WriteOp("insert", "p", "a"))
        with pytest.raises(StubError):
            b.execute_batch(
                ACCOUNT,
                "Refused",
                [
                    WriteOp("insert", "p", "b"),
                    WriteOp("delete", "p", "a", if_match="*"),
                    WriteOp("insert", "p", "c", {"bad-name": (Edm.INT32, 1)}),
                ],
            )
        assert _dump(b, "Refused") == before
    with Backend(tmp_path) as again:
        assert _dump(again, "Refused") == before


def test_failed_commit_changes_nothing_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Backend(tmp_path) as b:
        b.create_table(ACCOUNT, "Disk")
        b.write(ACCOUNT, "Disk", WriteOp("insert", "p", "a"))
        before = _dump(b, "Disk")

        def broken(*args: object, **kwargs: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        for name in (
            "write_entity_groups",
            "insert_new_entity",
            "create_table",
            "delete_table",
            "set_acl",
            "set_service",
        ):
            monkeypatch.setattr(_store.SqliteStore, name, broken)
        with pytest.raises(StubError) as exc:
            b.create_table(ACCOUNT, "Disk2")
        assert exc.value.code == "InternalError"
        assert b.table_name(ACCOUNT, "Disk2") is None
        with pytest.raises(StubError):
            b.delete_table(ACCOUNT, "Disk")
        with pytest.raises(StubError):
            b.set_acl(ACCOUNT, "Disk", [SignedIdentifier("x")])
        with pytest.raises(StubError):
            b.set_service_properties(ACCOUNT, b"<x/>")
        assert b.get_acl(ACCOUNT, "Disk") == []
        assert b.get_service_properties(ACCOUNT) is None
        with pytest.raises(StubError) as exc:
            b.write(ACCOUNT, "Disk", WriteOp("insert", "p", "b"))
        assert (exc.value.status, exc.value.code) == (500, "InternalError")
        with pytest.raises(StubError):
            b.execute_batch(ACCOUNT, "Disk", [WriteOp("delete", "p", "a", if_match="*")])
        assert _dump(b, "Disk") == before


def test_closed_store_refuses_writes(tmp_path: Path) -> None:
    b = Backend(tmp_path)
    b.create_table(ACCOUNT, "Closed")
    b.close()
    b.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        b.create_table(ACCOUNT, "Another")
    with pytest.raises(RuntimeError, match="closed"):
        b.write(ACCOUNT, "Closed", WriteOp("insert", "p", "r"))
    assert b.table_name(ACCOUNT, "Another") is None
    assert b.query_entities(ACCOUNT, "Closed", None, None, None).entities == []


# --- crash safety ---------------------------------------------------------------------

# The workload, shared by the child (which runs it) and the test (which models it).
WORKLOAD = '''
def step(i):
    """Step i: ("batch" | "single", [(op, pk, rk, props)])."""
    if i % 5 == 4:
        return "batch", [("insert", "b", f"{i:06d}-{j}", {"I": i * 10 + j}) for j in range(5)]
    if i % 7 == 3 and step(i - 1)[1][0][0] == "replace":
        return "single", [("delete", "s", f"{i - 1:06d}", None)]
    if i % 11 == 6:
        return "single", [("merge", "s", f"{i - 2:06d}", {"M": i})]
    return "single", [("replace", "s", f"{i:06d}", {"I": i, "Big": 2**40 + i})]
'''

CHILD = (
    WORKLOAD
    + """
import sys
from pathlib import Path
from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.model import Edm

def typed(props):
    return {k: ((Edm.INT64, v) if v > 2**31 else (Edm.INT32, v)) for k, v in props.items()}

if sys.argv[3] != "-":  # the write-behind log's writes never committed before the kill
    import azt_server_stub._writelog
    azt_server_stub._writelog.FLUSH_DELAY = float(sys.argv[3])
b = Backend(Path(sys.argv[1]), durability=sys.argv[2])
if b.table_name("devstoreaccount1", "Crash") is None:
    b.create_table("devstoreaccount1", "Crash")
i = 0
while True:
    kind, ops = step(i)
    wops = [
        WriteOp(op, pk, rk, typed(props or {}), "*" if op == "delete" else None)
        for op, pk, rk, props in ops
    ]
    if kind == "batch":
        b.execute_batch("devstoreaccount1", "Crash", wops)
    else:
        b.write("devstoreaccount1", "Crash", wops[0])
    sys.stdout.write(f"{i}\\n")
    sys.stdout.flush()
    i += 1
"""
)


def _model(steps: int) -> dict[tuple[str, str], dict[str, int]]:
    namespace: dict[str, Any] = {}
    exec(WORKLOAD, namespace)
    state: dict[tuple[str, str], dict[str, int]] = {}
    for i in range(steps):
        _, ops = namespace["step"](i)
        for op, pk, rk, props in ops:
            if op == "delete":
                state.pop((pk, rk), None)
            elif op == "merge":
                state[(pk, rk)] = {**state.get((pk, rk), {}), **props}
            else:
                state[(pk, rk)] = dict(props)
    return state


@pytest.mark.parametrize(
    ("durability", "flush_delay"), [("full", "-"), ("process", "-"), ("process", "3600")]
)
def test_sigkill_keeps_exactly_the_acknowledged_writes(
    tmp_path: Path, durability: str, flush_delay: str
) -> None:
    """SIGKILL of a process writing as fast as it can keeps exactly the acknowledged
    steps (change sets whole or not at all): committed to SQLite (``full``), or at
    ``process`` in the write-behind log too (with a flush delay of an hour: every write
    since the table's creation only in the log, replayed by the next open)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), durability, flush_delay],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    acked = -1
    try:
        for line in proc.stdout:
            acked = int(line)
            if acked >= 150:
                break
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    # Acknowledged before the kill, read after it: through the same buffered file, whose
    # read-ahead holds lines the loop above has not reached (communicate() reads the pipe
    # itself and would miss them: a fast writer's acknowledgements lost, not its writes).
    assert proc.stderr is not None
    with proc.stdout, proc.stderr:
        rest, err = proc.stdout.read(), proc.stderr.read()
    for line in rest.splitlines():
        acked = int(line)
    assert acked >= 150, err.decode()
    assert proc.returncode == -signal.SIGKILL
    log = tmp_path / LOG_FILE
    if flush_delay != "-":  # nothing flushed: the log holds every acknowledged step
        assert len(decode_records(log.read_bytes())[0]) >= acked + 1
    with Backend(tmp_path) as b:
        assert not log.exists()  # replayed, then removed by the clean close
        got = {
            key: {name: value for name, (_, value) in props.items()}
            for key, (_, props) in _dump(b, "Crash").items()
        }
    # every acknowledged step is there; at most the one in flight may also be
    assert got in (_model(acked + 1), _model(acked + 2))


def test_one_backend_per_location(tmp_path: Path) -> None:
    with Backend(tmp_path) as first:
        first.create_table(ACCOUNT, "Owned")
        with pytest.raises(RuntimeError, match="in use"):
            Backend(tmp_path)
        first.write(ACCOUNT, "Owned", WriteOp("insert", "p", "r"))  # the owner is unaffected
    with Backend(tmp_path) as second:  # free again after close
        assert second.get_entity(ACCOUNT, "Owned", "p", "r").rk == "r"


def test_group_commit_applies_items_in_order_all_or_nothing_each(tmp_path: Path) -> None:
    """commit_group: later items see earlier ones; a refused item (or change set) changes
    nothing; the net result is on disk after one commit, deletes and re-inserts included."""
    from azt_server_stub.backend import GroupWrite

    with Backend(tmp_path) as b:
        b.create_table(ACCOUNT, "Grp")
        b.create_table(ACCOUNT, "Other")
        b.write(ACCOUNT, "Grp", WriteOp("insert", "p", "gone"))
        b.write(ACCOUNT, "Grp", WriteOp("insert", "p", "back"))
        out = b.commit_group(
            [
                GroupWrite(ACCOUNT, "Grp", [WriteOp("insert", "p", "a", {"n": (Edm.INT32, 1)})]),
                GroupWrite(  # sees the insert above
                    ACCOUNT, "Grp", [WriteOp("merge", "p", "a", {"m": (Edm.INT32, 2)}, "*")]
                ),
                GroupWrite(ACCOUNT, "Grp", [WriteOp("insert", "p", "a")]),  # 409
                GroupWrite(ACCOUNT, "Grp", [WriteOp("delete", "p", "gone", if_match="*")]),
                GroupWrite(ACCOUNT, "Grp", [WriteOp("delete", "p", "back", if_match="*")]),
                GroupWrite(ACCOUNT, "Grp", [WriteOp("insert", "p", "back")]),  # re-inserted
                GroupWrite(  # a change set failing at its second operation: nothing of it
                    ACCOUNT,
                    "Grp",
                    [WriteOp("insert", "p", "x"), WriteOp("insert", "p", "a")],
                    batch=True,
                ),
                GroupWrite(ACCOUNT, "Missing", [WriteOp("insert", "p", "a")]),
                GroupWrite(
                    ACCOUNT,
                    "Other",
                    [WriteOp("insert", "q", "1"), WriteOp("insert", "q", "2")],
                    batch=True,
                ),
            ]
        )
        codes = [o.code if isinstance(o, StubError) else "ok" for o in out]
        assert codes == [
            "ok",
            "ok",
            "EntityAlreadyExists",
            "ok",
            "ok",
            "ok",
            "EntityAlreadyExists",
            "TableNotFound",
            "ok",
        ]
        failed_batch = out[6]
        assert isinstance(failed_batch, StubError)
        assert failed_batch.index == 1
        expected = {("p", "a"), ("p", "back")}
        assert set(_dump(b, "Grp")) == expected
        assert _dump(b, "Grp")[("p", "a")][1] == {"n": (Edm.INT32, 1), "m": (Edm.INT32, 2)}
    with Backend(tmp_path) as again:
        assert set(_dump(again, "Grp")) == expected
        assert len(_dump(again, "Other")) == 2
