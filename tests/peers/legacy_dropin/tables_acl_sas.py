"""Tables (create, list with num_results/marker, exists, delete), ACLs and table SAS."""

from datetime import datetime, timedelta

from azure.common import AzureException
from azure.cosmosdb.table.common.models import AccessPolicy
from azure.cosmosdb.table.models import TablePermissions
from azure.cosmosdb.table.tableservice import TableService
from transcript import CONN, PREFIX, attempt, out, table  # type: ignore[import-not-found]

service = TableService(connection_string=CONN)
names = [table(f"t{i}") for i in range(5)]
out("create", [service.create_table(n) for n in names])
mine = sorted(t.name[len(PREFIX) :] for t in service.list_tables() if t.name.startswith(PREFIX))
out("list_tables", mine)
first = service.list_tables(num_results=2)
out("list_tables num_results", len(list(first)))
out("list_tables next_marker is a string", isinstance(first.next_marker, str))
out("list_tables from marker", len(list(service.list_tables(marker=first.next_marker))) > 0)

acl_table = names[0]
out("get_table_acl empty", service.get_table_acl(acl_table))
expiry = datetime(2099, 1, 1, 0, 0, 0)
start = datetime(2020, 1, 1, 0, 0, 0)
service.set_table_acl(
    acl_table,
    {
        "readers": AccessPolicy(permission=TablePermissions.QUERY, expiry=expiry, start=start),
        "writers": AccessPolicy(
            permission=TablePermissions.ADD + TablePermissions.UPDATE, expiry=expiry
        ),
    },
)
acl = service.get_table_acl(acl_table)
out("acl ids", sorted(acl))
out("acl readers", [acl["readers"].permission, acl["readers"].start, acl["readers"].expiry])
out("acl writers", [acl["writers"].permission, acl["writers"].start, acl["writers"].expiry])
attempt(
    "six policies",
    lambda: service.set_table_acl(
        acl_table, {str(i): AccessPolicy(permission="r", expiry=expiry) for i in range(6)}
    ),
)
try:
    service.set_table_acl(acl_table, {str(i): AccessPolicy() for i in range(6)})
except AzureException:
    out("six policies caught as AzureException", True)
attempt("acl of a missing table", lambda: service.get_table_acl(table("nosuch")))

service.insert_entity(acl_table, {"PartitionKey": "p", "RowKey": "1", "n": 1})
endpoint = next(p for p in CONN.split(";") if p.startswith("TableEndpoint="))


def sas_client(token: str) -> TableService:
    return TableService(connection_string=f"{endpoint};SharedAccessSignature={token}")


read_token = service.generate_table_shared_access_signature(
    acl_table, TablePermissions.QUERY, expiry=datetime.utcnow() + timedelta(hours=1)
)
out("sas token is a string", isinstance(read_token, str) and "sig=" in read_token)
reader = sas_client(read_token)
out("sas read", reader.get_entity(acl_table, "p", "1"))
out("sas query", list(reader.query_entities(acl_table)))
attempt(
    "sas write denied",
    lambda: reader.insert_entity(acl_table, {"PartitionKey": "p", "RowKey": "2"}),
)
attempt("sas other table denied", lambda: reader.get_entity(names[1], "p", "1"))

policy_reader = sas_client(service.generate_table_shared_access_signature(acl_table, id="writers"))
out(
    "sas by stored policy: add",
    policy_reader.insert_entity(acl_table, {"PartitionKey": "p", "RowKey": "3"}),
)
attempt("sas by stored policy: query denied", lambda: policy_reader.get_entity(acl_table, "p", "1"))
ranged = sas_client(
    service.generate_table_shared_access_signature(
        acl_table,
        TablePermissions.QUERY,
        expiry=datetime.utcnow() + timedelta(hours=1),
        start_pk="p",
        start_rk="1",
        end_pk="p",
        end_rk="1",
    )
)
out("sas key range inside", ranged.get_entity(acl_table, "p", "1").RowKey)
attempt("sas key range outside", lambda: ranged.get_entity(acl_table, "p", "3"))
expired = sas_client(
    service.generate_table_shared_access_signature(
        acl_table, TablePermissions.QUERY, expiry=datetime.utcnow() - timedelta(hours=1)
    )
)
attempt("expired sas", lambda: expired.get_entity(acl_table, "p", "1"))
attempt("no credentials", lambda: TableService())

service.set_table_acl(acl_table, None)
out("acl cleared", service.get_table_acl(acl_table))
out("delete", [service.delete_table(n) for n in names])
out("exists after delete", [service.exists(n) for n in names])
