"""The durable store's cache of decoded rows (_rowcache): never a state SQLite would not
give, bounded, and used.

The differential test runs generated write and read sequences against an in-memory
backend and durable backends whose caches differ (none: every row decoded, as before the
cache; a few entries: constant eviction; the default), and asks for the same answers.
"""

from __future__ import annotations

import json
import tempfile
import threading
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt_server_stub import _props as props_codec
from azt_server_stub import _store
from azt_server_stub._rowcache import RowCache, entry_size
from azt_server_stub.backend import Backend, GroupWrite, WriteKind, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, EdmName, Entity, TypedValue

ACCOUNT = "devstoreaccount1"
TABLE = "Cached"

_PKS = st.sampled_from(["p", "q\U0001f600", "\ue000", "\ud83d\ude00"])
_RKS = st.text(st.sampled_from("ab\u00e9\U0001f600\ud83d\ude00"), max_size=2)
_VALUES: st.SearchStrategy[TypedValue] = st.one_of(
    st.tuples(st.just(Edm.STRING), st.text(max_size=5)),
    st.tuples(st.just(Edm.INT32), st.integers(-(2**31), 2**31 - 1)),
    st.tuples(st.just(Edm.INT64), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(Edm.DOUBLE), st.floats(allow_nan=False)),
    st.tuples(st.just(Edm.BOOLEAN), st.booleans()),
    st.tuples(st.just(Edm.BINARY), st.binary(max_size=4)),
    st.tuples(st.just(Edm.GUID), st.uuids()),
)
_PROPS = st.dictionaries(st.sampled_from(["A", "B", "C"]), _VALUES, max_size=3)
_KINDS: st.SearchStrategy[WriteKind] = st.sampled_from(get_args(WriteKind))


@st.composite
def _op(draw: st.DrawFn) -> WriteOp:
    kind = draw(_KINDS)
    if_match = "*" if kind == "delete" else draw(st.sampled_from([None, "*"]))
    return WriteOp(kind, draw(_PKS), draw(_RKS), draw(_PROPS), if_match=if_match)


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), _op()),
        st.tuples(st.just("batch"), st.lists(_op(), min_size=1, max_size=4)),
        st.tuples(st.just("group"), st.lists(_op(), min_size=1, max_size=3)),
        st.tuples(st.just("get"), _PKS, _RKS),
        st.tuples(st.just("page"), st.integers(1, 6), st.tuples(_PKS, _RKS) | st.none()),
        st.tuples(st.just("recreate")),
    ),
    max_size=25,
)


def _props(props: dict[str, TypedValue]) -> list[tuple[str, EdmName, str]]:
    """Properties compared with their values' types and exact text (-0.0 is not 0.0)."""
    return [(name, edm, f"{type(v).__name__}:{v!r}") for name, (edm, v) in props.items()]


def _seen(entity: Entity | None) -> Any:
    if entity is None:
        return None
    return (entity.pk, entity.rk, entity.timestamp, _props(entity.props))


def _step(b: Backend, step: tuple[Any, ...]) -> Any:
    try:
        match step:
            case ("write", op):
                r = b.write(ACCOUNT, TABLE, op)
                return (_seen(r.entity), r.created)
            case ("batch", ops):
                pk = ops[0].pk
                ops = [WriteOp(o.kind, pk, o.rk, o.props, if_match=o.if_match) for o in ops]
                return [(_seen(r.entity), r.created) for r in b.execute_batch(ACCOUNT, TABLE, ops)]
            case ("group", ops):
                out = b.commit_group([GroupWrite(ACCOUNT, TABLE, [o], batch=False) for o in ops])
                return [
                    o.code if isinstance(o, StubError) else [_seen(r.entity) for r in o]
                    for o in out
                ]
            case ("get", pk, rk):
                return _seen(b.get_entity(ACCOUNT, TABLE, pk, rk))
            case ("page", top, start):
                page = b.query_entities(ACCOUNT, TABLE, None, top, start)
                return ([_seen(e) for e in page.entities], page.next_key)
            case ("recreate",):
                b.delete_table(ACCOUNT, TABLE)
                return b.create_table(ACCOUNT, TABLE)
    except StubError as exc:
        return (exc.status, exc.code, exc.index)
    raise AssertionError(step)


def _with_cache(b: Backend, budget: int) -> Backend:
    store = b._store
    assert store is not None
    store._cache = RowCache(budget)
    return b


def _everything(b: Backend) -> Any:
    page = b.query_entities(ACCOUNT, TABLE, None, 1000, None)
    return [_seen(e) for e in page.entities]


@settings(max_examples=60, deadline=None)
@given(_STEPS)
def test_cached_answers_equal_uncached_and_memory(steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        backends = [
            Backend(clock=lambda: 1),
            _with_cache(Backend(root / "none", clock=lambda: 1), 0),
            _with_cache(Backend(root / "few", clock=lambda: 1), 2_000),
            Backend(root / "default", clock=lambda: 1),
        ]
        try:
            for b in backends:
                b.create_table(ACCOUNT, TABLE)
            for step in [*steps, ("page", 1000, None), *steps[:3]]:
                answers = [_step(b, step) for b in backends]
                assert all(a == answers[0] for a in answers), step
            for b in backends:
                store = b._store
                if store is not None:
                    assert store._cache.size <= store._cache.budget
            backends[3].close()
            reopened = Backend(root / "default")
            try:
                assert _everything(reopened) == _everything(backends[0])
            finally:
                reopened.close()
        finally:
            for b in backends:
                b.close()


def _store_with_rows(path: Path, n: int) -> _store.SqliteStore:
    store = _store.SqliteStore(path)
    store.create_table(ACCOUNT, "t", "T")
    rows = [Entity("p", f"{i:03d}", 1, {"N": (Edm.INT32, i)}) for i in range(n)]
    store.write_entity_groups([(ACCOUNT, "t", rows, [])], 1)
    return store


def test_a_snapshot_reads_its_versions_whatever_the_cache_holds(tmp_path: Path) -> None:
    store = _store_with_rows(tmp_path, 4)
    try:
        with store.snapshot():
            before = store.scan(ACCOUNT, "t", ("", ""), None, 10)  # cached: version 1
            newer = [Entity("p", "001", 2, {"N": (Edm.INT32, -1)})]
            store.write_entity_groups([(ACCOUNT, "t", newer, [("p", "002")])], 2)
            # The cache learns version 2 of 001 (as another reader would leave it).
            key = (store._tids[(ACCOUNT, "t")], _store.key_blob("p"), _store.key_blob("001"))
            store._cache.put(key, newer[0], 100)
            again = store.scan(ACCOUNT, "t", ("", ""), None, 10)
            assert again == before  # the snapshot's versions, 002 still there
            assert [e.props["N"][1] for e in again] == [0, 1, 2, 3]
        after = store.scan(ACCOUNT, "t", ("", ""), None, 10)
        assert [(e.rk, e.props["N"][1]) for e in after] == [("000", 0), ("001", -1), ("003", 3)]
        assert store.get(ACCOUNT, "t", "p", "002") is None
        assert store.get(ACCOUNT, "t", "p", "001") is after[1]  # decoded once more, kept
    finally:
        store.close()


def test_each_stored_version_is_decoded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Backend(tmp_path) as b:
        b.create_table(ACCOUNT, "Once")
        ops = [WriteOp("insert", "p", f"{i:03d}", {"N": (Edm.INT32, i)}) for i in range(50)]
        b.execute_batch(ACCOUNT, "Once", ops)
    decoded: list[str] = []
    real = _store.decode_props

    def counting(text: str) -> dict[str, TypedValue]:
        decoded.append(text)
        return real(text)

    monkeypatch.setattr(_store, "decode_props", counting)
    with Backend(tmp_path) as b:
        first = b.query_entities(ACCOUNT, "Once", None, 1000, None).entities
        assert len(decoded) == 50
        second = b.query_entities(ACCOUNT, "Once", None, 1000, None).entities
        assert b.get_entity(ACCOUNT, "Once", "p", "007") is first[7]
        assert len(decoded) == 50
        assert all(a is c for a, c in zip(first, second, strict=True))
        b.write(ACCOUNT, "Once", WriteOp("merge", "p", "007", {"M": (Edm.BOOLEAN, True)}))
        changed = b.get_entity(ACCOUNT, "Once", "p", "007")  # a new version: decoded
        assert len(decoded) == 51
        assert changed.props["M"] == (Edm.BOOLEAN, True)
        assert changed.timestamp > first[7].timestamp
        b.write(ACCOUNT, "Once", WriteOp("delete", "p", "008", if_match="*"))
        with pytest.raises(StubError):
            b.get_entity(ACCOUNT, "Once", "p", "008")
        rks = [e.rk for e in b.query_entities(ACCOUNT, "Once", None, 1000, None).entities]
        assert "008" not in rks
        assert len(rks) == 49
        assert len(decoded) == 51


def test_the_cache_stays_within_its_budget(tmp_path: Path) -> None:
    store = _store_with_rows(tmp_path, 300)
    try:
        one = entry_size((1, _store.key_blob("p"), _store.key_blob("000")), len('[["N","i",0]]'))
        store._cache = RowCache(one * 40 + one // 2)
        seen = store.scan(ACCOUNT, "t", ("", ""), None, 1000)
        assert [e.rk for e in seen] == [f"{i:03d}" for i in range(300)]
        sizes = [
            entry_size((1, _store.key_blob("p"), _store.key_blob(e.rk)), len(f'[["N","i",{i}]]'))
            for i, e in enumerate(seen)
        ]
        fitting = next(k for k in range(1, 300) if sum(sizes[-k - 1 :]) > store._cache.budget)
        assert 35 <= fitting <= 40  # the newest rows that fit the budget
        assert len(store._cache) == fitting
        assert store._cache.size == sum(sizes[-fitting:]) <= store._cache.budget
        # The newest rows are kept, the oldest went first.
        assert store.get(ACCOUNT, "t", "p", "299") is seen[299]
        assert store.get(ACCOUNT, "t", "p", "000") is not seen[0]
    finally:
        store.close()


def test_a_deleted_table_leaves_nothing_cached(tmp_path: Path) -> None:
    with Backend(tmp_path) as b:
        b.create_table(ACCOUNT, "Gone")
        b.write(ACCOUNT, "Gone", WriteOp("insert", "p", "r", {"N": (Edm.INT32, 1)}))
        assert b.get_entity(ACCOUNT, "Gone", "p", "r").props["N"] == (Edm.INT32, 1)
        store = b._store
        assert store is not None
        assert len(store._cache) == 1
        b.delete_table(ACCOUNT, "Gone")
        assert len(store._cache) == 0
        assert store._cache.size == 0
        b.create_table(ACCOUNT, "Gone")
        with pytest.raises(StubError):
            b.get_entity(ACCOUNT, "Gone", "p", "r")


def _selects(store: _store.SqliteStore) -> list[str]:
    """The SELECTs the store's reader connection runs from now on."""
    seen: list[str] = []
    reader = store._reader
    assert reader is not None
    reader.set_trace_callback(lambda sql: seen.append(sql) if "SELECT" in sql else None)
    return seen


def test_a_point_read_skips_sqlite_only_while_no_write_began(tmp_path: Path) -> None:
    store = _store_with_rows(tmp_path, 3)
    try:
        selects = _selects(store)
        first = store.get(ACCOUNT, "t", "p", "001")
        assert first is not None
        assert len(selects) == 1
        assert store.get(ACCOUNT, "t", "p", "001") is first
        assert len(selects) == 1  # verified, nothing written since: not read again
        store.create_table(ACCOUNT, "u", "U")  # any write, another table's too
        assert store.get(ACCOUNT, "t", "p", "001") is first  # same version: still decoded once
        assert len(selects) == 2
        with store.transaction() as db:  # a write open: read, never verified
            db.execute(
                "UPDATE entity_rows SET ts = 9, props = '[]' WHERE rk = ?",
                (_store.key_blob("001"),),
            )
            assert store.get(ACCOUNT, "t", "p", "001") is first  # the committed row
            assert store.get(ACCOUNT, "t", "p", "001") is first
            assert len(selects) == 4
        changed = store.get(ACCOUNT, "t", "p", "001")
        assert changed is not None
        assert (changed.timestamp, changed.props) == (9, {})
        assert store.get(ACCOUNT, "t", "p", "001") is changed
        assert len(selects) == 5
        with store.snapshot():  # a read transaction: its own state, always read
            assert store.get(ACCOUNT, "t", "p", "001") is changed
        assert sum("entity_rows" in sql for sql in selects) == 6
    finally:
        store.close()


def test_a_verified_read_outlives_writes_to_other_partitions_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store_with_rows(tmp_path, 3)
    store.create_table(ACCOUNT, "u", "U")
    try:
        selects = _selects(store)

        def read() -> Entity:
            entity = store.get(ACCOUNT, "t", "p", "001")
            assert entity is not None
            return entity

        first = read()
        assert read() is first
        assert len(selects) == 1
        other = Entity("q", "001", 5, {"N": (Edm.INT32, 5)})
        store.write_entity_groups([(ACCOUNT, "t", [other], [])], 5)  # another partition
        store.write_entity_groups([(ACCOUNT, "t", [], [("q", "001")])], 6)
        assert store.insert_new_entity(ACCOUNT, "u", Entity("p", "001", 7), 7)  # another table
        assert read() is first
        assert len(selects) == 1  # still verified: not read again
        store.write_entity_groups([(ACCOUNT, "t", [Entity("p", "002", 8)], [])], 8)
        assert read() is first  # its partition changed: read again (the same version)
        assert len(selects) == 2
        assert read() is first
        store.write_entity_groups([(ACCOUNT, "t", [], [("p", "000")])], 9)  # a delete there
        assert read() is first
        assert len(selects) == 3
        assert store.insert_new_entity(ACCOUNT, "t", Entity("p", "003", 10), 10)
        assert read() is first
        assert len(selects) == 4
        store.create_table(ACCOUNT, "v", "V")  # not tracked by partition: everything lapses
        assert read() is first
        assert len(selects) == 5
        monkeypatch.setattr(_store, "_TOUCHED_MAX", 2)
        for pk in ("a", "b", "c"):  # the map is full, then forgotten: everything lapses
            store.write_entity_groups([(ACCOUNT, "u", [Entity(pk, "r", 11)], [])], 11)
        assert read() is first
        assert len(selects) == 6
        changed = Entity("p", "001", 12, {"N": (Edm.INT32, 12)})
        store.write_entity_groups([(ACCOUNT, "t", [changed], [])], 12)
        assert read().props == changed.props
    finally:
        store.close()


@pytest.mark.parametrize("partitions", [("p",), ("p", "q")])
def test_point_reads_never_go_back_behind_a_committed_write(
    tmp_path: Path, partitions: tuple[str, ...]
) -> None:
    store = _store_with_rows(tmp_path, 1)
    acked = 0
    done = threading.Event()
    failures: list[str] = []

    def writer() -> None:
        nonlocal acked
        try:
            for n in range(1, 301):
                pk = partitions[n % len(partitions)]  # ("p", "q"): every other write elsewhere
                row = Entity(pk, "000", 1 + n, {"N": (Edm.INT32, n)})
                store.write_entity_groups([(ACCOUNT, "t", [row], [])], 1 + n)
                if pk == "p":
                    acked = n
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        last = 0
        final = max(n for n in range(1, 301) if partitions[n % len(partitions)] == "p")
        while not done.is_set() or last < final:
            floor = acked
            entity = store.get(ACCOUNT, "t", "p", "000")
            assert entity is not None
            n = entity.props["N"][1]
            if n < floor or n < last:
                failures.append(f"read {n} after {last}, {floor} committed")
            last = n
    finally:
        thread.join()
        store.close()
    assert failures == []


_SCAN_ONCE = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _decode_before(text: str) -> dict[str, TypedValue]:
    """``decode_props`` before msgspec: json's scanner, json.loads for the rest."""
    try:
        items, end = _SCAN_ONCE(text, 0)
    except StopIteration:
        items, end = None, -1
    if end != len(text) or type(items) is not list:
        items = json.loads(text)
    return {
        name: (props_codec._EDM[code], value)
        if code in props_codec._PLAIN_CODES
        else props_codec._read_value(code, value)
        for name, code, value in items
    }


def _outcome(text: str, decode: Any) -> Any:
    try:
        return ("ok", _props(decode(text)))
    except Exception as exc:  # a broken text: the same error type either way
        return ("raised", type(exc))


_ANY_TEXT = st.text(st.characters(codec=None), max_size=6)
_STORED_VALUES: st.SearchStrategy[TypedValue] = st.one_of(
    _VALUES,
    st.tuples(st.just(Edm.DOUBLE), st.floats()),  # NaN and infinities: json's own words
    st.tuples(st.just(Edm.STRING), _ANY_TEXT),  # lone surrogates
    st.tuples(st.just(Edm.DATETIME), st.integers(0, 3_155_378_975_999_999_999)),
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4),
    max_leaves=12,
)


@st.composite
def _stored_text(draw: st.DrawFn) -> str:
    """What the store writes, any JSON, and either bent by a character."""
    if draw(st.booleans()):
        names = st.text(max_size=4) | st.sampled_from(["A", "B"])
        text = _store.encode_props(draw(st.dictionaries(names, _STORED_VALUES, max_size=4)))
    else:
        value = draw(_JSON)
        text = json.dumps(
            value, ensure_ascii=draw(st.booleans()), indent=draw(st.none() | st.just(1))
        )
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 2))
        text = (
            text[:at]
            + draw(st.text(st.sampled_from('[]",\\ 0.eE-uNaI\ud800x'), max_size=2))
            + text[at + cut :]
        )
    return text


@settings(max_examples=600, deadline=None)
@given(_stored_text())
def test_stored_texts_decode_as_before_msgspec(text: str) -> None:
    assert _outcome(text, _store.decode_props) == _outcome(text, _decode_before)
