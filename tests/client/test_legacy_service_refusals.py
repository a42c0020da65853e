"""What the retired SDK's own test suite taught about ``azt.legacy`` (our own tests; the
suite itself is not ours to copy): the legacy ``TableService`` sends what the legacy SDK
sent and lets the service refuse it, so code catching ``AzureHttpError`` sees the
service's ``status_code`` and ``error_code``; string values of typed properties go as
given; empty batches are sent; ACL times as strings; ``nometadata`` reads and
``property_resolver``; the legacy retry classes; the emulator form dropping a SAS.
"""

from __future__ import annotations

import gc
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from azt.legacy import (
    AccessPolicy,
    AzureHttpError,
    EdmType,
    EntityProperty,
    TableBatch,
    TablePayloadFormat,
    TablePermissions,
    TableService,
)
from azt.legacy._retry import LinearRetry, retry_policy_for
from azt.legacy.cosmosdb_table.common.retry import ExponentialRetry, no_retry
from azt_server_stub import ThreadedStubServer


@pytest.fixture(scope="module")
def stub() -> Iterator[ThreadedStubServer]:
    with ThreadedStubServer() as server:
        yield server


@pytest.fixture
def service(stub: ThreadedStubServer) -> Iterator[TableService]:
    with TableService(connection_string=stub.connection_string) as svc:
        svc.retry = no_retry
        yield svc


@pytest.fixture
def table(service: TableService) -> str:
    name = "t" + uuid.uuid4().hex[:12]
    service.create_table(name)
    return name


def _entity(**extra: object) -> dict[str, object]:
    return {"PartitionKey": "p", "RowKey": uuid.uuid4().hex, **extra}


@pytest.mark.parametrize(
    ("entity", "status", "code"),
    [
        ({"PartitionKey": "a/b", "RowKey": "r"}, 400, "InvalidInput"),
        (_entity(s="x" * (32 * 1024 + 1)), 400, "PropertyValueTooLarge"),
        (_entity(b=EntityProperty(EdmType.BINARY, b"x" * (64 * 1024 + 1))), 400,
         "PropertyValueTooLarge"),
        (_entity(**{f"p{i}": "x" * 30000 for i in range(40)}), 400, "EntityTooLarge"),
        (_entity(**{"bad name": 1}), 400, "PropertyNameInvalid"),
        ({"PartitionKey": "p", "RowKey": "r" * 1025}, 400, "KeyValueTooLarge"),
        (_entity(d=datetime(1500, 1, 1)), 400, "OutOfRangeInput"),
        (_entity(g=EntityProperty(EdmType.GUID, "not-a-guid")), 400, "InvalidInput"),
    ],
    ids=["slash-key", "long-string", "long-binary", "big-entity", "bad-name", "long-rowkey",
         "year-1500", "bad-guid"],
)  # fmt: skip
def test_what_the_service_refuses_is_an_azure_http_error(
    service: TableService, table: str, entity: dict[str, object], status: int, code: str
) -> None:
    with pytest.raises(AzureHttpError) as caught:
        service.insert_entity(table, entity)
    assert (caught.value.status_code, caught.value.error_code) == (status, code)
    assert str(caught.value).startswith(f"Bad Request ErrorCode: {code}\n")


@pytest.mark.parametrize("num_results", [0, 1001, 1500])
def test_num_results_out_of_range_is_the_services_refusal(
    service: TableService, table: str, num_results: int
) -> None:
    with pytest.raises(AzureHttpError) as caught:
        service.query_entities(table, num_results=num_results)
    assert caught.value.status_code == 400
    assert caught.value.error_code == "OutOfRangeQueryParameterValue"


def test_a_unicode_table_name_is_refused_by_the_service(service: TableService) -> None:
    with pytest.raises(AzureHttpError) as caught:
        service.create_table("啊齄丂狛狜")
    assert caught.value.status_code == 400
    assert caught.value.error_code == "InvalidResourceName"


def test_typed_properties_with_string_values_are_sent_as_given(
    service: TableService, table: str
) -> None:
    entity = _entity(
        flag=EntityProperty(EdmType.BOOLEAN, "true"), big=EntityProperty(EdmType.INT64, "12")
    )
    service.insert_entity(table, entity)
    got = service.get_entity(table, "p", str(entity["RowKey"]))
    assert got.flag == "true"  # stored as the Edm.String the legacy SDK's JSON made it
    assert got.big == 12


def test_an_empty_batch_is_sent_and_accepted(service: TableService, table: str) -> None:
    # Azure answers an empty change set 202 with an empty change set response
    assert service.commit_batch(table, TableBatch()) == []
    with service.batch(table):
        pass


def test_batch_failure_keeps_the_services_message(service: TableService, table: str) -> None:
    service.insert_entity(table, {"PartitionKey": "p", "RowKey": "r"})
    batch = TableBatch()
    batch.update_entity({"PartitionKey": "p", "RowKey": "r"}, if_match="W/\"datetime'2012'\"")
    with pytest.raises(AzureHttpError) as caught:
        service.commit_batch(table, batch)
    assert caught.value.status_code == 412
    assert getattr(caught.value, "code", None) == "UpdateConditionNotSatisfied"
    assert "The update condition specified in the request was not satisfied." in str(caught.value)


def test_acl_times_may_be_strings(service: TableService, table: str) -> None:
    policy = AccessPolicy(
        start="2011-10-11", expiry="2011-10-12", permission=TablePermissions.QUERY
    )
    service.set_table_acl(table, {"testid": policy, "empty": AccessPolicy()})
    acl = service.get_table_acl(table)
    assert acl["testid"].start == datetime(2011, 10, 11, tzinfo=UTC)
    assert acl["testid"].permission == "r"
    assert acl["empty"].permission is None


def test_nometadata_and_property_resolver(service: TableService, table: str) -> None:
    rk = uuid.uuid4().hex
    service.insert_entity(
        table,
        {"PartitionKey": "p", "RowKey": rk, "n": 39, "when": datetime(1973, 10, 4),
         "small": EntityProperty(EdmType.INT32, 20), "bin": EntityProperty(EdmType.BINARY, b"b")},
    )  # fmt: skip
    raw = service.get_entity(table, "p", rk, accept=TablePayloadFormat.JSON_NO_METADATA)
    assert (raw.n, raw.when, raw.bin) == ("39", "1973-10-04T00:00:00Z", "Yg==")
    assert raw.small.type == EdmType.INT32

    def resolver(pk: object, rk: object, name: str, value: object, edm: object) -> str | None:
        types = {"n": EdmType.INT64, "when": EdmType.DATETIME, "bin": EdmType.BINARY}
        return types.get(name)

    [typed] = service.query_entities(
        table, accept=TablePayloadFormat.JSON_NO_METADATA, property_resolver=resolver
    )
    assert typed.n == 39
    assert typed.when == datetime(1973, 10, 4, tzinfo=UTC)
    assert typed.bin.value == b"b"


def test_legacy_retry_classes_map_onto_azt_policies() -> None:
    assert retry_policy_for(no_retry).max_attempts == 1  # type: ignore[union-attr]
    linear = retry_policy_for(LinearRetry(backoff=1, max_attempts=2).retry)
    assert linear is not None
    assert (linear.max_attempts, linear.minimum, linear.maximum) == (3, 1, 1)
    exponential = retry_policy_for(ExponentialRetry(initial_backoff=2, max_attempts=3).retry)
    assert exponential is not None
    assert (exponential.max_attempts, exponential.minimum, exponential.maximum) == (4, 2, 29)
    assert retry_policy_for(lambda context: 5) is None  # anything else: azt's default


def test_the_emulator_form_drops_a_sas_as_the_legacy_sdk_did() -> None:
    with TableService(account_name="someone", sas_token="sv=x&sig=y", is_emulated=True) as svc:
        assert svc.sas_token is None
        assert svc.account_name == "devstoreaccount1"
        assert svc.account_key is not None
        assert svc.primary_endpoint == "127.0.0.1:10002/devstoreaccount1"


@pytest.mark.parametrize("num_results", [0, 1001])
def test_list_tables_sends_num_results_as_given(service: TableService, num_results: int) -> None:
    with pytest.raises(AzureHttpError) as caught:
        service.list_tables(num_results=num_results)
    assert caught.value.error_code == "OutOfRangeQueryParameterValue"


def test_timeout_is_sent_as_given(service: TableService, table: str) -> None:
    assert service.exists(table, timeout=5)
    with pytest.raises(AzureHttpError) as caught:
        service.list_tables(timeout=0)
    assert caught.value.status_code == 400


def test_exists_and_list_tables(service: TableService, table: str) -> None:
    assert service.exists(table)
    assert not service.exists("nosuchtable")
    first = service.list_tables(num_results=1)
    assert len(first.items) == 1
    names = [t.name for t in service.list_tables()]
    assert table in names


def test_an_unclosed_service_is_collected_with_its_loop_thread(stub: ThreadedStubServer) -> None:
    before = threading.active_count()
    svc = TableService(connection_string=stub.connection_string)
    svc.retry = LinearRetry(backoff=1, max_attempts=1).retry  # a second client, made later
    assert not svc.exists("nosuchtable")
    assert threading.active_count() == before + 1
    del svc
    gc.collect()
    assert threading.active_count() == before
