"""Connection strings (PROTOCOL.md 1.4) and endpoint parsing."""

from __future__ import annotations

import pytest

import azt
from azt._core.connection_string import DEV_ACCOUNT_KEY, Endpoint, parse_connection_string

KEY = "a2V5"  # base64 of b"key"


def test_dev_storage_expansion() -> None:
    s = parse_connection_string("usedevelopmentstorage=TRUE")
    assert s.account_name == "devstoreaccount1"
    assert s.account_key == DEV_ACCOUNT_KEY
    assert s.endpoint == "http://127.0.0.1:10002/devstoreaccount1"
    assert s.secondary_endpoint == "http://127.0.0.1:10002/devstoreaccount1-secondary"
    assert s.sas_token is None


def test_dev_storage_proxy_keeps_port_and_account_path() -> None:
    s = parse_connection_string(
        "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=https://ipv4.fiddler:8888/x"
    )
    assert s.endpoint == "https://ipv4.fiddler:10002/devstoreaccount1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("UseDevelopmentStorage=false", "only accepts 'true'"),
        ("UseDevelopmentStorage=true;AccountName=x", "cannot be combined"),
        ("AccountName=a;AccountKey=a2V5;DevelopmentStorageProxyUri=http://p", "only valid"),
        ("UseDevelopmentStorage=true;DevelopmentStorageProxyUri=ftp://p", "http"),
    ],
)
def test_dev_storage_errors(text: str, message: str) -> None:
    with pytest.raises(azt.ConnectionStringError, match=message):
        parse_connection_string(text)


def test_derived_host_style_endpoints_and_case_insensitive_keys() -> None:
    s = parse_connection_string(
        f"defaultendpointsprotocol=http;ACCOUNTNAME=acct;accountkey={KEY};"
        "EndpointSuffix=core.usgovcloudapi.net;"
    )
    assert s.endpoint == "http://acct.table.core.usgovcloudapi.net"
    assert s.secondary_endpoint == "http://acct-secondary.table.core.usgovcloudapi.net"
    assert s.account_key == KEY


def test_default_protocol_and_suffix() -> None:
    s = parse_connection_string(f"AccountName=acct;AccountKey={KEY}")
    assert s.endpoint == "https://acct.table.core.windows.net"


def test_values_are_split_on_the_first_equals_only() -> None:
    sas = "sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2030-01-01T00:00:00Z&sig=abc%3D="
    s = parse_connection_string(
        f"TableEndpoint=https://acct.table.core.windows.net/;SharedAccessSignature=?{sas}"
    )
    assert s.sas_token == sas
    assert s.account_key is None
    assert s.account_name == "acct"
    assert s.endpoint == "https://acct.table.core.windows.net"
    assert s.secondary_endpoint == "https://acct-secondary.table.core.windows.net"


def test_key_wins_over_sas() -> None:
    s = parse_connection_string(f"AccountName=a;AccountKey={KEY};SharedAccessSignature=sig=x")
    assert s.account_key == KEY
    assert s.sas_token is None


def test_explicit_path_style_endpoint_and_secondary() -> None:
    s = parse_connection_string(
        f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={KEY};"
        "TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"
    )
    assert s.endpoint == "http://127.0.0.1:10002/devstoreaccount1"
    assert s.secondary_endpoint == "http://127.0.0.1:10002/devstoreaccount1-secondary"
    s2 = parse_connection_string(
        f"AccountName=a;AccountKey={KEY};TableEndpoint=https://a.table.core.windows.net;"
        "TableSecondaryEndpoint=https://elsewhere.example.com/"
    )
    assert s2.secondary_endpoint == "https://elsewhere.example.com"


def test_other_service_keys_are_ignored() -> None:
    s = parse_connection_string(
        f"AccountName=a;AccountKey={KEY};BlobEndpoint=https://a.blob.core.windows.net/;"
        "QueueSecondaryEndpoint=https://x"
    )
    assert s.endpoint == "https://a.table.core.windows.net"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        (";;", "no key=value"),
        ("AccountName", "not of the form key=value"),
        ("=x", "empty key"),
        ("AccountName=a;AcountKey=x", "unknown connection string key 'AcountKey'"),
        ("AccountName=a", "no credential"),
        ("AccountKey=a2V5", "without AccountName"),
        ("AccountName=a;AccountKey=***", "not valid base64"),
        ("AccountName=a;AccountKey=a2V5;AccountName=b", "given twice"),
        ("AccountName=a;AccountKey=", "empty value"),
        ("DefaultEndpointsProtocol=ftp;AccountName=a;AccountKey=a2V5", "http"),
        ("SharedAccessSignature=sig=x", "cannot determine the table endpoint"),
        ("SharedAccessSignature=sv=1;TableEndpoint=https://a.table.x", "no 'sig='"),
        (
            "AccountName=a;AccountKey=a2V5;TableSecondaryEndpoint=https://x",
            "only valid together with TableEndpoint",
        ),
        ("AccountName=a;AccountKey=a2V5;TableEndpoint=nohost", "http"),
        ("AccountName=a-b;AccountKey=a2V5", "letters and digits"),
        ("AccountName=a;AccountKey=a2V5;TableEndpoint=https://a.table.x/?sv=1", "query"),
    ],
)
def test_malformed_strings_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(azt.ConnectionStringError, match=message):
        parse_connection_string(text)


def test_connection_string_error_is_a_validation_error() -> None:
    with pytest.raises(ValueError, match="no credential"):
        parse_connection_string("AccountName=a")


@pytest.mark.parametrize(
    ("url", "path", "account", "path_style"),
    [
        ("https://acct.table.core.windows.net/", "", "acct", False),
        ("http://127.0.0.1:10002/devstoreaccount1/", "/devstoreaccount1", "devstoreaccount1", True),
        ("http://localhost:10002/acct2", "/acct2", "acct2", True),
        ("http://host.docker.internal:10002/a1", "/a1", "a1", True),
        ("http://[::1]:10002/a1", "/a1", "a1", True),
        ("http://devstoreaccount1.table.localhost:10002", "", "devstoreaccount1", False),
        ("https://acct-secondary.table.core.windows.net", "", "acct", False),
    ],
)
def test_endpoint_parse(url: str, path: str, account: str, path_style: bool) -> None:
    ep = Endpoint.parse(url)
    assert ep.path == path
    assert ep.account_name == account
    assert ep.path_style is path_style
    assert not ep.url.endswith("/")


def test_endpoint_secondary() -> None:
    assert Endpoint.parse("https://acct.table.core.windows.net").secondary() == Endpoint.parse(
        "https://acct-secondary.table.core.windows.net"
    )
    ep = Endpoint.parse("http://127.0.0.1:10002/devstoreaccount1-secondary")
    assert ep.is_secondary
    assert ep.secondary() is ep
    assert Endpoint.parse("https://custom.example.com").secondary() is None
