"""``Backend.inserts_alone``: a change set of new entities on disk, stored without a read.

A group of one change set of checked inserts into one partition goes to the store as one
multi-row INSERT whose primary key is the existence check; a stored key rolls it back and
the general path answers. Generated change sets (checked and unchecked inserts, other
kinds, other partitions, repeated and stored keys) must get the answers, and leave the
state, that the in-memory backend gives them one by one; the path must be taken where it
applies (no read of the partition, one statement) and left where it does not.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt_server_stub.backend import Backend, GroupWrite, WriteKind, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity
from tests.stub.test_durable_write_paths import _PROPS  # (the same property values)

ACCOUNT = "devstoreaccount1"
TABLE = "Alone"

#: "\ud83d\ude00" (two code points) is stored as the key "\U0001f600" (one): the same row.
_RKS = st.sampled_from(["a", "b", "c", "\U0001f600", "\ud83d\ude00"])


@st.composite
def _op(draw: st.DrawFn) -> WriteOp:
    kind: WriteKind = draw(st.sampled_from(["insert"] * 6 + ["replace", "merge", "delete"]))
    pk = draw(st.sampled_from(["p"] * 5 + ["q"]))
    checked = kind == "insert" and draw(st.integers(0, 4)) > 0
    if_match = "*" if kind == "delete" else None
    return WriteOp(kind, pk, draw(_RKS), draw(_PROPS), if_match, checked)


_CHANGE_SETS = st.lists(st.lists(_op(), min_size=1, max_size=4), min_size=1, max_size=10)


def _seen(entity: Entity | None) -> Any:
    if entity is None:
        return None
    return (entity.pk, entity.rk, entity.timestamp, entity.created, sorted(entity.props.items()))


def _answer(outcome: Any) -> Any:
    if isinstance(outcome, StubError):
        return (outcome.status, outcome.code, outcome.index)
    return [(_seen(r.entity), r.created) for r in outcome]


def _everything(b: Backend) -> Any:
    return [_seen(e) for e in b.query_entities(ACCOUNT, TABLE, None, 1000, None).entities]


def _run(folder: Path, durability: str, change_sets: list[list[WriteOp]], alone: bool) -> Any:
    """The answers, the state, the last Timestamp and the state reopened, of the change
    sets committed one by one by a durable backend (``alone``: False, without this path)."""
    b = Backend(folder, clock=lambda: 1, durability=durability)
    if not alone:
        b.inserts_alone = lambda *args: None  # type: ignore[method-assign]
    try:
        b.create_table(ACCOUNT, TABLE)
        answers = [
            _answer(b.commit_group([GroupWrite(ACCOUNT, TABLE, ops, batch=True)])[0])
            for ops in change_sets
        ]
        state = _everything(b)
        last = b._last_ts
    finally:
        b.close()
    reopened = Backend(folder, clock=lambda: 1)
    try:
        return answers, state, last, _everything(reopened)
    finally:
        reopened.close()


@pytest.mark.parametrize("durability", ["process", "full"])
@settings(max_examples=60, deadline=None)
@given(change_sets=_CHANGE_SETS)
def test_change_sets_answer_as_the_general_path(
    durability: str, change_sets: list[list[WriteOp]]
) -> None:
    with tempfile.TemporaryDirectory() as general, tempfile.TemporaryDirectory() as alone:
        expected = _run(Path(general), durability, change_sets, alone=False)
        assert _run(Path(alone), durability, change_sets, alone=True) == expected


def _inserts(*rks: str, checked: bool = True) -> list[WriteOp]:
    return [WriteOp("insert", "p", rk, {"N": (Edm.INT32, 1)}, checked=checked) for rk in rks]


def test_new_keys_are_one_statement_without_a_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = Backend(tmp_path, durability="process")
    try:
        b.create_table(ACCOUNT, TABLE)
        store = b._store
        assert store is not None

        def no_read(*args: object) -> list[Entity]:
            raise AssertionError("the change set read its partition")

        monkeypatch.setattr(store, "get_rows", no_read)
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)
        results = b.inserts_alone(ACCOUNT, TABLE, _inserts("a", "b", "c", "d"))
        store.db.set_trace_callback(None)
        assert results is not None
        assert [(r.entity.rk, r.created) for r in results if r.entity is not None] == [
            ("a", True),
            ("b", True),
            ("c", True),
            ("d", True),
        ]
        inserts = [s for s in statements if s.startswith("INSERT INTO entity_rows")]
        assert len(inserts) == 1
        # (an INSERT OR REPLACE would not have been listed: the new keys' plain INSERT)
    finally:
        b.close()


def test_a_stored_key_leaves_the_change_set_to_the_general_path(tmp_path: Path) -> None:
    b = Backend(tmp_path, durability="process")
    try:
        b.create_table(ACCOUNT, TABLE)
        assert b.inserts_alone(ACCOUNT, TABLE, _inserts("b")) is not None
        assert b.inserts_alone(ACCOUNT, TABLE, _inserts("a", "b", "c")) is None  # rolled back
        assert [e.rk for e in b.query_entities(ACCOUNT, TABLE, None, None, None).entities] == ["b"]
        [outcome] = b.commit_group([GroupWrite(ACCOUNT, TABLE, _inserts("a", "b", "c"), True)])
        assert isinstance(outcome, StubError)
        assert (outcome.code, outcome.index) == ("EntityAlreadyExists", 1)
        assert [e.rk for e in b.query_entities(ACCOUNT, TABLE, None, None, None).entities] == ["b"]
    finally:
        b.close()


@pytest.mark.parametrize(
    "ops",
    [
        _inserts("a", "b", checked=False),  # to be validated: the general path
        _inserts("a", "a"),  # a RowKey twice: refused at its index there
        [*_inserts("a"), WriteOp("insert", "q", "b", checked=True)],  # two partitions
        [*_inserts("a"), WriteOp("merge", "p", "b", {}, "*")],
        _inserts(*(f"{i:03d}" for i in range(101))),  # too many
        [],
    ],
)
def test_other_change_sets_are_not_taken(tmp_path: Path, ops: list[WriteOp]) -> None:
    b = Backend(tmp_path, durability="process")
    try:
        b.create_table(ACCOUNT, TABLE)
        assert b.inserts_alone(ACCOUNT, TABLE, ops) is None
        assert b.inserts_alone(ACCOUNT, "Missing", _inserts("a")) is None
        assert b.query_entities(ACCOUNT, TABLE, None, None, None).entities == []
    finally:
        b.close()
