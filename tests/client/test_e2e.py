"""End-to-end: the client against the in-process stub (or AZT_TEST_CONNECTION_STRING)."""

from __future__ import annotations

import asyncio
import math
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

import azt
from azt.edm import EdmDateTime, EdmType, Typed

from .conftest import ClientOptions, unique_table_name

pytestmark = pytest.mark.live


async def test_table_lifecycle(service: azt.TableServiceClient) -> None:
    name = unique_table_name("life")
    table = await service.create_table(name)
    assert table.table_name == name
    with pytest.raises(azt.TableAlreadyExistsError) as info:
        await service.create_table(name)
    assert info.value.request_id
    again = await service.create_table_if_not_exists(name)
    assert again.table_name == name
    assert name in await service.list_tables().to_list()
    await service.delete_table(name)
    with pytest.raises(azt.TableNotFoundError):
        await service.delete_table(name)
    assert await service.delete_table_if_exists(name) is False
    assert await table.create_table_if_not_exists() is True
    assert await table.delete_table_if_exists() is True


async def test_query_tables_follows_next_table_name(service: azt.TableServiceClient) -> None:
    prefix = "pg" + uuid.uuid4().hex[:8]
    names = sorted(f"{prefix}t{i}" for i in range(5))
    for name in names:
        await service.create_table(name)
    try:
        pager = service.query_tables(
            "TableName ge @lo and TableName lt @hi",
            parameters={"lo": prefix, "hi": prefix + "z"},
            results_per_page=2,
        )
        pages = [page async for page in pager.by_page()]
        assert [len(p) for p in pages] == [2, 2, 1]
        assert pages[0].continuation is not None
        assert pages[0].continuation.next_table_name is not None
        assert [n for p in pages for n in p] == names
        assert [n async for n in pager] == names
    finally:
        for name in names:
            await service.delete_table(name)


async def test_every_edm_type_round_trips(table: azt.TableClient) -> None:
    when = EdmDateTime.parse("2021-09-21T07:50:52.3985251Z")
    guid = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")
    entity = {
        "PartitionKey": "types",
        "RowKey": "all",
        "Str": "O'Brien ü 😀",
        "I32": -(2**31),
        "I64": 2**62,
        "SmallI64": Typed(5, EdmType.INT64),
        "Dbl": 2.0,
        "Nan": math.nan,
        "Inf": math.inf,
        "NegInf": -math.inf,
        "Bool": True,
        "When": when,
        "Plain": datetime(2020, 1, 2, 3, 4, 5, 600000, tzinfo=UTC),
        "Id": guid,
        "Bin": b"\x00\x01\xfe\xff",
        "Skipped": None,
    }
    result = await table.insert_entity(entity)
    assert result.etag
    assert result.request_id
    got = await table.get_entity("types", "all")
    assert got["Str"] == "O'Brien ü 😀"
    assert got["I32"] == -(2**31)
    assert got["I64"] == 2**62
    assert type(got["I64"]) is int
    assert got["SmallI64"] == 5
    assert got.edm_types["SmallI64"] is EdmType.INT64
    assert got["Dbl"] == 2.0
    assert isinstance(got["Dbl"], float)
    assert math.isnan(got["Nan"])
    assert got["Inf"] == math.inf
    assert got["NegInf"] == -math.inf
    assert got["Bool"] is True
    assert isinstance(got["When"], EdmDateTime)
    assert got["When"].to_wire() == when.to_wire()
    assert got["Plain"] == datetime(2020, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)
    assert got["Id"] == guid
    assert got["Bin"] == b"\x00\x01\xfe\xff"
    assert "Skipped" not in got
    assert got.metadata.etag == result.etag
    assert isinstance(got.metadata, azt.ResponseMetadata)
    assert got.metadata.request_id
    assert got.metadata.timestamp is not None


async def test_insert_return_content_and_conflict(table: azt.TableClient) -> None:
    result = await table.insert_entity(
        {"PartitionKey": "p", "RowKey": "r", "n": 1}, return_content=True
    )
    assert result.status == 201
    assert result.entity is not None
    assert result.entity["n"] == 1
    assert result.entity.metadata.timestamp is not None
    with pytest.raises(azt.EntityAlreadyExistsError) as info:
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    assert info.value.status == 409
    assert info.value.code == "EntityAlreadyExists"
    assert info.value.request_id


async def test_update_merge_replace_and_etags(table: azt.TableClient) -> None:
    first = await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "a": 1, "b": "x"})
    assert first.etag is not None
    merged = await table.update_entity(
        {"PartitionKey": "p", "RowKey": "r", "a": 2}, azt.UpdateMode.MERGE, etag=first.etag
    )
    assert merged.etag != first.etag
    got = await table.get_entity("p", "r")
    assert (got["a"], got["b"]) == (2, "x")
    with pytest.raises(azt.PreconditionFailedError):
        await table.update_entity({"PartitionKey": "p", "RowKey": "r", "a": 3}, etag=first.etag)
    await table.update_entity({"PartitionKey": "p", "RowKey": "r", "c": 1}, azt.UpdateMode.REPLACE)
    got = await table.get_entity("p", "r")
    assert "a" not in got
    assert got["c"] == 1
    with pytest.raises(azt.EntityNotFoundError):
        await table.update_entity({"PartitionKey": "p", "RowKey": "missing", "a": 1})


async def test_upserts(table: azt.TableClient) -> None:
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "u", "a": 1, "b": 1})
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "u", "a": 2}, azt.UpdateMode.MERGE)
    got = await table.get_entity("p", "u")
    assert (got["a"], got["b"]) == (2, 1)
    result = await table.upsert_entity(
        {"PartitionKey": "p", "RowKey": "u", "c": 3}, azt.UpdateMode.REPLACE
    )
    assert result.etag
    got = await table.get_entity("p", "u")
    assert dict(got) == {"PartitionKey": "p", "RowKey": "u", "c": 3}


async def test_delete(table: azt.TableClient) -> None:
    first = await table.insert_entity({"PartitionKey": "p", "RowKey": "d"})
    await table.upsert_entity({"PartitionKey": "p", "RowKey": "d", "x": 1})
    assert first.etag is not None
    with pytest.raises(azt.PreconditionFailedError):
        await table.delete_entity("p", "d", etag=first.etag)
    current = await table.get_entity("p", "d")
    assert current.metadata.etag is not None
    deleted = await table.delete_entity("p", "d", etag=current.metadata.etag)
    assert deleted.request_id
    with pytest.raises(azt.EntityNotFoundError):
        await table.delete_entity("p", "d")
    with pytest.raises(azt.EntityNotFoundError):
        await table.get_entity("p", "d")


async def test_keys_with_special_characters(table: azt.TableClient) -> None:
    keys = [("O'Brien", "RK'@*$!%"), ("a b+c", "é&=,;:"), ("", "")]
    for pk, rk in keys:
        await table.insert_entity({"PartitionKey": pk, "RowKey": rk, "v": 1})
        got = await table.get_entity(pk, rk)
        assert (got["PartitionKey"], got["RowKey"]) == (pk, rk)
        await table.update_entity({"PartitionKey": pk, "RowKey": rk, "v": 2})
        await table.delete_entity(pk, rk)


async def test_get_with_select(table: azt.TableClient) -> None:
    await table.insert_entity({"PartitionKey": "p", "RowKey": "s", "a": 1, "b": 2, "c": 3})
    got = await table.get_entity("p", "s", select=["a", "c"])
    assert got["a"] == 1
    assert got["c"] == 3
    assert "b" not in got
    assert got.metadata.etag


async def test_query_with_parameters_select_and_pages(table: azt.TableClient) -> None:
    batch_rows: list[dict[str, Any]] = [
        {"PartitionKey": "O'Brien", "RowKey": f"{i:03d}", "Rating": i % 5, "Name": f"n{i}"}
        for i in range(25)
    ]
    for row in batch_rows:
        await table.insert_entity(row)
    await table.insert_entity({"PartitionKey": "Other", "RowKey": "x", "Rating": 4})
    expected = [r["RowKey"] for r in batch_rows if r["Rating"] >= 3]
    pager = table.query_entities(
        "PartitionKey eq @pk and Rating ge @r",
        parameters={"pk": "O'Brien", "r": 3},
        select=["RowKey", "Rating"],
        results_per_page=4,
    )
    seen = [e["RowKey"] async for e in pager]
    assert seen == expected
    first = await pager.first_page()
    assert len(first) == 4
    assert first.request_id
    assert first.continuation is not None
    assert set(first.items[0]) == {"RowKey", "Rating"}
    # Resume from a serialised token, as a later process would.
    token = str(first.continuation)
    rest = table.query_entities(
        "PartitionKey eq @pk and Rating ge @r",
        parameters={"pk": "O'Brien", "r": 3},
        select=["RowKey", "Rating"],
        results_per_page=4,
        continuation=token,
    )
    assert [e["RowKey"] async for e in rest] == expected[4:]
    everything = await table.list_entities().to_list()
    assert len(everything) == 26


async def test_query_missing_table(service: azt.TableServiceClient) -> None:
    missing = service.get_table_client(unique_table_name("nope"))
    with pytest.raises(azt.TableNotFoundError):
        await missing.query_entities("PartitionKey eq 'a'").to_list()
    with pytest.raises(azt.TableNotFoundError):
        await missing.insert_entity({"PartitionKey": "a", "RowKey": "b"})


async def test_bad_filter_is_a_service_error(table: azt.TableClient) -> None:
    with pytest.raises(azt.BadRequestError):
        await table.query_entities("PartitionKey eq eq 'a'").to_list()


async def test_client_side_validation_sends_nothing(table: azt.TableClient) -> None:
    with pytest.raises(azt.ValidationError):
        await table.insert_entity({"PartitionKey": "a/b", "RowKey": "r"})
    with pytest.raises(azt.ValidationError):
        await table.insert_entity({"PartitionKey": "a", "RowKey": "r", "bad-name": 1})
    with pytest.raises(azt.ValidationError):
        await table.insert_entity({"PartitionKey": "a", "RowKey": "r", "big": "x" * 40000})
    assert await table.list_entities().to_list() == []


def _shared_key(connection_string: str, target: str) -> azt.SharedKeyCredential:
    """The target's account key (to sign SAS tokens with); skips the test on real Azure."""
    if target == "azure":
        pytest.skip("needs the account key of the target")
    settings = azt.parse_connection_string(connection_string)
    assert settings.account_name is not None
    assert settings.account_key is not None
    return azt.SharedKeyCredential(settings.account_name, settings.account_key)


async def test_sas_token_grants_table_access(
    connection_string: str,
    table: azt.TableClient,
    target: str,
    client_options: ClientOptions,
) -> None:
    cred = _shared_key(connection_string, target)
    await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    token = azt.generate_table_sas(
        cred, table.table_name, permission="r", expiry=datetime(2099, 1, 1, tzinfo=UTC)
    )
    async with azt.TableClient(
        table.endpoint, table.table_name, token, **client_options
    ) as sas_table:
        got = await sas_table.get_entity("p", "r")
        assert got["RowKey"] == "r"
        with pytest.raises(azt.AuthorizationError):
            await sas_table.insert_entity({"PartitionKey": "p", "RowKey": "r2"})
    account_token = azt.generate_account_sas(
        cred, resource_types="sco", permission="rl", expiry=datetime(2099, 1, 1, tzinfo=UTC)
    )
    async with azt.TableServiceClient(
        table.endpoint, account_token, **client_options
    ) as sas_service:
        assert table.table_name in await sas_service.list_tables().to_list()


async def test_shared_key_lite(
    connection_string: str, table: azt.TableClient, client_options: ClientOptions
) -> None:
    async with azt.TableClient.from_connection_string(
        connection_string, table.table_name, use_shared_key_lite=True, **client_options
    ) as lite:
        await lite.insert_entity({"PartitionKey": "lite", "RowKey": "1"})
        assert (await lite.get_entity("lite", "1"))["RowKey"] == "1"


@pytest.mark.parametrize("fmt", [azt.WireFormat.JSON_FULL, azt.WireFormat.JSON_NONE])
async def test_other_json_metadata_levels(
    connection_string: str,
    table: azt.TableClient,
    fmt: azt.WireFormat,
    client_options: ClientOptions,
) -> None:
    await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "n": 2**40, "s": "x"})
    async with azt.TableClient.from_connection_string(
        connection_string, table.table_name, wire_format=fmt, **client_options
    ) as other:
        got = await other.get_entity("p", "r")
        rows = await other.list_entities().to_list()
        await other.insert_entity({"PartitionKey": "p", "RowKey": f"via-{fmt.name}"})
    assert got["s"] == "x"
    assert len(rows) == 1
    if fmt is azt.WireFormat.JSON_NONE:
        assert got["n"] == str(2**40)  # untyped: Int64 arrives as a string
    else:
        assert got["n"] == 2**40
    assert got.metadata.etag


async def test_transaction_success(table: azt.TableClient) -> None:
    await table.insert_entity({"PartitionKey": "b", "RowKey": "upd", "v": 1})
    await table.insert_entity({"PartitionKey": "b", "RowKey": "del", "v": 1})
    batch = table.batch()
    for i in range(97):
        batch.create({"PartitionKey": "b", "RowKey": f"new{i:03d}", "v": i})
    batch.update({"PartitionKey": "b", "RowKey": "upd", "v": 2})
    batch.upsert({"PartitionKey": "b", "RowKey": "ups", "v": 3}, azt.UpdateMode.REPLACE)
    batch.delete("b", "del")
    results = await table.submit_transaction(batch)
    assert len(results) == 100
    assert all(r.request_id for r in results)
    assert results[0].etag is not None
    assert results[97].etag is not None
    assert results[99].etag is None
    rows = {e["RowKey"]: e["v"] async for e in table.list_entities()}
    assert len(rows) == 99
    assert rows["upd"] == 2
    assert rows["ups"] == 3
    assert "del" not in rows


async def test_transaction_failure_names_the_operation_and_applies_nothing(
    table: azt.TableClient,
) -> None:
    await table.insert_entity({"PartitionKey": "b", "RowKey": "exists"})
    batch = table.batch()
    batch.create({"PartitionKey": "b", "RowKey": "a"})
    batch.create({"PartitionKey": "b", "RowKey": "b"})
    batch.create({"PartitionKey": "b", "RowKey": "exists"})
    batch.create({"PartitionKey": "b", "RowKey": "c"})
    with pytest.raises(azt.TransactionError) as info:
        await table.submit_transaction(batch)
    err = info.value
    assert err.index == 2
    assert err.operation is batch.operations[2]
    assert isinstance(err.error, azt.EntityAlreadyExistsError)
    assert err.status == 409
    assert err.request_id
    assert "operation 2" in str(err)
    rows = [e["RowKey"] async for e in table.list_entities()]
    assert rows == ["exists"]


async def test_a_failed_first_operation_is_named_without_an_index_prefix(
    table: azt.TableClient,
) -> None:
    # The service writes no "0:" before the first operation's error (recorded 2017, 2021):
    # a lone failed part without an index is operation 0.
    await table.insert_entity({"PartitionKey": "b", "RowKey": "exists"})
    batch = table.batch()
    batch.create({"PartitionKey": "b", "RowKey": "exists"})
    batch.create({"PartitionKey": "b", "RowKey": "a"})
    batch.create({"PartitionKey": "b", "RowKey": "c"})
    with pytest.raises(azt.TransactionError) as info:
        await table.submit_transaction(batch)
    err = info.value
    assert err.index == 0
    assert err.operation is batch.operations[0]
    assert isinstance(err.error, azt.EntityAlreadyExistsError)


async def test_transaction_checks_before_sending(table: azt.TableClient) -> None:
    batch = table.batch()
    with pytest.raises(azt.BatchValidationError):
        await table.submit_transaction(batch)
    batch.create({"PartitionKey": "p", "RowKey": "1"})
    with pytest.raises(azt.BatchValidationError) as info:
        batch.create({"PartitionKey": "q", "RowKey": "2"})
    assert info.value.index == 1
    with pytest.raises(azt.BatchValidationError, match="already appears"):
        batch.delete("p", "1")
    for i in range(2, 101):
        batch.create({"PartitionKey": "p", "RowKey": str(i)})
    with pytest.raises(azt.BatchValidationError, match="at most 100") as info:
        batch.create({"PartitionKey": "p", "RowKey": "x"})
    assert info.value.index == 100
    assert await table.list_entities().to_list() == []


async def test_atom_wire_format(
    connection_string: str,
    service: azt.TableServiceClient,
    target: str,
    client_options: ClientOptions,
) -> None:
    if target != "stub":
        pytest.skip(
            "Azurite speaks JSON only (415 AtomFormatNotSupported); Atom is tested on the stub"
        )
    name = unique_table_name("atom")
    async with azt.TableServiceClient.from_connection_string(
        connection_string, wire_format=azt.WireFormat.ATOM, **client_options
    ) as atom_service:
        table = await atom_service.create_table(name)
        try:
            assert name in await atom_service.list_tables().to_list()
            when = EdmDateTime.parse("2021-09-21T07:50:52.3985251Z")
            entity = {
                "PartitionKey": "O'Brien",
                "RowKey": "1",
                "I64": 2**40,
                "D": math.inf,
                "When": when,
                "B": b"\x01\x02",
                "G": uuid.UUID(int=7),
                "S": "<xml & stuff>",
            }
            inserted = await table.insert_entity(entity, return_content=True)
            assert inserted.entity is not None
            assert inserted.entity["I64"] == 2**40
            got = await table.get_entity("O'Brien", "1")
            assert got["When"].to_wire() == when.to_wire()
            assert got["D"] == math.inf
            assert (got["B"], got["G"], got["S"]) == (
                b"\x01\x02",
                uuid.UUID(int=7),
                "<xml & stuff>",
            )
            assert got.metadata.etag
            await table.update_entity({"PartitionKey": "O'Brien", "RowKey": "1", "S": "y"})
            await table.upsert_entity({"PartitionKey": "O'Brien", "RowKey": "2", "S": "z"})
            rows = await table.query_entities(
                "PartitionKey eq @pk", parameters={"pk": "O'Brien"}, results_per_page=1
            ).to_list()
            assert [r["S"] for r in rows] == ["y", "z"]
            batch = table.batch()
            batch.create({"PartitionKey": "O'Brien", "RowKey": "3"})
            batch.delete("O'Brien", "2")
            results = await table.submit_transaction(batch)
            assert len(results) == 2
            with pytest.raises(azt.EntityNotFoundError):
                await table.get_entity("O'Brien", "2")
            with pytest.raises(azt.EntityAlreadyExistsError):
                await table.insert_entity({"PartitionKey": "O'Brien", "RowKey": "3"})
            await table.delete_entity("O'Brien", "1")
        finally:
            await atom_service.delete_table(name)


async def test_table_access_policies(table: azt.TableClient, target: str) -> None:
    assert await table.get_access_policy() == {}
    # Start is optional on Azure; Azurite (3.35) answers 400 without one.
    writers_start = datetime(2031, 1, 1, tzinfo=UTC) if target == "azurite" else None
    policies = {
        "readers": azt.AccessPolicy(
            permission="r",
            start=datetime(2030, 1, 1, tzinfo=UTC),
            expiry=datetime(2030, 1, 2, tzinfo=UTC),
        ),
        "writers": azt.AccessPolicy(
            permission="raud", start=writers_start, expiry=datetime(2031, 6, 1, tzinfo=UTC)
        ),
    }
    await table.set_access_policy(policies)
    got = await table.get_access_policy()
    assert set(got) == {"readers", "writers"}
    readers = got["readers"]
    assert readers is not None
    assert readers.permission == "r"
    assert readers.start == datetime(2030, 1, 1, tzinfo=UTC)
    assert readers.expiry == datetime(2030, 1, 2, tzinfo=UTC)
    with pytest.raises(azt.ValidationError, match="at most 5"):
        await table.set_access_policy({f"p{i}": None for i in range(6)})
    await table.set_access_policy({})
    assert await table.get_access_policy() == {}


async def test_service_properties_round_trip(service: azt.TableServiceClient, target: str) -> None:
    if target == "azure":
        pytest.skip("would change a real account's settings")
    original = await service.get_service_properties()
    rule = azt.CorsRule(
        allowed_origins=["https://example.com"],
        allowed_methods=["GET", "PUT"],
        max_age_in_seconds=500,
        exposed_headers=["x-ms-meta-*"],
        allowed_headers=["x-ms-meta-target"],
    )
    props = azt.ServiceProperties(
        logging=azt.Logging(read=True, retention_policy=azt.RetentionPolicy(enabled=True, days=3)),
        hour_metrics=azt.Metrics(enabled=True, include_apis=False),
        cors=[rule],
    )
    try:
        await service.set_service_properties(props)
        got = await service.get_service_properties()
        assert got.cors == (rule,)
        assert got.logging is not None
        assert got.logging.read is True
        assert got.logging.retention_policy.days == 3
        assert got.hour_metrics is not None
        assert got.hour_metrics.enabled is True
    finally:
        await service.set_service_properties(original)


async def test_service_stats(service: azt.TableServiceClient, target: str) -> None:
    if target != "stub":
        pytest.skip("stats need the secondary endpoint of a geo-replicated account")
    stats = await service.get_service_stats()
    assert stats.geo_replication.status in ("live", "bootstrap", "unavailable")


async def test_concurrent_requests_share_one_small_pool(
    connection_string: str, table: azt.TableClient, client_options: ClientOptions
) -> None:
    async with azt.TableClient.from_connection_string(
        connection_string,
        table.table_name,
        limits=azt.PoolLimits(max_connections=3),
        **client_options,
    ) as pooled:
        results = await asyncio.gather(
            *(pooled.insert_entity({"PartitionKey": "c", "RowKey": f"{i:03d}"}) for i in range(60))
        )
        assert all(r.etag for r in results)
        assert all(r.status == 204 for r in results)
        got = await asyncio.gather(*(pooled.get_entity("c", f"{i:03d}") for i in range(60)))
    assert [g["RowKey"] for g in got] == [f"{i:03d}" for i in range(60)]


async def test_sas_connection_string(
    connection_string: str,
    table: azt.TableClient,
    target: str,
    client_options: ClientOptions,
) -> None:
    cred = _shared_key(connection_string, target)
    token = azt.generate_account_sas(
        cred,
        resource_types=azt.AccountSasResourceTypes(object=True),
        permission=azt.AccountSasPermissions(read=True, add=True),
        expiry=datetime(2099, 1, 1, tzinfo=UTC),
    )
    conn = f"TableEndpoint={table.endpoint};SharedAccessSignature={token}"
    async with azt.TableClient.from_connection_string(
        conn, table.table_name, **client_options
    ) as sas_table:
        await sas_table.insert_entity({"PartitionKey": "sas", "RowKey": "1"})
        assert (await sas_table.get_entity("sas", "1"))["RowKey"] == "1"
        with pytest.raises(azt.AuthorizationError):
            await sas_table.delete_entity("sas", "1")
