"""Pages of filters whose key ranges hold only matches are taken by slices of the sorted
keys (``TableRows.take``) without the per-entity loop or the filter's evaluation; here
they are compared with that loop (the reference: the same filter without its ``exact``
promise, and a restriction that lets every key through, which keeps the loop), in memory
and on disk, for generated tables, filters, page sizes and continuations.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.model import Edm, Entity
from azt_server_stub.odata import compile_entity_filter
from azt_server_stub.query_pages import KeyRange, QueryPage

ACCOUNT = "devstoreaccount1"
_CHARS = ["a", "b", "c", "é", "\U0001f600", "\uffff", "'"]
_KEY = st.text(st.sampled_from(_CHARS), max_size=3)  # stored keys
_BOUND = st.text(st.sampled_from([*_CHARS, "\x00"]), max_size=3)  # keys in filters


class _Loop:
    """A filter as the loop path sees it: the same ranges and evaluator, no promise."""

    def __init__(self, ranges: Sequence[KeyRange], flt: object) -> None:
        self.ranges = ranges
        self._flt = flt

    def matches(self, entity: Entity) -> bool:
        return bool(self._flt.matches(entity))  # type: ignore[attr-defined]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@st.composite
def filters(draw: st.DrawFn) -> str | None:
    pk, lo, hi = draw(_BOUND), draw(_BOUND), draw(_BOUND)
    return draw(
        st.sampled_from(
            [
                None,
                "",
                f"PartitionKey eq {_literal(pk)}",
                f"PartitionKey eq {_literal(pk)} and RowKey ge {_literal(lo)}",
                f"PartitionKey eq {_literal(pk)} and RowKey ge {_literal(lo)}"
                f" and RowKey lt {_literal(hi)}",
                f"PartitionKey ge {_literal(lo)} and PartitionKey lt {_literal(hi)}",
                f"PartitionKey eq {_literal(lo)} or PartitionKey eq {_literal(hi)}",
                f"RowKey eq {_literal(lo)}",
                f"PartitionKey eq {_literal(pk)} and N ge 2",
                f"(PartitionKey eq {_literal(lo)} and RowKey gt {_literal(hi)})"
                f" or PartitionKey gt {_literal(pk)}",
            ]
        )
    )


def _pages(
    backend: Backend, table: str, flt_text: str | None, top: int, loop: bool
) -> list[QueryPage]:
    flt = compile_entity_filter(flt_text) if flt_text is not None else None
    used = _Loop(flt.ranges, flt) if loop and flt is not None else flt
    restrict = (lambda pk, rk: True) if loop else None
    pages = []
    token = None
    for _ in range(200):
        page = backend.query_entities(ACCOUNT, table, used, top, token, restrict)
        pages.append(page)
        token = page.next_key
        if token is None:
            break
    return pages


def _seen(pages: list[QueryPage]) -> list[object]:
    return [
        ([(e.pk, e.rk, e.timestamp, e.props) for e in p.entities], p.next_key, p.scanned)
        for p in pages
    ]


def _check(backend: Backend, keys: list[tuple[str, str]], flt_text: str | None, top: int) -> None:
    backend.create_table(ACCOUNT, "Take1")
    for i, (pk, rk) in enumerate(keys):
        backend.write(
            ACCOUNT,
            "Take1",
            WriteOp("replace", pk, rk, {"N": (Edm.INT32, i)}),
        )
    fast = _seen(_pages(backend, "Take1", flt_text, top, loop=False))
    assert fast == _seen(_pages(backend, "Take1", flt_text, top, loop=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_KEY, _KEY), max_size=25), filters(), st.integers(1, 6))
def test_pages_taken_in_memory_equal_the_loop(
    keys: list[tuple[str, str]], flt_text: str | None, top: int
) -> None:
    _check(Backend(), keys, flt_text, top)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_KEY, _KEY), max_size=25), filters(), st.integers(1, 6))
def test_pages_taken_on_disk_equal_the_loop(
    tmp_path_factory: object, keys: list[tuple[str, str]], flt_text: str | None, top: int
) -> None:
    folder: Path = tmp_path_factory.mktemp("take")  # type: ignore[attr-defined]
    backend = Backend(folder)
    try:
        _check(backend, keys, flt_text, top)
    finally:
        backend.close()


def test_a_thousand_row_page_and_its_continuation() -> None:
    backend = Backend()
    keys = [("Q", f"{i:08d}") for i in range(2500)] + [("R", "0")]
    _check(backend, keys, "PartitionKey eq 'Q'", 1000)
    pages = _pages(backend, "Take1", "PartitionKey eq 'Q'", 1000, loop=False)
    assert [len(p.entities) for p in pages] == [1000, 1000, 500]
    assert [p.next_key for p in pages] == [("Q", "00001000"), ("Q", "00002000"), None]
