"""Packing operations into as few entity group transactions as their exact encoded sizes
allow, in groups that must stay together: an entity and its secondary index rows
(:func:`pack_groups`, :func:`group_fits`, :func:`check_group_alone`); and such a group
prepared from one write of an entity (:func:`entity_write`, :func:`prepare_group`: the
entity checked and encoded in one pass, by its class's generated code for an entity
object), as the batch writer and the bulk loader take them.

Example::

    batches = pack_groups(table.batch, [[main, *index_rows] for main, index_rows in writes])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias

from azt._core.base import EntityObject, encoded_source, entity_source
from azt._core.batch import (
    BatchOperation,
    Prepared,
    TableBatch,
    _create,
    _update,
    _upsert,
    add_prepared,
    encode_operation,
    has_room,
    operation_companions,
    prepare_operation,
)
from azt._core.results import UpdateMode
from azt._core.wire.batch import MAX_BATCH_OPERATIONS
from azt._edm.entity import refuse_property_loss
from azt._edm.validation import STORAGE_LIMITS, ServiceLimits
from azt._errors import BatchValidationError

__all__ = ["EntityWrite", "check_group_alone", "entity_write", "group_fits", "pack_groups"]


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
    rows = batch._row_keys
    seen: set[str] = set()  # the group's own (not a copy of the batch's: one per entity)
    for p in prepared:
        op = p.operation
        rk = op.row_key
        if (pk is not None and op.partition_key != pk) or rk in rows or rk in seen:
            return False
        cost = cs.cost(p.request) + (len(str(n + 1)) - len(str(len(cs) + 1)))
        if n + 1 > MAX_BATCH_OPERATIONS or size + cost > cs.max_bytes:
            return False
        size += cost
        n += 1
        seen.add(rk)
    return True


# --- one write of an entity, prepared -----------------------------------------------------

#: What :func:`entity_write` gives: the checked operation, its entity's JSON body when
#: checked and encoded in one pass (else ``None``: checked the usual way, to be encoded
#: from the entity), the entity object the outcome is written back to, and whether the
#: write may carry companion operations (index rows).
EntityWrite: TypeAlias = "tuple[BatchOperation, bytes | None, EntityObject | None, bool]"


def entity_write(
    kind: Literal["create", "update", "upsert"],
    entity: Any,
    mode: UpdateMode = UpdateMode.MERGE,
    *,
    etag: str | None = None,
    allow_property_loss: bool = False,
    limits: ServiceLimits = STORAGE_LIMITS,
    route: bool,
) -> EntityWrite:
    """A create, update or upsert of ``entity`` (a mapping or an entity object) checked
    against ``limits`` as :func:`~azt._core.batch.create_operation` and its siblings
    check it, with the same errors in the same order. With ``route`` (only for Azure Table
    storage's ``limits``) the entity, its object, ETag and JSON body come from
    :func:`~azt._core.base.encoded_source` in one pass: an entity class's generated
    ``__azt_encoded__``, a mapping's per-shape writer; where that is not sure the entity
    is checked as usual (which raises the precise error). ``etag`` left out on an update
    is the object's ETag, else ``"*"``; ``REPLACE`` of an entity not holding every stored
    property raises :class:`azt.PropertyLossError` unless ``allow_property_loss``.

    Example::

        >>> write = entity_write("create", {"PartitionKey": "p", "RowKey": "r"}, route=True)
        >>> op, body, obj, more = write
        >>> op, body, obj, more
        (create(PartitionKey='p', RowKey='r'), b'{"PartitionKey":"p","RowKey":"r"}', None, False)
    """
    if kind != "create" and UpdateMode(mode) is UpdateMode.REPLACE and not allow_property_loss:
        refuse_property_loss(entity, f"batch {kind}(mode=REPLACE)")
    if route:
        data, obj, own_etag, body, more = encoded_source(entity)
    else:
        data, obj, own_etag = entity_source(entity)
        body, more = None, obj is not None
    checked = body is not None
    if kind == "create":
        op = _create(data, obj, limits, checked)
    elif kind == "update":
        etag = etag if etag is not None else own_etag or "*"
        op = _update(data, mode, etag, obj, limits, checked)
    else:
        op = _upsert(data, mode, obj, limits, checked)
    return op, body, obj, more


def prepare_group(
    probe: TableBatch, write: EntityWrite, limits: ServiceLimits | None = None
) -> list[Prepared]:
    """The operation of ``write`` (:func:`entity_write`) and its companion operations (an
    indexed entity object's index rows, refused when they cannot be kept exact), each
    encoded once by the client ``probe`` is bound to: the operation from the body
    ``write`` holds when ``probe`` sends that JSON. ``limits``: the companions' (the
    probe's when left out). :class:`azt.BatchValidationError` when one cannot fit any
    transaction (whether the group fits one: :func:`check_group_alone`).

    Example::

        prepared = prepare_group(table.batch(), entity_write("create", movie, route=True))
    """
    op, body, obj, more = write
    limits = probe.limits if limits is None else limits
    extra = operation_companions(op, obj, limits) if more else []
    prepared = [encode_operation(probe, op, body if probe._plain else None)]
    if extra:
        prepared += [encode_operation(probe, c) for c in extra]
    return prepared
