"""AtomPub wire format: PROTOCOL.md 6.5 samples, special values, round trips, errors."""

from __future__ import annotations

import doctest
import math
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

import azt._core.wire.atom as atom
from azt._core.wire import WireDecodeError
from azt._core.wire.atom import (
    decode_entry,
    decode_error,
    decode_feed,
    decode_table,
    decode_tables,
    encode_entity,
    encode_table,
)
from azt._core.wire.json import encode_entity as json_encode
from azt._errors import ValidationError
from azt.edm import EdmDateTime, EdmType, TableEntity, Typed

NS = (
    'xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" '
    'xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" '
    'xmlns="http://www.w3.org/2005/Atom"'
)

REQUEST_ENTRY = f"""<?xml version="1.0" encoding="utf-8" standalone="yes"?>
<entry {NS}>
  <title /><updated>2013-09-18T23:46:19.3857256Z</updated><author><name /></author><id />
  <content type="application/xml">
    <m:properties>
      <d:PartitionKey>mypartitionkey</d:PartitionKey>
      <d:RowKey>myrowkey1</d:RowKey>
      <d:Address>Mountain View</d:Address>
      <d:Age m:type="Edm.Int32">23</d:Age>
      <d:AmountDue m:type="Edm.Double">200.23</d:AmountDue>
      <d:BinaryData m:type="Edm.Binary" m:null="true" />
      <d:CustomerCode m:type="Edm.Guid">c9da6455-213d-42c9-9a79-3e9149a57833</d:CustomerCode>
      <d:CustomerSince m:type="Edm.DateTime">2008-07-10T00:00:00</d:CustomerSince>
      <d:IsActive m:type="Edm.Boolean">true</d:IsActive>
      <d:NumOfOrders m:type="Edm.Int64">255</d:NumOfOrders>
    </m:properties>
  </content>
</entry>""".encode()

RESPONSE_FEED = f"""<?xml version="1.0" encoding="utf-8" standalone="yes"?>
<feed xml:base="https://myaccount.table.core.windows.net/" {NS}>
  <title type="text">Customers</title>
  <id>https://myaccount.table.core.windows.net/Customers</id>
  <updated>2013-08-22T00:50:32Z</updated>
  <link rel="self" title="Customers" href="Customers" />
  <entry m:etag="W/&quot;datetime'2013-08-22T00%3A20%3A16.3134645Z'&quot;">
    <id>https://myaccount.table.core.windows.net/Customers(PartitionKey='Customer',RowKey='Name')</id>
    <title type="text"></title>
    <updated>2013-08-22T00:50:32Z</updated>
    <author><name /></author>
    <link rel="edit" title="Customers" href="Customers(PartitionKey='Customer',RowKey='Name')" />
    <category term="myaccount.Customers"
      scheme="http://schemas.microsoft.com/ado/2007/08/dataservices/scheme" />
    <content type="application/xml">
      <m:properties>
        <d:PartitionKey>Customer</d:PartitionKey>
        <d:RowKey>Name</d:RowKey>
        <d:Timestamp m:type="Edm.DateTime">2013-08-22T00:20:16.3134645Z</d:Timestamp>
        <d:CustomerSince m:type="Edm.DateTime">2008-10-01T15:25:05.2852025Z</d:CustomerSince>
      </m:properties>
    </content>
  </entry>
</feed>""".encode()


def test_docstring_examples() -> None:
    result = doctest.testmod(atom, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 8
    assert result.failed == 0


def test_decode_documented_request_entry() -> None:
    e = decode_entry(REQUEST_ENTRY)
    assert dict(e) == {
        "PartitionKey": "mypartitionkey",
        "RowKey": "myrowkey1",
        "Address": "Mountain View",
        "Age": 23,
        "AmountDue": 200.23,
        "BinaryData": None,
        "CustomerCode": uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
        "CustomerSince": EdmDateTime(2008, 7, 10),
        "IsActive": True,
        "NumOfOrders": 255,
    }
    assert e.edm_types["NumOfOrders"] is EdmType.INT64
    assert e.edm_types["Age"] is EdmType.INT32
    assert "Address" not in e.edm_types
    assert e.metadata.etag is None


def test_decode_documented_response_feed() -> None:
    (e,) = decode_feed(RESPONSE_FEED)
    assert dict(e) == {
        "PartitionKey": "Customer",
        "RowKey": "Name",
        "CustomerSince": EdmDateTime.parse("2008-10-01T15:25:05.2852025Z"),
    }
    assert e.metadata.etag == "W/\"datetime'2013-08-22T00%3A20%3A16.3134645Z'\""
    ts = e.metadata.timestamp
    assert ts is not None
    assert ts.to_wire() == "2013-08-22T00:20:16.3134645Z"


def test_decode_single_entry_with_etag_on_root_and_bom() -> None:
    body = (
        "\ufeff<?xml version='1.0' encoding='utf-8'?>"
        f'<entry xml:base="https://a/" m:etag="W/&quot;1&quot;" {NS}>'
        '<content type="application/xml">'
        "<m:properties><d:PartitionKey>p</d:PartitionKey><d:RowKey></d:RowKey>"
        '<d:Pos m:type="Edm.Double">INF</d:Pos><d:Neg m:type="Edm.Double">-INF</d:Neg>'
        '<d:Nan m:type="Edm.Double">NaN</d:Nan><d:Exp m:type="Edm.Double">1.5E+10</d:Exp>'
        '<d:Bin m:type="Edm.Binary">AAEC/w==</d:Bin><d:Empty m:type="Edm.Binary"></d:Empty>'
        '<d:Flag m:type="Edm.Boolean">0</d:Flag><d:Spaces>  two  </d:Spaces>'
        '<d:Str m:type="Edm.String">typed</d:Str><d:Addr m:null="true"/>'
        "</m:properties></content></entry>"
    ).encode()
    e = decode_entry(body)
    assert e.metadata.etag == 'W/"1"'
    assert e["RowKey"] == ""
    assert e["Pos"] == math.inf
    assert e["Neg"] == -math.inf
    assert math.isnan(e["Nan"])
    assert e["Exp"] == 1.5e10
    assert e["Bin"] == b"\x00\x01\x02\xff"
    assert e["Empty"] == b""
    assert e["Flag"] is False
    assert e["Spaces"] == "  two  "
    assert e["Str"] == "typed"
    assert e["Addr"] is None
    assert decode_entry(body, etag="ignored").metadata.etag == 'W/"1"'


def test_empty_feed_and_tables() -> None:
    assert decode_feed(f"<feed {NS}><title>Customers</title></feed>".encode()) == []
    tables = f"""<feed xml:base="https://a/" {NS}><title type="text">Tables</title>
      <entry><id>https://a/Tables('mytable')</id>
        <link rel="edit" title="Tables" href="Tables('mytable')"/>
        <content type="application/xml"><m:properties><d:TableName>mytable</d:TableName>
        </m:properties></content></entry>
      <entry><content type="application/xml"><m:properties><d:TableName>Other</d:TableName>
        </m:properties></content></entry></feed>""".encode()
    assert decode_tables(tables) == ["mytable", "Other"]
    assert decode_table(encode_table("mytable")) == "mytable"


@pytest.mark.parametrize(
    "body",
    [
        b"""<?xml version="1.0" encoding="utf-8" standalone="yes"?>
<error xmlns="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
  <code>ResourceNotFound</code>
  <message xml:lang="en-US">The specified resource does not exist.
RequestId:91f63c45-9002-00cc-65b4-8b55d6000000
Time:2020-09-15T23:02:05.7041430Z</message>
</error>""",
        b'<?xml version="1.0" encoding="utf-8"?><m:error xmlns:m="http://schemas.microsoft.com/'
        b'ado/2007/08/dataservices/metadata"><m:code>ResourceNotFound</m:code><m:message '
        b'xml:lang="en-US">The specified resource does not exist.\nRequestId:91f63c45-9002-'
        b"00cc-65b4-8b55d6000000\nTime:2020-09-15T23:02:05.7041430Z</m:message></m:error>",
    ],
)
def test_decode_error_both_forms(body: bytes) -> None:
    code, message = decode_error(body)
    assert code == "ResourceNotFound"
    assert message is not None
    assert message.splitlines() == [
        "The specified resource does not exist.",
        "RequestId:91f63c45-9002-00cc-65b4-8b55d6000000",
        "Time:2020-09-15T23:02:05.7041430Z",
    ]


def test_decode_error_other_bodies() -> None:
    assert decode_error(b"not xml") == (None, None)
    assert decode_error(b"<feed/>") == (None, None)


@pytest.mark.parametrize(
    "body",
    [
        b"<entry",
        f"<feed {NS}/>".encode(),  # decode_entry of a feed
        f'<entry {NS}><content><m:properties><d:N m:type="Edm.Int32">x</d:N>'
        "</m:properties></content></entry>".encode(),
        f'<entry {NS}><content><m:properties><d:B m:type="Edm.Binary">a</d:B>'
        "</m:properties></content></entry>".encode(),
        f'<entry {NS}><content><m:properties><d:B m:type="Edm.Boolean">yes</d:B>'
        "</m:properties></content></entry>".encode(),
    ],
)
def test_decode_entry_malformed(body: bytes) -> None:
    with pytest.raises(WireDecodeError):
        decode_entry(body)


def test_encode_known_answer() -> None:
    body = encode_entity(
        {
            "PartitionKey": "mypartitionkey",
            "RowKey": "myrowkey1",
            "Address": "Mountain View",
            "Age": 23,
            "AmountDue": 200.23,
            "BinaryData": None,
            "CustomerCode": uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
            "CustomerSince": datetime(2008, 7, 10, tzinfo=UTC),
            "IsActive": True,
            "NumOfOrders": Typed(255, EdmType.INT64),
            "Inf": -math.inf,
            "Bytes": b"\x00\xff",
        },
        updated=EdmDateTime.parse("2013-09-18T23:46:19.3857256Z"),
    )
    assert body == (
        b"<?xml version='1.0' encoding='utf-8' standalone='yes'?>\n"
        b'<entry xmlns="http://www.w3.org/2005/Atom" '
        b'xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" '
        b'xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">'
        b"<title/><updated>2013-09-18T23:46:19.3857256Z</updated><author><name/></author><id/>"
        b'<content type="application/xml"><m:properties>'
        b"<d:PartitionKey>mypartitionkey</d:PartitionKey><d:RowKey>myrowkey1</d:RowKey>"
        b"<d:Address>Mountain View</d:Address>"
        b'<d:Age m:type="Edm.Int32">23</d:Age>'
        b'<d:AmountDue m:type="Edm.Double">200.23</d:AmountDue>'
        b'<d:CustomerCode m:type="Edm.Guid">c9da6455-213d-42c9-9a79-3e9149a57833</d:CustomerCode>'
        b'<d:CustomerSince m:type="Edm.DateTime">2008-07-10T00:00:00.0000000Z</d:CustomerSince>'
        b'<d:IsActive m:type="Edm.Boolean">true</d:IsActive>'
        b'<d:NumOfOrders m:type="Edm.Int64">255</d:NumOfOrders>'
        b'<d:Inf m:type="Edm.Double">-INF</d:Inf>'
        b'<d:Bytes m:type="Edm.Binary">AP8=</d:Bytes>'
        b"</m:properties></content></entry>"
    )


def test_encode_escapes_and_keeps_carriage_returns() -> None:
    text = "a<b>&c \"'\r\n\t end "
    body = encode_entity({"PartitionKey": "p", "RowKey": "r", "S": text})
    assert b"&#13;" in body  # a raw CR would be normalised to LF by any XML parser
    assert decode_entry(body)["S"] == text
    # an independent parser agrees
    props = etree.fromstring(body).find(
        ".//{http://schemas.microsoft.com/ado/2007/08/dataservices}S"
    )
    assert props is not None
    assert props.text == text


@pytest.mark.parametrize(
    ("entity", "match"),
    [
        ({"S": "bad\x01"}, "property 'S'.*XML"),
        ({"1x": 1}, "not a valid XML name"),
        ({"PartitionKey": 5}, "PartitionKey must be a str"),
        ({"v": datetime(2020, 1, 1)}, "property 'v'.*naive"),
        ({"v": 2**63}, "property 'v'"),
        ({"v": object()}, "property 'v'.*no EDM type"),
    ],
)
def test_encode_refusals(entity: dict[str, object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        encode_entity(entity)


_values = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\t\n\r")),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.binary(max_size=64),
    st.uuids(),
    st.integers(min_value=504911232000000000, max_value=3155378975999999999).map(
        EdmDateTime.from_ticks
    ),
)


@given(
    st.dictionaries(
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True), _values, max_size=10
    )
)
def test_round_trip_every_type(props: dict[str, object]) -> None:
    for k in ("PartitionKey", "RowKey", "Timestamp"):
        props.pop(k, None)
    entity = {"PartitionKey": "p&'", "RowKey": "", **props}
    back = decode_entry(encode_entity(entity))
    assert set(back) == set(entity)
    for k, v in entity.items():
        got = back[k]
        if isinstance(v, float) and math.isnan(v):
            assert isinstance(got, float)
            assert math.isnan(got)
        elif isinstance(v, EdmDateTime):
            assert got.to_wire() == v.to_wire()
        else:
            assert type(got) is type(v)
            assert got == v
    # Atom and JSON agree on what the decoded entity is.
    assert json_encode(back) == json_encode(TableEntity(back))


def test_types_override_and_edm_types() -> None:
    e = TableEntity(PartitionKey="p", RowKey="r", n=5)
    e.edm_types["n"] = EdmType.INT64
    assert b'<d:n m:type="Edm.Int64">5</d:n>' in encode_entity(e)
    assert b'<d:n m:type="Edm.Double">5.0</d:n>' in encode_entity(e, types={"n": EdmType.DOUBLE})
