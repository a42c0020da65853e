"""The azure-data-tables spellings azt accepts (azt._core.spellings and the clients), and
the refusals that name azt's spelling where one cannot be taken."""

from __future__ import annotations

import copy
import json
import pickle
import urllib.parse
from datetime import UTC, datetime

import pytest
from azure.core import MatchConditions
from azure.core.credentials import AzureNamedKeyCredential
from azure.data.tables import EdmType as AdtEdmType
from azure.data.tables import EntityProperty as AdtEntityProperty
from azure.data.tables import TableSasPermissions, TransactionOperation
from azure.data.tables import UpdateMode as AdtUpdateMode
from azure.data.tables import generate_table_sas as adt_generate_table_sas

import azt
from azt import (
    BatchValidationError,
    EntityMetadata,
    PreconditionFailedError,
    ResponseMetadata,
    TableItem,
    UpdateMode,
    ValidationError,
)
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt._core.queries import select_names
from azt._core.spellings import add_transaction_tuple, if_match, merge_filter, split_table_url
from azt.entity import Entity

# -- TableItem ------------------------------------------------------------------------------


def test_table_item_is_the_name_as_a_str() -> None:
    item = TableItem("movies")
    assert item == "movies"
    assert item.name == "movies"
    assert type(item.name) is str
    assert hash(item) == hash("movies")
    assert repr(item) == "'movies'"
    assert json.dumps([item]) == '["movies"]'
    assert f"{item}" == "movies"
    restored = pickle.loads(pickle.dumps(item))
    assert type(restored) is TableItem
    assert restored.name == "movies"
    assert copy.copy(item) == "movies"
    with pytest.raises(AttributeError):
        item.other = 1  # type: ignore[attr-defined]


async def test_list_and_query_tables_yield_table_items(service: azt.TableServiceClient) -> None:
    await service.create_table("alpha")
    await service.create_table("beta")
    listed = await service.list_tables().to_list()
    assert {t.name for t in listed} >= {"alpha", "beta"}
    assert all(type(t) is TableItem for t in listed)
    queried = await service.query_tables(
        query_filter="TableName eq @n", parameters={"n": "beta"}
    ).to_list()
    assert [t.name for t in queried] == ["beta"]
    assert queried == ["beta"]  # still compares as the list of names it always was
    with pytest.raises(ValidationError, match="query_filter"):
        service.query_tables("TableName eq 'a'", query_filter="TableName eq 'b'")


# -- metadata as a mapping -------------------------------------------------------------------


def test_entity_metadata_reads_as_a_mapping() -> None:
    meta = ResponseMetadata(etag='W/"1"', request_id="r1")
    assert meta["etag"] == meta.etag == 'W/"1"'
    assert meta.get("timestamp") is None
    assert meta["request_id"] == "r1"
    assert dict(meta) == {"etag": 'W/"1"', "timestamp": None, "request_id": "r1"}
    assert "etag" in meta
    assert "id" not in meta
    with pytest.raises(KeyError):
        meta["id"]
    assert len(EntityMetadata()) == 2
    assert EntityMetadata(etag="a") == EntityMetadata(etag="a")  # attrs equality kept
    assert EntityMetadata(etag="a") != EntityMetadata(etag="b")
    assert hash(EntityMetadata(etag="a")) == hash(EntityMetadata(etag="a"))
    with pytest.raises(TypeError):
        meta["etag"] = "x"  # type: ignore[index]


async def test_a_read_entity_metadata_etag_and_timestamp(table: azt.TableClient) -> None:
    await table.create_entity({"PartitionKey": "p", "RowKey": "r"})
    entity = await table.get_entity("p", "r")
    assert entity.metadata["etag"] == entity.metadata.etag
    assert entity.metadata["timestamp"] == entity.metadata.timestamp
    listed = (await table.list_entities().to_list())[0]
    assert listed.metadata["etag"] == entity.metadata.etag


# -- create_entity, query_filter, select ---------------------------------------------------


async def test_create_entity_is_insert_entity(table: azt.TableClient) -> None:
    result = await table.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
    assert result.etag is not None
    with pytest.raises(azt.EntityAlreadyExistsError):
        await table.create_entity({"PartitionKey": "p", "RowKey": "r"})
    echoed = await table.create_entity({"PartitionKey": "p", "RowKey": "s"}, return_content=True)
    assert echoed.entity is not None
    assert echoed.entity["RowKey"] == "s"


async def test_query_filter_keyword_and_select_string(table: azt.TableClient) -> None:
    for i in range(3):
        await table.create_entity({"PartitionKey": "p", "RowKey": str(i), "A": i, "B": "x"})
    rows = await table.query_entities(
        query_filter="A ge @low", parameters={"low": 1}, select="A, B"
    ).to_list()
    assert [dict(r) for r in rows] == [{"A": 1, "B": "x"}, {"A": 2, "B": "x"}]
    with pytest.raises(ValidationError, match="not both"):
        table.query_entities("A eq 1", query_filter="A eq 2")
    one = await table.get_entity("p", "1", select="B")
    assert dict(one) == {"B": "x"}


async def test_select_string_with_an_entity_class(table: azt.TableClient) -> None:
    class Row(Entity):
        A: azt.Prop[int]
        B: azt.Prop[str]

    await table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 7, "B": "b"})
    row = await table.get_entity("p", "r", select="A", entity_class=Row)
    assert row.A == 7


def test_select_names() -> None:
    assert select_names("A,B") == ["A", "B"]
    assert select_names(" A ") == ["A"]
    assert select_names(("A", "B")) == ["A", "B"]
    for bad in ("A,,B", "", ",", ["A,B"], [""]):
        with pytest.raises(ValidationError, match=r"\$select"):
            select_names(bad)


def test_merge_filter() -> None:
    assert merge_filter("a", None, "q()") == "a"
    assert merge_filter(None, "b", "q()") == "b"
    assert merge_filter(None, None, "q()") is None
    with pytest.raises(ValidationError, match=r"q\(\) takes the filter once"):
        merge_filter("a", "b", "q()")


# -- match_condition -------------------------------------------------------------------------


def test_if_match_resolves_azure_core_match_conditions() -> None:
    entity = azt.TableEntity(PartitionKey="p", RowKey="r")
    entity.metadata = EntityMetadata(etag='W/"read"')
    assert if_match(None, None, entity, None, "w") == "*"  # a mapping: unconditional
    assert if_match('W/"e"', None, entity, None, "w") == 'W/"e"'
    assert if_match(None, None, None, 'W/"own"', "w") == 'W/"own"'
    assert if_match(None, MatchConditions.IfNotModified, entity, None, "w") == 'W/"read"'
    assert if_match('W/"e"', MatchConditions.IfNotModified, entity, None, "w") == 'W/"e"'
    assert if_match(None, MatchConditions.IfNotModified, None, 'W/"own"', "w") == 'W/"own"'
    assert if_match(None, MatchConditions.Unconditionally, entity, 'W/"own"', "w") == "*"
    assert if_match("*", MatchConditions.Unconditionally, None, None, "w") == "*"
    with pytest.raises(ValidationError, match=r"IfNotModified needs an ETag.*etag=entity"):
        if_match(None, MatchConditions.IfNotModified, {"PartitionKey": "p"}, None, "w")
    with pytest.raises(ValidationError, match=r"contradictory.*etag= alone"):
        if_match('W/"e"', MatchConditions.Unconditionally, None, None, "w")
    for other in (MatchConditions.IfModified, MatchConditions.IfMissing, "sometimes"):
        with pytest.raises(ValidationError, match=r"means nothing to a Table write.*etag="):
            if_match(None, other, None, None, "w")


async def test_update_and_delete_take_match_condition(table: azt.TableClient) -> None:
    await table.create_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
    entity = await table.get_entity("p", "r")
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "n": 2})  # another writer
    entity["n"] = 3
    with pytest.raises(PreconditionFailedError):
        await table.update_entity(entity, match_condition=MatchConditions.IfNotModified)
    # no condition: as azure-data-tables, a TableEntity update is unconditional
    await table.update_entity(entity)
    assert (await table.get_entity("p", "r"))["n"] == 3
    stale = entity
    with pytest.raises(PreconditionFailedError):
        await table.delete_entity(stale, match_condition=MatchConditions.IfNotModified)
    fresh = await table.get_entity("p", "r")
    await table.delete_entity(fresh, match_condition=MatchConditions.IfNotModified)
    assert await table.list_entities().to_list() == []


async def test_an_entity_object_stays_conditional_by_default(table: azt.TableClient) -> None:
    """The azt default for entity objects (azt.Entity, DynamicEntity) is kept: their ETag
    makes updates and deletes conditional; MatchConditions.Unconditionally overrides it."""

    class Row(Entity):
        n: azt.Prop[int]

    row = Row("p", "r", n=1)
    await table.create_entity(row)
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "n": 2})  # another writer
    row.n = 3
    with pytest.raises(PreconditionFailedError):
        await table.update_entity(row)
    await table.update_entity(row, match_condition=MatchConditions.Unconditionally)
    assert (await table.get_entity("p", "r"))["n"] == 3


# -- transaction tuples ----------------------------------------------------------------------


def _e(rk: str, **props: object) -> dict[str, object]:
    return {"PartitionKey": "p", "RowKey": rk, **props}


def test_transaction_tuples_become_operations() -> None:
    batch = azt.TableBatch("movies")
    add_transaction_tuple(batch, ("create", _e("1")), 0)
    add_transaction_tuple(batch, (TransactionOperation.UPSERT, _e("2")), 1)
    add_transaction_tuple(batch, ("UPDATE", _e("3"), {"mode": AdtUpdateMode.REPLACE}), 2)
    add_transaction_tuple(batch, ("update", _e("4"), {"etag": 'W/"x"', "mode": "merge"}), 3)
    add_transaction_tuple(batch, ("delete", _e("5")), 4)
    ops = batch.operations
    assert [op.kind for op in ops] == ["create", "upsert", "update", "update", "delete"]
    assert ops[1].mode is UpdateMode.MERGE
    assert ops[2].mode is UpdateMode.REPLACE
    assert (ops[2].etag, ops[3].etag, ops[4].etag) == ("*", 'W/"x"', "*")


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (("insert", _e("1")), "unknown transaction operation 'insert'.*table.batch"),
        (("create",), r"\(kind, entity\)"),
        (("create", _e("1"), {}, None), r"got 4 items"),
        (("create", _e("1"), {"mode": "merge"}), "create takes no option 'mode'"),
        (("upsert", _e("1"), {"etag": "x"}), r"upsert takes no option 'etag' \(its options: mode"),
        (("update", _e("1"), {"mode": "patch"}), "mode is UpdateMode.MERGE"),
        (("update", _e("1"), ["mode"]), "mapping of options"),
        (
            ("delete", _e("1"), {"match_condition": MatchConditions.IfNotModified}),
            "IfNotModified needs an ETag",
        ),
    ],
)
def test_transaction_tuple_refusals(item: tuple[object, ...], message: str) -> None:
    batch = azt.TableBatch("movies")
    with pytest.raises(ValidationError, match=message) as info:
        add_transaction_tuple(batch, item, 7)
    if isinstance(info.value, BatchValidationError):
        assert info.value.index == 7
    assert batch.operations == []


async def test_submit_transaction_takes_tuples(table: azt.TableClient) -> None:
    await table.create_entity(_e("2", v=0))
    results = await table.submit_transaction(
        [("create", _e("1", v=1)), ("delete", _e("2")), ("upsert", _e("3", v=3))]
    )
    assert len(results) == 3
    rows = await table.list_entities().to_list()
    assert [(r["RowKey"], r["v"]) for r in rows] == [("1", 1), ("3", 3)]
    with pytest.raises(azt.TransactionError) as info:
        await table.submit_transaction([("upsert", _e("4")), ("create", _e("1"))])
    assert info.value.index == 1
    assert [r["RowKey"] for r in await table.list_entities().to_list()] == ["1", "3"]


# -- SAS from an AzureNamedKeyCredential -----------------------------------------------------


def test_sas_from_an_azure_named_key_credential_signs_as_azure_data_tables() -> None:
    named = AzureNamedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
    expiry = datetime(2030, 1, 1, tzinfo=UTC)
    ours = azt.generate_table_sas(
        named, "movies", permission=azt.TableSasPermissions(read=True), expiry=expiry
    )
    theirs = adt_generate_table_sas(
        named, "movies", permission=TableSasPermissions(read=True), expiry=expiry
    )

    def fields(token: str) -> dict[str, str]:
        return {k: urllib.parse.unquote(v) for k, v in (p.split("=", 1) for p in token.split("&"))}

    assert fields(ours) == fields(theirs)
    keyed = azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
    assert ours == azt.generate_table_sas(keyed, "movies", permission="r", expiry=expiry)
    account = azt.generate_account_sas(named, resource_types="sco", permission="r", expiry=expiry)
    assert account == azt.generate_account_sas(
        keyed, resource_types="sco", permission="r", expiry=expiry
    )
    with pytest.raises(ValidationError, match="AzureNamedKeyCredential, got str"):
        azt.generate_table_sas("key", "movies", permission="r", expiry=expiry)  # type: ignore[arg-type]


# -- what is refused, and that the refusal names azt's spelling ------------------------------


async def test_refusals_name_the_azt_spelling(table: azt.TableClient) -> None:
    with pytest.raises(TypeError, match="'connection_string'"):
        azt.TableServiceClient.from_connection_string(conn_str="UseDevelopmentStorage=true")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'entity'"):
        await table.delete_entity(entity={"PartitionKey": "p", "RowKey": "r"})  # type: ignore[call-overload]
    with pytest.raises(ValidationError, match="Typed"):
        await table.create_entity(
            {"PartitionKey": "p", "RowKey": "r", "n": AdtEntityProperty(5, AdtEdmType.INT64)}
        )
    assert await table.list_entities().to_list() == []
    assert not hasattr(azt.TableClient, "close")  # async clients close with aclose()
    # what azure-data-tables ignores, azt raises (the guide's "Deletes of what is not there")
    with pytest.raises(azt.EntityNotFoundError):
        await table.delete_entity("p", "missing")


# -- from_table_url --------------------------------------------------------------------------


def test_split_table_url() -> None:
    assert split_table_url("https://acct.table.core.windows.net/movies/") == (
        "https://acct.table.core.windows.net",
        "movies",
    )
    assert split_table_url("http://127.0.0.1:10002/devstoreaccount1/movies?sv=1&sig=a%2Fb") == (
        "http://127.0.0.1:10002/devstoreaccount1?sv=1&sig=a%2Fb",
        "movies",
    )
    for bad in ("movies", "ftp://h/movies", "https://acct.table.core.windows.net/", "http:///t"):
        with pytest.raises(ValidationError, match=r"not a table URL.*TableClient\(endpoint"):
            split_table_url(bad)
    with pytest.raises(ValidationError, match="must be a str"):
        split_table_url(b"https://h/t")  # type: ignore[arg-type]


async def test_from_table_url_reaches_the_table(table: azt.TableClient) -> None:
    url = f"{table.endpoint}/{table.table_name}"
    credential = AzureNamedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
    async with azt.TableClient.from_table_url(url, credential=credential) as same:
        assert same.table_name == table.table_name
        await same.create_entity({"PartitionKey": "p", "RowKey": "r"})
    assert [e["RowKey"] for e in await table.list_entities().to_list()] == ["r"]
