"""Conditional updates and deletes with if_match, and the errors raised."""

from azure.common import AzureHttpError
from azure.cosmosdb.table.tableservice import TableService
from transcript import CONN, attempt, out, table  # type: ignore[import-not-found]

service = TableService(connection_string=CONN)
name = table("cond")
service.create_table(name)
etag = service.insert_entity(name, {"PartitionKey": "a", "RowKey": "1", "v": 1})
entity = service.get_entity(name, "a", "1")
out("insert etag is the read etag", etag == entity.etag)

new_etag = service.update_entity(name, {"PartitionKey": "a", "RowKey": "1", "v": 2}, if_match=etag)
out("update with the current etag", new_etag)
out("etag changed", new_etag != etag)
attempt(
    "update with the old etag",
    lambda: service.update_entity(
        name, {"PartitionKey": "a", "RowKey": "1", "v": 3}, if_match=etag
    ),
)
attempt(
    "merge with the old etag",
    lambda: service.merge_entity(name, {"PartitionKey": "a", "RowKey": "1", "w": 3}, if_match=etag),
)
try:
    service.delete_entity(name, "a", "1", if_match=etag)
except AzureHttpError as exc:
    out("delete with the old etag", [type(exc).__name__, exc.status_code])
out("still there", service.get_entity(name, "a", "1"))
merged = service.merge_entity(name, {"PartitionKey": "a", "RowKey": "1", "w": 4}, if_match=new_etag)
out("merge with the current etag", merged)
out("delete with the current etag", service.delete_entity(name, "a", "1", if_match=merged))
attempt("gone", lambda: service.get_entity(name, "a", "1"))
attempt(
    "conditional update of a missing entity",
    lambda: service.update_entity(
        name, {"PartitionKey": "a", "RowKey": "1", "v": 5}, if_match=merged
    ),
)
attempt(
    "conditional delete of a missing entity",
    lambda: service.delete_entity(name, "a", "1", if_match=merged),
)
attempt("unconditional delete of a missing entity", lambda: service.delete_entity(name, "a", "1"))
attempt("if_match None", lambda: service.delete_entity(name, "a", "1", if_match=None))
service.delete_table(name)
