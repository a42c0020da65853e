"""Shared Key / Shared Key Lite verification (PROTOCOL.md 10.2-10.6 and appendix A)."""

from __future__ import annotations

import datetime as dt

import pytest

from azt_server_stub.auth import (
    BEARER_CHALLENGE,
    AuthOptions,
    Operation,
    compute_signature,
    shared_key_string_to_sign,
    www_authenticate,
)
from azt_server_stub.errors import StubError
from tests.stub.test_auth_support import (
    DEV_ACCOUNT,
    DEV_KEY,
    VECTOR_DATE,
    VECTOR_NOW,
    authenticator,
    view,
)

# (scheme, method, path, extra headers, string-to-sign, signature, account as addressed)
VECTORS = [
    (
        "SharedKey",
        "GET",
        "/devstoreaccount1/Tables",
        {},
        f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1/devstoreaccount1/Tables",
        "6x3Y/FLgh8/ozJ8YPcIAguM4et4HbaViJozb+kRb6aI=",
    ),
    (
        "SharedKeyLite",
        "GET",
        "/devstoreaccount1/Tables",
        {},
        f"{VECTOR_DATE}\n/devstoreaccount1/devstoreaccount1/Tables",
        "0t5frBDAHUb3TEbAMT7v9wwgj+L4V00scNDQC6plt2w=",
    ),
    (
        "SharedKey",
        "POST",
        "/devstoreaccount1/mytable",
        {"Content-Type": "application/json"},
        f"POST\n\napplication/json\n{VECTOR_DATE}\n/devstoreaccount1/devstoreaccount1/mytable",
        "FYWZ8FJBiH/Fjk26/x5ffr9OJObJ983OKvV2FoJegA4=",
    ),
    (
        "SharedKey",
        "GET",
        "/devstoreaccount1/mytable?comp=acl",
        {},
        f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1/devstoreaccount1/mytable?comp=acl",
        "1va20X1TzUg2DOJJi740thS1CJgVqys2hHethbNVFWA=",
    ),
    (
        "SharedKey",
        "GET",
        "/devstoreaccount1/?restype=service&comp=properties",
        {},
        f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1/devstoreaccount1/?comp=properties",
        "S9VW4aXfa5gdIIIaf/jmkVtOTcIDwawgWt3SvYUd49I=",
    ),
    (
        "SharedKey",
        "GET",
        "/mytable(PartitionKey='pk',RowKey='rk')",
        {},
        f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1/mytable(PartitionKey='pk',RowKey='rk')",
        "2tFCMy5ZegXwMqi5iB2PQoWCkkrnyU4IzJSm4gu+O1E=",
    ),
]


def _split(path_and_query: str) -> tuple[str, str]:
    path, _, query = path_and_query.partition("?")
    return path, query


def _signed(
    method: str,
    path_and_query: str,
    headers: dict[str, str],
    *,
    scheme: str = "SharedKey",
    key: bytes = DEV_KEY,
    account: str = DEV_ACCOUNT,
    sts: str | None = None,
) -> dict[str, str]:
    """Headers for a request signed by the stub's own string-to-sign (or ``sts``)."""
    path, query = _split(path_and_query)
    base = {"x-ms-date": VECTOR_DATE, **headers}
    if sts is None:
        sts = shared_key_string_to_sign(
            view(method, path, query, base), account, lite=scheme == "SharedKeyLite"
        )
    return {**base, "Authorization": f"{scheme} {account}:{compute_signature(key, sts)}"}


def _refusal(excinfo: pytest.ExceptionInfo[StubError]) -> tuple[int, str]:
    return excinfo.value.status, excinfo.value.code


@pytest.mark.parametrize(("scheme", "method", "target", "extra", "sts", "sig"), VECTORS)
def test_appendix_a_vectors(
    scheme: str, method: str, target: str, extra: dict[str, str], sts: str, sig: str
) -> None:
    path, query = _split(target)
    headers = {"x-ms-date": VECTOR_DATE, **extra}
    request = view(method, path, query, headers)
    assert shared_key_string_to_sign(request, DEV_ACCOUNT, lite=scheme == "SharedKeyLite") == sts
    assert compute_signature(DEV_KEY, sts) == sig
    signed = view(
        method, path, query, {**headers, "Authorization": f"{scheme} {DEV_ACCOUNT}:{sig}"}
    )
    principal = authenticator().authenticate(signed, DEV_ACCOUNT, None)
    assert (principal.account, principal.scheme, principal.secondary) == (
        DEV_ACCOUNT,
        scheme,
        False,
    )


@pytest.mark.parametrize(("scheme", "method", "target", "extra", "sts", "sig"), VECTORS)
def test_vector_with_one_flipped_character_is_refused_with_the_string_to_sign(
    scheme: str, method: str, target: str, extra: dict[str, str], sts: str, sig: str
) -> None:
    path, query = _split(target)
    bad = ("A" if sig[0] != "A" else "B") + sig[1:]
    headers = {"x-ms-date": VECTOR_DATE, **extra, "Authorization": f"{scheme} {DEV_ACCOUNT}:{bad}"}
    with pytest.raises(StubError) as excinfo:
        authenticator().authenticate(view(method, path, query, headers), DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (403, "AuthenticationFailed")
    detail = excinfo.value.details["AuthenticationErrorDetail"]
    assert f"'{bad}'" in detail
    assert f"Server used following string to sign: '{sts}'." in detail


def test_second_key_is_accepted_and_a_third_is_not() -> None:
    key1, key2, other = b"k1" * 16, b"k2" * 16, b"k3" * 16
    auth = authenticator(accounts={"acct": [key1, key2]})
    for key in (key1, key2):
        headers = _signed("GET", "/acct/Tables", {}, key=key, account="acct")
        assert auth.authenticate(view("GET", "/acct/Tables", "", headers), "acct", None)
    headers = _signed("GET", "/acct/Tables", {}, key=other, account="acct")
    with pytest.raises(StubError) as excinfo:
        auth.authenticate(view("GET", "/acct/Tables", "", headers), "acct", None)
    assert _refusal(excinfo) == (403, "AuthenticationFailed")


def test_x_ms_date_wins_over_date() -> None:
    later = "Mon, 27 Jun 2016 15:26:00 GMT"
    res = "/devstoreaccount1/devstoreaccount1/Tables"
    good = compute_signature(DEV_KEY, f"GET\n\n\n{VECTOR_DATE}\n{res}")
    bad = compute_signature(DEV_KEY, f"GET\n\n\n{later}\n{res}")
    auth = authenticator()
    both = {"x-ms-date": VECTOR_DATE, "Date": later}
    auth.authenticate(
        view(headers={**both, "Authorization": f"SharedKey {DEV_ACCOUNT}:{good}"}),
        DEV_ACCOUNT,
        None,
    )
    with pytest.raises(StubError):
        auth.authenticate(
            view(headers={**both, "Authorization": f"SharedKey {DEV_ACCOUNT}:{bad}"}),
            DEV_ACCOUNT,
            None,
        )


def test_date_header_is_used_without_x_ms_date() -> None:
    sts = f"{VECTOR_DATE}\n/devstoreaccount1/devstoreaccount1/Tables"
    headers = {
        "Date": VECTOR_DATE,
        "Authorization": f"SharedKeyLite {DEV_ACCOUNT}:{compute_signature(DEV_KEY, sts)}",
    }
    principal = authenticator().authenticate(view(headers=headers), DEV_ACCOUNT, None)
    assert principal.scheme == "SharedKeyLite"


def test_missing_date_is_authentication_failed() -> None:
    headers = {"Authorization": f"SharedKey {DEV_ACCOUNT}:6x3Y/FLgh8/ozJ8YPcIAguM4et4HbaViJozb"}
    with pytest.raises(StubError) as excinfo:
        authenticator().authenticate(view(headers=headers), DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (403, "AuthenticationFailed")
    assert "date" in excinfo.value.details["AuthenticationErrorDetail"].lower()


@pytest.mark.parametrize(
    ("offset_seconds", "accepted"),
    [
        (0, True),
        (15 * 60, True),  # exactly 15 minutes old
        (15 * 60 + 1, False),  # too old
        (-15 * 60, True),  # 15 minutes in the future
        (-15 * 60 - 1, False),  # too far in the future
    ],
)
def test_clock_skew_window_is_fifteen_minutes_both_ways(
    offset_seconds: int, accepted: bool
) -> None:
    now = VECTOR_NOW + dt.timedelta(seconds=offset_seconds)
    headers = _signed("GET", "/devstoreaccount1/Tables", {})
    request = view(headers=headers)
    if accepted:
        authenticator(now=now).authenticate(request, DEV_ACCOUNT, None)
        return
    with pytest.raises(StubError) as excinfo:
        authenticator(now=now).authenticate(request, DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (403, "AuthenticationFailed")
    detail = excinfo.value.details["AuthenticationErrorDetail"]
    assert VECTOR_DATE in detail
    assert ("too old" in detail) == (offset_seconds > 0)


def test_clock_skew_check_can_be_switched_off_and_tuned() -> None:
    headers = _signed("GET", "/devstoreaccount1/Tables", {})
    a_year_later = VECTOR_NOW + dt.timedelta(days=365)
    off = authenticator(now=a_year_later, options=AuthOptions(check_clock_skew=False))
    off.authenticate(view(headers=headers), DEV_ACCOUNT, None)
    tight = authenticator(
        now=VECTOR_NOW + dt.timedelta(seconds=61), options=AuthOptions(max_clock_skew_seconds=60)
    )
    with pytest.raises(StubError):
        tight.authenticate(view(headers=headers), DEV_ACCOUNT, None)


def test_malformed_date_is_refused_only_when_skew_is_checked() -> None:
    bogus = "yesterday-ish"
    sts = f"GET\n\n\n{bogus}\n/devstoreaccount1/devstoreaccount1/Tables"
    headers = {
        "x-ms-date": bogus,
        "Authorization": f"SharedKey {DEV_ACCOUNT}:{compute_signature(DEV_KEY, sts)}",
    }
    with pytest.raises(StubError) as excinfo:
        authenticator().authenticate(view(headers=headers), DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (403, "AuthenticationFailed")
    off = authenticator(options=AuthOptions(check_clock_skew=False))
    assert off.authenticate(view(headers=headers), DEV_ACCOUNT, None).scheme == "SharedKey"


@pytest.mark.parametrize(
    "header",
    [
        "",
        "SharedKey",
        "SharedKey ",
        "SharedKey devstoreaccount1",
        "SharedKey devstoreaccount1:",
        "SharedKey :abc=",
        "SharedKey devstoreaccount1 :abc=",
        "Basic dXNlcjpwYXNz",
        "Digest devstoreaccount1:abc=",
    ],
)
def test_malformed_authorization_is_invalid_authentication_info(header: str) -> None:
    request = view(headers={"x-ms-date": VECTOR_DATE, "Authorization": header})
    with pytest.raises(StubError) as excinfo:
        authenticator().authenticate(request, DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (400, "InvalidAuthenticationInfo")


def test_scheme_name_is_matched_case_insensitively() -> None:
    headers = _signed("GET", "/devstoreaccount1/Tables", {})
    headers["Authorization"] = headers["Authorization"].replace("SharedKey", "sharedkey", 1)
    assert authenticator().authenticate(view(headers=headers), DEV_ACCOUNT, None).scheme == (
        "SharedKey"
    )


def test_unknown_account_is_authentication_failed() -> None:
    headers = _signed("GET", "/nosuch/Tables", {}, account="nosuch")
    with pytest.raises(StubError) as excinfo:
        authenticator().authenticate(view("GET", "/nosuch/Tables", "", headers), "nosuch", None)
    assert _refusal(excinfo) == (403, "AuthenticationFailed")


def test_header_account_must_be_the_addressed_account() -> None:
    key = b"x" * 32
    auth = authenticator(accounts={DEV_ACCOUNT: [DEV_KEY], "other": [key]})
    headers = _signed("GET", "/devstoreaccount1/Tables", {}, key=key, account="other")
    with pytest.raises(StubError) as excinfo:
        auth.authenticate(view(headers=headers), DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (403, "AuthenticationFailed")
    assert "other" in excinfo.value.details["AuthenticationErrorDetail"]


def test_content_md5_and_content_type_are_signed_but_not_length_or_other_headers() -> None:
    extra = {"Content-Type": "application/json", "Content-MD5": "abc=="}
    sts = (
        f"PUT\nabc==\napplication/json\n{VECTOR_DATE}\n"
        "/devstoreaccount1/devstoreaccount1/t(PartitionKey='a',RowKey='b')"
    )
    path = "/devstoreaccount1/t(PartitionKey='a',RowKey='b')"
    headers = _signed("PUT", path, extra, sts=sts)
    noise = {"Content-Length": "12", "If-Match": "*", "x-ms-version": "2019-02-02"}
    auth = authenticator()
    auth.authenticate(view("PUT", path, "", {**headers, **noise}), DEV_ACCOUNT, None)
    tampered = {**headers, "Content-Type": "application/atom+xml"}
    with pytest.raises(StubError):
        auth.authenticate(view("PUT", path, "", tampered), DEV_ACCOUNT, None)


def test_verb_is_signed_as_sent() -> None:
    path = "/devstoreaccount1/t(PartitionKey='a',RowKey='b')"
    auth = authenticator()
    for method in ("POST", "MERGE", "PATCH", "DELETE"):
        headers = _signed(method, path, {})
        auth.authenticate(view(method, path, "", headers), DEV_ACCOUNT, None)
    headers = _signed("POST", path, {})
    with pytest.raises(StubError):
        auth.authenticate(view("MERGE", path, "", headers), DEV_ACCOUNT, None)


def test_raw_path_keeps_percent_encoding() -> None:
    raw = "/devstoreaccount1/t(PartitionKey='a%27%27b',RowKey='%2A')"
    decoded = "/devstoreaccount1/t(PartitionKey='a''b',RowKey='*')"
    sts_raw = f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1{raw}"
    sts_decoded = f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1{decoded}"
    auth = authenticator()
    auth.authenticate(view("GET", raw, "", _signed("GET", raw, {}, sts=sts_raw)), DEV_ACCOUNT, None)
    with pytest.raises(StubError):
        auth.authenticate(
            view("GET", raw, "", _signed("GET", raw, {}, sts=sts_decoded)), DEV_ACCOUNT, None
        )


def test_only_comp_takes_part_in_the_canonical_resource() -> None:
    request = view(
        "GET",
        "/devstoreaccount1/mytable",
        "timeout=30&comp=acl&restype=table&$filter=x",
        {"x-ms-date": VECTOR_DATE},
    )
    sts = shared_key_string_to_sign(request, DEV_ACCOUNT)
    assert sts.endswith("\n/devstoreaccount1/devstoreaccount1/mytable?comp=acl")
    no_comp = view("GET", "/devstoreaccount1/mytable", "timeout=30", {"x-ms-date": VECTOR_DATE})
    assert shared_key_string_to_sign(no_comp, DEV_ACCOUNT).endswith("/devstoreaccount1/mytable")


@pytest.mark.parametrize(
    "signed_resource",
    [
        "/devstoreaccount1/devstoreaccount1/Tables",  # Azure: -secondary dropped
        "/devstoreaccount1/devstoreaccount1-secondary/Tables",  # newer SDKs: path as sent
    ],
)
def test_path_style_secondary_accepts_both_signing_forms(signed_resource: str) -> None:
    path = "/devstoreaccount1-secondary/Tables"
    sts = f"GET\n\n\n{VECTOR_DATE}\n{signed_resource}"
    headers = _signed("GET", path, {}, sts=sts)
    principal = authenticator().authenticate(
        view("GET", path, "", headers), "devstoreaccount1-secondary", None
    )
    assert (principal.account, principal.secondary) == (DEV_ACCOUNT, True)


def test_secondary_refuses_a_foreign_signing_form_and_reports_the_primary_form() -> None:
    path = "/devstoreaccount1-secondary/Tables"
    sts = f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1-secondary/devstoreaccount1-secondary/Tables"
    headers = _signed("GET", path, {}, sts=sts)
    with pytest.raises(StubError) as excinfo:
        authenticator().authenticate(
            view("GET", path, "", headers), f"{DEV_ACCOUNT}-secondary", None
        )
    assert (
        "'GET\n\n\n" + VECTOR_DATE + "\n/devstoreaccount1/devstoreaccount1/Tables'"
        in (excinfo.value.details["AuthenticationErrorDetail"])
    )


def test_host_style_secondary_signs_the_primary_name() -> None:
    sts = f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1/Tables"
    headers = _signed("GET", "/Tables", {}, sts=sts)
    principal = authenticator().authenticate(
        view("GET", "/Tables", "", headers), f"{DEV_ACCOUNT}-secondary", None
    )
    assert principal.secondary


def test_an_account_really_named_secondary_is_not_stripped() -> None:
    key = b"s" * 32
    name = "acct-secondary"
    auth = authenticator(accounts={name: [key]})
    sts = f"GET\n\n\n{VECTOR_DATE}\n/{name}/{name}/Tables"
    headers = _signed("GET", f"/{name}/Tables", {}, key=key, account=name, sts=sts)
    principal = auth.authenticate(view("GET", f"/{name}/Tables", "", headers), name, None)
    assert (principal.account, principal.secondary) == (name, False)


def test_secondary_is_read_only() -> None:
    path = "/devstoreaccount1-secondary/Tables"
    headers = _signed("GET", path, {}, sts=f"GET\n\n\n{VECTOR_DATE}\n/devstoreaccount1{path}")
    principal = authenticator().authenticate(
        view("GET", path, "", headers), f"{DEV_ACCOUNT}-secondary", None
    )
    for op in (Operation.QUERY_TABLES, Operation.QUERY_ENTITIES, Operation.GET_TABLE_ACL):
        principal.authorize(op, "mytable")
    for op in (Operation.INSERT_ENTITY, Operation.CREATE_TABLE, Operation.BATCH):
        with pytest.raises(StubError) as excinfo:
            principal.authorize(op, "mytable")
        assert _refusal(excinfo) == (403, "AuthorizationFailure")


def test_key_principal_may_do_everything_without_key_range() -> None:
    headers = _signed("GET", "/devstoreaccount1/Tables", {})
    principal = authenticator().authenticate(view(headers=headers), DEV_ACCOUNT, None)
    for op in Operation:
        principal.authorize(op, "anytable")
    assert principal.key_allowed("\uffff", "")
    principal.check_key("any", "thing")
    assert principal.key_filter is None
    assert principal.key_range is None


def test_no_credentials_is_401_or_azurite_403() -> None:
    with pytest.raises(StubError) as excinfo:
        authenticator().authenticate(view(), DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (401, "NoAuthenticationInformation")
    assert www_authenticate(excinfo.value) == BEARER_CHALLENGE
    azurite = authenticator(options=AuthOptions(anonymous_status_azurite=True))
    with pytest.raises(StubError) as excinfo:
        azurite.authenticate(view(), DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (403, "AuthorizationFailure")
    assert www_authenticate(excinfo.value) is None


def test_authorization_header_with_a_sas_in_the_query_is_400() -> None:
    """Was "the header wins" (Azurite's order); changed to follow the service: two
    credentials are 400 InvalidAuthenticationInfo, neither is evaluated
    (Azure/azure-sdk-for-net#46263, issue 18.5). A query without sig is no SAS."""
    headers = _signed("GET", "/devstoreaccount1/Tables", {})
    request = view("GET", "/devstoreaccount1/Tables", "sv=2019-02-02&sig=bogus", headers)
    with pytest.raises(StubError) as excinfo:
        authenticator().authenticate(request, DEV_ACCOUNT, None)
    assert _refusal(excinfo) == (400, "InvalidAuthenticationInfo")
    request = view("GET", "/devstoreaccount1/Tables", "sv=2019-02-02", headers)
    assert authenticator().authenticate(request, DEV_ACCOUNT, None).scheme == "SharedKey"


def test_string_to_sign_helper_needs_a_date() -> None:
    with pytest.raises(StubError) as excinfo:
        shared_key_string_to_sign(view(), DEV_ACCOUNT)
    assert _refusal(excinfo) == (403, "AuthenticationFailed")
