"""Cross-check against Microsoft's azure-data-tables signer, without a server.

SAS tokens come from ``generate_table_sas`` / ``generate_account_sas``; Shared Key
headers from the SDK's own ``SharedKeyCredentialPolicy`` (sync and aio paths).
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlsplit

import pytest
import yarl
from azure.core.credentials import AzureNamedKeyCredential
from azure.core.pipeline import PipelineContext, PipelineRequest
from azure.core.pipeline.transport import AioHttpTransport, HttpRequest
from azure.data.tables import (
    AccountSasPermissions,
    ResourceTypes,
    SASProtocol,
    TableSasPermissions,
    generate_account_sas,
    generate_table_sas,
)
from azure.data.tables._authentication import SharedKeyCredentialPolicy

from azt_server_stub.auth import Operation, Principal
from azt_server_stub.backend import SignedIdentifier
from azt_server_stub.errors import StubError
from tests.stub.test_auth_support import (
    DEV_ACCOUNT,
    DEV_KEY_B64,
    VECTOR_DATE,
    authenticator,
    view,
)

CREDENTIAL = AzureNamedKeyCredential(DEV_ACCOUNT, DEV_KEY_B64)
NOW = dt.datetime(2026, 11, 21, 12, 0, 0, tzinfo=dt.UTC)
LATER = NOW + dt.timedelta(hours=1)


def use_sas(
    token: str,
    *,
    table: str = "mytable",
    scheme: str = "https",
    remote_ip: str = "127.0.0.1",
    policies: list[SignedIdentifier] | None = None,
    now: dt.datetime = NOW,
) -> Principal:
    auth = authenticator(now=now, policies=lambda account, name: list(policies or []))
    request = view("GET", f"/{DEV_ACCOUNT}/{table}()", token, scheme=scheme, remote_ip=remote_ip)
    return auth.authenticate(request, DEV_ACCOUNT, table)


def test_sdk_read_only_table_sas() -> None:
    token = generate_table_sas(
        CREDENTIAL, "mytable", permission=TableSasPermissions(read=True), expiry=LATER
    )
    principal = use_sas(token)
    assert principal.scheme == "ServiceSas"
    principal.authorize(Operation.QUERY_ENTITIES, "mytable")
    with pytest.raises(StubError) as excinfo:
        principal.authorize(Operation.INSERT_ENTITY, "mytable")
    assert excinfo.value.code == "AuthorizationPermissionMismatch"
    with pytest.raises(StubError) as excinfo:
        use_sas(token, now=LATER + dt.timedelta(seconds=1))
    assert excinfo.value.code == "AuthenticationFailed"


def test_sdk_table_sas_with_every_option() -> None:
    token = generate_table_sas(
        CREDENTIAL,
        "MyTable",
        permission=TableSasPermissions(read=True, add=True, update=True, delete=True),
        start=NOW - dt.timedelta(minutes=5),
        expiry=LATER,
        ip_address_or_range="10.1.0.0-10.1.255.255",
        protocol="https",
        start_pk="p/1 a",
        start_rk="r+1",
        end_pk="p/9",
        end_rk="r=9",
    )
    principal = use_sas(token, table="mytable", remote_ip="10.1.2.3")
    principal.authorize(Operation.INSERT_OR_MERGE_ENTITY, "MYTABLE")
    assert principal.key_allowed("p/1 a", "r+1")
    assert not principal.key_allowed("p/1 a", "r+0")
    assert principal.key_allowed("p/9", "r=9")
    assert not principal.key_allowed("p/9", "r=9\x00")
    with pytest.raises(StubError) as excinfo:
        use_sas(token, remote_ip="10.2.0.0")
    assert excinfo.value.code == "AuthorizationSourceIPMismatch"
    with pytest.raises(StubError) as excinfo:
        use_sas(token, remote_ip="10.1.2.3", scheme="http")
    assert excinfo.value.code == "AuthorizationProtocolMismatch"


def test_sdk_protocol_enum_renders_badly_and_is_refused_as_malformed() -> None:
    # azure-data-tables formats spr with str(SASProtocol.HTTPS), which on Python 3.11+
    # gives "SASProtocol.HTTPS": a value the service does not know.
    token = generate_table_sas(
        CREDENTIAL, "mytable", permission="r", expiry=LATER, protocol=SASProtocol.HTTPS
    )
    assert "spr=SASProtocol.HTTPS" in token
    with pytest.raises(StubError) as excinfo:
        use_sas(token)
    assert excinfo.value.code == "AuthenticationFailed"
    assert excinfo.value.details["AuthenticationErrorDetail"] == "Signature fields not well formed."


def test_sdk_table_sas_with_stored_policy() -> None:
    token = generate_table_sas(CREDENTIAL, "mytable", policy_id="readers")
    policy = SignedIdentifier("readers", expiry="2030-01-01T00:00:00Z", permission="r")
    principal = use_sas(token, policies=[policy])
    principal.authorize(Operation.QUERY_ENTITIES, "mytable")
    with pytest.raises(StubError) as excinfo:
        use_sas(token, policies=[])
    assert excinfo.value.code == "AuthenticationFailed"


def test_sdk_table_sas_with_another_key_fails() -> None:
    other = AzureNamedKeyCredential(DEV_ACCOUNT, "b3RoZXIga2V5")
    token = generate_table_sas(other, "mytable", permission="r", expiry=LATER)
    with pytest.raises(StubError) as excinfo:
        use_sas(token)
    assert excinfo.value.code == "AuthenticationFailed"


@pytest.mark.parametrize(
    ("resource_types", "permission", "allowed", "refused"),
    [
        (
            ResourceTypes(object=True),
            AccountSasPermissions(read=True),
            [Operation.QUERY_ENTITIES],
            [Operation.INSERT_ENTITY, Operation.CREATE_TABLE],
        ),
        (
            ResourceTypes(service=True, container=True, object=True),
            AccountSasPermissions(
                read=True, write=True, delete=True, list=True, add=True, create=True, update=True
            ),
            [
                Operation.QUERY_TABLES,
                Operation.CREATE_TABLE,
                Operation.DELETE_TABLE,
                Operation.SET_SERVICE_PROPERTIES,
                Operation.INSERT_OR_REPLACE_ENTITY,
            ],
            [Operation.GET_TABLE_ACL],
        ),
        (
            ResourceTypes(container=True),
            AccountSasPermissions(create=True),
            [Operation.CREATE_TABLE],
            [Operation.DELETE_TABLE, Operation.QUERY_ENTITIES],
        ),
    ],
)
def test_sdk_account_sas(
    resource_types: ResourceTypes,
    permission: AccountSasPermissions,
    allowed: list[Operation],
    refused: list[Operation],
) -> None:
    token = generate_account_sas(CREDENTIAL, resource_types, permission, LATER)
    principal = use_sas(token)
    assert principal.scheme == "AccountSas"
    for op in allowed:
        principal.authorize(op, "mytable")
    for op in refused:
        with pytest.raises(StubError):
            principal.authorize(op, "mytable")


def test_sdk_account_sas_with_ip_and_protocol() -> None:
    token = generate_account_sas(
        CREDENTIAL,
        ResourceTypes(object=True),
        "r",
        LATER,
        start=NOW - dt.timedelta(minutes=1),
        ip_address_or_range="127.0.0.1",
        protocol="https",
    )
    use_sas(token)
    with pytest.raises(StubError) as excinfo:
        use_sas(token, remote_ip="127.0.0.2")
    assert excinfo.value.code == "AuthorizationSourceIPMismatch"


SHARED_KEY_REQUESTS = [
    ("GET", "/devstoreaccount1/Tables", {}),
    ("POST", "/devstoreaccount1/Tables", {"Content-Type": "application/json;odata=nometadata"}),
    ("GET", "/devstoreaccount1/mytable?comp=acl&timeout=5", {}),
    ("PUT", "/devstoreaccount1/?restype=service&comp=properties", {"Content-Type": "app/xml"}),
    ("GET", "/devstoreaccount1/mytable(PartitionKey=%27a%27,RowKey=%27b%2Fc%27)", {}),
    ("MERGE", "/devstoreaccount1/mytable(PartitionKey='a',RowKey='b')", {"If-Match": "*"}),
    ("GET", "/devstoreaccount1/mytable()?$filter=PartitionKey%20eq%20%27x%27&$top=5", {}),
    ("DELETE", "/devstoreaccount1-secondary/mytable(PartitionKey='a',RowKey='b')", {}),
]


@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize(("method", "target", "extra"), SHARED_KEY_REQUESTS)
def test_sdk_shared_key_policy_signatures_verify(
    method: str, target: str, extra: dict[str, str], asynchronous: bool
) -> None:
    url = "http://127.0.0.1:10002" + target
    request = HttpRequest(method, url, headers={"x-ms-date": VECTOR_DATE, **extra})
    transport = AioHttpTransport() if asynchronous else None
    SharedKeyCredentialPolicy(CREDENTIAL).on_request(  # type: ignore[no-untyped-call]
        PipelineRequest(request, PipelineContext(transport))
    )
    parts = urlsplit(url)
    # The aio transport sends the path as yarl normalises it (and the SDK signs that).
    wire_path = str(yarl.URL(parts.path)) if asynchronous else parts.path
    account = parts.path.split("/")[1]
    signed = view(method, wire_path, parts.query, dict(request.headers))
    principal = authenticator().authenticate(signed, account, None)
    assert principal.account == DEV_ACCOUNT
    assert principal.secondary == account.endswith("-secondary")
