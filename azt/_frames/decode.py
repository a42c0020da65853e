"""The service's JSON rows to Arrow record batches, column by column, without building an
entity object: :class:`FrameDecoder`.

A page's rows almost always share their keys, so each run of rows with the same key
sequence is cut into columns at once (``operator.itemgetter`` and ``zip``, in C); a run's
column is checked as a whole (one annotation for all, or one JSON type when there is
none) and converted by Arrow's own kernels where the wire text allows it (Int64 digits and
DateTime texts are cast from strings; Guid and Binary texts decoded value by value). What
does not fit its column (see :mod:`azt._frames.types`) goes to the row's :data:`EXTRA`
object as the service sent it, so nothing is lost. A value the service could not have sent
(an Int64 that is not digits, a Guid that is not 8-4-4-4-12) raises
:class:`azt.WireDecodeError` naming the property, as the entity decoder does.

Example::

    >>> dec = FrameDecoder()
    >>> batch = dec.decode([{"PartitionKey": "p", "RowKey": "r", "N@odata.type": "Edm.Int64",
    ...                      "N": "5"}])
    >>> batch.schema.field("N").type, batch.column("N").to_pylist()
    (DataType(int64), [5])
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Mapping
from operator import itemgetter
from typing import Any, Final

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from azt._core.wire import WireDecodeError, decode_base64, decode_guid
from azt._edm.datetime import EdmDateTime
from azt._edm.types import EdmType
from azt._errors import ValidationError
from azt._frames.types import (
    DATETIME_TYPE,
    ETAG,
    GUID_TYPE,
    TIMESTAMP,
    arrow_type,
    frame_schema,
)

__all__ = ["FrameDecoder"]

_ANN: Final = "@odata.type"
_EDM: Final = {t.value: t for t in EdmType}
#: the EDM type of an unannotated JSON value (minimal metadata annotates the others)
_BARE: Final[dict[type, EdmType]] = {
    str: EdmType.STRING,
    bool: EdmType.BOOLEAN,
    int: EdmType.INT32,
    float: EdmType.DOUBLE,
}
_SPECIAL: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
#: the timestamp('ns') range, in ns since 1970 (int64)
_NS_MIN: Final = -(2**63)
_NS_MAX: Final = 2**63 - 1
_EPOCH_TICKS: Final = 621_355_968_000_000_000
_encode_json = msgspec.json.Encoder().encode
_SYSTEM: Final = frozenset({"PartitionKey", "RowKey", TIMESTAMP, "odata.etag"})


class FrameDecoder:
    """Decodes pages of JSON rows (``query_entities(page_decoder=...)``'s input) into
    record batches of one growing schema.

    ``properties`` fixes the first columns and their EDM types (an entity class's
    declared properties, or a schema from an earlier read); ``fixed=True`` adds no column
    after them (a stream whose schema is already written: new properties go to
    :data:`EXTRA`); ``widen=True`` lets an Int32 value fill an Int64 or Double column (an
    entity class's lossless widenings: the class writes it back as the declared type).
    Without ``fixed``, a property first seen in a later page gets a column from then on;
    :attr:`schema` is the schema so far (earlier batches lack its newer columns:
    ``pa.concat_tables(..., promote_options="default")`` fills them with nulls).

    Example::

        >>> dec = FrameDecoder({"Score": EdmType.DOUBLE}, fixed=True)
        >>> b = dec.decode([{"PartitionKey": "p", "RowKey": "r", "Score": "oops"}])
        >>> b.column("Score").to_pylist(), b.column("@extra").to_pylist()
        ([None], ['{"Score":"oops"}'])
    """

    def __init__(
        self,
        properties: Mapping[str, EdmType] | None = None,
        *,
        fixed: bool = False,
        widen: bool = False,
    ) -> None:
        self._types: dict[str, EdmType] = {k: EdmType(v) for k, v in (properties or {}).items()}
        self.fixed = fixed
        self._widen = widen
        self._schema: pa.Schema | None = None

    @property
    def properties(self) -> dict[str, EdmType]:
        """The property columns so far and their EDM types, in column order.

        Example::

            >>> FrameDecoder({"A": EdmType.STRING}).properties
            {'A': <EdmType.STRING: 'Edm.String'>}
        """
        return dict(self._types)

    @property
    def schema(self) -> pa.Schema:
        """The schema of the batches decoded from now on.

        Example::

            >>> FrameDecoder().schema.names
            ['PartitionKey', 'RowKey', 'Timestamp', 'ETag', '@extra']
        """
        if self._schema is None:
            self._schema = frame_schema(self._types)
        return self._schema

    def decode(self, rows: list[dict[str, Any]]) -> pa.RecordBatch:
        """One page of JSON rows as a record batch of :attr:`schema`.

        Example::

            >>> FrameDecoder().decode([]).num_rows
            0
        """
        page = _Page(self, len(rows))
        n = len(rows)
        shape = _one_shape(rows)
        if shape is not None:  # the usual page: every row has the same names
            page.run(rows, 0, n, shape[0], shape[1])
            return page.finish()
        i = 0
        while i < n:
            keys = tuple(rows[i])
            j = i + 1
            while j < n and tuple(rows[j]) == keys:
                j += 1
            page.run(rows, i, j, keys)
            i = j
        return page.finish()

    # --- the column types -------------------------------------------------------------

    def _column_for(self, name: str, edm: EdmType) -> EdmType | None:
        """The type of ``name``'s column if a value of type ``edm`` fits it (a new column
        when there may be one), else None."""
        have = self._types.get(name)
        if have is None:
            if self.fixed:
                return None
            self._types[name] = edm
            self._schema = None
            return edm
        if have is edm:
            return edm
        if self._widen and edm is EdmType.INT32 and have in (EdmType.INT64, EdmType.DOUBLE):
            return have
        return None


class _Page:
    """The columns of one page under construction: raw wire values aligned to the rows."""

    def __init__(self, decoder: FrameDecoder, n: int) -> None:
        self.dec = decoder
        self.n = n
        self.pk: list[Any] = []
        self.rk: list[Any] = []
        self.ts: list[Any] = []
        self.etag: list[Any] = []
        self.cells: dict[str, list[Any]] = {}
        self.extra: dict[int, dict[str, Any]] = {}

    def _system(self, out: list[Any], col: tuple[Any, ...] | None, m: int) -> None:
        out.extend(col if col is not None else (None,) * m)

    def run(
        self,
        rows: list[dict[str, Any]],
        i: int,
        j: int,
        keys: tuple[str, ...],
        values: list[tuple[Any, ...]] | None = None,
    ) -> None:
        """Rows ``i`` to ``j`` (excluded), which all have the names ``keys`` (``values``:
        their values in that order, row by row, when already taken)."""
        m = j - i
        if len(keys) == 1:
            k0 = keys[0]
            columns: dict[str, tuple[Any, ...]] = {k0: tuple(r[k0] for r in rows[i:j])}
        elif keys:
            if values is None:
                values = list(map(itemgetter(*keys), rows[i:j]))
            columns = dict(zip(keys, zip(*values, strict=True), strict=True))
        else:
            columns = {}
        self._system(self.pk, columns.get("PartitionKey"), m)
        self._system(self.rk, columns.get("RowKey"), m)
        self._system(self.ts, columns.get(TIMESTAMP), m)
        self._system(self.etag, columns.get("odata.etag"), m)
        for name in keys:
            if "." in name or name in _SYSTEM or "@" in name:
                continue
            col = columns[name]
            ann = columns.get(name + _ANN)
            edm = _run_type(col, ann)
            if edm is None:
                self._mixed(name, col, ann, i)
                continue
            target = self.dec._column_for(name, edm)
            if target is None:
                for k in range(m):
                    self._misfit(i + k, name, col[k], ann[k] if ann is not None else None)
                continue
            if target is EdmType.INT64 and edm is EdmType.INT32:
                col = tuple(None if v is None else str(v) for v in col)
            cells = self.cells.get(name)
            if cells is None:
                cells = self.cells[name] = []
            if len(cells) < i:
                cells.extend([None] * (i - len(cells)))
            cells.extend(col)

    def _mixed(
        self, name: str, col: tuple[Any, ...], ann: tuple[Any, ...] | None, base: int
    ) -> None:
        """A run whose values of ``name`` do not share one type: value by value."""
        for k, v in enumerate(col):
            a = ann[k] if ann is not None else None
            if v is None:
                continue
            edm = _value_type(name, v, a)
            target = self.dec._column_for(name, edm)
            if target is None:
                self._misfit(base + k, name, v, a)
                continue
            cells = self.cells.get(name)
            if cells is None:
                cells = self.cells[name] = []
            if len(cells) < base + k:
                cells.extend([None] * (base + k - len(cells)))
            cells.append(str(v) if target is EdmType.INT64 and edm is EdmType.INT32 else v)

    def _misfit(self, row: int, name: str, value: Any, ann: Any) -> None:
        if value is None:
            return
        obj = self.extra.get(row)
        if obj is None:
            obj = self.extra[row] = {}
        if ann is not None:
            obj[name + _ANN] = ann
        obj[name] = value

    def finish(self) -> pa.RecordBatch:
        n = self.n
        arrays: list[pa.Array] = [
            _strings(self.pk, "PartitionKey"),
            _strings(self.rk, "RowKey"),
            _timestamps(self.ts),
            _strings(self.etag, ETAG),
        ]
        for name, edm in self.dec._types.items():
            cells = self.cells.get(name)
            if cells is None:
                arrays.append(pa.nulls(n, arrow_type(edm)))
                continue
            if len(cells) < n:
                cells.extend([None] * (n - len(cells)))
            arrays.append(self._convert(name, edm, cells))
        extra: list[str | None] = [None] * n
        for row, obj in self.extra.items():
            extra[row] = _encode_json(obj).decode("utf-8")
        arrays.append(pa.array(extra, pa.string()))
        return pa.RecordBatch.from_arrays(arrays, schema=self.dec.schema)

    def _convert(self, name: str, edm: EdmType, cells: list[Any]) -> pa.Array:
        try:
            if edm is EdmType.STRING:
                return pa.array(cells, pa.string())
            if edm is EdmType.INT32:
                return pa.array(cells, pa.int32())
            if edm is EdmType.BOOLEAN:
                return pa.array(cells, pa.bool_())
            if edm is EdmType.INT64:
                return _int64(cells)
            if edm is EdmType.DOUBLE:
                return _doubles(cells)
            if edm is EdmType.DATETIME:
                return self._datetimes(name, cells)
            if edm is EdmType.GUID:
                return _guids(cells)
            return pa.array([None if v is None else decode_base64(v) for v in cells], pa.binary())
        except (pa.ArrowException, ValueError, TypeError, binascii.Error) as exc:
            raise _bad_value(name, edm, cells, exc) from None

    def _datetimes(self, name: str, cells: list[Any]) -> pa.Array:
        try:
            return pa.array(cells, pa.string()).cast(DATETIME_TYPE)
        except pa.ArrowInvalid:
            pass
        # some text is outside timestamp('ns')'s range (or unusual): value by value
        out: list[int | None] = []
        for row, v in enumerate(cells):
            if v is None:
                out.append(None)
                continue
            ns = (EdmDateTime.parse(v).ticks - _EPOCH_TICKS) * 100
            if _NS_MIN <= ns <= _NS_MAX:
                out.append(ns)
            else:
                out.append(None)
                self._misfit(row, name, v, EdmType.DATETIME.value)
        return pa.array(out, pa.int64()).view(DATETIME_TYPE)


def _one_shape(rows: list[dict[str, Any]]) -> tuple[tuple[str, ...], list[tuple[Any, ...]]] | None:
    """The names of the first row and every row's values under them, when all the rows have
    exactly those names (in any order): as many names each, and every one of them (a row
    lacking one raises ``KeyError``); else None. Two passes in C instead of comparing
    each row's names with the first's in Python."""
    if not rows or type(rows[0]) is not dict:
        return None
    keys = tuple(rows[0])
    try:
        if len(keys) < 2 or len(set(map(len, rows))) != 1:
            return None
        return keys, list(map(itemgetter(*keys), rows))
    except (KeyError, TypeError):  # names differ (or a row is not an object): row by row
        return None


def _run_type(col: tuple[Any, ...], ann: tuple[Any, ...] | None) -> EdmType | None:
    """The one EDM type of a run's values, or None when they differ (or hold a null)."""
    if ann is not None:
        first = ann[0]
        if type(first) is str and ann.count(first) == len(ann) and None not in col:
            return _EDM.get(first)
        return None
    kinds = set(map(type, col))
    if len(kinds) == 1:
        return _BARE.get(kinds.pop())
    return None


def _value_type(name: str, v: Any, ann: Any) -> EdmType:
    if ann is not None:
        edm = _EDM.get(ann) if type(ann) is str else None
        if edm is None:
            raise WireDecodeError(f"property {name!r}: unknown type annotation {ann!r}")
        return edm
    edm = _BARE.get(type(v))
    if edm is None:
        raise WireDecodeError(f"property {name!r}: a JSON {type(v).__name__} is not an EDM value")
    return edm


def _strings(values: list[Any], name: str) -> pa.Array:
    try:
        return pa.array(values, pa.string())
    except (pa.ArrowException, TypeError) as exc:
        raise WireDecodeError(f"{name}: not a string in the query response: {exc}") from None


def _timestamps(values: list[Any]) -> pa.Array:
    try:
        return pa.array(values, pa.string()).cast(DATETIME_TYPE)
    except (pa.ArrowException, TypeError) as exc:
        raise WireDecodeError(f"Timestamp: not a DateTime in the query response: {exc}") from None


_GUID_TEXT: Final = "^" + "-".join(f"[0-9A-Fa-f]{{{n}}}" for n in (8, 4, 4, 4, 12)) + "$"
_NO_GUID: Final = "00000000-0000-0000-0000-000000000000"


def _guids(cells: list[Any]) -> pa.Array:
    """Guid texts to ``arrow.uuid``: checked by one regular expression over the column
    (the canonical 8-4-4-4-12 form only, as :func:`decode_guid`), then every value's hex
    digits decoded in one ``bytes.fromhex`` into the storage buffer."""
    text = pa.array(cells, pa.string())
    if not pc.all(pc.match_substring_regex(text, _GUID_TEXT)).as_py():
        for v in cells:
            if v is not None:
                decode_guid(v)  # raises for the first bad one
        raise ValueError("not an 8-4-4-4-12 GUID")  # pragma: no cover - the two agree
    filled = cells if text.null_count == 0 else [_NO_GUID if v is None else v for v in cells]
    data = bytes.fromhex("".join(filled).replace("-", ""))
    validity = text.buffers()[0] if text.null_count else None
    storage = pa.Array.from_buffers(
        pa.binary(16), len(cells), [validity, pa.py_buffer(data)], null_count=text.null_count
    )
    return pa.ExtensionArray.from_storage(GUID_TYPE, storage)


def _int64(cells: list[Any]) -> pa.Array:
    arr = pa.array(cells, pa.string())
    return arr.cast(pa.int64())


def _doubles(cells: list[Any]) -> pa.Array:
    try:
        return pa.array(cells, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        pass
    out: list[float | None] = []
    for v in cells:
        if type(v) is str:
            if v not in _SPECIAL:
                raise ValueError(f"not a Double: {v!r}")
            out.append(_SPECIAL[v])
        elif v is None or type(v) is float:
            out.append(v)
        elif type(v) is int:
            out.append(float(v))
        else:
            raise ValueError(f"not a Double: {v!r}")
    return pa.array(out, pa.float64())


def _bad_value(name: str, edm: EdmType, cells: list[Any], exc: Exception) -> WireDecodeError:
    """The precise error: the first value the entity decoder would refuse too."""
    check: Any = {
        EdmType.INT64: int,
        EdmType.INT32: int,
        EdmType.DATETIME: EdmDateTime.parse,
        EdmType.GUID: decode_guid,
        EdmType.BINARY: decode_base64,
    }.get(edm)
    for v in cells:
        if v is None:
            continue
        if edm is EdmType.INT64 and (type(v) is not str or not v.lstrip("-").isdigit()):
            return WireDecodeError(f"property {name!r}: invalid {edm.value} value {v!r}")
        if check is not None:
            try:
                check(v)
            except (ValueError, TypeError, binascii.Error, ValidationError) as err:
                return WireDecodeError(f"property {name!r}: invalid {edm.value} value {v!r}: {err}")
    return WireDecodeError(f"property {name!r}: invalid {edm.value} values: {exc}")
