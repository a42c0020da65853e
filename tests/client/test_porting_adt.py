"""Porting from azure-data-tables: its snippets, as its docs teach them, run against the stub
twice: unchanged on azure-data-tables, and on azt after exactly the edits
docs/porting-azure-data-tables.md names. Both runs must tell the same story (the values the
snippet records in ``out``).

Each snippet is source text in azure-data-tables' form; its ``edits`` are ``(old, new)``
text replacements, each of which must apply. Most snippets need only their imports changed:
that is the point of the spellings azt accepts (``create_entity``, ``query_filter=``,
``select="A,B"``, ``match_condition=``, transaction tuples, ``TableItem.name``,
``entity.metadata["etag"]``, errors that are azure-core's classes too).
"""

from __future__ import annotations

import ast
import asyncio
import enum
import inspect
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import azure.data.tables as adt_sync
import azure.data.tables.aio as adt_aio
import pytest

import azt
import azt.sync
from azt_server_stub import StubServer

#: The import edits almost every async snippet takes (the guide's first step).
AIO_IMPORTS = [("from azure.data.tables.aio import", "from azt import")]
SYNC_IMPORTS = [("from azure.data.tables import", "from azt.sync import")]
#: azure-data-tables' UpdateMode lives in azt's top-level package (azt.sync re-exports only
#: the blocking clients): the one extra import edit of the snippets that use it.
UPDATE_MODE = [("from azure.data.tables import UpdateMode", "from azt import UpdateMode")]


@dataclass(frozen=True)
class Snippet:
    """An azure-data-tables snippet, the edits that port it, and whether it is blocking."""

    source: str
    edits: list[tuple[str, str]] = field(default_factory=lambda: list(AIO_IMPORTS))
    blocking: bool = False

    def ported(self) -> str:
        text = textwrap.dedent(self.source)
        for old, new in self.edits:
            assert old in text, f"the edit {old!r} does not apply"
            text = text.replace(old, new)
        return text


SNIPPETS: dict[str, Snippet] = {
    "create_table": Snippet(
        """
        from azure.data.tables.aio import TableServiceClient
        from azure.core.exceptions import ResourceExistsError

        async with TableServiceClient.from_connection_string(conn_str) as service:
            table_client = await service.create_table(table_name="myTable")
            out.append(table_client.table_name)
            try:
                await service.create_table(table_name="myTable")
            except ResourceExistsError as error:
                out.append(("exists", error.status_code, error.error_code))
            table_client = await service.create_table_if_not_exists(table_name="myTable")
            out.append(table_client.table_name)
        """
    ),
    "create_and_get_entity": Snippet(
        """
        from azure.data.tables.aio import TableClient

        my_entity = {
            "PartitionKey": "color",
            "RowKey": "brand",
            "text": "Marker",
            "color": "Purple",
            "price": 5,
        }
        async with TableClient.from_connection_string(conn_str, table_name="mytable") as table:
            await table.create_table()
            created = await table.create_entity(entity=my_entity)
            out.append(created["etag"] is not None if isinstance(created, dict) else
                       created.etag is not None)
            got = await table.get_entity(partition_key="color", row_key="brand")
            out.append(dict(got))
            out.append(got.metadata["etag"] is not None)
            out.append(got.metadata["timestamp"].year >= 2020)
        """
    ),
    "upsert_replace_and_merge": Snippet(
        """
        from azure.data.tables.aio import TableClient
        from azure.data.tables import UpdateMode

        entity = {"PartitionKey": "p", "RowKey": "r", "Name": "Marker", "Price": 5.0}
        async with TableClient.from_connection_string(conn_str, table_name="upserts") as table:
            await table.create_table()
            await table.upsert_entity(mode=UpdateMode.REPLACE, entity=entity)
            await table.upsert_entity(
                mode=UpdateMode.MERGE, entity={"PartitionKey": "p", "RowKey": "r", "Stock": 3}
            )
            out.append(dict(await table.get_entity("p", "r")))
            await table.upsert_entity(
                mode=UpdateMode.REPLACE, entity={"PartitionKey": "p", "RowKey": "r", "Stock": 4}
            )
            out.append(dict(await table.get_entity("p", "r")))
        """,
        edits=AIO_IMPORTS + UPDATE_MODE,
    ),
    "update_with_etag": Snippet(
        """
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceModifiedError
        from azure.data.tables.aio import TableClient
        from azure.data.tables import UpdateMode

        async with TableClient.from_connection_string(conn_str, table_name="etags") as table:
            await table.create_table()
            await table.create_entity({"PartitionKey": "p", "RowKey": "r", "Count": 1})
            entity = await table.get_entity("p", "r")
            entity["Count"] = 2
            await table.update_entity(
                mode=UpdateMode.MERGE,
                entity=entity,
                etag=entity.metadata["etag"],
                match_condition=MatchConditions.IfNotModified,
            )
            entity["Count"] = 3  # entity still carries the first ETag: the write must fail
            try:
                await table.update_entity(
                    entity, match_condition=MatchConditions.IfNotModified
                )
            except ResourceModifiedError as error:
                out.append(("modified", error.status_code, error.error_code))
            out.append((await table.get_entity("p", "r"))["Count"])
            # neither: unconditional, as azure-data-tables' default
            await table.update_entity(entity, mode=UpdateMode.REPLACE)
            out.append((await table.get_entity("p", "r"))["Count"])
        """,
        edits=AIO_IMPORTS + UPDATE_MODE,
    ),
    "delete_entity": Snippet(
        """
        from azure.data.tables.aio import TableClient

        async with TableClient.from_connection_string(conn_str, table_name="deletes") as table:
            await table.create_table()
            await table.create_entity({"PartitionKey": "p", "RowKey": "1"})
            await table.create_entity({"PartitionKey": "p", "RowKey": "2"})
            await table.delete_entity(partition_key="p", row_key="1")
            entity = await table.get_entity("p", "2")
            await table.delete_entity(entity)
            out.append([e["RowKey"] async for e in table.list_entities()])
        """
    ),
    "delete_missing_entity": Snippet(
        # azure-data-tables ignores the 404 of a delete; azt raises it. The guide's edit:
        # suppress the azt error where the old code relied on the silence.
        """
        from azure.data.tables.aio import TableClient

        async with TableClient.from_connection_string(conn_str, table_name="gone") as table:
            await table.create_table()
            await table.delete_entity(partition_key="p", row_key="missing")
            out.append("deleted or absent")
        """,
        edits=[
            *AIO_IMPORTS,
            (
                '    await table.delete_entity(partition_key="p", row_key="missing")\n',
                "    with contextlib.suppress(EntityNotFoundError):\n"
                '        await table.delete_entity(partition_key="p", row_key="missing")\n',
            ),
            (
                "from azt import TableClient",
                "import contextlib\nfrom azt import EntityNotFoundError, TableClient",
            ),
        ],
    ),
    "query_with_parameters": Snippet(
        """
        from azure.data.tables.aio import TableClient

        async with TableClient.from_connection_string(conn_str, table_name="products") as table:
            await table.create_table()
            for i, name in enumerate(["marker", "pen", "marker", "O'Brien"]):
                await table.create_entity(
                    {"PartitionKey": "p", "RowKey": str(i), "Name": name, "Brand": "b%d" % i,
                     "Color": "c%d" % i, "Price": 1.5 * i}
                )
            parameters = {"name": "marker"}
            name_filter = "Name eq @name"
            queried = table.query_entities(
                query_filter=name_filter, select=["Brand", "Color"], parameters=parameters
            )
            out.append(sorted([sorted(e.items()) async for e in queried]))
            quoted = table.query_entities("Name eq @n and Price ge @low",
                                          parameters={"n": "O'Brien", "low": 1})
            out.append([e["RowKey"] async for e in quoted])
            paged = table.query_entities("PartitionKey eq 'p'", results_per_page=2)
            pages = [[e["RowKey"] async for e in page] async for page in paged.by_page()]
            out.append(pages)
        """,
        edits=[
            *AIO_IMPORTS,
            # azt's pages are plain lists (already fetched): a page is iterated with for
            (
                '[[e["RowKey"] async for e in page] async for page',
                '[[e["RowKey"] for e in page] async for page',
            ),
        ],
    ),
    "list_and_select": Snippet(
        """
        from azure.data.tables.aio import TableClient

        async with TableClient.from_connection_string(conn_str, table_name="listing") as table:
            await table.create_table()
            for i in range(3):
                await table.create_entity({"PartitionKey": "p", "RowKey": str(i), "A": i,
                                           "B": str(i), "C": True})
            rows = [dict(e) async for e in table.list_entities(select="A,B")]
            out.append(rows)
        """
    ),
    "list_and_query_tables": Snippet(
        """
        from azure.data.tables.aio import TableServiceClient

        async with TableServiceClient.from_connection_string(conn_str) as service:
            for name in ["alpha", "beta", "gamma"]:
                await service.create_table(name)
            out.append(sorted([table.name async for table in service.list_tables()]))
            queried = service.query_tables(
                query_filter="TableName eq @name", parameters={"name": "beta"}
            )
            out.append([table.name async for table in queried])
            await service.delete_table("gamma")
            out.append(sorted([t.name async for t in service.list_tables()]))
        """
    ),
    "transaction": Snippet(
        """
        from azure.data.tables.aio import TableClient
        from azure.data.tables import TableTransactionError, UpdateMode

        e = lambda rk, **p: {"PartitionKey": "batch", "RowKey": rk, **p}
        async with TableClient.from_connection_string(conn_str, table_name="batches") as table:
            await table.create_table()
            await table.create_entity(e("2", v=0))
            await table.create_entity(e("4", v=0, keep=True))
            operations = [
                ("create", e("1", v=1)),
                ("delete", e("2")),
                ("upsert", e("3", v=3)),
                ("update", e("4", v=4), {"mode": UpdateMode.REPLACE}),
            ]
            results = await table.submit_transaction(operations)
            out.append(len(results))
            out.append(sorted([(x["RowKey"], dict(x)) async for x in table.list_entities()]))
            try:
                await table.submit_transaction([("create", e("1")), ("create", e("9"))])
            except TableTransactionError as error:
                out.append(("failed", error.status_code, error.error_code))
            out.append(sorted([x["RowKey"] async for x in table.list_entities()]))
        """,
        edits=[
            *AIO_IMPORTS,
            (
                "from azure.data.tables import TableTransactionError, UpdateMode",
                "from azt import TransactionError as TableTransactionError, UpdateMode",
            ),
        ],
    ),
    "error_handling": Snippet(
        """
        from azure.core.exceptions import (
            HttpResponseError,
            ResourceExistsError,
            ResourceNotFoundError,
        )
        from azure.data.tables.aio import TableClient

        async with TableClient.from_connection_string(conn_str, table_name="errors") as table:
            try:
                await table.get_entity("p", "r")
            except ResourceNotFoundError as error:
                out.append(("no table", error.status_code))
            await table.create_table()
            try:
                await table.get_entity("p", "r")
            except ResourceNotFoundError as error:
                out.append(("no entity", error.status_code, error.error_code))
            await table.create_entity({"PartitionKey": "p", "RowKey": "r"})
            try:
                await table.create_entity({"PartitionKey": "p", "RowKey": "r"})
            except ResourceExistsError as error:
                out.append(("exists", error.status_code))
            try:
                await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "bad name": 1})
            except (HttpResponseError, ValueError) as error:
                out.append(("refused", isinstance(error, (HttpResponseError, ValueError))))
        """
    ),
    "table_url_and_sas": Snippet(
        """
        from datetime import datetime, timedelta, timezone

        from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
        from azure.core.exceptions import HttpResponseError
        from azure.data.tables.aio import TableClient, TableServiceClient
        from azure.data.tables import TableSasPermissions, generate_table_sas

        async with TableServiceClient.from_connection_string(conn_str) as service:
            await service.create_table("shared")
        sas = generate_table_sas(
            AzureNamedKeyCredential(account_name, account_key),
            "shared",
            permission=TableSasPermissions(read=True, add=True),
            expiry=datetime.now(timezone.utc) + timedelta(hours=1),
        )
        table_url = endpoint + "/shared"
        async with TableClient.from_table_url(table_url, credential=AzureSasCredential(sas)) as t:
            await t.create_entity({"PartitionKey": "p", "RowKey": "r"})
            out.append([e["RowKey"] async for e in t.list_entities()])
            try:
                await t.delete_entity("p", "r")  # the SAS grants read and add only
            except HttpResponseError as error:
                out.append(error.status_code)
        async with TableClient.from_table_url(table_url + "?" + sas) as t:  # SAS in the URL
            out.append([e["RowKey"] async for e in t.list_entities()])
        """,
        edits=[
            *AIO_IMPORTS,
            (
                "from azure.data.tables import TableSasPermissions, generate_table_sas",
                "from azt import TableSasPermissions, generate_table_sas",
            ),
        ],
    ),
    "sync_crud": Snippet(
        """
        from azure.data.tables import TableServiceClient, UpdateMode
        from azure.core.exceptions import ResourceNotFoundError

        with TableServiceClient.from_connection_string(conn_str) as service:
            table = service.create_table_if_not_exists("syncTable")
            table.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
            table.update_entity({"PartitionKey": "p", "RowKey": "r", "m": 2}, mode=UpdateMode.MERGE)
            out.append(dict(table.get_entity("p", "r")))
            out.append([e["RowKey"] for e in table.query_entities(query_filter="n eq 1")])
            out.append([t.name for t in service.list_tables()])
            table.delete_entity("p", "r")
            try:
                table.get_entity("p", "r")
            except ResourceNotFoundError as error:
                out.append(error.status_code)
        """,
        edits=[
            (
                "from azure.data.tables import TableServiceClient, UpdateMode",
                "from azt import UpdateMode\nfrom azt.sync import TableServiceClient",
            )
        ],
        blocking=True,
    ),
    "sync_credentials": Snippet(
        """
        from azure.core.credentials import AzureNamedKeyCredential
        from azure.data.tables import TableServiceClient

        credential = AzureNamedKeyCredential(account_name, account_key)
        with TableServiceClient(endpoint=endpoint, credential=credential) as service:
            service.create_table("keyed")
            out.append([t.name for t in service.list_tables()])
        """,
        edits=SYNC_IMPORTS,
        blocking=True,
    ),
}


def _plain(value: Any) -> Any:
    """``value`` with each SDK's own types reduced to plain data (dict subclasses, the
    str-enum error codes, tuples and lists)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, enum.Enum):  # azure-data-tables' TableErrorCode (a str enum)
        return value.value
    if isinstance(value, str):
        return str(value)
    return value


async def _run(source: str, stub: StubServer, *, blocking: bool) -> list[Any]:
    endpoint = stub.connection_string.split("TableEndpoint=")[1].split(";")[0]
    out: list[Any] = []
    ns: dict[str, Any] = {
        "conn_str": stub.connection_string,
        "endpoint": endpoint,
        "account_name": "devstoreaccount1",
        "account_key": stub.connection_string.split("AccountKey=")[1].split(";")[0],
        "out": out,
        "__name__": "snippet",
    }
    if blocking:
        code = compile(source, "<snippet>", "exec")
        await asyncio.to_thread(exec, code, ns)
    else:
        code = compile(source, "<snippet>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(code, ns)  # the test's own snippets
        if inspect.iscoroutine(result):
            await result
    plain: list[Any] = _plain(out)
    return plain


def test_the_snippets_are_a_dozen_or_more() -> None:
    assert len(SNIPPETS) >= 12
    assert sum(s.blocking for s in SNIPPETS.values()) >= 2


@pytest.mark.parametrize("name", sorted(SNIPPETS))
async def test_snippet_agrees_on_both_sdks(name: str) -> None:
    snippet = SNIPPETS[name]
    original = textwrap.dedent(snippet.source)
    ported = snippet.ported()
    assert "azure.data.tables" not in ported, "the port still imports azure-data-tables"
    async with StubServer() as stub:
        theirs = await _run(original, stub, blocking=snippet.blocking)
    async with StubServer() as stub:
        ours = await _run(ported, stub, blocking=snippet.blocking)
    assert ours == theirs
    assert ours, "the snippet recorded nothing"


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "porting-azure-data-tables.md"


def _public_members(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


@pytest.mark.parametrize(
    "cls",
    [
        adt_sync.TableServiceClient,
        adt_sync.TableClient,
        adt_aio.TableServiceClient,
        adt_aio.TableClient,
    ],
    ids=lambda cls: f"{cls.__module__.split('.')[-1]}.{cls.__name__}",
)
def test_the_guide_names_every_public_member_of_azure_data_tables_clients(cls: type) -> None:
    """The side-by-side tables cover the installed azure-data-tables' whole client surface:
    a member it grows shows up here as a gap in the guide."""
    text = GUIDE.read_text(encoding="utf-8")
    missing = sorted(n for n in _public_members(cls) if not _named_in_a_table(n, text))
    assert missing == []


def _named_in_a_table(name: str, text: str) -> bool:
    """``name`` appears as a call (``name(`` or ``X.name(``) or a property (``.name``)
    inside backquotes on a table row of the guide."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    pattern = re.compile(rf"`[^`]*\b{re.escape(name)}(\(|`)")
    return any(pattern.search(row) for row in rows)


#: The azt methods the guide's tables name (the azt column), each checked to exist.
AZT_METHODS = {
    "TableServiceClient": [
        "create_table",
        "create_table_if_not_exists",
        "delete_table_if_exists",
        "list_tables",
        "query_tables",
        "get_table_client",
        "get_service_properties",
        "set_service_properties",
        "get_service_stats",
        "with_options",
    ],
    "TableClient": [
        "create_table",
        "delete_table_if_exists",
        "create_entity",
        "insert_entity",
        "upsert_entity",
        "update_entity",
        "delete_entity",
        "get_entity",
        "list_entities",
        "query_entities",
        "submit_transaction",
        "batch",
        "batch_writer",
        "get_access_policy",
        "set_access_policy",
        "with_options",
    ],
}


@pytest.mark.parametrize("class_name", sorted(AZT_METHODS))
def test_every_azt_method_the_guide_names_exists(class_name: str) -> None:
    """The azt column names real methods, of the async client and its blocking twin."""
    text = GUIDE.read_text(encoding="utf-8")
    for name in AZT_METHODS[class_name]:
        assert _named_in_a_table(name, text) or re.search(rf"`{name}\(", text), name
        assert callable(getattr(getattr(azt, class_name), name)), name
        assert callable(getattr(getattr(azt.sync, class_name), name)), name
    assert callable(azt.TableClient.aclose)
    assert callable(azt.sync.TableClient.close)
