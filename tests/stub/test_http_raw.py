"""Raw HTTP tests of the stub: what the official SDK never sends, and every error shape."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from lxml import etree

from azt_server_stub import DEV_KEY, StubServer

from .conftest import ATOM_VERSION, JSON_FULL, JSON_MINIMAL, JSON_NONE, RawClient
from .conftest import make_table as make_table  # re-exported: the stub tests import it here

JSON_HEADERS = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
M_NS = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
D_NS = "http://schemas.microsoft.com/ado/2007/08/dataservices"
ATOM_NS = "http://www.w3.org/2005/Atom"


async def insert(raw: RawClient, table: str, entity: dict[str, object]) -> str:
    r = await raw.request(
        "POST",
        f"/{table}",
        headers={**JSON_HEADERS, "Prefer": "return-no-content"},
        body=json.dumps(entity),
    )
    assert r.status == 204, r.body
    return r.headers["ETag"]


# --- common headers and errors ---------------------------------------------------------


async def test_common_headers_and_client_request_id(raw: RawClient) -> None:
    r = await raw.request(
        "GET", "/Tables", headers={"Accept": JSON_NONE, "x-ms-client-request-id": "abc-1"}
    )
    assert r.status == 200
    assert r.headers["x-ms-client-request-id"] == "abc-1"
    assert re.fullmatch(r"[0-9a-f-]{36}", r.headers["x-ms-request-id"])
    assert r.headers["x-ms-version"] == "2019-02-02"
    assert "Date" in r.headers
    assert r.json() == {"value": []}


async def test_json_error_body_shape(raw: RawClient) -> None:
    r = await raw.request("GET", "/nosuch()", headers={"Accept": JSON_MINIMAL})
    assert r.status == 404
    assert r.code == "TableNotFound"
    assert r.headers["Content-Type"].startswith("application/json;odata=minimalmetadata")
    err = r.json()["odata.error"]
    assert err["code"] == "TableNotFound"
    assert err["message"]["lang"] == "en-US"
    lines = err["message"]["value"].split("\n")
    assert lines[0] == "The table specified does not exist."
    assert lines[1] == "RequestId:" + r.headers["x-ms-request-id"]
    assert re.fullmatch(r"Time:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z", lines[2])


async def test_error_without_accept_is_odata_xml(raw: RawClient) -> None:
    r = await raw.request("DELETE", "/Tables('nosuch')", version=ATOM_VERSION)
    assert r.status == 404
    assert r.code == "ResourceNotFound"
    root = etree.fromstring(r.body)
    assert root.tag == f"{{{M_NS}}}error"
    assert root.findtext(f"{{{M_NS}}}code") == "ResourceNotFound"


async def test_anonymous_and_bad_signature(raw: RawClient) -> None:
    r = await raw.request("GET", "/Tables", headers={"Accept": JSON_MINIMAL}, auth="none")
    assert r.status == 401
    assert r.code == "NoAuthenticationInformation"
    raw_key = raw.key
    raw.key = "AAAA" + raw_key[4:]
    try:
        r = await raw.request("GET", "/Tables", headers={"Accept": JSON_MINIMAL})
    finally:
        raw.key = raw_key
    assert r.status == 403
    assert r.code == "AuthenticationFailed"


async def test_shared_key_lite(raw: RawClient) -> None:
    r = await raw.request("GET", "/Tables", headers={"Accept": JSON_NONE}, auth="SharedKeyLite")
    assert r.status == 200, r.body
    await make_table(raw)
    r = await raw.request(
        "POST",
        "/mytable",
        headers={"Accept": JSON_NONE, "Content-Type": "application/json"},
        body=json.dumps({"PartitionKey": "p", "RowKey": "r"}),
        auth="SharedKeyLite",
    )
    assert r.status == 201, r.body


async def test_unknown_verb_and_wrong_method(raw: RawClient) -> None:
    r = await raw.request("PROPFIND", "/Tables", headers={"Accept": JSON_MINIMAL})
    assert (r.status, r.code) == (405, "UnsupportedHttpVerb")
    r = await raw.request("PUT", "/Tables", headers={"Accept": JSON_MINIMAL})
    assert (r.status, r.code) == (405, "MethodNotAllowed")


async def test_bad_version_header(raw: RawClient) -> None:
    r = await raw.request("GET", "/Tables", headers={"Accept": JSON_MINIMAL}, version="yesterday")
    assert (r.status, r.code) == (400, "InvalidHeaderValue")


# --- content negotiation ---------------------------------------------------------------


async def test_metadata_levels_for_entities(raw: RawClient, stub: StubServer) -> None:
    await make_table(raw)
    entity = {
        "PartitionKey": "p",
        "RowKey": "r",
        "Big@odata.type": "Edm.Int64",
        "Big": "9007199254740993",
        "Ratio": 2.0,
        "Bad@odata.type": "Edm.Double",
        "Bad": "NaN",
        "Count": 7,
    }
    etag = await insert(raw, "mytable", entity)
    endpoint = f"{stub.endpoint}/devstoreaccount1"
    r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_FULL})
    assert r.status == 200
    full = r.json()
    assert full["odata.metadata"] == f"{endpoint}/$metadata#mytable"
    e = full["value"][0]
    assert list(e)[:8] == [
        "odata.type",
        "odata.id",
        "odata.etag",
        "odata.editLink",
        "PartitionKey",
        "RowKey",
        "Timestamp@odata.type",
        "Timestamp",
    ]
    assert e["odata.type"] == "devstoreaccount1.mytable"
    assert e["odata.id"] == f"{endpoint}/mytable(PartitionKey='p',RowKey='r')"
    assert e["odata.editLink"] == "mytable(PartitionKey='p',RowKey='r')"
    assert e["odata.etag"] == etag
    assert e["Big@odata.type"] == "Edm.Int64"
    assert e["Big"] == "9007199254740993"
    assert e["Bad"] == "NaN"
    assert "Ratio@odata.type" not in e
    assert e["Ratio"] == 2.0
    assert b'"Ratio":2.0' in r.body
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z", e["Timestamp"])

    r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    e = r.json()["value"][0]
    assert e["odata.etag"] == etag
    assert "odata.id" not in e
    assert "Timestamp@odata.type" not in e
    assert e["Big@odata.type"] == "Edm.Int64"
    keys = list(e)
    assert keys.index("Big@odata.type") == keys.index("Big") - 1

    r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_NONE})
    body = r.json()
    assert "odata.metadata" not in body
    e = body["value"][0]
    assert not any("@" in k or k.startswith("odata.") for k in e)
    assert e["Big"] == "9007199254740993"
    assert r.headers["Content-Type"].startswith("application/json;odata=nometadata")


async def test_format_query_parameter_overrides_accept(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request(
        "GET", "/Tables", query={"$format": JSON_FULL}, headers={"Accept": JSON_NONE}
    )
    value = r.json()["value"][0]
    assert value["odata.type"] == "devstoreaccount1.Tables"
    assert value["odata.editLink"] == "Tables('mytable')"


async def test_unsupported_media_types(raw: RawClient) -> None:
    r = await raw.request("GET", "/Tables", headers={"Accept": "text/plain"})
    assert (r.status, r.code) == (415, "MediaTypeNotSupported")
    r = await raw.request("GET", "/Tables", headers={"Accept": "application/json;odata=verbose"})
    assert (r.status, r.code) == (415, "JsonVerboseFormatNotSupported")
    r = await raw.request("GET", "/Tables", headers={"Accept": "application/atom+xml"})
    assert (r.status, r.code) == (415, "AtomFormatNotSupported")
    r = await raw.request("GET", "/Tables", headers={"Accept": JSON_MINIMAL}, version="2012-02-12")
    assert (r.status, r.code) == (415, "JsonFormatNotSupported")


# --- AtomPub -----------------------------------------------------------------------------

ATOM_ENTRY = """<?xml version="1.0" encoding="utf-8" standalone="yes"?>
<entry xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices"
       xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
       xmlns="http://www.w3.org/2005/Atom">
  <title /><updated>2013-09-18T23:46:19.3857256Z</updated><author><name /></author><id />
  <content type="application/xml">
    <m:properties>
      <d:PartitionKey>mypartitionkey</d:PartitionKey>
      <d:RowKey>myrowkey1</d:RowKey>
      <d:Address>  Mountain View </d:Address>
      <d:Age m:type="Edm.Int32">23</d:Age>
      <d:AmountDue m:type="Edm.Double">200.23</d:AmountDue>
      <d:BinaryData m:type="Edm.Binary" m:null="true" />
      <d:CustomerCode m:type="Edm.Guid">c9da6455-213d-42c9-9a79-3e9149a57833</d:CustomerCode>
      <d:CustomerSince m:type="Edm.DateTime">2008-07-10T00:00:00</d:CustomerSince>
      <d:IsActive m:type="Edm.Boolean">true</d:IsActive>
      <d:NumOfOrders m:type="Edm.Int64">255</d:NumOfOrders>
      <d:Inf m:type="Edm.Double">-INF</d:Inf>
    </m:properties>
  </content>
</entry>"""

ATOM_HEADERS = {
    "Accept": "application/atom+xml",
    "Content-Type": "application/atom+xml",
    "DataServiceVersion": "2.0;NetFx",
}


async def test_atom_create_table_insert_and_query(raw: RawClient) -> None:
    table_entry = ATOM_ENTRY.split("<content")[0] + (
        '<content type="application/xml"><m:properties><d:TableName>atomtable</d:TableName>'
        "</m:properties></content></entry>"
    )
    r = await raw.request(
        "POST", "/Tables", headers=ATOM_HEADERS, body=table_entry, version=ATOM_VERSION
    )
    assert r.status == 201, r.body
    assert r.headers["Content-Type"].startswith("application/atom+xml")
    root = etree.fromstring(r.body)
    assert root.findtext(f".//{{{D_NS}}}TableName") == "atomtable"

    r = await raw.request(
        "POST", "/atomtable", headers=ATOM_HEADERS, body=ATOM_ENTRY, version=ATOM_VERSION
    )
    assert r.status == 201, r.body
    entry = etree.fromstring(r.body)
    assert entry.get(f"{{{M_NS}}}etag") == r.headers["ETag"]

    # The same entity read back as JSON shows the types Atom declared.
    r = await raw.request(
        "GET",
        "/atomtable(PartitionKey='mypartitionkey',RowKey='myrowkey1')",
        headers={"Accept": JSON_FULL},
    )
    e = r.json()
    assert e["Address"] == "  Mountain View "
    assert e["Age"] == 23
    assert e["AmountDue"] == 200.23
    assert "BinaryData" not in e
    assert e["CustomerCode@odata.type"] == "Edm.Guid"
    assert e["CustomerSince"] == "2008-07-10T00:00:00Z"
    assert e["IsActive"] is True
    assert (e["NumOfOrders@odata.type"], e["NumOfOrders"]) == ("Edm.Int64", "255")
    assert e["Inf"] == "-Infinity"

    # Atom query response: a feed whose entries carry typed properties.
    r = await raw.request(
        "GET", "/atomtable()", headers={"Accept": "application/atom+xml"}, version=ATOM_VERSION
    )
    assert r.status == 200
    feed = etree.fromstring(r.body)
    assert feed.tag == f"{{{ATOM_NS}}}feed"
    assert r.headers["DataServiceVersion"] == "1.0;"
    entries = feed.findall(f"{{{ATOM_NS}}}entry")
    assert len(entries) == 1
    props = entries[0].find(f"{{{ATOM_NS}}}content/{{{M_NS}}}properties")
    assert props is not None
    age = props.find(f"{{{D_NS}}}Age")
    assert age is not None
    assert age.get(f"{{{M_NS}}}type") == "Edm.Int32"
    inf = props.find(f"{{{D_NS}}}Inf")
    assert inf is not None
    assert inf.text == "-INF"
    pk = props.find(f"{{{D_NS}}}PartitionKey")
    assert pk is not None
    assert pk.get(f"{{{M_NS}}}type") is None

    # $select of a missing property gives m:null in Atom
    r = await raw.request(
        "GET",
        "/atomtable()",
        query={"$select": "Age,Missing"},
        headers={"Accept": "application/atom+xml"},
        version=ATOM_VERSION,
    )
    assert r.headers["DataServiceVersion"] == "2.0;"
    feed = etree.fromstring(r.body)
    missing = feed.find(f".//{{{D_NS}}}Missing")
    assert missing is not None
    assert missing.get(f"{{{M_NS}}}null") == "true"

    # Atom error for an Atom client
    r = await raw.request(
        "POST", "/atomtable", headers=ATOM_HEADERS, body=ATOM_ENTRY, version=ATOM_VERSION
    )
    assert (r.status, r.code) == (409, "EntityAlreadyExists")
    assert etree.fromstring(r.body).tag == f"{{{M_NS}}}error"


async def test_atom_request_refused_on_new_versions(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request(
        "POST",
        "/mytable",
        headers={"Accept": JSON_MINIMAL, "Content-Type": "application/atom+xml"},
        body=ATOM_ENTRY,
    )
    assert (r.status, r.code) == (415, "AtomFormatNotSupported")


async def test_bad_atom_bodies(raw: RawClient) -> None:
    await make_table(raw)
    for body in (
        "<entry",
        ATOM_ENTRY.replace(">23<", ">x<"),
        "<notentry/>",
        ATOM_ENTRY.replace(">23<", ">2147483648<"),  # Int32 out of range
        ATOM_ENTRY.replace(">23<", ">" + "9" * 5000 + "<"),
        ATOM_ENTRY.replace(">255<", ">9223372036854775808<"),  # Int64 out of range
    ):
        r = await raw.request(
            "POST", "/mytable", headers=ATOM_HEADERS, body=body, version=ATOM_VERSION
        )
        assert (r.status, r.code) == (400, "InvalidInput"), body


# --- entity writes, tunnelling, If-Match -------------------------------------------------


async def test_merge_verbs_and_tunnelling(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "a": 1})
    path = "/mytable(PartitionKey='p',RowKey='r')"
    r = await raw.request("MERGE", path, headers={**JSON_HEADERS, "If-Match": "*"}, body='{"b":2}')
    assert r.status == 204
    r = await raw.request(
        "POST",
        path,
        headers={**JSON_HEADERS, "If-Match": "*", "X-HTTP-Method": "MERGE"},
        body='{"c":3}',
    )
    assert r.status == 204, r.body
    r = await raw.request("PATCH", path, headers={**JSON_HEADERS, "If-Match": "*"}, body='{"d":4}')
    assert r.status == 204
    got = (await raw.request("GET", path, headers={"Accept": JSON_NONE})).json()
    assert (got["a"], got["b"], got["c"], got["d"]) == (1, 2, 3, 4)

    r = await raw.request(
        "PUT", path, headers={**JSON_HEADERS, "X-HTTP-Method": "MERGE"}, body="{}"
    )
    assert (r.status, r.code) == (400, "XMethodNotUsingPost")
    r = await raw.request(
        "POST", path, headers={**JSON_HEADERS, "X-HTTP-Method": "FROB"}, body="{}"
    )
    assert (r.status, r.code) == (400, "XMethodIncorrectValue")


async def test_xmethod_given_twice(raw: RawClient, stub: StubServer) -> None:
    import aiohttp
    from multidict import CIMultiDict

    await make_table(raw)
    headers: CIMultiDict[str] = CIMultiDict()
    headers.add("X-HTTP-Method", "MERGE")
    headers.add("X-HTTP-Method", "MERGE")
    headers.add("Accept", JSON_MINIMAL)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{stub.endpoint}/devstoreaccount1/mytable(PartitionKey='p',RowKey='r')",
            headers=headers,
            data=b"{}",
        ) as resp,
    ):
        assert resp.status == 400
        assert resp.headers["x-ms-error-code"] == "XMethodIncorrectCount"


async def test_if_match_rules(raw: RawClient) -> None:
    await make_table(raw)
    etag = await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "a": 1})
    path = "/mytable(PartitionKey='p',RowKey='r')"
    r = await raw.request("DELETE", path, headers={"Accept": JSON_MINIMAL})
    assert (r.status, r.code) == (400, "InvalidInput")
    r = await raw.request(
        "PUT", path, headers={**JSON_HEADERS, "If-Match": "garbage"}, body='{"a":2}'
    )
    assert (r.status, r.code) == (400, "InvalidInput")
    r = await raw.request(
        "PUT", path, headers={**JSON_HEADERS, "If-None-Match": "*"}, body='{"a":2}'
    )
    assert (r.status, r.code) == (400, "InvalidInput")
    stale = etag.replace("Z'", "1Z'") if "." in etag else etag
    r = await raw.request(
        "PUT", path, headers={**JSON_HEADERS, "If-Match": stale[:-3] + "9'\""}, body='{"a":2}'
    )
    assert (r.status, r.code) == (412, "UpdateConditionNotSatisfied")
    # the decoded form of the ETag (":" instead of "%3A") is accepted
    r = await raw.request(
        "PUT", path, headers={**JSON_HEADERS, "If-Match": etag.replace("%3A", ":")}, body='{"a":2}'
    )
    assert r.status == 204, r.body
    new_etag = r.headers["ETag"]
    assert new_etag != etag
    r = await raw.request("DELETE", path, headers={"Accept": JSON_MINIMAL, "If-Match": new_etag})
    assert r.status == 204
    assert "ETag" not in r.headers
    r = await raw.request("DELETE", path, headers={"Accept": JSON_MINIMAL, "If-Match": "*"})
    assert (r.status, r.code) == (404, "ResourceNotFound")


async def test_upsert_needs_2011_version(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request(
        "PUT",
        "/mytable(PartitionKey='p',RowKey='r')",
        headers={"Accept": "application/atom+xml", "Content-Type": "application/atom+xml"},
        body=ATOM_ENTRY,
        version="2009-09-19",
    )
    assert r.status == 400


async def test_prefer_headers(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request(
        "POST",
        "/mytable",
        headers={**JSON_HEADERS, "Prefer": "return-content"},
        body='{"PartitionKey":"p","RowKey":"1"}',
    )
    assert r.status == 201
    assert r.headers["Preference-Applied"] == "return-content"
    assert r.json()["odata.metadata"].endswith("/$metadata#mytable/@Element")
    r = await raw.request(
        "POST", "/mytable", headers=JSON_HEADERS, body='{"PartitionKey":"p","RowKey":"2"}'
    )
    assert r.status == 201
    assert "Preference-Applied" not in r.headers
    assert r.headers["Location"].endswith("/mytable(PartitionKey='p',RowKey='2')")
    r = await raw.request(
        "POST",
        "/mytable",
        headers={**JSON_HEADERS, "Prefer": "return-no-content"},
        body='{"PartitionKey":"p","RowKey":"O\'Brien"}',
    )
    assert r.status == 204
    assert r.headers["Preference-Applied"] == "return-no-content"
    assert r.headers["DataServiceId"] == r.headers["Location"]
    assert r.headers["Location"].endswith("(PartitionKey='p',RowKey='O''Brien')")


async def test_bad_json_bodies(raw: RawClient) -> None:
    await make_table(raw)
    cases = {
        "not json": "InvalidInput",
        "[1,2]": "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","a":1,"a":2}': "DuplicatePropertiesSpecified",
        '{"PartitionKey":"p"}': "PropertiesNeedValue",
        '{"PartitionKey":1,"RowKey":"r"}': "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","a":{"b":1}}': "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","a":NaN}': "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Int32","a":"x"}': "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Int32","a":2147483648}': (
            "InvalidInput"
        ),
        '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Int64","a":"-9223372036854775809"}': (
            "InvalidInput"
        ),
        '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Int64","a":"99999999999999999999"}': (
            "InvalidInput"
        ),
        '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Guid","a":"nope"}': "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Binary","a":"***"}': "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Decimal","a":"1"}': "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.DateTime",'
        '"a":"1600-01-01T00:00:00Z"}': "OutOfRangeInput",
        '{"PartitionKey":"p","RowKey":"r","1a":1}': "PropertyNameInvalid",
        '{"PartitionKey":"p/q","RowKey":"r"}': "InvalidInput",
        '{"PartitionKey":"p","RowKey":"r","s":"\\ud800"}': "InvalidInput",
    }
    for body, code in cases.items():
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
        assert (r.status, r.code) == (400, code), body
    r = await raw.request(
        "POST", "/mytable", headers={"Accept": JSON_MINIMAL}, body='{"PartitionKey":"p"}'
    )
    assert (r.status, r.code) == (400, "MissingRequiredHeader")
    r = await raw.request(
        "POST",
        "/mytable",
        headers={"Accept": JSON_MINIMAL, "Content-Type": "text/plain"},
        body="{}",
    )
    assert (r.status, r.code) == (415, "MediaTypeNotSupported")
    # nothing was written by any of them
    r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_NONE})
    assert r.json() == {"value": []}


async def test_annotation_before_or_after_and_odata_members_ignored(raw: RawClient) -> None:
    await make_table(raw)
    body = (
        '{"odata.etag":"W/\\"x\\"","odata.type":"a.b","PartitionKey":"p","RowKey":"r",'
        '"Timestamp":"2000-01-01T00:00:00Z","n@odata.type":"Edm.Int64","n":"5",'
        '"m":"6","m@odata.type":"Edm.Int64","z":null}'
    )
    await insert(raw, "mytable", json.loads(body))
    r = await raw.request(
        "GET", "/mytable(PartitionKey='p',RowKey='r')", headers={"Accept": JSON_MINIMAL}
    )
    e = r.json()
    assert (e["n@odata.type"], e["n"], e["m@odata.type"], e["m"]) == (
        "Edm.Int64",
        "5",
        "Edm.Int64",
        "6",
    )
    assert "z" not in e
    assert not e["Timestamp"].startswith("2000")


# --- addressing -----------------------------------------------------------------------------


async def test_key_predicates(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "O'Brien", "RowKey": "a b@*$!%"})
    await insert(raw, "mytable", {"PartitionKey": "e", "RowKey": ""})
    r = await raw.request(
        "GET",
        "/mytable(PartitionKey='O%27%27Brien',RowKey='a%20b%40%2A%24%21%25')",
        headers={"Accept": JSON_NONE},
    )
    assert r.status == 200, r.body
    assert r.json()["RowKey"] == "a b@*$!%"
    r = await raw.request(
        "GET", "/mytable(PartitionKey='e',%20RowKey='')", headers={"Accept": JSON_NONE}
    )
    assert r.status == 200
    r = await raw.request("GET", "/mytable('x')", headers={"Accept": JSON_MINIMAL})
    assert (r.status, r.code) == (400, "InvalidInput")
    assert "number of keys" in r.json()["odata.error"]["message"]["value"]
    r = await raw.request(
        "GET",
        "/mytable(PartitionKey='a',RowKey='b',Other='c')",
        headers={"Accept": JSON_MINIMAL},
    )
    assert (r.status, r.code) == (400, "InvalidInput")
    r = await raw.request(
        "GET", "/mytable(PartitionKey='a',RowKey='b)", headers={"Accept": JSON_MINIMAL}
    )
    assert r.status == 400


async def test_host_style_addressing(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request(
        "GET",
        "/Tables",
        headers={"Accept": JSON_NONE},
        account_segment="",
        host="devstoreaccount1.table.localhost",
    )
    assert r.status == 200, r.body
    assert r.json() == {"value": [{"TableName": "mytable"}]}


async def test_secondary_is_read_only(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request(
        "GET",
        "/Tables",
        headers={"Accept": JSON_NONE},
        account_segment="devstoreaccount1-secondary",
    )
    assert r.status == 200, r.body
    r = await raw.request(
        "POST",
        "/Tables",
        headers=JSON_HEADERS,
        body='{"TableName":"other"}',
        account_segment="devstoreaccount1-secondary",
    )
    assert r.status == 403
    assert r.code == "AuthorizationFailure"


async def test_service_stats_only_on_secondary(raw: RawClient) -> None:
    q = {"restype": "service", "comp": "stats"}
    r = await raw.request("GET", "/", query=q)
    assert (r.status, r.code) == (400, "InvalidQueryParameterValue")
    r = await raw.request("GET", "/", query=q, account_segment="devstoreaccount1-secondary")
    assert r.status == 200, r.body
    root = etree.fromstring(r.body)
    assert root.findtext("GeoReplication/Status") == "live"
    assert root.findtext("GeoReplication/LastSyncTime", "").endswith("GMT")


# --- service properties, ACL, CORS -----------------------------------------------------------


async def test_service_properties_round_trip_and_cors(raw: RawClient) -> None:
    q = {"restype": "service", "comp": "properties"}
    r = await raw.request("GET", "/", query=q)
    assert r.status == 200
    assert etree.fromstring(r.body).findtext("Logging/Read") == "false"
    doc = (
        "<StorageServiceProperties><Cors><CorsRule>"
        "<AllowedOrigins>https://app.example</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods>"
        "<MaxAgeInSeconds>60</MaxAgeInSeconds><ExposedHeaders>x-ms-*</ExposedHeaders>"
        "<AllowedHeaders>x-ms-meta-*,content-type</AllowedHeaders></CorsRule></Cors>"
        "</StorageServiceProperties>"
    )
    r = await raw.request(
        "PUT", "/", query=q, body=doc, headers={"Content-Type": "application/xml"}
    )
    assert r.status == 202, r.body
    root = etree.fromstring((await raw.request("GET", "/", query=q)).body)
    assert root.findtext("Cors/CorsRule/AllowedMethods") == "GET,PUT"
    assert root.findtext("Logging/Version") == "1.0"  # left unchanged, normalised
    # preflight: anonymous, matched against the rule
    ok = await raw.request(
        "OPTIONS",
        "/mytable",
        auth="none",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "PUT",
            "Access-Control-Request-Headers": "x-ms-meta-a, content-type",
        },
    )
    assert ok.status == 200, ok.body
    assert ok.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert ok.headers["Access-Control-Max-Age"] == "60"
    bad = await raw.request(
        "OPTIONS",
        "/mytable",
        auth="none",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "PUT"},
    )
    assert (bad.status, bad.code) == (403, "CorsPreflightFailure")
    # an actual request from the allowed origin gets the CORS response headers
    r = await raw.request(
        "GET", "/Tables", headers={"Accept": JSON_NONE, "Origin": "https://app.example"}
    )
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert r.headers["Access-Control-Expose-Headers"] == "x-ms-*"
    # invalid documents
    r = await raw.request(
        "PUT", "/", query=q, body="<nope", headers={"Content-Type": "application/xml"}
    )
    assert (r.status, r.code) == (400, "InvalidXmlDocument")
    r = await raw.request(
        "PUT",
        "/",
        query=q,
        body="<StorageServiceProperties><Logging><Version>1.0</Version><Read>maybe</Read>"
        "<Write>false</Write><Delete>false</Delete><RetentionPolicy><Enabled>false</Enabled>"
        "</RetentionPolicy></Logging></StorageServiceProperties>",
        headers={"Content-Type": "application/xml"},
    )
    assert (r.status, r.code) == (400, "InvalidXmlNodeValue")
    assert etree.fromstring(r.body).tag == "Error"


async def test_table_acl(raw: RawClient) -> None:
    await make_table(raw)
    q = {"comp": "acl"}
    r = await raw.request("GET", "/mytable", query=q)
    assert r.status == 200
    assert etree.fromstring(r.body).tag == "SignedIdentifiers"
    assert len(etree.fromstring(r.body)) == 0
    doc = (
        "<SignedIdentifiers><SignedIdentifier><Id>p1</Id><AccessPolicy>"
        "<Start>2021-06-08T02:05:09Z</Start><Expiry>2031-06-08</Expiry><Permission>ar</Permission>"
        "</AccessPolicy></SignedIdentifier></SignedIdentifiers>"
    )
    r = await raw.request("PUT", "/mytable", query=q, body=doc)
    assert r.status == 204, r.body
    root = etree.fromstring((await raw.request("GET", "/mytable", query=q)).body)
    assert root.findtext("SignedIdentifier/AccessPolicy/Start") == "2021-06-08T02:05:09.0000000Z"
    assert root.findtext("SignedIdentifier/AccessPolicy/Expiry") == "2031-06-08T00:00:00.0000000Z"
    assert root.findtext("SignedIdentifier/AccessPolicy/Permission") == "ra"
    six = (
        "<SignedIdentifiers>"
        + "".join(f"<SignedIdentifier><Id>i{i}</Id></SignedIdentifier>" for i in range(6))
        + "</SignedIdentifiers>"
    )
    r = await raw.request("PUT", "/mytable", query=q, body=six)
    assert (r.status, r.code) == (400, "InvalidXmlDocument")
    r = await raw.request("GET", "/nosuch", query=q)
    assert r.status == 404
    assert etree.fromstring(r.body).findtext("Code") == r.code


# --- queries ---------------------------------------------------------------------------------


async def test_query_paging_select_and_errors(raw: RawClient, stub: StubServer) -> None:
    await make_table(raw)
    for i in range(5):
        await insert(raw, "mytable", {"PartitionKey": f"p{i % 2}", "RowKey": f"r{i}", "n": i})
    seen: list[str] = []
    query: dict[str, str] = {"$top": "2", "$filter": "n ge 1"}
    pages = 0
    while True:
        r = await raw.request("GET", "/mytable()", query=query, headers={"Accept": JSON_NONE})
        assert r.status == 200, r.body
        pages += 1
        seen += [e["RowKey"] for e in r.json()["value"]]
        npk = r.headers.get("x-ms-continuation-NextPartitionKey")
        if npk is None:
            break
        assert npk.startswith("1!")
        query = {
            **query,
            "NextPartitionKey": npk,
            "NextRowKey": r.headers["x-ms-continuation-NextRowKey"],
        }
    assert seen == ["r2", "r4", "r1", "r3"]
    assert pages == 2
    r = await raw.request(
        "GET", "/mytable()", query={"$select": "n, Missing"}, headers={"Accept": JSON_MINIMAL}
    )
    body = r.json()
    assert body["odata.metadata"].endswith("#mytable&$select=n,%20Missing")
    first = body["value"][0]
    assert set(first) == {"odata.etag", "n", "Missing"}
    assert first["Missing"] is None
    r = await raw.request(
        "GET", "/mytable()", query={"$filter": "n eq"}, headers={"Accept": JSON_MINIMAL}
    )
    assert (r.status, r.code) == (400, "InvalidInput")
    r = await raw.request(
        "GET", "/mytable()", query={"$orderby": "n"}, headers={"Accept": JSON_MINIMAL}
    )
    assert (r.status, r.code) == (400, "UnsupportedQueryParameter")
    r = await raw.request(
        "GET", "/mytable()", query={"$top": "0"}, headers={"Accept": JSON_MINIMAL}
    )
    assert r.status == 400


async def test_query_tables_paging(raw: RawClient) -> None:
    for name in ("alpha", "beta", "gamma"):
        await make_table(raw, name)
    r = await raw.request("GET", "/Tables", query={"$top": "2"}, headers={"Accept": JSON_NONE})
    assert [t["TableName"] for t in r.json()["value"]] == ["alpha", "beta"]
    token = r.headers["x-ms-continuation-NextTableName"]
    r = await raw.request(
        "GET", "/Tables", query={"$top": "2", "NextTableName": token}, headers={"Accept": JSON_NONE}
    )
    assert [t["TableName"] for t in r.json()["value"]] == ["gamma"]
    assert "x-ms-continuation-NextTableName" not in r.headers
    r = await raw.request(
        "GET", "/Tables", query={"$filter": "TableName eq 'beta'"}, headers={"Accept": JSON_NONE}
    )
    assert r.json() == {"value": [{"TableName": "beta"}]}
    r = await raw.request("GET", "/Tables('beta')", headers={"Accept": JSON_MINIMAL})
    assert r.json()["odata.metadata"].endswith("/$metadata#Tables/@Element")


async def test_create_table_errors(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request("POST", "/Tables", headers=JSON_HEADERS, body='{"TableName":"MYTABLE"}')
    assert (r.status, r.code) == (409, "TableAlreadyExists")
    r = await raw.request("POST", "/Tables", headers=JSON_HEADERS, body='{"TableName":"a-b-c"}')
    assert (r.status, r.code) == (400, "InvalidResourceName")
    r = await raw.request("POST", "/Tables", headers=JSON_HEADERS, body='{"TableName":"ab"}')
    assert (r.status, r.code) == (400, "OutOfRangeInput")
    r = await raw.request("POST", "/Tables", headers=JSON_HEADERS, body='{"Name":"abc"}')
    assert (r.status, r.code) == (400, "PropertiesNeedValue")
    r = await raw.request("POST", "/Tables", headers=JSON_HEADERS, body='{"TableName":5}')
    assert (r.status, r.code) == (400, "InvalidInput")


async def test_oversized_body(raw: RawClient) -> None:
    await make_table(raw)
    body = b'{"PartitionKey":"p","RowKey":"r","s":"' + b"x" * (4 * 1024 * 1024 + 10) + b'"}'
    r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
    assert (r.status, r.code) == (413, "RequestBodyTooLarge")
    body = b'{"PartitionKey":"p","RowKey":"r","s":"' + b"x" * 40000 + b'"}'
    r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
    assert (r.status, r.code) == (400, "PropertyValueTooLarge")


async def test_acl_and_service_operations_require_a_version(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request("GET", "/mytable", query={"comp": "acl"}, version=None)
    assert (r.status, r.code) == (400, "MissingRequiredHeader")
    assert b"<HeaderName>x-ms-version</HeaderName>" in r.body
    r = await raw.request(
        "GET", "/", query={"restype": "service", "comp": "properties"}, version=None
    )
    assert (r.status, r.code) == (400, "MissingRequiredHeader")
    # OData operations do not: the baseline version applies and is echoed
    r = await raw.request("GET", "/Tables", headers={"Accept": JSON_NONE}, version=None)
    assert r.status == 200
    assert r.headers["x-ms-version"] >= "2019-02-02"
    # very old versions get no x-ms-version header back
    r = await raw.request("GET", "/Tables", version="2009-04-14")
    assert "x-ms-version" not in r.headers


async def test_metadata_document_not_implemented(raw: RawClient) -> None:
    r = await raw.request("GET", "/$metadata", headers={"Accept": JSON_MINIMAL})
    assert (r.status, r.code) == (501, "NotImplemented")


async def test_unexpected_exception_becomes_logged_internal_error(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import aiohttp

    def broken(*args: object) -> None:
        raise RuntimeError("simulated stub bug")

    monkeypatch.setattr(stub.backend, "query_tables", broken)
    async with aiohttp.ClientSession() as session:
        raw = RawClient(session, stub.endpoint, "devstoreaccount1", DEV_KEY)
        with pytest.raises(AssertionError):  # the raw client refuses to see a 500 by default
            await raw.request("GET", "/Tables", headers={"Accept": JSON_MINIMAL})
        r = await raw.request(
            "GET", "/Tables", headers={"Accept": JSON_MINIMAL}, allow_internal_error=True
        )
    assert (r.status, r.code) == (500, "InternalError")
    message = r.json()["odata.error"]["message"]["value"]
    assert message.startswith("The server encountered an internal error.")
    assert "simulated" not in message
    assert any("simulated stub bug" in (rec.exc_text or "") for rec in caplog.records)


async def test_atom_update_merge_and_delete_like_wcf(raw: RawClient) -> None:
    await make_table(raw)
    r = await raw.request(
        "POST", "/mytable", headers=ATOM_HEADERS, body=ATOM_ENTRY, version=ATOM_VERSION
    )
    assert r.status == 201
    etag = r.headers["ETag"]
    path = "/mytable(PartitionKey='mypartitionkey',RowKey='myrowkey1')"
    merge_body = ATOM_ENTRY.replace(">23<", ">24<").replace(
        "<d:Address>  Mountain View </d:Address>", ""
    )
    r = await raw.request(
        "POST",
        path,
        headers={**ATOM_HEADERS, "X-HTTP-Method": "MERGE", "If-Match": etag},
        body=merge_body,
        version=ATOM_VERSION,
    )
    assert r.status == 204, r.body
    assert r.headers["ETag"] != etag
    got = (await raw.request("GET", path, headers={"Accept": JSON_NONE})).json()
    assert (got["Age"], got["Address"]) == (24, "  Mountain View ")  # merge kept Address
    r = await raw.request(
        "PUT",
        path,
        headers={**ATOM_HEADERS, "If-Match": "*"},
        body=merge_body,
        version=ATOM_VERSION,
    )
    assert r.status == 204
    got = (await raw.request("GET", path, headers={"Accept": JSON_NONE})).json()
    assert "Address" not in got  # replace dropped it
    r = await raw.request(
        "POST",
        path,
        headers={"Accept": "application/atom+xml", "X-HTTP-Method": "DELETE", "If-Match": etag},
        version=ATOM_VERSION,
    )
    assert (r.status, r.code) == (412, "UpdateConditionNotSatisfied")
    assert etree.fromstring(r.body).tag == f"{{{M_NS}}}error"
    r = await raw.request(
        "DELETE",
        path,
        headers={"Accept": "application/atom+xml", "If-Match": "*"},
        version=ATOM_VERSION,
    )
    assert r.status == 204


async def test_accounts_are_isolated(raw: RawClient, stub: StubServer) -> None:
    import aiohttp

    await make_table(raw)
    second_key = stub.config.accounts["second"][0]
    assert "AccountName=second;" in stub.connection_string_for("second")
    async with aiohttp.ClientSession() as session:
        other = RawClient(session, stub.endpoint, "second", second_key)
        r = await other.request("GET", "/Tables", headers={"Accept": JSON_NONE})
        assert r.json() == {"value": []}
        other.key = DEV_KEY  # the dev account's key does not open the second account
        r = await other.request("GET", "/Tables", headers={"Accept": JSON_NONE})
        assert (r.status, r.code) == (403, "AuthenticationFailed")
        unknown = RawClient(session, stub.endpoint, "nobody", DEV_KEY)
        r = await unknown.request("GET", "/Tables", headers={"Accept": JSON_NONE})
        assert (r.status, r.code) == (403, "AuthenticationFailed")


async def test_plus_in_query_strings_is_a_space(raw: RawClient, stub: StubServer) -> None:
    import datetime as dt
    from urllib.parse import parse_qsl

    from azure.core.credentials import AzureNamedKeyCredential
    from azure.data.tables import TableSasPermissions, generate_table_sas

    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "1", "name": "a+b"})
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "2", "name": "a b"})
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_NONE}, raw_query="$filter=name%20eq%20'a+b'"
    )
    # form decoding, as Azure reads a query string: '+' is a space, a plus is %2B
    assert [e["RowKey"] for e in r.json()["value"]] == ["2"]
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_NONE}, raw_query="$filter=name%20eq%20'a%2Bb'"
    )
    assert [e["RowKey"] for e in r.json()["value"]] == ["1"]
    # a SAS whose base64 signature carries a '+' fails when the '+' is sent unescaped (as on
    # Azure: it reads a space) and works when it is escaped
    cred = AzureNamedKeyCredential("devstoreaccount1", DEV_KEY)
    start = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    for minutes in range(200):
        sas = generate_table_sas(
            cred,
            "mytable",
            permission=TableSasPermissions(read=True),
            expiry=start + dt.timedelta(minutes=minutes),
        )
        params = dict(parse_qsl(sas))
        if "+" in params["sig"]:
            break
    else:
        pytest.fail("no signature with a '+' in 200 tries")
    raw_sas = "&".join(f"{k}={v if k == 'sig' else quote(v, safe='')}" for k, v in params.items())
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_NONE}, auth="none", raw_query=raw_sas
    )
    assert (r.status, r.code) == (403, "AuthenticationFailed"), r.body
    escaped = "&".join(f"{k}={quote(v, safe='')}" for k, v in params.items())
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_NONE}, auth="none", raw_query=escaped
    )
    assert r.status == 200, r.body
