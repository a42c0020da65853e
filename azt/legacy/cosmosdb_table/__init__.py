"""Stands in for the ``azure.cosmosdb.table`` package of the legacy Python Table SDK.

Only the package prefix of a legacy import changes: ``azure.cosmosdb.table`` becomes
``azt.legacy.cosmosdb_table`` (``.tableservice``, ``.models``, ``.tablebatch`` and
``.common.models`` are here too).

Example::

    from azt.legacy.cosmosdb_table import TableService, Entity, EntityProperty, EdmType
    service = TableService(connection_string=conn_str)
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
from azt.legacy._requests import TableBatch
from azt.legacy.table_service import TableService

__all__ = [
    "AzureBatchOperationError",
    "AzureBatchValidationError",
    "EdmType",
    "Entity",
    "EntityProperty",
    "Table",
    "TableBatch",
    "TablePayloadFormat",
    "TablePermissions",
    "TableService",
]
