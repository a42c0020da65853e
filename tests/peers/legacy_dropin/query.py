"""Queries: filter, select, num_results, marker paging over more than 1000 entities."""

from azure.cosmosdb.table.tablebatch import TableBatch
from azure.cosmosdb.table.tableservice import TableService
from transcript import CONN, out, table  # type: ignore[import-not-found]

service = TableService(connection_string=CONN)
name = table("query")
service.create_table(name)
for part in range(11):  # 1100 entities in 11 batches of 100
    batch = TableBatch()
    for i in range(100):
        batch.insert_entity(
            {
                "PartitionKey": "big",
                "RowKey": f"{part:02}{i:03}",
                "n": part * 100 + i,
                "odd": i % 2 == 1,
                "label": f"item {i}",
            }
        )
    service.commit_batch(name, batch)
for i in range(5):
    service.insert_entity(name, {"PartitionKey": "small", "RowKey": str(i), "n": i})

everything = list(service.query_entities(name))
out("all entities count", len(everything))
out("first and last", [everything[0].RowKey, everything[-1].RowKey])
out("keys of one", sorted(everything[0].keys()))
gen = service.query_entities(name, filter="PartitionKey eq 'small'")
out("small partition", list(gen))
out("small partition next_marker", gen.next_marker)
out(
    "filter on Int64",
    [e.RowKey for e in service.query_entities(name, filter="PartitionKey eq 'big' and n ge 1095L")],
)
out(
    "filter on bool and int",
    len(list(service.query_entities(name, filter="odd eq true and n lt 200L"))),
)
out(
    "select",
    list(service.query_entities(name, filter="PartitionKey eq 'small'", select="RowKey,n")),
)
out(
    "select missing property",
    list(
        service.query_entities(
            name, filter="PartitionKey eq 'small' and RowKey eq '1'", select="nosuch"
        )
    ),
)
out("no match", list(service.query_entities(name, filter="n eq -1L")))

page = service.query_entities(name, num_results=7)
rows = list(page)
out("num_results 7", [e.RowKey for e in rows])
out("num_results 7 next_marker", page.next_marker)
page2 = service.query_entities(name, num_results=7, marker=page.next_marker)
out("next page", [e.RowKey for e in page2])
out("next page next_marker", page2.next_marker)

page = service.query_entities(name, num_results=1000)
out("num_results 1000", len(list(page)))
out("num_results 1000 next_marker", page.next_marker)
rest = service.query_entities(name, marker=page.next_marker)
rest_rows = list(rest)
out("rest", [len(rest_rows), rest_rows[0].RowKey, rest_rows[-1].RowKey])
out("rest next_marker", rest.next_marker)

seen, marker, pages = 0, None, 0
while True:
    chunk = service.query_entities(
        name, filter="PartitionKey eq 'big'", num_results=300, marker=marker
    )
    seen += len(list(chunk))
    pages += 1
    marker = chunk.next_marker
    if not marker:
        break
out("manual paging by 300", [seen, pages])
out(
    "iterating with num_results beyond one page",
    len(list(service.query_entities(name, filter="PartitionKey eq 'big'", num_results=1000))),
)
service.delete_table(name)
