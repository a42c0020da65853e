"""Blocking bulk loads (:mod:`azt.bulk` for ``azt.sync`` clients): the same flow control,
checkpoints, progress and results; options, checkpoints and results are the
:mod:`azt.bulk` classes.

Example::

    from azt.bulk import BulkOptions, FileCheckpoint
    from azt.sync.bulk import load

    result = load(
        table,
        rows,                                  # any iterable
        kind="upsert-replace",
        options=BulkOptions(partition_rate=2000),
        checkpoint=FileCheckpoint("load.ckpt"),
    )
    result.raise_for_failures()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from azt._core.bulk import loader as _loader
from azt._core.bulk.checkpoint import CheckpointStore
from azt._core.bulk.outcomes import BulkOptions, BulkResult, WriteKind
from azt._orm import bulk_query as _by_query
from azt.sync._generated import Query, TableClient, TableServiceClient

__all__ = ["delete_where", "load", "update_where"]


def load(
    target: TableClient | TableServiceClient,
    items: Iterable[Any],
    *,
    table: str | None = None,
    kind: WriteKind = "insert",
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
    progress: _loader.ProgressCallback | None = None,
    on_result: _loader.ResultCallback | None = None,
) -> BulkResult:
    """:func:`azt.bulk.load` for a blocking client: write ``items`` as entity group
    transactions, in parallel under adaptive flow control, and return the
    :class:`azt.bulk.BulkResult` (callbacks run in the calling thread).

    Example::

        result = load(table, ({"PartitionKey": f"p{i % 50}", "RowKey": str(i)}
                              for i in range(100_000)), kind="upsert-replace")
        print(result.written, result.throttled_share)
    """
    coro = _loader.load(
        target._inner,
        items,
        table=table,
        kind=kind,
        options=options,
        checkpoint=checkpoint,
        progress=progress,
        on_result=on_result,
    )
    return target._rt.run(coro)


def update_where(
    query: Query[Any] | TableClient,
    changes: Mapping[str, Any],
    *,
    filter: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    mode: Literal["merge", "replace"] = "merge",
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
    progress: _loader.ProgressCallback | None = None,
) -> BulkResult:
    """:func:`azt.bulk.update_where` for a blocking query (an ``azt.sync.Query``, or an
    ``azt.sync.TableClient`` with an OData ``filter``): set ``changes`` on every entity it
    selects, each write If-Match the ETag read.

    Example::

        result = update_where(Query(Movie, table).where(Movie.year < 1950), {"classic": True})
    """
    coro = _by_query.update_where(
        query._inner,
        changes,
        filter=filter,
        parameters=parameters,
        mode=mode,
        options=options,
        checkpoint=checkpoint,
        progress=progress,
    )
    return query._rt.run(coro)


def delete_where(
    query: Query[Any] | TableClient,
    *,
    filter: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
    progress: _loader.ProgressCallback | None = None,
) -> BulkResult:
    """:func:`azt.bulk.delete_where` for a blocking query (an ``azt.sync.Query``).

    Example::

        result = delete_where(Query(Movie, table).where(Movie.rating < 1.0))
    """
    coro = _by_query.delete_where(
        query._inner,
        filter=filter,
        parameters=parameters,
        options=options,
        checkpoint=checkpoint,
        progress=progress,
    )
    return query._rt.run(coro)
