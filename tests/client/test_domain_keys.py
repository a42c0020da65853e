"""Entity classes whose keys have domain names, end to end against the service: the table
client's writes and reads, queries (partition, point, multi-partition, delete), batches,
the batch writer, the bulk loader and :class:`azt.EntityTable`."""

from __future__ import annotations

import pytest

import azt
from azt import EntityBase, EntityTable, Prop, UpdateMode, partition_key, prop, row_key
from azt.bulk import load
from azt.query import PlanKind, Query


class Order(EntityBase):
    """An order: PartitionKey customer_id, RowKey order_id."""

    customer_id: Prop[str] = partition_key()
    order_id: Prop[str] = row_key()
    total: Prop[float] = prop(default=0.0)
    status: Prop[str] = prop(name="Status", default="new")


class Named(EntityBase, table="namedorders"):
    """A class naming its table, for EntityTable(cls, service)."""

    shop: Prop[str] = partition_key(kw_only=False)
    sku: Prop[str] = row_key(kw_only=False)
    stock: Prop[int] = prop(default=0)


def _order(c: str, o: str, total: float = 0.0) -> Order:
    return Order(customer_id=c, order_id=o, total=total)


async def test_table_client_writes_and_reads(table: azt.TableClient) -> None:
    o = _order("c-1", "o-1", 9.5)
    await table.insert_entity(o)
    assert o.ETag is not None
    stored = await table.get_entity("c-1", "o-1")
    assert dict(stored) == {"PartitionKey": "c-1", "RowKey": "o-1", "total": 9.5, "Status": "new"}
    got = await table.get_entity("c-1", "o-1", entity_class=Order)
    assert got == o
    assert got.ETag == o.ETag
    assert (got.customer_id, got.order_id) == ("c-1", "o-1")

    o.status = "paid"
    await table.update_entity(o, UpdateMode.REPLACE)  # If-Match: o.ETag
    got.total = 1.0
    with pytest.raises(azt.PreconditionFailedError):
        await table.update_entity(got)  # stale
    await table.upsert_entity(_order("c-1", "o-2", 3.0))
    projected = await table.get_entity("c-1", "o-1", select=["Status"], entity_class=Order)
    assert (projected.customer_id, projected.order_id, projected.status) == ("c-1", "o-1", "paid")
    await table.delete_entity(o)
    with pytest.raises(azt.EntityNotFoundError):
        await table.get_entity("c-1", "o-1")


async def test_queries_plan_and_read_by_domain_keys(table: azt.TableClient) -> None:
    async with table.batch_writer() as writer:
        for c in ("a", "b", "c"):
            for i in range(5):
                await writer.insert(_order(c, f"o-{i}", float(i)))
    q = Query(Order, table).where(Order.customer_id == "b", Order.total >= 2.0)
    assert q.explain().kind is PlanKind.ROW_RANGE
    got = await q.to_list()
    assert [(o.customer_id, o.order_id) for o in got] == [("b", "o-2"), ("b", "o-3"), ("b", "o-4")]
    assert all(o.ETag for o in got)
    point = Query(Order, table).where(Order.customer_id == "c", Order.order_id == "o-1")
    assert point.explain().kind is PlanKind.POINT
    found = await point.one_or_none()
    assert found is not None
    assert found.total == 1.0
    # a multi-partition query merges branches by the keys (read through the aliases)
    multi = Query(Order, table).where(Order.customer_id.in_(["c", "a"]), Order.total < 2.0)
    assert multi.explain().kind is PlanKind.MULTI
    pages = [page async for page in multi.page_size(1).pages()]
    assert [o.customer_id + o.order_id for p in pages for o in p.items] == [
        "ao-0",
        "ao-1",
        "co-0",
        "co-1",
    ]
    assert await Query(Order, table).where(Order.customer_id == "a").count() == 5
    deleted = await Query(Order, table).where(Order.customer_id == "a").delete()
    assert len(deleted) == 5
    assert await Query(Order, table).count() == 10


async def test_batch_of_domain_keyed_objects(table: azt.TableClient) -> None:
    first, second = _order("c", "1", 1.0), _order("c", "2", 2.0)
    await table.insert_entity(first)
    batch = table.batch()
    batch.create(second)
    first.total = 10.0
    batch.update(first, UpdateMode.REPLACE)  # If-Match: first.ETag
    await table.submit_transaction(batch)
    assert second.ETag is not None
    rows = await Query(Order, table).where(Order.customer_id == "c").to_list()
    assert [(o.order_id, o.total) for o in rows] == [("1", 10.0), ("2", 2.0)]
    batch = table.batch()
    batch.delete(first)
    batch.delete(second)
    await table.submit_transaction(batch)
    assert await Query(Order, table).count() == 0


async def test_bulk_load_of_domain_keyed_objects(table: azt.TableClient) -> None:
    orders = [_order(f"c{i % 3}", f"o{i:03}", float(i)) for i in range(60)]
    result = await load(table, orders, kind="upsert-replace")
    assert result.written == 60
    assert not result.failures
    got = await Query(Order, table).where(Order.customer_id == "c1").to_list()
    assert [o.order_id for o in got] == [f"o{i:03}" for i in range(1, 60, 3)]


async def test_entity_table_conveniences(table: azt.TableClient) -> None:
    orders = EntityTable(Order, table)
    assert orders.entity_class is Order
    assert orders.table is table
    assert repr(orders) == f"EntityTable(Order, {table.table_name!r})"
    new = _order("c-1", "o-1", 5.0)
    await orders.save(new)  # no ETag: inserted
    assert new.ETag is not None
    with pytest.raises(azt.EntityAlreadyExistsError):
        await orders.save(_order("c-1", "o-1"))  # a new object over a stored one
    await orders.insert(_order("c-1", "o-2", 7.0))
    await orders.insert(_order("c-2", "o-1", 1.0))

    got = await orders.get("c-1", "o-1")
    assert got == new
    assert await orders.get_or_none("c-1", "nope") is None
    with pytest.raises(azt.EntityNotFoundError):
        await orders.get("c-1", "nope")

    got.total = 6.0
    await orders.save(got)  # If-Match: got.ETag
    new.total = 0.5
    with pytest.raises(azt.PreconditionFailedError):
        await orders.save(new)  # stale: read before got's save
    await orders.save(new, overwrite=True)  # unconditional, PynamoDB's save()
    assert (await orders.get("c-1", "o-1")).total == 0.5

    q = orders.query("c-1", Order.total > 1.0)
    assert q.explain().kind is PlanKind.ROW_RANGE
    assert [o.order_id for o in await q.to_list()] == ["o-2"]
    assert [o.order_id for o in await orders.query("c-1").to_list()] == ["o-1", "o-2"]
    assert len(await orders.scan().to_list()) == 3
    assert [o.customer_id for o in await orders.scan(Order.total < 1.0).to_list()] == ["c-1"]

    stale = await orders.get("c-2", "o-1")
    fresh = await orders.get("c-2", "o-1")
    fresh.status = "shipped"
    await orders.save(fresh)
    with pytest.raises(azt.PreconditionFailedError):
        await orders.delete(stale)
    await orders.delete(stale, etag="*")
    await orders.delete(got, etag="*")
    assert [o.order_id for o in await orders.scan().to_list()] == ["o-2"]


async def test_entity_table_binding(
    service: azt.TableServiceClient, table: azt.TableClient
) -> None:
    await service.create_table("namedorders")
    try:
        stock = EntityTable(Named, service)
        assert stock.table.table_name == "namedorders"
        await stock.save(Named("shop-1", "sku-1", stock=3))
        assert (await stock.get("shop-1", "sku-1")).stock == 3
    finally:
        await service.delete_table("namedorders")
    with pytest.raises(azt.ValidationError, match="Order names no table"):
        EntityTable(Order, service)
    with pytest.raises(azt.ValidationError, match="TableClient or a TableServiceClient"):
        EntityTable(Order, "orders")  # type: ignore[arg-type]
    with pytest.raises(azt.ValidationError, match="writes Order objects, got Named"):
        await EntityTable(Order, table).insert(Named("s", "k"))  # type: ignore[arg-type]

    class Keyless(EntityBase):
        n: Prop[int] = prop(default=0)

    with pytest.raises(TypeError, match="declares no PartitionKey"):
        EntityTable(Keyless, table)
