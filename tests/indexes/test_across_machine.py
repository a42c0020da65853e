"""A Hypothesis state machine over a class with an index across partitions (by e-mail)
and one in the partition (by team): random inserts, updates of indexed and unindexed
properties, deletes, stale ETags, through the context (one by one and BATCH), the client
core and ``Query.delete``, with injected faults on the transaction (503s, connections
dropped before and after it applied) and on the writes that follow it (the index rows in
other partitions), and repairs.

After every step: the rows of the index in the partition are exactly what the main rows
imply (atomic); every difference between the rows across partitions and what the main
rows imply is recorded by a pending intent (a missing row among its puts, an orphan among
its deletions); a lookup by e-mail returns only entities that have that e-mail, and misses
only entities whose row is still pending. After a repair, the index across partitions is
exact and no intent is left."""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

import azt
from azt._core.intents import intent_of
from azt.indexes import (
    index_partition_key,
    index_row_keys,
    is_index_row_key,
    repair_index,
    verify_index,
)
from azt.query import Query

from .machine import IndexedTableMachine
from .models import Member

PKS = ("a", "b;c")
RKS = ("r0", "r1", "r2", "x;y%z")
EMAILS = (None, "ann@x.com", "bob@x.com", "a;b%c")
TEAMS = ("red", "blue")
FAULTS = (None, None, "busy", "drop-before", "drop-after", "follow-up", "follow-up-drop")
WAYS = ("ctx", "batch", "core")
INTENT = "\ufffdix;~;"


class AcrossMachine(IndexedTableMachine):
    entity_class = Member
    update_mode = azt.UpdateMode.REPLACE  # an e-mail may be cleared (MERGE cannot)

    def __init__(self) -> None:
        super().__init__(seed=11)

    def fault(self, kind: str | None) -> None:
        self.injector.clear()
        if kind == "follow-up":  # every attempt at the rows in other partitions fails
            self.injector.fail_next("busy", 3, methods=["PUT", "DELETE"])
        elif kind == "follow-up-drop":  # applied, but the answer is lost
            self.injector.fail_next("drop-after", 1, methods=["PUT", "DELETE"])
        elif kind is not None:
            self.injector.fail_next(kind, 1, methods=["POST"])

    @rule(
        pk=st.sampled_from(PKS),
        rk=st.sampled_from(RKS),
        email=st.sampled_from(EMAILS),
        team=st.sampled_from(TEAMS),
        way=st.sampled_from(WAYS),
        fault=st.sampled_from(FAULTS),
    )
    def insert(
        self, pk: str, rk: str, email: str | None, team: str, way: str, fault: str | None
    ) -> None:
        self.fault(fault)
        self.run(self._write(way, "insert", Member(pk, rk, email=email, team=team)))

    @rule(
        pk=st.sampled_from(PKS),
        rk=st.sampled_from(RKS),
        field=st.sampled_from(("email", "team", "note")),
        data=st.data(),
        way=st.sampled_from(WAYS),
        fault=st.sampled_from(FAULTS),
    )
    def update(self, pk: str, rk: str, field: str, data: Any, way: str, fault: str | None) -> None:
        member = self.run(self._read(pk, rk))
        if member is None:
            return
        values = {"email": EMAILS, "team": TEAMS, "note": ("m", "n")}[field]
        value = data.draw(st.sampled_from(values))
        self.fault(fault)
        self.run(self._write(way, "update", member, **{field: value}))

    @rule(
        pk=st.sampled_from(PKS),
        rk=st.sampled_from(RKS),
        email=st.sampled_from(EMAILS),
        way=st.sampled_from(WAYS),
    )
    def stale_update(self, pk: str, rk: str, email: str | None, way: str) -> None:
        """The second of two writers of one version fails on its stale ETag and records
        no intent."""
        first = self.run(self._read(pk, rk))
        second = self.run(self._read(pk, rk))
        if first is None or second is None:
            return
        self.run(self._write("core", "update", first, note=first.note + "+"))
        self.run(self._write(way, "update", second, email=email, team="stale"))
        stored = self.run(self._read(pk, rk))
        assert stored is not None
        assert stored.team != "stale"

    @rule(
        pk=st.sampled_from(PKS),
        rk=st.sampled_from(RKS),
        way=st.sampled_from((*WAYS, "query")),
        fault=st.sampled_from(FAULTS),
    )
    def delete(self, pk: str, rk: str, way: str, fault: str | None) -> None:
        member = self.run(self._read(pk, rk))
        if member is None:
            return
        self.fault(fault)
        if way == "query":
            self._delete_by_query(pk, rk)
            return
        self.run(self._write(way, "delete", member))

    @rule()
    def repair(self) -> None:
        with self.injector.suspended():
            self.run(repair_index(self.table, Member))
            report = self.run(verify_index(self.table, Member))
        assert report.consistent, report.problems
        rows = self.run(self._rows())
        assert not [r for r in rows if r["RowKey"].startswith(INTENT)]
        stored, implied, _ = self._across(rows)
        assert stored == implied

    def _across(
        self, rows: list[azt.TableEntity]
    ) -> tuple[set[tuple[str, str]], set[tuple[str, str]], list[Any]]:
        """(rows across partitions stored, the ones the main rows imply, pending intents)."""
        stored = {
            (r["PartitionKey"], r["RowKey"])
            for r in rows
            if r["PartitionKey"].startswith("\ufffdix;")
        }
        implied: set[tuple[str, str]] = set()
        pending = []
        for r in rows:
            if r["PartitionKey"].startswith("\ufffdix;"):
                continue
            if r["RowKey"].startswith(INTENT):
                intent = intent_of(r)
                assert intent is not None
                pending.append(intent)
            elif not is_index_row_key(r["RowKey"]):
                rk = index_row_keys(Member.from_entity(r))["by_email"]
                if rk is not None:
                    implied.add((index_partition_key(rk), rk))
        return stored, implied, pending

    @invariant()
    def in_partition_index_is_exact(self) -> None:
        rows = self.run(self._rows())
        mains = [
            r
            for r in rows
            if not is_index_row_key(r["RowKey"]) and not r["PartitionKey"].startswith("\ufffd")
        ]
        stored = {
            (r["PartitionKey"], r["RowKey"])
            for r in rows
            if r["RowKey"].startswith("\ufffdix;by_team;")
        }
        want = set()
        for r in mains:
            rk = index_row_keys(Member.from_entity(r))["by_team"]
            if rk is not None:
                want.add((r["PartitionKey"], rk))
        assert stored == want

    @invariant()
    def across_differences_are_recorded(self) -> None:
        stored, implied, pending = self._across(self.run(self._rows()))
        puts = {k for i in pending for k in i.put}
        deletes = {k for i in pending for k in i.delete}
        assert implied - stored <= puts
        assert stored - implied <= deletes

    @invariant()
    def lookups_are_never_wrong(self) -> None:
        rows = self.run(self._rows())
        _, _, pending = self._across(rows)
        puts = {k for i in pending for k in i.put}
        with self.injector.suspended():
            everything = self.run(Query(Member, self.table).to_list())
            for email in EMAILS[1:]:
                got = self.run(Query(Member, self.table).where(Member.email == email).to_list())
                assert all(m.email == email for m in got)
                have = {(m.PartitionKey, m.RowKey) for m in got}
                want = {(m.PartitionKey, m.RowKey) for m in everything if m.email == email}
                assert have <= want
                for m in everything:
                    if (m.PartitionKey, m.RowKey) in want - have:
                        rk = index_row_keys(m)["by_email"]
                        assert rk is not None
                        assert (index_partition_key(rk), rk) in puts


AcrossMachine.TestCase.settings = settings(max_examples=20, stateful_step_count=15)
TestAcrossMachine = AcrossMachine.TestCase
