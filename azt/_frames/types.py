"""The type map between the eight EDM types and Arrow, both ways, and the frame's shape.

=================  ===========================================  ==============================
EDM type           Arrow type (columns azt writes)              Arrow types read back as it
=================  ===========================================  ==============================
``Edm.String``     ``string``                                   ``string``, ``large_string``,
                                                                ``string_view``
``Edm.Int32``      ``int32``                                    ``int8``/``int16``/``int32``,
                                                                ``uint8``/``uint16``
``Edm.Int64``      ``int64``                                    ``int64``, ``uint32``
``Edm.Double``     ``float64`` (NaN, +/-inf and -0.0 kept)      ``float16``/``32``/``64``
``Edm.Boolean``    ``bool``                                     ``bool``
``Edm.DateTime``   ``timestamp('ns', 'UTC')``                   any ``timestamp`` with a
                                                                time zone
``Edm.Guid``       ``arrow.uuid`` (``fixed_size_binary(16)``)   ``arrow.uuid``
``Edm.Binary``     ``binary``                                   ``binary``, ``large_binary``,
                                                                ``binary_view``,
                                                                ``fixed_size_binary``
=================  ===========================================  ==============================

The EDM type of a column read back is chosen by its Arrow type alone: ``int64`` is
``Edm.Int64`` even when every value would fit an Int32, ``int32`` is ``Edm.Int32``. A
``timestamp`` without a time zone is refused (it does not say which clock it is on), and so
is a ``uint64`` column or a timestamp finer than the service's 100 ns tick: nothing is cast
with a possible loss.

The frame of a table: ``PartitionKey``, ``RowKey``, ``Timestamp`` and ``ETag`` first, then
one column per property (absent or null: null), then :data:`EXTRA`, a string column holding,
for each row, the properties that do not fit their column as a typed JSON object (the
Table service's own JSON: ``{"N@odata.type":"Edm.Int64","N":"5"}``), else null. A value goes
there when its property's column has another type (a property whose type differs between
rows: the column takes the type of its first value), when it is a DateTime outside
``timestamp('ns')``'s range (before 1677-09-21 or after 2262-04-11; the service stores
1601-9999) or, in a stream whose schema is fixed by its first page, when its property first
appears later. Nothing is dropped: :data:`EXTRA` goes back into the entities on the way back.

Example::

    >>> import pyarrow as pa
    >>> arrow_type(EdmType.INT64), edm_type_of(pa.int32())
    (DataType(int64), <EdmType.INT32: 'Edm.Int32'>)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

import pyarrow as pa

from azt._edm.types import EdmType
from azt._errors import ValidationError

__all__ = [
    "ETAG",
    "EXTRA",
    "SYSTEM_COLUMNS",
    "TIMESTAMP",
    "arrow_type",
    "edm_type_of",
    "edm_types",
    "frame_schema",
]

#: the column of the properties that fit no column of their own (typed JSON, or null)
EXTRA: Final = "@extra"
#: the service's Timestamp and the entity's ETag (read only: ignored on the way back)
TIMESTAMP: Final = "Timestamp"
ETAG: Final = "ETag"
SYSTEM_COLUMNS: Final = ("PartitionKey", "RowKey", TIMESTAMP, ETAG)

#: Arrow's canonical UUID extension type (``fixed_size_binary(16)`` storage)
GUID_TYPE: Final = pa.uuid()
DATETIME_TYPE: Final = pa.timestamp("ns", tz="UTC")

_ARROW: Final[dict[EdmType, pa.DataType]] = {
    EdmType.STRING: pa.string(),
    EdmType.INT32: pa.int32(),
    EdmType.INT64: pa.int64(),
    EdmType.DOUBLE: pa.float64(),
    EdmType.BOOLEAN: pa.bool_(),
    EdmType.DATETIME: DATETIME_TYPE,
    EdmType.GUID: GUID_TYPE,
    EdmType.BINARY: pa.binary(),
}

#: the field metadata key naming a column's EDM type
EDM_KEY: Final = b"azt.edm"


def arrow_type(edm: EdmType) -> pa.DataType:
    """The Arrow type of an EDM type's column.

    Example::

        >>> arrow_type(EdmType.DATETIME)
        TimestampType(timestamp[ns, tz=UTC])
    """
    return _ARROW[EdmType(edm)]


def edm_type_of(t: pa.DataType, name: str | None = None) -> EdmType:
    """The EDM type a column of Arrow type ``t`` is written as (see the module table); a
    type with no lossless EDM type raises :class:`azt.ValidationError` naming ``name``.

    Example::

        >>> edm_type_of(pa.large_string()), edm_type_of(pa.timestamp("us", "UTC"))
        (<EdmType.STRING: 'Edm.String'>, <EdmType.DATETIME: 'Edm.DateTime'>)
    """
    what = f"column {name!r}" if name is not None else "a column"
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return EdmType.GUID
        raise ValidationError(f"{what}: no EDM type for the Arrow extension type {t}")
    if pa.types.is_dictionary(t):
        return edm_type_of(t.value_type, name)
    if pa.types.is_boolean(t):
        return EdmType.BOOLEAN
    if t in (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16()):
        return EdmType.INT32
    if t in (pa.int64(), pa.uint32()):
        return EdmType.INT64
    if pa.types.is_floating(t):
        return EdmType.DOUBLE
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return EdmType.STRING
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return EdmType.BINARY
    if pa.types.is_timestamp(t):
        if t.tz is None:
            raise ValidationError(
                f"{what}: a timestamp without a time zone does not say which clock it is on; "
                "give it one (pandas: .dt.tz_localize('UTC'); Arrow: timestamp(unit, 'UTC'))"
            )
        return EdmType.DATETIME
    if pa.types.is_null(t):
        return EdmType.STRING  # every value is null: nothing is written
    raise ValidationError(
        f"{what}: no EDM type holds Arrow {t} without loss (the eight types: string, int32, "
        "int64, float64, bool, timestamp with a time zone, arrow.uuid, binary)"
    )


def edm_types(schema: pa.Schema) -> dict[str, EdmType]:
    """The EDM type of each property column of ``schema`` (the system columns and
    :data:`EXTRA` left out): what a frame of this schema is written as.

    Example::

        >>> edm_types(pa.schema([("PartitionKey", pa.string()), ("N", pa.int64())]))
        {'N': <EdmType.INT64: 'Edm.Int64'>}
    """
    return {
        f.name: edm_type_of(f.type, f.name)
        for f in schema
        if f.name not in SYSTEM_COLUMNS and f.name != EXTRA
    }


def frame_schema(properties: Mapping[str, EdmType] | Iterable[tuple[str, EdmType]]) -> pa.Schema:
    """The schema of a frame with these properties (in order): the system columns, one
    column per property (its EDM type in the field metadata too), then :data:`EXTRA`.

    Example::

        >>> frame_schema({"N": EdmType.INT64}).names
        ['PartitionKey', 'RowKey', 'Timestamp', 'ETag', 'N', '@extra']
    """
    items = properties.items() if isinstance(properties, Mapping) else properties
    fields = [
        pa.field("PartitionKey", pa.string()),
        pa.field("RowKey", pa.string()),
        pa.field(TIMESTAMP, DATETIME_TYPE),
        pa.field(ETAG, pa.string()),
    ]
    for name, edm in items:
        edm = EdmType(edm)
        fields.append(pa.field(name, _ARROW[edm], metadata={EDM_KEY: edm.value.encode()}))
    fields.append(pa.field(EXTRA, pa.string()))
    return pa.schema(fields)
