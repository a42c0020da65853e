"""Resolving lost answers of a bulk load by reading back: after a transaction's answer
is lost (a dropped connection, ``500 OperationTimedOut``), or when a resumed load meets
the consequences of the run before it, the entities of the transaction are read and each
operation is checked for whether the stored state already is what it asked for: an
insert or replace finds exactly the sent properties, a merge finds the sent properties
with the sent values, a delete finds nothing. Those operations are complete (resending
them could fail, or apply twice observably); the others are resent.

After an operation failed a transaction on a conflict (``409 EntityAlreadyExists``,
``404 ResourceNotFound``, ``412``), the others that would fail the same way are found at
once from what is stored (:func:`predicted_failure`; the keys read with one query,
:func:`stored_keys`), so a load of entities that already exist costs two requests per
transaction, not one per entity.

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
from azt._errors import EntityNotFoundError, ServiceError, error_from_response

__all__ = ["predicted_failure", "read_back", "reflects", "stored_keys"]

_READS_AT_ONCE = 8

#: :func:`stored_keys` gives up (``None``) after this many rows beyond the ones asked for:
#: a transaction's keys spread over a dense range cost more to read than they save.
_SCAN_SLACK = 1000

_FOUND_BY_READING = (
    " (found by reading the transaction's keys after the service refused another of its "
    "operations; not sent)"
)


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


async def stored_keys(
    table: TableClient, partition_key: str, row_keys: Sequence[str]
) -> dict[str, str | None] | None:
    """Which of ``row_keys`` exist in the partition, with their ETags: one query of the
    RowKey range they span, keys only (a few pages for a range of 1,000s of rows).
    ``None`` when the range holds over ``_SCAN_SLACK`` rows more than asked for (the
    caller does without). Errors propagate.

    Example::

        found = await stored_keys(table, "p", ["r1", "r7"])   # {"r1": 'W/"..."'}
    """
    wanted = set(row_keys)
    found: dict[str, str | None] = {}
    scanned = 0
    pager = table.query_entities(
        "PartitionKey eq @pk and RowKey ge @lo and RowKey le @hi",
        parameters={"pk": partition_key, "lo": min(wanted), "hi": max(wanted)},
        select=["RowKey"],
        results_per_page=1000,
    )
    async for entity in pager:
        scanned += 1
        rk = entity["RowKey"]
        if rk in wanted:
            found[rk] = entity.metadata.etag
        if scanned > len(wanted) + _SCAN_SLACK:
            return None
    return found


def predicted_failure(op: BatchOperation, exists: bool, etag: str | None) -> ServiceError | None:
    """The error ``op`` would meet against what is stored (``exists``, with ``etag``),
    or ``None``: an insert of an entity that exists, an update or delete of one that does
    not (or whose ETag is not the ``If-Match``). Upserts meet none.

    Example::

        >>> op = BatchOperation("create", {"PartitionKey": "p", "RowKey": "r"})
        >>> predicted_failure(op, True, None).code
        'EntityAlreadyExists'
        >>> predicted_failure(op, False, None) is None
        True
    """
    if op.kind == "upsert":
        return None
    if op.kind == "create":
        if not exists:
            return None
        return error_from_response(
            409, "EntityAlreadyExists", "The specified entity already exists." + _FOUND_BY_READING
        )
    if not exists:
        return error_from_response(
            404,
            "ResourceNotFound",
            "The specified resource does not exist." + _FOUND_BY_READING,
            resource="entity",
        )
    if op.etag not in (None, "*") and etag is not None and etag != op.etag:
        return error_from_response(
            412,
            "UpdateConditionNotSatisfied",
            "The update condition specified in the request was not satisfied." + _FOUND_BY_READING,
        )
    return None
