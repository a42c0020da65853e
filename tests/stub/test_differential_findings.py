"""What the differential test (``tests/differential``: the stub and Azurite driven by the same
random command sequences) found, pinned as stub tests that need no Azurite.

Each case is one where the stub and Azurite 3.35 disagreed. Azure is the oracle: in every
case so far PROTOCOL.md sides with the stub, Azurite is the one that deviates, and the
differential generator leaves the case out. These tests keep the stub on Azure's side.
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from .conftest import JSON_MINIMAL, JSON_NONE, RawClient
from .test_http_batch import envelope, parts_of, post_batch, request_part
from .test_http_raw import insert, make_table

QUERY_HEADERS = {"Accept": JSON_NONE, "DataServiceVersion": "3.0"}


async def _row_keys(raw: RawClient, table: str, filter_text: str) -> list[str]:
    r = await raw.request(
        "GET", f"/{table}()", query={"$filter": filter_text}, headers=QUERY_HEADERS
    )
    assert r.status == 200, r.body
    return [row["RowKey"] for row in r.json()["value"]]


@pytest.mark.parametrize(
    ("literal", "matches"),
    [
        ("1e+16", ["zero"]),
        ("1e16", ["zero"]),
        ("1E16", ["zero"]),
        ("1.5e3", ["zero"]),
        ("-1e-5", []),
        ("-2.5e0", []),
    ],
)
async def test_double_literal_with_exponent(
    raw: RawClient, literal: str, matches: list[str]
) -> None:
    """``d lt 1e+16`` is a Double comparison (PROTOCOL.md 7.2 grammar: a double may be
    written with an exponent). Azurite 3.35 matches nothing for any exponent literal."""
    await make_table(raw)
    await insert(
        raw,
        "mytable",
        {"PartitionKey": "p", "RowKey": "zero", "d": 0.0, "d@odata.type": "Edm.Double"},
    )
    assert await _row_keys(raw, "mytable", f"d lt {literal}") == matches
    assert await _row_keys(raw, "mytable", f"d ge {literal}") == (["zero"] if not matches else [])


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"])
async def test_transaction_with_raw_javascript_line_separator(
    raw: RawClient, separator: str
) -> None:
    """A transaction whose JSON carries a raw U+2028 / U+2029 (valid JSON; non-ASCII sent
    unescaped) is applied and stores the value exactly. Azurite 3.35 fails it with
    ``400 InvalidInput`` though it accepts the same entity outside a transaction."""
    await make_table(raw)
    base = f"{raw.base}/devstoreaccount1"
    value = f"a{separator}b"
    body = json.dumps({"PartitionKey": "p", "RowKey": "r", "s": value}, ensure_ascii=False)
    r = await post_batch(raw, envelope([request_part("POST", f"{base}/mytable", body)]))
    assert r.status == 202, r.body
    assert [status for status, _, _ in parts_of(r.body)] == [201]
    got = await raw.request(
        "GET", "/mytable(PartitionKey='p',RowKey='r')", headers={"Accept": JSON_MINIMAL}
    )
    assert got.status == 200, got.body
    assert got.json()["s"] == value


async def test_entity_operations_through_another_casing_of_the_table_name(
    raw: RawClient,
) -> None:
    """Table names are case-insensitive for every operation (PROTOCOL.md 5.5): a table
    created as ``MixedCase`` is read and written as ``mixedcase``. Azurite 3.35 is
    case-insensitive for create and delete only and answers entity operations through
    another casing with ``404 TableNotFound``."""
    await make_table(raw, "MixedCase")
    await insert(raw, "mixedcase", {"PartitionKey": "p", "RowKey": "lower"})
    await insert(raw, "MIXEDCASE", {"PartitionKey": "p", "RowKey": "upper"})
    assert await _row_keys(raw, "mixedCASE", "PartitionKey eq 'p'") == ["lower", "upper"]
    tables = await raw.request(
        "GET", "/Tables", query={"$filter": "TableName eq 'MixedCase'"}, headers=QUERY_HEADERS
    )
    assert [t["TableName"] for t in tables.json()["value"]] == ["MixedCase"]
    key = quote("(PartitionKey='p',RowKey='lower')", safe="(),='")
    deleted = await raw.request(
        "DELETE", f"/MIXEDcase{key}", headers={"If-Match": "*", "Accept": JSON_MINIMAL}
    )
    assert deleted.status == 204, deleted.body
    assert await _row_keys(raw, "MixedCase", "PartitionKey eq 'p'") == ["upper"]
