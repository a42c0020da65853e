"""Garbage in, service errors out: mutated requests never yield a 500 or a partial write."""

from __future__ import annotations

import gzip
import json
import random
import re
import zlib

from .conftest import (
    ATOM_VERSION,
    JSON_MINIMAL,
    RawClient,
    RawResponse,
    row_keys,
)
from .test_http_batch import BATCH_CT, envelope, request_part
from .test_http_raw import ATOM_ENTRY, make_table


def _mutate(rng: random.Random, data: bytes) -> bytes:
    choice = rng.randrange(5)
    if not data or choice == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    if choice == 1:
        return data[: rng.randrange(len(data))]
    if choice == 2:
        i = rng.randrange(len(data))
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1 :]
    if choice == 3:
        i = rng.randrange(len(data))
        return data[:i] + data[i:][::-1]
    i = rng.randrange(len(data))
    return data[:i] + rng.choice([b"\x00", b"\r\n", b"'", b'"', b"--", b"\\u0000", b"{"]) + data[i:]


async def test_mutated_bodies_never_fail_the_server(raw: RawClient) -> None:
    await make_table(raw)
    rng = random.Random(20261121)
    entity = json.dumps(
        {
            "PartitionKey": "p",
            "RowKey": "r",
            "n@odata.type": "Edm.Int64",
            "n": "5",
            "d@odata.type": "Edm.DateTime",
            "d": "2020-01-01T00:00:00Z",
            "s": "text",
        }
    ).encode()
    batch = envelope(
        [
            request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"b","RowKey":"1"}'),
            request_part(
                "MERGE", "/devstoreaccount1/mytable(PartitionKey='b',RowKey='2')", '{"x":1}'
            ),
        ]
    ).encode()
    acl = b"<SignedIdentifiers><SignedIdentifier><Id>a</Id></SignedIdentifier></SignedIdentifiers>"
    cases = [
        ("POST", "/mytable", {"Content-Type": "application/json"}, entity, "2019-02-02"),
        (
            "PUT",
            "/mytable(PartitionKey='p',RowKey='x')",
            {"Content-Type": "application/json"},
            entity,
            "2019-02-02",
        ),
        (
            "POST",
            "/mytable",
            {"Content-Type": "application/atom+xml"},
            ATOM_ENTRY.encode(),
            ATOM_VERSION,
        ),
        ("POST", "/$batch", {"Content-Type": BATCH_CT}, batch, "2019-02-02"),
        ("PUT", "/mytable", {"Content-Type": "application/xml"}, acl, "2019-02-02"),
        (
            "POST",
            "/Tables",
            {"Content-Type": "application/json"},
            b'{"TableName":"zz1"}',
            "2019-02-02",
        ),
    ]
    statuses: set[int] = set()
    for method, path, headers, body, version in cases:
        query = {"comp": "acl"} if path == "/mytable" and method == "PUT" else None
        for _ in range(60):
            mutated = _mutate(rng, body)
            r = await raw.request(
                method,
                path,
                query=query,
                headers={"Accept": JSON_MINIMAL, **headers},
                body=mutated,
                version=version,
            )
            assert r.status < 500, (method, path, mutated, r.body)
            statuses.add(r.status)
            if r.status >= 400:
                assert r.code, r.body
    assert 400 in statuses


async def test_garbage_headers_and_paths(raw: RawClient) -> None:
    await make_table(raw)
    rng = random.Random(5)
    alphabet = [
        "a",
        "b",
        "c",
        "'",
        "(",
        ")",
        "=",
        ",",
        "%27",
        "%2F",
        "$",
        " ",
        "/",
        "%C3%A9",
        "%FF",
        "%",
        "x",
    ]
    for _ in range(150):
        tail = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 20)))
        path = "/" + tail.replace(" ", "%20")
        headers = {
            "Accept": rng.choice([JSON_MINIMAL, "application/xml", "*/*", "x/y;;;", ""]),
            "If-Match": rng.choice(["*", 'W/"x"', "bogus", ""]),
            "Prefer": rng.choice(["return-content", "weird", ""]),
            "Content-Type": rng.choice(["application/json", "multipart/mixed", "", "a/b"]),
        }
        method = rng.choice(["GET", "POST", "PUT", "MERGE", "PATCH", "DELETE", "HEAD"])
        body = b"{}" if method != "GET" else None
        r = await raw.request(method, path, headers=headers, body=body)
        assert r.status < 500, (method, path, headers, r.body)


async def test_undecodable_query_values_never_break_authentication(raw: RawClient) -> None:
    await make_table(raw)
    # a SAS whose table name is not UTF-8, and a signed request with such a comp value
    r = await raw.request(
        "GET",
        "/mytable()",
        headers={"Accept": JSON_MINIMAL},
        auth="none",
        raw_query="sv=2019-02-02&sig=x&tn=%FF&sp=r&se=2030-01-01",
    )
    assert (r.status, r.code) == (403, "AuthenticationFailed"), r.body
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_MINIMAL}, raw_query="comp=%FF"
    )
    assert r.status in (400, 403), r.body
    assert r.code is not None


def assert_service_error(r: RawResponse, method: str = "GET") -> None:
    """A 4xx whose ``x-ms-error-code`` is also the code in the body (any error style)."""
    assert 400 <= r.status < 500, (r.status, r.body[:300])
    assert r.code, r.body[:300]
    if method == "HEAD":
        return
    text = r.body.decode("utf-8")
    if r.headers["Content-Type"].startswith("application/json"):
        assert json.loads(text)["odata.error"]["code"] == r.code, text[:300]
    else:
        assert re.search(rf"<(Code|code)>{re.escape(r.code)}</(Code|code)>", text), text[:300]


_ENTITY = b'{"PartitionKey":"p","RowKey":"r","n":1}'

#: Content-Encoding values, with a body that is (or is not) really encoded that way.
_ENCODED_BODIES = [
    ("gzip", _ENTITY),
    ("gzip", gzip.compress(_ENTITY)),
    ("x-gzip", gzip.compress(_ENTITY)),
    ("deflate", _ENTITY),
    ("deflate", zlib.compress(_ENTITY)),
    ("br", _ENTITY),
    ("zstd", _ENTITY),
    ("compress", _ENTITY),
    ("bogus", _ENTITY),
    ("gzip, identity", gzip.compress(_ENTITY)),
    ("identity, gzip", gzip.compress(_ENTITY)),
    ("GZIP", b"\x1f\x8b\x08\x00garbage"),
]


async def test_declared_content_encodings_are_refused_before_anything_is_written(
    raw: RawClient,
) -> None:
    # issue 11 item 8: gzip/deflate on a plain body were 500 InternalError (the library
    # decompressed and failed mid-read), br a plain-text 400 without x-ms-error-code
    await make_table(raw)
    headers = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
    entity_path = "/mytable(PartitionKey='p',RowKey='r')"
    writes = [
        ("POST", "/mytable", None),
        ("PUT", entity_path, None),
        ("MERGE", entity_path, None),
        ("POST", "/Tables", None),
    ]
    for encoding, body in _ENCODED_BODIES:
        for method, path, query in writes:
            sent = body if path != "/Tables" else b'{"TableName":"encoded"}'
            r = await raw.request(
                method,
                path,
                query=query,
                headers={**headers, "Content-Encoding": encoding},
                body=sent,
            )
            assert (r.status, r.code) == (400, "UnsupportedHeader"), (encoding, method, r.body)
            assert_service_error(r, method)
            assert r.json()["odata.error"]["code"] == "UnsupportedHeader"
    # the same for the Storage XML operations (ACL, service properties)
    for path, query in (
        ("/mytable", {"comp": "acl"}),
        ("/", {"restype": "service", "comp": "properties"}),
    ):
        r = await raw.request(
            "PUT",
            path,
            query=query,
            headers={"Content-Type": "application/xml", "Content-Encoding": "gzip"},
            body=gzip.compress(b"<SignedIdentifiers/>"),
        )
        assert (r.status, r.code) == (400, "UnsupportedHeader"), r.body
        assert b"<Code>UnsupportedHeader</Code>" in r.body
        assert b"<HeaderName>Content-Encoding</HeaderName>" in r.body
    assert await row_keys(raw) == []
    r = await raw.request("GET", "/Tables('encoded')", headers={"Accept": JSON_MINIMAL})
    assert r.status == 404
    # identity (no coding) and an empty value are not codings
    for encoding in ("identity", ""):
        r = await raw.request(
            "PUT", entity_path, headers={**headers, "Content-Encoding": encoding}, body=_ENTITY
        )
        assert r.status == 204, (encoding, r.body)


async def test_a_compressed_batch_or_batch_part_is_refused(raw: RawClient) -> None:
    await make_table(raw)
    part = request_part("POST", "/devstoreaccount1/mytable", _ENTITY.decode())
    batch = envelope([part]).encode()
    r = await raw.request(
        "POST",
        "/$batch",
        headers={"Content-Type": BATCH_CT, "Content-Encoding": "gzip"},
        body=gzip.compress(batch),
    )
    assert (r.status, r.code) == (400, "UnsupportedHeader"), r.body
    # a part declaring a coding fails the change set in the part's response
    encoded_part = part.replace(
        "Content-Type: application/json", "Content-Type: application/json\r\nContent-Encoding: gzip"
    )
    assert encoded_part != part
    r = await raw.request(
        "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope([encoded_part])
    )
    assert r.status == 202, r.body
    assert b"UnsupportedHeader" in r.body
    assert await row_keys(raw) == []


#: JSON numbers no Double or Int32 holds, typed and untyped.
_EXTREME_NUMBERS = [
    '"n":' + "9" * 309,
    '"n":-' + "1" * 400,
    '"n":' + "7" * 4301,  # beyond Python's int-from-string digit limit
    '"n":1e400',
    '"n":-1e400',
    '"n":' + "1" * 310 + ".5",
    '"n@odata.type":"Edm.Double","n":' + "9" * 309,
    '"n@odata.type":"Edm.Double","n":1e309',
    '"n@odata.type":"Edm.Int32","n":' + "9" * 309,
    '"n@odata.type":"Edm.Int64","n":' + "9" * 309,
    '"n@odata.type":"Edm.Int64","n":"' + "9" * 309 + '"',
    '"n@odata.type":"Edm.Boolean","n":' + "1" * 309,
    '"n":' + "[" * 5000 + "]" * 5000,
    '"n":' + '{"a":' * 5000 + "1" + "}" * 5000,
]


async def test_extreme_numbers_are_refused_not_crashed_on(raw: RawClient) -> None:
    # issue 11 item 8: a 309-digit JSON number was 500 InternalError (OverflowError)
    await make_table(raw)
    headers = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
    for member in _EXTREME_NUMBERS:
        insert = '{"PartitionKey":"p","RowKey":"r",' + member + "}"
        r = await raw.request("POST", "/mytable", headers=headers, body=insert)
        assert_service_error(r, "POST")
        assert r.status == 400, (member[:60], r.body[:300])
        update = "{" + member + "}"
        for method in ("PUT", "MERGE"):
            r = await raw.request(
                method, "/mytable(PartitionKey='p',RowKey='u')", headers=headers, body=update
            )
            assert r.status == 400, (member[:60], method, r.body[:300])
            assert_service_error(r, method)
        part = request_part("POST", "/devstoreaccount1/mytable", insert)
        r = await raw.request(
            "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope([part])
        )
        assert r.status == 202, r.body[:300]
        assert b"InvalidInput" in r.body or b"InvalidValueType" in r.body or b"OutOfRange" in r.body
    assert await row_keys(raw) == []
    # the largest finite values still round-trip
    r = await raw.request(
        "POST",
        "/mytable",
        headers=headers,
        body='{"PartitionKey":"p","RowKey":"max","d":1.7976931348623157e308,"i":' + "9" * 308 + "}",
    )
    assert r.status == 201, r.body[:300]
    assert r.json()["d"] == 1.7976931348623157e308


async def test_fuzzed_headers_and_bodies_under_a_valid_signature(raw: RawClient) -> None:
    """Many malformed, mis-declared or extreme requests, each correctly signed: never a
    5xx, always a service error body whose code matches ``x-ms-error-code``."""
    await make_table(raw)
    rng = random.Random(11)
    bodies: list[bytes] = [
        _ENTITY,
        gzip.compress(_ENTITY),
        zlib.compress(_ENTITY),
        b"\xff\xfe" + _ENTITY.decode().encode("utf-16-le"),
        b'{"PartitionKey":"p","RowKey":"r","n":' + b"9" * 400 + b"}",
        b'{"PartitionKey":"p","RowKey":"r","n":1e999}',
        b'{"PartitionKey":"p","RowKey":"r","b@odata.type":"Edm.Binary","b":"%%%"}',
        b'{"PartitionKey":"p","RowKey":"r","g@odata.type":"Edm.Guid","g":"\xc3\xa9"}',
        b'{"PartitionKey":"p","RowKey":"r","t@odata.type":"Edm.DateTime","t":"9999-99-99"}',
        b'{"PartitionKey":"\xed\xa0\x80","RowKey":"r"}',  # a lone surrogate in UTF-8
        b'{"PartitionKey":"\\ud800","RowKey":"r"}',
        b"<entry><content><m:properties/></content></entry>",
        b"\x00" * 64,
        b"[" * 3000,
        b"",
    ]
    headers_pool: dict[str, list[str]] = {
        "Content-Encoding": ["gzip", "deflate", "br", "identity", "", "x" * 300],
        "Content-Type": [
            "application/json",
            "application/json;odata=nometadata",
            "application/atom+xml",
            "application/json; charset=utf-16",
            "multipart/mixed; boundary=",
            "text/plain",
            "",
        ],
        "Accept": [JSON_MINIMAL, "application/xml", "*/*", "application/json;odata=verbose", ""],
        "DataServiceVersion": ["3.0", "9.9", "x", ""],
        "MaxDataServiceVersion": ["3.0;NetFx", "-1", ""],
        "If-Match": ["*", 'W/"x"', "\u00e9", ""],
        "Prefer": ["return-content", "return-no-content", "x=" + "y" * 200],
        "X-HTTP-Method": ["MERGE", "DELETE", "BOGUS"],
    }
    targets = [
        ("POST", "/mytable"),
        ("PUT", "/mytable(PartitionKey='p',RowKey='r')"),
        ("MERGE", "/mytable(PartitionKey='p',RowKey='r')"),
        ("POST", "/mytable(PartitionKey='p',RowKey='r')"),
        ("DELETE", "/mytable(PartitionKey='p',RowKey='r')"),
        ("POST", "/Tables"),
        ("POST", "/$batch"),
        ("GET", "/mytable()"),
        ("HEAD", "/mytable(PartitionKey='p',RowKey='r')"),
    ]
    versions = ["2019-02-02", ATOM_VERSION, "2009-09-19"]
    for _ in range(300):
        method, path = rng.choice(targets)
        headers = {
            name: rng.choice(values) for name, values in headers_pool.items() if rng.random() < 0.5
        }
        body = rng.choice(bodies) if method not in ("GET", "HEAD", "DELETE") else None
        if body and rng.random() < 0.3:
            body = _mutate(rng, body)
        r = await raw.request(
            method, path, headers=headers, body=body, version=rng.choice(versions)
        )
        assert r.status < 500, (method, path, headers, body, r.body[:300])
        if r.status >= 400:
            assert_service_error(r, method)


_PROPERTIES = (
    '<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties><Logging>'
    "<Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write>"
    "<RetentionPolicy><Enabled>true</Enabled><Days>{days}</Days></RetentionPolicy></Logging>"
    "<Cors><CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET</AllowedMethods>"
    "<MaxAgeInSeconds>{age}</MaxAgeInSeconds><ExposedHeaders></ExposedHeaders>"
    "<AllowedHeaders></AllowedHeaders></CorsRule></Cors></StorageServiceProperties>"
)

#: Integers ``str.isdigit`` accepts but are no ASCII decimal, and ones ``int`` refuses.
_ODD_INTEGERS = ["\u00b2", "\u0661", "\uff17", "9" * 5000, "9" * 30]


async def test_integer_fields_take_ascii_digits_of_a_sane_length(raw: RawClient) -> None:
    # the class of item 8 beyond JSON: str.isdigit() let "²" reach int() (ValueError),
    # and more than 4,300 digits made int() raise; both were 500 InternalError
    await make_table(raw)
    query = {"restype": "service", "comp": "properties"}
    ctype = {"Content-Type": "application/xml"}
    for odd in _ODD_INTEGERS:
        for days, age in ((odd, "5"), ("7", odd)):
            body = _PROPERTIES.format(days=days, age=age)
            r = await raw.request("PUT", "/", query=query, headers=ctype, body=body)
            assert (r.status, r.code) == (400, "InvalidXmlNodeValue"), (days[:9], age[:9], r.body)
            assert_service_error(r, "PUT")
        part = request_part("POST", "/devstoreaccount1/mytable", _ENTITY.decode()).replace(
            "Content-Type: application/json",
            f"Content-Type: application/json\r\nContent-Length: {odd}",
        )
        r = await raw.request(
            "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope([part])
        )
        assert (r.status, r.code) == (400, "InvalidInput"), (odd[:9], r.body[:300])
        assert_service_error(r, "POST")
    r = await raw.request(
        "PUT", "/", query=query, headers=ctype, body=_PROPERTIES.format(days="7", age="5")
    )
    assert r.status == 202, r.body
    assert await row_keys(raw) == []


async def test_huge_integers_in_the_query_string(raw: RawClient) -> None:
    await make_table(raw)
    huge = "9" * 5000
    r = await raw.request(
        "GET", "/mytable()", query={"timeout": huge}, headers={"Accept": JSON_MINIMAL}
    )
    assert r.status == 200, r.body[:300]  # a long timeout is accepted (the service caps it)
    r = await raw.request(
        "GET", "/mytable()", query={"timeout": "-" + huge}, headers={"Accept": JSON_MINIMAL}
    )
    assert (r.status, r.code) == (400, "OutOfRangeQueryParameterValue"), r.body[:300]
    for text in (f"n eq {huge}", f"n eq -{huge}", f"n eq {huge}L", f"n eq {huge}.5"):
        r = await raw.request(
            "GET", "/mytable()", query={"$filter": text}, headers={"Accept": JSON_MINIMAL}
        )
        assert (r.status, r.code) == (400, "InvalidInput"), (text[-12:], r.body[:300])
        assert_service_error(r)
