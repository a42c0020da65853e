"""Bulk loads at the account's scalability targets.

:func:`load` streams a plain or async iterable of entities (written as ``kind``) or
:class:`azt.BatchOperation` objects (each as itself), possibly routed to several tables
(:class:`TableWrite`), into entity group transactions grouped by table and partition,
and sends partitions in parallel. Flow control adapts to the service: the pace per
partition and per account (defaults: Azure's published targets, 2,000 and 20,000
entities per second) and the number of transactions in flight grow additively while
the service keeps up and are cut multiplicatively on ``503 ServerBusy``, ``429``,
``OperationTimedOut`` and rising latency; a throttled transaction waits, on its own
partition, until the cut pace has room for it, while the others go on. Entity objects
whose class declares secondary indexes go with their index rows, one transaction each.
:func:`update_where` and :func:`delete_where` change or delete every entity a query
selects on the same engine, each write conditional on the ETag just read.

Memory stays bounded: the input is read at most ``BulkOptions.window`` operations ahead
of what is finished. Every operation ends applied or reported (:class:`BulkFailure`,
with its position in the input and the service's error); a transaction whose answer
was lost is resolved by reading its entities back before anything is resent. A
checkpoint (:class:`FileCheckpoint`) records the input positions the service
acknowledged, so an interrupted load, run again with the same input, skips them.

Example::

    from azt.bulk import BulkOptions, FileCheckpoint, load

    result = await load(
        table,
        rows,                                  # any iterable or async iterable
        kind="upsert-replace",
        options=BulkOptions(partition_rate=2000, account_rate=20000),
        checkpoint=FileCheckpoint("load.ckpt"),
        progress=lambda p: print(p.written, f"{p.rate:.0f}/s", p.concurrency),
    )
    result.raise_for_failures()
"""

from azt._core.bulk.checkpoint import CheckpointStore, FileCheckpoint
from azt._core.bulk.control import Aimd
from azt._core.bulk.loader import load
from azt._core.bulk.outcomes import (
    BulkError,
    BulkFailure,
    BulkOptions,
    BulkProgress,
    BulkResult,
    TableWrite,
    WriteKind,
)
from azt._orm.bulk_query import delete_where, update_where

__all__ = [
    "Aimd",
    "BulkError",
    "BulkFailure",
    "BulkOptions",
    "BulkProgress",
    "BulkResult",
    "CheckpointStore",
    "FileCheckpoint",
    "TableWrite",
    "WriteKind",
    "delete_where",
    "load",
    "update_where",
]
