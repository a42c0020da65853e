"""What the legacy ``azure-cosmosdb-table`` SDK sent that the stub got wrong.

Each test replays, byte for byte, a request captured from the legacy client (see
``tests/peers/legacy_cosmosdb_table_check.py``), signed the way that client signs it.
"""

from __future__ import annotations

import json

from .conftest import JSON_MINIMAL, RawClient

# The headers the legacy client sends on every Table request (captured).
LEGACY_HEADERS = {
    "Accept": JSON_MINIMAL,
    "DataServiceVersion": "3.0;NetFx",
    "MaxDataServiceVersion": "3.0",
}
LEGACY_VERSION = "2018-03-28"


async def _setup(raw: RawClient) -> None:
    r = await raw.request(
        "POST",
        "/Tables",
        headers={**LEGACY_HEADERS, "Content-Type": "application/json"},
        body=json.dumps({"TableName": "cap"}),
        version=LEGACY_VERSION,
    )
    assert r.status == 201, r.body
    for rk, name in (("1", "a b"), ("2", "a+b")):
        body = {
            "PartitionKey": "x",
            "RowKey": rk,
            "name": name,
            "n": rk,
            "n@odata.type": "Edm.Int64",
        }
        r = await raw.request(
            "POST",
            "/cap",
            headers={**LEGACY_HEADERS, "Content-Type": "application/json"},
            body=json.dumps(body),
            version=LEGACY_VERSION,
        )
        assert r.status == 201, r.body


async def test_form_encoded_query_plus_is_a_space(raw: RawClient) -> None:
    """The legacy client (``requests`` ``params=``) form-encodes the query: a space is '+'.

    Captured: ``GET /devstoreaccount1/cap()?%24filter=PartitionKey+eq+%27x%27``. Azure
    decodes '+' in a query value as a space (an unescaped '+' in a SAS ``sig`` is why such
    signatures fail there); a literal plus arrives as ``%2B``.
    """
    await _setup(raw)
    r = await raw.request(
        "GET",
        "/cap()",
        headers=LEGACY_HEADERS,
        version=LEGACY_VERSION,
        raw_query="%24filter=PartitionKey+eq+%27x%27",
    )
    assert r.status == 200, r.body
    assert [e["RowKey"] for e in r.json()["value"]] == ["1", "2"]
    r = await raw.request(
        "GET",
        "/cap()",
        headers=LEGACY_HEADERS,
        version=LEGACY_VERSION,
        raw_query="%24filter=name+eq+%27a%2Bb%27&%24select=name%2CRowKey&%24top=5",
    )
    assert r.status == 200, r.body
    assert [(e["RowKey"], e["name"]) for e in r.json()["value"]] == [("2", "a+b")]
    r = await raw.request(
        "GET",
        "/cap()",
        headers=LEGACY_HEADERS,
        version=LEGACY_VERSION,
        raw_query="%24filter=name+eq+%27a+b%27",
    )
    assert [e["RowKey"] for e in r.json()["value"]] == ["1"]
