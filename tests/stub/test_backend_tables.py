"""Backend tables, ACLs and service properties."""

from __future__ import annotations

import pytest

from azt_server_stub.backend import Backend, SignedIdentifier, WriteOp
from azt_server_stub.errors import StubError

ACCOUNT = "devstoreaccount1"


def _err(fn: object, *args: object) -> tuple[int, str]:
    with pytest.raises(StubError) as exc:
        fn(*args)  # type: ignore[operator]
    return (exc.value.status, exc.value.code)


def test_create_is_case_insensitive_and_preserves_case() -> None:
    b = Backend()
    assert b.create_table(ACCOUNT, "MyTable") == "MyTable"
    assert _err(b.create_table, ACCOUNT, "mytable") == (409, "TableAlreadyExists")
    assert _err(b.create_table, ACCOUNT, "MYTABLE") == (409, "TableAlreadyExists")
    assert b.table_name(ACCOUNT, "MYTABLE") == "MyTable"
    assert b.query_tables(ACCOUNT, None, None, None).names == ["MyTable"]


def test_accounts_are_separate() -> None:
    b = Backend()
    b.create_table("one", "Shared")
    b.create_table("two", "Shared")
    b.write("one", "Shared", WriteOp("insert", "p", "r"))
    assert b.query_entities("two", "Shared", None, None, None).entities == []
    assert b.table_name("three", "Shared") is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ab", (400, "OutOfRangeInput")),
        ("a" * 64, (400, "OutOfRangeInput")),
        ("", (400, "OutOfRangeInput")),
        ("1abc", (400, "InvalidResourceName")),
        ("ab-c", (400, "InvalidResourceName")),
        ("ab_c", (400, "InvalidResourceName")),
        ("tables", (400, "InvalidResourceName")),
        ("TABLES", (400, "InvalidResourceName")),
        ("$MetricsHourPrimaryTransactionsTable", (400, "InvalidResourceName")),
        ("abcé", (400, "InvalidResourceName")),
    ],
)
def test_bad_table_names(name: str, expected: tuple[int, str]) -> None:
    b = Backend()
    assert _err(b.create_table, ACCOUNT, name) == expected
    assert _err(b.delete_table, ACCOUNT, name) == expected
    assert _err(b.get_acl, ACCOUNT, name) == expected
    assert b.query_tables(ACCOUNT, None, None, None).names == []


@pytest.mark.parametrize("name", ["abc", "a" * 63, "A12", "Tables1", "tablesx"])
def test_good_table_names(name: str) -> None:
    assert Backend().create_table(ACCOUNT, name) == name


def test_delete_table_removes_entities_and_acl() -> None:
    b = Backend()
    b.create_table(ACCOUNT, "Gone")
    b.write(ACCOUNT, "Gone", WriteOp("insert", "p", "r"))
    b.set_acl(ACCOUNT, "Gone", [SignedIdentifier("x", permission="r")])
    b.delete_table(ACCOUNT, "GONE")
    assert _err(b.delete_table, ACCOUNT, "Gone") == (404, "ResourceNotFound")
    assert _err(b.get_entity, ACCOUNT, "Gone", "p", "r") == (404, "TableNotFound")
    b.create_table(ACCOUNT, "gone")  # no TableBeingDeleted delay by default
    assert b.query_entities(ACCOUNT, "gone", None, None, None).entities == []
    assert b.get_acl(ACCOUNT, "gone") == []


def test_acl_roundtrip_and_limits() -> None:
    b = Backend()
    b.create_table(ACCOUNT, "Acl")
    policies = [
        SignedIdentifier(
            f"id{i}", "2021-06-08T02:05:09.0000000Z", "2021-06-08T03:10:09.0000000Z", "raud"
        )
        for i in range(5)
    ]
    b.set_acl(ACCOUNT, "acl", policies)
    assert b.get_acl(ACCOUNT, "ACL") == policies
    six = [*policies, SignedIdentifier("id5")]
    assert _err(b.set_acl, ACCOUNT, "Acl", six) == (400, "InvalidXmlDocument")
    assert _err(b.set_acl, ACCOUNT, "Acl", [SignedIdentifier("a", permission="rw")]) == (
        400,
        "InvalidXmlDocument",
    )
    assert _err(b.set_acl, ACCOUNT, "Acl", [SignedIdentifier("x" * 65)]) == (
        400,
        "InvalidXmlDocument",
    )
    assert _err(b.set_acl, ACCOUNT, "Acl", [SignedIdentifier("")]) == (400, "InvalidXmlDocument")
    dup = [SignedIdentifier("a"), SignedIdentifier("a")]
    assert _err(b.set_acl, ACCOUNT, "Acl", dup) == (400, "InvalidXmlDocument")
    assert b.get_acl(ACCOUNT, "Acl") == policies  # refused updates changed nothing
    b.set_acl(ACCOUNT, "Acl", [])
    assert b.get_acl(ACCOUNT, "Acl") == []
    assert _err(b.get_acl, ACCOUNT, "NoTable") == (404, "ResourceNotFound")
    assert _err(b.set_acl, ACCOUNT, "NoTable", []) == (404, "ResourceNotFound")


def test_get_acl_returns_a_copy() -> None:
    b = Backend()
    b.create_table(ACCOUNT, "Acl")
    b.get_acl(ACCOUNT, "Acl").append(SignedIdentifier("sneaky"))
    assert b.get_acl(ACCOUNT, "Acl") == []


def test_service_properties_per_account() -> None:
    b = Backend()
    assert b.get_service_properties(ACCOUNT) is None
    b.set_service_properties(
        ACCOUNT, b"<StorageServiceProperties><Cors/></StorageServiceProperties>"
    )
    assert b.get_service_properties(ACCOUNT) == (
        b"<StorageServiceProperties><Cors/></StorageServiceProperties>"
    )
    assert b.get_service_properties("other") is None


def test_table_being_deleted_delay_is_opt_in() -> None:
    now = [100.0]
    b = Backend(table_deletion_seconds=40, monotonic=lambda: now[0])
    b.create_table(ACCOUNT, "Slow")
    b.create_table(ACCOUNT, "Other")
    b.delete_table(ACCOUNT, "Slow")
    assert _err(b.create_table, ACCOUNT, "SLOW") == (409, "TableBeingDeleted")
    assert _err(b.get_entity, ACCOUNT, "Slow", "p", "r") == (404, "TableNotFound")
    assert Backend().create_table(ACCOUNT, "Slow") == "Slow"  # another backend: no delay
    b.create_table("elsewhere", "Slow")  # other accounts are unaffected
    now[0] += 39.9
    assert _err(b.create_table, ACCOUNT, "Slow") == (409, "TableBeingDeleted")
    now[0] += 0.2
    assert b.create_table(ACCOUNT, "slow") == "slow"
