"""Drop-ins for legacy code: a .NET-shaped surface for code ported from the Windows Azure
StorageClient library, and the legacy Python SDK's blocking ``TableService``
(azure-cosmosdb-table 1.0.x: ``TableService``, ``Entity``, ``EntityProperty``,
``EdmType``, ``TableBatch``, the ``Azure*Error`` classes; also importable under the legacy
module paths from ``azt.legacy.cosmosdb_table`` and ``azt.legacy.azure_common``).

The StorageClient's names in snake_case (``AddObject`` -> ``add_object``,
``SaveChangesWithRetries`` -> ``save_changes_with_retries``, ...), ``await``-ed where they
do I/O, as thin names over :class:`azt.context.TableContext`,
:class:`azt.TableServiceClient` and :class:`azt.query.Query`. The full name map (.NET,
``azt.legacy``, native azt) is in the porting guide, ``docs/porting.md``.

``save_changes`` sends each request once (WCF's ``SaveChanges`` does not retry);
``save_changes_with_retries`` and queries retry per the context's ``retry_policy`` (by
default the StorageClient's: 3 retries, exponential back-off from 3 s to 90 s). All share
one connection pool: close the table client (``async with`` or ``await client.aclose()``)
when done.

Example::

    account = CloudStorageAccount.parse(connection_string)
    async with account.create_cloud_table_client() as table_client:
        await table_client.create_table_if_not_exist("Movies")
        context = table_client.get_data_service_context()
        context.add_object("Movies", Movie("Action", "White Water Rapids Survival"))
        await context.save_changes_with_retries()
"""

from azt.legacy._dotnet import (
    CloudStorageAccount,
    CloudTableClient,
    CloudTableQuery,
    DataServiceQuery,
    ExponentialRetry,
    MergeOption,
    NoRetry,
    ResultSegment,
    RetryPolicies,
    SaveChangesOptions,
    TableServiceContext,
    TableServiceEntity,
)
from azt.legacy._models import (
    AccessPolicy,
    AzureBatchOperationError,
    AzureBatchValidationError,
    AzureConflictHttpError,
    AzureException,
    AzureHttpError,
    AzureMissingResourceHttpError,
    EdmType,
    Entity,
    EntityProperty,
    ListGenerator,
    Table,
    TablePayloadFormat,
    TablePermissions,
)
from azt.legacy._requests import TableBatch
from azt.legacy.aliases import install_import_aliases
from azt.legacy.table_service import TableService

__all__ = [
    "AccessPolicy",
    "AzureBatchOperationError",
    "AzureBatchValidationError",
    "AzureConflictHttpError",
    "AzureException",
    "AzureHttpError",
    "AzureMissingResourceHttpError",
    "CloudStorageAccount",
    "CloudTableClient",
    "CloudTableQuery",
    "DataServiceQuery",
    "EdmType",
    "Entity",
    "EntityProperty",
    "ExponentialRetry",
    "ListGenerator",
    "MergeOption",
    "NoRetry",
    "ResultSegment",
    "RetryPolicies",
    "SaveChangesOptions",
    "Table",
    "TableBatch",
    "TablePayloadFormat",
    "TablePermissions",
    "TableService",
    "TableServiceContext",
    "TableServiceEntity",
    "install_import_aliases",
]
