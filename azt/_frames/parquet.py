"""Parquet files of a table, streamed both ways with the type map of
:mod:`azt._frames.types`.

:func:`export_parquet` writes the record batches of a parallel scan (:func:`arrow_batches`,
one schema: the first page's properties, later newcomers in ``@extra``) as row groups of at
most ``row_group_rows`` rows, each encoded on a worker thread while the scan reads on:
memory holds two row groups (one being written) and the scan's pages in flight, whatever
the table's size. :func:`parquet_entities` reads a file back batch by batch
(``batch_rows`` at a time) as entities for the bulk loader; :func:`import_parquet` writes
them to a table.

Example::

    rows = await export_parquet(table, "movies.parquet")
    result = await import_parquet(table, "movies.parquet", kind="upsert-replace")
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from azt._core.bulk.checkpoint import CheckpointStore
from azt._core.bulk.loader import ProgressCallback, ResultCallback, load
from azt._core.bulk.outcomes import BulkOptions, BulkResult, WriteKind
from azt._core.table_client import TableClient
from azt._edm.entity import TableEntity
from azt._edm.types import EdmType
from azt._errors import ValidationError
from azt._frames.decode import FrameDecoder
from azt._frames.encode import iter_entities
from azt._frames.io import arrow_batches

__all__ = ["export_parquet", "import_parquet", "parquet_entities", "parquet_rows"]

#: rows per row group of an export (and the most rows held before they are written)
ROW_GROUP_ROWS = 65_536
#: rows read from a file at a time on import
BATCH_ROWS = 1_000


async def export_parquet(
    table: TableClient,
    where: str | BinaryIO,
    *,
    filter: str | None = None,
    parameters: dict[str, Any] | None = None,
    entity: type | None = None,
    properties: Mapping[str, EdmType] | None = None,
    concurrency: int | Literal["auto"] = 4,
    ordered: bool = True,
    row_group_rows: int = ROW_GROUP_ROWS,
    compression: str = "zstd",
    on_batch: Callable[[pa.RecordBatch], object] | None = None,
) -> int:
    """Write the entities of ``table`` (matching ``filter``) to the Parquet file ``where``
    (a path or a binary file object); returns the number of rows. ``on_batch`` is called
    with each page's batch as it is written (progress).

    Example::

        n = await export_parquet(table, "out.parquet", concurrency="auto")
    """
    if not isinstance(row_group_rows, int) or row_group_rows < 1:
        raise ValidationError(f"row_group_rows must be an int >= 1, got {row_group_rows!r}")
    dec = FrameDecoder(properties, fixed=properties is not None)
    writer: pq.ParquetWriter | None = None
    held: list[pa.RecordBatch] = []
    held_rows = 0
    total = 0
    # Row groups are written on a thread of their own (Parquet's encoding and compression
    # release the GIL, so the scan keeps fetching and decoding pages meanwhile), one at a
    # time and in order (a ParquetWriter is not thread-safe); a group waits for the one
    # before it, so memory holds at most the group being written and the next one.
    pool = ThreadPoolExecutor(1, thread_name_prefix="azt-parquet")
    writing: asyncio.Future[None] | None = None

    async def flush() -> None:
        nonlocal held_rows, writing
        if writing is not None:
            await writing
            writing = None
        if writer is not None and held:
            group = pa.Table.from_batches(held)
            writing = asyncio.wrap_future(
                pool.submit(writer.write_table, group, row_group_size=row_group_rows)
            )
        held.clear()
        held_rows = 0

    try:
        async for batch in arrow_batches(
            table,
            filter=filter,
            parameters=parameters,
            entity=entity,
            concurrency=concurrency,
            ordered=ordered,
            decoder=dec if entity is None else None,
        ):
            if writer is None:
                writer = pq.ParquetWriter(where, batch.schema, compression=compression)
            held.append(batch)
            held_rows += batch.num_rows
            total += batch.num_rows
            if held_rows >= row_group_rows:
                await flush()
            if on_batch is not None:
                on_batch(batch)
        if writer is None:  # no rows: a file with the columns known (the system ones)
            writer = pq.ParquetWriter(where, dec.schema, compression=compression)
        await flush()
        if writing is not None:
            await writing  # the last group
    finally:
        # on failure or cancellation, a group being written is finished before the file
        # is closed (at most one group's encoding: the loop waits that long)
        pool.shutdown(wait=True)
        if writing is not None and writing.done() and not writing.cancelled():
            writing.exception()  # retrieved: the scan's own error is the one raised
        if writer is not None:
            writer.close()
    return total


def parquet_entities(
    source: str | BinaryIO,
    *,
    batch_rows: int = BATCH_ROWS,
    types: Mapping[str, EdmType] | None = None,
    on_batch: Callable[[int], object] | None = None,
) -> Iterator[TableEntity]:
    """The entities of a Parquet file (a path or a seekable binary file), read
    ``batch_rows`` at a time, typed by their columns' Arrow types (``types`` overrides).
    ``on_batch`` gets the number of rows of each batch read.

    Example::

        for entity in parquet_entities("movies.parquet"):
            ...
    """
    try:
        file = pq.ParquetFile(source)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ValidationError(f"not a Parquet file: {exc}") from None
    for batch in file.iter_batches(batch_size=batch_rows):
        if on_batch is not None:
            on_batch(batch.num_rows)
        yield from iter_entities(batch, types=types)


def parquet_rows(source: str | BinaryIO) -> int:
    """The number of rows of a Parquet file (from its footer).

    Example::

        total = parquet_rows("movies.parquet")
    """
    return int(pq.ParquetFile(source).metadata.num_rows)


async def import_parquet(
    table: TableClient,
    source: str | BinaryIO,
    *,
    kind: WriteKind = "upsert-replace",
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
    progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
) -> BulkResult:
    """Write the rows of a Parquet file to ``table`` through the bulk loader, streaming
    (the loader reads at most its window ahead). Failures are in the result.

    Example::

        result = await import_parquet(table, "movies.parquet", kind="insert")
    """
    return await load(
        table,
        parquet_entities(source),
        kind=kind,
        options=options,
        checkpoint=checkpoint,
        progress=progress,
        on_result=on_result,
    )
