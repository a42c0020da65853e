"""Backend entity group transactions: batch rules, indices, atomicity (PROTOCOL.md 9)."""

from __future__ import annotations

import pytest

from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.model import Edm, Entity

ACCOUNT = "devstoreaccount1"
TABLE = "Batches"


@pytest.fixture
def backend() -> Backend:
    b = Backend()
    b.create_table(ACCOUNT, TABLE)
    for rk in ("a", "b", "c"):
        b.write(ACCOUNT, TABLE, WriteOp("insert", "p", rk, {"V": (Edm.INT32, 1)}))
    b.write(ACCOUNT, TABLE, WriteOp("insert", "other", "a"))
    return b


def _state(b: Backend) -> list[Entity]:
    return b.query_entities(ACCOUNT, TABLE, None, None, None).entities


def _mixed_ops(b: Backend) -> list[WriteOp]:
    etag_b = b.get_entity(ACCOUNT, TABLE, "p", "b").etag
    return [
        WriteOp("insert", "p", "new1", {"N": (Edm.STRING, "x")}),
        WriteOp("replace", "p", "a", {"R": (Edm.BOOLEAN, True)}, "*"),
        WriteOp("merge", "p", "b", {"M": (Edm.DOUBLE, 1.5)}, etag_b),
        WriteOp("delete", "p", "c", if_match="*"),
        WriteOp("replace", "p", "new2", {"U": (Edm.INT64, 5)}),
        WriteOp("merge", "p", "new3", {"W": (Edm.INT32, 3)}),
    ]


def test_successful_batch_applies_everything_with_one_timestamp(backend: Backend) -> None:
    results = backend.execute_batch(ACCOUNT, TABLE, _mixed_ops(backend))
    assert [r.created for r in results] == [True, False, False, False, True, True]
    assert results[3].entity is None
    stamps = {r.entity.timestamp for r in results if r.entity is not None}
    assert len(stamps) == 1
    keys = [(e.pk, e.rk) for e in _state(backend)]
    assert keys == [
        ("other", "a"),
        ("p", "a"),
        ("p", "b"),
        ("p", "new1"),
        ("p", "new2"),
        ("p", "new3"),
    ]
    assert backend.get_entity(ACCOUNT, TABLE, "p", "a").props == {"R": (Edm.BOOLEAN, True)}
    assert backend.get_entity(ACCOUNT, TABLE, "p", "b").props == {
        "V": (Edm.INT32, 1),
        "M": (Edm.DOUBLE, 1.5),
    }
    # a later single write gets a later timestamp than the batch
    later = backend.write(ACCOUNT, TABLE, WriteOp("insert", "p", "z")).entity
    assert later is not None
    assert later.timestamp > stamps.pop()


@pytest.mark.parametrize("failing", range(6))
def test_failure_at_any_index_applies_nothing(backend: Backend, failing: int) -> None:
    ops = _mixed_ops(backend)
    stale = "W/\"datetime'2001-01-01T00%3A00%3A00.0000000Z'\""
    breakers = [
        WriteOp("insert", "p", "a"),  # exists -> 409
        WriteOp("replace", "p", "a", {}, stale),  # 412
        WriteOp("merge", "p", "b", {}, stale),  # 412
        WriteOp("delete", "p", "missing", if_match="*"),  # 404
        WriteOp("replace", "p", "new2", {"bad name": (Edm.INT32, 1)}),  # 400
        WriteOp("merge", "p", "new3", {}, "*"),  # 404
    ]
    expected = [
        (409, "EntityAlreadyExists"),
        (412, "UpdateConditionNotSatisfied"),
        (412, "UpdateConditionNotSatisfied"),
        (404, "ResourceNotFound"),
        (400, "PropertyNameInvalid"),
        (404, "ResourceNotFound"),
    ]
    ops[failing] = breakers[failing]
    if failing == 0:  # keep row keys unique: the breaker reuses "a"; drop op 1's use of it
        ops[1] = WriteOp("replace", "p", "new0", {}, None)
    before = _state(backend)
    with pytest.raises(StubError) as exc:
        backend.execute_batch(ACCOUNT, TABLE, ops)
    assert exc.value.index == failing
    assert (exc.value.status, exc.value.code) == expected[failing]
    after = _state(backend)
    assert [id(e) for e in after] == [id(e) for e in before]


def test_too_many_operations(backend: Backend) -> None:
    ops = [WriteOp("insert", "p", f"{i:03d}") for i in range(101)]
    with pytest.raises(StubError) as exc:
        backend.execute_batch(ACCOUNT, TABLE, ops)
    assert (exc.value.status, exc.value.code, exc.value.index) == (400, "InvalidInput", 99)
    assert "100" in exc.value.message
    assert len(_state(backend)) == 4
    assert len(backend.execute_batch(ACCOUNT, TABLE, ops[:100])) == 100


def test_different_partitions_reports_first_offender(backend: Backend) -> None:
    ops = [
        WriteOp("insert", "p", "x1"),
        WriteOp("insert", "p", "x2"),
        WriteOp("insert", "q", "x3"),
        WriteOp("insert", "r", "x4"),
    ]
    with pytest.raises(StubError) as exc:
        backend.execute_batch(ACCOUNT, TABLE, ops)
    assert (exc.value.code, exc.value.index) == ("CommandsInBatchActOnDifferentPartitions", 2)
    assert len(_state(backend)) == 4


def test_duplicate_row_reports_second_occurrence(backend: Backend) -> None:
    ops = [
        WriteOp("insert", "p", "x1"),
        WriteOp("insert", "p", "x2"),
        WriteOp("merge", "p", "x3"),
        WriteOp("delete", "p", "x1", if_match="*"),
    ]
    with pytest.raises(StubError) as exc:
        backend.execute_batch(ACCOUNT, TABLE, ops)
    assert (exc.value.code, exc.value.index) == ("InvalidDuplicateRow", 3)
    assert len(_state(backend)) == 4


def test_row_keys_differing_only_in_case_are_distinct(backend: Backend) -> None:
    ops = [WriteOp("insert", "p", "K"), WriteOp("insert", "p", "k")]
    assert len(backend.execute_batch(ACCOUNT, TABLE, ops)) == 2


def test_missing_table_reported_at_index_zero(backend: Backend) -> None:
    with pytest.raises(StubError) as exc:
        backend.execute_batch(ACCOUNT, "NoSuchTable", [WriteOp("insert", "p", "x")])
    assert (exc.value.status, exc.value.code, exc.value.index) == (404, "TableNotFound", 0)


def test_validation_error_carries_its_index(backend: Backend) -> None:
    ops = [WriteOp("insert", "p", f"v{i}") for i in range(20)]
    ops[12] = WriteOp("insert", "p", "v12", {"S": (Edm.STRING, "x" * 32769)})
    with pytest.raises(StubError) as exc:
        backend.execute_batch(ACCOUNT, TABLE, ops)
    assert (exc.value.code, exc.value.index) == ("PropertyValueTooLarge", 12)
    assert len(_state(backend)) == 4


def test_empty_batch_is_a_no_op(backend: Backend) -> None:
    assert backend.execute_batch(ACCOUNT, TABLE, []) == []
    assert len(_state(backend)) == 4


def test_batch_reads_committed_state_not_its_own_writes(backend: Backend) -> None:
    # each entity appears once, so an op always sees the state before the batch
    old = backend.get_entity(ACCOUNT, TABLE, "p", "a")
    results = backend.execute_batch(
        ACCOUNT,
        TABLE,
        [WriteOp("merge", "p", "a", {"X": (Edm.INT32, 2)}, old.etag), WriteOp("insert", "p", "y")],
    )
    assert results[0].entity is not None
    assert results[0].entity.props == {"V": (Edm.INT32, 1), "X": (Edm.INT32, 2)}
