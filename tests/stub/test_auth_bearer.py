"""Opt-in bearer tokens (audience, lifetime; signature deliberately not verified)."""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

import pytest

from azt_server_stub.auth import BEARER_CHALLENGE, AuthOptions, Operation, www_authenticate
from azt_server_stub.errors import StubError
from tests.stub.test_auth_support import DEV_ACCOUNT, authenticator, view

NOW = dt.datetime(2026, 11, 21, 12, 0, 0, tzinfo=dt.UTC)
STAMP = int(NOW.timestamp())
ON = AuthOptions(allow_bearer=True)


def b64url(data: dict[str, Any] | bytes) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def token(claims: dict[str, Any] | None = None, **overrides: Any) -> str:
    payload: dict[str, Any] = {
        "aud": "https://storage.azure.com",
        "iss": "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
        "nbf": STAMP - 60,
        "exp": STAMP + 3600,
        "oid": "11111111-1111-1111-1111-111111111111",
    }
    payload.update(claims or {})
    payload.update(overrides)
    payload = {k: v for k, v in payload.items() if v is not None}
    return f"{b64url({'alg': 'RS256', 'typ': 'JWT'})}.{b64url(payload)}.c2lnbmF0dXJl"


def bearer(
    tok: str,
    *,
    options: AuthOptions = ON,
    scheme: str = "https",
    headers: dict[str, str] | None = None,
    account: str = DEV_ACCOUNT,
    now: dt.datetime = NOW,
) -> Any:
    request = view(
        headers={"Authorization": f"Bearer {tok}", **(headers or {})},
        scheme=scheme,
    )
    return authenticator(now=now, options=options).authenticate(request, account, None)


def refused(tok: str, **kwargs: Any) -> StubError:
    with pytest.raises(StubError) as excinfo:
        bearer(tok, **kwargs)
    return excinfo.value


def test_disabled_by_default_with_401() -> None:
    err = refused(token(), options=AuthOptions())
    assert (err.status, err.code) == (401, "InvalidAuthenticationInfo")
    assert www_authenticate(err) == BEARER_CHALLENGE


def test_valid_token_gives_a_bearer_principal_with_claims() -> None:
    principal = bearer(token())
    assert (principal.scheme, principal.account) == ("Bearer", DEV_ACCOUNT)
    assert principal.claims["oid"] == "11111111-1111-1111-1111-111111111111"
    for op in Operation:
        principal.authorize(op, "t")
    assert principal.key_filter is None


def test_token_signature_is_not_verified() -> None:
    head, body, _ = token().split(".")
    bearer(f"{head}.{body}.")
    bearer(f"{head}.{body}.bm90LWEtc2lnbmF0dXJl")


def test_plain_http_is_refused_unless_allowed() -> None:
    err = refused(token(), scheme="http")
    assert (err.status, err.code) == (403, "AuthenticationFailed")
    assert err.details["AuthenticationErrorDetail"] == (
        "Authentication scheme Bearer is not allowed with HTTP."
    )
    assert bearer(
        token(), scheme="http", options=AuthOptions(allow_bearer=True, bearer_allow_http=True)
    )


@pytest.mark.parametrize(
    "aud",
    [
        "https://storage.azure.com",
        "https://storage.azure.com/",
        "e406a681-f3d4-42a8-90b6-c2b029497af1",
        f"https://{DEV_ACCOUNT}.table.core.windows.net",
        f"https://{DEV_ACCOUNT}.table.core.windows.net/",
        f"https://{DEV_ACCOUNT}.table.core.chinacloudapi.cn",
        f"https://{DEV_ACCOUNT}.table.core.usgovcloudapi.net",
        f"https://{DEV_ACCOUNT}.table.core.cloudapi.de",
        "https://127.0.0.1:10002",
        f"https://127.0.0.1:10002/{DEV_ACCOUNT}",
        ["https://elsewhere.example", "https://storage.azure.com"],
    ],
)
def test_accepted_audiences(aud: str | list[str]) -> None:
    bearer(token(aud=aud), headers={"Host": "127.0.0.1:10002"})


@pytest.mark.parametrize(
    "aud",
    [
        "https://vault.azure.net",
        f"https://{DEV_ACCOUNT}.blob.core.windows.net",
        "https://otheraccount.table.core.windows.net",
        "http://storage.azure.com",
        "https://127.0.0.1:9999",
        ["https://a.example", "https://b.example"],
        None,
        42,
    ],
)
def test_refused_audiences(aud: Any) -> None:
    err = refused(token(aud=aud), headers={"Host": "127.0.0.1:10002"})
    assert (err.status, err.code) == (401, "InvalidAuthenticationInfo")
    assert err.details["AuthenticationErrorDetail"] == (
        "Audience validation failed. Audience did not match."
    )


def test_configured_audience() -> None:
    options = AuthOptions(allow_bearer=True, bearer_audiences=("api://my-app",))
    bearer(token(aud="api://my-app/"), options=options)
    with pytest.raises(StubError):
        bearer(token(), options=options)  # the default list is replaced


@pytest.mark.parametrize(
    ("claims", "ok", "fragment"),
    [
        ({"exp": STAMP - 299}, True, ""),  # expired, inside the 5 min leeway
        ({"exp": STAMP - 301}, False, "expired"),
        ({"exp": None}, False, "Expiration"),
        ({"exp": "soon"}, False, "not a number"),
        ({"nbf": STAMP + 299}, True, ""),
        ({"nbf": STAMP + 301}, False, "not yet valid"),
        ({"nbf": None}, True, ""),
    ],
)
def test_lifetime(claims: dict[str, Any], ok: bool, fragment: str) -> None:
    tok = token(claims)
    if ok:
        bearer(tok)
        return
    err = refused(tok)
    assert (err.status, err.code) == (401, "InvalidAuthenticationInfo")
    assert fragment in err.details["AuthenticationErrorDetail"]


def test_leeway_is_configurable() -> None:
    options = AuthOptions(allow_bearer=True, bearer_leeway_seconds=0)
    with pytest.raises(StubError):
        bearer(token(exp=STAMP - 1), options=options)


@pytest.mark.parametrize(
    "tok",
    [
        "abc",
        "a.b",
        "a.b.c.d",
        ".e30.",
        f"{b64url(b'not json')}.{b64url({'aud': 'x'})}.",
        f"{b64url({'alg': 'none'})}.{b64url(b'[1, 2]')}.",
        f"{b64url({'alg': 'none'})}.!!!.",
    ],
)
def test_malformed_tokens(tok: str) -> None:
    err = refused(tok)
    assert (err.status, err.code) == (401, "InvalidAuthenticationInfo")


def test_old_versions_refuse_bearer() -> None:
    err = refused(token(), headers={"x-ms-version": "2018-03-28"})
    assert (err.status, err.code) == (403, "AuthenticationFailed")
    assert "not supported in this version" in err.details["AuthenticationErrorDetail"]
    bearer(token(), headers={"x-ms-version": "2019-02-02"})


def test_unknown_account_is_refused() -> None:
    err = refused(token(), account="nosuch")
    assert (err.status, err.code) == (403, "AuthenticationFailed")


def test_empty_bearer_is_malformed() -> None:
    request = view(headers={"Authorization": "Bearer "}, scheme="https")
    with pytest.raises(StubError) as excinfo:
        authenticator(options=ON).authenticate(request, DEV_ACCOUNT, None)
    assert (excinfo.value.status, excinfo.value.code) == (400, "InvalidAuthenticationInfo")
