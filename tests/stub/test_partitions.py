"""Range partitions and scan budgets: the layout objects, and the backend's page cutting
checked page by page against a reference model (a test double of the query loop), then
end-to-end invariants (every match exactly once, in order) with real ``$filter`` plans."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from azt_server_stub import odata
from azt_server_stub.backend import Backend, KeyRange, WriteOp
from azt_server_stub.cli import add_partition_arguments, partitions_from_args
from azt_server_stub.model import Edm, Entity
from azt_server_stub.realism.partitions import PartitionLayout, RangeLayout, utf16_key

ACCOUNT = "acct"
TABLE = "Ranges"
Key = tuple[str, str]


# --- the layout objects -----------------------------------------------------------------------


def test_range_layout_is_normalised() -> None:
    layout = RangeLayout(boundaries=("m", "", "c", "m", "\U0001f600", "\ufffd"))
    # UTF-16 order: the astral character (a surrogate pair, D83D...) sorts before U+FFFD
    assert layout.boundaries == ("c", "m", "\U0001f600", "\ufffd")
    assert sorted(["\ufffd", "\U0001f600"]) == ["\ufffd", "\U0001f600"]  # code points differ
    assert layout.partition_of("") == 0
    assert layout.partition_of("c") == 1
    assert layout.partition_of("b") == 0
    assert layout.partition_of("\uffff") == 4
    assert layout.next_boundary("d") == "m"
    assert layout.next_boundary("\ufffd") is None
    assert RangeLayout().trivial
    assert not RangeLayout(scan_budget=1).trivial


@pytest.mark.parametrize("budget", [0, -3, True, 2.5])
def test_scan_budget_must_be_a_positive_int(budget: object) -> None:
    with pytest.raises(ValueError, match="scan_budget"):
        RangeLayout(scan_budget=budget)  # type: ignore[arg-type]


def test_boundaries_must_be_strings() -> None:
    with pytest.raises(TypeError, match="PartitionKey string"):
        RangeLayout(boundaries=("a", 3))  # type: ignore[arg-type]


def test_every_nth_partition_key() -> None:
    keys = [f"p{i:02d}" for i in range(10)] * 2
    assert RangeLayout.every(keys, 3, scan_budget=7) == RangeLayout(("p03", "p06", "p09"), 7)
    with pytest.raises(ValueError):
        RangeLayout.every(keys, 0)


def test_partition_layout_per_table() -> None:
    layout = PartitionLayout(RangeLayout(scan_budget=10), {"Orders": RangeLayout(("x",))})
    assert layout.for_table("orders").boundaries == ("x",)
    assert layout.for_table("ORDERS").scan_budget is None
    assert layout.for_table("items") == RangeLayout(scan_budget=10)
    layout.set_table("items", RangeLayout(("a",)))
    layout.set_default(RangeLayout())
    assert layout.for_table("Items").boundaries == ("a",)
    layout.set_table("ITEMS", None)
    assert layout.for_table("items") == RangeLayout()
    assert layout.default == RangeLayout()
    assert RangeLayout(("b",), 3).query_options() == {"scan_budget": 3, "boundaries": ("b",)}
    assert RangeLayout().query_options() == {"scan_budget": None, "boundaries": None}


def test_command_line() -> None:
    parser = argparse.ArgumentParser()
    add_partition_arguments(parser)
    assert partitions_from_args(parser.parse_args([])) is None
    layout = partitions_from_args(
        parser.parse_args(["--range-boundary", "k", "--range-boundary", "c"])
    )
    assert layout is not None
    assert layout.default == RangeLayout(("c", "k"))
    with pytest.raises(ValueError):
        partitions_from_args(parser.parse_args(["--scan-budget", "0"]))
    pages = partitions_from_args(parser.parse_args(["--partition-pages"]))
    assert pages is not None
    assert pages.default == RangeLayout(partition_pages=True)


# --- a reference model of the backend's query loop ----------------------------------------------


class Where:
    """A filter double: full scan, with a predicate."""

    def __init__(self, predicate: Callable[[Entity], bool]) -> None:
        self.ranges: list[KeyRange] = [(("", ""), None)]
        self._predicate = predicate

    def matches(self, entity: Entity) -> bool:
        return self._predicate(entity)


def sort_key(key: Key) -> tuple[bytes, bytes]:
    return utf16_key(key[0]), utf16_key(key[1])


def model_pages(
    entities: Sequence[Entity],
    predicate: Callable[[Entity], bool],
    layout: RangeLayout,
    top: int | None,
) -> list[tuple[list[Key], Key | None]]:
    """Pages as the service's rules cut them: ``(keys returned, next key)`` per page.

    A page starts at the continuation key (the table's start for the first page) and
    stops: at the first boundary above its starting PartitionKey (the continuation is then
    the boundary, with an empty RowKey), with ``partition_pages`` at the first entity of a
    PartitionKey other than the first one its scan met, after ``scan_budget`` examined
    entities, or after ``top`` matches (the continuation is then the next entity, or the
    boundary when that entity lies beyond it).
    """
    rows = sorted(entities, key=lambda e: sort_key(e.key))
    limit = min(top or 1000, 1000)
    pages: list[tuple[list[Key], Key | None]] = []
    start: Key = ("", "")
    while True:
        pos = next((n for n, r in enumerate(rows) if sort_key(r.key) >= sort_key(start)), len(rows))
        real_stop = layout.real_boundary_above(start[0])
        stop = None if real_stop is None else utf16_key(real_stop)
        boundary_token = None if real_stop is None else (real_stop, "")

        def beyond(row: Entity, stop: bytes | None = stop) -> bool:
            return stop is not None and utf16_key(row.pk) >= stop

        page_pk = rows[pos].pk if pos < len(rows) and not beyond(rows[pos]) else None
        found: list[Key] = []
        scanned = 0
        next_key: Key | None = None
        i = pos
        while i < len(rows):
            row = rows[i]
            if beyond(row):
                next_key = boundary_token
                break
            if layout.partition_pages and row.pk != page_pk:
                next_key = row.key
                break
            if scanned == layout.scan_budget:
                next_key = row.key
                break
            scanned += 1
            i += 1
            if predicate(row):
                found.append(row.key)
                if len(found) == limit:
                    if i < len(rows):
                        next_key = boundary_token if beyond(rows[i]) else rows[i].key
                    break
        pages.append((found, next_key))
        if next_key is None:
            return pages
        start = next_key


def load(entities: Sequence[Entity]) -> Backend:
    backend = Backend()
    backend.create_table(ACCOUNT, TABLE)
    for e in entities:
        backend.write(ACCOUNT, TABLE, WriteOp("replace", e.pk, e.rk, dict(e.props)))
    return backend


def backend_pages(
    backend: Backend,
    flt: object,
    layout: RangeLayout,
    top: int | None,
    first_partition: str = "",
    max_pages: int = 10_000,
) -> list[tuple[list[Key], Key | None, int]]:
    """Follow continuations as the handler does (``first_partition``: where the first
    page's scan starts, i.e. the planner's first range)."""
    pages: list[tuple[list[Key], Key | None, int]] = []
    start: Key | None = None
    for _ in range(max_pages):
        page = layout.page(backend, ACCOUNT, TABLE, flt, top, start)  # type: ignore[arg-type]
        pages.append(([e.key for e in page.entities], page.next_key, page.scanned))
        if page.next_key is None:
            return pages
        assert start is None or sort_key(page.next_key) > sort_key(start), "no progress"
        start = page.next_key
    raise AssertionError("the query did not finish")


KEY_CHARS = st.sampled_from(["a", "b", "c", "m", "z", "\ufffd", "\U0001f600", "'"])
keys = st.text(KEY_CHARS, max_size=3)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[Entity], RangeLayout, int | None, int]:
    pairs = draw(st.lists(st.tuples(keys, keys), max_size=40, unique=True))
    entities = [Entity(pk, rk, 0, {"n": (Edm.INT32, i)}) for i, (pk, rk) in enumerate(pairs)]
    boundaries = draw(st.lists(keys, max_size=5))
    budget = draw(st.none() | st.integers(1, 6))
    per_partition = draw(st.booleans())
    top = draw(st.none() | st.integers(1, 6))
    modulus = draw(st.integers(1, 4))
    return entities, RangeLayout(tuple(boundaries), budget, per_partition), top, modulus


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_backend_cuts_pages_exactly_as_the_model(
    scenario: tuple[list[Entity], RangeLayout, int | None, int],
) -> None:
    entities, layout, top, modulus = scenario

    def predicate(e: Entity) -> bool:
        return int(e.props["n"][1]) % modulus == 0

    backend = load(entities)
    got = backend_pages(backend, Where(predicate), layout, top)
    want = model_pages(entities, predicate, layout, top)
    assert [(keys, nxt) for keys, nxt, _ in got] == want
    for _, _, scanned in got:
        assert layout.scan_budget is None or scanned <= layout.scan_budget
    # every match exactly once, in order
    returned = [k for keys, _, _ in got for k in keys]
    expected = sorted((e.key for e in entities if predicate(e)), key=sort_key)
    assert returned == expected


def test_empty_range_partitions_give_empty_pages_with_continuations() -> None:
    entities = [Entity(pk, "1", 0) for pk in ["a1", "a2", "k1", "z1", "z2"]]
    backend = load(entities)
    layout = RangeLayout(boundaries=("b", "c", "k", "m", "y"))
    pages = backend_pages(backend, None, layout, None)
    # the continuation at a boundary is the boundary (the next range partition's start),
    # so each empty range partition on the way costs one empty page
    assert [(keys, nxt) for keys, nxt, _ in pages] == [
        ([("a1", "1"), ("a2", "1")], ("b", "")),  # ["", b)
        ([], ("c", "")),  # [b, c): empty
        ([], ("k", "")),  # [c, k): empty
        ([("k1", "1")], ("m", "")),  # [k, m)
        ([], ("y", "")),  # [m, y): empty
        ([("z1", "1"), ("z2", "1")], None),  # [y, ...)
    ]
    # A query starting inside an empty range partition gets an empty page.
    only_z = RangeLayout(boundaries=("m",))
    z_backend = load([Entity("z", str(i), 0) for i in range(3)])
    first = only_z.page(z_backend, ACCOUNT, TABLE, None, None, None)
    assert (first.entities, first.next_key, first.scanned) == ([], ("m", ""), 0)
    # the last range partition ends the query: no token after it
    second = only_z.page(z_backend, ACCOUNT, TABLE, None, None, first.next_key)
    assert ([e.key for e in second.entities], second.next_key) == (
        [("z", "0"), ("z", "1"), ("z", "2")],
        None,
    )


def test_scan_budget_gives_empty_pages_when_nothing_matches() -> None:
    entities = [Entity("p", f"{i:02d}", 0, {"hit": (Edm.BOOLEAN, i >= 7)}) for i in range(9)]
    backend = load(entities)
    flt = odata.compile_entity_filter("hit eq true")
    pages = backend_pages(backend, flt, RangeLayout(scan_budget=3), None)
    assert [(keys, nxt) for keys, nxt, _ in pages] == [
        ([], ("p", "03")),
        ([], ("p", "06")),
        ([("p", "07"), ("p", "08")], None),
    ]
    assert [scanned for _, _, scanned in pages] == [3, 3, 3]


FILTERS = [
    "",
    "PartitionKey eq 'b'",
    "PartitionKey ge 'b' and PartitionKey lt 'z'",
    "PartitionKey eq 'a' or PartitionKey eq 'm' or PartitionKey eq 'z'",
    "RowKey gt 'a'",
    "n ge 3",
    "(PartitionKey eq 'c' and RowKey ge 'b') or n lt 2",
    "PartitionKey gt 'm' and n ne 4",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(FILTERS))
def test_real_filters_return_every_match_once_in_order(
    scenario: tuple[list[Entity], RangeLayout, int | None, int], text: str
) -> None:
    entities, layout, top, _ = scenario
    backend = load(entities)
    flt = odata.compile_entity_filter(text) if text else None
    # the first page starts where the planner's first range starts
    first = (
        "" if flt is None or not flt.ranges else min((lo[0] for lo, _ in flt.ranges), key=utf16_key)
    )
    pages = backend_pages(backend, flt, layout, top, first)
    returned = [k for keys, _, _ in pages for k in keys]
    stored = [backend.get_entity(ACCOUNT, TABLE, *e.key) for e in entities]
    expected = sorted((e.key for e in stored if flt is None or flt.matches(e)), key=sort_key)
    assert returned == expected
    start_pk = first
    for keys, nxt, scanned in pages:
        stop = layout.real_boundary_above(start_pk)
        # no page crosses a boundary above the PartitionKey it started at
        if stop is not None:
            assert all(utf16_key(pk) < utf16_key(stop) for pk, _ in keys)
            if keys and nxt is not None and utf16_key(nxt[0]) >= utf16_key(stop):
                assert nxt == (stop, "")  # the continuation names the next range partition
        if layout.partition_pages:
            assert len({pk for pk, _ in keys}) <= 1
        assert layout.scan_budget is None or scanned <= layout.scan_budget
        assert top is None or len(keys) <= top
        if nxt is not None:
            start_pk = nxt[0]


def test_partition_pages_never_mix_partition_keys() -> None:
    entities = [Entity(pk, str(rk), 0) for pk in ("", "a", "b", "c") for rk in range(3)]
    backend = load(entities)
    layout = RangeLayout(boundaries=("b",), partition_pages=True)
    pages = backend_pages(backend, None, layout, 2)
    assert [(keys, nxt) for keys, nxt, _ in pages] == [
        ([("", "0"), ("", "1")], ("", "2")),  # top 2
        ([("", "2")], ("a", "0")),
        ([("a", "0"), ("a", "1")], ("a", "2")),
        ([("a", "2")], ("b", "")),  # the real boundary "b": its start
        ([("b", "0"), ("b", "1")], ("b", "2")),
        ([("b", "2")], ("c", "0")),
        ([("c", "0"), ("c", "1")], ("c", "2")),
        ([("c", "2")], None),
    ]
    assert not layout.trivial
    # a scan from the table's start without a "" partition does not begin with an empty
    # page: the first page is the first PartitionKey the scan meets
    no_empty_pk = load([Entity("x", "1", 0), Entity("x", "2", 0), Entity("y", "1", 0)])
    pages = backend_pages(no_empty_pk, None, RangeLayout(partition_pages=True), None)
    assert [(keys, nxt) for keys, nxt, _ in pages] == [
        ([("x", "1"), ("x", "2")], ("y", "1")),
        ([("y", "1")], None),
    ]
    # nor does a filter whose lower bound no entity has
    flt = odata.compile_entity_filter("PartitionKey ge 'w'")
    pages = backend_pages(no_empty_pk, flt, RangeLayout(partition_pages=True), None)
    assert [keys for keys, _, _ in pages] == [[("x", "1"), ("x", "2")], [("y", "1")]]
    # with a real boundary in between, the empty range partition still gets its page
    layout = RangeLayout(boundaries=("b", "c"), partition_pages=True)
    pages = backend_pages(no_empty_pk, None, layout, None)
    assert [(keys, nxt) for keys, nxt, _ in pages] == [
        ([], ("b", "")),
        ([], ("c", "")),
        ([("x", "1"), ("x", "2")], ("y", "1")),
        ([("y", "1")], None),
    ]


def test_docstring_examples() -> None:
    import doctest

    from azt_server_stub.realism import partitions as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 10
