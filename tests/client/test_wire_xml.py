"""Storage XML: ACLs, service properties and stats, <Error> (PROTOCOL.md 4.4-4.8, 11.1)."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime, timedelta, timezone

import pytest
from lxml import etree

import azt._core.wire.xml as wire_xml
from azt._core.wire import WireDecodeError
from azt._core.wire.xml import (
    AccessPolicy,
    CorsRule,
    Logging,
    Metrics,
    RetentionPolicy,
    ServiceProperties,
    decode_service_properties,
    decode_service_stats,
    decode_signed_identifiers,
    decode_storage_error,
    encode_service_properties,
    encode_signed_identifiers,
)
from azt._errors import ValidationError
from azt.edm import EdmDateTime


def test_docstring_examples() -> None:
    result = doctest.testmod(wire_xml, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 15
    assert result.failed == 0


ACL = """\ufeff<?xml version="1.0" encoding="utf-8"?>
<SignedIdentifiers>
  <SignedIdentifier>
    <Id>testid</Id>
    <AccessPolicy>
      <Start>2021-06-08T02:05:09.0000000Z</Start>
      <Expiry>2021-06-08T03:10:09.0000000Z</Expiry>
      <Permission>r</Permission>
    </AccessPolicy>
  </SignedIdentifier>
  <SignedIdentifier><Id>bare</Id></SignedIdentifier>
  <SignedIdentifier><Id>partial</Id><AccessPolicy><Permission>raud</Permission></AccessPolicy>
  </SignedIdentifier>
</SignedIdentifiers>""".encode()


def test_decode_acl_sample() -> None:
    acl = decode_signed_identifiers(ACL)
    assert acl == {
        "testid": AccessPolicy(
            "r",
            start=datetime(2021, 6, 8, 2, 5, 9, tzinfo=UTC),
            expiry=datetime(2021, 6, 8, 3, 10, 9, tzinfo=UTC),
        ),
        "bare": None,
        "partial": AccessPolicy("raud"),
    }
    assert (
        decode_signed_identifiers(b'<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers />')
        == {}
    )
    assert decode_signed_identifiers(b"") == {}


def test_encode_acl_known_answer() -> None:
    body = encode_signed_identifiers(
        {
            "testid": AccessPolicy(
                "r",
                start=datetime(2021, 6, 8, 2, 5, 9, tzinfo=UTC),
                expiry=datetime(2021, 6, 8, 5, 10, 9, tzinfo=timezone(timedelta(hours=2))),
            ),
            "none": None,
        }
    )
    assert body == (
        b"<?xml version='1.0' encoding='utf-8'?>\n<SignedIdentifiers><SignedIdentifier>"
        b"<Id>testid</Id><AccessPolicy><Start>2021-06-08T02:05:09.0000000Z</Start>"
        b"<Expiry>2021-06-08T03:10:09.0000000Z</Expiry><Permission>r</Permission>"
        b"</AccessPolicy></SignedIdentifier><SignedIdentifier><Id>none</Id></SignedIdentifier>"
        b"</SignedIdentifiers>"
    )
    assert decode_signed_identifiers(body)["testid"] == AccessPolicy(
        "r",
        start=EdmDateTime(2021, 6, 8, 2, 5, 9),
        expiry=EdmDateTime(2021, 6, 8, 3, 10, 9),
    )
    assert encode_signed_identifiers({}).endswith(b"<SignedIdentifiers/>")


def test_acl_refusals() -> None:
    with pytest.raises(ValidationError, match="at most 5"):
        encode_signed_identifiers({str(i): None for i in range(6)})
    with pytest.raises(ValidationError, match="1-64"):
        encode_signed_identifiers({"x" * 65: None})
    with pytest.raises(ValidationError, match="1-64"):
        encode_signed_identifiers({"": None})
    with pytest.raises(ValidationError, match="raud"):
        AccessPolicy("rw")
    with pytest.raises(ValidationError, match="naive"):
        AccessPolicy("r", start=datetime(2020, 1, 1))
    assert AccessPolicy("dura").permission == "raud"
    with pytest.raises(WireDecodeError):
        decode_signed_identifiers(b"<SignedIdentifiers><SignedIdentifier/></SignedIdentifiers>")
    with pytest.raises(WireDecodeError):
        decode_signed_identifiers(b"<Other/>")
    with pytest.raises(WireDecodeError):
        decode_signed_identifiers(b"<SignedIdentifiers>")


PROPERTIES = b"""<?xml version="1.0" encoding="utf-8"?>
<StorageServiceProperties>
  <Logging><Version>1.0</Version><Read>false</Read><Write>false</Write><Delete>false</Delete>
    <RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging>
  <HourMetrics><Version>1.0</Version><Enabled>false</Enabled>
    <RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics>
  <MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled>
    <RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics>
  <Cors />
</StorageServiceProperties>"""


def test_decode_properties_sample() -> None:
    p = decode_service_properties(PROPERTIES)
    assert p == ServiceProperties(
        logging=Logging(),
        hour_metrics=Metrics(),
        minute_metrics=Metrics(),
        cors=(),
    )


def test_decode_properties_full() -> None:
    body = b"""\xef\xbb\xbf<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties>
      <Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write>
      <RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging>
      <Metrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>false</IncludeAPIs>
      <RetentionPolicy><Enabled>true</Enabled><Days>365</Days></RetentionPolicy></Metrics>
      <Cors><CorsRule><AllowedOrigins>https://a.com,https://b.com</AllowedOrigins>
      <AllowedMethods>GET,PUT</AllowedMethods><MaxAgeInSeconds>500</MaxAgeInSeconds>
      <ExposedHeaders>x-ms-meta-*</ExposedHeaders><AllowedHeaders></AllowedHeaders></CorsRule>
      </Cors></StorageServiceProperties>"""
    p = decode_service_properties(body)
    assert p.logging == Logging(
        delete=True, write=True, retention_policy=RetentionPolicy(enabled=True, days=7)
    )
    assert p.hour_metrics == Metrics(
        enabled=True, include_apis=False, retention_policy=RetentionPolicy(True, 365)
    )
    assert p.minute_metrics is None
    assert p.cors == (
        CorsRule(
            ("https://a.com", "https://b.com"),
            ("GET", "PUT"),
            max_age_in_seconds=500,
            exposed_headers=("x-ms-meta-*",),
        ),
    )


def test_encode_properties_known_answer_and_round_trip() -> None:
    props = ServiceProperties(
        logging=Logging(read=True, retention_policy=RetentionPolicy(True, 5)),
        hour_metrics=Metrics(enabled=True, include_apis=True),
        minute_metrics=Metrics(),
        cors=(CorsRule(["*"], ["GET", "options"], 60, ["x-a"], ["x-b", "x-c"]),),
    )
    body = encode_service_properties(props)
    assert body == (
        b"<?xml version='1.0' encoding='utf-8'?>\n<StorageServiceProperties>"
        b"<Logging><Version>1.0</Version><Delete>false</Delete><Read>true</Read>"
        b"<Write>false</Write><RetentionPolicy><Enabled>true</Enabled><Days>5</Days>"
        b"</RetentionPolicy></Logging>"
        b"<HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs>"
        b"<RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics>"
        b"<MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled>"
        b"<RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics>"
        b"<Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET,OPTIONS"
        b"</AllowedMethods><MaxAgeInSeconds>60</MaxAgeInSeconds><ExposedHeaders>x-a"
        b"</ExposedHeaders><AllowedHeaders>x-b,x-c</AllowedHeaders></CorsRule></Cors>"
        b"</StorageServiceProperties>"
    )
    assert decode_service_properties(body) == props
    # Parts left None are not sent at all.
    partial = encode_service_properties(ServiceProperties(minute_metrics=Metrics()))
    root = etree.fromstring(partial)
    assert [child.tag for child in root] == ["MinuteMetrics"]


def test_properties_refusals() -> None:
    with pytest.raises(ValidationError, match=r"1\.\.365"):
        RetentionPolicy(True, 0)
    with pytest.raises(ValidationError, match="needs days"):
        RetentionPolicy(True)
    with pytest.raises(ValidationError, match="at most 5 CORS"):
        ServiceProperties(cors=[CorsRule(["*"], ["GET"])] * 6)
    with pytest.raises(ValidationError, match="allowed methods"):
        CorsRule(["*"], ["FETCH"])
    with pytest.raises(WireDecodeError):
        decode_service_properties(b"<Other/>")
    with pytest.raises(WireDecodeError, match="true or false"):
        decode_service_properties(
            b"<StorageServiceProperties><Logging><Read>yes</Read></Logging></StorageServiceProperties>"
        )


def test_decode_stats() -> None:
    s = decode_service_stats(
        b'<?xml version="1.0" encoding="utf-8"?>\n<StorageServiceStats><GeoReplication>'
        b"<Status>live</Status>\n<LastSyncTime>Wed, 19 Jan 2021 22:28:43 GMT</LastSyncTime>"
        b"</GeoReplication></StorageServiceStats>"
    )
    assert s.geo_replication.status == "live"
    assert s.geo_replication.last_sync_time == datetime(2021, 1, 19, 22, 28, 43, tzinfo=UTC)
    u = decode_service_stats(
        b"<StorageServiceStats><GeoReplication><Status>unavailable</Status><LastSyncTime />"
        b"</GeoReplication></StorageServiceStats>"
    )
    assert u.geo_replication.last_sync_time is None
    with pytest.raises(WireDecodeError):
        decode_service_stats(b"<StorageServiceStats/>")
    with pytest.raises(WireDecodeError, match="RFC 1123"):
        decode_service_stats(
            b"<StorageServiceStats><GeoReplication><Status>live</Status>"
            b"<LastSyncTime>yesterday</LastSyncTime></GeoReplication></StorageServiceStats>"
        )


def test_decode_storage_error() -> None:
    body = (
        '\ufeff<?xml version="1.0" encoding="utf-8"?>\n<Error><Code>AuthenticationFailed</Code>'
        "<Message>Server failed to authenticate the request.\nRequestId:abc\n"
        "Time:2021-01-01T00:00:00.0000000Z</Message>"
        "<AuthenticationErrorDetail>The MAC signature found in the HTTP request is not the same"
        "</AuthenticationErrorDetail></Error>"
    ).encode()
    code, message, details = decode_storage_error(body)
    assert code == "AuthenticationFailed"
    assert message is not None
    assert message.startswith("Server failed to authenticate the request.\nRequestId:abc")
    assert details == {
        "AuthenticationErrorDetail": "The MAC signature found in the HTTP request is not the same"
    }
    assert decode_storage_error(b"{}") == (None, None, {})
    assert decode_storage_error(b"<error/>") == (None, None, {})
