"""Resource paths and query strings (PROTOCOL.md 2.2, 7.1)."""

from __future__ import annotations

import doctest
from urllib.parse import quote, unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

import azt._core.wire.urls as urls
from azt._core.wire.urls import (
    BATCH_PATH,
    TABLES_PATH,
    encode_query,
    entity_path,
    escape_key,
    table_entity_path,
    table_path,
)


def test_docstring_examples() -> None:
    result = doctest.testmod(urls)
    assert result.attempted >= 6
    assert result.failed == 0


def test_protocol_vector() -> None:
    # PROTOCOL.md Appendix A: RowKey RK'@*$!% -> RowKey='RK%27%27%40%2A%24%21%25'
    assert entity_path("mytable", "pk", "RK'@*$!%") == (
        "mytable(PartitionKey='pk',RowKey='RK%27%27%40%2A%24%21%25')"
    )


@pytest.mark.parametrize(
    ("key", "escaped"),
    [
        ("", ""),
        ("O'Brien", "O%27%27Brien"),
        ("a b+c&d=e", "a%20b%2Bc%26d%3De"),
        ("é", "%C3%A9"),
        ("😀", "%F0%9F%98%80"),
        ("AZaz09-._~", "AZaz09-._~"),
        ("()[],;:", "%28%29%5B%5D%2C%3B%3A"),
    ],
)
def test_escape_key(key: str, escaped: str) -> None:
    assert escape_key(key) == escaped


@given(st.text())
def test_escape_key_round_trips(key: str) -> None:
    esc = escape_key(key.replace("\ud800", ""))
    assert "'" not in esc
    assert "/" not in esc
    assert unquote(esc).replace("''", "'") == key.replace("\ud800", "")


#: texts mostly of ASCII letters and digits (the paths' shortcut), sometimes anything else
_NAMES = st.one_of(
    st.text("abcXYZ0189", max_size=12),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7F), max_size=12),
    st.text(max_size=12),
    st.sampled_from(["", "²", "٣", "ａ", "ǅ", "Ⅻ", "a b", "a'b", "a-b", "x~y_z.w"]),
)


@given(_NAMES, _NAMES, _NAMES)
def test_paths_equal_quote_of_every_part(table: str, pk: str, rk: str) -> None:
    # differential: the shortcut for ASCII letters and digits writes what quote writes
    def esc(key: str) -> str:
        return quote(key.replace("'", "''"), safe="")

    expected = f"{quote(table, safe='')}(PartitionKey='{esc(pk)}',RowKey='{esc(rk)}')"
    assert entity_path(table, pk, rk) == expected
    assert escape_key(pk) == esc(pk)
    assert table_path(table) == quote(table, safe="")
    assert table_entity_path(table) == f"Tables('{esc(table)}')"


def test_paths() -> None:
    assert entity_path("t", "", "") == "t(PartitionKey='',RowKey='')"
    assert table_path("mytable") == "mytable"
    assert table_entity_path("mytable") == "Tables('mytable')"
    assert TABLES_PATH == "Tables"
    assert BATCH_PATH == "$batch"


def test_encode_query() -> None:
    assert encode_query({}) == ""
    assert encode_query({"$filter": "PartitionKey eq 'a b'", "$top": "1000"}) == (
        "$filter=PartitionKey%20eq%20%27a%20b%27&$top=1000"
    )
    q = encode_query({"$filter": "Name eq 'x/y?z:@&=+,$#'", "$select": "A,B"})
    assert q == "$filter=Name%20eq%20%27x%2Fy%3Fz%3A%40%26%3D%2B%2C%24%23%27&$select=A%2CB"
    assert "+" not in encode_query({"q": "a b"})
    assert encode_query({"NextPartitionKey": "1!8!U21pdGg-"}) == "NextPartitionKey=1%218%21U21pdGg-"
