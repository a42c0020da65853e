"""The stub's Cosmos flavour: Cosmos DB's table-name rule (case-sensitive names) and its
query results in creation order, next to Storage's unchanged behaviour (docs/cosmos.md)."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer
from azt_server_stub._store import DB_FILE
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


def _filled(backend: Backend) -> list[tuple[str, str]]:
    """300 rows over 5 partitions, inserted in a shuffled order (returned)."""
    backend.create_table(A, "Rows")
    keys = [(f"p{p}", f"r{r:03d}") for p in range(5) for r in range(60)]
    random.Random(35).shuffle(keys)
    for pk, rk in keys:
        backend.write(A, "Rows", WriteOp("insert", pk, rk, {}))
    return keys


def _pages(
    backend: Backend, top: int, filter_text: str | None = None
) -> list[list[tuple[str, str]]]:
    flt = None if filter_text is None else compile_entity_filter(filter_text)
    pages: list[list[tuple[str, str]]] = []
    token: tuple[str, str] | None = None
    rank: int | None = None
    while True:
        page = backend.query_entities(A, "Rows", flt, top, token, start_rank=rank)
        pages.append([e.key for e in page.entities])
        token, rank = page.next_key, page.next_rank
        if token is None:
            return pages


def test_cosmos_results_come_in_creation_order_every_row_once() -> None:
    # the recorded order (docs/cosmos.md, REC 5 and REC 9): the order rows were created in
    cosmos = cosmos_backend()
    keys = _filled(cosmos)
    rows = [k for page in _pages(cosmos, 7) for k in page]
    assert rows == keys
    assert rows != sorted(rows, key=lambda k: sort_key(*k))  # not key order
    assert _pages(cosmos, 1000)[0] == rows  # the same whatever the page size
    assert [k for page in _pages(cosmos, 13) for k in page] == rows

    storage = Backend()
    _filled(storage)
    in_order = [k for page in _pages(storage, 7) for k in page]
    assert in_order == sorted(keys, key=lambda k: sort_key(*k))  # Storage: key order


def test_cosmos_order_keeps_a_row_s_place_until_it_is_deleted() -> None:
    cosmos = cosmos_backend()
    cosmos.create_table(A, "Rows")
    for rk in ("c", "a", "b"):
        cosmos.write(A, "Rows", WriteOp("insert", "p", rk, {}))
    cosmos.write(A, "Rows", WriteOp("replace", "p", "c", {}, if_match="*"))  # keeps its place
    cosmos.write(A, "Rows", WriteOp("merge", "p", "a", {}))  # an upsert of a stored row: too
    cosmos.write(A, "Rows", WriteOp("merge", "q", "new", {}))  # an upsert of a new row: last
    assert _pages(cosmos, 1000)[0] == [("p", "c"), ("p", "a"), ("p", "b"), ("q", "new")]
    cosmos.write(A, "Rows", WriteOp("delete", "p", "c", {}, if_match="*"))
    cosmos.write(A, "Rows", WriteOp("insert", "p", "c", {}))  # created again: at the end
    # a change set's new rows in the order of its parts (REC 9), after everything before
    cosmos.execute_batch(A, "Rows", [WriteOp("insert", "z", rk, {}) for rk in ("9", "10", "1")])
    cosmos.write(A, "Rows", WriteOp("insert", "z", "0", {}))
    assert _pages(cosmos, 2) == [
        [("p", "a"), ("p", "b")],
        [("q", "new"), ("p", "c")],
        [("z", "9"), ("z", "10")],
        [("z", "1"), ("z", "0")],
    ]


def test_cosmos_creation_order_survives_a_restart(tmp_path: Path) -> None:
    cosmos = cosmos_backend(tmp_path)
    try:
        keys = _filled(cosmos)
    finally:
        cosmos.close()
    reopened = cosmos_backend(tmp_path)
    try:
        assert [k for page in _pages(reopened, 50) for k in page] == keys
        reopened.write(A, "Rows", WriteOp("insert", "a", "after", {}))
        assert _pages(reopened, 1000)[0][-1] == ("a", "after")
    finally:
        reopened.close()


def test_cosmos_filtered_pages_resume_exactly() -> None:
    cosmos = cosmos_backend()
    keys = _filled(cosmos)
    text = "PartitionKey ge 'p1' and PartitionKey lt 'p3' and RowKey lt 'r040'"
    rows = [k for page in _pages(cosmos, 9, text) for k in page]
    assert rows == [(pk, rk) for pk, rk in keys if "p1" <= pk < "p3" and rk < "r040"]


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
    rank = page.next_rank
    while token is not None:
        page = cosmos.query_entities(A, "Rows", None, 50, token, start_rank=rank)
        seen.extend(e.key for e in page.entities)
        token, rank = page.next_key, page.next_rank
    assert seen == [k for k in keys if k != deleted] + [("p9", "new")]


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


def test_a_store_written_before_creation_ranks_opens_with_its_rows_first(tmp_path: Path) -> None:
    old = cosmos_backend(tmp_path)
    try:
        old.create_table(A, "Rows")
        for rk in ("b", "a"):
            old.write(A, "Rows", WriteOp("insert", "p", rk, {}))
    finally:
        old.close()
    with sqlite3.connect(tmp_path / DB_FILE) as db:  # the layout before ranks were kept
        db.execute("DROP INDEX entity_rows_created")  # nor the index of creation order
        db.execute("ALTER TABLE entity_rows DROP COLUMN created")
    reopened = cosmos_backend(tmp_path)
    try:
        reopened.write(A, "Rows", WriteOp("insert", "p", "0", {}))
        # the old rows rank 0 (in key order), before every row created since
        assert _pages(reopened, 1000)[0] == [("p", "a"), ("p", "b"), ("p", "0")]
    finally:
        reopened.close()
    with sqlite3.connect(tmp_path / DB_FILE) as db:  # the index was built on opening
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT pk FROM entity_rows WHERE tid = 1 AND "
            "(created, pk, rk) > (0, x'', x'') ORDER BY created, pk, rk LIMIT 5"
        ).fetchall()
    assert "entity_rows_created" in str(plan)
    assert "TEMP B-TREE" not in str(plan)
