"""Blocking data frames (:mod:`azt.frames` for ``azt.sync`` clients): a table read as an
Arrow table, frames written through the bulk loader, Parquet files both ways; the same
type map and results (``pip install "azt-tables[arrow]"``).

Example::

    from azt.frames import to_pandas
    from azt.sync.frames import read_arrow, write_frame

    frame = to_pandas(read_arrow(table, filter="Rating ge 4"))
    result = write_frame(copy, frame, kind="insert")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, Literal

import pyarrow as pa

from azt._core.bulk.checkpoint import CheckpointStore
from azt._core.bulk.outcomes import BulkOptions, BulkResult, WriteKind
from azt._edm.types import EdmType
from azt._frames import io as _io
from azt._frames import parquet as _parquet
from azt._orm.expr import Condition
from azt.sync._generated import TableClient

__all__ = ["export_parquet", "import_parquet", "read_arrow", "write_frame"]


def read_arrow(
    table: TableClient,
    *,
    filter: str | Condition | None = None,
    parameters: dict[str, Any] | None = None,
    select: Sequence[str] | None = None,
    entity: type | None = None,
    properties: Mapping[str, EdmType] | None = None,
    concurrency: int | Literal["auto"] = 4,
) -> pa.Table:
    """:func:`azt.frames.read_arrow` for a blocking client.

    Example::

        frame = read_arrow(table, filter="PartitionKey eq 'a'")
    """
    coro = _io.read_arrow(
        table._inner,
        filter=filter,
        parameters=parameters,
        select=select,
        entity=entity,
        properties=properties,
        concurrency=concurrency,
    )
    result: pa.Table = table._rt.run(coro)
    return result


def write_frame(
    table: TableClient,
    frame: Any,
    *,
    kind: WriteKind = "upsert-replace",
    types: Mapping[str, EdmType] | None = None,
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
) -> BulkResult:
    """:func:`azt.frames.write_frame` for a blocking client.

    Example::

        result = write_frame(table, df, kind="insert")
    """
    coro = _io.write_frame(
        table._inner, frame, kind=kind, types=types, options=options, checkpoint=checkpoint
    )
    return table._rt.run(coro)


def export_parquet(
    table: TableClient,
    where: str | BinaryIO,
    *,
    filter: str | None = None,
    concurrency: int | Literal["auto"] = 4,
) -> int:
    """:func:`azt.frames.export_parquet` for a blocking client: the number of rows written.

    Example::

        rows = export_parquet(table, "movies.parquet")
    """
    return table._rt.run(
        _parquet.export_parquet(table._inner, where, filter=filter, concurrency=concurrency)
    )


def import_parquet(
    table: TableClient,
    source: str | BinaryIO,
    *,
    kind: WriteKind = "upsert-replace",
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
) -> BulkResult:
    """:func:`azt.frames.import_parquet` for a blocking client.

    Example::

        result = import_parquet(table, "movies.parquet", kind="insert")
    """
    return table._rt.run(
        _parquet.import_parquet(
            table._inner, source, kind=kind, options=options, checkpoint=checkpoint
        )
    )
