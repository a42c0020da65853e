"""Ambiguous credentials and bearer tokens for ACLs and service properties (issue 18,
points 5 and 6), over HTTP.

Point 5, decisions and evidence:

* An ``Authorization`` header together with a SAS signature (``sig``) in the query is
  ``400 InvalidAuthenticationInfo``; neither credential is evaluated. Medium for a bearer
  token + SAS (Azure/azure-sdk-for-net#46263: the service answered that message; the
  storage SDK maintainer: "The REST API doesn't allow two types of authentication to be
  used when making requests"), thin for SharedKey + SAS (the same statement, no recording).
  No Microsoft SDK sends both (azure-data-tables drops the URL's SAS when given a
  credential), so this breaks no SDK client; Azurite lets the header win.
* A SAS field given twice (even with the same value) is ``403 AuthenticationFailed`` with
  ``AuthenticationErrorDetail`` "Signature fields not well formed." Strong for every field
  duplicated (Azure/azure-sdk-for-rust#867 and PR #1331, real-service answers), extended
  to any single repeated field.

Point 6: an Entra ID bearer token may call Get/Set Table ACL and Get/Set Table Service
Properties. Strong: "Authorize with Microsoft Entra ID", "Permissions for Table service
operations" lists RBAC actions for all four (tableServices/read|write,
tables/getAcl/action, tables/setAcl/action), and azure-sdk-for-python's test_table_aad.py
recordings against a real account: test_aad_service_properties (GET 200, PUT 202 with a
bearer token) and test_aad_access_policy_error (GET/PUT ``?comp=acl`` of a missing table
with a bearer token: 404 ResourceNotFound, not 401/403). The operation pages' "Only the
account owner may call this operation" predates Entra ID for tables and rules out SAS,
which the stub keeps refusing.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from azure.core.credentials import AzureNamedKeyCredential
from azure.data.tables import TableSasPermissions, generate_table_sas
from lxml import etree

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer
from azt_server_stub.auth import AuthOptions
from tests.stub.conftest import JSON_NONE, RawClient
from tests.stub.test_http_raw import make_table

PROPS = {"restype": "service", "comp": "properties"}
ACL = {"comp": "acl"}
ACL_DOC = (
    "<SignedIdentifiers><SignedIdentifier><Id>readers</Id><AccessPolicy>"
    "<Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>"
)


def _sas(table: str = "mytable") -> str:
    expiry = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    credential = AzureNamedKeyCredential(DEV_ACCOUNT, DEV_KEY)
    return generate_table_sas(
        credential, table, permission=TableSasPermissions(read=True), expiry=expiry
    )


async def _query(raw: RawClient, sas: str, auth: str = "none") -> tuple[int, str | None]:
    r = await raw.request(
        "GET", "/mytable()", auth=auth, raw_query=sas, headers={"Accept": JSON_NONE}
    )
    return r.status, r.code


async def test_a_valid_sas_alone_works(raw: RawClient) -> None:
    await make_table(raw)
    assert await _query(raw, _sas()) == (200, None)


async def test_shared_key_header_and_sas_is_400(raw: RawClient) -> None:
    """Both valid, still 400 InvalidAuthenticationInfo (azure-sdk-for-net#46263)."""
    await make_table(raw)
    assert await _query(raw, _sas(), auth="SharedKey") == (400, "InvalidAuthenticationInfo")


async def test_bearer_header_and_sas_is_400(raw: RawClient) -> None:
    """The combination of azure-sdk-for-net#46263 (a TokenCredential and a SAS URL)."""
    await make_table(raw)
    r = await raw.request(
        "GET",
        "/mytable()",
        auth="none",
        raw_query=_sas(),
        headers={"Accept": JSON_NONE, "Authorization": f"Bearer {_token()}"},
    )
    assert (r.status, r.code) == (400, "InvalidAuthenticationInfo")
    assert "WWW-Authenticate" not in r.headers


@pytest.mark.parametrize("field", ["sig", "sp", "sv", "tn", "se"])
async def test_a_repeated_sas_field_is_403(raw: RawClient, field: str) -> None:
    """azure-sdk-for-rust#867 / PR #1331: a SAS appended twice -> 403 AuthenticationFailed,
    "Signature fields not well formed." Here one field repeats with its own value."""
    await make_table(raw)
    sas = _sas()
    pair = next(p for p in sas.split("&") if p.startswith(f"{field}="))
    r = await raw.request(
        "GET", "/mytable()", auth="none", raw_query=f"{sas}&{pair}", headers={"Accept": JSON_NONE}
    )
    assert (r.status, r.code) == (403, "AuthenticationFailed")
    assert b"Signature fields not well formed." in r.body


async def test_the_whole_sas_twice_is_403(raw: RawClient) -> None:
    """azure-sdk-for-rust#867: ``?[sasToken][sasToken]``."""
    await make_table(raw)
    sas = _sas()
    assert await _query(raw, f"{sas}&{sas}") == (403, "AuthenticationFailed")


# --- point 6: bearer tokens ------------------------------------------------------------


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _token() -> str:
    now = int(dt.datetime.now(dt.UTC).timestamp())
    claims = {"aud": "https://storage.azure.com", "nbf": now - 60, "exp": now + 3600}
    return f"{_b64url({'alg': 'RS256', 'typ': 'JWT'})}.{_b64url(claims)}.c2ln"


@pytest.fixture
async def bearer_raw() -> AsyncIterator[RawClient]:
    options = AuthOptions(allow_bearer=True, bearer_allow_http=True)
    async with StubServer(StubConfig(auth=options)) as server, aiohttp.ClientSession() as session:
        yield RawClient(session, server.endpoint, DEV_ACCOUNT, DEV_KEY)


async def _bearer(
    raw: RawClient, method: str, path: str, query: dict[str, str], body: str | None = None
) -> tuple[int, str | None, bytes]:
    headers = {"Authorization": f"Bearer {_token()}"}
    if body is not None:
        headers["Content-Type"] = "application/xml"
    r = await raw.request(method, path, auth="none", query=query, headers=headers, body=body)
    return r.status, r.code, r.body


async def test_bearer_gets_and_sets_service_properties(bearer_raw: RawClient) -> None:
    """test_aad_service_properties (real account): GET 200, PUT 202 with a bearer token."""
    doc = "<StorageServiceProperties><Logging><Version>1.0</Version><Delete>true</Delete>"
    doc += "<Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>false</Enabled>"
    doc += "</RetentionPolicy></Logging></StorageServiceProperties>"
    status, code, body = await _bearer(bearer_raw, "PUT", "/", PROPS, doc)
    assert (status, code) == (202, None), body
    status, code, body = await _bearer(bearer_raw, "GET", "/", PROPS)
    assert (status, code) == (200, None), body
    assert etree.fromstring(body).findtext("Logging/Delete") == "true"


async def test_bearer_gets_and_sets_table_acls(bearer_raw: RawClient) -> None:
    """RBAC actions tables/getAcl/action and tables/setAcl/action (Entra ID page); a missing
    table is 404 ResourceNotFound, as test_aad_access_policy_error recorded."""
    await make_table(bearer_raw)
    status, code, body = await _bearer(bearer_raw, "PUT", "/mytable", ACL, ACL_DOC)
    assert (status, code) == (204, None), body
    status, code, body = await _bearer(bearer_raw, "GET", "/mytable", ACL)
    assert (status, code) == (200, None), body
    assert etree.fromstring(body).findtext("SignedIdentifier/Id") == "readers"
    for method, doc in (("GET", None), ("PUT", ACL_DOC)):
        status, code, body = await _bearer(bearer_raw, method, "/nosuchtable", ACL, doc)
        assert (status, code) == (404, "ResourceNotFound"), body


async def test_a_sas_still_may_not_touch_acls(raw: RawClient) -> None:
    """ "Only the account owner may call this operation": a SAS is refused (403)."""
    await make_table(raw)
    r = await raw.request("GET", "/mytable", auth="none", query=ACL, raw_query=_sas())
    assert (r.status, r.code) == (403, "AuthorizationFailure")
