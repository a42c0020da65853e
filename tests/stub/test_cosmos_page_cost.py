"""Query pages in Cosmos order: the creation-order walk against the former sort of every row.

``unordered_page`` walks a creation-order index (``MemoryRows(by_creation=True)``, the
durable store's ``entity_rows_created``) instead of sorting every row in the query's ranges
for each page. These tests keep that former algorithm as the reference and check pages are
the same, entity for entity, continuation for continuation, on random tables written by
every write path, and that the rows a page visits do not grow with the table.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from azt_server_stub import _rows
from azt_server_stub._rows import MemoryRows, StoredRows, TableRows, unordered_page
from azt_server_stub._store import SqliteStore
from azt_server_stub.backend import Backend, GroupWrite, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity
from azt_server_stub.odata import compile_entity_filter
from azt_server_stub.query_pages import (
    EntityFilter,
    Key,
    KeyRange,
    QueryPage,
    cosmos_order,
    range_lo,
    sort_key,
)
from azt_server_stub.validation import COSMOS_TABLE_NAMES

A = "acct"
T = "Rows"
FILTERS = (
    None,
    "PartitionKey eq 'p1'",
    "PartitionKey ge 'p1' and PartitionKey lt 'p3'",
    "PartitionKey eq 'p0' or PartitionKey eq 'p3' or PartitionKey eq 'p\U0001f600'",
    "RowKey ge 'r3'",
    "PartitionKey eq 'p2' and RowKey lt 'r5'",
    "(PartitionKey eq 'p1' and RowKey ge 'r2') or (PartitionKey eq 'p4' and RowKey lt 'r4')",
    "N gt 3",
    "PartitionKey ge 'p2' and N lt 5",
    "PartitionKey eq 'p\ue000' or PartitionKey eq 'p\U0001f600'",
    "PartitionKey eq 'nothing'",
)
PKS = ("p0", "p1", "p2", "p3", "p4", "p\ue000", "p\U0001f600")


def reference_page(
    rows: TableRows,
    ranges: Sequence[KeyRange],
    flt: EntityFilter | None,
    limit: int,
    start_after: tuple[str, str] | None,
    restrict: Callable[[str, str], bool] | None,
    scan_budget: int | None,
    start_rank: int | None = None,
) -> QueryPage:
    """The page as the stub cut it before the creation-order index: every row of the
    ranges sorted by its Cosmos position, for each page."""
    order = [
        (cosmos_order(e.created, e.pk, e.rk), e) for _, e in rows.scan(ranges, ranges[0][0], 4096)
    ]
    order.sort(key=lambda item: item[0])
    at = 0
    if start_after is not None:
        if start_rank is None:
            named = rows.get(sort_key(*start_after))
            start_rank = named.created if named is not None else 0
        at = bisect.bisect_left(
            order, cosmos_order(start_rank, *start_after), key=lambda item: item[0]
        )
    matches = None if flt is None else flt.matches
    found: list[Entity] = []
    scanned = 0
    for i in range(at, len(order)):
        entity = order[i][1]
        if scanned == scan_budget or len(found) >= limit:
            return QueryPage(found, entity.key, scanned, entity.created)
        scanned += 1
        if restrict is not None and not restrict(entity.pk, entity.rk):
            continue
        if matches is None or matches(entity):
            found.append(entity)
    return QueryPage(found, None, scanned)


def _sorted_ranges(flt: EntityFilter | None) -> list[KeyRange]:
    ranges = [(("", ""), None)] if flt is None else flt.ranges
    out = [(sort_key(*lo), None if hi is None else sort_key(*hi)) for lo, hi in ranges]
    out.sort(key=range_lo)
    return out


def _shape(page: QueryPage) -> tuple[object, ...]:
    entities = [(e.key, e.timestamp, e.created, sorted(e.props.items())) for e in page.entities]
    return (entities, page.next_key, page.scanned, page.next_rank)


def _random_op(rnd: random.Random) -> WriteOp:
    kind = rnd.choice(("insert", "insert", "insert", "replace", "merge", "delete"))
    pk, rk = rnd.choice(PKS), f"r{rnd.randrange(10)}"
    props = {"N": (Edm.INT32, rnd.randrange(10))}
    if_match = rnd.choice((None, "*")) if kind != "delete" else "*"
    return WriteOp(kind, pk, rk, props if kind != "delete" else {}, if_match=if_match)  # type: ignore[arg-type]


def _write_randomly(backend: Backend, rnd: random.Random, count: int) -> None:
    """``count`` writes by every path: single writes (inserts, upserts, replaces and
    merges that keep the rank, deletes), change sets and write groups."""
    for _ in range(count):
        path = rnd.random()
        try:
            if path < 0.6:
                backend.write(A, T, _random_op(rnd))
            elif path < 0.8:
                pk = rnd.choice(PKS)
                ops = {}
                for _ in range(rnd.randrange(1, 5)):
                    op = _random_op(rnd)
                    ops[op.rk] = WriteOp(op.kind, pk, op.rk, op.props, if_match=op.if_match)
                backend.execute_batch(A, T, list(ops.values()))
            else:
                group = [GroupWrite(A, T, [_random_op(rnd)]) for _ in range(rnd.randrange(1, 4))]
                backend.commit_group(group)
        except StubError:
            pass  # a refused write (a conflict, a missing row) changes nothing


def _backend(tmp_path: Path, durable: bool) -> Backend:
    location = tmp_path / "store" if durable else None
    backend = Backend(location, table_naming=COSMOS_TABLE_NAMES, key_order=False)
    backend.create_table(A, T)
    return backend


@pytest.mark.parametrize("allowance", [0, 256], ids=["sorting-narrow-ranges", "walking"])
@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize("seed", range(3))
def test_pages_are_those_of_the_former_sort(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    durable: bool,
    seed: int,
    allowance: int,
) -> None:
    monkeypatch.setattr(_rows, "_SKIP_ALLOWANCE", allowance)
    rnd = random.Random(seed)
    backend = _backend(tmp_path, durable)
    try:
        _write_randomly(backend, rnd, 150)
        rows = backend._table(A, T).rows
        pages_compared = 0
        for _ in range(40):
            text = rnd.choice(FILTERS)
            flt = None if text is None else compile_entity_filter(text)
            ranges = _sorted_ranges(flt)
            if not ranges:
                continue
            limit = rnd.choice((1, 2, 3, 7, 1000))
            budget = rnd.choice((None, None, 1, 4))
            cut = rnd.choice("pq")
            restrict = rnd.choice((None, lambda pk, rk, cut=cut: pk < cut))
            token: tuple[str, str] | None = None
            rank: int | None = None
            for _ in range(200):
                with rows.snapshot():
                    args = (rows, ranges, flt, limit, token, restrict, budget, rank)
                    got = backend.query_entities(
                        A, T, flt, limit, token, restrict, scan_budget=budget, start_rank=rank
                    )
                    want = reference_page(*args)
                    assert _shape(got) == _shape(want)
                    assert _shape(unordered_page(*args)) == _shape(want)
                pages_compared += 1
                if got.next_key is None:
                    break
                token = got.next_key
                rank = rnd.choice((got.next_rank, got.next_rank, None))  # old tokens: no rank
                if rnd.random() < 0.3:  # writes between pages, the next entity deleted too
                    if rnd.random() < 0.5:
                        backend.write(A, T, WriteOp("delete", *token, if_match="*"))
                    _write_randomly(backend, rnd, 3)
        assert pages_compared > 40
    finally:
        backend.close()


class _Counting:
    """A table's rows that count the rows their reads hand out (the work of a page)."""

    def __init__(self, rows: TableRows) -> None:
        self.rows = rows
        self.visited = 0

    def get(self, key: Key) -> Entity | None:
        return self.rows.get(key)

    def scan(
        self, ranges: Sequence[tuple[Key, Key | None]], start: Key, hint: int
    ) -> Iterator[tuple[Key, Entity]]:
        for item in self.rows.scan(ranges, start, hint):
            self.visited += 1
            yield item

    def by_creation(self, start: tuple[int, Key], hint: int) -> Iterator[tuple[Key, Entity]]:
        for item in self.rows.by_creation(start, hint):
            self.visited += 1
            yield item

    def snapshot(self) -> AbstractContextManager[None]:
        return self.rows.snapshot()


def _filled(
    rows_of: Callable[[], TableRows], count: int, write: Callable[[list[Entity]], None]
) -> TableRows:
    entities = [
        Entity(f"p{i % 13:02d}", f"r{(i * 7919) % count:06d}", 1, {"N": (Edm.INT32, i % 4)}, i + 1)
        for i in range(count)
    ]
    write(entities)
    return rows_of()


def _memory(count: int, tmp_path: Path) -> tuple[TableRows, Callable[[], None]]:
    rows = MemoryRows(by_creation=True)

    def write(entities: list[Entity]) -> None:
        rows.apply_all((sort_key(e.pk, e.rk), e.key, e) for e in entities)

    return _filled(lambda: rows, count, write), lambda: None


def _stored(count: int, tmp_path: Path) -> tuple[TableRows, Callable[[], None]]:
    store = SqliteStore(tmp_path / f"s{count}", creation_index=True, durability="process")
    store.create_table(A, "t", "T")

    def write(entities: list[Entity]) -> None:
        store.write_entity_groups([(A, "t", entities, [])], 5)

    return _filled(lambda: StoredRows(store, A, "t"), count, write), store.close


@pytest.mark.parametrize("make", [_memory, _stored], ids=["memory", "durable"])
@pytest.mark.parametrize(
    "text", [None, "N eq 1", "PartitionKey ge 'p01'"], ids=["all", "property", "wide-range"]
)
def test_a_page_visits_rows_in_proportion_to_the_page_not_the_table(
    tmp_path: Path,
    make: Callable[[int, Path], tuple[TableRows, Callable[[], None]]],
    text: str | None,
) -> None:
    flt = None if text is None else compile_entity_filter(text)
    ranges = _sorted_ranges(flt)
    visited: list[int] = []
    for count in (1_000, 16_000):
        rows, close = make(count, tmp_path)
        try:
            counting = _Counting(rows)
            token: tuple[str, str] | None = None
            rank: int | None = None
            with rows.snapshot():
                for _ in range(5):  # the fifth page of ten
                    page = unordered_page(counting, ranges, flt, 10, token, None, None, rank)  # type: ignore[arg-type]
                    token, rank = page.next_key, page.next_rank
                    assert token is not None
                    assert len(page.entities) == 10
                    if _ < 4:
                        counting.visited = 0
            visited.append(counting.visited)
        finally:
            close()
    # The fifth page reads its rows, the filtered-out ones among them and the next entity:
    # the same few rows at 1,000 and at 16,000 rows (the former sort read all of them).
    assert visited[0] == visited[1]
    assert visited[1] <= 4 * 10 + 1


def test_the_creation_order_of_memory_rows_follows_every_change() -> None:
    rows = MemoryRows(by_creation=True)
    rows.apply(("p", "a"), Entity("p", "a", 1, {}, 5))
    rows.apply(("p", "b"), Entity("p", "b", 1, {}, 3))
    rows.apply(("p", "a"), Entity("p", "a", 2, {}, 5))  # a replace keeps its rank
    rows.apply(("p", "b"), Entity("p", "b", 2, {}, 9))  # a row given a new rank moves
    assert [(k, e.timestamp) for k, e in rows.by_creation((0, ("", "")), 5)] == [
        (("p", "a"), 2),
        (("p", "b"), 2),
    ]
    rows.apply_all(
        [(("p", "a"), ("p", "a"), None), (("q", "c"), ("q", "c"), Entity("q", "c", 3, {}, 1))]
    )
    assert [k for k, _ in rows.by_creation((0, ("", "")), 5)] == [("q", "c"), ("p", "b")]
    assert [k for k, _ in rows.by_creation((9, ("p", "b")), 5)] == [("p", "b")]
    assert list(rows.by_creation((9, ("p", "c")), 5)) == []
