"""Known-answer tests: every signature in PROTOCOL.md appendix A, plus signing as sent."""

from __future__ import annotations

import pytest

import azt
from azt._core.auth import SharedKeyCredential, SharedKeyLiteCredential
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt._core.signing import (
    HttpDate,
    account_sas_string_to_sign,
    canonicalized_resource,
    decode_key,
    shared_key_lite_string_to_sign,
    shared_key_string_to_sign,
    sign,
    table_sas_string_to_sign,
)
from azt._core.transport import HttpRequest

DATE = "Mon, 27 Jun 2016 15:25:14 GMT"
ACCOUNT = "devstoreaccount1"
KEY = decode_key(DEV_ACCOUNT_KEY)


@pytest.mark.parametrize(
    ("method", "content_type", "path", "comp", "expected_sts", "expected_sig"),
    [
        (
            "GET",
            "",
            "/devstoreaccount1/Tables",
            None,
            f"GET\n\n\n{DATE}\n/devstoreaccount1/devstoreaccount1/Tables",
            "6x3Y/FLgh8/ozJ8YPcIAguM4et4HbaViJozb+kRb6aI=",
        ),
        (
            "POST",
            "application/json",
            "/devstoreaccount1/mytable",
            None,
            f"POST\n\napplication/json\n{DATE}\n/devstoreaccount1/devstoreaccount1/mytable",
            "FYWZ8FJBiH/Fjk26/x5ffr9OJObJ983OKvV2FoJegA4=",
        ),
        (
            "GET",
            "",
            "/devstoreaccount1/mytable",
            "acl",
            f"GET\n\n\n{DATE}\n/devstoreaccount1/devstoreaccount1/mytable?comp=acl",
            "1va20X1TzUg2DOJJi740thS1CJgVqys2hHethbNVFWA=",
        ),
        (
            "GET",
            "",
            "/devstoreaccount1/",
            "properties",
            f"GET\n\n\n{DATE}\n/devstoreaccount1/devstoreaccount1/?comp=properties",
            "S9VW4aXfa5gdIIIaf/jmkVtOTcIDwawgWt3SvYUd49I=",
        ),
        (
            "GET",
            "",
            "/mytable(PartitionKey='pk',RowKey='rk')",
            None,
            f"GET\n\n\n{DATE}\n/devstoreaccount1/mytable(PartitionKey='pk',RowKey='rk')",
            "2tFCMy5ZegXwMqi5iB2PQoWCkkrnyU4IzJSm4gu+O1E=",
        ),
    ],
)
def test_shared_key_vectors(
    method: str,
    content_type: str,
    path: str,
    comp: str | None,
    expected_sts: str,
    expected_sig: str,
) -> None:
    sts = shared_key_string_to_sign(
        method, "", content_type, DATE, canonicalized_resource(ACCOUNT, path, comp)
    )
    assert sts == expected_sts
    assert sign(KEY, sts) == expected_sig
    headers = {"x-ms-date": DATE}
    if content_type:
        headers["Content-Type"] = content_type
    request = HttpRequest(method, "http://unused" + path, headers)
    SharedKeyCredential(ACCOUNT, DEV_ACCOUNT_KEY).sign(request, path, comp)
    assert request.headers["Authorization"] == f"SharedKey {ACCOUNT}:{expected_sig}"


def test_shared_key_lite_vector() -> None:
    resource = canonicalized_resource(ACCOUNT, "/devstoreaccount1/Tables")
    sts = shared_key_lite_string_to_sign(DATE, resource)
    assert sts == f"{DATE}\n/devstoreaccount1/devstoreaccount1/Tables"
    assert sign(KEY, sts) == "0t5frBDAHUb3TEbAMT7v9wwgj+L4V00scNDQC6plt2w="
    request = HttpRequest("GET", "http://x", {"x-ms-date": DATE, "Content-Type": "ignored"})
    SharedKeyLiteCredential(ACCOUNT, DEV_ACCOUNT_KEY).sign(
        request, "/devstoreaccount1/Tables", None
    )
    assert request.headers["Authorization"] == (
        "SharedKeyLite devstoreaccount1:0t5frBDAHUb3TEbAMT7v9wwgj+L4V00scNDQC6plt2w="
    )


def test_date_line_falls_back_to_date_header() -> None:
    cred = SharedKeyCredential(ACCOUNT, DEV_ACCOUNT_KEY)
    request = HttpRequest("GET", "http://x", {"Date": DATE})
    assert cred.string_to_sign(request, "/devstoreaccount1/Tables", None).split("\n")[3] == DATE


def test_service_sas_vector() -> None:
    sts = table_sas_string_to_sign(
        account_name=ACCOUNT,
        table_name="mytable",
        version="2019-02-02",
        permission="raud",
        start="2024-01-01T00:00:00Z",
        expiry="2030-01-01T00:00:00Z",
        protocol="https,http",
    )
    assert sts == (
        "raud\n2024-01-01T00:00:00Z\n2030-01-01T00:00:00Z\n/table/devstoreaccount1/mytable"
        "\n\n\nhttps,http\n2019-02-02\n\n\n\n"
    )
    assert sign(KEY, sts) == "ld0dyBZVi/EikXBt4CXVqZUzdpDF63sBot7QHSCeF4o="


def test_service_sas_range_vector() -> None:
    sts = table_sas_string_to_sign(
        account_name=ACCOUNT,
        table_name="mytable",
        version="2019-02-02",
        permission="r",
        expiry="2030-01-01T00:00:00Z",
        start_pk="pk1",
        end_pk="pk1",
    )
    assert sts == (
        "r\n\n2030-01-01T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\n\n2019-02-02\npk1\n\npk1\n"
    )
    assert sign(KEY, sts) == "jNFwfE4jeF82B3YtMp//fekzyr9mfeM9SPat+AXIPAc="


def test_service_sas_older_versions() -> None:
    # Before 2015-04-05 there are no sip/spr lines; before 2015-02-21 no /table prefix.
    old = table_sas_string_to_sign(
        account_name="a", table_name="MyTable", version="2013-08-15", permission="r", expiry="E"
    )
    assert old == "r\n\nE\n/a/mytable\n\n2013-08-15\n\n\n\n"
    mid = table_sas_string_to_sign(
        account_name="a", table_name="T", version="2015-02-21", permission="r", expiry="E"
    )
    assert mid == "r\n\nE\n/table/a/t\n\n2015-02-21\n\n\n\n"
    with pytest.raises(azt.ValidationError):
        table_sas_string_to_sign(account_name="a", table_name="t", version="2011-08-18")


@pytest.mark.parametrize(
    ("version", "expected_sts", "expected_sig"),
    [
        (
            "2019-02-02",
            "devstoreaccount1\nrwdlacu\nt\nsco\n\n2030-01-01T00:00:00Z\n\nhttps,http\n2019-02-02\n",
            "dKEa4zPUq/dWdOLrCYusn1Jnz45OJCCdBPi+hMWeijk=",
        ),
        (
            "2020-12-06",
            "devstoreaccount1\nrwdlacu\nt\nsco\n\n2030-01-01T00:00:00Z\n\nhttps,http\n2020-12-06\n\n",
            "aQbb1uM9CNZPJhjuzMWpvrja5t6VW2FlvCUFVvjctAk=",
        ),
    ],
)
def test_account_sas_vectors(version: str, expected_sts: str, expected_sig: str) -> None:
    sts = account_sas_string_to_sign(
        account_name=ACCOUNT,
        version=version,
        permission="rwdlacu",
        services="t",
        resource_types="sco",
        expiry="2030-01-01T00:00:00Z",
        protocol="https,http",
    )
    assert sts == expected_sts
    assert sign(KEY, sts) == expected_sig


def test_decode_key_refuses_garbage() -> None:
    with pytest.raises(azt.ValidationError, match="base64"):
        decode_key("not base64!")
    with pytest.raises(azt.ValidationError):
        SharedKeyCredential("acct", "")


def test_http_date_format_and_cache() -> None:
    clock = HttpDate()
    assert clock.at(1467041114.0) == DATE
    assert clock.at(1467041114.9) == DATE
    assert clock.at(1467041115.0) == "Mon, 27 Jun 2016 15:25:15 GMT"
