"""Static types of keys with domain names and of ``EntityTable``, checked by ``mypy
--strict`` (tests/typing/test_mypy.py): the ``__init__`` type checkers see is the one the
class has (keys keyword-only unless declared ``kw_only=False``), the key columns build
conditions under both names, and ``EntityTable`` returns the bound class. Negative lines
(``# type: ignore[code]``) prove that misuse is a type error."""

from __future__ import annotations

from typing import Any, assert_type

import pytest

import azt
import azt.sync
from azt import (
    EntityBase,
    EntityTable,
    Prop,
    Query,
    WriteResult,
    partition_key,
    prop,
    row_key,
)
from azt.query import Comparison, Condition


class Order(EntityBase):
    customer_id: Prop[str] = partition_key()
    order_id: Prop[str] = row_key()
    total: Prop[float] = prop(default=0.0)


class Doc(EntityBase):
    tenant: Prop[str] = partition_key(kw_only=False)
    path: Prop[str] = row_key(kw_only=False)
    size: Prop[int] = prop(default=0)


def test_constructors_match_the_runtime() -> None:
    o = Order(customer_id="c", order_id="o", total=1.0)
    assert_type(o, Order)
    d = Doc("t", "a;b.txt", size=3)
    assert_type(d, Doc)
    with pytest.raises(TypeError):
        Order("c", "o")  # type: ignore[call-arg, arg-type]
    with pytest.raises(TypeError):
        Order(customer_id="c")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Doc(tenant="t")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Order(PartitionKey="c", RowKey="o")  # type: ignore[call-arg]


def test_values_and_columns() -> None:
    o = Order(customer_id="c", order_id="o")
    assert_type(o.customer_id, str)
    assert_type(o.PartitionKey, str)
    assert_type(o.RowKey, str)
    assert_type(Order.customer_id, Prop[str])
    assert_type(Order.PartitionKey, Prop[str])
    assert_type(Order.customer_id == "c", Comparison)
    assert_type(Order.order_id.startswith("2024"), Condition)
    assert_type(Query(Order).where(Order.customer_id == "c"), Query[Order])
    o.customer_id = "d"
    o.PartitionKey = "e"
    assert o.customer_id == "e"
    with pytest.raises(azt.ValidationError):
        o.customer_id = 5  # type: ignore[assignment]


async def _entity_table(table: azt.TableClient, service: azt.TableServiceClient) -> None:
    orders = EntityTable(Order, table)
    assert_type(orders, EntityTable[Order])
    assert_type(EntityTable(Order, service), EntityTable[Order])
    assert_type(await orders.get("c", "o"), Order)
    assert_type(await orders.get_or_none("c", "o"), Order | None)
    assert_type(orders.query("c", Order.total > 1.0), Query[Order])
    assert_type(orders.scan(), Query[Order])
    assert_type(await orders.save(Order(customer_id="c", order_id="o")), WriteResult)
    assert_type(await orders.insert(Order(customer_id="c", order_id="o")), WriteResult)
    assert_type(await orders.delete(Order(customer_id="c", order_id="o")), WriteResult)
    assert_type(orders.entity_class, type[Order])
    assert_type(orders.table, azt.TableClient)
    await orders.save(Doc("t", "p"))  # type: ignore[arg-type]
    await orders.get("c")  # type: ignore[call-arg]
    EntityTable(Order, "orders")  # type: ignore[arg-type]
    found: Any = [o.order_id async for o in orders.query("c")]
    del found


def _sync_entity_table(table: azt.sync.TableClient) -> None:
    orders = azt.sync.EntityTable(Order, table)
    assert_type(orders, azt.sync.EntityTable[Order])
    assert_type(orders.get("c", "o"), Order)
    assert_type(orders.query("c"), azt.sync.Query[Order])
    assert_type(orders.save(Order(customer_id="c", order_id="o")), WriteResult)
    for o in orders.scan(Order.total > 0.0):
        assert_type(o, Order)
