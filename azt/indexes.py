"""Declarative secondary indexes (see the "Secondary indexes" docs page): declare them in
an entity class's ``Meta.indexes``; azt writes their rows in the main row's entity group
transaction and answers queries from them.

Example::

    >>> from azt.entity import Entity, Prop, prop
    >>> class Post(Entity):
    ...     category: Prop[str] = prop(default="")
    ...     class Meta:
    ...         indexes = (Index("by_category", "category"),)
    >>> [d.name for d in declared_indexes(Post)]
    ['by_category']
"""

from __future__ import annotations

from azt._orm.index_repair import IndexReport, build_index, repair_index, verify_index
from azt._orm.indexes import (
    RESERVED,
    Holds,
    Index,
    IndexDef,
    declared_indexes,
    encode_part,
    index_partition_key,
    index_prefix,
    index_row_keys,
    is_index_partition,
    is_index_row_key,
    is_intent_row_key,
    main_keys,
    main_row_key,
)

__all__ = [
    "RESERVED",
    "Holds",
    "Index",
    "IndexDef",
    "IndexReport",
    "build_index",
    "declared_indexes",
    "encode_part",
    "index_partition_key",
    "index_prefix",
    "index_row_keys",
    "is_index_partition",
    "is_index_row_key",
    "is_intent_row_key",
    "main_keys",
    "main_row_key",
    "repair_index",
    "verify_index",
]
