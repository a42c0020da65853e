"""The durable store's single-write paths against the paths they replaced.

* The group committer at ``--durability process`` commits every write at once, into the
  store's write-behind log (``_commit``, ``_writelog``): generated bursts of concurrent
  write requests (inserts, upserts, conditional writes with current, stale and malformed
  ETags, deletes, change sets) must get the answers, and leave the state, that the same
  requests applied one by one in arrival order give in memory, and at ``full`` (writer
  thread) alike.
* The store writes its last Timestamp with an UPDATE in place (``_store``) where it did
  INSERT OR REPLACE: generated write groups leave the database's rows exactly as the old
  statements do.
* The checks probe through the writer connection (``SqliteStore.writer_reads``): covered
  by the first test's answers (every conditional write reads the stored row first).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt_server_stub import _sql, _store
from azt_server_stub._commit import WriteCommitter
from azt_server_stub.backend import Backend, GroupWrite, WriteKind, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity, TypedValue, etag_for
from azt_server_stub.validation import COSMOS_TABLE_NAMES

ACCOUNT = "devstoreaccount1"
TABLE = "Paths"

_PKS = st.sampled_from(["p", "q"])
_RKS = st.sampled_from(["a", "b", "c", "\U0001f600", "\uffff"])  # (UTF-16 order: \U0001f600 first)
_PROPS: st.SearchStrategy[dict[str, TypedValue]] = st.dictionaries(
    st.sampled_from(["A", "B"]),
    st.one_of(
        st.tuples(st.just(Edm.STRING), st.text(max_size=3)),
        st.tuples(st.just(Edm.INT64), st.integers(-(2**63), 2**63 - 1)),
    ),
    max_size=2,
)
#: If-Match: absent, any, the ETag of Timestamp n (current, stale or never issued: the
#: clock is fixed, so Timestamps are 1, 2, 3, ...), or malformed.
_IF_MATCH = st.one_of(
    st.none(),
    st.just("*"),
    st.integers(1, 30).map(etag_for),
    st.just('W/"nonsense"'),
)


_KINDS: st.SearchStrategy[WriteKind] = st.sampled_from(get_args(WriteKind))


@st.composite
def _op(draw: st.DrawFn) -> WriteOp:
    kind = draw(_KINDS)
    return WriteOp(kind, draw(_PKS), draw(_RKS), draw(_PROPS), if_match=draw(_IF_MATCH))


_REQUEST = st.one_of(
    st.builds(lambda op: GroupWrite(ACCOUNT, TABLE, [op]), _op()),
    st.builds(
        lambda ops: GroupWrite(ACCOUNT, TABLE, ops, batch=True),
        st.lists(_op(), min_size=1, max_size=3),
    ),
)
#: Bursts of requests sent at once (a burst of one: a client waiting for each answer).
_BURSTS = st.lists(st.lists(_REQUEST, min_size=1, max_size=5), min_size=1, max_size=8)


def _seen(entity: Entity | None) -> Any:
    if entity is None:
        return None
    return (entity.pk, entity.rk, entity.timestamp, sorted(entity.props.items()))


def _answer(outcome: list[Any] | BaseException) -> Any:
    if isinstance(outcome, StubError):
        return (outcome.status, outcome.code, outcome.index)
    if isinstance(outcome, BaseException):
        raise outcome
    return [(_seen(r.entity), r.created) for r in outcome]


def _in_memory(bursts: list[list[GroupWrite]]) -> tuple[list[Any], Any, int]:
    """The reference: every request applied alone, in order, in memory."""
    b = Backend(clock=lambda: 1)
    b.create_table(ACCOUNT, TABLE)
    answers = []
    for burst in bursts:
        for item in burst:
            try:
                if item.batch:
                    answers.append(_answer(b.execute_batch(ACCOUNT, TABLE, item.ops)))
                else:
                    answers.append(_answer([b.write(ACCOUNT, TABLE, item.ops[0])]))
            except StubError as exc:
                answers.append(_answer(exc))
    return answers, _everything(b), b._last_ts


def _everything(b: Backend) -> Any:
    return [_seen(e) for e in b.query_entities(ACCOUNT, TABLE, None, 1000, None).entities]


def _assert_reopened(folder: Path, state: Any) -> None:
    """The store in ``folder``, opened again, holds ``state``."""
    reopened = Backend(folder, clock=lambda: 1)
    try:
        assert _everything(reopened) == state
    finally:
        reopened.close()


async def _committed(b: Backend, bursts: list[list[GroupWrite]]) -> list[Any]:
    committer = WriteCommitter(b)
    answers: list[Any] = []
    try:
        for burst in bursts:
            outcomes = await asyncio.gather(
                *(committer.submit(item) for item in burst), return_exceptions=True
            )
            answers += [_answer(o) for o in outcomes]
    finally:
        await committer.close()
    return answers


@pytest.mark.parametrize("durability", ["process", "full"])
@settings(max_examples=40, deadline=None)
@given(bursts=_BURSTS)
def test_committed_bursts_answer_as_requests_applied_in_order(
    durability: str, bursts: list[list[GroupWrite]]
) -> None:
    expected, state, last = _in_memory(bursts)
    with tempfile.TemporaryDirectory() as folder:
        b = Backend(Path(folder), clock=lambda: 1, durability=durability)
        try:
            b.create_table(ACCOUNT, TABLE)
            assert asyncio.run(_committed(b, bursts)) == expected
            assert _everything(b) == state
            assert b._last_ts == last
        finally:
            b.close()
        _assert_reopened(Path(folder), state)


def _insert(rk: str) -> GroupWrite:
    """A single insert into partition "p" of the test table."""
    return GroupWrite(ACCOUNT, TABLE, [WriteOp("insert", "p", rk)])


def test_at_process_durability_every_write_is_committed_by_its_handler_and_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At ``process`` durability every write, one at a time or a burst in one turn of the
    loop, is committed at once by its handler (no future, no queue): the store appends it
    to its write-behind log and commits the SQLite transactions in groups itself."""
    b = Backend(tmp_path, durability="process")
    b.create_table(ACCOUNT, TABLE)
    groups: list[int] = []
    commit_group = b.commit_group

    def counted(items: list[GroupWrite]) -> Any:
        groups.append(len(items))
        return commit_group(items)

    monkeypatch.setattr(b, "commit_group", counted)
    assert b._store is not None
    commits: list[str] = []
    b._store.db.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)

    async def scenario() -> None:
        committer = WriteCommitter(b)
        for rk in "ab":  # one at a time
            await committer.submit(_insert(rk))
            await asyncio.sleep(0)
        await asyncio.gather(*(committer.submit(_insert(rk)) for rk in "cdef"))  # one turn
        await asyncio.sleep(0)
        await committer.submit(_insert("g"))
        await committer.close()

    try:
        asyncio.run(scenario())
        assert groups == [1] * 7
        assert commits == []  # all seven in the log and the open transaction
        assert [e.rk for e in b.query_entities(ACCOUNT, TABLE, None, None, None).entities] == [
            *"abcdefg"
        ]
        assert commits == ["COMMIT"]  # the read committed them, as one transaction
    finally:
        b._store.db.set_trace_callback(None)
        b.close()


def test_at_full_durability_a_lone_write_commits_on_the_loop_and_concurrent_ones_on_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = Backend(tmp_path, durability="full")
    b.create_table(ACCOUNT, TABLE)
    loop_thread = threading.get_ident()
    groups: list[tuple[str, list[str]]] = []
    release = threading.Event()
    commit_group = b.commit_group

    def recorded(items: list[GroupWrite]) -> Any:
        where = "loop" if threading.get_ident() == loop_thread else "thread"
        groups.append((where, [item.ops[0].rk for item in items]))
        if where == "thread":
            assert release.wait(10)  # held until the test lets it go
        return commit_group(items)

    monkeypatch.setattr(b, "commit_group", recorded)

    async def scenario() -> None:
        committer = WriteCommitter(b)
        await committer.submit(_insert("a"))  # alone: at once, on the loop
        await asyncio.sleep(0)
        # "b" goes at once; "c" and "d" came in the same turn: grouped, on the thread
        burst = asyncio.gather(*(committer.submit(_insert(rk)) for rk in "bcd"))
        await asyncio.sleep(0.05)
        # the thread is committing: a write now waits its turn (order), not at once
        late = asyncio.ensure_future(committer.submit(_insert("e")))
        await asyncio.sleep(0.05)
        assert not late.done()
        release.set()
        await burst
        await late
        await asyncio.sleep(0)
        await committer.submit(_insert("f"))  # the last group was one write: at once again
        await committer.close()

    try:
        asyncio.run(scenario())
        assert groups == [
            ("loop", ["a"]),
            ("loop", ["b"]),
            ("thread", ["c", "d"]),
            ("thread", ["e"]),
            ("loop", ["f"]),
        ]
        assert [e.rk for e in b.query_entities(ACCOUNT, TABLE, None, None, None).entities] == [
            *"abcdef"
        ]
        state = _everything(b)
    finally:
        b.close()
    _assert_reopened(tmp_path, state)  # each acknowledged write is on disk


@pytest.mark.parametrize("burst", [1, 3])
def test_a_failed_commit_answers_500_and_the_committer_keeps_serving(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    burst: int,
) -> None:
    b = Backend(tmp_path, durability="process")
    b.create_table(ACCOUNT, TABLE)
    commit_group = b.commit_group
    # Alone: its commit fails. A burst: each write commits on its own (into the store's
    # write-behind log); the second one's commit fails, the others stand.
    failures = iter([RuntimeError("bug")] if burst == 1 else [None, RuntimeError("bug")])

    def failing(items: list[GroupWrite]) -> Any:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return commit_group(items)

    monkeypatch.setattr(b, "commit_group", failing)

    async def scenario() -> list[Any]:
        committer = WriteCommitter(b)
        items = [GroupWrite(ACCOUNT, TABLE, [WriteOp("insert", "p", str(n))]) for n in range(3)]
        first = await asyncio.gather(
            *(committer.submit(item) for item in items[:burst]), return_exceptions=True
        )
        await asyncio.sleep(0)
        again = await committer.submit(GroupWrite(ACCOUNT, TABLE, [WriteOp("insert", "p", "x")]))
        await committer.close()
        return [*first, again]

    try:
        with caplog.at_level(logging.ERROR, logger="azt_server_stub"):
            outcomes = asyncio.run(scenario())
        assert "stub bug while committing" in caplog.text
        refused = outcomes[:1] if burst == 1 else outcomes[1:2]
        assert all(isinstance(o, StubError) and o.status == 500 for o in refused)
        if burst == 3:
            assert outcomes[0][0].created
            assert outcomes[2][0].created
        assert outcomes[-1][0].created
        stored = b.query_entities(ACCOUNT, TABLE, None, None, None).entities
        assert [e.rk for e in stored] == (["x"] if burst == 1 else ["0", "2", "x"])
    finally:
        b.close()


# -- the rows and the last Timestamp vs the old statements (INSERT OR REPLACE of the meta row,
# the exact last Timestamp at every commit) -------------------------------------------------


def _old_write_entity_groups(
    store: _store.SqliteStore,
    groups: list[tuple[str, str, list[Entity], list[tuple[str, str]]]],
    last_timestamp: int,
) -> None:
    """``SqliteStore.write_entity_groups`` as it was (INSERT OR REPLACE of the meta row)."""
    with store.transaction() as db:
        for account, lname, puts, deletes in groups:
            tid = store._tids[(account, lname)]
            rows = [
                (
                    tid,
                    _store.key_blob(e.pk),
                    _store.key_blob(e.rk),
                    e.timestamp,
                    _store.encode_props(e.props),
                    e.created,
                    e.keys_at,
                )
                for e in puts
            ]
            if rows:
                db.executemany(_sql.PUT, rows)
            gone = [(tid, _store.key_blob(pk), _store.key_blob(rk)) for pk, rk in deletes]
            if gone:
                db.executemany(_sql.DELETE, gone)
        db.execute(
            "INSERT OR REPLACE INTO meta (k, v) VALUES ('last_timestamp', ?)", (last_timestamp,)
        )


_KEYS = st.tuples(_PKS, _RKS)
_GROUPS = st.lists(
    st.tuples(
        st.dictionaries(_KEYS, _PROPS, max_size=3),  # puts
        st.lists(_KEYS, max_size=2),  # deletes (keys also put are left out)
        st.booleans(),  # the second table too
    ),
    max_size=6,
)


def _rows(path: Path) -> Any:
    with sqlite3.connect(path) as db:
        return (
            db.execute("SELECT k, v FROM meta ORDER BY k").fetchall(),
            db.execute("SELECT * FROM entity_rows ORDER BY tid, pk, rk").fetchall(),
        )


@settings(max_examples=40, deadline=None)
@given(_GROUPS, st.sampled_from(["process", "full"]))
def test_write_groups_store_what_the_old_statements_stored(
    steps: list[tuple[dict[tuple[str, str], dict[str, TypedValue]], list[tuple[str, str]], bool]],
    durability: str,
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        stores = [
            _store.SqliteStore(Path(folder) / name, durability=durability)
            for name in ("old", "new")
        ]
        try:
            for store in stores:
                store.create_table(ACCOUNT, "t", "T")
                store.create_table(ACCOUNT, "u", "U")
            for n, (puts, deletes, both) in enumerate(steps, start=1):
                entities = [Entity(pk, rk, n, props) for (pk, rk), props in puts.items()]
                gone = [key for key in dict.fromkeys(deletes) if key not in puts]
                groups = [(ACCOUNT, "t", entities, gone)]
                if both:
                    groups.append((ACCOUNT, "u", entities[:1], []))
                _old_write_entity_groups(stores[0], groups, 10 * n)
                stores[1].write_entity_groups(groups, 10 * n)
        finally:
            stores[0].close()
            # a clean close stores the exact last Timestamp over the bound kept ahead of it
            stores[1].close(10 * len(steps) if steps else None)
        assert _rows(stores[0].path) == _rows(stores[1].path)


@settings(max_examples=150, deadline=None)
@given(ops=st.lists(_op(), min_size=1, max_size=12), missing_table=st.booleans())
def test_memory_single_writes_answer_as_a_group_of_one(
    ops: list[WriteOp], missing_table: bool
) -> None:
    """In memory ``Backend.write`` runs a single write without ``commit_group``'s
    bookkeeping: the same answers, Timestamps and final state as a group of one."""
    direct, grouped = Backend(clock=lambda: 1), Backend(clock=lambda: 1)
    for b in (direct, grouped):
        if not missing_table:
            b.create_table(ACCOUNT, TABLE)
    for op in ops:
        try:
            mine = _answer([direct.write(ACCOUNT, TABLE, op)])
        except StubError as exc:
            mine = _answer(exc)
        assert mine == _answer(grouped.commit_group([GroupWrite(ACCOUNT, TABLE, [op])])[0])
        assert direct._last_ts == grouped._last_ts
    if not missing_table:
        assert _everything(direct) == _everything(grouped)


_INSERTS = st.builds(
    lambda pk, rk, props: WriteOp("insert", pk, rk, props),
    _PKS,
    _RKS,
    _PROPS | st.just({"bad name": (Edm.INT32, 1)}),
)


@pytest.mark.parametrize("durability", ["process", "full"])
@settings(max_examples=40, deadline=None)
@given(ops=st.lists(_INSERTS | _op(), min_size=1, max_size=12))
def test_lone_inserts_on_disk_answer_as_in_memory(durability: str, ops: list[WriteOp]) -> None:
    """A lone insert on disk is checked by the store's insert itself (no read before it):
    the same answers, Timestamps and stored state as in memory, also after reopening;
    a refused insert stores nothing."""
    expected, state, last = _in_memory([[GroupWrite(ACCOUNT, TABLE, [op])] for op in ops])
    with tempfile.TemporaryDirectory() as folder:
        b = Backend(Path(folder), clock=lambda: 1, durability=durability)
        try:
            b.create_table(ACCOUNT, TABLE)
            answers = []
            for op in ops:
                try:
                    answers.append(_answer([b.write(ACCOUNT, TABLE, op)]))
                except StubError as exc:
                    answers.append(_answer(exc))
            assert answers == expected
            assert _everything(b) == state
            assert b._last_ts == last
        finally:
            b.close()
        _assert_reopened(Path(folder), state)


#: Names a lone insert may give its table: as created, in other cases (one table on
#: Storage, missing on Cosmos), missing, and invalid (400 before 404).
_TABLE_NAMES = st.sampled_from([TABLE, TABLE.lower(), TABLE.upper(), "Missing", "bad name!"])


@st.composite
def _lone_insert(draw: st.DrawFn) -> tuple[str, WriteOp]:
    op = draw(_INSERTS)
    op.keys_at = draw(st.sampled_from([0, 1, 1 << 16 | 2]))
    # checked: the parser knew validation accepts it (only ever said of a valid entity)
    op.checked = draw(st.booleans()) and "bad name" not in op.props
    return draw(_TABLE_NAMES), op


@pytest.mark.parametrize("cosmos", [False, True])
@settings(max_examples=60, deadline=None)
@given(inserts=st.lists(_lone_insert(), min_size=1, max_size=12))
def test_lone_inserts_through_the_committer_answer_as_memory_writes(
    cosmos: bool, inserts: list[tuple[str, WriteOp]]
) -> None:
    """``WriteCommitter.insert_inline`` (a lone insert at ``process`` durability, the
    handler's path: ``Backend.insert_alone``'s inline table lookup, Timestamp and checked
    insert) answers as ``Backend.write`` in memory: the same entities (creation rank and
    key places included), refusals (missing or invalid table, invalid entity, stored key),
    Timestamps and stored state, also after reopening; on Storage and Cosmos naming."""
    flavour: dict[str, Any] = (
        {"table_naming": COSMOS_TABLE_NAMES, "key_order": False, "sorted_updates": False}
        if cosmos
        else {}
    )

    def seen(entity: Entity | None) -> Any:
        assert entity is not None
        return (_seen(entity), list(entity.props), entity.created, entity.keys_at)

    def answers(write: Any) -> list[Any]:
        got = []
        for table, op in inserts:
            try:
                result = write(ACCOUNT, table, replace(op, props=dict(op.props)))
                got.append((seen(result.entity), result.created))
            except StubError as exc:
                got.append(_answer(exc))
        return got

    memory = Backend(clock=lambda: 5, **flavour)
    memory.create_table(ACCOUNT, TABLE)
    expected = answers(memory.write)
    with tempfile.TemporaryDirectory() as folder:
        b = Backend(Path(folder), clock=lambda: 5, durability="process", **flavour)
        try:
            b.create_table(ACCOUNT, TABLE)
            got = answers(WriteCommitter(b).insert_inline)
            assert got == expected
            assert b._last_ts == memory._last_ts
            state = _everything(memory)
            assert _everything(b) == state
            assert [(e.created, e.keys_at) for e in _all(b)] == [
                (e.created, e.keys_at) for e in _all(memory)
            ]
        finally:
            b.close()
        reopened = Backend(Path(folder), clock=lambda: 1, **flavour)
        try:
            assert _everything(reopened) == state
        finally:
            reopened.close()


@pytest.mark.parametrize("cosmos", [False, True])
@settings(max_examples=100, deadline=None)
@given(writes=st.lists(_lone_insert() | st.tuples(_TABLE_NAMES, _op()), min_size=1, max_size=12))
def test_memory_writes_answer_as_a_group_of_one(
    cosmos: bool, writes: list[tuple[str, WriteOp]]
) -> None:
    """``Backend.write`` in memory (its inline table lookup, Timestamp and checked insert)
    answers as ``commit_group``'s general path: the same entities (creation rank and key
    places included), refusals, Timestamps and state; tables named in other cases, missing
    or invalid; on Storage and Cosmos naming."""
    flavour: dict[str, Any] = (
        {"table_naming": COSMOS_TABLE_NAMES, "key_order": False, "sorted_updates": False}
        if cosmos
        else {}
    )
    direct, grouped = Backend(clock=lambda: 3, **flavour), Backend(clock=lambda: 3, **flavour)
    for b in (direct, grouped):
        b.create_table(ACCOUNT, TABLE)

    def seen(results: Any) -> Any:
        if isinstance(results, StubError):
            return _answer(results)
        return [
            (_seen(r.entity), r.created)
            + (
                ()
                if r.entity is None
                else (list(r.entity.props), r.entity.created, r.entity.keys_at)
            )
            for r in results
        ]

    for table, op in writes:
        try:
            mine = seen([direct.write(ACCOUNT, table, replace(op, props=dict(op.props)))])
        except StubError as exc:
            mine = seen(exc)
        item = GroupWrite(ACCOUNT, table, [replace(op, props=dict(op.props))])
        assert mine == seen(grouped.commit_group([item])[0])
        assert direct._last_ts == grouped._last_ts
    assert [(e.created, e.keys_at) for e in _all(direct)] == [
        (e.created, e.keys_at) for e in _all(grouped)
    ]
    assert _everything(direct) == _everything(grouped)


def _all(b: Backend) -> list[Entity]:
    return b.query_entities(ACCOUNT, TABLE, None, 1000, None).entities


def test_a_groups_inserts_read_their_partition_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The single inserts of a durable write group that share a partition are read in one
    indexed read, not a point read each, and answer as in memory: a stored key, a key two
    inserts of the group share, a key an earlier change set of the group wrote, a missing
    table (refused in its place), and a partition with one insert (its own point read)."""
    group = [
        _insert("a"),  # stored before the group: 409
        _insert("b"),
        _insert("b"),  # written by the insert before it: 409
        GroupWrite(ACCOUNT, TABLE, [WriteOp("insert", "p", "d")], batch=True),
        _insert("d"),  # written by the change set before it: 409
        GroupWrite(ACCOUNT, "Missing", [WriteOp("insert", "p", "e")]),  # 404
        GroupWrite(ACCOUNT, TABLE, [WriteOp("insert", "q", "c")]),  # alone in "q"
        _insert("\U0001f600"),  # sorts after "d" in UTF-16 and is read with the others
    ]

    def run(backend: Backend) -> Any:
        try:
            backend.create_table(ACCOUNT, TABLE)
            backend.commit_group([_insert("a")])
            if backend._store is not None:
                counted(backend._store, "get")
                counted(backend._store, "get_rows")
            return [_answer(o) for o in backend.commit_group(group)], _everything(backend)
        finally:
            backend.close()

    reads: list[str] = []

    def counted(store: _store.SqliteStore, name: str) -> None:
        method = getattr(store, name)

        def count(*args: Any) -> Any:
            reads.append(name)
            return method(*args)

        monkeypatch.setattr(store, name, count)

    memory = run(Backend(clock=lambda: 1))
    disk = run(Backend(tmp_path, clock=lambda: 1))
    # partition "p": one read for the inserts, one for the change set's key; partition
    # "q": the point read of its one insert
    assert sorted(reads) == ["get", "get_rows", "get_rows"]
    assert disk == memory
    codes = [a[1] if isinstance(a, tuple) else "ok" for a in memory[0]]
    assert codes == [
        "EntityAlreadyExists",
        "ok",
        "EntityAlreadyExists",
        "ok",
        "EntityAlreadyExists",
        "TableNotFound",
        "ok",
        "ok",
    ]


@pytest.mark.parametrize("durability", ["process", "full"])
def test_a_lone_insert_below_the_bound_is_one_statement_above_it_one_transaction(
    tmp_path: Path, durability: str
) -> None:
    """``insert_new_entity`` commits a key not stored yet as one autocommitted statement
    while the Timestamp stays below the stored bound, and in a transaction that also
    rewrites the bound past it: either way the row is committed (read by another
    connection, kept after a reopen), a stored key answers False with nothing changed,
    and no transaction is left open."""
    # (the direct path: the write-behind log of ``process``, tested on its own, is off)
    store = _store.SqliteStore(tmp_path, durability=durability, write_behind=False)
    try:
        store.create_table(ACCOUNT, "t", "T")
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)
        assert store.insert_new_entity(ACCOUNT, "t", Entity("p", "a", 5, {"N": (Edm.INT32, 1)}), 5)
        bound = 5 + _store.TIMESTAMP_RESERVE
        # (the first bound of a new store: its meta row inserted after the UPDATE found none)
        assert [s.split()[0] for s in statements] == [
            "BEGIN",
            "INSERT",
            "UPDATE",
            "INSERT",
            "COMMIT",
        ]
        statements.clear()
        assert store.insert_new_entity(ACCOUNT, "t", Entity("p", "b", 6), 6)
        assert [s.split()[0] for s in statements] == ["INSERT"]  # autocommitted
        statements.clear()
        assert not store.insert_new_entity(ACCOUNT, "t", Entity("p", "a", 7), 7)  # stored
        assert [s.split()[0] for s in statements] == ["INSERT"]
        assert not store.db.in_transaction
        statements.clear()
        late = bound + 1  # past the bound: rewritten with the insert, in one transaction
        assert not store.insert_new_entity(ACCOUNT, "t", Entity("p", "b", late), late)
        assert [s.split()[0] for s in statements] == ["BEGIN", "INSERT", "ROLLBACK"]
        assert not store.db.in_transaction
        assert store.insert_new_entity(ACCOUNT, "t", Entity("p", "c", late), late)
        assert not store.db.in_transaction
        store.db.set_trace_callback(None)
        with sqlite3.connect(store.path) as other:  # committed: another connection reads it
            rows = other.execute("SELECT rk, ts FROM entity_rows ORDER BY rk").fetchall()
            meta = other.execute("SELECT v FROM meta WHERE k = 'last_timestamp'").fetchone()
        assert [(_store.key_text(rk), ts) for rk, ts in rows] == [("a", 5), ("b", 6), ("c", late)]
        assert meta == (late + _store.TIMESTAMP_RESERVE,)
        assert store.get(ACCOUNT, "t", "p", "a") == Entity("p", "a", 5, {"N": (Edm.INT32, 1)})
    finally:
        store.close()
    again = _store.SqliteStore(tmp_path, durability=durability)
    try:
        assert [e.rk for e in again.scan(ACCOUNT, "t", ("", ""), None, 10)] == ["a", "b", "c"]
    finally:
        again.close()


_CHECKED_INSERTS = st.builds(
    lambda pk, rk, props, at: WriteOp("insert", pk, rk, props, checked=True, keys_at=at),
    _PKS,
    _RKS,
    _PROPS,
    st.sampled_from([0, 1, 1 << 16 | 2]),  # keys first, or placed among the properties
)
#: Any write whose properties validation accepts, marked so (as the plain change-set path
#: marks them): only a new key's insert may skip apply_write.
_CHECKED_OPS = _op().map(lambda op: replace(op, checked=True))


@settings(max_examples=200, deadline=None)
@given(
    batches=st.lists(
        st.lists(_CHECKED_INSERTS | _CHECKED_OPS | _INSERTS | _op(), min_size=0, max_size=5),
        min_size=1,
        max_size=8,
    ),
    missing_table=st.booleans(),
)
def test_memory_change_sets_answer_as_a_group_of_one(
    batches: list[list[WriteOp]], missing_table: bool
) -> None:
    """In memory ``Backend.execute_batch`` checks and applies a change set without
    ``commit_group``'s overlay (and a known-valid insert of a new key without
    ``apply_write``): the same answers (error, code and index included), Timestamps and
    final state as the change set committed as a group of one; a refused change set
    changes nothing."""
    direct, grouped, unchecked = (Backend(clock=lambda: 1) for _ in range(3))
    for b in (direct, grouped, unchecked):
        if not missing_table:
            b.create_table(ACCOUNT, TABLE)
    for ops in batches:
        try:
            mine = _answer(direct.execute_batch(ACCOUNT, TABLE, ops))
        except StubError as exc:
            mine = _answer(exc)
        item = GroupWrite(ACCOUNT, TABLE, list(ops), batch=True)
        assert mine == _answer(grouped.commit_group([item])[0])
        # every operation through apply_write (validation included): the same
        plain = GroupWrite(ACCOUNT, TABLE, [replace(op, checked=False) for op in ops], True)
        assert mine == _answer(unchecked.commit_group([plain])[0])
        assert direct._last_ts == grouped._last_ts == unchecked._last_ts
        if not missing_table:
            assert _stored(direct) == _stored(grouped) == _stored(unchecked)


def _stored(b: Backend) -> list[Any]:
    """Every stored entity, compared whole (creation rank, key places, property order)."""
    entities = b.query_entities(ACCOUNT, TABLE, None, 1000, None).entities
    return [
        (e.pk, e.rk, e.timestamp, list(e.props.items()), e.created, e.keys_at) for e in entities
    ]


def test_a_change_sets_new_rows_rank_in_operation_order() -> None:
    """The entities a change set creates share its Timestamp and rank in the order of its
    operations (Timestamp, Timestamp + 1, ...), inserted inline or through apply_write."""
    for checked in (True, False):
        b = Backend(clock=lambda: 7)
        b.create_table(ACCOUNT, TABLE)
        b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "a"))  # Timestamp 7
        ops = [
            WriteOp("insert", "p", rk, {"N": (Edm.INT32, n)}, checked=checked)
            for n, rk in enumerate(["d", "b", "c"])
        ]
        results = b.execute_batch(ACCOUNT, TABLE, ops)
        assert [(r.entity.timestamp, r.entity.created) for r in results if r.entity] == [
            (8, 8),
            (8, 9),
            (8, 10),
        ]
        assert [r.created for r in results] == [True, True, True]


def test_a_known_valid_insert_of_a_stored_key_is_refused_at_its_index() -> None:
    """A change set's known-valid insert (the plain path marks them) of a key already
    stored answers 409 EntityAlreadyExists at its index, and nothing is written."""
    b = Backend(clock=lambda: 7)
    b.create_table(ACCOUNT, TABLE)
    b.write(ACCOUNT, TABLE, WriteOp("insert", "p", "b", {"N": (Edm.INT32, 1)}))
    before = _stored(b)
    ops = [
        WriteOp("insert", "p", rk, {"N": (Edm.INT32, 2)}, checked=True) for rk in ("a", "b", "c")
    ]
    with pytest.raises(StubError) as caught:
        b.execute_batch(ACCOUNT, TABLE, ops)
    assert (caught.value.status, caught.value.code, caught.value.index) == (
        409,
        "EntityAlreadyExists",
        1,
    )
    assert _stored(b) == before
