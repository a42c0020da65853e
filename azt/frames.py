"""Tables as data frames: Arrow record batches decoded straight from the query pages,
pandas and polars through Arrow, Parquet files streamed both ways, every EDM type kept
(``pip install "azt-tables[arrow]"``; Dask: :mod:`azt.frames_dask`).

The type map (:mod:`azt._frames.types`): String ``string``, Int32 ``int32``, Int64
``int64``, Double ``float64`` (NaN, infinities and -0.0 kept), Boolean ``bool``, DateTime
``timestamp('ns', 'UTC')`` (100 ns ticks kept), Guid ``arrow.uuid``, Binary ``binary``;
``PartitionKey``, ``RowKey``, ``Timestamp`` and ``ETag`` first; a missing property is
null; a value that fits no column (another type than its column's, a DateTime outside
1677-2262) is kept in the ``@extra`` column as typed JSON. On the way back the EDM type is
the column's Arrow type's: ``int64`` is Int64, ``int32`` Int32.

Example::

    >>> import pyarrow as pa
    >>> from azt.edm import EdmType
    >>> t = pa.table({"PartitionKey": ["p"], "RowKey": ["r"], "N": pa.array([5], pa.int64())})
    >>> entities(t)[0].edm_types
    {'N': <EdmType.INT64: 'Edm.Int64'>}
"""

from __future__ import annotations

from typing import Any

from azt._edm.entity import TableEntity
from azt._frames.decode import FrameDecoder
from azt._frames.encode import arrow_table_of, iter_entities
from azt._frames.io import arrow_batches, entity_properties, read_arrow, write_frame
from azt._frames.parquet import export_parquet, import_parquet, parquet_entities, parquet_rows
from azt._frames.types import (
    ETAG,
    EXTRA,
    SYSTEM_COLUMNS,
    TIMESTAMP,
    arrow_type,
    edm_type_of,
    edm_types,
    frame_schema,
)

__all__ = [
    "ETAG",
    "EXTRA",
    "SYSTEM_COLUMNS",
    "TIMESTAMP",
    "FrameDecoder",
    "arrow_batches",
    "arrow_table_of",
    "arrow_type",
    "edm_type_of",
    "edm_types",
    "entities",
    "entity_properties",
    "export_parquet",
    "frame_schema",
    "import_parquet",
    "iter_entities",
    "parquet_entities",
    "parquet_rows",
    "read_arrow",
    "to_pandas",
    "to_polars",
    "write_frame",
]


def entities(frame: Any, *, types: dict[str, Any] | None = None) -> list[TableEntity]:
    """All the entities of a frame (Arrow, pandas or polars) in one list (see
    :func:`iter_entities` for a stream).

    Example::

        >>> import pyarrow as pa
        >>> entities(pa.table({"PartitionKey": ["p"], "RowKey": ["r"]}))
        [TableEntity({'PartitionKey': 'p', 'RowKey': 'r'})]
    """
    return list(iter_entities(frame, types=types))


def to_pandas(table: Any) -> Any:
    """A pandas DataFrame of Arrow-backed dtypes (``pd.ArrowDtype``): int64 with nulls,
    NaN apart from null, ``arrow.uuid`` and ``timestamp[ns, UTC]`` all kept, so the frame
    goes back to the same EDM types. Needs pandas.

    Example::

        >>> import pyarrow as pa
        >>> str(to_pandas(pa.table({"n": pa.array([1, None], pa.int64())})).dtypes["n"])
        'int64[pyarrow]'
    """
    import pandas as pd  # optional: azt-tables[pandas]

    return table.to_pandas(types_mapper=pd.ArrowDtype)


def to_polars(table: Any) -> Any:
    """A polars DataFrame of an Arrow table. Polars has no UUID type: a Guid column
    becomes ``Binary`` (16 bytes); give ``types={"Id": EdmType.GUID}`` on the way back.
    Needs polars.

    Example::

        >>> import pyarrow as pa
        >>> to_polars(pa.table({"n": pa.array([1], pa.int32())})).dtypes
        [Int32]
    """
    import polars as pl  # optional: azt-tables[polars]

    return pl.from_arrow(table)
