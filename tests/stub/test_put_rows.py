"""``_sql.put_rows`` (multi-row INSERT OR REPLACE) against the statement it replaced.

The store's change sets and the write-behind log's replay write their rows with
``put_rows``; ``db.executemany(PUT, rows)`` did it before. Generated row lists (any count
up to past two chunks, keys repeated within a list, rows of several tables) must leave
exactly the rows the old statement leaves, and a change set's hundred rows must be one
statement.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from azt_server_stub import _sql

Row = tuple[int, bytearray, bytearray, int, str, int, int]


def _db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(_sql.SCHEMA)
    return db


def _stored(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return db.execute("SELECT * FROM entity_rows ORDER BY tid, pk, rk").fetchall()


_rows = st.lists(
    st.tuples(
        st.integers(1, 3),
        st.sampled_from(["p", "q", "\U0001f600"]),
        st.text(max_size=3),
        st.integers(0, 2**62),
        st.text(max_size=20),
    ),
    max_size=2 * _sql.PUT_CHUNK + 40,
)


@settings(max_examples=60, deadline=None)
@given(_rows, st.booleans())
def test_put_rows_stores_what_executemany_stores(
    generated: list[tuple[int, str, str, int, str]], preloaded: bool
) -> None:
    rows: list[Row] = [
        (tid, _sql.key_param(pk), _sql.key_param(rk), ts, props, ts + i, i % 2)
        for i, (tid, pk, rk, ts, props) in enumerate(generated)
    ]
    old, new = _db(), _db()
    if preloaded:  # some keys replaced, not inserted
        for db in (old, new):
            db.executemany(_sql.PUT, rows[::3])
            db.executemany(_sql.DELETE, [row[:3] for row in rows[::5]])
    old.executemany(_sql.PUT, rows)
    _sql.put_rows(new, rows)
    assert _stored(new) == _stored(old)


def test_a_change_sets_hundred_rows_are_one_statement() -> None:
    db = _db()
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    rows = [(1, _sql.key_param("p"), _sql.key_param(f"{r:03d}"), 1, "[]", 1, 0) for r in range(237)]
    _sql.put_rows(db, rows[:100])
    assert len(statements) == 1
    statements.clear()
    _sql.put_rows(db, rows)  # 100 + 100 + 32 + 4 + 1
    # (the traced text has the values bound: rows are separated by "), (")
    assert [s.count("), (") + 1 for s in statements] == [100, 100, 32, 4, 1]
    assert db.execute("SELECT count(*) FROM entity_rows").fetchone() == (237,)
    _sql.put_rows(db, [])
    assert db.execute("SELECT count(*) FROM entity_rows").fetchone() == (237,)
