"""Stands in for ``azure.cosmosdb.table.models``.

Example::

    from azt.legacy.cosmosdb_table.models import Entity, EntityProperty, EdmType
"""

from azt.legacy._models import (
    AzureBatchOperationError,
    AzureBatchValidationError,
    EdmType,
    Entity,
    EntityProperty,
    Table,
    TablePayloadFormat,
    TablePermissions,
)

__all__ = [
    "AzureBatchOperationError",
    "AzureBatchValidationError",
    "EdmType",
    "Entity",
    "EntityProperty",
    "Table",
    "TablePayloadFormat",
    "TablePermissions",
]
