"""x-ms-version resolution and the version-gated feature table (PROTOCOL.md section 13)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from azt_server_stub import versions as v
from azt_server_stub.errors import StubError


def test_known_versions_are_sorted_unique_dates() -> None:
    assert list(v.KNOWN_VERSIONS) == sorted(set(v.KNOWN_VERSIONS))
    assert v.OLDEST_VERSION == "2009-04-14"
    assert v.KNOWN_VERSIONS[-1] == v.BASELINE_VERSION
    for name in ("2013-08-15", "2015-12-11", "2019-02-02", "2020-12-06", "2025-11-05"):
        assert v.is_known(name)


@pytest.mark.parametrize("version", v.KNOWN_VERSIONS)
def test_every_known_version_resolves_to_itself(version: str) -> None:
    assert v.resolve_version(version) == version


def test_missing_version_applies_the_baseline() -> None:
    assert v.resolve_version(None) == v.BASELINE_VERSION


@pytest.mark.parametrize(
    "value", ["", "2019-2-2", "2019/02/02", "latest", "2019-02-02x", "2019-13-01"]
)
def test_malformed_versions_are_invalid_header_value(value: str) -> None:
    with pytest.raises(StubError) as excinfo:
        v.resolve_version(value)
    err = excinfo.value
    assert (err.status, err.code) == (400, "InvalidHeaderValue")
    assert err.details == {"HeaderName": "x-ms-version", "HeaderValue": value}
    with pytest.raises(StubError):
        v.resolve_version(value, lenient=True)


def test_newer_versions_are_refused_or_clamped_when_lenient() -> None:
    newer = "2099-01-01"
    with pytest.raises(StubError) as excinfo:
        v.resolve_version(newer)
    assert (excinfo.value.status, excinfo.value.code) == (400, "InvalidHeaderValue")
    assert v.resolve_version(newer, lenient=True) == v.BASELINE_VERSION


@pytest.mark.parametrize(
    ("value", "applied"),
    [
        ("2019-03-01", "2019-02-02"),
        ("2015-04-04", "2015-02-21"),
        ("2013-08-16", "2013-08-15"),
        ("2008-10-27", "2009-04-14"),  # older than the oldest known: the oldest
        ("1999-01-01", "2009-04-14"),
    ],
)
def test_unknown_older_versions_use_the_nearest_known_older_rules(value: str, applied: str) -> None:
    assert v.resolve_version(value) == applied


def test_request_version_prefers_header_then_sas_then_baseline() -> None:
    assert v.request_version("2015-04-05", "2019-02-02") == "2015-04-05"
    assert v.request_version(None, "2019-02-02") == "2019-02-02"
    assert v.request_version(None, None) == v.BASELINE_VERSION
    assert v.request_version(None, "2099-01-01") == v.BASELINE_VERSION
    assert v.request_version(None, "garbage") == v.BASELINE_VERSION
    with pytest.raises(StubError):
        v.request_version("2099-01-01", None)
    assert v.request_version("2099-01-01", None, lenient=True) == v.BASELINE_VERSION


GATES: list[tuple[Callable[[str], bool], str, bool]] = [
    # (predicate, first version where the answer flips, answer from that version on)
    (v.supports_batch, "2009-04-14", True),
    (v.returns_version_header, "2009-09-19", True),
    (v.requires_data_service_version, "2009-09-19", True),
    (v.supports_upsert, "2011-08-18", True),
    (v.supports_select, "2011-08-18", True),
    (v.supports_table_sas, "2012-02-12", True),
    (v.supports_table_acl, "2012-02-12", True),
    (v.supports_json, "2013-08-15", True),
    (v.supports_prefer, "2013-08-15", True),
    (v.supports_format_option, "2013-08-15", True),
    (v.supports_cors, "2013-08-15", True),
    (v.sas_resource_has_service_prefix, "2015-02-21", True),
    (v.supports_account_sas, "2015-04-05", True),
    (v.sas_has_ip_and_protocol, "2015-04-05", True),
    (v.supports_atom, "2015-12-11", False),
    (v.sends_error_code_header, "2017-07-29", True),
    (v.supports_bearer, "2019-02-02", True),
    (v.account_sas_has_encryption_scope, "2020-12-06", True),
]


@pytest.mark.parametrize(("gate", "threshold", "after"), GATES)
def test_feature_gates_flip_exactly_at_their_version(
    gate: Callable[[str], bool], threshold: str, after: bool
) -> None:
    index = v.KNOWN_VERSIONS.index(threshold)
    for version in v.KNOWN_VERSIONS[index:]:
        assert gate(version) is after, version
    for version in v.KNOWN_VERSIONS[:index]:
        assert gate(version) is (not after), version


def test_generic_supports_matches_the_named_gates() -> None:
    assert v.supports("json", "2013-08-15")
    assert not v.supports("json", "2012-02-12")
    assert not v.supports("json_only", "2015-07-08")
    with pytest.raises(KeyError):
        v.supports("teleportation", "2019-02-02")
