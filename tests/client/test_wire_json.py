"""JSON wire format: known-answer payloads from PROTOCOL.md, round trips, the SDK oracle."""

from __future__ import annotations

import doctest
import json
import math
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import azt._core.wire.json as wire_json
from azt._core.wire import WireDecodeError
from azt._core.wire.json import (
    decode_entity,
    decode_entry,
    decode_error,
    decode_feed,
    decode_table,
    decode_tables,
    encode_entity,
    encode_table,
)
from azt._errors import ValidationError
from azt.edm import EdmDateTime, EdmType, TableEntity, Typed

GUID = uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")


def test_docstring_examples() -> None:
    result = doctest.testmod(wire_json, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10
    assert result.failed == 0


# ----------------------------------------------------------------------- decode


# PROTOCOL.md 6.1: the documentation's insert body (annotation before value).
DOC_ENTITY = b"""{
   "Address":"Mountain View",
   "Age":23,
   "AmountDue":200.23,
   "CustomerCode@odata.type":"Edm.Guid",
   "CustomerCode":"c9da6455-213d-42c9-9a79-3e9149a57833",
   "CustomerSince@odata.type":"Edm.DateTime",
   "CustomerSince":"2008-07-10T00:00:00",
   "IsActive":true,
   "NumberOfOrders@odata.type":"Edm.Int64",
   "NumberOfOrders":"255",
   "PartitionKey":"mypartitionkey",
   "RowKey":"myrowkey"
}"""


def test_decode_documented_entity() -> None:
    e = decode_entry(DOC_ENTITY)
    assert dict(e) == {
        "Address": "Mountain View",
        "Age": 23,
        "AmountDue": 200.23,
        "CustomerCode": GUID,
        "CustomerSince": EdmDateTime(2008, 7, 10),
        "IsActive": True,
        "NumberOfOrders": 255,
        "PartitionKey": "mypartitionkey",
        "RowKey": "myrowkey",
    }
    assert isinstance(e["CustomerSince"], EdmDateTime)
    assert e.edm_types == {
        "CustomerCode": EdmType.GUID,
        "CustomerSince": EdmType.DATETIME,
        "NumberOfOrders": EdmType.INT64,
    }
    assert e.metadata.etag is None
    assert e.metadata.timestamp is None


def test_decode_value_before_annotation_and_string_annotations() -> None:
    # The Python SDK writes the value first and annotates strings and keys too.
    body = (
        b'{"PartitionKey":"p","PartitionKey@odata.type":"Edm.String","RowKey":"r",'
        b'"N":"-42","N@odata.type":"Edm.Int64","S":"x","S@odata.type":"Edm.String",'
        b'"I":7,"I@odata.type":"Edm.Int32","B":false,"B@odata.type":"Edm.Boolean",'
        b'"D":2,"D@odata.type":"Edm.Double"}'
    )
    e = decode_entry(body)
    assert dict(e) == {
        "PartitionKey": "p",
        "RowKey": "r",
        "N": -42,
        "S": "x",
        "I": 7,
        "B": False,
        "D": 2.0,
    }
    assert type(e["D"]) is float
    assert e.edm_types["N"] is EdmType.INT64
    assert e.edm_types["D"] is EdmType.DOUBLE


def test_decode_minimal_metadata_feed() -> None:
    # As Azure answers a query (PROTOCOL 6.2/6.3): odata.metadata, per-entity odata.etag,
    # Timestamp unannotated at minimal metadata, annotations before values.
    body = (
        b'{"odata.metadata":"https://acct.table.core.windows.net/$metadata#Customers",'
        b'"value":[{"odata.etag":"W/\\"datetime\'2020-09-15T23%3A02%3A10.4363943Z\'\\"",'
        b'"PartitionKey":"Customer","RowKey":"Name","Timestamp":"2020-09-15T23:02:10.4363943Z",'
        b'"Big@odata.type":"Edm.Int64","Big":"9223372036854775807",'
        b'"Small@odata.type":"Edm.Int64","Small":"-9223372036854775808",'
        b'"Ratio@odata.type":"Edm.Double","Ratio":"NaN",'
        b'"Up@odata.type":"Edm.Double","Up":"Infinity",'
        b'"Down@odata.type":"Edm.Double","Down":"-Infinity",'
        b'"Blob@odata.type":"Edm.Binary","Blob":"AAEC/w==",'
        b'"Empty@odata.type":"Edm.Binary","Empty":"",'
        b'"Text":"","Uni":"\\u00e9\\ud83d\\ude00","Pi":3.14,"Two":2.0,"Neg":-1},'
        b'{"odata.etag":"W/\\"x\\"","PartitionKey":"Customer","RowKey":"Other",'
        b'"Timestamp":"2020-09-15T23:02:11Z"}]}'
    )
    page = decode_feed(body)
    assert len(page) == 2
    e = page[0]
    assert e.metadata.etag == "W/\"datetime'2020-09-15T23%3A02%3A10.4363943Z'\""
    ts = e.metadata.timestamp
    assert ts is not None
    assert ts.to_wire() == "2020-09-15T23:02:10.4363943Z"
    assert "Timestamp" not in e
    assert not any("odata" in k for k in e)
    assert e["Big"] == 2**63 - 1
    assert e["Small"] == -(2**63)
    assert math.isnan(e["Ratio"])
    assert e["Up"] == math.inf
    assert e["Down"] == -math.inf
    assert e["Blob"] == b"\x00\x01\x02\xff"
    assert e["Empty"] == b""
    assert e["Text"] == ""
    assert e["Uni"] == "é😀"
    assert e["Pi"] == 3.14
    assert type(e["Two"]) is float
    assert e["Neg"] == -1
    assert e.edm_types["Big"] is EdmType.INT64
    assert "Pi" not in e.edm_types
    assert page[1].metadata.timestamp == EdmDateTime(2020, 9, 15, 23, 2, 11)
    assert page[1].edm_types == {}


def test_decode_full_metadata() -> None:
    body = json.dumps(
        {
            "odata.metadata": "https://acct.table.core.windows.net/$metadata#Customers",
            "value": [
                {
                    "odata.type": "acct.Customers",
                    "odata.id": "https://acct.table.core.windows.net/Customers(PartitionKey='p',RowKey='r')",
                    "odata.etag": "W/\"datetime'2013-08-22T00%3A20%3A16.3134645Z'\"",
                    "odata.editLink": "Customers(PartitionKey='p',RowKey='r')",
                    "PartitionKey": "p",
                    "RowKey": "r",
                    "Timestamp@odata.type": "Edm.DateTime",
                    "Timestamp": "2013-08-22T00:20:16.3134645Z",
                    "CustomerSince@odata.type": "Edm.DateTime",
                    "CustomerSince": "2008-10-01T15:25:05.2852025Z",
                    "Id@odata.type": "Edm.Guid",
                    "Id": "C9DA6455-213D-42C9-9A79-3E9149A57833",
                }
            ],
        }
    ).encode()
    (e,) = decode_feed(body)
    assert dict(e) == {
        "PartitionKey": "p",
        "RowKey": "r",
        "CustomerSince": EdmDateTime.parse("2008-10-01T15:25:05.2852025Z"),
        "Id": GUID,
    }
    assert e["CustomerSince"].nanosecond == 500
    ts = e.metadata.timestamp
    assert ts is not None
    assert ts.to_wire() == "2013-08-22T00:20:16.3134645Z"
    assert e.edm_types == {"CustomerSince": EdmType.DATETIME, "Id": EdmType.GUID}


def test_decode_nometadata_keeps_json_values() -> None:
    body = (
        b'{"value":[{"PartitionKey":"p","RowKey":"r","Timestamp":"2020-01-01T00:00:00Z",'
        b'"Big":"255","When":"2008-07-10T00:00:00Z","Age":23}]}'
    )
    (e,) = decode_feed(body)
    assert dict(e) == {
        "PartitionKey": "p",
        "RowKey": "r",
        "Big": "255",
        "When": "2008-07-10T00:00:00Z",
        "Age": 23,
    }
    assert e.metadata.etag is None
    assert e.metadata.timestamp == EdmDateTime(2020, 1, 1)
    assert decode_entry(b'{"PartitionKey":"p","RowKey":"r"}', etag='W/"e"').metadata.etag == 'W/"e"'


def test_decode_select_of_missing_property_keeps_null() -> None:
    (e,) = decode_feed(
        b'{"value":[{"odata.etag":"W/\\"1\\"","Address":null,"N@odata.type":"Edm.Int64","N":null}]}'
    )
    assert dict(e) == {"Address": None, "N": None}


def test_decode_many_shapes_in_one_page() -> None:
    values = []
    for i in range(40):
        ent: dict[str, Any] = {"PartitionKey": "p", "RowKey": f"{i:03d}"}
        for j in range(i % 7):
            ent[f"P{j}@odata.type"] = "Edm.Int64"
            ent[f"P{j}"] = str(i * 1000 + j)
        if i % 3:
            ent["X@odata.type"] = "Edm.Guid" if i % 2 else "Edm.Binary"
            ent["X"] = str(GUID) if i % 2 else "AA=="
        values.append(ent)
    page = decode_feed(json.dumps({"value": values}).encode())
    for i, e in enumerate(page):
        for j in range(i % 7):
            assert e[f"P{j}"] == i * 1000 + j
        if i % 3:
            assert e["X"] == (GUID if i % 2 else b"\x00")
            assert e.edm_types["X"] is (EdmType.GUID if i % 2 else EdmType.BINARY)
        else:
            assert "X" not in e


def test_decode_unknown_annotation_keeps_value() -> None:
    e = decode_entity(
        {"PartitionKey": "p", "RowKey": "r", "D@odata.type": "Edm.Decimal", "D": "1.5"}
    )
    assert e["D"] == "1.5"
    assert "D" not in e.edm_types


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"value":5}',
        b'{"value":[{"N@odata.type":"Edm.Int64","N":"x"}]}',
        b'{"value":[{"G@odata.type":"Edm.Guid","G":"nope"}]}',
        b'{"value":[{"D@odata.type":"Edm.DateTime","D":"2020-13-45"}]}',
        b'{"value":[{"B@odata.type":"Edm.Binary","B":"a"}]}',
        # strict base64, like the entity codecs' direct path: no skipped characters
        b'{"value":[{"B@odata.type":"Edm.Binary","B":"AA E=!"}]}',
        b'{"value":[{"X@odata.type":"Edm.Boolean","X":"maybe"}]}',
        b'{"value":[1]}',
        b'{"value":["abc"]}',
    ],
)
def test_decode_feed_malformed(body: bytes) -> None:
    with pytest.raises(WireDecodeError):
        decode_feed(body)


def test_decode_tables_and_table() -> None:
    assert decode_tables(
        b'{"odata.metadata":"https://acct.table.core.windows.net/$metadata#Tables",'
        b'"value":[{"TableName":"mytable"},{"TableName":"other"}]}'
    ) == ["mytable", "other"]
    assert decode_tables(b'{"value":[]}') == []
    assert decode_tables(
        b'{"value":[{"odata.type":"acct.Tables","odata.id":"https://a/Tables(\'t1\')",'
        b'"odata.editLink":"Tables(\'t1\')","TableName":"t1"}]}'
    ) == ["t1"]
    assert (
        decode_table(
            b'{"odata.metadata":"https://a/$metadata#Tables/@Element","TableName":"mytable"}'
        )
        == "mytable"
    )
    with pytest.raises(WireDecodeError):
        decode_tables(b'{"value":[{"Name":"x"}]}')
    with pytest.raises(WireDecodeError):
        decode_table(b"{}")


def test_decode_error() -> None:
    body = (
        b'{"odata.error":{"code":"TableNotFound","message":{"lang":"en-US",'
        b'"value":"The table specified does not exist.'
        b"\\nRequestId:067148cb-e002-0014-6ca6-44a341000000"
        b'\\nTime:2023-02-19T21:11:59.5763885Z"}}}'
    )
    code, message = decode_error(body)
    assert code == "TableNotFound"
    assert message is not None
    assert message.startswith("The table specified does not exist.\nRequestId:067148cb")
    assert decode_error(b"<html>") == (None, None)
    assert decode_error(b"[1]") == (None, None)
    assert decode_error(b'{"odata.error":{"code":"X"}}') == ("X", None)


# ----------------------------------------------------------------------- encode


def test_encode_known_answer() -> None:
    entity = {
        "PartitionKey": "mypartitionkey",
        "RowKey": "myrowkey",
        "Address": "Mountain View",
        "Age": 23,
        "AmountDue": 200.23,
        "CustomerCode": GUID,
        "CustomerSince": datetime(2008, 7, 10, tzinfo=UTC),
        "IsActive": True,
        "NumberOfOrders": Typed(255, EdmType.INT64),
        "Nothing": None,
        "Blob": b"\x00\x01\x02\xff",
    }
    assert encode_entity(entity) == (
        b'{"PartitionKey":"mypartitionkey","RowKey":"myrowkey","Address":"Mountain View",'
        b'"Age":23,"AmountDue@odata.type":"Edm.Double","AmountDue":200.23,'
        b'"CustomerCode@odata.type":"Edm.Guid","CustomerCode":"c9da6455-213d-42c9-9a79-3e9149a57833",'
        b'"CustomerSince@odata.type":"Edm.DateTime","CustomerSince":"2008-07-10T00:00:00.0000000Z",'
        b'"IsActive":true,"NumberOfOrders@odata.type":"Edm.Int64","NumberOfOrders":"255",'
        b'"Blob@odata.type":"Edm.Binary","Blob":"AAEC/w=="}'
    )


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (2.0, b'"v@odata.type":"Edm.Double","v":2.0'),
        (-0.0, b'"v@odata.type":"Edm.Double","v":-0.0'),
        (1e300, b'"v@odata.type":"Edm.Double","v":1e+300'),
        (math.nan, b'"v@odata.type":"Edm.Double","v":"NaN"'),
        (math.inf, b'"v@odata.type":"Edm.Double","v":"Infinity"'),
        (-math.inf, b'"v@odata.type":"Edm.Double","v":"-Infinity"'),
        (2**31 - 1, b'"v":2147483647'),
        (2**31, b'"v@odata.type":"Edm.Int64","v":"2147483648"'),
        (-(2**63), b'"v@odata.type":"Edm.Int64","v":"-9223372036854775808"'),
        (Typed(1, EdmType.INT64), b'"v@odata.type":"Edm.Int64","v":"1"'),
        (Typed(1, EdmType.DOUBLE), b'"v@odata.type":"Edm.Double","v":1.0'),
        (Typed(1, EdmType.INT32), b'"v":1'),
        (Typed("s", EdmType.STRING), b'"v":"s"'),
        ("", b'"v":""'),
        (b"", b'"v@odata.type":"Edm.Binary","v":""'),
        (bytearray(b"\xff"), b'"v@odata.type":"Edm.Binary","v":"/w=="'),
        ('é😀"\\\n', '"v":"é😀\\"\\\\\\n"'.encode()),
        (False, b'"v":false'),
        (
            EdmDateTime.parse("2020-09-15T23:02:10.4363943Z"),
            b'"v@odata.type":"Edm.DateTime","v":"2020-09-15T23:02:10.4363943Z"',
        ),
        (
            datetime(2020, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
            b'"v@odata.type":"Edm.DateTime","v":"2020-01-01T00:00:00.0000000Z"',
        ),
    ],
)
def test_encode_values(value: object, fragment: bytes) -> None:
    body = encode_entity({"PartitionKey": "p", "RowKey": "r", "v": value})
    assert body == b'{"PartitionKey":"p","RowKey":"r",' + fragment + b"}"
    json.loads(body)  # always valid JSON


def test_encode_types_override_and_edm_types() -> None:
    e = TableEntity(PartitionKey="p", RowKey="r", n=5, g=str(GUID), x=1)
    e.edm_types["n"] = EdmType.INT64
    e.edm_types["g"] = EdmType.GUID
    assert encode_entity(e) == (
        b'{"PartitionKey":"p","RowKey":"r","n@odata.type":"Edm.Int64","n":"5",'
        b'"g@odata.type":"Edm.Guid","g":"c9da6455-213d-42c9-9a79-3e9149a57833","x":1}'
    )
    body = encode_entity(e, types={"n": EdmType.DOUBLE, "x": EdmType.INT64})
    assert b'"n@odata.type":"Edm.Double","n":5.0' in body
    assert b'"x@odata.type":"Edm.Int64","x":"1"' in body
    assert encode_entity(
        {"PartitionKey": "p", "RowKey": "r", "n": 5}, types={"n": EdmType.INT64}
    ) == (b'{"PartitionKey":"p","RowKey":"r","n@odata.type":"Edm.Int64","n":"5"}')


def test_encode_skips_timestamp_and_nulls() -> None:
    assert (
        encode_entity(
            {"PartitionKey": "p", "RowKey": "", "Timestamp": datetime.now(UTC), "n": None}
        )
        == b'{"PartitionKey":"p","RowKey":""}'
    )


@pytest.mark.parametrize(
    ("entity", "match"),
    [
        ({"PartitionKey": 1, "RowKey": "r"}, "PartitionKey must be a str"),
        ({"PartitionKey": "p", "RowKey": uuid.uuid4()}, "RowKey must be a str"),
        ({"v": 2**63}, "property 'v'.*Int64"),
        ({"v": Typed(5, EdmType.INT64)} | {"w": [1]}, "property 'w'.*no EDM type"),
        ({"v": datetime(2020, 1, 1)}, "property 'v'.*naive"),
        ({"v": datetime(1600, 1, 1, tzinfo=UTC)}, "property 'v'.*1601"),
        ({"v": "\ud800"}, "surrogate"),
    ],
)
def test_encode_refusals(entity: dict[str, object], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        encode_entity(entity)


def test_encode_explicit_type_mismatch_names_property() -> None:
    with pytest.raises(ValidationError, match=r"property 'v'.*Edm\.Int32"):
        encode_entity({"v": "x"}, types={"v": EdmType.INT32})
    with pytest.raises(ValidationError, match=r"property 'v'.*Int32"):
        encode_entity({"v": 2**31}, types={"v": EdmType.INT32})


def test_encode_table() -> None:
    assert encode_table("mytable") == b'{"TableName":"mytable"}'


# ----------------------------------------------------------------------- round trips

_values = st.one_of(
    st.text(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.binary(max_size=64),
    st.uuids(),
    st.integers(min_value=504911232000000000, max_value=3155378975999999999).map(
        EdmDateTime.from_ticks
    ),
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, float) and a == 0.0:
        return b == 0.0 and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, EdmDateTime):
        return isinstance(b, EdmDateTime) and a.to_wire() == b.to_wire()
    return type(a) is type(b) and a == b


@given(
    st.dictionaries(
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True), _values, max_size=12
    )
)
def test_round_trip_every_type(props: dict[str, object]) -> None:
    props.pop("Timestamp", None)
    props.pop("PartitionKey", None)
    props.pop("RowKey", None)
    props = {
        k: v
        for k, v in props.items()
        if not (isinstance(v, str) and any("\ud800" <= c <= "\udfff" for c in v))
    }
    entity = {"PartitionKey": "p'", "RowKey": "", **props}
    body = encode_entity(entity)
    back = decode_entry(body)
    assert set(back) == set(entity)
    for k, v in entity.items():
        assert _same(v, back[k]), (k, v, back[k])
        if isinstance(v, int) and not isinstance(v, bool) and not -(2**31) <= v < 2**31:
            assert back.edm_types[k] is EdmType.INT64
    # A read-modify-write keeps every type: re-encoding the decoded entity is identical.
    assert encode_entity(back) == body


def test_int64_small_value_keeps_type_through_read_modify_write() -> None:
    e = decode_entry(b'{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"5"}')
    e["N"] += 1
    assert (
        encode_entity(e) == b'{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"6"}'
    )


# ----------------------------------------------------------------------- SDK oracle


def test_decode_what_azure_data_tables_serializes() -> None:
    from azure.data.tables import EdmType as AzEdm
    from azure.data.tables import EntityProperty
    from azure.data.tables._serialize import _add_entity_properties

    source = {
        "PartitionKey": "pk",
        "RowKey": "rk",
        "S": "text",
        "I": 42,
        "F": 2.5,
        "Nan": math.nan,
        "Inf": math.inf,
        "B": True,
        "D": datetime(2021, 9, 21, 7, 50, 52, 398525, tzinfo=UTC),
        "G": GUID,
        "Bin": b"\x00\xff",
        "L": EntityProperty(2**40, AzEdm.INT64),
        "L2": EntityProperty(7, AzEdm.INT64),
    }
    body = json.dumps(_add_entity_properties(source)).encode()
    e = decode_entry(body)
    assert e["S"] == "text"
    assert e["I"] == 42
    assert e["F"] == 2.5
    assert math.isnan(e["Nan"])
    assert e["Inf"] == math.inf
    assert e["B"] is True
    assert e["D"] == EdmDateTime(2021, 9, 21, 7, 50, 52, 398525)
    assert e["G"] == GUID
    assert e["Bin"] == b"\x00\xff"
    assert e["L"] == 2**40
    assert e["L2"] == 7
    assert e.edm_types["L2"] is EdmType.INT64


def test_azure_data_tables_reads_what_we_encode() -> None:
    from azure.data.tables._deserialize import _convert_to_entity

    body = encode_entity(
        {
            "PartitionKey": "pk",
            "RowKey": "rk",
            "S": "text",
            "I": 42,
            "F": 2.0,
            "Nan": math.nan,
            "B": False,
            "D": EdmDateTime.parse("2021-09-21T07:50:52.3985253Z"),
            "G": GUID,
            "Bin": b"\x00\xff",
            "L": 2**40,
        }
    )
    theirs = _convert_to_entity(json.loads(body))  # type: ignore[no-untyped-call]
    assert theirs["S"] == "text"
    assert theirs["I"] == 42
    assert theirs["F"] == 2.0
    assert isinstance(theirs["F"], float)
    assert math.isnan(theirs["Nan"])
    assert theirs["B"] is False
    assert theirs["D"] == datetime(2021, 9, 21, 7, 50, 52, 398525, tzinfo=UTC)
    assert theirs["G"] == GUID
    assert theirs["Bin"] == b"\x00\xff"
    assert theirs["L"].value == 2**40


def test_shape_cache_is_bounded_and_stays_correct() -> None:
    values = [
        {"PartitionKey": "p", "RowKey": str(i), f"N{i}@odata.type": "Edm.Int64", f"N{i}": str(i)}
        for i in range(wire_json._PLAN_CACHE_MAX + 100)
    ]
    page = decode_feed(json.dumps({"value": values}).encode())
    assert len(wire_json._plans) <= wire_json._PLAN_CACHE_MAX
    for i, e in enumerate(page):
        assert e[f"N{i}"] == i
        assert e.edm_types == {f"N{i}": EdmType.INT64}
