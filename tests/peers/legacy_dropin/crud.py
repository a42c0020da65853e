"""Basic CRUD and the return values of each call (legacy SDK text)."""

from azure.common import AzureConflictHttpError, AzureMissingResourceHttpError
from azure.cosmosdb.table.models import Entity
from azure.cosmosdb.table.tableservice import TableService
from transcript import CONN, attempt, out, table  # type: ignore[import-not-found]

service = TableService(connection_string=CONN)
name = table("crud")
out("create_table", service.create_table(name))
out("create_table again", service.create_table(name))
attempt("create_table fail_on_exist", lambda: service.create_table(name, fail_on_exist=True))
out("exists", service.exists(name))
out("exists missing", service.exists(table("nosuch")))

task = Entity()
task.PartitionKey = "tasksSeattle"
task.RowKey = "001"
task.description = "Take out the trash"
task.priority = 200
out("insert_entity", service.insert_entity(name, task))
attempt("insert_entity duplicate", lambda: service.insert_entity(name, task))
try:
    service.insert_entity(name, task)
except AzureConflictHttpError as exc:
    out("conflict is caught as AzureConflictHttpError", exc.status_code)

got = service.get_entity(name, "tasksSeattle", "001")
out("get_entity", got)
out("attribute access", [got.description, got.priority, got.etag is not None])
out("get_entity select", service.get_entity(name, "tasksSeattle", "001", select="description"))
attempt("get_entity missing", lambda: service.get_entity(name, "tasksSeattle", "999"))
try:
    service.get_entity(name, "nobody", "none")
except AzureMissingResourceHttpError as exc:
    out("missing is caught as AzureMissingResourceHttpError", exc.status_code)

replacement = {"PartitionKey": "tasksSeattle", "RowKey": "001", "description": "Replaced"}
out("update_entity", service.update_entity(name, replacement))
out("after update", service.get_entity(name, "tasksSeattle", "001"))
out(
    "merge_entity",
    service.merge_entity(
        name, {"PartitionKey": "tasksSeattle", "RowKey": "001", "priority": 100, "done": False}
    ),
)
out("after merge", service.get_entity(name, "tasksSeattle", "001"))
attempt(
    "update_entity missing",
    lambda: service.update_entity(name, {"PartitionKey": "x", "RowKey": "y"}),
)
attempt(
    "merge_entity missing", lambda: service.merge_entity(name, {"PartitionKey": "x", "RowKey": "y"})
)

out(
    "insert_or_replace_entity new",
    service.insert_or_replace_entity(
        name,
        {"PartitionKey": "tasksSeattle", "RowKey": "002", "description": "Buy milk", "size": 1},
    ),
)
out(
    "insert_or_replace_entity existing",
    service.insert_or_replace_entity(
        name, {"PartitionKey": "tasksSeattle", "RowKey": "002", "description": "Buy bread"}
    ),
)
out("after insert_or_replace", service.get_entity(name, "tasksSeattle", "002"))
out(
    "insert_or_merge_entity existing",
    service.insert_or_merge_entity(
        name, {"PartitionKey": "tasksSeattle", "RowKey": "002", "size": 3}
    ),
)
out(
    "insert_or_merge_entity new",
    service.insert_or_merge_entity(
        name, {"PartitionKey": "tasksSeattle", "RowKey": "003", "size": 4}
    ),
)
out("after insert_or_merge", service.get_entity(name, "tasksSeattle", "002"))

out("read-modify-write keeps working", service.update_entity(name, got))
out("delete_entity", service.delete_entity(name, "tasksSeattle", "001"))
attempt("delete_entity again", lambda: service.delete_entity(name, "tasksSeattle", "001"))
attempt("insert without RowKey", lambda: service.insert_entity(name, {"PartitionKey": "p"}))
attempt("insert a list", lambda: service.insert_entity(name, [("PartitionKey", "p")]))
attempt("insert into a missing table", lambda: service.insert_entity(table("nosuch"), task))
attempt("get from a missing table", lambda: service.get_entity(table("nosuch"), "a", "b"))
out("delete_table", service.delete_table(name))
out("delete_table again", service.delete_table(name))
attempt("delete_table fail_not_exist", lambda: service.delete_table(name, fail_not_exist=True))
