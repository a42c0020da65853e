"""Random entities over the eight EDM types (edge values included) and the comparison of
two sets of entities type for type, for the frames' round-trip tests."""

from __future__ import annotations

import math
import struct
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import strategies as st

from azt.edm import EdmDateTime, EdmType, Typed

INT64_EDGES = [2**63 - 1, -(2**63), -(2**63) + 1, 0, 2**31, -(2**31) - 1]
INT32_EDGES = [2**31 - 1, -(2**31), 0, -1]
DATETIME_EDGES = [
    "1601-01-01T00:00:00.0000000Z",
    "9999-12-31T23:59:59.9999999Z",
    "1677-09-21T00:12:43.1452248Z",  # just inside timestamp('ns')
    "1677-09-21T00:12:43.1452240Z",  # just outside
    "2262-04-11T23:47:16.8547758Z",  # the last 100 ns tick inside
    "2262-04-11T23:47:16.8547759Z",  # just outside
    "1970-01-01T00:00:00.0000000Z",
    "2020-09-15T23:02:10.4363943Z",
]
DOUBLE_EDGES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308]
STRING_EDGES = ["", "\U0001f600", "a\U00010348b", "O'Brien", "\u2028\x7f"]
BINARY_EDGES = [b"", b"\x00", bytes(range(256))]
_TICKS_MIN = EdmDateTime.parse(DATETIME_EDGES[0]).ticks
_TICKS_MAX = EdmDateTime.parse(DATETIME_EDGES[1]).ticks

_text = st.text(st.characters(codec="utf-8"), max_size=12)  # no lone surrogates


def values(edm: EdmType) -> st.SearchStrategy[Any]:
    """Values of one EDM type, edges first."""
    if edm is EdmType.STRING:
        return st.sampled_from(STRING_EDGES) | _text
    if edm is EdmType.INT32:
        return st.sampled_from(INT32_EDGES) | st.integers(-(2**31), 2**31 - 1)
    if edm is EdmType.INT64:
        return st.sampled_from(INT64_EDGES) | st.integers(-(2**63), 2**63 - 1)
    if edm is EdmType.DOUBLE:
        return st.sampled_from(DOUBLE_EDGES) | st.floats(allow_nan=True)
    if edm is EdmType.BOOLEAN:
        return st.booleans()
    if edm is EdmType.DATETIME:
        return st.sampled_from(DATETIME_EDGES).map(EdmDateTime.parse) | st.integers(
            _TICKS_MIN, _TICKS_MAX
        ).map(EdmDateTime.from_ticks)
    if edm is EdmType.GUID:
        return st.binary(min_size=16, max_size=16).map(lambda b: uuid.UUID(bytes=b))
    return st.sampled_from(BINARY_EDGES) | st.binary(max_size=40)


TYPES = list(EdmType)


@st.composite
def entity_sets(draw: Any, *, max_rows: int = 6) -> list[dict[str, Any]]:
    """Rows with one column per EDM type (values or missing) and a property ``Mixed``
    whose type differs between rows: every value a :class:`Typed`."""
    n = draw(st.integers(1, max_rows))
    out: list[dict[str, Any]] = []
    for i in range(n):
        row: dict[str, Any] = {"PartitionKey": f"p{i % 2}", "RowKey": f"r{i:03d}"}
        for edm in TYPES:
            if draw(st.booleans()) or i == 0:
                row[f"C{edm.name.title()}"] = Typed(draw(values(edm)), edm)
        if draw(st.booleans()):
            mixed = draw(st.sampled_from(TYPES))
            row["Mixed"] = Typed(draw(values(mixed)), mixed)
        out.append(row)
    return out


def _canon(edm: EdmType, v: Any) -> Any:
    if edm is EdmType.DOUBLE:
        return struct.pack("<d", float(v)) if not math.isnan(v) else "nan"
    if edm is EdmType.DATETIME:
        return v.ticks
    return v


def typed_view(entity: Mapping[str, Any]) -> dict[str, tuple[EdmType, Any]]:
    """``{name: (EDM type, comparable value)}`` of an entity: :class:`Typed` values,
    or a decoded entity's values with its ``edm_types`` (bare JSON values by their Python
    type, as the service gives them); ``Timestamp`` left out."""
    declared: Mapping[str, EdmType] = getattr(entity, "edm_types", {}) or {}
    out: dict[str, tuple[EdmType, Any]] = {}
    for name, v in entity.items():
        if name == "Timestamp":
            continue
        if name in ("PartitionKey", "RowKey"):
            out[name] = (EdmType.STRING, v)
            continue
        if isinstance(v, Typed):
            edm, value = v.edm_type, v.value
        else:
            found = declared.get(name)
            if found is None:
                found = {
                    str: EdmType.STRING,
                    bool: EdmType.BOOLEAN,
                    int: EdmType.INT32,
                    float: EdmType.DOUBLE,
                }[type(v)]
            edm, value = found, v
        out[name] = (edm, _canon(edm, value))
    return out


def by_keys(entities: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Any]:
    """Entities' typed views by (PartitionKey, RowKey)."""
    return {(e["PartitionKey"], e["RowKey"]): typed_view(e) for e in entities}
