"""Arrow record batches (and pandas or polars frames, through Arrow) back to entities, each
property with the EDM type its column's Arrow type says (:mod:`azt._frames.types`).

Values are converted column by column; each row becomes a :class:`azt.edm.TableEntity`
whose ``edm_types`` name every property's type, so an ``int64`` column is written as
``Edm.Int64`` even where a value would fit an Int32. A null is an absent property (not
written); NaN is a Double value. The :data:`EXTRA` column's typed JSON is read back into
the row's properties with its own types. ``Timestamp`` and ``ETag`` are the service's and
are not written. A value no EDM type holds (a timestamp finer than 100 ns, a naive
timestamp, a ``uint64`` column) raises :class:`azt.ValidationError` naming the column.

Example::

    >>> import pyarrow as pa
    >>> t = pa.table({"PartitionKey": ["p"], "RowKey": ["r"], "N": pa.array([5], pa.int64())})
    >>> [(dict(e), e.edm_types) for e in iter_entities(t)]
    [({'PartitionKey': 'p', 'RowKey': 'r', 'N': 5}, {'N': <EdmType.INT64: 'Edm.Int64'>})]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import msgspec
import pyarrow as pa

from azt._core.wire import json as wire_json
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import SharedEdmTypes, TableEntity
from azt._edm.types import EdmType
from azt._errors import ValidationError
from azt._frames.types import ETAG, EXTRA, TIMESTAMP, arrow_type, edm_type_of

__all__ = ["arrow_table_of", "entities_of_batch", "iter_entities"]

_EPOCH_TICKS: Final = 621_355_968_000_000_000
#: 100 ns ticks per unit of a timestamp column (ns: a division, checked exact)
_TICKS: Final = {"s": 10_000_000, "ms": 10_000, "us": 10}
_decode_json = msgspec.json.Decoder().decode
_SKIP: Final = frozenset({TIMESTAMP, ETAG, EXTRA})
_BARE: Final = {
    str: EdmType.STRING,
    bool: EdmType.BOOLEAN,
    int: EdmType.INT32,
    float: EdmType.DOUBLE,
}


def arrow_table_of(frame: Any) -> pa.Table | pa.RecordBatch:
    """An Arrow table of ``frame``: a ``pyarrow`` table or record batch as it is, a pandas
    DataFrame (``pa.Table.from_pandas``, without its index; pandas' own convention makes a
    NaN of a NumPy float column missing, an ``ArrowDtype`` column keeps NaN as a value) or a
    polars DataFrame (``to_arrow``). Anything else raises :class:`azt.ValidationError`.

    Example::

        >>> arrow_table_of(pa.table({"a": [1]})).num_rows
        1
    """
    if isinstance(frame, pa.Table | pa.RecordBatch):
        return frame
    module = type(frame).__module__.split(".", 1)[0]
    if module == "pandas":
        try:
            return pa.Table.from_pandas(frame, preserve_index=False)
        except (pa.ArrowException, ValueError, TypeError) as exc:
            # a column of mixed Python objects, say: pandas cannot say what type it holds
            raise ValidationError(f"the pandas frame has no Arrow form: {exc}") from None
    if module == "polars":
        table = frame.to_arrow()
        if not isinstance(table, pa.Table):  # pragma: no cover - polars' documented result
            raise ValidationError("polars gave no Arrow table")
        return table
    raise ValidationError(
        f"expected a pyarrow Table or RecordBatch, a pandas or a polars DataFrame, got "
        f"{type(frame).__name__}"
    )


def _column_values(name: str, edm: EdmType, col: pa.Array | pa.ChunkedArray) -> list[Any]:
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    if edm is EdmType.DATETIME:
        unit = t.unit
        raw: list[int | None] = col.cast(pa.int64()).to_pylist()
        if unit == "ns":
            out: list[Any] = []
            for v in raw:
                if v is None:
                    out.append(None)
                    continue
                ticks, rest = divmod(v, 100)
                if rest:
                    raise ValidationError(
                        f"column {name!r}: {v} ns since 1970 is finer than the service's "
                        "100 ns tick; round it first"
                    )
                out.append(EdmDateTime.from_ticks(ticks + _EPOCH_TICKS))
            return out
        per = _TICKS[unit]
        return [None if v is None else EdmDateTime.from_ticks(v * per + _EPOCH_TICKS) for v in raw]
    values: list[Any] = col.to_pylist()
    if edm is EdmType.DOUBLE and not pa.types.is_float64(t):
        return [None if v is None else float(v) for v in values]
    return values


def entities_of_batch(batch: pa.Table | pa.RecordBatch) -> list[TableEntity]:
    """The entities of one table or batch (see the module text).

    Example::

        >>> t = pa.table({"PartitionKey": ["p"], "RowKey": ["r"], "@extra": ['{"A":1}']})
        >>> entities_of_batch(t)[0]
        TableEntity({'PartitionKey': 'p', 'RowKey': 'r', 'A': 1})
    """
    names = batch.schema.names
    for key in ("PartitionKey", "RowKey"):
        if key not in names:
            raise ValidationError(f"the frame has no {key} column (columns: {names})")
    props: list[tuple[str, list[Any]]] = []
    types: dict[str, EdmType] = {}
    for field in batch.schema:
        name = field.name
        if name in _SKIP:
            continue
        edm = edm_type_of(field.type, name)
        if name in ("PartitionKey", "RowKey") and edm is not EdmType.STRING:
            raise ValidationError(f"column {name!r} must hold strings, not {field.type}")
        values = _column_values(name, edm, batch.column(name))
        props.append((name, values))
        if name not in ("PartitionKey", "RowKey"):
            types[name] = edm
    extra: list[Any] = batch.column(EXTRA).to_pylist() if EXTRA in names else []
    shared = SharedEdmTypes(types)
    out: list[TableEntity] = []
    n = batch.num_rows
    for i in range(n):
        e = TableEntity()
        for name, values in props:
            v = values[i]
            if v is not None:
                e[name] = v
        e._types = shared
        if extra and extra[i] is not None:
            _merge_extra(e, extra[i], i)
        out.append(e)
    return out


def _merge_extra(entity: TableEntity, text: Any, row: int) -> None:
    """Add the properties of a row's :data:`EXTRA` object (typed JSON) to ``entity``."""
    try:
        obj = _decode_json(text) if isinstance(text, str) else None
    except msgspec.DecodeError:
        obj = None
    if not isinstance(obj, dict):
        raise ValidationError(
            f"row {row}: the {EXTRA} column must hold a JSON object, got {text!r}"
        )
    decoded = wire_json.decode_entity(obj)
    types = dict(entity.edm_types)
    declared = decoded.edm_types
    for name, value in decoded.items():
        if name in entity:
            raise ValidationError(
                f"row {row}: property {name!r} is both in its column and in {EXTRA}"
            )
        entity[name] = value
        edm = declared.get(name)
        if edm is None:  # a bare JSON value: its type is the one JSON gives (the wire's rule)
            edm = _BARE.get(type(value))
            if edm is None:
                raise ValidationError(
                    f"row {row}: {EXTRA} holds {name}={value!r}, not an EDM value"
                )
        types[name] = edm
    entity._types = types


def iter_entities(
    frames: Any | Iterable[Any], *, types: Mapping[str, EdmType] | None = None
) -> Iterator[TableEntity]:
    """The entities of a frame (an Arrow table or batch, a pandas or polars DataFrame), or
    of an iterable of frames (record batches read from a file), batch by batch: memory
    holds one batch's entities at a time. ``types`` overrides the EDM type of columns
    (converting the values: polars has no UUID type, so a Guid column read back from
    polars is ``{"Id": EdmType.GUID}``).

    Example::

        >>> t = pa.table({"PartitionKey": ["p"], "RowKey": ["r"], "G": [b"\\x00" * 16]})
        >>> next(iter_entities(t, types={"G": EdmType.GUID}))["G"]
        UUID('00000000-0000-0000-0000-000000000000')
    """
    if isinstance(frames, pa.Table):
        sources: Iterable[Any] = frames.to_batches()
    elif isinstance(frames, pa.RecordBatch) or type(frames).__module__.split(".")[0] in (
        "pandas",
        "polars",
    ):
        sources = [frames]
    else:
        sources = frames
    for frame in sources:
        table = arrow_table_of(frame)
        if types:
            table = _retyped(table, types)
        yield from entities_of_batch(table)


def _retyped(table: pa.Table | pa.RecordBatch, types: Mapping[str, EdmType]) -> pa.Table:
    """``table`` with the columns named in ``types`` converted to their Arrow types."""
    from_types = table if isinstance(table, pa.Table) else pa.Table.from_batches([table])
    for name, edm in types.items():
        edm = EdmType(edm)
        if name not in from_types.schema.names:
            raise ValidationError(f"types names {name!r}, which is not a column")
        i = from_types.schema.get_field_index(name)
        col = from_types.column(i)
        if edm is EdmType.GUID:
            storage = (
                col.cast(pa.binary(16)) if not pa.types.is_fixed_size_binary(col.type) else col
            )
            chunks = [pa.ExtensionArray.from_storage(pa.uuid(), c) for c in storage.chunks]
            new: pa.ChunkedArray = pa.chunked_array(chunks, pa.uuid())
        else:
            new = col.cast(arrow_type(edm))
        from_types = from_types.set_column(i, name, new)
    return from_types
