"""Tables of accepted and refused inputs for ``azt_server_stub.validation``."""

from __future__ import annotations

import uuid

import pytest

from azt_server_stub import validation as v
from azt_server_stub.errors import StubError
from azt_server_stub.model import (
    MAX_DATETIME_TICKS,
    MIN_DATETIME_TICKS,
    Edm,
    EdmName,
    TypedValue,
    parse_datetime,
)


def _code(fn: object, *args: object) -> str | None:
    try:
        fn(*args)  # type: ignore[operator]
    except StubError as exc:
        return exc.code
    return None


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("abc", None),
        ("Abc123", None),
        ("a" * 63, None),
        ("a1" * 31 + "b", None),
        ("ab", "OutOfRangeInput"),
        ("a" * 64, "OutOfRangeInput"),
        ("", "OutOfRangeInput"),
        ("1ab", "InvalidResourceName"),
        ("ab_", "InvalidResourceName"),
        ("a b", "InvalidResourceName"),
        ("ab\n", "InvalidResourceName"),
        ("abé", "InvalidResourceName"),
        ("ab١", "InvalidResourceName"),  # Arabic-Indic digit: not ASCII alphanumeric
        ("tables", "InvalidResourceName"),
        ("Tables", "InvalidResourceName"),
        ("$Metrics", "InvalidResourceName"),
    ],
)
def test_table_names(name: str, code: str | None) -> None:
    assert _code(v.validate_table_name, name) == code


@pytest.mark.parametrize(
    ("key", "code"),
    [
        ("", None),
        ("plain", None),
        ("with space and 'quote' and %25 and :", None),
        ("ünïcødé 日本 \U0001f600", None),
        ("x" * 1024, None),
        ("\U0001f600" * 512, None),  # 1024 UTF-16 code units
        ("x" * 1025, "KeyValueTooLarge"),
        ("\U0001f600" * 512 + "x", "KeyValueTooLarge"),
        ("a/b", "InvalidInput"),
        ("a\\b", "InvalidInput"),
        ("a#b", "InvalidInput"),
        ("a?b", "InvalidInput"),
        ("a\tb", "InvalidInput"),
        ("a\nb", "InvalidInput"),
        ("\x00", "InvalidInput"),
        ("\x1f", "InvalidInput"),
        ("\x7f", "InvalidInput"),
        ("\x85", "InvalidInput"),
        ("\x9f", "InvalidInput"),
        ("\xa0", None),
        ("\ud800", "InvalidInput"),  # a lone surrogate is not text the service can store
        ("a\udfffb", "InvalidInput"),
        (5, "InvalidInput"),
        (None, "InvalidInput"),
    ],
)
def test_keys(key: object, code: str | None) -> None:
    assert _code(v.validate_key, "RowKey", key) == code


def test_key_too_large_names_the_key() -> None:
    with pytest.raises(StubError) as exc:
        v.validate_key("PartitionKey", "x" * 2000)
    assert "'PartitionKey'" in exc.value.message


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("Age", None),
        ("_private", None),
        ("a1_b2", None),
        ("Größe", None),
        ("名前", None),
        ("x" * 255, None),
        ("Ⅻthing", None),  # letter number (Nl) may start a name
        ("e\u0301", None),  # combining mark inside
        ("x" * 256, "PropertyNameTooLong"),
        ("", "PropertyNameInvalid"),
        ("123", "PropertyNameInvalid"),
        ("1abc", "PropertyNameInvalid"),
        ("has-dash", "PropertyNameInvalid"),
        ("has space", "PropertyNameInvalid"),
        ("odata.etag", "PropertyNameInvalid"),
        ("a@odata.type", "PropertyNameInvalid"),
        ("\u0301e", "PropertyNameInvalid"),
        ("٣x", "PropertyNameInvalid"),  # digit first
        ("a\u200db", "PropertyNameInvalid"),  # Cf refused (not an XML name character)
        ("a\ud800", "PropertyNameInvalid"),  # a lone surrogate
        ("\u00aa", "PropertyNameInvalid"),  # letters that are not XML name characters
        ("a\u00b5", "PropertyNameInvalid"),
        ("x\u00ba", "PropertyNameInvalid"),
        ("a\u2054b", "PropertyNameInvalid"),
        ("PartitionKey", "PropertyNameInvalid"),
        ("RowKey", "PropertyNameInvalid"),
        ("Timestamp", "PropertyNameInvalid"),
    ],
)
def test_property_names(name: str, code: str | None) -> None:
    assert _code(v.validate_property_name, name) == code
    assert _code(v.validate_property_name, name) == code  # again, via the cache


@pytest.mark.parametrize(
    ("edm", "value", "code"),
    [
        (Edm.STRING, "", None),
        (Edm.STRING, "x" * 32768, None),
        (Edm.STRING, "\U0001f600" * 16384, None),
        (Edm.STRING, "x" * 32769, "PropertyValueTooLarge"),
        (Edm.STRING, "\U0001f600" * 16384 + "x", "PropertyValueTooLarge"),
        (Edm.STRING, 5, "InvalidInput"),
        (Edm.STRING, "x\ud800", "InvalidInput"),
        (Edm.STRING, "\udc00" * 40000, "PropertyValueTooLarge"),
        (Edm.INT32, 2**31 - 1, None),
        (Edm.INT32, -(2**31), None),
        (Edm.INT32, 2**31, "InvalidInput"),
        (Edm.INT32, -(2**31) - 1, "InvalidInput"),
        (Edm.INT32, True, "InvalidInput"),
        (Edm.INT32, 1.0, "InvalidInput"),
        (Edm.INT64, 2**63 - 1, None),
        (Edm.INT64, -(2**63), None),
        (Edm.INT64, 2**63, "InvalidInput"),
        (Edm.INT64, -(2**63) - 1, "InvalidInput"),
        (Edm.INT64, "5", "InvalidInput"),
        (Edm.DOUBLE, float("nan"), None),
        (Edm.DOUBLE, float("-inf"), None),
        (Edm.DOUBLE, -0.0, None),
        (Edm.DOUBLE, 1, "InvalidInput"),
        (Edm.BOOLEAN, False, None),
        (Edm.BOOLEAN, 0, "InvalidInput"),
        (Edm.DATETIME, MIN_DATETIME_TICKS, None),
        (Edm.DATETIME, MAX_DATETIME_TICKS, None),
        (Edm.DATETIME, MIN_DATETIME_TICKS - 1, "OutOfRangeInput"),
        (Edm.DATETIME, parse_datetime("1600-12-31T23:59:59Z"), "OutOfRangeInput"),
        (Edm.DATETIME, MAX_DATETIME_TICKS + 1, "OutOfRangeInput"),
        (Edm.DATETIME, "2020-01-01T00:00:00Z", "InvalidInput"),
        (Edm.GUID, uuid.uuid4(), None),
        (Edm.GUID, str(uuid.uuid4()), "InvalidInput"),
        (Edm.BINARY, b"", None),
        (Edm.BINARY, b"x" * 65536, None),
        (Edm.BINARY, b"x" * 65537, "PropertyValueTooLarge"),
        (Edm.BINARY, bytearray(b"x"), "InvalidInput"),
    ],
)
def test_values(edm: EdmName, value: object, code: str | None) -> None:
    assert _code(v.validate_value, edm, value) == code


def test_property_count() -> None:
    ok = {f"P{i}": (Edm.BOOLEAN, True) for i in range(252)}
    assert _code(v.validate_entity, "p", "r", ok) is None
    too_many = {**ok, "Extra": (Edm.BOOLEAN, True)}
    assert _code(v.validate_entity, "p", "r", too_many) == "TooManyProperties"


def test_entity_size_accounting() -> None:
    props: dict[str, TypedValue] = {
        "S": (Edm.STRING, "ab"),  # 8 + 2 + 8
        "X": (Edm.BINARY, b"abc"),  # 8 + 2 + 7
        "I": (Edm.INT32, 1),  # 8 + 2 + 4
        "L": (Edm.INT64, 1),  # 8 + 2 + 8
        "D": (Edm.DOUBLE, 1.0),  # 8 + 2 + 8
        "T": (Edm.DATETIME, MIN_DATETIME_TICKS),  # 8 + 2 + 8
        "G": (Edm.GUID, uuid.UUID(int=0)),  # 8 + 2 + 16
        "B": (Edm.BOOLEAN, True),  # 8 + 2 + 1
    }
    expected = 4 + 2 * (2 + 1) + 18 + 17 + 14 + 18 + 18 + 18 + 26 + 11
    assert v.entity_size("pk", "r", props) == expected
    assert v.entity_size("pk", "\U0001f600", props) == expected + 2  # two UTF-16 units
    assert v.validate_properties(props) == expected - 4 - 2 * 3


def test_entity_too_large() -> None:
    # 16 binaries of 64 KiB: each within limits, together over 1 MiB
    props = {f"B{i:02d}": (Edm.BINARY, b"\0" * 65536) for i in range(16)}
    assert _code(v.validate_entity, "p", "r", props) == "EntityTooLarge"
    props.popitem()
    assert _code(v.validate_entity, "p", "r", props) is None
    assert _code(v.check_entity_limits, "p", "r", props) is None


def test_entity_check_order() -> None:
    bad_everything = {"1bad": (Edm.STRING, "x" * 40000)}
    assert _code(v.validate_entity, "a/b", "x" * 2000, bad_everything) == "InvalidInput"
    assert _code(v.validate_entity, "a", "x" * 2000, bad_everything) == "KeyValueTooLarge"
    assert _code(v.validate_entity, "a", "b", bad_everything) == "PropertyNameInvalid"
    assert _code(v.validate_entity, "a", "b", {"ok": (Edm.STRING, "x" * 40000)}) == (
        "PropertyValueTooLarge"
    )


@pytest.mark.parametrize(
    "typed",
    [("Edm.Int32", 1), (Edm.INT32,), [Edm.INT32, 1], "value"],
)
def test_malformed_typed_values(typed: object) -> None:
    assert _code(v.validate_properties, {"A": typed}) == "InvalidInput"


def test_utf16_len() -> None:
    assert v.utf16_len("") == 0
    assert v.utf16_len("abc") == 3
    assert v.utf16_len("é日") == 2
    assert v.utf16_len("\U0001f600x\U00010000") == 5


def test_docstring_examples() -> None:
    import doctest

    from azt_server_stub import backend

    for module in (v, backend):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0
        assert result.failed == 0
