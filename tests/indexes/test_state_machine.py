"""A Hypothesis state machine over an indexed entity class: random inserts, updates of
indexed and unindexed properties, deletes, stale ETags from concurrent contexts, through
the context (one by one and BATCH), the client core and ``Query.delete``, with injected
faults (503s, connections dropped before and after the write was applied). After every
step the index rows in the stub equal exactly what the main rows imply, and every indexed
query equals a brute-force scan."""

from __future__ import annotations

from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

import azt
from azt.context import SaveChangesOptions, TableContext
from azt.dynamic import DynamicEntity
from azt.indexes import Holds, declared_indexes, index_row_keys, is_index_row_key
from azt.query import PlanKind, Query

from .machine import EXPECTED, IndexedTableMachine
from .models import Item, Plain

PKS = ("a", "b")
RKS = (*tuple(f"r{i}" for i in range(6)), "x;y%z")
COLORS = ("red", "blue", "a;b/c")
SIZES = (-1, 0, 7)
TAGS = (None, "t1", "t2")
FAULTS = (None, None, "busy", "drop-before", "drop-after", "timeout-after")
WAYS = ("ctx", "batch", "core")


def expected_index_rows(mains: list[azt.TableEntity]) -> dict[tuple[str, str], dict[str, Any]]:
    """Every index row the main rows imply: keys -> the properties it must hold."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    holds = {d.name: d.holds for d in declared_indexes(Item)}
    for row in mains:
        obj = Item.from_entity(row)
        for name, rk in index_row_keys(obj).items():
            if rk is None:
                continue
            props = (
                {k: v for k, v in row.items() if k not in ("PartitionKey", "RowKey")}
                if holds[name] is Holds.ENTITY
                else {}
            )
            out[(row["PartitionKey"], rk)] = props
    return out


class IndexMachine(IndexedTableMachine):
    entity_class = Item

    def __init__(self) -> None:
        super().__init__(seed=7)

    def fault(self, kind: str | None) -> None:
        self.injector.clear()
        if kind is not None:
            self.injector.fail_next(kind, 1)

    @rule(
        pk=st.sampled_from(PKS),
        rk=st.sampled_from(RKS),
        color=st.sampled_from(COLORS),
        size=st.sampled_from(SIZES),
        tag=st.sampled_from(TAGS),
        way=st.sampled_from(WAYS),
        fault=st.sampled_from(FAULTS),
    )
    def insert(
        self, pk: str, rk: str, color: str, size: int, tag: str | None, way: str, fault: str | None
    ) -> None:
        self.fault(fault)
        item = Item(pk, rk, color=color, size=size, tag=tag, note="n")
        self.run(self._write(way, "insert", item))

    @rule(
        pk=st.sampled_from(PKS),
        rk=st.sampled_from(RKS),
        field=st.sampled_from(("color", "size", "tag", "note")),
        data=st.data(),
        way=st.sampled_from(WAYS),
        fault=st.sampled_from(FAULTS),
    )
    def update(self, pk: str, rk: str, field: str, data: Any, way: str, fault: str | None) -> None:
        item = self.run(self._read(pk, rk))
        if item is None:
            return
        values = {"color": COLORS, "size": SIZES, "tag": TAGS, "note": ("m", "n", "o")}[field]
        value = data.draw(st.sampled_from(values))
        self.fault(fault)
        self.run(self._write(way, "update", item, **{field: value}))

    @rule(
        pk=st.sampled_from(PKS),
        rk=st.sampled_from(RKS),
        color=st.sampled_from(COLORS),
        way=st.sampled_from(WAYS),
    )
    def stale_update(self, pk: str, rk: str, color: str, way: str) -> None:
        """Two readers of one version: the second write must fail on its stale ETag and
        leave the index as the first write made it."""
        first = self.run(self._read(pk, rk))
        second = self.run(self._read(pk, rk))
        if first is None or second is None:
            return
        self.run(self._write("core", "update", first, size=first.size + 1))
        self.run(self._write(way, "update", second, color=color, tag="stale"))
        stored = self.run(self._read(pk, rk))
        assert stored is not None
        assert stored.tag != "stale"

    @rule(
        pk=st.sampled_from(PKS),
        rk=st.sampled_from(RKS),
        way=st.sampled_from((*WAYS, "query")),
        fault=st.sampled_from(FAULTS),
    )
    def delete(self, pk: str, rk: str, way: str, fault: str | None) -> None:
        item = self.run(self._read(pk, rk))
        if item is None:
            return
        self.fault(fault)
        if way == "query":
            self._delete_by_query(pk, rk)
            return
        self.run(self._write(way, "delete", item))

    @rule(
        pk=st.sampled_from(PKS),
        color=st.sampled_from(COLORS),
        fault=st.sampled_from(FAULTS),
    )
    def recolor_partition(self, pk: str, color: str, fault: str | None) -> None:
        """One BATCH save changing several entities of a partition."""
        ctx = TableContext(self.service)
        with self.injector.suspended():
            items = self.run(ctx.query(Item, self.name).where(Item.PartitionKey == pk).to_list())
        for it in items:
            it.color = color
            it.size += 1
        self.fault(fault)
        try:
            self.run(ctx.save_changes(SaveChangesOptions.BATCH))
        except EXPECTED:
            pass
        finally:
            self.injector.clear()

    @invariant()
    def index_rows_match_main_rows(self) -> None:
        rows = self.run(self._rows())
        mains = [r for r in rows if not is_index_row_key(r["RowKey"])]
        index = {
            (r["PartitionKey"], r["RowKey"]): {
                k: v for k, v in r.items() if k not in ("PartitionKey", "RowKey")
            }
            for r in rows
            if is_index_row_key(r["RowKey"])
        }
        assert index == expected_index_rows(mains)

    @invariant()
    def indexed_queries_equal_scans(self) -> None:
        with self.injector.suspended():
            everything = self.run(Query(Item, self.table).to_list())
            plain = self.run(Query(Plain, self.table).to_list())
            dynamic = self.run(Query(DynamicEntity, self.table).to_list())
            assert [p.RowKey for p in plain] == [i.RowKey for i in everything]
            assert len(dynamic) == len(everything)
            assert not any(is_index_row_key(i.RowKey) for i in everything)
            for pk in PKS:
                for color in COLORS:
                    expect = {
                        (i.PartitionKey, i.RowKey)
                        for i in everything
                        if i.PartitionKey == pk and i.color == color
                    }
                    q = Query(Item, self.table).where(Item.PartitionKey == pk, Item.color == color)
                    assert q.explain().kind is PlanKind.INDEX
                    got = self.run(q.to_list())
                    assert {(i.PartitionKey, i.RowKey) for i in got} == expect
                    for size in SIZES:
                        q2 = Query(Item, self.table).where(
                            Item.PartitionKey == pk, Item.size == size, Item.color == color
                        )
                        assert q2.explain().index == "by_size"
                        got2 = self.run(q2.to_list())
                        want = sorted(
                            (
                                i
                                for i in everything
                                if i.PartitionKey == pk and i.size == size and i.color == color
                            ),
                            key=lambda i: i.RowKey,
                        )
                        assert sorted(got2, key=lambda i: i.RowKey) == want
                for tag in ("t1", "t2"):
                    q3 = Query(Item, self.table).where(Item.PartitionKey == pk, Item.tag == tag)
                    got3 = self.run(q3.to_list())
                    assert sorted(i.RowKey for i in got3) == sorted(
                        i.RowKey for i in everything if i.PartitionKey == pk and i.tag == tag
                    )


IndexMachine.TestCase.settings = settings(max_examples=12, stateful_step_count=12)
TestIndexMachine = IndexMachine.TestCase
