"""Random entities over the eight EDM types, edge values included, through Arrow, pandas,
polars and Parquet and back: equal, type for type (hypothesis, bounded examples)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")
pq = pytest.importorskip("pyarrow.parquet")

from azt._core.wire.json import entity_json  # noqa: E402
from azt.edm import EdmType  # noqa: E402
from azt.frames import (  # noqa: E402
    EXTRA,
    FrameDecoder,
    edm_types,
    entities,
    parquet_entities,
    to_pandas,
    to_polars,
)
from tests.frames.roundtrip import by_keys, entity_sets  # noqa: E402

EXAMPLES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def service_rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The JSON rows a query page gives for ``items`` (minimal metadata: Int32, String and
    Boolean bare, the others annotated; the service's Timestamp and ETag)."""
    rows = []
    for item in items:
        row = {"odata.etag": "W/\"datetime'x'\"", "Timestamp": "2024-01-02T03:04:05.1234567Z"}
        row.update(entity_json(item))
        rows.append(row)
    return rows


def _arrow(t: Any) -> list[Any]:
    return entities(t)


def _pandas(t: Any) -> list[Any]:
    df = to_pandas(t)
    return entities(df)


def _polars(t: Any) -> list[Any]:
    # polars has no UUID type: the Guid columns are named on the way back
    guids = {k: v for k, v in edm_types(t.schema).items() if v is EdmType.GUID}
    return entities(to_polars(t), types=guids)


def _parquet(t: Any) -> list[Any]:
    buf = io.BytesIO()
    pq.write_table(t, buf)
    buf.seek(0)
    return list(parquet_entities(buf, batch_rows=2))


@pytest.mark.parametrize(
    "through", [_arrow, _pandas, _polars, _parquet], ids=["arrow", "pandas", "polars", "parquet"]
)
@EXAMPLES
@given(items=entity_sets())
def test_round_trip_type_for_type(items: list[dict[str, Any]], through: Callable[..., Any]) -> None:
    batch = FrameDecoder().decode(service_rows(items))
    table = pa.Table.from_batches([batch])
    back = through(table)
    assert by_keys(back) == by_keys(items)


@EXAMPLES
@given(items=entity_sets())
def test_every_value_is_in_its_column_or_in_extra(items: list[dict[str, Any]]) -> None:
    batch = FrameDecoder().decode(service_rows(items))
    extra = batch.column(EXTRA).to_pylist()
    for i, item in enumerate(items):
        for name, value in item.items():
            if name in ("PartitionKey", "RowKey"):
                continue
            cell = batch.column(name)[i].as_py() if name in batch.schema.names else None
            in_extra = extra[i] is not None and f'"{name}"' in extra[i]
            assert (cell is not None) != in_extra, (name, value)
