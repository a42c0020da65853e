"""Service SAS and account SAS (PROTOCOL.md 10.7-10.9 and appendix A)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from azt_server_stub.auth import (
    AuthOptions,
    KeyRange,
    Operation,
    Principal,
    SasGrant,
    compute_signature,
)
from azt_server_stub.backend import SignedIdentifier
from azt_server_stub.errors import StubError, table_not_found
from tests.stub.test_auth_support import (
    DEV_ACCOUNT,
    DEV_KEY,
    SAS_NOW,
    authenticator,
    encode_query,
    view,
)

PATH = f"/{DEV_ACCOUNT}/mytable()"
BASE = {"sv": "2019-02-02", "tn": "mytable", "sp": "raud", "se": "2030-01-01T00:00:00Z"}
ACCOUNT_BASE = {
    "sv": "2019-02-02",
    "ss": "t",
    "srt": "sco",
    "sp": "rwdlacu",
    "se": "2030-01-01T00:00:00Z",
}


def service_sts(params: dict[str, str], account: str = DEV_ACCOUNT) -> str:
    """An independent rendering of the service SAS string-to-sign (PROTOCOL.md 10.7)."""
    sv, table = params["sv"], params["tn"].lower()
    resource = f"/table/{account}/{table}" if sv >= "2015-02-21" else f"/{account}/{table}"
    g = params.get
    lines = [g("sp", ""), g("st", ""), g("se", ""), resource, g("si", "")]
    if sv >= "2015-04-05":
        lines += [g("sip", ""), g("spr", "")]
    lines += [sv, g("spk", ""), g("srk", ""), g("epk", ""), g("erk", "")]
    return "\n".join(lines)


def account_sts(params: dict[str, str], account: str = DEV_ACCOUNT) -> str:
    """An independent rendering of the account SAS string-to-sign (PROTOCOL.md 10.8)."""
    g = params.get
    names = ["sp", "ss", "srt", "st", "se", "sip", "spr", "sv"]
    if params["sv"] >= "2020-12-06":
        names.append("ses")
    return "\n".join([account] + [g(n, "") for n in names]) + "\n"


def service_sas(params: dict[str, str], key: bytes = DEV_KEY) -> str:
    return encode_query({**params, "sig": compute_signature(key, service_sts(params))})


def account_sas(params: dict[str, str], key: bytes = DEV_KEY) -> str:
    return encode_query({**params, "sig": compute_signature(key, account_sts(params))})


def auth_sas(
    query: str,
    *,
    now: dt.datetime = SAS_NOW,
    scheme: str = "https",
    remote_ip: str = "127.0.0.1",
    policies: Sequence[SignedIdentifier] = (),
    account: str = DEV_ACCOUNT,
    path: str = PATH,
    method: str = "GET",
) -> Principal:
    seen: list[tuple[str, str]] = []

    def lookup(acct: str, table: str) -> list[SignedIdentifier]:
        seen.append((acct, table))
        return list(policies)

    auth = authenticator(now=now, policies=lookup)
    request = view(method, path, query, scheme=scheme, remote_ip=remote_ip)
    principal = auth.authenticate(request, account, "mytable")
    assert all(acct == DEV_ACCOUNT for acct, _ in seen)
    return principal


def refusal(query: str, **kwargs: object) -> StubError:
    with pytest.raises(StubError) as excinfo:
        auth_sas(query, **kwargs)  # type: ignore[arg-type]
    return excinfo.value


def code(err: StubError) -> tuple[int, str]:
    return err.status, err.code


def detail(err: StubError) -> str:
    return err.details.get("AuthenticationErrorDetail", "")


# --- appendix A -------------------------------------------------------------------

SAS_VECTORS = [
    (
        "service",
        {
            "sp": "raud",
            "st": "2024-01-01T00:00:00Z",
            "se": "2030-01-01T00:00:00Z",
            "spr": "https,http",
            "sv": "2019-02-02",
            "tn": "mytable",
        },
        "raud\n2024-01-01T00:00:00Z\n2030-01-01T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\n"
        "https,http\n2019-02-02\n\n\n\n",
        "ld0dyBZVi/EikXBt4CXVqZUzdpDF63sBot7QHSCeF4o=",
    ),
    (
        "service",
        {
            "sp": "r",
            "se": "2030-01-01T00:00:00Z",
            "sv": "2019-02-02",
            "tn": "mytable",
            "spk": "pk1",
            "epk": "pk1",
        },
        "r\n\n2030-01-01T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\n\n2019-02-02\npk1\n\npk1\n",
        "jNFwfE4jeF82B3YtMp//fekzyr9mfeM9SPat+AXIPAc=",
    ),
    (
        "account",
        {
            "sv": "2019-02-02",
            "ss": "t",
            "srt": "sco",
            "sp": "rwdlacu",
            "se": "2030-01-01T00:00:00Z",
            "spr": "https,http",
        },
        "devstoreaccount1\nrwdlacu\nt\nsco\n\n2030-01-01T00:00:00Z\n\nhttps,http\n2019-02-02\n",
        "dKEa4zPUq/dWdOLrCYusn1Jnz45OJCCdBPi+hMWeijk=",
    ),
    (
        "account",
        {
            "sv": "2020-12-06",
            "ss": "t",
            "srt": "sco",
            "sp": "rwdlacu",
            "se": "2030-01-01T00:00:00Z",
            "spr": "https,http",
        },
        "devstoreaccount1\nrwdlacu\nt\nsco\n\n2030-01-01T00:00:00Z\n\nhttps,http\n2020-12-06\n\n",
        "aQbb1uM9CNZPJhjuzMWpvrja5t6VW2FlvCUFVvjctAk=",
    ),
]


@pytest.mark.parametrize(("kind", "params", "sts", "sig"), SAS_VECTORS)
def test_appendix_a_sas_vectors(kind: str, params: dict[str, str], sts: str, sig: str) -> None:
    assert compute_signature(DEV_KEY, sts) == sig
    principal = auth_sas(encode_query({**params, "sig": sig}))
    assert principal.scheme == ("ServiceSas" if kind == "service" else "AccountSas")
    assert principal.account == DEV_ACCOUNT
    assert "sig" not in principal.sas
    assert principal.sas["se"] == params["se"]
    # The server's string-to-sign is the vector's: a wrong signature reports it verbatim.
    wrong = "A" + sig[1:] if sig[0] != "A" else "B" + sig[1:]
    err = refusal(encode_query({**params, "sig": wrong}))
    assert code(err) == (403, "AuthenticationFailed")
    assert detail(err) == f"Signature did not match. String to sign used was {sts}"


def test_independent_renderings_reproduce_the_vectors() -> None:
    for kind, params, sts, _ in SAS_VECTORS:
        assert (service_sts(params) if kind == "service" else account_sts(params)) == sts


# --- service SAS: fields, signature, versions ------------------------------------


@pytest.mark.parametrize("missing", ["sv", "sig", "tn", "se", "sp"])
def test_service_sas_required_fields(missing: str) -> None:
    signed = service_sas(BASE)
    query = "&".join(p for p in signed.split("&") if not p.startswith(missing + "="))
    err = refusal(query)
    assert code(err) == (403, "AuthenticationFailed")
    assert missing in detail(err)


def test_service_sas_signed_with_wrong_key_or_other_account_fails() -> None:
    err = refusal(service_sas(BASE, key=b"z" * 64))
    assert code(err) == (403, "AuthenticationFailed")
    assert detail(err).startswith("Signature did not match.")
    query = encode_query(
        {**BASE, "sig": compute_signature(DEV_KEY, service_sts(BASE, account="other"))}
    )
    assert code(refusal(query)) == (403, "AuthenticationFailed")


def test_service_sas_fields_are_all_signed() -> None:
    signed = service_sas({**BASE, "spk": "a"})
    tampered = signed.replace("spk=a", "spk=b")
    assert code(refusal(tampered)) == (403, "AuthenticationFailed")
    assert code(refusal(signed.replace("sp=raud", "sp=rau"))) == (403, "AuthenticationFailed")


def test_table_name_is_signed_lower_case_and_matched_case_insensitively() -> None:
    principal = auth_sas(service_sas({**BASE, "tn": "MyTable"}))
    principal.authorize(Operation.QUERY_ENTITIES, "mytable")
    principal.authorize(Operation.QUERY_ENTITIES, "MYTABLE")
    with pytest.raises(StubError) as excinfo:
        principal.authorize(Operation.QUERY_ENTITIES, "othertable")
    assert code(excinfo.value) == (403, "AuthorizationFailure")
    # A signature over the table name as typed (not lower-cased) is refused.
    params = {**BASE, "tn": "MyTable"}
    bad_sts = service_sts({**params, "tn": "mytable"}).replace("/mytable", "/MyTable")
    query = encode_query({**params, "sig": compute_signature(DEV_KEY, bad_sts)})
    assert code(refusal(query)) == (403, "AuthenticationFailed")


@pytest.mark.parametrize(
    ("sv", "expected_lines"),
    [
        ("2012-02-12", 10),  # /account/table, no sip/spr
        ("2013-08-15", 10),
        ("2015-02-21", 10),  # /table/ prefix, still no sip/spr
        ("2015-04-05", 12),
        ("2017-07-29", 12),
        ("2020-12-06", 12),
    ],
)
def test_service_sas_string_to_sign_variants(sv: str, expected_lines: int) -> None:
    params = {**BASE, "sv": sv}
    sts = service_sts(params)
    assert len(sts.split("\n")) == expected_lines
    assert ("/table/" in sts) == (sv >= "2015-02-21")
    principal = auth_sas(service_sas(params))
    assert principal.grant is not None
    assert principal.grant.version == sv
    err = refusal(encode_query({**params, "sig": "x" + compute_signature(DEV_KEY, sts)[1:]}))
    assert detail(err) == f"Signature did not match. String to sign used was {sts}"


def test_old_service_sas_ignores_unsigned_ip_and_protocol() -> None:
    params = {**BASE, "sv": "2013-08-15"}
    query = service_sas(params) + "&sip=10.0.0.1&spr=https"
    auth_sas(query, scheme="http", remote_ip="192.168.1.1")


@pytest.mark.parametrize("sv", ["2011-08-18", "2099-01-01", "yesterday", "2019-13-01"])
def test_service_sas_unusable_versions(sv: str) -> None:
    err = refusal(service_sas({**BASE, "sv": sv}))
    assert code(err) == (403, "AuthenticationFailed")
    assert sv in detail(err)


def test_unknown_intermediate_sas_version_uses_the_nearest_older_rules() -> None:
    principal = auth_sas(service_sas({**BASE, "sv": "2019-03-01"}))
    assert principal.grant is not None
    assert principal.grant.version == "2019-02-02"


@pytest.mark.parametrize("sp", ["rw", "x", "rl", "R"])
def test_service_sas_permission_letters_outside_raud_are_malformed(sp: str) -> None:
    err = refusal(service_sas({**BASE, "sp": sp}))
    assert code(err) == (403, "AuthenticationFailed")
    assert detail(err) == "Signature fields not well formed."


def test_service_sas_permission_order_is_not_enforced() -> None:
    principal = auth_sas(service_sas({**BASE, "sp": "dr"}))
    principal.authorize(Operation.DELETE_ENTITY, "mytable")
    principal.authorize(Operation.QUERY_ENTITIES, "mytable")


def test_unknown_account_with_sas_is_authentication_failed() -> None:
    err = refusal(service_sas(BASE), account="nosuch", path="/nosuch/mytable()")
    assert code(err) == (403, "AuthenticationFailed")


def test_sas_on_path_style_secondary_is_signed_with_the_primary_name() -> None:
    principal = auth_sas(
        service_sas(BASE),
        account=f"{DEV_ACCOUNT}-secondary",
        path=f"/{DEV_ACCOUNT}-secondary/mytable()",
    )
    assert (principal.account, principal.secondary) == (DEV_ACCOUNT, True)
    principal.authorize(Operation.QUERY_ENTITIES, "mytable")
    with pytest.raises(StubError):
        principal.authorize(Operation.INSERT_ENTITY, "mytable")


# --- time window ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("st", "se", "now", "ok"),
    [
        (None, "2030-01-01T00:00:00Z", "2029-12-31T23:59:59", True),
        (None, "2030-01-01T00:00:00Z", "2030-01-01T00:00:00", False),  # expiry is exclusive
        (None, "2030-01-01T00:00:00Z", "2030-01-01T00:00:01", False),
        ("2026-01-01T00:00:00Z", "2030-01-01T00:00:00Z", "2026-01-01T00:00:00", True),
        ("2026-01-01T00:00:00Z", "2030-01-01T00:00:00Z", "2025-12-31T23:59:59", False),
        ("2026-01-01", "2026-01-02", "2026-01-01T12:00:00", True),  # date only: midnight UTC
        ("2026-01-01", "2026-01-02", "2026-01-02T00:00:00", False),
        ("2026-01-01T10:00Z", "2026-01-01T11:00Z", "2026-01-01T10:30:00", True),  # minutes
        ("2026-01-01T10:00Z", "2026-01-01T11:00Z", "2026-01-01T11:00:30", False),
        (None, "2026-01-01T10:00:00.5Z", "2026-01-01T10:00:00.4", True),  # fraction
        (None, "2026-01-01T10:00:00.5Z", "2026-01-01T10:00:00.6", False),
        (None, "2026-01-01T12:00:00+02:00", "2026-01-01T09:59:59", True),  # offset
        (None, "2026-01-01T12:00:00+02:00", "2026-01-01T10:00:01", False),
    ],
)
def test_time_window(st: str | None, se: str, now: str, ok: bool) -> None:
    params = {**BASE, "se": se, **({"st": st} if st else {})}
    moment = dt.datetime.fromisoformat(now).replace(tzinfo=dt.UTC)
    if ok:
        auth_sas(service_sas(params), now=moment)
        return
    err = refusal(service_sas(params), now=moment)
    assert code(err) == (403, "AuthenticationFailed")
    assert detail(err).startswith("Signature not valid in the specified time frame")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("se", "2030-13-01T00:00:00Z"),
        ("se", "tomorrow"),
        ("se", "2030-01-01T00:00:00"),  # no zone designator
        ("st", "2024/01/01"),
        ("se", "2030-01-01 00:00:00Z"),
    ],
)
def test_malformed_times_are_not_well_formed(field: str, value: str) -> None:
    err = refusal(service_sas({**BASE, field: value}))
    assert code(err) == (403, "AuthenticationFailed")
    assert detail(err) == "Signature fields not well formed."


def test_expiry_before_start_is_refused() -> None:
    params = {**BASE, "st": "2030-01-01T00:00:00Z", "se": "2029-01-01T00:00:00Z"}
    err = refusal(service_sas(params))
    assert code(err) == (403, "AuthenticationFailed")
    assert "must be after signed start time" in detail(err)


def test_account_sas_time_window() -> None:
    params = {**ACCOUNT_BASE, "st": "2026-12-01T00:00:00Z"}
    err = refusal(account_sas(params))
    assert code(err) == (403, "AuthenticationFailed")
    assert "time frame" in detail(err)


# --- IP and protocol -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sip", "remote", "ok"),
    [
        ("10.0.0.5", "10.0.0.5", True),
        ("10.0.0.5", "10.0.0.6", False),
        ("10.0.0.5-10.0.0.9", "10.0.0.5", True),  # inclusive lower
        ("10.0.0.5-10.0.0.9", "10.0.0.9", True),  # inclusive upper
        ("10.0.0.5-10.0.0.9", "10.0.0.4", False),
        ("10.0.0.5-10.0.0.9", "10.0.0.10", False),
        ("10.0.0.250-10.0.1.5", "10.0.1.0", True),  # across an octet
        ("127.0.0.1", "::ffff:127.0.0.1", True),  # IPv4-mapped IPv6
        ("127.0.0.1", "::1", False),  # IPv6 never matches an IPv4 sip
        ("127.0.0.1", "not-an-ip", False),
    ],
)
def test_source_ip(sip: str, remote: str, ok: bool) -> None:
    query = service_sas({**BASE, "sip": sip})
    if ok:
        auth_sas(query, remote_ip=remote)
        return
    err = refusal(query, remote_ip=remote)
    assert code(err) == (403, "AuthorizationSourceIPMismatch")
    assert remote in err.message


@pytest.mark.parametrize("sip", ["10.0.0", "10.0.0.256", "::1", "10.0.0.1-", "a-b", "10.0.0.1/24"])
def test_malformed_sip(sip: str) -> None:
    err = refusal(service_sas({**BASE, "sip": sip}))
    assert code(err) == (403, "AuthenticationFailed")
    assert detail(err) == "Signature fields not well formed."


@pytest.mark.parametrize(
    ("spr", "scheme", "outcome"),
    [
        ("https", "https", None),
        ("https", "http", "AuthorizationProtocolMismatch"),
        ("https,http", "http", None),
        ("https,http", "https", None),
        (None, "http", None),
        ("http", "http", "AuthenticationFailed"),
        ("http,https", "http", "AuthenticationFailed"),
        ("ftp", "https", "AuthenticationFailed"),
    ],
)
def test_protocol(spr: str | None, scheme: str, outcome: str | None) -> None:
    params = {**BASE, **({"spr": spr} if spr else {})}
    for query in (service_sas(params), account_sas({**ACCOUNT_BASE, **params})):
        if outcome is None:
            auth_sas(query, scheme=scheme)
            continue
        err = refusal(query, scheme=scheme)
        assert (err.status, err.code) == (403, outcome)


def test_account_sas_ip_range() -> None:
    query = account_sas({**ACCOUNT_BASE, "sip": "192.168.0.1-192.168.0.10"})
    auth_sas(query, remote_ip="192.168.0.10")
    assert code(refusal(query, remote_ip="192.168.0.11")) == (403, "AuthorizationSourceIPMismatch")


# --- validation order (PROTOCOL.md 10.9) -------------------------------------------------


def test_order_signature_before_time() -> None:
    params = {**BASE, "se": "2020-01-01T00:00:00Z"}
    bad_sig = encode_query({**params, "sig": compute_signature(b"wrong", service_sts(params))})
    assert detail(refusal(bad_sig)).startswith("Signature did not match")


def test_order_time_before_ip_before_protocol() -> None:
    expired = {**BASE, "se": "2020-01-01T00:00:00Z", "sip": "10.0.0.1", "spr": "https"}
    err = refusal(service_sas(expired), remote_ip="10.9.9.9", scheme="http")
    assert code(err) == (403, "AuthenticationFailed")
    both = {**BASE, "sip": "10.0.0.1", "spr": "https"}
    err = refusal(service_sas(both), remote_ip="10.9.9.9", scheme="http")
    assert code(err) == (403, "AuthorizationSourceIPMismatch")


def test_order_account_service_after_protocol_and_resource_type_before_permission() -> None:
    no_table = {**ACCOUNT_BASE, "ss": "bq", "spr": "https"}
    assert code(refusal(account_sas(no_table), scheme="http")) == (
        403,
        "AuthorizationProtocolMismatch",
    )
    assert code(refusal(account_sas(no_table))) == (403, "AuthorizationServiceMismatch")
    principal = auth_sas(account_sas({**ACCOUNT_BASE, "srt": "s", "sp": "l"}))
    with pytest.raises(StubError) as excinfo:
        principal.authorize(Operation.INSERT_ENTITY, "mytable")  # needs o and a: srt first
    assert code(excinfo.value) == (403, "AuthorizationResourceTypeMismatch")


def test_order_permission_before_key_range() -> None:
    principal = auth_sas(service_sas({**BASE, "sp": "r", "spk": "m"}))
    with pytest.raises(StubError) as excinfo:
        principal.authorize(Operation.INSERT_ENTITY, "mytable")
    assert code(excinfo.value) == (403, "AuthorizationPermissionMismatch")
    principal.authorize(Operation.QUERY_ENTITIES, "mytable")
    with pytest.raises(StubError) as excinfo:
        principal.check_key("a", "")
    assert code(excinfo.value) == (403, "AuthorizationFailure")


# --- service SAS permissions ----------------------------------------------------------

ENTITY_OPS = {
    Operation.QUERY_ENTITIES: "r",
    Operation.INSERT_ENTITY: "a",
    Operation.UPDATE_ENTITY: "u",
    Operation.MERGE_ENTITY: "u",
    Operation.DELETE_ENTITY: "d",
    Operation.INSERT_OR_REPLACE_ENTITY: "au",
    Operation.INSERT_OR_MERGE_ENTITY: "au",
}
TABLE_LEVEL_OPS = [
    Operation.QUERY_TABLES,
    Operation.CREATE_TABLE,
    Operation.DELETE_TABLE,
    Operation.GET_TABLE_ACL,
    Operation.SET_TABLE_ACL,
    Operation.GET_SERVICE_PROPERTIES,
    Operation.SET_SERVICE_PROPERTIES,
    Operation.GET_SERVICE_STATS,
]


@pytest.mark.parametrize("sp", ["r", "a", "u", "d", "au", "ra", "ud", "raud"])
@pytest.mark.parametrize("op", list(ENTITY_OPS))
def test_service_sas_permission_per_operation(sp: str, op: Operation) -> None:
    principal = auth_sas(service_sas({**BASE, "sp": sp}))
    if set(ENTITY_OPS[op]) <= set(sp):
        principal.authorize(op, "mytable")
        return
    with pytest.raises(StubError) as excinfo:
        principal.authorize(op, "mytable")
    assert code(excinfo.value) == (403, "AuthorizationPermissionMismatch")


@pytest.mark.parametrize("op", TABLE_LEVEL_OPS)
def test_service_sas_cannot_do_table_or_service_level_operations(op: Operation) -> None:
    principal = auth_sas(service_sas(BASE))
    with pytest.raises(StubError) as excinfo:
        principal.authorize(op, "mytable" if "TABLE" in op.name else None)
    assert code(excinfo.value) == (403, "AuthorizationFailure")


def test_service_sas_batch_is_scoped_then_each_operation_checked() -> None:
    principal = auth_sas(service_sas({**BASE, "sp": "a"}))
    principal.authorize(Operation.BATCH, None)
    principal.authorize(Operation.BATCH, "MyTable")
    principal.authorize(Operation.INSERT_ENTITY, "mytable")
    with pytest.raises(StubError):
        principal.authorize(Operation.BATCH, "other")
    with pytest.raises(StubError):
        principal.authorize(Operation.DELETE_ENTITY, "mytable")
    with pytest.raises(StubError):
        principal.authorize(Operation.QUERY_ENTITIES, None)
    principal.authorize(Operation.PREFLIGHT, None)


# --- key ranges -------------------------------------------------------------------------

RANGE_CASES = [
    # (range params, key, allowed)
    ({"spk": "b"}, ("b", ""), True),
    ({"spk": "b"}, ("a", "zzz"), False),
    ({"spk": "b"}, ("c", ""), True),
    ({"epk": "m"}, ("m", "\uffff"), True),
    ({"epk": "m"}, ("m\x00", ""), False),
    ({"epk": "m"}, ("a", ""), True),
    ({"spk": "b", "srk": "5"}, ("b", "5"), True),  # inclusive
    ({"spk": "b", "srk": "5"}, ("b", "4"), False),
    ({"spk": "b", "srk": "5"}, ("c", "0"), True),  # later partition: any row key
    ({"spk": "b", "srk": "5"}, ("a", "9"), False),
    ({"epk": "m", "erk": "5"}, ("m", "5"), True),  # inclusive
    ({"epk": "m", "erk": "5"}, ("m", "6"), False),
    ({"epk": "m", "erk": "5"}, ("l", "9"), True),  # earlier partition: any row key
    ({"epk": "m", "erk": "5"}, ("n", "0"), False),
    ({"spk": "pk1", "epk": "pk1"}, ("pk1", "anything"), True),
    ({"spk": "pk1", "epk": "pk1"}, ("pk2", ""), False),
    ({"spk": "pk1", "epk": "pk1"}, ("pk0", ""), False),
    ({"spk": "a", "srk": "2", "epk": "c", "erk": "7"}, ("a", "2"), True),
    ({"spk": "a", "srk": "2", "epk": "c", "erk": "7"}, ("a", "1"), False),
    ({"spk": "a", "srk": "2", "epk": "c", "erk": "7"}, ("b", ""), True),
    ({"spk": "a", "srk": "2", "epk": "c", "erk": "7"}, ("c", "7"), True),
    ({"spk": "a", "srk": "2", "epk": "c", "erk": "8"}, ("c", "8\x00"), False),
]


@pytest.mark.parametrize(("bounds", "key", "allowed"), RANGE_CASES)
def test_key_range_inclusive_semantics(
    bounds: dict[str, str], key: tuple[str, str], allowed: bool
) -> None:
    principal = auth_sas(service_sas({**BASE, **bounds}))
    assert principal.key_allowed(*key) is allowed
    assert principal.key_filter is not None
    assert principal.key_filter(*key) is allowed
    assert principal.key_range is not None
    if allowed:
        principal.check_key(*key)
    else:
        with pytest.raises(StubError) as excinfo:
            principal.check_key(*key)
        assert code(excinfo.value) == (403, "AuthorizationFailure")


def test_no_key_range_means_no_filter() -> None:
    principal = auth_sas(service_sas(BASE))
    assert principal.key_filter is None
    assert principal.key_range is None
    assert principal.key_allowed("", "")


@pytest.mark.parametrize("bounds", [{"srk": "1"}, {"erk": "1"}, {"srk": "1", "epk": "b"}])
def test_row_key_bound_without_its_partition_key_is_malformed(bounds: dict[str, str]) -> None:
    err = refusal(service_sas({**BASE, **bounds}))
    assert code(err) == (403, "AuthenticationFailed")


def test_key_range_values_with_special_characters_round_trip_through_the_query() -> None:
    bounds = {"spk": "a b&c=d+é", "epk": "z/é?"}
    principal = auth_sas(service_sas({**BASE, **bounds}))
    assert principal.key_allowed("a b&c=d+é", "")
    assert not principal.key_allowed("a b&c=d", "")


# --- stored access policies ---------------------------------------------------------------


def test_policy_supplies_permission_and_times() -> None:
    policy = SignedIdentifier("p1", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z", "r")
    query = service_sas({"sv": "2019-02-02", "tn": "mytable", "si": "p1"})
    principal = auth_sas(query, policies=[policy])
    assert principal.sas["sp"] == "r"
    assert principal.sas["se"] == "2027-01-01T00:00:00Z"
    assert principal.sas["st"] == "2026-01-01T00:00:00Z"
    assert principal.sas["si"] == "p1"
    principal.authorize(Operation.QUERY_ENTITIES, "mytable")
    with pytest.raises(StubError) as excinfo:
        principal.authorize(Operation.INSERT_ENTITY, "mytable")
    assert code(excinfo.value) == (403, "AuthorizationPermissionMismatch")
    late = dt.datetime(2027, 1, 1, tzinfo=dt.UTC)
    assert code(refusal(query, policies=[policy], now=late)) == (403, "AuthenticationFailed")
    early = dt.datetime(2025, 12, 31, tzinfo=dt.UTC)
    assert code(refusal(query, policies=[policy], now=early)) == (403, "AuthenticationFailed")


def test_policy_and_sas_may_share_the_fields_between_them() -> None:
    policy = SignedIdentifier("p1", expiry="2030-01-01T00:00:00Z")
    query = service_sas({"sv": "2019-02-02", "tn": "mytable", "si": "p1", "sp": "ra"})
    principal = auth_sas(query, policies=[SignedIdentifier("other", permission="d"), policy])
    principal.authorize(Operation.INSERT_ENTITY, "mytable")


@pytest.mark.parametrize(
    ("policy", "signed"),
    [
        (SignedIdentifier("p1", permission="r", expiry="2030-01-01T00:00:00Z"), {"sp": "r"}),
        (
            SignedIdentifier("p1", permission="r", expiry="2030-01-01T00:00:00Z"),
            {"se": "2030-01-01"},
        ),
        (
            SignedIdentifier("p1", "2024-01-01T00:00:00Z", "2030-01-01T00:00:00Z", "r"),
            {"st": "2024-01-01T00:00:00Z"},
        ),
    ],
)
def test_field_in_both_policy_and_sas_is_400(
    policy: SignedIdentifier, signed: dict[str, str]
) -> None:
    query = service_sas({"sv": "2019-02-02", "tn": "mytable", "si": "p1", **signed})
    err = refusal(query, policies=[policy])
    assert err.status == 400
    assert err.code == "InvalidQueryParameterValue"
    assert next(iter(signed)) in err.message


def test_missing_policy_is_authentication_failed() -> None:
    query = service_sas({**BASE, "si": "nope"})
    err = refusal(query, policies=[SignedIdentifier("p1", permission="r")])
    assert code(err) == (403, "AuthenticationFailed")
    assert "nope" in detail(err)


def test_policy_lookup_on_a_missing_table_is_authentication_failed() -> None:
    def lookup(account: str, table: str) -> list[SignedIdentifier]:
        raise table_not_found()

    auth = authenticator(now=SAS_NOW, policies=lookup)
    request = view("GET", PATH, service_sas({**BASE, "si": "p1"}), scheme="https")
    with pytest.raises(StubError) as excinfo:
        auth.authenticate(request, DEV_ACCOUNT, "mytable")
    assert code(excinfo.value) == (403, "AuthenticationFailed")


def test_policy_without_expiry_and_sas_without_expiry_is_refused() -> None:
    query = service_sas({"sv": "2019-02-02", "tn": "mytable", "si": "p1", "sp": "r"})
    err = refusal(query, policies=[SignedIdentifier("p1")])
    assert code(err) == (403, "AuthenticationFailed")
    assert "se" in detail(err)


def test_policy_id_is_signed() -> None:
    policy = SignedIdentifier("p1", expiry="2030-01-01T00:00:00Z", permission="r")
    other = SignedIdentifier("p2", expiry="2030-01-01T00:00:00Z", permission="raud")
    signed = service_sas({"sv": "2019-02-02", "tn": "mytable", "si": "p1"})
    assert code(refusal(signed.replace("si=p1", "si=p2"), policies=[policy, other])) == (
        403,
        "AuthenticationFailed",
    )


# --- account SAS ------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["sv", "sig", "ss", "srt", "sp", "se"])
def test_account_sas_required_fields(missing: str) -> None:
    signed = account_sas(ACCOUNT_BASE)
    query = "&".join(p for p in signed.split("&") if not p.startswith(missing + "="))
    # One of ss/srt is always left, so the token still reads as an account SAS.
    err = refusal(query)
    assert code(err) == (403, "AuthenticationFailed")
    if missing != "sig":
        assert detail(err) == f"{missing} is mandatory. Cannot be empty"


def test_account_sas_needs_2015_04_05() -> None:
    err = refusal(account_sas({**ACCOUNT_BASE, "sv": "2015-02-21"}))
    assert code(err) == (403, "AuthenticationFailed")


def test_account_sas_encryption_scope_is_signed_from_2020_12_06() -> None:
    with_ses = {**ACCOUNT_BASE, "sv": "2020-12-06", "ses": "scope1"}
    auth_sas(account_sas(with_ses))
    assert account_sts(with_ses).endswith("\n2020-12-06\nscope1\n")
    tampered = account_sas(with_ses).replace("ses=scope1", "ses=scope2")
    assert code(refusal(tampered)) == (403, "AuthenticationFailed")
    # Before 2020-12-06 ses is not part of the string-to-sign.
    older = {**ACCOUNT_BASE, "sv": "2020-10-02"}
    auth_sas(account_sas(older) + "&ses=ignored")


@pytest.mark.parametrize(("ss", "ok"), [("t", True), ("bqtf", True), ("bq", False), ("f", False)])
def test_account_sas_services(ss: str, ok: bool) -> None:
    query = account_sas({**ACCOUNT_BASE, "ss": ss})
    if ok:
        auth_sas(query)
    else:
        assert code(refusal(query)) == (403, "AuthorizationServiceMismatch")


@pytest.mark.parametrize(
    "params", [{"ss": "tx"}, {"srt": "scx"}, {"sp": "r1"}, {"sp": "R"}, {"spr": "http"}]
)
def test_account_sas_malformed_fields(params: dict[str, str]) -> None:
    err = refusal(account_sas({**ACCOUNT_BASE, **params}))
    assert code(err) == (403, "AuthenticationFailed")


# (operation, resource types that grant it, permission sets that grant it, sets that do not)
ACCOUNT_MATRIX = [
    (Operation.GET_SERVICE_PROPERTIES, "s", ["r"], ["w", "l"]),
    (Operation.SET_SERVICE_PROPERTIES, "s", ["w"], ["r", "c"]),
    (Operation.GET_SERVICE_STATS, "s", ["r"], ["l"]),
    (Operation.QUERY_TABLES, "sc", ["l"], ["r"]),
    (Operation.CREATE_TABLE, "c", ["c", "w"], ["a", "r"]),
    (Operation.DELETE_TABLE, "c", ["d"], ["w"]),
    (Operation.QUERY_ENTITIES, "o", ["r"], ["l", "w"]),
    (Operation.INSERT_ENTITY, "o", ["a"], ["w", "c", "u"]),
    (Operation.UPDATE_ENTITY, "o", ["u"], ["w", "a"]),
    (Operation.MERGE_ENTITY, "o", ["u"], ["w"]),
    (Operation.DELETE_ENTITY, "o", ["d"], ["w"]),
    (Operation.INSERT_OR_REPLACE_ENTITY, "o", ["au"], ["a", "u", "w"]),
    (Operation.INSERT_OR_MERGE_ENTITY, "o", ["au"], ["a", "u"]),
]


@pytest.mark.parametrize(("op", "srts", "granting", "refusing"), ACCOUNT_MATRIX)
def test_account_sas_operation_matrix(
    op: Operation, srts: str, granting: list[str], refusing: list[str]
) -> None:
    table = None if "SERVICE" in op.name or op is Operation.QUERY_TABLES else "mytable"
    for srt in "sco":
        for sp in granting:
            principal = auth_sas(account_sas({**ACCOUNT_BASE, "srt": srt, "sp": sp}))
            if srt in srts:
                principal.authorize(op, table)
            else:
                with pytest.raises(StubError) as excinfo:
                    principal.authorize(op, table)
                assert code(excinfo.value) == (403, "AuthorizationResourceTypeMismatch")
    for sp in refusing:
        principal = auth_sas(account_sas({**ACCOUNT_BASE, "srt": "sco", "sp": sp}))
        with pytest.raises(StubError) as excinfo:
            principal.authorize(op, table)
        assert code(excinfo.value) == (403, "AuthorizationPermissionMismatch")


@pytest.mark.parametrize("op", [Operation.GET_TABLE_ACL, Operation.SET_TABLE_ACL])
def test_account_sas_cannot_touch_table_acls(op: Operation) -> None:
    principal = auth_sas(account_sas({**ACCOUNT_BASE, "sp": "rwdlacup"}))
    with pytest.raises(StubError) as excinfo:
        principal.authorize(op, "mytable")
    assert code(excinfo.value) == (403, "AuthorizationFailure")


def test_account_sas_has_no_key_range_and_any_table() -> None:
    principal = auth_sas(account_sas(ACCOUNT_BASE))
    principal.authorize(Operation.QUERY_ENTITIES, "whatever")
    principal.authorize(Operation.BATCH, None)
    assert principal.key_filter is None
    assert principal.sas["ss"] == "t"


def test_account_sas_ignores_unknown_letters_for_other_services() -> None:
    principal = auth_sas(account_sas({**ACCOUNT_BASE, "sp": "rxytfi"}))
    principal.authorize(Operation.QUERY_ENTITIES, "mytable")


def test_sas_is_subject_to_no_clock_skew_option() -> None:
    # The clock-skew switch is about Date headers; SAS windows always apply.
    auth = authenticator(now=dt.datetime(2031, 1, 1, tzinfo=dt.UTC))
    auth.options = AuthOptions(check_clock_skew=False)
    request = view("GET", PATH, service_sas(BASE), scheme="https")
    with pytest.raises(StubError):
        auth.authenticate(request, DEV_ACCOUNT, "mytable")


_keys = hs.text(alphabet="ab\x00\uffff", max_size=3)


@given(
    spk=hs.none() | _keys,
    srk=hs.none() | _keys,
    epk=hs.none() | _keys,
    erk=hs.none() | _keys,
    pk=_keys,
    rk=_keys,
)
def test_key_range_matches_tuple_order_reference(
    spk: str | None, srk: str | None, epk: str | None, erk: str | None, pk: str, rk: str
) -> None:
    if spk is None:
        srk = None
    if epk is None:
        erk = None
    key = (pk, rk)
    expected = True
    if spk is not None:
        expected &= key >= (spk, srk) if srk is not None else pk >= spk
    if epk is not None:
        expected &= key <= (epk, erk) if erk is not None else pk <= epk
    assert KeyRange(spk, srk, epk, erk).admits(pk, rk) is expected


def test_field_in_both_names_the_parameter_and_its_signed_value() -> None:
    policy = SignedIdentifier("p1", permission="r", expiry="2030-01-01T00:00:00Z")
    query = service_sas({"sv": "2019-02-02", "tn": "mytable", "si": "p1", "sp": "r"})
    err = refusal(query, policies=[policy])
    assert code(err) == (400, "InvalidQueryParameterValue")
    assert err.details["QueryParameterName"] == "sp"
    assert err.details["QueryParameterValue"] == "r"


def test_a_policy_lookup_failing_otherwise_than_404_is_that_failure() -> None:
    def lookup(account: str, table: str) -> list[SignedIdentifier]:
        raise StubError(503, "ServerBusy", "The server is busy.")

    auth = authenticator(now=SAS_NOW, policies=lookup)
    request = view("GET", PATH, service_sas({**BASE, "si": "p1"}), scheme="https")
    with pytest.raises(StubError) as excinfo:
        auth.authenticate(request, DEV_ACCOUNT, "mytable")
    assert code(excinfo.value) == (503, "ServerBusy")


def test_a_verified_grant_cannot_be_changed() -> None:
    grant = SasGrant("service", "2019-02-02", {"tn": "People"}, frozenset("r"), table="People")
    with pytest.raises(AttributeError):
        grant.permissions = frozenset("raud")  # type: ignore[misc]
    assert grant.permissions == frozenset("r")
