"""The backend with the real ``$filter`` compiler: planner ranges + paging == brute force."""

from __future__ import annotations

import pytest

from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.model import Edm, Entity
from azt_server_stub.odata import compile_entity_filter

ACCOUNT = "devstoreaccount1"
TABLE = "Planned"
PKS = ["", "a", "a ", "b", "bb", "c", "é", "\ue000", "\U0001f600", "\uffff"]
RKS = ["", "0", "1", "10", "2", "z", "\ue001", "\U00010000"]


@pytest.fixture(scope="module")
def backend() -> Backend:
    b = Backend()
    b.create_table(ACCOUNT, TABLE)
    n = 0
    for pk in PKS:
        b.execute_batch(
            ACCOUNT,
            TABLE,
            [WriteOp("insert", pk, rk, {"N": (Edm.INT32, (n := n + 1))}) for rk in RKS],
        )
    return b


def _everything(b: Backend) -> list[Entity]:
    return b.query_entities(ACCOUNT, TABLE, None, None, None).entities


FILTERS = [
    "PartitionKey eq 'b'",
    "PartitionKey eq 'b' and RowKey eq '10'",
    "PartitionKey eq 'b' and RowKey gt '1' and RowKey le 'z'",
    "PartitionKey ge 'a' and PartitionKey lt 'c'",
    "PartitionKey gt '\ue000'",
    "PartitionKey lt '\ue000' and PartitionKey ge 'é'",
    "RowKey eq '\U00010000'",
    "RowKey ge '\ue000'",
    "PartitionKey eq 'a' or PartitionKey eq 'c' or PartitionKey eq '\U0001f600'",
    "(PartitionKey eq 'a' and RowKey lt '1') or (PartitionKey eq 'bb' and RowKey ge 'z')",
    "not (PartitionKey lt 'c')",
    "N gt 40 and N le 47",
    "PartitionKey eq 'c' and N ne 43",
    "PartitionKey eq 'nothing'",
    "PartitionKey eq 'a' and PartitionKey eq 'b'",
    "",
]


@pytest.mark.parametrize("text", FILTERS)
@pytest.mark.parametrize("top", [None, 1, 3])
def test_pages_equal_brute_force(backend: Backend, text: str, top: int | None) -> None:
    flt = compile_entity_filter(text)
    expected = [e.key for e in _everything(backend) if flt.matches(e)]
    got: list[tuple[str, str]] = []
    scanned = 0
    token = None
    for _ in range(1000):
        page = backend.query_entities(ACCOUNT, TABLE, flt, top, token)
        assert top is None or len(page.entities) <= top
        got += [e.key for e in page.entities]
        scanned += page.scanned
        token = page.next_key
        if token is None:
            break
    assert got == expected
    if getattr(flt, "exact", False):
        assert scanned == len(expected)  # pure key filters touch only their matches


def test_point_filter_touches_one_entity(backend: Backend) -> None:
    flt = compile_entity_filter("PartitionKey eq '\U0001f600' and RowKey eq '\ue001'")
    page = backend.query_entities(ACCOUNT, TABLE, flt, None, None)
    assert [e.key for e in page.entities] == [("\U0001f600", "\ue001")]
    assert page.scanned == 1
