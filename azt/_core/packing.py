"""Packing operations into as few entity group transactions as their exact encoded sizes
allow, in groups that must stay together: an entity and its secondary index rows
(:func:`pack_groups`, :func:`group_fits`, :func:`check_group_alone`).

Example::

    batches = pack_groups(table.batch, [[main, *index_rows] for main, index_rows in writes])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from azt._core.batch import (
    BatchOperation,
    Prepared,
    TableBatch,
    add_prepared,
    has_room,
    prepare_operation,
)
from azt._core.wire.batch import MAX_BATCH_OPERATIONS
from azt._errors import BatchValidationError

__all__ = ["check_group_alone", "group_fits", "pack_groups"]


def pack_groups(
    new_batch: Callable[[], TableBatch], groups: Iterable[Sequence[BatchOperation]]
) -> list[tuple[TableBatch, int]]:
    """Groups of operations that must stay together (an entity and its index rows), in
    order, in as few transactions as their exact encoded sizes allow: a group never spans
    two transactions. Returns each transaction and how many groups it holds. A group that
    cannot fit one transaction on its own (over 100 operations or 4 MiB, two
    PartitionKeys, a repeated RowKey) raises :class:`azt.BatchValidationError` before
    anything is sent."""
    out: list[tuple[TableBatch, int]] = []
    current = new_batch()
    count = 0
    for number, group in enumerate(groups):
        prepared = [prepare_operation(current, op) for op in group]
        if not prepared:
            continue
        check_group_alone(new_batch, prepared, number)
        if len(current) and not group_fits(current, prepared):
            out.append((current, count))
            current, count = new_batch(), 0
        for p in prepared:
            add_prepared(current, p)
        count += 1
    if len(current):
        out.append((current, count))
    return out


def check_group_alone(
    new_batch: Callable[[], TableBatch], prepared: Sequence[Prepared], number: int | None
) -> None:
    """:class:`azt.BatchValidationError` unless the group ``prepared`` (an operation and
    its index rows) fits one transaction on its own."""
    alone = new_batch()
    for p in prepared:
        if len(alone) and not has_room(alone, p):
            where = f"group {number} " if number is not None else ""
            raise BatchValidationError(
                f"{where}({prepared[0].operation!r} and {len(prepared) - 1} index rows) "
                "cannot fit one transaction (100 operations, 4 MiB (2 MB on Cosmos DB), one "
                "PartitionKey, each RowKey once)",
                index=number,
            )
        add_prepared(alone, p)


def group_fits(batch: TableBatch, prepared: Sequence[Prepared]) -> bool:
    """Whether every operation of a group can join ``batch`` (exact sizes, one by one)."""
    cs = batch._changeset
    assert cs is not None
    pk = batch._partition_key
    size = cs.size
    n = len(cs)
    seen = set(batch._row_keys)
    for p in prepared:
        op = p.operation
        if (pk is not None and op.partition_key != pk) or op.row_key in seen:
            return False
        cost = cs.cost(p.request) + (len(str(n + 1)) - len(str(len(cs) + 1)))
        if n + 1 > MAX_BATCH_OPERATIONS or size + cost > cs.max_bytes:
            return False
        size += cost
        n += 1
        seen.add(op.row_key)
    return True
