"""Dask: a table as a dask DataFrame partitioned by PartitionKey ranges, and a dask DataFrame
written to a table through the bulk loader, partition by partition, on any Dask scheduler
(a ``distributed`` cluster's worker processes included).

**Reading** (:func:`read_dask`). The planner, in the calling process, reads the first page
to fix the columns (or takes ``entity=`` / ``properties=``), then splits the key space into
``partitions`` ranges as a parallel scan does (:func:`azt._orm.scan_ranges.between` picks a
point between two keys, a ``$top=1`` probe finds the first PartitionKey at or after it; a
range splits only at a PartitionKey boundary). Each dask partition reads its range
``[lo, hi)`` with its own client and parallel scan, decodes the JSON pages straight to Arrow
with the fixed columns (newcomers in ``@extra``) and gives a pandas frame of Arrow-backed
dtypes (``pd.ArrowDtype``: Int64 stays int64 with nulls, Guid stays ``arrow.uuid``).

**Writing** (:func:`write_dask`). Each partition's frame goes through the bulk loader in the
task that holds it. Throttling and retries stay per task (each loader adapts to the
answers it gets). The account's rate is shared, not multiplied: every task is given
``account_rate / slots``, where ``slots`` is the number of tasks that can run at once (the
cluster's worker threads, read from the ``distributed`` client; without one, the local
scheduler's threads), so all the
workers together stay within the account's target without talking to each other. A static
share was chosen over a rate coordinated through the scheduler: it needs no round trip per
transaction, and a bulk load's own AIMD control already lowers a task's pace when the
service pushes back. The price: a slot with no task leaves its share unused.

Example::

    ddf = read_dask(conn, "movies", partitions=8)
    totals = write_dask(ddf, conn, "copy", account_rate=20_000)
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, cast

import attrs
import dask
import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
from dask.base import compute
from dask.delayed import delayed
from distributed import get_client

from azt._core.bulk.outcomes import BulkOptions, WriteKind
from azt._core.table_client import TableClient
from azt._edm.types import EdmType
from azt._errors import ValidationError
from azt._frames.decode import FrameDecoder
from azt._frames.io import arrow_batches, entity_properties, write_frame
from azt._frames.ranges import plan_ranges
from azt._frames.types import frame_schema

__all__ = ["DaskWrite", "cluster_slots", "read_dask", "write_dask"]


@attrs.frozen
class _Spec:
    """What a task needs to reach the table (sent to the workers: plain, picklable)."""

    connection_string: str
    table: str
    options: Mapping[str, Any]

    def client(self) -> TableClient:
        return TableClient.from_connection_string(
            self.connection_string, self.table, **dict(self.options)
        )


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """A frame of Arrow-backed pandas dtypes (every EDM type kept, nulls included).

    Example::

        >>> to_pandas(pa.table({"a": pa.array([1, None], pa.int64())})).dtypes["a"]
        int64[pyarrow]
    """
    frame: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype)
    return frame


async def _plan(
    spec: _Spec,
    partitions: int,
    filter: str | None,
    properties: Mapping[str, EdmType] | None,
) -> tuple[list[tuple[str, str | None]], dict[str, EdmType]]:
    async with spec.client() as table:
        if properties is None:
            dec = FrameDecoder()
            async for _ in arrow_batches(table, filter=filter, concurrency=1, decoder=dec):
                break  # the first page with rows fixes the columns
            properties = dec.properties
        ranges = await plan_ranges(table, partitions, filter=filter)
    return ranges, dict(properties)


def _read_range(
    rng: tuple[str, str | None],
    spec: _Spec,
    filter: str | None,
    properties: Mapping[str, EdmType],
    concurrency: int,
) -> pd.DataFrame:
    async def run() -> pa.Table:
        dec = FrameDecoder(properties, fixed=True)
        async with spec.client() as table:
            batches = [
                b
                async for b in arrow_batches(
                    table,
                    filter=filter,
                    start=rng[0] or None,
                    stop=rng[1],
                    concurrency=concurrency,
                    decoder=dec,
                )
            ]
        return pa.Table.from_batches(batches, schema=dec.schema)

    return to_pandas(asyncio.run(run()))


def cluster_slots() -> int:
    """How many tasks can run at once: the worker threads of the current ``distributed``
    client's cluster; without one, dask's local scheduler: 1 for the synchronous one, else
    its thread pool (``num_workers``, by default the number of CPUs).

    Example::

        slots = cluster_slots()   # 2 on LocalCluster(n_workers=2, threads_per_worker=1)
    """
    try:
        client = get_client()
    except ValueError:
        scheduler = dask.config.get("scheduler", None)
        if scheduler in ("sync", "synchronous", "single-threaded"):
            return 1
        workers = dask.config.get("num_workers", None)
        return max(1, int(workers or os.cpu_count() or 1))
    threads: dict[str, int] = cast(Any, client).nthreads()  # distributed leaves it untyped
    return max(1, sum(threads.values()))


def read_dask(
    connection_string: str,
    table: str,
    *,
    partitions: int | None = None,
    filter: str | None = None,
    entity: type | None = None,
    properties: Mapping[str, EdmType] | None = None,
    concurrency: int = 2,
    client_options: Mapping[str, Any] | None = None,
) -> dd.DataFrame:
    """The table (or the entities matching ``filter``) as a dask DataFrame of about
    ``partitions`` PartitionKey ranges (default: twice :func:`cluster_slots`), each read
    by its task with up to ``concurrency`` requests in flight. ``client_options`` go to
    each task's ``TableClient.from_connection_string`` (a retry policy, say). Call it
    outside an event loop (the planning reads the table).

    Example::

        ddf = read_dask(conn, "movies", partitions=8)
        ddf.groupby("PartitionKey").size().compute()
    """
    if entity is not None:
        if properties is not None:
            raise ValidationError("give entity= or properties=, not both")
        properties = entity_properties(entity)
    n = partitions if partitions is not None else 2 * cluster_slots()
    if not isinstance(n, int) or n < 1:
        raise ValidationError(f"partitions must be an int >= 1, got {partitions!r}")
    spec = _Spec(connection_string, table, dict(client_options or {}))
    ranges, props = asyncio.run(_plan(spec, n, filter, properties))
    meta = to_pandas(frame_schema(props).empty_table())
    ddf: dd.DataFrame = cast(Any, dd.from_map)(  # dask leaves from_map untyped
        _read_range,
        ranges,
        spec=spec,
        filter=filter,
        properties=props,
        concurrency=concurrency,
        meta=meta,
        enforce_metadata=False,
    )
    return ddf


@attrs.frozen
class DaskWrite:
    """What :func:`write_dask` did, summed over the partitions: entities ``written``,
    ``failed`` (with the first few failures' messages in ``failures``), requests
    ``throttled``, and the ``share`` of the account rate each task was given.

    Example::

        >>> DaskWrite(written=3, failed=0, throttled=0, failures=(), share=100.0).written
        3
    """

    written: int
    failed: int
    throttled: int
    failures: tuple[str, ...]
    share: float


def _write_part(
    frame: pd.DataFrame,
    spec: _Spec,
    kind: WriteKind,
    options: BulkOptions,
    types: Mapping[str, EdmType] | None,
) -> tuple[int, int, int, tuple[str, ...]]:
    async def run() -> tuple[int, int, int, tuple[str, ...]]:
        async with spec.client() as table:
            result = await write_frame(table, frame, kind=kind, types=types, options=options)
        shown = tuple(
            f"{f.partition_key}/{f.row_key}: {f.code or ''} {f.message}"
            for f in result.failures[:5]
        )
        return result.written, len(result.failures), result.throttled, shown

    return asyncio.run(run())


def write_dask(
    frame: dd.DataFrame,
    connection_string: str,
    table: str,
    *,
    kind: WriteKind = "upsert-replace",
    account_rate: float = 20_000.0,
    partition_rate: float = 2_000.0,
    slots: int | None = None,
    types: Mapping[str, EdmType] | None = None,
    client_options: Mapping[str, Any] | None = None,
) -> DaskWrite:
    """Write a dask DataFrame to ``table``: each partition through the bulk loader in its
    own task, paced at ``account_rate / slots`` (``slots``: default
    :func:`cluster_slots`) so that the tasks together keep to the account's rate.
    ``types`` overrides columns' EDM types (see :func:`azt.frames.entities`).

    Example::

        totals = write_dask(ddf, conn, "copy", kind="insert")
        assert totals.failed == 0
    """
    n = slots if slots is not None else cluster_slots()
    if not isinstance(n, int) or n < 1:
        raise ValidationError(f"slots must be an int >= 1, got {slots!r}")
    share = float(account_rate) / n
    options = BulkOptions(account_rate=share, partition_rate=min(partition_rate, share))
    spec = _Spec(connection_string, table, dict(client_options or {}))
    parts: list[Any] = cast(Any, frame).to_delayed()  # dask leaves it untyped
    tasks = [delayed(_write_part)(part, spec, kind, options, types) for part in parts]
    results: tuple[tuple[int, int, int, tuple[str, ...]], ...] = cast(Any, compute)(*tasks)
    failures: list[str] = []
    for r in results:
        failures.extend(r[3])
    return DaskWrite(
        written=sum(r[0] for r in results),
        failed=sum(r[1] for r in results),
        throttled=sum(r[2] for r in results),
        failures=tuple(failures[:20]),
        share=share,
    )
