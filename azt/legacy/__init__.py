"""A .NET-shaped surface for code ported from the Windows Azure StorageClient library.

Thin names over the real implementation (:class:`azt.context.TableContext`,
:class:`azt.TableServiceClient`, :class:`azt.query.Query`): nothing here has behaviour of
its own beyond choosing which client (with or without retries) a call goes through.

=========================================  ==================================================
.NET (StorageClient 1.x / WCF Data Services)  azt.legacy (async where it does I/O)
=========================================  ==================================================
``CloudStorageAccount.Parse(s)``            ``CloudStorageAccount.parse(s)``
``account.CreateCloudTableClient()``        ``account.create_cloud_table_client()``
``tableClient.CreateTableIfNotExist(t)``    ``await client.create_table_if_not_exist(t)``
                                            (also ``create_table_if_not_exists``)
``tableClient.DoesTableExist(t)``           ``await client.does_table_exist(t)``
``tableClient.DeleteTableIfExist(t)``       ``await client.delete_table_if_exist(t)``
``tableClient.GetDataServiceContext()``     ``client.get_data_service_context()``
``tableClient.RetryPolicy = ...``           ``client.retry_policy = ...``
``context.RetryPolicy = ...``               ``context.retry_policy = ...``
``class Movie : TableServiceEntity``        ``class Movie(TableServiceEntity)``
``context.AddObject(t, e)``                 ``context.add_object(t, e)``
``context.AttachTo(t, e, etag)``            ``context.attach_to(t, e, etag)``
``context.UpdateObject(e)``                 ``context.update_object(e)``
``context.DeleteObject(e)``                 ``context.delete_object(e)``
``context.Detach(e)``                       ``context.detach(e)``
``context.SaveChanges(options)``            ``await context.save_changes(options)`` (no retries)
``context.SaveChangesWithRetries(o)``       ``await context.save_changes_with_retries(o)``
``context.CreateQuery<Movie>(t)``           ``context.create_query(Movie, t)``
``... where ... select`` (LINQ)             ``.where(Movie.PartitionKey == "Action", ...)``
``q.AsTableServiceQuery()``                 ``q.as_table_service_query()``
``cloudQuery.Execute()``                    ``async for m in cloud_query.execute()``
``cloudQuery.BeginExecuteSegmented``        ``await cloud_query.execute_segmented(token)``
                                            (also ``context.execute(q)``,
                                            ``context.execute_segmented(q, token)``)
``context.MergeOption``                     ``context.merge_option``
``context.IgnoreResourceNotFoundException`` ``context.ignore_resource_not_found``
``SaveChangesOptions.Batch`` (...)          ``SaveChangesOptions.BATCH`` (...)
``MergeOption.PreserveChanges`` (...)       ``MergeOption.PRESERVE_CHANGES`` (...)
``RetryPolicies.RetryExponential(n, d)``    ``RetryPolicies.retry_exponential(n, d)``
``RetryPolicies.NoRetry()``                 ``RetryPolicies.no_retry()``
=========================================  ==================================================

``save_changes`` sends each request once (WCF's ``SaveChanges`` does not retry);
``save_changes_with_retries`` and queries retry per the context's ``retry_policy``, which
it takes from the table client when it is made (default: 3 retries, exponential back-off
from 3 s to 90 s with a 30 s delta and ±20 % jitter, the StorageClient's defaults). All
share one connection pool, opened by the first request. Close the table client
(``async with`` or ``await client.aclose()``) when done.

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
