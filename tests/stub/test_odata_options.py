"""``$select``, ``$top`` and continuation tokens."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from azt_server_stub.errors import StubError
from azt_server_stub.odata import (
    decode_continuation,
    decode_table_continuation,
    encode_continuation,
    encode_table_continuation,
    parse_select,
    parse_top,
)

# --- $select ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Name", ["Name"]),
        ("Name,Age", ["Name", "Age"]),
        ("Name, Age", ["Name", "Age"]),
        (" Name ,\tAge ", ["Name", "Age"]),
        ("Age,Name,Age", ["Age", "Name"]),
        ("PartitionKey,RowKey,Timestamp", ["PartitionKey", "RowKey", "Timestamp"]),
        ("_x1,Größe", ["_x1", "Größe"]),
        ("*", []),
        (" * ", []),
        ("Name,*", []),
        ("", []),
        ("  ", []),
    ],
)
def test_select(text: str, names: list[str]) -> None:
    assert parse_select(text) == names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Name,", "item 2 is empty"),
        (",Name", "item 1 is empty"),
        ("Name,,Age", "item 2 is empty"),
        ("1abc", "'1abc' is not a valid property name"),
        ("first-name", "'first-name' is not a valid property name"),
        ("a b", "'a b' is not a valid property name"),
        ("Address/City", "'Address/City' is not a valid property name"),
        ("odata.etag", "'odata.etag' is not a valid property name"),
        ("x" * 256, "is not a valid property name"),
    ],
)
def test_select_refusals(text: str, message: str) -> None:
    with pytest.raises(StubError) as info:
        parse_select(text)
    assert (info.value.status, info.value.code) == (400, "InvalidInput")
    assert message in info.value.message


def test_select_limit_is_255_names() -> None:
    assert len(parse_select(",".join(f"p{i}" for i in range(255)))) == 255
    assert len(parse_select("x" * 255)) == 1
    with pytest.raises(StubError) as info:
        parse_select(",".join(f"p{i}" for i in range(256)))
    assert info.value.code == "InvalidInput"
    assert "at most 255" in info.value.message


# --- $top ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [("1", 1), ("25", 25), ("1000", 1000), ("007", 7)])
def test_top(text: str, value: int) -> None:
    assert parse_top(text) == value


@pytest.mark.parametrize("text", ["0", "1001", "-1", "99999999999999999999"])
def test_top_out_of_range(text: str) -> None:
    with pytest.raises(StubError) as info:
        parse_top(text)
    err = info.value
    assert (err.status, err.code) == (400, "OutOfRangeQueryParameterValue")
    assert err.details == {
        "QueryParameterName": "$top",
        "QueryParameterValue": text,
        "MinimumAllowed": "1",
        "MaximumAllowed": "1000",
    }


@pytest.mark.parametrize("text", ["", "abc", "1.5", "1e3", "10 0", "+", "0x10"])
def test_top_not_an_integer(text: str) -> None:
    with pytest.raises(StubError) as info:
        parse_top(text)
    err = info.value
    assert (err.status, err.code) == (400, "InvalidQueryParameterValue")
    assert err.details["QueryParameterName"] == "$top"


# --- continuation tokens ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "token"),
    [
        ("pk121a1965", "1!16!cGsxMjFhMTk2NQ--"),
        ("Smith", "1!8!U21pdGg-"),
        ("Ben999", "1!8!QmVuOTk5"),
        ("Ben1898", "1!12!QmVuMTg5OA--"),
        ("", "1!0!"),
    ],
)
def test_continuation_vectors(value: str, token: str) -> None:
    assert encode_continuation(value) == token
    assert decode_continuation(token) == value


@given(st.text(max_size=40))
def test_continuation_round_trip(value: str) -> None:
    token = encode_continuation(value)
    assert decode_continuation(token) == value
    n, length, payload = token.split("!", 2)
    assert n == "1"
    assert int(length) == len(payload)
    assert "=" not in payload


def test_continuation_accepts_unencoded_plus_and_raw_keys() -> None:
    plus = encode_continuation(">>>")  # "Pj4+"
    assert "+" in plus
    assert decode_continuation(plus.replace("+", " ")) == ">>>"
    assert decode_continuation("Smith") == "Smith"
    assert decode_continuation("row 1") == "row 1"


@pytest.mark.parametrize(
    "token",
    [
        "",  # NextRowKey= : Azure answers 400 InvalidInput
        "2!8!U21pdGg-",
        "1!9!U21pdGg-",
        "1!7!U21pdGg",
        "1!8!U21pd@g-",
        "1!8!U2-pdGg-",
        "1!8!U21p-dGg",
        "1!12!U21pdGg-----",
        "1!4!/w--",  # decodes to a byte that is not UTF-8
        "1!x!U21pdGg-",
        "1!",
        "12!",
    ],
)
def test_garbage_tokens(token: str) -> None:
    with pytest.raises(StubError) as info:
        decode_continuation(token)
    err = info.value
    assert (err.status, err.code) == (400, "InvalidInput")
    assert err.message == "One of the request inputs is not valid."


def test_table_continuation() -> None:
    azure = "1!48!bGlzdHRhYmxlM2NhYzE0YzMBMDFkNjhiYjQzYjkyNWUxOQ--"
    assert decode_table_continuation(azure) == "listtable3cac14c3"
    token = encode_table_continuation("MyTable")
    assert decode_continuation(token).startswith("MyTable\x01")
    assert decode_table_continuation(token) == "MyTable"
    assert decode_table_continuation("MyTable") == "MyTable"
    with pytest.raises(StubError):
        decode_table_continuation("1!3!abc")
