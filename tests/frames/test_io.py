"""Frames against the stub: a table read as Arrow (plain and through an entity class),
written back from Arrow, pandas and polars through the bulk loader, equal type for type;
the column rules (mixed types, newcomers in a fixed-schema stream, DateTimes outside
``timestamp('ns')``) and the refusals of values no EDM type holds."""

from __future__ import annotations

import math
import secrets
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

import azt  # noqa: E402
from azt.edm import EdmDateTime, EdmType, Typed  # noqa: E402
from azt.entity import Entity, Int64, Prop, prop  # noqa: E402
from azt.frames import (  # noqa: E402
    EXTRA,
    arrow_batches,
    edm_types,
    entities,
    read_arrow,
    to_pandas,
    to_polars,
    write_frame,
)
from azt.testing import stub_retry_policy  # noqa: E402
from azt_server_stub import StubServer  # noqa: E402
from tests.frames.roundtrip import by_keys, entity_sets  # noqa: E402


@pytest.fixture
async def service() -> AsyncIterator[azt.TableServiceClient]:
    async with (
        StubServer() as server,
        azt.TableServiceClient.from_connection_string(
            server.connection_string, retry=stub_retry_policy()
        ) as svc,
    ):
        yield svc


async def new_table(service: azt.TableServiceClient) -> azt.TableClient:
    return await service.create_table(f"fr{secrets.token_hex(5)}")


async def fill(table: azt.TableClient, items: list[dict[str, Any]]) -> None:
    for item in items:
        await table.upsert_entity(item)


async def stored(table: azt.TableClient) -> dict[tuple[str, str], Any]:
    return by_keys([e async for e in table.list_entities()])


@pytest.mark.parametrize("through", ["arrow", "pandas", "polars"])
async def test_table_to_frame_and_back_type_for_type(
    service: azt.TableServiceClient, through: str
) -> None:
    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
    @given(items=entity_sets(max_rows=5))
    def check(items: list[dict[str, Any]]) -> None:
        examples.append(items)

    examples: list[list[dict[str, Any]]] = []
    check()
    for items in examples:
        src, dst = await new_table(service), await new_table(service)
        await fill(src, items)
        table = await read_arrow(src)
        frame: Any = table
        types = None
        if through == "pandas":
            frame = to_pandas(table)
        elif through == "polars":
            frame = to_polars(table)
            types = {k: v for k, v in edm_types(table.schema).items() if v is EdmType.GUID}
        result = await write_frame(dst, frame, kind="insert", types=types)
        assert result.failures == []
        assert await stored(dst) == await stored(src) == by_keys(items)


async def test_columns_mixed_types_and_newcomers(service: azt.TableServiceClient) -> None:
    table = await new_table(service)
    await fill(
        table,
        [
            {"PartitionKey": "a", "RowKey": "1", "N": 1, "Old": Typed(1, EdmType.INT64)},
            {"PartitionKey": "a", "RowKey": "2", "N": "two", "When": EdmDateTime(1601, 1, 1)},
            {"PartitionKey": "b", "RowKey": "1", "New": uuid.UUID(int=7), "D": math.nan},
        ],
    )
    # every property gets a column, in the order the rows first bring it (Storage keeps an
    # upserted entity's properties in name order: "D" before "New")
    whole = await read_arrow(table)
    assert whole.schema.names == [
        "PartitionKey", "RowKey", "Timestamp", "ETag", "N", "Old", "When", "D", "New", EXTRA,
    ]  # fmt: skip
    assert whole.column("N").to_pylist() == [1, None, None]
    assert whole.column(EXTRA).to_pylist() == [
        None,
        '{"N":"two","When@odata.type":"Edm.DateTime","When":"1601-01-01T00:00:00Z"}',
        None,
    ]
    assert whole.column("Old").type == pa.int64()
    assert whole.column("New").type == pa.uuid()
    assert whole.column("Timestamp").null_count == 0
    assert all(e.startswith('W/"') for e in whole.column("ETag").to_pylist())
    # a stream's schema is its first page's: a property first seen later goes to @extra
    batches = [b async for b in arrow_batches(table, page_size=2, concurrency=1)]
    assert [b.num_rows for b in batches] == [2, 1]
    assert batches[0].schema == batches[1].schema
    assert "New" not in batches[1].schema.names
    assert batches[1].column(EXTRA).to_pylist()[0] == (
        '{"D@odata.type":"Edm.Double","D":"NaN",'
        '"New@odata.type":"Edm.Guid","New":"00000000-0000-0000-0000-000000000007"}'
    )
    back = entities(pa.Table.from_batches(batches))
    assert by_keys(back) == await stored(table)


class Reading(Entity):
    value: Prop[float] = prop(default=0.0)
    count: Prop[Int64] = prop(name="Count", default=0)
    label: Prop[str | None] = prop(default=None)


async def test_typed_entity_class_fixes_the_columns(service: azt.TableServiceClient) -> None:
    table = await new_table(service)
    await fill(
        table,
        [
            {"PartitionKey": "s", "RowKey": "1", "value": 1.5, "Count": Typed(3, EdmType.INT64)},
            # Int32 values widen into the class's Double and Int64 columns; others: @extra
            {"PartitionKey": "s", "RowKey": "2", "value": 2, "Count": 4, "Other": "x"},
        ],
    )
    t = await read_arrow(table, entity=Reading, filter=Reading.PartitionKey == "s")
    assert t.schema.names == [
        "PartitionKey", "RowKey", "Timestamp", "ETag", "value", "Count", "label", EXTRA,
    ]  # fmt: skip
    assert t.column("value").to_pylist() == [1.5, 2.0]
    assert t.column("Count").type == pa.int64()
    assert t.column("Count").to_pylist() == [3, 4]
    assert t.column(EXTRA).to_pylist() == [None, '{"Other":"x"}']


def frame(**columns: Any) -> Any:
    return pa.table({"PartitionKey": ["p"], "RowKey": ["r"], **columns})


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (frame(T=pa.array([1], pa.timestamp("ns", "UTC"))), "finer than the service's 100 ns"),
        (frame(T=pa.array([1], pa.timestamp("s"))), "without a time zone"),
        (frame(U=pa.array([1], pa.uint64())), "no EDM type holds Arrow uint64"),
        (pa.table({"RowKey": ["r"]}), "no PartitionKey column"),
        (frame(A=[1], **{EXTRA: ['{"A":2}']}), "both in its column and in @extra"),
        (frame(**{EXTRA: ["[1]"]}), "must hold a JSON object"),
    ],
)
def test_values_no_edm_type_holds_are_refused(table: Any, message: str) -> None:
    with pytest.raises(azt.ValidationError, match=message):
        entities(table)


async def test_a_refused_row_is_reported_and_the_rest_written(
    service: azt.TableServiceClient,
) -> None:
    table = await new_table(service)
    df = pd.DataFrame(
        {
            "PartitionKey": ["p", "p", "q"],
            "RowKey": ["1", "bad/key", "3"],
            "N": pd.array([1, 2, None], dtype="int64[pyarrow]"),
        }
    )
    result = await write_frame(table, df, kind="insert")
    assert [f.index for f in result.failures] == [1]
    got = await stored(table)
    assert got[("p", "1")]["N"] == (EdmType.INT64, 1)
    assert set(got) == {("p", "1"), ("q", "3")}
    assert "N" not in got[("q", "3")]  # null: the property is absent


def test_a_pandas_column_of_mixed_objects_is_refused() -> None:
    df = pd.DataFrame({"PartitionKey": ["p", "p"], "RowKey": ["1", "2"], "X": [1, "one"]})
    with pytest.raises(azt.ValidationError, match="the pandas frame has no Arrow form"):
        entities(df)
