"""A Hypothesis state machine drives the tracker with random bookkeeping, edits, outside
writes and saves against a small in-memory model of the service's write semantics
(PROTOCOL.md 4.18), and checks the unit-of-work invariants after every step."""

from __future__ import annotations

from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from azt._errors import ValidationError
from azt._uow.descriptor import PendingChange
from azt._uow.tracker import Tracker
from azt._uow.types import ChangeKind, EntityState, IdentityConflictError, TrackingError
from azt.dynamic import DynamicEntity

KEYS = ["a", "b", "c"]
PROPS = ["A", "B", "C"]
VALUES = st.one_of(st.none(), st.integers(0, 3))


class Server:
    """The service's write semantics for one table, with integer ETags."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.etags: dict[str, str] = {}
        self.counter = 0

    def _stamp(self, rk: str) -> str:
        self.counter += 1
        self.etags[rk] = f'W/"{self.counter}"'
        return self.etags[rk]

    def apply(self, c: PendingChange) -> tuple[bool, str | None]:
        rk = c.row_key
        exists = rk in self.rows
        props = {k: v for k, v in (c.payload or {}).items() if k not in ("PartitionKey", "RowKey")}
        if c.kind is ChangeKind.INSERT:
            if exists:
                return False, None
            self.rows[rk] = props
            return True, self._stamp(rk)
        if c.kind is not ChangeKind.UPSERT:
            if not exists:
                return False, None
            if c.if_match != "*" and c.if_match != self.etags[rk]:
                return False, None
        if c.kind is ChangeKind.DELETE:
            del self.rows[rk]
            del self.etags[rk]
            return True, None
        if not exists or c.mode == "replace":
            self.rows[rk] = props
        else:
            self.rows[rk].update(props)
        return True, self._stamp(rk)


class TrackerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tracker = Tracker()
        self.server = Server()
        self.objects: list[DynamicEntity] = []
        self.last_failed: list[PendingChange] = []

    # -- objects -------------------------------------------------------------------------

    @rule(rk=st.sampled_from(KEYS), values=st.lists(st.integers(0, 3), min_size=0, max_size=3))
    def new_object(self, rk: str, values: list[int]) -> None:
        self.objects.append(DynamicEntity("p", rk, **dict(zip(PROPS, values, strict=False))))

    def _pick(self, data: st.DataObject) -> DynamicEntity:
        obj: DynamicEntity = data.draw(st.sampled_from(self.objects))
        return obj

    # -- bookkeeping ---------------------------------------------------------------------

    @precondition(lambda self: self.objects)
    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        obj = self._pick(data)
        before = self.tracker.lookup("t", "p", obj.RowKey)
        mine = self.tracker.descriptor(obj)
        try:
            self.tracker.add("t", obj)
        except IdentityConflictError:
            assert before is not None
            assert before.obj is not obj
        except TrackingError:
            assert mine is not None or before is not None
        else:
            assert before is None
            assert mine is None
            assert self.tracker.state_of(obj) is EntityState.ADDED

    @precondition(lambda self: self.objects)
    @rule(data=st.data(), which=st.sampled_from(["server", "star", "none", "stale"]))
    def attach(self, data: st.DataObject, which: str) -> None:
        obj = self._pick(data)
        etag = {
            "server": self.server.etags.get(obj.RowKey, 'W/"0"'),
            "star": "*",
            "none": None,
            "stale": 'W/"0"',
        }[which]
        before = self.tracker.lookup("t", "p", obj.RowKey)
        try:
            self.tracker.attach("t", obj, etag)
        except TrackingError:
            assert before is not None or self.tracker.descriptor(obj) is not None
        else:
            assert before is None
            assert self.tracker.state_of(obj) is EntityState.UNCHANGED

    @precondition(lambda self: self.objects)
    @rule(data=st.data(), name=st.sampled_from(PROPS), value=VALUES)
    def edit(self, data: st.DataObject, name: str, value: int | None) -> None:
        obj = self._pick(data)
        if value is None:
            obj.pop(name, None)
        else:
            obj[name] = value

    @precondition(lambda self: self.objects)
    @rule(data=st.data())
    def update(self, data: st.DataObject) -> None:
        obj = self._pick(data)
        state = self.tracker.state_of(obj)
        try:
            self.tracker.update(obj)
        except TrackingError:
            assert state in (EntityState.DETACHED, EntityState.DELETED)
        else:
            expected = EntityState.ADDED if state is EntityState.ADDED else EntityState.MODIFIED
            assert self.tracker.state_of(obj) is expected

    @precondition(lambda self: self.objects)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        obj = self._pick(data)
        state = self.tracker.state_of(obj)
        try:
            self.tracker.delete(obj)
        except TrackingError:
            assert state is EntityState.DETACHED
        else:
            expected = EntityState.DETACHED if state is EntityState.ADDED else EntityState.DELETED
            assert self.tracker.state_of(obj) is expected

    @precondition(lambda self: self.objects)
    @rule(data=st.data())
    def detach(self, data: st.DataObject) -> None:
        obj = self._pick(data)
        was = self.tracker.state_of(obj) is not EntityState.DETACHED
        assert self.tracker.detach(obj) is was
        assert self.tracker.state_of(obj) is EntityState.DETACHED

    @rule(rk=st.sampled_from(KEYS), value=st.integers(0, 3))
    def outside_write(self, rk: str, value: int) -> None:
        """Someone else upserts the row (changing its ETag)."""
        self.server.rows.setdefault(rk, {})["A"] = value
        self.server._stamp(rk)

    # -- saving --------------------------------------------------------------------------

    @rule(replace=st.booleans())
    def save(self, replace: bool) -> None:
        refusal = ""
        try:
            plan = self.tracker.plan(replace=replace)
        except ValidationError as exc:
            refusal = str(exc)
        if refusal:
            assert not replace  # only a MERGE is refused (a property removed locally)
            assert "REPLACE_ON_UPDATE" in refusal
            return
        failed = []
        for c in plan:
            ok, etag = self.server.apply(c)
            if ok:
                self.tracker.commit(c, etag)
                obj = c.descriptor.obj
                if c.kind is ChangeKind.DELETE:
                    assert self.tracker.state_of(obj) is EntityState.DETACHED
                    assert c.row_key not in self.server.rows
                else:
                    assert self.tracker.descriptor(obj).etag == etag  # type: ignore[union-attr]
                    stored = self.server.rows[c.row_key]
                    # what was sent is stored (a later local edit may differ)
                    for name, value in (c.payload or {}).items():
                        if name not in ("PartitionKey", "RowKey"):
                            assert stored[name] == value
                    if replace or c.kind is ChangeKind.INSERT:
                        sent = {k for k in (c.payload or {}) if k not in ("PartitionKey", "RowKey")}
                        assert set(stored) == sent
            else:
                failed.append(c)
        # a second plan contains exactly the failed changes (and edits made since: none)
        again = self.tracker.plan(replace=replace)
        assert [(c.descriptor.key, c.kind) for c in again] == [
            (c.descriptor.key, c.kind) for c in failed
        ]
        self.last_failed = failed

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def identity_map_is_consistent(self) -> None:
        descriptors = self.tracker.descriptors()
        keys = [d.key for d in descriptors]
        assert len(keys) == len(set(keys))
        for d in descriptors:
            assert self.tracker.lookup("t", d.key[1], d.key[2]) is d
            assert self.tracker.descriptor(d.obj) is d
            assert d.state is not EntityState.DETACHED

    @invariant()
    def snapshots_are_immutable_tuples(self) -> None:
        for d in self.tracker.descriptors():
            assert isinstance(d.snapshot, tuple)
            hash(d.snapshot)


TestTracker = TrackerMachine.TestCase
TestTracker.settings = settings(
    max_examples=150,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
