"""Reading a table as Arrow record batches (a parallel scan whose pages are decoded straight
from their JSON rows) and writing frames to a table through the bulk loader.

Example::

    async for batch in arrow_batches(table, filter="Rating ge 4"):
        ...
    table_ = await read_arrow(table)
    result = await write_frame(table, table_, kind="upsert-replace")
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa

from azt._core.bulk.checkpoint import CheckpointStore
from azt._core.bulk.loader import ProgressCallback, ResultCallback, load
from azt._core.bulk.outcomes import BulkOptions, BulkResult, WriteKind
from azt._core.table_client import TableClient
from azt._edm.types import EdmType
from azt._errors import ValidationError
from azt._frames.decode import FrameDecoder
from azt._frames.encode import iter_entities
from azt._orm.columns import SYSTEM_NAMES, entity_info
from azt._orm.expr import Condition
from azt._orm.scan import parallel_scan

__all__ = ["arrow_batches", "entity_properties", "read_arrow", "write_frame"]


def _rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return rows


class _RawRows:
    """A table whose queries give the service's JSON rows (dicts) instead of entities: a
    parallel scan reads only their keys, so the scan runs on it unchanged."""

    def __init__(self, table: TableClient) -> None:
        self._table = table

    @property
    def wire_format(self) -> Any:
        return self._table.wire_format

    def query_entities(
        self,
        filter: str | None = None,
        *,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: Any = None,
    ) -> Any:
        return self._table.query_entities(
            filter,
            select=select,
            results_per_page=results_per_page,
            continuation=continuation,
            page_decoder=_rows,
        )


def entity_properties(entity: type) -> dict[str, EdmType]:
    """The stored properties an entity class declares (wire names and EDM types), the
    system ones left out: the columns of a frame of that class.

    Example::

        >>> from azt import Entity, Prop, prop
        >>> class Movie(Entity):
        ...     rating: Prop[float] = prop(default=0.0)
        >>> entity_properties(Movie)
        {'rating': <EdmType.DOUBLE: 'Edm.Double'>}
    """
    return {p.wire: p.edm for p in entity_info(entity).props if p.wire not in SYSTEM_NAMES}


def _decoder(entity: type | None, properties: Mapping[str, EdmType] | None) -> FrameDecoder:
    if entity is not None and properties is not None:
        raise ValidationError("give entity= or properties=, not both")
    if entity is not None:
        return FrameDecoder(entity_properties(entity), fixed=True, widen=True)
    return FrameDecoder(properties, fixed=properties is not None)


async def arrow_batches(
    table: TableClient,
    *,
    filter: str | Condition | None = None,
    parameters: dict[str, Any] | None = None,
    select: Sequence[str] | None = None,
    entity: type | None = None,
    properties: Mapping[str, EdmType] | None = None,
    start: str | None = None,
    stop: str | None = None,
    concurrency: int | Literal["auto"] = 4,
    ordered: bool = True,
    page_size: int | None = None,
    fixed_schema: bool = True,
    decoder: FrameDecoder | None = None,
) -> AsyncIterator[pa.RecordBatch]:
    """The entities of ``table`` (matching ``filter``, PartitionKeys in ``[start, stop)``)
    as record batches, one per page of a parallel scan (``concurrency``, ``ordered``,
    ``page_size`` as :func:`azt.scan.parallel_scan`), decoded from the pages' JSON rows.

    The columns (see :mod:`azt.frames`): ``entity`` (an entity class) fixes them to its
    declared properties, ``properties`` to the ones given; otherwise they are the ones of
    the first page with rows and, with ``fixed_schema`` (the default: every batch has one
    schema, as a file or a stream needs), properties first seen later go to ``@extra``;
    ``fixed_schema=False`` adds their columns as they come. ``filter`` may be an ORM
    condition (``Movie.rating > 4``).

    Example::

        async for batch in arrow_batches(table, filter="PartitionKey eq 'p'"):
            print(batch.num_rows, batch.schema.names)
    """
    if isinstance(filter, Condition):
        filter = filter.to_odata()
    dec = decoder if decoder is not None else _decoder(entity, properties)
    scan = parallel_scan(
        _RawRows(table),  # type: ignore[arg-type]
        filter=filter,
        parameters=parameters,
        select=select,
        start=start,
        stop=stop,
        concurrency=concurrency,
        ordered=ordered,
        page_size=page_size,
    )
    try:
        async for page in scan.by_page():
            if not page.items:
                continue
            batch = dec.decode(page.items)  # type: ignore[arg-type]
            if fixed_schema:
                dec.fixed = True
            yield batch
    finally:
        await scan.aclose()


async def read_arrow(
    table: TableClient,
    *,
    filter: str | Condition | None = None,
    parameters: dict[str, Any] | None = None,
    select: Sequence[str] | None = None,
    entity: type | None = None,
    properties: Mapping[str, EdmType] | None = None,
    concurrency: int | Literal["auto"] = 4,
) -> pa.Table:
    """The entities of ``table`` (matching ``filter``) as one Arrow table, in key order:
    one column per property of any row (see :func:`arrow_batches`; a property whose type
    differs between rows keeps its first type, the other values in ``@extra``).

    Example::

        frame = await read_arrow(table, filter="Rating ge 4")
        frame.to_pandas(types_mapper=pd.ArrowDtype)
    """
    dec = _decoder(entity, properties)
    batches = [
        b
        async for b in arrow_batches(
            table,
            filter=filter,
            parameters=parameters,
            select=select,
            concurrency=concurrency,
            ordered=True,
            fixed_schema=False,
            decoder=dec,
        )
    ]
    if not batches:
        return dec.schema.empty_table()
    tables = [pa.Table.from_batches([b]) for b in batches]
    merged = pa.concat_tables(tables, promote_options="default")
    return merged.select(dec.schema.names).cast(dec.schema)


async def write_frame(
    table: TableClient,
    frame: Any,
    *,
    kind: WriteKind = "upsert-replace",
    types: Mapping[str, EdmType] | None = None,
    options: BulkOptions | None = None,
    checkpoint: CheckpointStore | None = None,
    progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
) -> BulkResult:
    """Write a frame (an Arrow table, record batch or iterable of batches, a pandas or a
    polars DataFrame) to ``table`` through the bulk loader (:func:`azt.bulk.load`), each
    property with the EDM type of its column's Arrow type (``types`` overrides some).
    Failures are in the result, as with the loader.

    Example::

        result = await write_frame(table, df, kind="insert")
        result.raise_for_failures()
    """
    return await load(
        table,
        iter_entities(frame, types=types),
        kind=kind,
        options=options,
        checkpoint=checkpoint,
        progress=progress,
        on_result=on_result,
    )
