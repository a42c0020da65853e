"""Batches: commit_batch return values, the batch() context manager, a failing batch."""

from azure.common import AzureException
from azure.cosmosdb.table.common.retry import no_retry
from azure.cosmosdb.table.models import AzureBatchOperationError, AzureBatchValidationError
from azure.cosmosdb.table.tablebatch import TableBatch
from azure.cosmosdb.table.tableservice import TableService
from transcript import CONN, attempt, out, table  # type: ignore[import-not-found]

service = TableService(connection_string=CONN)
service.retry = no_retry  # the legacy SDK retries a failed batch (its response is a 202)
name = table("batch")
service.create_table(name)
service.insert_entity(name, {"PartitionKey": "b", "RowKey": "old", "n": 1})
service.insert_entity(name, {"PartitionKey": "b", "RowKey": "merge-me", "a": 1})

batch = TableBatch()
batch.insert_entity({"PartitionKey": "b", "RowKey": "1", "description": "one", "n": 1})
batch.insert_or_replace_entity({"PartitionKey": "b", "RowKey": "2", "n": 2})
batch.insert_or_merge_entity({"PartitionKey": "b", "RowKey": "3", "n": 3})
batch.update_entity({"PartitionKey": "b", "RowKey": "old", "n": 10})
batch.merge_entity({"PartitionKey": "b", "RowKey": "merge-me", "b": 2})
out("commit_batch", service.commit_batch(name, batch))
out("after batch", list(service.query_entities(name, filter="PartitionKey eq 'b'")))

batch = TableBatch()
batch.delete_entity("b", "1")
batch.delete_entity("b", "2")
out("commit_batch deletes", service.commit_batch(name, batch))

with service.batch(name) as ctx:
    ctx.insert_entity({"PartitionKey": "c", "RowKey": "1"})
    ctx.insert_entity({"PartitionKey": "c", "RowKey": "2", "n": 2})
out("after with-batch", list(service.query_entities(name, filter="PartitionKey eq 'c'")))

try:
    with service.batch(name) as ctx:
        ctx.insert_entity({"PartitionKey": "c", "RowKey": "3"})
        raise RuntimeError("changed my mind")
except RuntimeError:
    pass
attempt(
    "a with-batch left by an exception is not committed", lambda: service.get_entity(name, "c", "3")
)

failing = TableBatch()
failing.insert_entity({"PartitionKey": "c", "RowKey": "4"})
failing.insert_entity({"PartitionKey": "c", "RowKey": "1"})  # exists: the batch fails
attempt("failing batch", lambda: service.commit_batch(name, failing))
try:
    service.commit_batch(name, failing)
except AzureBatchOperationError as exc:
    out("failing batch caught", [exc.status_code, exc.code, isinstance(exc, AzureException)])
attempt("nothing of the failed batch applied", lambda: service.get_entity(name, "c", "4"))

missing = TableBatch()
missing.update_entity({"PartitionKey": "c", "RowKey": "nosuch", "n": 1})
attempt("update of a missing entity in a batch", lambda: service.commit_batch(name, missing))
stale = TableBatch()
stale.delete_entity("c", "1", if_match="W/\"datetime'2000-01-01T00%3A00%3A00.0000000Z'\"")
attempt("stale etag in a batch", lambda: service.commit_batch(name, stale))


def two_partitions() -> None:
    b = TableBatch()
    b.insert_entity({"PartitionKey": "x", "RowKey": "1"})
    b.insert_entity({"PartitionKey": "y", "RowKey": "1"})


def same_row() -> None:
    b = TableBatch()
    b.insert_entity({"PartitionKey": "x", "RowKey": "1"})
    b.delete_entity("x", "1")


def too_many() -> None:
    b = TableBatch()
    for i in range(101):
        b.insert_entity({"PartitionKey": "x", "RowKey": str(i)})


for check in (two_partitions, same_row, too_many):
    attempt(check.__name__, check)
try:
    two_partitions()
except AzureBatchValidationError:
    out("AzureBatchValidationError caught", True)
full = TableBatch()
for i in range(100):
    full.insert_entity({"PartitionKey": "full", "RowKey": f"{i:03}"})
out("a full batch of 100", len(service.commit_batch(name, full)))
service.delete_table(name)
