"""Resolving lost answers of a bulk load by reading back: after a transaction's answer
is lost (a dropped connection, ``500 OperationTimedOut``), or when a resumed load meets
the consequences of the run before it, the entities of the transaction are read and each
operation is checked for whether the stored state already is what it asked for: an
insert or replace finds exactly the sent properties, a merge finds the sent properties
with the sent values, a delete finds nothing. Those operations are complete (resending
them could fail, or apply twice observably); the others are resent.

Example::

    >>> reflects(BatchOperation("delete", {"PartitionKey": "p", "RowKey": "r"}), None)
    True
    >>> op = BatchOperation("create", {"PartitionKey": "p", "RowKey": "r", "n": 1})
    >>> reflects(op, {"PartitionKey": "p", "RowKey": "r", "n": 2})
    False
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from azt._core.batch import BatchOperation
from azt._core.results import UpdateMode
from azt._core.table_client import TableClient, _entity_matches
from azt._edm.entity import TableEntity
from azt._errors import EntityNotFoundError

__all__ = ["read_back", "reflects"]

_READS_AT_ONCE = 8


def reflects(op: BatchOperation, stored: Mapping[str, Any] | None) -> bool:
    """Whether the stored entity (``None``: absent) already is what ``op`` asked for."""
    if op.kind == "delete":
        return stored is None
    if stored is None:
        return False
    exact = op.kind == "create" or op.mode is UpdateMode.REPLACE
    return _entity_matches(op.entity, stored, exact=exact)


async def read_back(
    table: TableClient, operations: Sequence[BatchOperation]
) -> list[TableEntity | None]:
    """The stored entity (typed, with its ETag) of each operation, ``None`` when absent;
    at most a few reads at once. Errors other than "not found" propagate (the caller
    retries later)."""
    gate = asyncio.Semaphore(_READS_AT_ONCE)
    core = table._core

    async def one(op: BatchOperation) -> TableEntity | None:
        async with gate:
            try:
                return await table._get(op.partition_key, op.row_key, None, core.typed_read)
            except EntityNotFoundError:
                return None

    return list(await asyncio.gather(*(one(op) for op in operations)))
