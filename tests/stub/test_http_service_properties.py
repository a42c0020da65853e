"""Set and Get Table Service Properties over HTTP, as clients spell the document."""

from __future__ import annotations

from .conftest import (
    RawClient,
)

LEGACY_VERSION = "2018-03-28"


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
