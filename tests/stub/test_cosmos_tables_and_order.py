"""The stub's Cosmos flavour: Cosmos DB's table-name rule (case-sensitive names) and its
unsorted query results, next to Storage's unchanged behaviour (docs/cosmos.md)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer
from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.errors import StubError
from azt_server_stub.odata import compile_entity_filter
from azt_server_stub.query_pages import sort_key
from azt_server_stub.validation import COSMOS_TABLE_NAMES

from .conftest import RawClient
from .test_http_batch import BATCH_CT, envelope, parts_of, request_part
from .test_http_raw import JSON_HEADERS, make_table

A = "acct"


def cosmos_backend(location: Path | None = None) -> Backend:
    return Backend(location, table_naming=COSMOS_TABLE_NAMES, key_order=False)


# -- table names -------------------------------------------------------------------------------


def test_cosmos_names_are_case_sensitive_storage_names_are_not() -> None:
    cosmos = cosmos_backend()
    assert cosmos.create_table(A, "Abc") == "Abc"
    assert cosmos.create_table(A, "abc") == "abc"
    cosmos.write(A, "Abc", WriteOp("insert", "p", "upper"))
    cosmos.write(A, "abc", WriteOp("insert", "p", "lower"))
    assert [e.rk for e in cosmos.query_entities(A, "Abc", None, None, None).entities] == ["upper"]
    assert [e.rk for e in cosmos.query_entities(A, "abc", None, None, None).entities] == ["lower"]
    assert cosmos.table_name(A, "ABC") is None
    with pytest.raises(StubError) as missing:
        cosmos.get_entity(A, "ABC", "p", "upper")
    assert (missing.value.status, missing.value.code) == (404, "TableNotFound")
    cosmos.delete_table(A, "abc")
    assert cosmos.table_name(A, "Abc") == "Abc"
    assert cosmos.query_tables(A, None, None, None).names == ["Abc"]

    storage = Backend()
    storage.create_table(A, "Abc")
    with pytest.raises(StubError) as exists:
        storage.create_table(A, "abc")
    assert (exists.value.status, exists.value.code) == (409, "TableAlreadyExists")
    assert storage.table_name(A, "ABC") == "Abc"


def test_cosmos_accepts_long_names_with_punctuation_storage_refuses_them() -> None:
    name = "orders-2024_eu " + "x" * 185  # 200 characters: '-', '_', an inner space
    assert len(name) == 200
    assert cosmos_backend().create_table(A, name) == name
    assert cosmos_backend().create_table(A, "y" * 255) == "y" * 255
    assert cosmos_backend().create_table(A, "t") == "t"  # one character is enough
    with pytest.raises(StubError) as refused:
        Backend().create_table(A, name)
    assert (refused.value.status, refused.value.code) == (400, "OutOfRangeInput")
    with pytest.raises(StubError) as refused:
        Backend().create_table(A, "orders-2024")
    assert (refused.value.status, refused.value.code) == (400, "InvalidResourceName")


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("a/b", "InvalidResourceName"),
        ("a\\b", "InvalidResourceName"),
        ("a#b", "InvalidResourceName"),
        ("a?b", "InvalidResourceName"),
        ("trailing ", "InvalidResourceName"),
        ("Tables", "InvalidResourceName"),
        ("", "OutOfRangeInput"),
        ("z" * 256, "OutOfRangeInput"),
    ],
)
def test_cosmos_refuses_names_outside_its_rule(name: str, code: str) -> None:
    backend = cosmos_backend()
    with pytest.raises(StubError) as refused:
        backend.create_table(A, name)
    assert (refused.value.status, refused.value.code) == (400, code)
    assert backend.query_tables(A, None, None, None).names == []


def test_cosmos_names_survive_the_durable_store(tmp_path: Path) -> None:
    with cosmos_backend(tmp_path) as backend:
        backend.create_table(A, "Abc")
        backend.create_table(A, "abc")
        backend.write(A, "Abc", WriteOp("insert", "p", "upper"))
        backend.write(A, "abc", WriteOp("insert", "p", "lower"))
        backend.delete_table(A, "abc")
        backend.create_table(A, "abc")
        backend.write(A, "abc", WriteOp("insert", "p", "again"))
    with cosmos_backend(tmp_path) as reopened:
        assert reopened.query_tables(A, None, None, None).names == ["Abc", "abc"]
        assert [e.rk for e in reopened.query_entities(A, "Abc", None, None, None).entities] == [
            "upper"
        ]
        assert [e.rk for e in reopened.query_entities(A, "abc", None, None, None).entities] == [
            "again"
        ]
    with pytest.raises(ValueError, match="case-insensitive"):
        Backend(tmp_path)  # Storage cannot hold both: refused, not merged


@pytest.fixture
async def cosmos_raw() -> AsyncIterator[RawClient]:
    async with StubServer(flavor="cosmos") as stub, aiohttp.ClientSession() as session:
        yield RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)


async def test_cosmos_names_over_http(cosmos_raw: RawClient) -> None:
    for name in ("Mixed", "mixed", "with space-and_dash"):
        await make_table(cosmos_raw, name)
    r = await cosmos_raw.request(
        "POST", "/Tables", headers=JSON_HEADERS, body=json.dumps({"TableName": "a#b"})
    )
    assert r.status == 400
    assert json.loads(r.body)["odata.error"]["code"] == "InvalidResourceName"
    r = await cosmos_raw.request("GET", "/Tables", headers=JSON_HEADERS)
    assert sorted(t["TableName"] for t in r.json()["value"]) == [
        "Mixed",
        "mixed",
        "with space-and_dash",
    ]
    r = await cosmos_raw.request(
        "POST",
        "/with%20space-and_dash",
        headers={**JSON_HEADERS, "Prefer": "return-no-content"},
        body=json.dumps({"PartitionKey": "p", "RowKey": "r"}),
    )
    assert r.status == 204, r.body
    r = await cosmos_raw.request("GET", "/MIXED()", headers=JSON_HEADERS)
    assert r.status == 404


async def test_cosmos_batch_parts_must_name_the_same_table_exactly(cosmos_raw: RawClient) -> None:
    await make_table(cosmos_raw, "Mixed")
    await make_table(cosmos_raw, "mixed")
    body = envelope(
        [
            request_part(
                "POST",
                f"http://127.0.0.1/{DEV_ACCOUNT}/{table}",
                json.dumps({"PartitionKey": "p", "RowKey": str(i)}),
            )
            for i, table in enumerate(["Mixed", "mixed"])
        ]
    )
    r = await cosmos_raw.request("POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=body)
    assert r.status == 202
    [(status, _, _)] = parts_of(r.body)
    assert status == 400
    for table in ("Mixed", "mixed"):  # nothing was written to either table
        r = await cosmos_raw.request("GET", f"/{table}()", headers=JSON_HEADERS)
        assert r.json()["value"] == []


# -- query order -------------------------------------------------------------------------------


def _filled(backend: Backend) -> set[tuple[str, str]]:
    backend.create_table(A, "Rows")
    keys = {(f"p{p}", f"r{r:03d}") for p in range(5) for r in range(60)}
    for pk, rk in sorted(keys):
        backend.write(A, "Rows", WriteOp("insert", pk, rk, {}))
    return keys


def _pages(
    backend: Backend, top: int, filter_text: str | None = None
) -> list[list[tuple[str, str]]]:
    flt = None if filter_text is None else compile_entity_filter(filter_text)
    pages: list[list[tuple[str, str]]] = []
    token: tuple[str, str] | None = None
    while True:
        page = backend.query_entities(A, "Rows", flt, top, token)
        pages.append([e.key for e in page.entities])
        token = page.next_key
        if token is None:
            return pages


def test_cosmos_results_are_unsorted_yet_every_row_comes_exactly_once() -> None:
    cosmos = cosmos_backend()
    keys = _filled(cosmos)
    rows = [k for page in _pages(cosmos, 7) for k in page]
    assert len(rows) == len(keys)
    assert set(rows) == keys
    assert rows != sorted(rows, key=lambda k: sort_key(*k))  # neither across pages ...
    first = _pages(cosmos, 1000)[0]
    assert first != sorted(first, key=lambda k: sort_key(*k))  # ... nor within one page
    partitions = [pk for pk, _ in first]
    assert len({pk for i, pk in enumerate(partitions[:-1]) if pk != partitions[i + 1]}) == 5
    assert first == rows  # the order is deterministic, whatever the page size
    assert [k for page in _pages(cosmos, 13) for k in page] == rows

    storage = Backend()
    _filled(storage)
    in_order = [k for page in _pages(storage, 7) for k in page]
    assert in_order == sorted(keys, key=lambda k: sort_key(*k))  # Storage: key order


def test_cosmos_filtered_pages_resume_exactly() -> None:
    cosmos = cosmos_backend()
    keys = _filled(cosmos)
    text = "PartitionKey ge 'p1' and PartitionKey lt 'p3' and RowKey lt 'r040'"
    rows = [k for page in _pages(cosmos, 9, text) for k in page]
    expected = {(pk, rk) for pk, rk in keys if "p1" <= pk < "p3" and rk < "r040"}
    assert len(rows) == len(expected)
    assert set(rows) == expected
    assert rows != sorted(rows)


def test_cosmos_continuation_survives_writes_between_pages() -> None:
    cosmos = cosmos_backend()
    keys = _filled(cosmos)
    page = cosmos.query_entities(A, "Rows", None, 50, None)
    seen = [e.key for e in page.entities]
    assert page.next_key is not None
    # the row the token names is deleted, and a row arrives, before the next page
    deleted = page.next_key
    cosmos.write(A, "Rows", WriteOp("delete", *deleted, if_match="*"))
    cosmos.write(A, "Rows", WriteOp("insert", "p9", "new", {}))
    token: tuple[str, str] | None = deleted
    while token is not None:
        page = cosmos.query_entities(A, "Rows", None, 50, token)
        seen.extend(e.key for e in page.entities)
        token = page.next_key
    assert len(seen) == len(set(seen))  # nothing twice, every row present throughout once
    assert set(seen) - {("p9", "new")} == keys - {deleted}


def test_cosmos_scan_budget_cuts_pages_that_still_resume() -> None:
    cosmos = cosmos_backend()
    keys = _filled(cosmos)
    flt = compile_entity_filter("RowKey eq 'r007'")
    found: list[tuple[str, str]] = []
    token: tuple[str, str] | None = None
    pages = 0
    while True:
        page = cosmos.query_entities(A, "Rows", flt, None, token, scan_budget=40)
        assert page.scanned <= 40
        found.extend(e.key for e in page.entities)
        pages += 1
        token = page.next_key
        if token is None:
            break
    assert sorted(found) == sorted(k for k in keys if k[1] == "r007")
    assert pages == -(-len(keys) // 40)
