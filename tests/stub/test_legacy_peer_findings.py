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


async def test_service_properties_booleans_in_python_spelling(raw: RawClient) -> None:
    """The legacy client writes booleans with ``str(bool)``: ``<Enabled>True</Enabled>``.

    Captured from ``set_table_service_properties(hour_metrics=...)``. The same serializer
    set service properties on Azure for years (blob, queue, table, the Azure CLI), whose
    reader takes booleans case-insensitively; the stub answered 400 InvalidXmlNodeValue.
    """
    body = (
        b"<?xml version='1.0' encoding='utf-8'?>\n<StorageServiceProperties><HourMetrics>"
        b"<Version>1.0</Version><Enabled>True</Enabled><IncludeAPIs>True</IncludeAPIs>"
        b"<RetentionPolicy><Enabled>True</Enabled><Days>3</Days></RetentionPolicy>"
        b"</HourMetrics><Logging><Version>1.0</Version><Delete>False</Delete><Read>True</Read>"
        b"<Write>False</Write><RetentionPolicy><Enabled>False</Enabled></RetentionPolicy>"
        b"</Logging></StorageServiceProperties>"
    )
    query = {"restype": "service", "comp": "properties"}
    r = await raw.request(
        "PUT", "/", query=query, headers={"Content-Type": ""}, body=body, version=LEGACY_VERSION
    )
    assert r.status == 202, r.body
    r = await raw.request("GET", "/", query=query, version=LEGACY_VERSION)
    assert r.status == 200, r.body
    text = r.body.decode()
    assert (
        "<HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs>"
        "<RetentionPolicy><Enabled>true</Enabled><Days>3</Days></RetentionPolicy></HourMetrics>"
    ) in text, text
    assert "<Delete>false</Delete><Read>true</Read><Write>false</Write>" in text, text
    # still refused: something that is no boolean at all
    bad = body.replace(b"<IncludeAPIs>True<", b"<IncludeAPIs>yes<")
    r = await raw.request(
        "PUT", "/", query=query, headers={"Content-Type": ""}, body=bad, version=LEGACY_VERSION
    )
    assert (r.status, r.code) == (400, "InvalidXmlNodeValue"), r.body
