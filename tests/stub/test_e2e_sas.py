"""End to end: every SAS restriction, from ``generate_table_sas``/``generate_account_sas``,
enforced by the stub over HTTP (issue 2, point 8).

The signing side is Microsoft's SDK; the refusals are the service's codes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import HttpResponseError
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    TableAccessPolicy,
    TableSasPermissions,
    TableTransactionError,
    UpdateMode,
    generate_account_sas,
    generate_table_sas,
)
from azure.data.tables.aio import TableClient, TableServiceClient

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer

from .conftest import (
    JSON_MINIMAL,
    RawClient,
)
from .test_http_raw import make_table

CRED = AzureNamedKeyCredential(DEV_ACCOUNT, DEV_KEY)
TABLE = "sastable"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _code(error: HttpResponseError) -> tuple[int | None, str | None]:
    response: Any = error.response
    return error.status_code, None if response is None else response.headers.get("x-ms-error-code")


@pytest.fixture
async def table(stub: StubServer) -> AsyncIterator[TableClient]:
    async with TableServiceClient.from_connection_string(stub.connection_string) as svc:
        client = await svc.create_table(TABLE)
        async with client:
            for pk in ("a", "b", "c"):
                for rk in ("1", "2", "3"):
                    await client.create_entity({"PartitionKey": pk, "RowKey": rk})
            yield client


def _client(stub: StubServer, sas: str, table: str = TABLE) -> TableClient:
    return TableClient(
        endpoint=stub.table_endpoint(), table_name=table, credential=AzureSasCredential(sas)
    )


async def _refused(call: Any) -> tuple[int | None, str | None]:
    with pytest.raises(HttpResponseError) as info:
        await call
    return _code(info.value)


async def test_time_window(stub: StubServer, table: TableClient) -> None:
    not_yet = generate_table_sas(
        CRED,
        TABLE,
        permission="r",
        start=_now() + dt.timedelta(minutes=30),
        expiry=_now() + dt.timedelta(hours=1),
    )
    async with _client(stub, not_yet) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthenticationFailed")
    current = generate_table_sas(
        CRED,
        TABLE,
        permission="r",
        start=_now() - dt.timedelta(minutes=5),
        expiry=_now() + dt.timedelta(hours=1),
    )
    async with _client(stub, current) as client:
        assert (await client.get_entity("a", "1"))["RowKey"] == "1"


async def test_table_name_and_permissions(stub: StubServer, table: TableClient) -> None:
    expiry = _now() + dt.timedelta(hours=1)
    other = generate_table_sas(CRED, "othertable", permission="raud", expiry=expiry)
    async with _client(stub, other) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthorizationFailure")
    update_only = generate_table_sas(
        CRED, TABLE, permission=TableSasPermissions(update=True), expiry=expiry
    )
    async with _client(stub, update_only) as client:
        await client.update_entity(
            {"PartitionKey": "a", "RowKey": "1", "x": 1}, match_condition=None
        )
        # an upsert needs add and update; delete needs delete; reads need read
        upsert = client.upsert_entity({"PartitionKey": "a", "RowKey": "9"}, mode=UpdateMode.MERGE)
        assert await _refused(upsert) == (403, "AuthorizationPermissionMismatch")
        assert await _refused(client.delete_entity("a", "1")) == (
            403,
            "AuthorizationPermissionMismatch",
        )
        assert await _refused(client.get_entity("a", "1")) == (
            403,
            "AuthorizationPermissionMismatch",
        )
    add_update = generate_table_sas(CRED, TABLE, permission="au", expiry=expiry)
    async with _client(stub, add_update) as client:
        await client.upsert_entity({"PartitionKey": "a", "RowKey": "9"}, mode=UpdateMode.REPLACE)
    deleter = generate_table_sas(CRED, TABLE, permission="d", expiry=expiry)
    async with _client(stub, deleter) as client:
        await client.delete_entity("a", "9")
    # a service SAS never reaches table-level operations
    everything = generate_table_sas(CRED, TABLE, permission="raud", expiry=expiry)
    async with TableServiceClient(
        endpoint=stub.table_endpoint(), credential=AzureSasCredential(everything)
    ) as svc:
        assert await _refused(svc.create_table("newtable")) == (403, "AuthorizationFailure")


async def test_row_key_ranges_in_queries_writes_and_batches(
    stub: StubServer, table: TableClient
) -> None:
    sas = generate_table_sas(
        CRED,
        TABLE,
        permission="raud",
        expiry=_now() + dt.timedelta(hours=1),
        start_pk="a",
        start_rk="2",
        end_pk="b",
        end_rk="2",
    )
    async with _client(stub, sas) as client:
        keys = [(e["PartitionKey"], e["RowKey"]) async for e in client.list_entities()]
        assert keys == [("a", "2"), ("a", "3"), ("b", "1"), ("b", "2")]
        filtered = client.query_entities("RowKey ne '2'")
        assert [(e["PartitionKey"], e["RowKey"]) async for e in filtered] == [
            ("a", "3"),
            ("b", "1"),
        ]
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthorizationFailure")
        assert await _refused(client.delete_entity("b", "3")) == (403, "AuthorizationFailure")
        create = client.create_entity({"PartitionKey": "c", "RowKey": "0"})
        assert await _refused(create) == (403, "AuthorizationFailure")
        await client.create_entity({"PartitionKey": "a", "RowKey": "5"})
        # inside a batch the operation outside the range fails the whole batch
        with pytest.raises(TableTransactionError) as info:
            await client.submit_transaction(
                [
                    ("create", {"PartitionKey": "b", "RowKey": "0"}),
                    ("create", {"PartitionKey": "b", "RowKey": "4"}),
                ]
            )
        assert info.value.status_code == 403
        assert cast(Any, info.value).error_code == "AuthorizationFailure"
    stored = [(e["PartitionKey"], e["RowKey"]) async for e in table.list_entities()]
    assert ("b", "0") not in stored
    assert ("a", "5") in stored


async def test_batch_operations_need_their_own_permission(
    stub: StubServer, table: TableClient
) -> None:
    adder = generate_table_sas(CRED, TABLE, permission="a", expiry=_now() + dt.timedelta(hours=1))
    async with _client(stub, adder) as client:
        await client.submit_transaction([("create", {"PartitionKey": "d", "RowKey": "1"})])
        with pytest.raises(TableTransactionError) as info:
            await client.submit_transaction(
                [
                    ("create", {"PartitionKey": "d", "RowKey": "2"}),
                    ("delete", {"PartitionKey": "d", "RowKey": "1"}),
                ]
            )
        assert cast(Any, info.value).error_code == "AuthorizationPermissionMismatch"
    assert len([e async for e in table.query_entities("PartitionKey eq 'd'")]) == 1


async def test_source_ip_and_protocol(stub: StubServer, table: TableClient) -> None:
    expiry = _now() + dt.timedelta(hours=1)
    elsewhere = generate_table_sas(
        CRED, TABLE, permission="r", expiry=expiry, ip_address_or_range="10.0.0.1-10.0.0.9"
    )
    async with _client(stub, elsewhere) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthorizationSourceIPMismatch")
    loopback = generate_table_sas(
        CRED, TABLE, permission="r", expiry=expiry, ip_address_or_range="127.0.0.1"
    )
    async with _client(stub, loopback) as client:
        assert (await client.get_entity("a", "1"))["PartitionKey"] == "a"
    https_only = generate_table_sas(CRED, TABLE, permission="r", expiry=expiry, protocol="https")
    async with _client(stub, https_only) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthorizationProtocolMismatch")
    account_https = generate_account_sas(
        CRED, ResourceTypes(object=True), "r", expiry, protocol="https"
    )
    async with _client(stub, account_https) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthorizationProtocolMismatch")
    account_ip = generate_account_sas(
        CRED, ResourceTypes(object=True), "r", expiry, ip_address_or_range="10.0.0.1"
    )
    async with _client(stub, account_ip) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthorizationSourceIPMismatch")


async def test_stored_access_policies(stub: StubServer, table: TableClient) -> None:
    soon = _now() + dt.timedelta(hours=1)
    await table.set_table_access_policy(
        {
            "readers": TableAccessPolicy(permission="r", expiry=soon),
            "expired": TableAccessPolicy(permission="r", expiry=_now() - dt.timedelta(minutes=5)),
            "later": TableAccessPolicy(
                permission="r", start=_now() + dt.timedelta(minutes=30), expiry=soon
            ),
            "noperm": TableAccessPolicy(expiry=soon),
        }
    )
    async with _client(stub, generate_table_sas(CRED, TABLE, policy_id="readers")) as client:
        assert (await client.get_entity("a", "1"))["RowKey"] == "1"
        create = client.create_entity({"PartitionKey": "a", "RowKey": "7"})
        assert await _refused(create) == (403, "AuthorizationPermissionMismatch")
    for policy in ("expired", "later", "missing"):
        sas = generate_table_sas(CRED, TABLE, policy_id=policy)
        async with _client(stub, sas) as client:
            assert await _refused(client.get_entity("a", "1")) == (403, "AuthenticationFailed")
    # the SAS supplies what the policy lacks; a field in both is refused
    with_perm = generate_table_sas(CRED, TABLE, policy_id="noperm", permission="r")
    async with _client(stub, with_perm) as client:
        assert (await client.get_entity("a", "1"))["RowKey"] == "1"
    twice = generate_table_sas(CRED, TABLE, policy_id="readers", permission="r")
    async with _client(stub, twice) as client:
        status, _ = await _refused(client.get_entity("a", "1"))
        assert status == 400
    # replacing the ACL revokes the policy at once
    await table.set_table_access_policy({})
    async with _client(stub, generate_table_sas(CRED, TABLE, policy_id="readers")) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthenticationFailed")


async def test_account_sas_scope(stub: StubServer, table: TableClient) -> None:
    expiry = _now() + dt.timedelta(hours=1)
    objects = generate_account_sas(
        CRED, ResourceTypes(object=True), AccountSasPermissions(read=True, list=True), expiry
    )
    async with TableServiceClient(
        endpoint=stub.table_endpoint(), credential=AzureSasCredential(objects)
    ) as svc:
        listing = svc.list_tables()
        with pytest.raises(HttpResponseError) as info:
            [t async for t in listing]
        assert _code(info.value) == (403, "AuthorizationResourceTypeMismatch")
        async with svc.get_table_client(TABLE) as client:
            assert len([e async for e in client.list_entities()]) == 9
            create = client.create_entity({"PartitionKey": "z", "RowKey": "1"})
            assert await _refused(create) == (403, "AuthorizationPermissionMismatch")
        assert await _refused(svc.get_service_properties()) == (
            403,
            "AuthorizationResourceTypeMismatch",
        )
    expired = generate_account_sas(
        CRED, ResourceTypes(object=True), "r", _now() - dt.timedelta(minutes=1)
    )
    async with _client(stub, expired) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthenticationFailed")
    not_yet = generate_account_sas(
        CRED, ResourceTypes(object=True), "r", expiry, start=_now() + dt.timedelta(minutes=30)
    )
    async with _client(stub, not_yet) as client:
        assert await _refused(client.get_entity("a", "1")) == (403, "AuthenticationFailed")
    # ACLs are the account owner's: no SAS reaches them
    full = generate_account_sas(
        CRED,
        ResourceTypes(service=True, container=True, object=True),
        AccountSasPermissions(
            read=True, write=True, delete=True, list=True, add=True, create=True, update=True
        ),
        expiry,
    )
    async with _client(stub, full) as client:
        assert await _refused(client.get_table_access_policy()) == (403, "AuthorizationFailure")


async def test_account_sas_for_another_service_is_refused(raw: RawClient) -> None:
    """An account SAS whose ss lacks t: 403 AuthorizationServiceMismatch (the SDK always
    signs ss=t, so this one is signed by hand)."""
    import base64
    import hashlib
    import hmac
    from urllib.parse import urlencode

    await make_table(raw)
    fields = {
        "sv": "2019-02-02",
        "ss": "bq",
        "srt": "sco",
        "sp": "rl",
        "se": "2099-01-01T00:00:00Z",
        "spr": "https,http",
    }
    sts = (
        "\n".join(
            [
                DEV_ACCOUNT,
                fields["sp"],
                fields["ss"],
                fields["srt"],
                "",
                fields["se"],
                "",
                fields["spr"],
                fields["sv"],
            ]
        )
        + "\n"
    )
    mac = hmac.new(base64.b64decode(DEV_KEY), sts.encode(), hashlib.sha256).digest()
    query = urlencode({**fields, "sig": base64.b64encode(mac).decode()})
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_MINIMAL}, auth="none", raw_query=query
    )
    assert (r.status, r.code) == (403, "AuthorizationServiceMismatch"), r.body
    fields["ss"] = "t"
    sts = sts.replace("\nbq\n", "\nt\n")
    mac = hmac.new(base64.b64decode(DEV_KEY), sts.encode(), hashlib.sha256).digest()
    query = urlencode({**fields, "sig": base64.b64encode(mac).decode()})
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_MINIMAL}, auth="none", raw_query=query
    )
    assert r.status == 200, r.body
