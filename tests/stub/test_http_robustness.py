"""Garbage in, service errors out: mutated requests never yield a 500 or a partial write."""

from __future__ import annotations

import json
import random

from .conftest import (
    ATOM_VERSION,
    JSON_MINIMAL,
    RawClient,
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
