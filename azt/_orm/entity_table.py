"""``EntityTable``: an entity class bound to one table, for the class-level calls of
PynamoDB (``Model.get``, ``Model.query``, ``Model.scan``, ``obj.save()``,
``obj.delete()``) with the client explicit.

azt keeps entities plain data: an entity object never holds a client, so ``obj.save()``
(an active-record call hiding a network round trip, its client found in a global) has no
place in it; it would sit badly with async code (what loop, what session?) and with the unit
of work, where writes are collected and sent by ``save_changes``. What PynamoDB puts on the
model class lives here, on a small object that names the class and the table once:

Example::

    orders = EntityTable(Order, table)           # or EntityTable(Order, service)
    await orders.save(Order(customer_id="c-1", order_id="o-7", total=9.5))
    order = await orders.get("c-1", "o-7")       # typed: an Order
    async for o in orders.query("c-1", Order.total > 5.0):
        print(o.order_id)
    await orders.delete(order)                   # If-Match: order.ETag
"""

from __future__ import annotations

from typing import Generic, TypeVar, cast

from azt._core.base import EntityFactory
from azt._core.results import UpdateMode, WriteResult
from azt._core.service_client import TableServiceClient
from azt._core.table_client import TableClient
from azt._errors import EntityNotFoundError, ValidationError
from azt._orm.columns import entity_info
from azt._orm.entity import EntityBase
from azt._orm.expr import Conditional
from azt._orm.query import Query

__all__ = ["EntityTable"]

E = TypeVar("E", bound=EntityBase)


class EntityTable(Generic[E]):
    """An entity class bound to one table: typed point reads, partition queries, scans and
    writes of that class, through a :class:`azt.TableClient`. Give it a table client, or a
    service client and the class's own table (``class Order(EntityBase, table="orders")``,
    as PynamoDB's ``Meta.table_name``). It holds no state of its own beyond the two: make
    one where it is needed, or keep one per class.

    Writes go straight to the service; for tracked objects and changes sent together, use
    :class:`azt.context.TableContext` instead.

    Example::

        orders = EntityTable(Order, service)     # the table Order names
        order = await orders.get("c-1", "o-7")
        order.total += 1.0
        await orders.save(order)                 # replaced if unchanged since read
    """

    __slots__ = ("_cls", "_table")

    def __init__(self, cls: type[E], table: TableClient | TableServiceClient) -> None:
        info = entity_info(cls)
        info.key_props()  # a class without keys cannot be read or written
        if isinstance(table, TableServiceClient):
            if info.table is None:
                raise ValidationError(
                    f"{cls.__name__} names no table: pass a TableClient, or declare "
                    f"class {cls.__name__}(..., table='name')"
                )
            table = table.get_table_client(info.table)
        elif not isinstance(table, TableClient):
            raise ValidationError(
                f"EntityTable takes a TableClient or a TableServiceClient, got "
                f"{type(table).__name__}"
            )
        self._cls = cls
        self._table = table

    def __repr__(self) -> str:
        return f"EntityTable({self._cls.__name__}, {self._table.table_name!r})"

    @property
    def entity_class(self) -> type[E]:
        """The bound entity class.

        Example::

            assert EntityTable(Order, table).entity_class is Order
        """
        return self._cls

    @property
    def table(self) -> TableClient:
        """The table client the calls go through (for batches, the batch writer, ...).

        Example::

            async with orders.table.batch_writer() as writer:
                writer.upsert(Order(customer_id="c-1", order_id="o-8"))
        """
        return self._table

    async def get(self, partition_key: str, row_key: str) -> E:
        """The entity with these keys, as an instance of the class
        (:class:`azt.EntityNotFoundError` when there is none; PynamoDB's
        ``Model.get(hash_key, range_key)``).

        Example::

            order = await orders.get("c-1", "o-7")
        """
        # type[E] is an EntityFactory[E] (EntityBase.__azt_decode__ returns Self); mypy does
        # not see it through the type variable
        factory = cast("EntityFactory[E]", self._cls)
        return await self._table.get_entity(partition_key, row_key, entity_class=factory)

    async def get_or_none(self, partition_key: str, row_key: str) -> E | None:
        """The entity with these keys, or ``None`` when there is none.

        Example::

            if await orders.get_or_none("c-1", "o-404") is None:
                print("no such order")
        """
        try:
            return await self.get(partition_key, row_key)
        except EntityNotFoundError:
            return None

    def query(self, partition_key: str, *conditions: Conditional) -> Query[E]:
        """The entities of one partition matching ``conditions`` (PynamoDB's
        ``Model.query(hash_key, range_key_condition, filter_condition)``): a
        :class:`azt.query.Query`, so ``take``, ``select``, ``first``, ``pages`` and
        ``explain`` work as on any query.

        Example::

            async for o in orders.query("c-1", Order.order_id.startswith("2024-")):
                print(o.order_id, o.total)
        """
        pk, _ = entity_info(self._cls).key_props()
        q: Query[E] = Query(self._cls, self._table)
        return q.where(pk == partition_key, *conditions)

    def scan(self, *conditions: Conditional) -> Query[E]:
        """Every entity of the table matching ``conditions``, across partitions (PynamoDB's
        ``Model.scan(filter_condition)``); a query whose plan is a table scan unless the
        conditions name keys.

        Example::

            big = await orders.scan(Order.total > 100.0).to_list()
        """
        q: Query[E] = Query(self._cls, self._table)
        return q.where(*conditions) if conditions else q

    async def insert(self, obj: E) -> WriteResult:
        """Insert a new entity (:class:`azt.EntityAlreadyExistsError` if its keys exist);
        the object gets its ETag and Timestamp.

        Example::

            await orders.insert(Order(customer_id="c-1", order_id="o-9"))
        """
        return await self._table.insert_entity(self._checked(obj))

    async def save(self, obj: E, *, overwrite: bool = False) -> WriteResult:
        """Write the object whole. An object read from the table (it has an ETag) replaces
        the stored entity only if that is unchanged since (:class:`azt.PreconditionFailedError`
        otherwise); a new object (no ETag) is inserted (:class:`azt.EntityAlreadyExistsError`
        if its keys exist). ``overwrite=True`` writes it unconditionally, inserted or
        replacing whatever is there: PynamoDB's ``save()`` without a condition.

        Example::

            order = await orders.get("c-1", "o-7")
            order.total = 12.0
            await orders.save(order)                     # If-Match: order.ETag
            await orders.save(Order(customer_id="c-1", order_id="o-7"), overwrite=True)
        """
        obj = self._checked(obj)
        if overwrite:
            return await self._table.upsert_entity(obj, UpdateMode.REPLACE)
        if obj.ETag is None:
            return await self._table.insert_entity(obj)
        return await self._table.update_entity(obj, UpdateMode.REPLACE)

    async def delete(self, obj: E, *, etag: str | None = None) -> WriteResult:
        """Delete the object's entity; conditional on its ETag when it has one
        (:class:`azt.PreconditionFailedError` if the entity changed since it was read);
        ``etag="*"`` deletes unconditionally.

        Example::

            await orders.delete(order)
        """
        return await self._table.delete_entity(self._checked(obj), etag=etag)

    def _checked(self, obj: E) -> E:
        if not isinstance(obj, self._cls):
            raise ValidationError(
                f"{self!r} writes {self._cls.__name__} objects, got {type(obj).__name__}"
            )
        return obj
