"""Packing operations that must stay together (an entity and its index rows) into
transactions, on exact sizes, each limit checked on both sides of its boundary: a group of
100 operations fits alone and one of 101 is refused, as is a group one byte over the body
limit, with the group's number as the error's index and before anything is sent; a group
joins a transaction only when all of it fits, counting each part's ``Content-ID`` digits
(one more from the 10th and the 100th operation). No server: a client whose transport fails
the test if it is called."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest

import azt
from azt import BatchOperation, TableBatch, TableClient, UpdateMode
from azt._core.batch import Prepared, add_prepared, prepare_operation
from azt._core.batch_writer import BatchWriter
from azt._core.packing import check_group_alone, group_fits, pack_groups
from azt._core.transport import HttpRequest, HttpResponse, MockTransport
from azt.entity import Entity, Prop, prop
from azt.indexes import Holds, Index

URL = "https://acct.table.core.windows.net/"


def _never(request: HttpRequest) -> HttpResponse:
    raise AssertionError(f"nothing should be sent, got {request.method} {request.url}")


@pytest.fixture
def client() -> tuple[TableClient, MockTransport]:
    transport = MockTransport(_never)
    service = azt.TableServiceClient(
        URL, azt.SharedKeyCredential("acct", "a2V5"), transport=transport
    )
    return service.get_table_client("packing"), transport


def _op(rk: str, pk: str = "p", text: str = "") -> BatchOperation:
    entity = {"PartitionKey": pk, "RowKey": rk}
    if text:
        entity["Text"] = text
    return BatchOperation("upsert", entity, mode=UpdateMode.MERGE)


def _group(start: int, n: int, pk: str = "p") -> list[BatchOperation]:
    return [_op(f"r{start + i:04d}", pk) for i in range(n)]


def _limited(table: TableClient, max_bytes: int) -> Callable[[], TableBatch]:
    """Batches of ``table`` whose body limit is ``max_bytes`` (as a flavour would set)."""

    def new_batch() -> TableBatch:
        batch = table.batch()
        assert batch._changeset is not None
        batch._changeset.max_bytes = max_bytes
        return batch

    return new_batch


def _prepared(table: TableClient, ops: Sequence[BatchOperation]) -> list[Prepared]:
    probe = table.batch()
    return [prepare_operation(probe, op) for op in ops]


def _size_with(table: TableClient, ops: Sequence[BatchOperation]) -> int:
    """The exact body size of one transaction holding ``ops``, as encoded to be sent."""
    batch = table.batch()
    for p in _prepared(table, ops):
        add_prepared(batch, p)
    assert batch.size is not None
    return batch.size


# -- a group alone ----------------------------------------------------------------------------


def test_a_group_of_100_operations_fits_alone(client: tuple[TableClient, MockTransport]) -> None:
    table, transport = client
    check_group_alone(table.batch, _prepared(table, _group(0, 100)), 0)
    packed = pack_groups(table.batch, [_group(0, 100)])
    assert [(len(tx), n) for tx, n in packed] == [(100, 1)]
    assert transport.requests == []


def test_a_group_of_101_operations_is_refused_with_its_number(
    client: tuple[TableClient, MockTransport],
) -> None:
    table, transport = client
    group = _group(0, 101)
    with pytest.raises(azt.BatchValidationError) as caught:
        check_group_alone(table.batch, _prepared(table, group), 7)
    assert caught.value.index == 7
    assert str(caught.value).startswith(
        f"group 7 ({group[0]!r} and 100 index rows) cannot fit one transaction"
    )
    groups = [_group(0, 2), _group(100, 3), _group(200, 101)]
    with pytest.raises(azt.BatchValidationError) as caught:
        pack_groups(table.batch, groups)
    assert caught.value.index == 2
    assert "group 2 (" in str(caught.value)
    assert transport.requests == []


def test_a_group_refused_by_a_writer_has_no_index(
    client: tuple[TableClient, MockTransport],
) -> None:
    table, _ = client
    with pytest.raises(azt.BatchValidationError) as caught:
        check_group_alone(table.batch, _prepared(table, _group(0, 101)), None)
    assert caught.value.index is None
    assert str(caught.value).startswith("(")


def test_a_group_exactly_at_the_body_limit_fits_and_one_byte_over_is_refused(
    client: tuple[TableClient, MockTransport],
) -> None:
    table, transport = client
    group = [_op(f"r{i}", text="x" * 300) for i in range(12)]
    exact = _size_with(table, group)
    prepared = _prepared(table, group)
    check_group_alone(_limited(table, exact), prepared, 0)
    [(tx, n)] = pack_groups(_limited(table, exact), [group])
    assert (tx.size, len(tx), n) == (exact, 12, 1)
    with pytest.raises(azt.BatchValidationError) as caught:
        check_group_alone(_limited(table, exact - 1), prepared, 4)
    assert caught.value.index == 4
    with pytest.raises(azt.BatchValidationError) as caught:
        pack_groups(_limited(table, exact - 1), [group[:1], group])
    assert caught.value.index == 1
    assert transport.requests == []


def test_a_group_of_one_is_checked_by_prepare_not_refused_here(
    client: tuple[TableClient, MockTransport],
) -> None:
    table, _ = client
    check_group_alone(table.batch, _prepared(table, _group(0, 1)), 0)


def test_a_group_with_two_partitions_or_a_repeated_row_key_is_refused(
    client: tuple[TableClient, MockTransport],
) -> None:
    table, transport = client
    for bad in ([_op("a"), _op("b", pk="q")], [_op("a"), _op("a")]):
        with pytest.raises(azt.BatchValidationError) as caught:
            pack_groups(table.batch, [[_op("z", pk="o")], bad])
        assert caught.value.index == 1
    assert transport.requests == []


# -- a group joining a transaction ------------------------------------------------------------


@pytest.mark.parametrize("before", [8, 9, 98])
def test_a_group_fits_on_exact_sizes_across_content_id_digits(
    client: tuple[TableClient, MockTransport], before: int
) -> None:
    # the parts take Content-IDs before+1.. : crossing 9 -> 10 or 99 -> 100 adds a digit
    table, _ = client
    head = _group(0, before)
    group = _group(500, 2)
    exact = _size_with(table, [*head, *group])
    for limit, fits in ((exact, True), (exact + 1, True), (exact - 1, False)):
        batch = _limited(table, limit)()
        for p in _prepared(table, head):
            add_prepared(batch, p)
        assert group_fits(batch, _prepared(table, group)) is fits, (before, limit)


def test_each_operation_of_a_group_counts_toward_the_size(
    client: tuple[TableClient, MockTransport],
) -> None:
    # every operation alone would fit; the group as a whole does not
    table, _ = client
    head = [_op("h")]
    group = [_op(f"g{i}", text="y" * 200) for i in range(3)]
    exact = _size_with(table, [*head, *group])
    batch = _limited(table, exact - 1)()
    add_prepared(batch, _prepared(table, head)[0])
    prepared = _prepared(table, group)
    assert all(group_fits(batch, [p]) for p in prepared)
    assert group_fits(batch, prepared) is False


@pytest.mark.parametrize(("before", "fits"), [(97, True), (98, True), (99, False)])
def test_a_group_fits_at_most_100_operations(
    client: tuple[TableClient, MockTransport], before: int, fits: bool
) -> None:
    table, _ = client
    batch = table.batch()
    for p in _prepared(table, _group(0, before)):
        add_prepared(batch, p)
    assert group_fits(batch, _prepared(table, _group(500, 2))) is fits


def test_a_group_with_another_partition_or_a_known_row_key_does_not_fit(
    client: tuple[TableClient, MockTransport],
) -> None:
    table, _ = client
    batch = table.batch()
    add_prepared(batch, _prepared(table, [_op("a")])[0])
    assert group_fits(batch, _prepared(table, [_op("b")])) is True
    assert group_fits(batch, _prepared(table, [_op("b"), _op("c", pk="q")])) is False
    assert group_fits(batch, _prepared(table, [_op("b"), _op("a")])) is False
    assert group_fits(batch, _prepared(table, [_op("b"), _op("b")])) is False


def test_an_empty_batch_takes_any_partition(client: tuple[TableClient, MockTransport]) -> None:
    table, _ = client
    assert group_fits(table.batch(), _prepared(table, [_op("a", pk="q"), _op("b", pk="q")]))


# -- packing ----------------------------------------------------------------------------------


def test_groups_are_packed_in_order_never_split(client: tuple[TableClient, MockTransport]) -> None:
    table, transport = client
    groups = [_group(0, 40), _group(100, 40), _group(200, 40), [], _group(300, 20)]
    packed = pack_groups(table.batch, groups)
    assert [(len(tx), n) for tx, n in packed] == [(80, 2), (60, 2)]
    keys = [op.row_key for tx, _ in packed for op in tx.operations]
    assert keys == [op.row_key for g in groups for op in g]
    assert transport.requests == []


def test_a_group_of_another_partition_starts_a_transaction(
    client: tuple[TableClient, MockTransport],
) -> None:
    table, _ = client
    packed = pack_groups(table.batch, [_group(0, 2), _group(10, 2, pk="q"), _group(20, 1, pk="q")])
    assert [(tx.operations[0].partition_key, len(tx), n) for tx, n in packed] == [
        ("p", 2, 1),
        ("q", 3, 2),
    ]


def test_packing_cuts_on_the_exact_body_size(client: tuple[TableClient, MockTransport]) -> None:
    table, _ = client
    groups = [[_op(f"r{i}", text="z" * 500), _op(f"s{i}", text="z" * 500)] for i in range(4)]
    two = _size_with(table, [op for g in groups[:2] for op in g])
    packed = pack_groups(_limited(table, two), groups)
    assert [(len(tx), n) for tx, n in packed] == [(4, 2), (4, 2)]
    assert [tx.size for tx, _ in packed] == [two, two]
    packed = pack_groups(_limited(table, two - 1), groups)
    assert [(len(tx), n) for tx, n in packed] == [(2, 1)] * 4
    assert pack_groups(table.batch, []) == []


class _Indexed(Entity):
    """An entity with two index rows (by colour, and a copy of it by size)."""

    color: Prop[str] = prop(default="")
    size: Prop[int] = prop(default=0)
    note: Prop[str] = prop(default="")

    class Meta:
        indexes = (
            Index("by_color", "color"),
            Index("by_size", "size", holds=Holds.ENTITY),
        )


async def test_a_writer_refuses_an_entity_whose_index_rows_cannot_share_its_transaction(
    client: tuple[TableClient, MockTransport],
) -> None:
    table, transport = client
    big = _Indexed("p", "r1", color="red", size=3, note="n" * 20_000)
    alone = _size_with(table, [BatchOperation("create", {"PartitionKey": "p", "RowKey": "x"})])
    submitted: list[TableBatch] = []

    async def submit(batch: TableBatch) -> list[azt.WriteResult]:
        submitted.append(batch)
        return [
            azt.WriteResult(etag='W/"1"', request_id=None, status=204) for _ in batch.operations
        ]

    # room for the entity and a key-only index row, not for the copy as well
    async with BatchWriter(_limited(table, alone + 30_000), submit) as writer:
        with pytest.raises(azt.BatchValidationError, match=r"and 2 index rows\) cannot") as caught:
            await writer.insert(cast(Any, big))
        assert caught.value.index is None
        assert str(caught.value).startswith("(")
        await writer.insert(cast(Any, _Indexed("p", "r2", color="red", size=3)))
        assert submitted == []
    assert len(submitted) == 1  # the small one, on exit: the refused one was never buffered
    assert submitted[0].operations[0].row_key == "r2"
    assert transport.requests == []
