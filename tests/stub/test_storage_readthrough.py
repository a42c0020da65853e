"""The durable store read through from SQLite: key order, start-up, pages, snapshots,
the old on-disk layout (the crash and round-trip tests are in test_storage_durability)."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt_server_stub import _store
from azt_server_stub._rows import MemoryRows, StoredRows
from azt_server_stub.backend import Backend, GroupWrite, WriteOp
from azt_server_stub.model import Edm, Entity
from azt_server_stub.odata import compile_entity_filter
from azt_server_stub.odata._utf16 import to_units
from azt_server_stub.query_pages import Key, sort_key, sort_str

ACCOUNT = "devstoreaccount1"

# Every region where code-point and UTF-16 order could disagree: ASCII, the BMP below
# the surrogates, lone surrogates, U+E000..U+FFFF, and astral characters.
_UNITS = st.one_of(
    st.characters(min_codepoint=0, max_codepoint=0x7F),
    st.characters(min_codepoint=0x80, max_codepoint=0xD7FF),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.characters(min_codepoint=0xE000, max_codepoint=0xFFFF),
    st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
)
_TEXT = st.text(_UNITS, max_size=6)


@settings(max_examples=400, deadline=None)
@given(_TEXT, _TEXT)
def test_key_blob_byte_order_is_utf16_code_unit_order(a: str, b: str) -> None:
    units_a = [ord(c) for c in to_units(a)]
    units_b = [ord(c) for c in to_units(b)]
    blob_a, blob_b = _store.key_blob(a), _store.key_blob(b)
    assert (blob_a < blob_b) == (units_a < units_b) == (sort_str(a) < sort_str(b))
    assert (blob_a == blob_b) == (units_a == units_b)
    assert _store.key_blob(sort_str(a)) == blob_a  # a sort string stores as its key


def test_key_blob_edges() -> None:
    ordered = ["", "\x00", "a", "a\x00", "\ud7ff", "\ud800", "\U00010000", "\U0010ffff"]
    ordered += ["\udfff", "\ue000", "\uffff", "\uffff\x00"]
    assert sorted(ordered, key=_store.key_blob) == ordered
    for text in ordered:
        assert _store.key_text(_store.key_blob(text)) == text


def _fill(b: Backend, table: str, keys: list[tuple[str, str]]) -> None:
    b.create_table(ACCOUNT, table)
    by_pk: dict[str, list[WriteOp]] = {}
    for i, (pk, rk) in enumerate(keys):
        by_pk.setdefault(pk, []).append(WriteOp("insert", pk, rk, {"N": (Edm.INT32, i)}))
    for ops in by_pk.values():
        for start in range(0, len(ops), 100):
            b.execute_batch(ACCOUNT, table, ops[start : start + 100])


def _keys() -> list[tuple[str, str]]:
    rnd = random.Random(16)
    pks = ["a", "b", "\ue000", "\U0001f600", "\uffff", "m\U00010000", "m\ufffd", ""]
    alphabet = "az0\u00e9\ud7ff\ue000\uffff\U0001f600\U0010fffd"
    keys: set[tuple[str, str]] = set()
    while len(keys) < 3000:
        rk = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 4)))
        keys.add((rnd.choice(pks), rk))
    ordered = list(keys)
    rnd.shuffle(ordered)
    return ordered


@pytest.mark.parametrize(
    "flt",
    [
        None,
        "N lt 40",  # sparse matches: the stored scan reads growing chunks
        "PartitionKey eq '\U0001f600'",
        "PartitionKey ge '\ue000' and PartitionKey lt '\uffff'",
        "(PartitionKey eq 'a' and RowKey ge 'z') or PartitionKey eq 'm\ufffd'",
        "RowKey gt '\ue000' and N ge 100",
    ],
)
@pytest.mark.parametrize("top", [1, 7, 1000])
def test_stored_pages_equal_memory_pages(tmp_path: Path, flt: str | None, top: int) -> None:
    keys = _keys()
    compiled = None if flt is None else compile_entity_filter(flt)
    with Backend(clock=lambda: 1) as memory, Backend(tmp_path, clock=lambda: 1) as durable:
        _fill(memory, "Pages", keys)
        _fill(durable, "Pages", keys)
        pages = 0
        token_m = token_d = None
        while True:
            m = memory.query_entities(ACCOUNT, "Pages", compiled, top, token_m)
            d = durable.query_entities(ACCOUNT, "Pages", compiled, top, token_d)
            assert d.entities == m.entities
            assert (d.next_key, d.scanned) == (m.next_key, m.scanned)
            token_m, token_d = m.next_key, d.next_key
            pages += 1
            if token_d is None or pages > 60:
                break
        assert pages > 1 or top == 1000


def test_stored_take_equals_memory_take(tmp_path: Path) -> None:
    """``StoredRows.take`` (one read per range, no sort keys) answers what the in-memory
    rows answer for any sorted, disjoint ranges, start and count: ranges before the start,
    a start inside a range, ranges that run out, a count met inside a range or exactly at
    its end, keys in every UTF-16 region."""
    keys = _keys()
    rnd = random.Random(34)
    with Backend(clock=lambda: 1) as memory, Backend(tmp_path, clock=lambda: 1) as durable:
        _fill(memory, "Take", keys)
        _fill(durable, "Take", keys)
        m_rows = memory._table(ACCOUNT, "Take").rows
        d_rows = durable._table(ACCOUNT, "Take").rows
        assert isinstance(m_rows, MemoryRows)
        assert isinstance(d_rows, StoredRows)
        points = sorted({sort_key(pk, rk) for pk, rk in keys})
        cases = 0
        for _ in range(300):
            cuts = sorted(rnd.sample(points, rnd.choice([2, 4, 6])))
            ranges: list[tuple[Key, Key | None]] = [
                (cuts[i], cuts[i + 1]) for i in range(0, len(cuts), 2)
            ]
            if rnd.random() < 0.3:  # the last range unbounded
                ranges[-1] = (ranges[-1][0], None)
            start = rnd.choice([("", ""), rnd.choice(points), ranges[-1][0]])
            count = rnd.choice([1, 2, 7, 50, 1001])
            with d_rows.snapshot():
                got = d_rows.take(ranges, start, count)
            want = m_rows.take(ranges, start, count)
            assert got == want, (ranges, start, count)
            cases += bool(want)
        # exact fits: a count that ends exactly at a range's end, and one more
        lo, hi = points[10], points[60]
        for count in (49, 50, 51):
            assert d_rows.take([(lo, hi)], lo, count) == m_rows.take([(lo, hi)], lo, count)
        assert len(m_rows.take([(lo, hi)], lo, 51)) == 50
        assert cases > 200


def test_partition_rows_read_at_once_equal_point_reads(tmp_path: Path) -> None:
    """``get_partition_rows`` (a change set's reads: in memory, one bisection first finds
    that no row lies between the least and the greatest key asked) answers what point
    reads answer, in memory and on disk: keys all absent below, above or between stored
    ones, some present, in every UTF-16 region, one key or many."""
    keys = _keys()
    rnd = random.Random(35)
    with Backend(clock=lambda: 1) as memory, Backend(tmp_path, clock=lambda: 1) as durable:
        _fill(memory, "Rows", keys)
        _fill(durable, "Rows", keys)
        m_rows = memory._table(ACCOUNT, "Rows").rows
        d_rows = durable._table(ACCOUNT, "Rows").rows
        stored = sorted({sort_key(pk, rk) for pk, rk in keys})
        spks = [*sorted({pk for pk, _ in stored}), "zz-none", "\U0001f601"]
        found_some = found_none = 0
        for _ in range(400):
            spk = sort_str(rnd.choice(spks))
            present = [rk for pk, rk in stored if pk == spk]
            pool = present + [rk + "~" for rk in present[:5]] + ["", "\uffff\uffff", "m"]
            asked = rnd.sample(pool, min(len(pool), rnd.choice([1, 2, 5, 40])))
            if rnd.random() < 0.3:  # only absent keys, in a gap of the partition
                asked = [rk + "\x00" + str(n) for n, rk in enumerate(present[:1] * 3)] or asked
            want = {(spk, rk): m_rows.get((spk, rk)) for rk in asked}
            want = {key: entity for key, entity in want.items() if entity is not None}
            assert m_rows.get_partition_rows(spk, asked) == want
            assert d_rows.get_partition_rows(spk, asked) == want
            found_some += bool(want)
            found_none += not want
        assert found_some > 50
        assert found_none > 50


def test_start_reads_no_entity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Backend(tmp_path) as b:
        _fill(b, "Lazy", [("p", f"{i:05d}") for i in range(500)])
    decoded = 0
    real = _store.decode_props

    def counting(text: str) -> dict[str, object]:
        nonlocal decoded
        decoded += 1
        return dict(real(text))

    monkeypatch.setattr(_store, "decode_props", counting)
    with Backend(tmp_path) as again:
        assert decoded == 0
        assert again.get_entity(ACCOUNT, "lazy", "p", "00042").props["N"] == (Edm.INT32, 42)
        assert decoded == 1
        page = again.query_entities(ACCOUNT, "Lazy", None, 10, ("p", "00100"))
        assert [e.rk for e in page.entities] == [f"{i:05d}" for i in range(100, 110)]
        assert decoded <= 1 + 11 + 1  # the page, the next key, no more than one extra row


def test_a_page_is_one_committed_state(tmp_path: Path) -> None:
    store = _store.SqliteStore(tmp_path)
    try:
        store.create_table(ACCOUNT, "snap", "Snap")
        first = [Entity("p", f"{i:02d}", 1) for i in range(0, 10, 2)]
        store.write_entity_groups([(ACCOUNT, "snap", first, [])], 1)
        with store.snapshot():
            before = store.scan(ACCOUNT, "snap", ("", ""), None, 2)
            late = [Entity("p", "05", 2), Entity("p", "00x", 2)]
            store.write_entity_groups([(ACCOUNT, "snap", late, [("p", "08")])], 2)
            rest = store.scan(ACCOUNT, "snap", ("p", "02"), None, 10, after=True)
            assert store.get(ACCOUNT, "snap", "p", "05") is None
        assert [e.rk for e in before + rest] == ["00", "02", "04", "06", "08"]
        after = store.scan(ACCOUNT, "snap", ("", ""), None, 10)
        assert [e.rk for e in after] == ["00", "00x", "02", "04", "05", "06"]
    finally:
        store.close()


def test_group_commit_then_reads_after_restart(tmp_path: Path) -> None:
    with Backend(tmp_path) as b:
        b.create_table(ACCOUNT, "Grp")
        out = b.commit_group(
            [
                GroupWrite(ACCOUNT, "Grp", [WriteOp("insert", "p", "1")]),
                GroupWrite(
                    ACCOUNT, "Grp", [WriteOp("merge", "p", "1", {"x": (Edm.INT32, 1)}, "*")]
                ),
            ]
        )
        assert not any(isinstance(o, Exception) for o in out)
        b.delete_table(ACCOUNT, "grp")
        b.create_table(ACCOUNT, "grp")  # same name again: empty
        assert b.query_entities(ACCOUNT, "grp", None, None, None).entities == []
        b.write(ACCOUNT, "grp", WriteOp("insert", "p", "2"))
    with Backend(tmp_path) as again:
        assert [e.rk for e in again.query_entities(ACCOUNT, "Grp", None, None, None).entities] == [
            "2"
        ]


_OLD_SCHEMA = """
CREATE TABLE meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
CREATE TABLE tables (
    account TEXT NOT NULL, lname TEXT NOT NULL, name TEXT NOT NULL, acl TEXT NOT NULL,
    PRIMARY KEY (account, lname)) WITHOUT ROWID;
CREATE TABLE entities (
    account TEXT NOT NULL, lname TEXT NOT NULL, pk BLOB NOT NULL, rk BLOB NOT NULL,
    ts INTEGER NOT NULL, props TEXT NOT NULL,
    PRIMARY KEY (account, lname, pk, rk)) WITHOUT ROWID;
CREATE TABLE service (account TEXT PRIMARY KEY, doc BLOB NOT NULL) WITHOUT ROWID;
"""


def test_a_store_in_the_old_layout_is_converted(tmp_path: Path) -> None:
    """A store written before read-through (UTF-8 key BLOBs, entities by table name)."""
    acl = [{"id": "pol", "start": None, "expiry": None, "permission": "r"}]
    with sqlite3.connect(tmp_path / _store.DB_FILE) as db:
        db.executescript(_OLD_SCHEMA)
        db.execute("INSERT INTO tables VALUES (?, 'old', 'Old', ?)", (ACCOUNT, json.dumps(acl)))
        rows = [("\uffff", 30), ("\U0001f600", 20), ("a", 10)]
        for pk, ts in rows:
            props = _store.encode_props({"V": (Edm.INT64, ts)})
            db.execute(
                "INSERT INTO entities VALUES (?, 'old', ?, ?, ?, ?)",
                (ACCOUNT, pk.encode("utf-8"), b"r", ts, props),
            )
        db.execute("INSERT INTO meta VALUES ('last_timestamp', 25)")
    db.close()
    with Backend(tmp_path, clock=lambda: 1) as b:
        page = b.query_entities(ACCOUNT, "Old", None, None, None)
        assert [e.pk for e in page.entities] == ["a", "\U0001f600", "\uffff"]  # UTF-16 order
        assert b.get_acl(ACCOUNT, "old")[0].id == "pol"
        new = b.write(ACCOUNT, "Old", WriteOp("insert", "n", "n")).entity
        assert new is not None
        assert new.timestamp == 31  # past every stored Timestamp
    with Backend(tmp_path) as again:
        assert len(again.query_entities(ACCOUNT, "old", None, None, None).entities) == 4
