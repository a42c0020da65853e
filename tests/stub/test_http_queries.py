"""Query Entities over HTTP: the planner's key ranges, filterable and selectable names,
numeric literals.
"""

from __future__ import annotations

from typing import Any

import pytest

from azt_server_stub import DEV_ACCOUNT, StubServer
from azt_server_stub.backend import QueryPage, WriteOp
from azt_server_stub.model import Edm

from .conftest import (
    ATOM_VERSION,
    JSON_MINIMAL,
    RawClient,
    matching_row_keys,
)
from .test_http_raw import JSON_HEADERS, insert, make_table


async def test_http_key_queries_scan_only_their_ranges(stub: StubServer, raw: RawClient) -> None:
    """Point, partition and key-range filters sent over HTTP touch O(k) entities of 20,000."""
    await make_table(raw)
    backend = stub.backend
    for p in range(200):
        ops = [
            WriteOp("insert", f"p{p:04d}", f"r{r:04d}", {"n": (Edm.INT32, r)}) for r in range(100)
        ]
        backend.execute_batch(DEV_ACCOUNT, "mytable", ops)
    scans: list[int] = []
    real = backend.query_entities

    def spy(*args: Any, **kwargs: Any) -> QueryPage:
        page = real(*args, **kwargs)
        scans.append(page.scanned)
        return page

    backend.query_entities = spy  # type: ignore[method-assign]
    cases = [
        ("PartitionKey eq 'p0050' and RowKey eq 'r0005'", 1, 1),
        ("RowKey eq 'r0005' and PartitionKey eq 'p0050'", 1, 1),
        ("PartitionKey eq 'p0050'", 100, 100),
        ("PartitionKey eq 'p0050' and RowKey ge 'r0010' and RowKey lt 'r0020'", 10, 10),
        ("PartitionKey eq 'p0050' and n ge 90", 10, 100),
        ("PartitionKey ge 'p0050' and PartitionKey lt 'p0052'", 200, 200),
        ("(PartitionKey eq 'p0001' or PartitionKey eq 'p0199') and RowKey lt 'r0003'", 6, 6),
        ("PartitionKey eq 'nope'", 0, 0),
    ]
    for flt, matches, most_scanned in cases:
        scans.clear()
        r = await raw.request(
            "GET", "/mytable()", query={"$filter": flt}, headers={"Accept": JSON_MINIMAL}
        )
        assert r.status == 200, r.body
        assert len(r.json()["value"]) == matches, flt
        assert "x-ms-continuation-NextPartitionKey" not in r.headers, flt
        assert scans, flt
        assert sum(scans) <= most_scanned, (flt, scans)
    # a filter on a non-key property is a scan, which the counter shows
    scans.clear()
    r = await raw.request(
        "GET",
        "/mytable()",
        query={"$filter": "n eq 7", "$top": "5"},
        headers={"Accept": JSON_MINIMAL},
    )
    assert len(r.json()["value"]) == 5
    assert sum(scans) > 100


async def test_every_storable_property_name_can_be_selected_and_filtered(raw: RawClient) -> None:
    """Names follow one rule (validation's C# identifier rule) on write, $select and $filter."""
    await make_table(raw)
    names = ["e\u0301clair", "Größe", "\u2167x", "a_\u203f_b", "\u0915\u093f"]  # Mn, Nl, Pc, Mc
    entity: dict[str, object] = {"PartitionKey": "p", "RowKey": "r"}
    entity.update({name: i for i, name in enumerate(names)})
    await insert(raw, "mytable", entity)
    for i, name in enumerate(names):
        r = await raw.request(
            "GET",
            "/mytable()",
            query={"$select": name, "$filter": f"{name} eq {i}"},
            headers={"Accept": JSON_MINIMAL},
        )
        assert r.status == 200, (name, r.body)
        assert [e[name] for e in r.json()["value"]] == [i], name
    # Atom clients read the same names (they are XML names too)
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": "application/atom+xml"}, version=ATOM_VERSION
    )
    assert r.status == 200, r.body
    for name in names:
        assert f"<d:{name} ".encode() in r.body, name
    # a name Atom could not carry is refused on write, whatever the format
    r = await raw.request(
        "POST",
        "/mytable",
        headers=JSON_HEADERS,
        body='{"PartitionKey":"p","RowKey":"x","\u00aa":1}',
    )
    assert (r.status, r.code) == (400, "PropertyNameInvalid"), r.body
    # what cannot be a stored name cannot be selected either
    for bad in ("x\u00b2", "a\u200db", "1a"):
        r = await raw.request(
            "GET", "/mytable()", query={"$select": bad}, headers={"Accept": JSON_MINIMAL}
        )
        assert (r.status, r.code) == (400, "InvalidInput"), bad
        r = await raw.request(
            "GET", "/mytable()", query={"$filter": f"{bad} eq 1"}, headers={"Accept": JSON_MINIMAL}
        )
        assert (r.status, r.code) == (400, "InvalidInput"), bad


@pytest.mark.parametrize(
    ("literal", "matches"),
    [
        ("1e+16", ["zero"]),
        ("1e16", ["zero"]),
        ("1E16", ["zero"]),
        ("1.5e3", ["zero"]),
        ("-1e-5", []),
        ("-2.5e0", []),
    ],
)
async def test_double_literal_with_exponent(
    raw: RawClient, literal: str, matches: list[str]
) -> None:
    """``d lt 1e+16`` is a Double comparison (PROTOCOL.md 7.2 grammar: a double may be
    written with an exponent). Azurite 3.35 matches nothing for any exponent literal."""
    await make_table(raw)
    await insert(
        raw,
        "mytable",
        {"PartitionKey": "p", "RowKey": "zero", "d": 0.0, "d@odata.type": "Edm.Double"},
    )
    assert await matching_row_keys(raw, "mytable", f"d lt {literal}") == matches
    assert await matching_row_keys(raw, "mytable", f"d ge {literal}") == (
        ["zero"] if not matches else []
    )
