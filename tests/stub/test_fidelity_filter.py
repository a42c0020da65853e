"""Case of keywords and Boolean literals in ``$filter`` (issue 18, point 3).

Decision: the stub keeps operators (``eq ne gt ge lt le and or not``) and the literals
``true``/``false``/``null`` case-sensitive, so ``Flag eq True`` or ``A EQ 1`` is a
``400 InvalidInput``, as Azure answers a malformed filter.

Evidence (medium for keywords, thin for the Boolean literals): Azure's "Constructing
Filter Strings for the Table Designer" page ("All parts of the filter string are
case-sensitive"; "To filter on a Boolean value, specify true or false without quotation
marks"); a user's report against real Table storage, Azure/Azurite#2512 (``Or`` instead of
``or`` was a syntax error on Azure, accepted by Azurite); the WCF Data Services / ODataLib
lexers the service's OData front end derives from compare keywords and ``true``/``false``
ordinally. Azurite's case-insensitive Boolean literals (Azure/Azurite PR #1959) came from
an entity-value report (Azure/Azurite#1947), not a filter one. No official SDK sends
anything but lowercase (azure-data-tables lowercases Python bools on purpose).
"""

from __future__ import annotations

import json

import pytest

from tests.stub.conftest import QUERY_HEADERS, RawClient, matching_row_keys
from tests.stub.test_http_raw import insert, make_table


async def _flags(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "t", "Flag": True, "A": 1})
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "f", "Flag": False, "A": 2})


async def test_lowercase_literals_and_keywords_work(raw: RawClient) -> None:
    await _flags(raw)
    assert await matching_row_keys(raw, "mytable", "Flag eq true") == ["t"]
    assert await matching_row_keys(raw, "mytable", "Flag eq false") == ["f"]
    assert await matching_row_keys(raw, "mytable", "not (A eq 1) and Flag ne true") == ["f"]
    assert await matching_row_keys(raw, "mytable", "A eq 1 or A eq 2") == ["f", "t"]


@pytest.mark.parametrize(
    "text",
    [
        "Flag eq True",
        "Flag eq FALSE",
        "Flag eq TRUE",
        "A EQ 1",
        "A Eq 1",
        "A eq 1 AND A eq 2",
        "A eq 1 Or A eq 2",
        "Flag ne Null",
    ],
)
async def test_other_casings_are_400_invalid_input(raw: RawClient, text: str) -> None:
    """Azure/Azurite#2512 ("Or" was a syntax error on Table storage); docs: "All parts of
    the filter string are case-sensitive"."""
    await _flags(raw)
    r = await raw.request("GET", "/mytable()", query={"$filter": text}, headers=QUERY_HEADERS)
    assert (r.status, r.code) == (400, "InvalidInput"), r.body
    assert json.loads(r.body)["odata.error"]["code"] == "InvalidInput"


@pytest.mark.parametrize(
    "text",
    [
        "G eq guid'1c241d2e-45c9-4a7a-9c1d-bb0a8a1b1a4e\n'",  # was a 500 (ValueError)
        "B eq X'00\n'",
    ],
)
async def test_typed_literals_are_exact(raw: RawClient, text: str) -> None:
    """A literal's body is its lexical form exactly: a trailing newline is a 400."""
    await _flags(raw)
    r = await raw.request("GET", "/mytable()", query={"$filter": text}, headers=QUERY_HEADERS)
    assert (r.status, r.code) == (400, "InvalidInput"), r.body
