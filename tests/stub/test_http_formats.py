"""Unit tests (no HTTP) of the stub's wire pieces: addressing, negotiation, bodies, batches."""

from __future__ import annotations

import json
import math
import uuid

import pytest

from azt_server_stub.addressing import Kind, parse_resource, split_account
from azt_server_stub.errors import StubError
from azt_server_stub.formats import atom, batch, json_tables, xml
from azt_server_stub.formats import json as jsonfmt
from azt_server_stub.formats.negotiation import (
    Fmt,
    negotiate_response,
    parse_prefer,
    request_format,
)
from azt_server_stub.handlers.error_payload import error_message
from azt_server_stub.handlers.parsing import parse_if_match
from azt_server_stub.model import Edm, Entity, parse_datetime

NEW = "2019-02-02"
OLD = "2013-08-15"


# --- addressing ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "path", "account", "resource", "path_style"),
    [
        ("127.0.0.1:10002", "/devstoreaccount1/Tables", "devstoreaccount1", "Tables", True),
        ("localhost:10002", "/acct/t()", "acct", "t()", True),
        ("[::1]:10002", "/acct/t", "acct", "t", True),
        ("host.docker.internal:10002", "/acct/", "acct", "", True),
        ("acct.table.localhost:10002", "/t()", "acct", "t()", False),
        ("acct.table.core.windows.net", "/Tables('x')", "acct", "Tables('x')", False),
        (
            "127.0.0.1",
            "/acct/t(PartitionKey='a%20b',RowKey='%27%27')",
            "acct",
            "t(PartitionKey='a b',RowKey='''')",
            True,
        ),
    ],
)
def test_split_account(host: str, path: str, account: str, resource: str, path_style: bool) -> None:
    addr = split_account(host, path)
    assert (addr.account, addr.resource, addr.path_style) == (account, resource, path_style)
    assert not addr.secondary


def test_secondary_and_product_style_switch() -> None:
    addr = split_account("acct-secondary.table.localhost", "/t")
    assert (addr.account, addr.secondary) == ("acct", True)
    addr = split_account("127.0.0.1", "/acct-secondary/t")
    assert (addr.account, addr.secondary, addr.prefix) == ("acct", True, "/acct-secondary")
    addr = split_account("acct.table.localhost", "/other/t", product_style=False)
    assert addr.account == "other"
    with pytest.raises(StubError) as info:
        split_account("127.0.0.1", "/acct/t(PartitionKey='%ff')")
    assert info.value.code == "InvalidUri"


def test_parse_resource_forms() -> None:
    assert parse_resource("").kind is Kind.SERVICE
    assert parse_resource("Tables").kind is Kind.TABLES
    assert parse_resource("Tables()").kind is Kind.TABLES
    assert parse_resource("Tables('My''T')").table == "My'T"
    assert parse_resource("$batch").kind is Kind.BATCH
    bare = parse_resource("mytable")
    assert (bare.kind, bare.table, bare.bare) == (Kind.COLLECTION, "mytable", True)
    assert not parse_resource("mytable()").bare
    e = parse_resource("t(PartitionKey='a,b=c',RowKey='x''y''')")
    assert (e.kind, e.keys) == (Kind.ENTITY, ("a,b=c", "x'y'"))
    swapped = parse_resource("t(RowKey='r', PartitionKey = 'p')")
    assert swapped.keys == ("p", "r")
    for bad, code in [
        ("t('x')", "InvalidInput"),
        ("t(PartitionKey='a')", "InvalidInput"),
        ("t(PartitionKey='a',RowKey='b',X='c')", "InvalidInput"),
        ("t(PartitionKey='a',Foo='b')", "InvalidInput"),
        ("t(PartitionKey='a,RowKey='b')", "InvalidInput"),
        ("t(PartitionKey=a,RowKey='b')", "InvalidInput"),
        ("t/extra", "InvalidUri"),
        ("t(PartitionKey='a',RowKey='b'", "InvalidUri"),
    ]:
        with pytest.raises(StubError) as info:
            parse_resource(bad)
        assert info.value.code == code, bad


# --- negotiation ----------------------------------------------------------------------------


def test_negotiate_response() -> None:
    assert negotiate_response("application/json", None, NEW).fmt is Fmt.MINIMAL
    assert negotiate_response("application/json; odata=fullmetadata", None, NEW).fmt is Fmt.FULL
    assert (
        negotiate_response("text/html;q=0.9, application/json;odata=nometadata", None, NEW).fmt
        is Fmt.NOMETADATA
    )
    assert negotiate_response("application/atom+xml", None, OLD).fmt is Fmt.ATOM
    implicit = negotiate_response(None, None, OLD)
    assert (implicit.fmt, implicit.implicit) == (Fmt.ATOM, True)
    assert negotiate_response(None, None, NEW).fmt is Fmt.MINIMAL
    assert negotiate_response("application/atom+xml", "json", OLD).fmt is Fmt.MINIMAL
    for accept, version, code in [
        ("application/atom+xml", NEW, "AtomFormatNotSupported"),
        ("application/json", "2012-02-12", "JsonFormatNotSupported"),
        ("application/json;odata=verbose", NEW, "JsonVerboseFormatNotSupported"),
        ("image/png", NEW, "MediaTypeNotSupported"),
        ("application/json;odata=weird", NEW, "MediaTypeNotSupported"),
    ]:
        with pytest.raises(StubError) as info:
            negotiate_response(accept, None, version)
        assert (info.value.status, info.value.code) == (415, code)


def test_request_format_and_prefer() -> None:
    assert request_format("application/json;odata=nometadata;charset=utf-8", NEW) is Fmt.NOMETADATA
    assert request_format("application/atom+xml;type=entry", OLD) is Fmt.ATOM
    with pytest.raises(StubError) as info:
        request_format(None, NEW)
    assert info.value.code == "MissingRequiredHeader"
    assert parse_prefer("return-no-content", NEW) is False
    assert parse_prefer("return-content", NEW) is True
    assert parse_prefer("return-no-content", "2012-02-12") is None
    assert parse_prefer("odata.continue-on-error", NEW) is None


def test_if_match_parsing() -> None:
    assert parse_if_match(None) is None
    assert parse_if_match(" * ") == "*"
    assert parse_if_match("W/\"datetime'2020-01-01T00:00:00Z'\"") == (
        "W/\"datetime'2020-01-01T00%3A00%3A00Z'\""
    )
    for bad in ("", "abc", '"strong"', 'W/"a", W/"b"'):
        with pytest.raises(StubError):
            parse_if_match(bad)


def test_error_message_lines() -> None:
    err = StubError(409, "X", "Text.")
    lines = error_message(err.at(7), "rid").split("\n")
    assert lines[0] == "7:Text."
    assert lines[1] == "RequestId:rid"
    assert lines[2].startswith("Time:")


# --- JSON -------------------------------------------------------------------------------------


def test_json_reader_types_and_annotation_order() -> None:
    body = {
        "PartitionKey": "p",
        "RowKey": "r",
        "a": "s",
        "b": 5,
        "c": 2**40,
        "d": 1.0,
        "e": True,
        "f": "123",
        "f@odata.type": "Edm.Int64",
        "g@odata.type": "Edm.DateTime",
        "g": "2020-01-01T00:00:00.1234567Z",
        "h@odata.type": "Edm.Guid",
        "h": "C9DA6455-213D-42C9-9A79-3E9149A57833",
        "i@odata.type": "Edm.Binary",
        "i": "AAE=",
        "j@odata.type": "Edm.Double",
        "j": "-Infinity",
        "k@odata.type": "Edm.Double",
        "k": 3,
        "l": None,
        "PartitionKey@odata.type": "Edm.String",
    }
    pk, rk, props = jsonfmt.parse_entity(json.dumps(body).encode())
    assert (pk, rk) == ("p", "r")
    assert props == {
        "a": (Edm.STRING, "s"),
        "b": (Edm.INT32, 5),
        "c": (Edm.DOUBLE, float(2**40)),
        "d": (Edm.DOUBLE, 1.0),
        "e": (Edm.BOOLEAN, True),
        "f": (Edm.INT64, 123),
        "g": (Edm.DATETIME, parse_datetime("2020-01-01T00:00:00.1234567Z")),
        "h": (Edm.GUID, uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833")),
        "i": (Edm.BINARY, b"\x00\x01"),
        "j": (Edm.DOUBLE, -math.inf),
        "k": (Edm.DOUBLE, 3.0),
    }


def test_json_reader_refusals() -> None:
    for body, code in [
        (b'{"a":1,"a":1}', "DuplicatePropertiesSpecified"),
        (b'{"PartitionKey":"p","RowKey":"r","x":[1]}', "InvalidInput"),
        (b'{"PartitionKey":"p","RowKey":"r","x":Infinity}', "InvalidInput"),
        (b'{"PartitionKey":"p","RowKey":"r","x@odata.type":"Edm.Boolean","x":1}', "InvalidInput"),
        (b'{"PartitionKey":"p","RowKey":"r","x@odata.type":5,"x":1}', "InvalidInput"),
        (b'{"PartitionKey":"p","RowKey":"r","x@odata.type":"Edm.DateTime","x":""}', "InvalidInput"),
        (b'{"PartitionKey":"p","RowKey":true}', "InvalidInput"),
        (b'{"PartitionKey":"p","RowKey":"r","RowKey@odata.type":"Edm.Int32"}', "InvalidInput"),
        (b'{"RowKey":"r"}', "PropertiesNeedValue"),
        (b"\xff\xfe", "InvalidInput"),
    ]:
        with pytest.raises(StubError) as info:
            jsonfmt.parse_entity(body)
        assert info.value.code == code, body
    assert jsonfmt.parse_entity_update(b"  ", "p", "r") == {}
    # keys in an update body are ignored (they come from the URL), typed or not
    assert jsonfmt.parse_entity_update(
        b'{"PartitionKey@odata.type":"Edm.DateTime","PartitionKey":"x","a":1}', "p", "r"
    ) == {"a": (Edm.INT32, 1)}


def _entity() -> Entity:
    return Entity(
        "p'k",
        "r",
        parse_datetime("2020-09-15T23:02:10.4363943Z"),
        {
            "s": (Edm.STRING, "x"),
            "n": (Edm.INT64, -42),
            "d": (Edm.DOUBLE, 1e20),
            "nan": (Edm.DOUBLE, math.nan),
            "t": (Edm.DATETIME, parse_datetime("1973-10-04T00:00:00Z")),
            "g": (Edm.GUID, uuid.UUID(int=1)),
            "b": (Edm.BINARY, b"\xff"),
        },
    )


def test_json_writer_levels() -> None:
    e = _entity()
    full = jsonfmt.EntityWriter(Fmt.FULL, "http://h/acct", "acct", "Tab").entity(e)
    assert list(full)[:4] == ["odata.type", "odata.id", "odata.etag", "odata.editLink"]
    assert full["odata.id"] == "http://h/acct/Tab(PartitionKey='p''k',RowKey='r')"
    assert full["odata.etag"] == "W/\"datetime'2020-09-15T23%3A02%3A10.4363943Z'\""
    assert full["Timestamp"] == "2020-09-15T23:02:10.4363943Z"
    assert full["Timestamp@odata.type"] == "Edm.DateTime"
    minimal = jsonfmt.EntityWriter(Fmt.MINIMAL, "http://h/acct", "acct", "Tab").entity(e)
    assert list(minimal) == [
        "odata.etag",
        "PartitionKey",
        "RowKey",
        "Timestamp",
        "s",
        "n@odata.type",
        "n",
        "d",
        "nan@odata.type",
        "nan",
        "t@odata.type",
        "t",
        "g@odata.type",
        "g",
        "b@odata.type",
        "b",
    ]
    assert (minimal["n"], minimal["nan"], minimal["t"]) == ("-42", "NaN", "1973-10-04T00:00:00Z")
    assert (minimal["g"], minimal["b"]) == ("00000000-0000-0000-0000-000000000001", "/w==")
    assert b'"d":1e+20' in jsonfmt.dumps(minimal)
    none = jsonfmt.EntityWriter(Fmt.NOMETADATA, "http://h/acct", "acct", "Tab").entity(e)
    assert not [k for k in none if "@" in k or k.startswith("odata.")]
    page = json.loads(
        jsonfmt.EntityWriter(Fmt.MINIMAL, "http://h/a", "a", "T", ["s", "zz", "Timestamp"]).feed(
            [e], "s,zz,Timestamp"
        )
    )
    assert page["odata.metadata"] == "http://h/a/$metadata#T&$select=s,zz,Timestamp"
    assert page["value"][0] == {
        "odata.etag": full["odata.etag"],
        "s": "x",
        "zz": None,
        "Timestamp": "2020-09-15T23:02:10.4363943Z",
    }


def test_table_bodies() -> None:
    assert json.loads(json_tables.table_feed(Fmt.FULL, "http://h/a", "a", ["t1"])) == {
        "odata.metadata": "http://h/a/$metadata#Tables",
        "value": [
            {
                "odata.type": "a.Tables",
                "odata.id": "http://h/a/Tables('t1')",
                "odata.editLink": "Tables('t1')",
                "TableName": "t1",
            }
        ],
    }
    assert jsonfmt.parse_table_name(b'{"TableName":"x"}') == "x"


# --- Atom -------------------------------------------------------------------------------------


def test_atom_writer_reader_round_trip() -> None:
    e = _entity()
    body = atom.AtomWriter("http://h/acct", "acct", "Tab").single(e)
    assert b"m:etag=\"W/&quot;datetime'2020-09-15T23%3A02%3A10.4363943Z'&quot;\"" in body
    assert b'<d:nan m:type="Edm.Double">NaN</d:nan>' in body
    assert b"<d:s>x</d:s>" in body
    pk, rk, props = atom.parse_entity(body)
    assert (pk, rk) == ("p'k", "r")
    assert props["n"] == (Edm.INT64, -42)
    assert math.isnan(props["nan"][1])
    assert props["t"] == e.props["t"]
    assert props["b"] == (Edm.BINARY, b"\xff")
    feed = atom.AtomWriter("http://h/acct", "acct", "Tab").feed([e, e])
    assert feed.count(b"<entry") == 2
    assert b"<d:TableName>x</d:TableName>" in atom.table_feed("http://h/a", "a", ["x"])


def test_atom_reader_refusals() -> None:
    with pytest.raises(StubError):
        atom.parse_entity(b"<?xml version='1.0'?><!DOCTYPE x [<!ENTITY e 'x'>]><entry>&e;</entry>")
    dup = atom.ENTRY_SAMPLE.replace(b"<d:RowKey>r</d:RowKey>", b"<d:RowKey>r</d:RowKey>" * 2)
    with pytest.raises(StubError) as info:
        atom.parse_entity(dup)
    assert info.value.code == "DuplicatePropertiesSpecified"
    assert atom.convert_text("Edm.Boolean", "1") == (Edm.BOOLEAN, True)
    # ranges are validation's (tested over HTTP in test_http_raw.test_bad_atom_bodies)
    with pytest.raises(StubError):
        atom.convert_text("Edm.Int32", "9" * 21)


# --- plain XML --------------------------------------------------------------------------------


def test_acl_and_service_properties() -> None:
    acl = xml.parse_acl(
        b"\xef\xbb\xbf<?xml version='1.0'?><SignedIdentifiers><SignedIdentifier><Id>x</Id>"
        b"<AccessPolicy><Start>2024-01-01T10:00Z</Start><Permission>dr</Permission>"
        b"</AccessPolicy></SignedIdentifier></SignedIdentifiers>"
    )
    assert acl[0].start == "2024-01-01T10:00:00.0000000Z"
    assert acl[0].permission == "rd"
    assert b"<Id>x</Id>" in xml.acl_body(acl)
    for bad in (
        b"<SignedIdentifiers><SignedIdentifier><Id>x</Id><AccessPolicy><Permission>w"
        b"</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>",
        b"<SignedIdentifiers><SignedIdentifier><Id>" + b"i" * 65 + b"</Id></SignedIdentifier>"
        b"</SignedIdentifiers>",
        b"<Other/>",
    ):
        with pytest.raises(StubError) as info:
            xml.parse_acl(bad)
        assert info.value.code == "InvalidXmlDocument"
    with pytest.raises(StubError) as info:
        xml.parse_acl(
            b"<SignedIdentifiers><SignedIdentifier><Id>x</Id><AccessPolicy><Start>soon</Start>"
            b"</AccessPolicy></SignedIdentifier></SignedIdentifiers>"
        )
    assert info.value.code == "InvalidXmlNodeValue"
    props = xml.parse_service_properties(
        b"<StorageServiceProperties><HourMetrics><Version>1.0</Version><Enabled>true</Enabled>"
        b"<IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>7</Days>"
        b"</RetentionPolicy></HourMetrics></StorageServiceProperties>"
    )
    assert props.hour_metrics.retention.days == 7
    again = xml.parse_service_properties(props.to_xml())
    assert again == props
    merged = xml.parse_service_properties(
        b"<StorageServiceProperties><Cors/></StorageServiceProperties>", props
    )
    assert merged.hour_metrics == props.hour_metrics
    with pytest.raises(StubError) as info:
        xml.parse_service_properties(
            b"<StorageServiceProperties><HourMetrics><Enabled>true</Enabled><RetentionPolicy>"
            b"<Enabled>true</Enabled><Days>400</Days></RetentionPolicy></HourMetrics>"
            b"</StorageServiceProperties>"
        )
    assert info.value.code == "InvalidXmlNodeValue"


# --- batch envelopes ----------------------------------------------------------------------------


def test_batch_parser_tolerances() -> None:
    body = (
        b'preamble\n--b\nContent-Type: multipart/mixed; boundary="cs"\n\n'
        b"--cs\nContent-Type: application/http\nContent-ID: 7\n\n"
        b"POST http://h/a/t HTTP/1.1\nContent-Type: application/json\n\n"
        b'{"PartitionKey":"p","RowKey":"1"}\n'
        b"--cs\nContent-Type: application/http\n\n"
        b"DELETE /a/t(PartitionKey='p',RowKey='2') HTTP/1.1\nContent-ID: 8\nIf-Match: *\n\n\n"
        b"--cs--\n--b--\n"
    )
    parsed = batch.parse_batch(body, 'multipart/mixed; boundary="b"')
    assert parsed.changeset
    first, second = parsed.parts
    assert (first.method, first.target, first.content_id) == ("POST", "http://h/a/t", "7")
    assert first.body == b'{"PartitionKey":"p","RowKey":"1"}'
    assert (second.method, second.content_id, second.body) == ("DELETE", "8", b"")
    assert second.headers["If-Match"] == "*"


def test_batch_response_framing() -> None:
    ctype, body = batch.build_response(
        [batch.PartResponse(201, [("ETag", "x")], b"{}"), batch.PartResponse(204, [])],
        changeset=True,
    )
    boundary = ctype.split("boundary=")[1]
    assert body.startswith(f"--{boundary}\r\nContent-Type: multipart/mixed; boundary=".encode())
    assert b"\r\nHTTP/1.1 201 Created\r\nETag: x\r\n\r\n{}\r\n" in body
    assert b"HTTP/1.1 204 No Content\r\n" in body
    assert body.endswith(f"--{boundary}--\r\n".encode())
    assert body.count(b"--changesetresponse_") == 3


def _reference_datetime_7(ticks: int) -> str:
    """An independent formatter (datetime + strftime) the cached one must agree with."""
    import datetime as dt

    seconds, frac = divmod(ticks, 10_000_000)
    moment = dt.datetime(1, 1, 1) + dt.timedelta(seconds=seconds)
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S") + f".{frac:07d}Z"


def test_fast_datetime_formatting_matches_model() -> None:
    import random

    from azt_server_stub.model import (
        MAX_DATETIME_TICKS,
        MIN_DATETIME_TICKS,
        format_datetime,
        format_datetime_7,
    )

    rng = random.Random(7)
    samples = [0, MIN_DATETIME_TICKS, MAX_DATETIME_TICKS, 10_000_000, 5, 123_456_700]
    samples += [rng.randrange(0, MAX_DATETIME_TICKS) for _ in range(2000)]
    for ticks in samples:
        reference = _reference_datetime_7(ticks)
        assert format_datetime_7(ticks) == reference
        trimmed = reference[:-1].rstrip("0").rstrip(".") + "Z"
        assert format_datetime(ticks) == trimmed


def test_fast_etag_matches_model() -> None:
    from azt_server_stub.model import etag_for

    for ticks in (0, 637_000_000_000_000_001, 3_155_378_975_999_999_999):
        reference = _reference_datetime_7(ticks).replace(":", "%3A")
        assert etag_for(ticks) == "W/\"datetime'" + reference + "'\""


def test_batch_split_edge_cases() -> None:
    ctype = "multipart/mixed; boundary=b"
    # a boundary string inside a body line is not a delimiter
    part = (
        b"--b\r\nContent-Type: application/http\r\n\r\nGET http://h/a/t(PartitionKey='--b',"
        b"RowKey='x--b') HTTP/1.1\r\n\r\n\r\n--b--"
    )
    parsed = batch.parse_batch(part, ctype)
    assert parsed.parts[0].target == "http://h/a/t(PartitionKey='--b',RowKey='x--b')"
    with pytest.raises(StubError):
        batch.parse_batch(b"--bb\r\n--bb--\r\n", ctype)
