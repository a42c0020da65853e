"""Typed properties of every EDM type, written natively and as EntityProperty, read back."""

import uuid
from datetime import datetime, timedelta, timezone

from azure.cosmosdb.table.models import EdmType, EntityProperty
from azure.cosmosdb.table.tableservice import TableService
from transcript import CONN, attempt, out, table  # type: ignore[import-not-found]

service = TableService(connection_string=CONN)
name = table("types")
service.create_table(name)
guid = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
native = {
    "PartitionKey": "p",
    "RowKey": "native",
    "text": "héllo",
    "empty": "",
    "small": 7,
    "big": 2**40,
    "negative": -5,
    "ratio": 0.5,
    "whole": 2.0,
    "flag": True,
    "off": False,
    "when": datetime(2021, 6, 1, 12, 30, 45),
    "aware": datetime(2021, 6, 1, 14, 30, 45, tzinfo=timezone(timedelta(hours=2))),
    "nothing": None,
}
out("insert native", service.insert_entity(name, native))
out("native read back", service.get_entity(name, "p", "native"))
typed = {
    "PartitionKey": "p",
    "RowKey": "typed",
    "i32": EntityProperty(EdmType.INT32, 42),
    "i32max": EntityProperty(EdmType.INT32, 2**31 - 1),
    "i64": EntityProperty(EdmType.INT64, 9007199254740993),
    "i64min": EntityProperty(EdmType.INT64, -(2**63)),
    "dbl": EntityProperty(EdmType.DOUBLE, 3.25),
    "nan": EntityProperty(EdmType.DOUBLE, float("nan")),
    "inf": EntityProperty(EdmType.DOUBLE, float("inf")),
    "guid": EntityProperty(EdmType.GUID, guid),
    "guid_text": EntityProperty(EdmType.GUID, str(guid)),
    "bin": EntityProperty(EdmType.BINARY, b"\x00\x01binary\xff"),
    "dt": EntityProperty(EdmType.DATETIME, datetime(1999, 12, 31, 23, 59, 59)),
    "yes": EntityProperty(EdmType.BOOLEAN, True),
    "str": EntityProperty(EdmType.STRING, "typed text"),
}
out("insert typed", service.insert_entity(name, typed))
back = service.get_entity(name, "p", "typed")
out("typed read back", back)
out("guid compares as text", back["guid"].value == str(guid))
out("write back what was read", service.update_entity(name, back))
out("typed read back again", service.get_entity(name, "p", "typed"))
out("query typed", list(service.query_entities(name, filter="RowKey eq 'typed'")))
out(
    "filter on Int64",
    [e.RowKey for e in service.query_entities(name, filter="i64 eq 9007199254740993L")],
)
out(
    "filter on guid",
    [
        e.RowKey
        for e in service.query_entities(
            name, filter="guid eq guid'c9da6455-213d-42c9-9a79-3e9149a57833'"
        )
    ],
)
out(
    "filter on datetime",
    [
        e.RowKey
        for e in service.query_entities(name, filter="when eq datetime'2021-06-01T12:30:45Z'")
    ],
)
attempt(
    "Int32 out of range",
    lambda: service.insert_entity(
        name, {"PartitionKey": "p", "RowKey": "bad", "n": EntityProperty(EdmType.INT32, 2**31)}
    ),
)
attempt(
    "Int64 out of range",
    lambda: service.insert_entity(name, {"PartitionKey": "p", "RowKey": "bad", "n": 2**63}),
)
attempt(
    "bytes without EntityProperty",
    lambda: service.insert_entity(name, {"PartitionKey": "p", "RowKey": "bad", "n": b"raw"}),
)
attempt(
    "uuid without EntityProperty",
    lambda: service.insert_entity(name, {"PartitionKey": "p", "RowKey": "bad", "n": guid}),
)
attempt(
    "unknown EdmType",
    lambda: service.insert_entity(
        name, {"PartitionKey": "p", "RowKey": "bad", "n": EntityProperty("Edm.Decimal", 1)}
    ),
)
attempt("nothing was written by the failures", lambda: service.get_entity(name, "p", "bad"))
service.delete_table(name)
