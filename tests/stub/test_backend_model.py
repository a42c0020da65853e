"""A Hypothesis state machine: the backend against a plain-dict model of the service rules.

Random single writes (every If-Match choice), batches (valid and broken) and paged
queries; after every step the backend must agree with the model, and a refused
batch must leave no trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from azt_server_stub.backend import Backend, KeyRange, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity, TypedValue

ACCOUNT = "devstoreaccount1"
TABLE = "Model"
STALE = "W/\"datetime'2001-01-01T00%3A00%3A00.0000000Z'\""

pks = st.sampled_from(["a", "b", "\ue000", "\U0001f600"])
rks = st.sampled_from(["", "1", "2", "x", "\U00010000", "\uffff"])
props_st = st.dictionaries(
    st.sampled_from(["A", "B", "C"]),
    st.one_of(
        st.integers(-(2**31), 2**31 - 1).map(lambda v: (Edm.INT32, v)),
        st.text(max_size=3).map(lambda v: (Edm.STRING, v)),
        st.booleans().map(lambda v: (Edm.BOOLEAN, v)),
    ),
    max_size=3,
)
kinds = st.sampled_from(["insert", "replace", "merge", "delete"])
selectors = st.sampled_from(["none", "star", "current", "stale"])


def _u16(key: tuple[str, str]) -> tuple[bytes, bytes]:
    return (key[0].encode("utf-16-be"), key[1].encode("utf-16-be"))


T = TypeVar("T")


def _attempt(call: Callable[[], T]) -> T | StubError:
    try:
        return call()
    except StubError as exc:
        return exc


@dataclass
class Row:
    props: dict[str, TypedValue]
    etag: str


def _expect(op: WriteOp, row: Row | None) -> tuple[str | None, dict[str, TypedValue] | None]:
    """(error code or None, resulting props or None when deleted/unchanged)."""
    if op.kind == "insert":
        return ("EntityAlreadyExists", None) if row else (None, dict(op.props))
    if op.if_match is None and op.kind == "delete":
        return ("InvalidInput", None)
    if op.if_match is not None:
        if row is None:
            return ("ResourceNotFound", None)
        if op.if_match != "*" and op.if_match != row.etag:
            return ("UpdateConditionNotSatisfied", None)
    if op.kind == "delete":
        return (None, None)
    if op.kind == "merge" and row is not None:
        return (None, {**row.props, **op.props})
    return (None, dict(op.props))


class BackendMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.backend = Backend()
        self.backend.create_table(ACCOUNT, TABLE)
        self.model: dict[tuple[str, str], Row] = {}

    def _op(self, kind: Any, pk: str, rk: str, props: dict[str, TypedValue], sel: str) -> WriteOp:
        row = self.model.get((pk, rk))
        if_match = {
            "none": None,
            "star": "*",
            "current": row.etag if row else STALE,
            "stale": STALE,
        }[sel]
        return WriteOp(kind, pk, rk, {} if kind == "delete" else props, if_match)

    @rule(kind=kinds, pk=pks, rk=rks, props=props_st, sel=selectors)
    def write(self, kind: Any, pk: str, rk: str, props: dict[str, TypedValue], sel: str) -> None:
        op = self._op(kind, pk, rk, props, sel)
        code, new_props = _expect(op, self.model.get((pk, rk)))
        outcome = _attempt(lambda: self.backend.write(ACCOUNT, TABLE, op))
        if isinstance(outcome, StubError):
            assert outcome.code == code
            return
        result = outcome
        assert code is None
        if result.entity is None:
            del self.model[(pk, rk)]
        else:
            assert new_props is not None
            assert result.entity.props == new_props
            old = self.model.get((pk, rk))
            assert old is None or old.etag != result.entity.etag
            self.model[(pk, rk)] = Row(new_props, result.entity.etag)

    @rule(
        pk=pks,
        items=st.lists(
            st.tuples(kinds, rks, props_st, selectors),
            min_size=1,
            max_size=6,
            unique_by=lambda t: t[1],
        ),
        breaker=st.sampled_from(["none", "other-partition", "duplicate"]),
    )
    def batch(self, pk: str, items: list[Any], breaker: str) -> None:
        ops = [self._op(kind, pk, rk, props, sel) for kind, rk, props, sel in items]
        if breaker == "other-partition":
            ops.append(WriteOp("insert", pk + "z", "r"))
        elif breaker == "duplicate":
            ops.append(WriteOp("merge", pk, ops[0].rk))
        expected_error: tuple[str, int] | None = None
        if breaker == "other-partition":
            expected_error = ("CommandsInBatchActOnDifferentPartitions", len(ops) - 1)
        elif breaker == "duplicate":
            expected_error = ("InvalidDuplicateRow", len(ops) - 1)
        planned: list[tuple[tuple[str, str], dict[str, TypedValue] | None]] = []
        if expected_error is None:
            for i, op in enumerate(ops):
                code, new_props = _expect(op, self.model.get((op.pk, op.rk)))
                if code is not None:
                    expected_error = (code, i)
                    break
                planned.append(((op.pk, op.rk), new_props))
        before = self._snapshot()
        outcome = _attempt(lambda: self.backend.execute_batch(ACCOUNT, TABLE, ops))
        if isinstance(outcome, StubError):
            assert (outcome.code, outcome.index) == expected_error
            assert self._snapshot() == before
            return
        results = outcome
        assert expected_error is None
        for (key, new_props), result in zip(planned, results, strict=True):
            if new_props is None:
                del self.model[key]
            else:
                assert result.entity is not None
                self.model[key] = Row(new_props, result.entity.etag)

    def _snapshot(self) -> list[Entity]:
        return self.backend.query_entities(ACCOUNT, TABLE, None, None, None).entities

    @rule(
        top=st.integers(1, 5),
        partition=st.one_of(st.none(), pks),
        start=st.one_of(st.none(), st.tuples(pks, rks)),
    )
    def query(self, top: int, partition: str | None, start: tuple[str, str] | None) -> None:
        ranges: list[KeyRange] = (
            [(("", ""), None)] if partition is None else [((partition, ""), (partition + "\0", ""))]
        )

        class Flt:
            def __init__(self) -> None:
                self.ranges = ranges

            def matches(self, entity: Entity) -> bool:
                return True

        keys = sorted(self.model, key=_u16)
        if partition is not None:
            keys = [k for k in keys if k[0] == partition]
        if start is not None:
            keys = [k for k in keys if _u16(k) >= _u16(start)]
        got: list[tuple[str, str]] = []
        token = start
        for _ in range(100):
            page = self.backend.query_entities(ACCOUNT, TABLE, Flt(), top, token)
            assert len(page.entities) <= top
            got += [e.key for e in page.entities]
            token = page.next_key
            if token is None:
                break
        assert got == keys

    @invariant()
    def agrees_with_model(self) -> None:
        stored = {e.key: (e.props, e.etag) for e in self._snapshot()}
        assert stored == {k: (r.props, r.etag) for k, r in self.model.items()}


TestBackendMachine = BackendMachine.TestCase
TestBackendMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
