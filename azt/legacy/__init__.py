"""A .NET-shaped surface for code ported from the Windows Azure StorageClient library.

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

__all__ = [
    "CloudStorageAccount",
    "CloudTableClient",
    "CloudTableQuery",
    "DataServiceQuery",
    "ExponentialRetry",
    "MergeOption",
    "NoRetry",
    "ResultSegment",
    "RetryPolicies",
    "SaveChangesOptions",
    "TableServiceContext",
    "TableServiceEntity",
]
