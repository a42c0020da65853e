"""Backend queries: ordering, pages, continuation, planner ranges and scan cost."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from azt_server_stub.backend import Backend, KeyRange, QueryPage, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity

ACCOUNT = "devstoreaccount1"
TABLE = "Things"


@dataclass
class FakeFilter:
    """A stand-in for odata's compiled filter: fixed ranges plus a predicate."""

    ranges: list[KeyRange]
    predicate: Callable[[Entity], bool] = field(default=lambda e: True)
    calls: int = 0

    def matches(self, entity: Entity) -> bool:
        self.calls += 1
        return self.predicate(entity)


def partition(pk: str) -> KeyRange:
    return ((pk, ""), (pk + "\0", ""))


def point(pk: str, rk: str) -> KeyRange:
    return ((pk, rk), (pk, rk + "\0"))


def _fill(b: Backend, table: str, partitions: int, rows: int) -> None:
    b.create_table(ACCOUNT, table)
    for p in range(partitions):
        b.execute_batch(
            ACCOUNT,
            table,
            [
                WriteOp("insert", f"p{p:04d}", f"r{r:04d}", {"N": (Edm.INT32, r)})
                for r in range(rows)
            ],
        )


def _all_pages(
    b: Backend,
    table: str,
    flt: FakeFilter | None,
    top: int | None,
    **kw: object,
) -> list[QueryPage]:
    pages = []
    token = None
    for _ in range(10_000):
        page = b.query_entities(ACCOUNT, table, flt, top, token, **kw)  # type: ignore[arg-type]
        pages.append(page)
        token = page.next_key
        if token is None:
            return pages
    raise AssertionError("continuation never ended")


@pytest.fixture(scope="module")
def big() -> Backend:
    b = Backend()
    _fill(b, TABLE, 25, 100)  # 2,500 entities
    _fill(b, "Small", 3, 10)
    return b


def test_paging_through_2500_entities(big: Backend) -> None:
    pages = _all_pages(big, TABLE, None, None)
    assert [len(p.entities) for p in pages] == [1000, 1000, 500]
    keys = [e.key for p in pages for e in p.entities]
    assert keys == sorted(keys)
    assert len(set(keys)) == 2500
    assert pages[0].next_key == pages[1].entities[0].key == ("p0010", "r0000")
    assert pages[1].next_key == ("p0020", "r0000")


@pytest.mark.parametrize("top", [1, 7, 999, 1000, 5000])
def test_paging_with_top(big: Backend, top: int) -> None:
    pages = _all_pages(big, "Small", None, top)
    size = min(top, 1000)
    assert all(len(p.entities) == size for p in pages[:-1])
    keys = [e.key for p in pages for e in p.entities]
    assert keys == sorted(keys)
    assert len(keys) == 30


def test_continuation_resumes_inclusively(big: Backend) -> None:
    page = big.query_entities(ACCOUNT, "Small", None, 5, ("p0001", "r0003"))
    assert page.entities[0].key == ("p0001", "r0003")
    # a continuation key that no longer exists resumes at the next key
    page = big.query_entities(ACCOUNT, "Small", None, 5, ("p0001", "r0003x"))
    assert page.entities[0].key == ("p0001", "r0004")
    # NextRowKey absent: start of a partition
    page = big.query_entities(ACCOUNT, "Small", None, 5, ("p0002", ""))
    assert page.entities[0].key == ("p0002", "r0000")


def test_point_and_partition_scans_cost_independent_of_table_size(big: Backend) -> None:
    for table in ("Small", TABLE):
        page = big.query_entities(ACCOUNT, table, FakeFilter([point("p0001", "r0005")]), None, None)
        assert [e.key for e in page.entities] == [("p0001", "r0005")]
        assert page.scanned == 1
        flt = FakeFilter([partition("p0002")])
        page = big.query_entities(ACCOUNT, table, flt, None, None)
        assert page.scanned == len(page.entities) == flt.calls
        assert {e.pk for e in page.entities} == {"p0002"}
    small = big.query_entities(ACCOUNT, "Small", FakeFilter([partition("p0002")]), None, None)
    large = big.query_entities(ACCOUNT, TABLE, FakeFilter([partition("p0002")]), None, None)
    assert (small.scanned, large.scanned) == (10, 100)


def test_row_range_scan_touches_only_the_range(big: Backend) -> None:
    flt = FakeFilter([(("p0007", "r0010"), ("p0007", "r0020"))])
    page = big.query_entities(ACCOUNT, TABLE, flt, None, None)
    assert [e.rk for e in page.entities] == [f"r{i:04d}" for i in range(10, 20)]
    assert page.scanned == 10


def test_paged_range_scan_touches_only_the_page(big: Backend) -> None:
    flt = FakeFilter([(("p0003", ""), None)])
    page = big.query_entities(ACCOUNT, TABLE, flt, 10, ("p0020", "r0050"))
    assert page.scanned == 10
    assert page.entities[0].key == ("p0020", "r0050")
    assert page.next_key == ("p0020", "r0060")


def test_multi_range_with_continuation_skips_finished_ranges(big: Backend) -> None:
    flt = FakeFilter([point("p0001", "r0001"), partition("p0005"), point("p0009", "r0099")])
    pages = _all_pages(big, TABLE, flt, 40)
    keys = [e.key for p in pages for e in p.entities]
    assert keys[0] == ("p0001", "r0001")
    assert keys[-1] == ("p0009", "r0099")
    assert len(keys) == 102
    assert sum(p.scanned for p in pages) == 102


def test_empty_ranges_mean_nothing(big: Backend) -> None:
    page = big.query_entities(ACCOUNT, TABLE, FakeFilter([]), None, None)
    assert (page.entities, page.next_key, page.scanned) == ([], None, 0)


def test_filter_predicate_applied_and_next_key_is_next_scanned(big: Backend) -> None:
    flt = FakeFilter([partition("p0004")], lambda e: e.props["N"][1] % 10 == 0)
    page = big.query_entities(ACCOUNT, TABLE, flt, 3, None)
    assert [e.rk for e in page.entities] == ["r0000", "r0010", "r0020"]
    assert page.next_key == ("p0004", "r0021")
    rest = _all_pages(big, TABLE, flt, 3)
    assert sum(len(p.entities) for p in rest) == 10


def test_last_page_may_be_empty_when_nothing_else_matches(big: Backend) -> None:
    flt = FakeFilter([partition("p0004")], lambda e: e.rk == "r0000")
    first = big.query_entities(ACCOUNT, TABLE, flt, 1, None)
    assert first.next_key == ("p0004", "r0001")
    second = big.query_entities(ACCOUNT, TABLE, flt, 1, first.next_key)
    assert (second.entities, second.next_key) == ([], None)


def test_restrict_excludes_keys(big: Backend) -> None:
    page = big.query_entities(
        ACCOUNT, "Small", None, None, None, restrict=lambda pk, rk: pk == "p0001" and rk < "r0003"
    )
    assert [e.key for e in page.entities] == [("p0001", f"r000{i}") for i in range(3)]


def test_scan_budget_gives_short_and_empty_pages(big: Backend) -> None:
    flt = FakeFilter([(("", ""), None)], lambda e: e.pk == "p0002")
    pages = _all_pages(big, "Small", flt, None, scan_budget=4)
    assert all(p.scanned <= 4 for p in pages)
    assert any(not p.entities and p.next_key is not None for p in pages)
    keys = [e.key for p in pages for e in p.entities]
    assert keys == [("p0002", f"r{i:04d}") for i in range(10)]
    with pytest.raises(ValueError, match="scan_budget"):
        big.query_entities(ACCOUNT, "Small", None, None, None, scan_budget=0)


def test_partition_boundaries_end_pages(big: Backend) -> None:
    pages = _all_pages(big, "Small", None, None, boundaries=["p0001", "p0001x", "p0002"])
    assert [len(p.entities) for p in pages] == [10, 10, 10]
    assert [p.next_key for p in pages] == [("p0001", "r0000"), ("p0002", "r0000"), None]
    # a boundary below the first key: an empty first page, then the data
    pages = _all_pages(big, "Small", None, None, boundaries=["a", "b"])
    assert [len(p.entities) for p in pages] == [0, 30]


def test_top_out_of_range(big: Backend) -> None:
    with pytest.raises(StubError) as exc:
        big.query_entities(ACCOUNT, "Small", None, 0, None)
    assert exc.value.status == 400


def test_missing_table(big: Backend) -> None:
    with pytest.raises(StubError) as exc:
        big.query_entities(ACCOUNT, "Missing", None, None, None)
    assert exc.value.code == "TableNotFound"


def test_order_is_utf16_ordinal() -> None:
    b = Backend()
    b.create_table(ACCOUNT, "Order")
    keys = ["a", "B", "\ue000", "\U0001f600", "\uffff", "", "é", "a\U00010000", "a\uffff"]
    for k in keys:
        b.write(ACCOUNT, "Order", WriteOp("insert", "p", k))
    got = [e.rk for e in b.query_entities(ACCOUNT, "Order", None, None, None).entities]
    assert got == sorted(keys, key=lambda s: s.encode("utf-16-be"))
    assert got.index("\U0001f600") < got.index("\ue000")
    # point read and range scan with astral keys
    assert b.get_entity(ACCOUNT, "Order", "p", "\U0001f600").rk == "\U0001f600"
    flt = FakeFilter([(("p", "\ud800"), ("p", "\ue000"))])  # exactly the astral keys
    page = b.query_entities(ACCOUNT, "Order", flt, None, None)
    assert [e.rk for e in page.entities] == ["\U0001f600"]
    page = b.query_entities(ACCOUNT, "Order", None, 2, ("p", "\U0001f600"))
    assert [e.rk for e in page.entities] == ["\U0001f600", "\ue000"]


def test_query_tables_order_paging_and_predicate() -> None:
    b = Backend()
    names = ["zeta", "Alpha", "beta", "Gamma", "delta", "Epsilon"]
    for n in names:
        b.create_table(ACCOUNT, n)
    page = b.query_tables(ACCOUNT, None, None, None)
    assert page.names == sorted(names, key=str.lower)
    assert page.next_name is None
    got: list[str] = []
    token = None
    while True:
        tp = b.query_tables(ACCOUNT, None, 4, token)
        got += tp.names
        token = tp.next_name
        if token is None:
            break
    assert got == sorted(names, key=str.lower)
    assert b.query_tables(ACCOUNT, None, 2, None).next_name == "delta"
    assert b.query_tables(ACCOUNT, None, 2, "BETA").names == ["beta", "delta"]
    only = b.query_tables(ACCOUNT, lambda n: n.startswith(("E", "z")), None, None)
    assert only.names == ["Epsilon", "zeta"]
    assert b.query_tables("otheraccount", None, None, None).names == []


def test_many_tables_page_at_1000() -> None:
    b = Backend()
    for i in range(1005):
        b.create_table(ACCOUNT, f"t{i:05d}")
    first = b.query_tables(ACCOUNT, None, None, None)
    assert len(first.names) == 1000
    assert first.next_name == "t01000"
    assert len(b.query_tables(ACCOUNT, None, None, first.next_name).names) == 5


def _keys(pages: Sequence[QueryPage]) -> list[tuple[str, str]]:
    return [e.key for p in pages for e in p.entities]


def test_query_sees_writes_between_pages(big: Backend) -> None:
    b = Backend()
    _fill(b, "Live", 1, 10)
    first = b.query_entities(ACCOUNT, "Live", None, 5, None)
    b.write(ACCOUNT, "Live", WriteOp("delete", "p0000", "r0005", if_match="*"))
    b.write(ACCOUNT, "Live", WriteOp("insert", "p0000", "r0007a"))
    assert first.next_key is not None
    rest = b.query_entities(ACCOUNT, "Live", None, None, first.next_key)
    assert [e.rk for e in rest.entities] == ["r0006", "r0007", "r0007a", "r0008", "r0009"]
    assert _keys([first])[-1] == ("p0000", "r0004")
