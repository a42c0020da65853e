"""Dynamic entities: schemaless typed property bags, and resolvers that pick a class per row.

A table is schemaless; the seed article keeps members and their rentals in one table,
one partition per member::

    PartitionKey  RowKey                 properties
    m-17          Member                 Name, RentalCount
    m-17          Rental_Alien           Movie, Due
    m-17          Rental_Heat            Movie, Due

With a resolver, one query returns typed objects of both classes, in key order::

    resolver = by_row_key_prefix({"Member": Member, "Rental_": Rental})
    async for row in Query(resolver, table).where(Entity.PartitionKey == "m-17"):
        ...   # Member(...) then Rental(...), Rental(...)

Rows no class claims become :class:`DynamicEntity` (or raise, if ``fallback=None``).
"""

from azt._orm.dynamic import (
    DynamicEntity,
    Resolver,
    by_property,
    by_row_key_prefix,
    column,
)

__all__ = [
    "DynamicEntity",
    "Resolver",
    "by_property",
    "by_row_key_prefix",
    "column",
]
