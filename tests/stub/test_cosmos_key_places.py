"""The Cosmos flavour writes ``PartitionKey`` and ``RowKey`` where the client sent them among
the properties (issue 35, the conformance suite's last kind of difference, ``order``): an
insert, a replace and an upsert take the places of their body, a merge keeps the stored
places, and every answer carrying the entity writes them there (insert echoes, point reads,
query pages, change-set answers; a ``$select`` stays in its own order), also after a restart
of the durable store. Storage writes the keys first, as before.

Recordings (``Azure/azure-sdk-for-python``, ``sdk/tables/azure-data-tables/tests/recordings/``):
``test_table_entity_cosmos.test_get_entity_full_metadata`` #1-2 and
``test_query_entities_with_top_and_next`` #2-9 (2020: the client sent ``PartitionKey`` after
``binary`` and ``RowKey`` after ``clsid``, and the insert echo, the point read and every
query page wrote them there, annotations of keys ignored); ``test_table_entity_cosmos_async.
test_merge_entity`` #1-3 (2021: a merge keeps the stored members in place and adds new
names after them); ``test_table_entity_cosmos.test_update_entity`` #2-3 (2020: a replace is
written in the order of its body). docs/cosmos.md, "Decisions from recorded traffic".
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import azt_server_stub.handlers.batch as hb
from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer
from azt_server_stub._store import DB_FILE
from azt_server_stub.backend import Backend, WriteOp
from azt_server_stub.formats.json import EntityWriter
from azt_server_stub.formats.json_feed import entity_texts
from azt_server_stub.formats.json_form import COSMOS_FORM, STORAGE_FORM
from azt_server_stub.formats.negotiation import Fmt
from azt_server_stub.model import Edm, Entity, key_places, placed_items
from azt_server_stub.validation import COSMOS_TABLE_NAMES
from azt_server_stub.writes import apply_write

from .conftest import JSON_FULL, JSON_MINIMAL, JSON_NONE, RawClient, make_table
from .test_http_batch import BATCH_CT, envelope, parts_of, request_part

JSON_HEADERS = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
ENTITY = "/mytable(PartitionKey='p',RowKey='r')"
#: The recorded client's shape: PartitionKey after ``binary``, RowKey (annotated, its
#: annotation sent before PartitionKey's value) after ``ratio``, annotations before values.
RECORDED_SHAPE = {
    "binary": "YmluYXJ5",
    "binary@odata.type": "Edm.Binary",
    "PartitionKey": "p",
    "RowKey@odata.type": "Edm.String",
    "ratio": 3.1,
    "RowKey": "r",
    "age": 39,
}
#: A plain body (no annotation: the stub's one-pass conversion) with the keys apart.
PLAIN_SHAPE = {"zeta": 1, "PartitionKey": "p", "alpha": "a", "RowKey": "r", "Mid": True}


def _names(row: dict[str, Any]) -> list[str]:
    """A JSON entity's members without ``odata.*`` and annotations: values, in order."""
    return [n for n in row if not n.startswith("odata.") and "@" not in n]


def _values(sent: dict[str, Any]) -> list[str]:
    return [n for n in sent if "@" not in n]


async def _get(raw: RawClient, path: str, accept: str = JSON_MINIMAL, **query: str) -> Any:
    r = await raw.request("GET", path, query=query, headers={"Accept": accept})
    assert r.status == 200, r.body
    return json.loads(r.body)


async def _write(
    raw: RawClient, method: str, body: dict[str, Any], path: str = ENTITY, **headers: str
) -> None:
    """A write answered 204 (a merge on Cosmos: ``POST`` + ``X-HTTP-Method: MERGE``)."""
    if method == "MERGE":
        method, headers = "POST", {**headers, "X-HTTP-Method": "MERGE"}
    sent = {**JSON_HEADERS, **headers}
    r = await raw.request(method, path, headers=sent, body=json.dumps(body))
    assert r.status == 204, r.body


# -- the places ----------------------------------------------------------------------------------


def test_every_order_of_keys_and_properties_comes_back_as_sent() -> None:
    for names in itertools.permutations(["PartitionKey", "RowKey", "a", "b", "c"]):
        props = {
            n: (Edm.INT32, i) for i, n in enumerate(names) if n not in ("PartitionKey", "RowKey")
        }
        entity = Entity("p", "r", 0, props, keys_at=key_places(names, props))
        assert [n for n, _ in placed_items(entity)] == list(names)
        first = names.index("PartitionKey") < names.index("RowKey")
        assert (entity.keys_at == 0) == (first and names.index("RowKey") == 1)


def test_only_stored_properties_count_for_the_places() -> None:
    # annotations, odata members, Timestamp and null values are not stored properties
    names = ["odata.etag", "a@odata.type", "a", "n", "Timestamp", "PartitionKey", "b", "RowKey"]
    props = {"a": (Edm.INT64, 1), "b": (Edm.INT32, 2)}
    entity = Entity("p", "r", 0, props, keys_at=key_places(names, props))
    assert [n for n, _ in placed_items(entity)] == ["a", "PartitionKey", "b", "RowKey"]
    # a body without both keys (an update's keys come from its URL): the keys go first
    assert key_places(["a", "RowKey", "b"], props) == 0
    assert key_places(["a", "b"], props) == 0


def test_places_beyond_the_properties_stay_last() -> None:
    # (a stored entity has at least as many properties as its places count; this is the
    # bound the writer keeps anyway)
    entity = Entity(
        "p",
        "r",
        0,
        {"a": (Edm.INT32, 1)},
        keys_at=key_places(["a", "b", "RowKey", "c", "PartitionKey"], {"a", "b", "c"}),
    )
    assert [n for n, _ in placed_items(entity)] == ["a", "RowKey", "PartitionKey"]


def test_storage_writes_the_keys_first_whatever_an_entity_remembers() -> None:
    # a durable store written by a Cosmos stub and opened by a Storage one
    props = {"a": (Edm.INT32, 1), "b": (Edm.INT32, 2)}
    entity = Entity(
        "p", "r", 0, props, keys_at=key_places(["a", "PartitionKey", "b", "RowKey"], props)
    )
    for fmt in (Fmt.MINIMAL, Fmt.NOMETADATA, Fmt.FULL):
        row = EntityWriter(fmt, "http://h/acct", "acct", "t", form=STORAGE_FORM).entity(entity)
        assert _names(row) == ["PartitionKey", "RowKey", "Timestamp", "a", "b"]
        row = EntityWriter(fmt, "http://h/acct", "acct", "t", form=COSMOS_FORM).entity(entity)
        assert _names(row) == ["a", "PartitionKey", "b", "RowKey", "Timestamp"]
    for meta in (True, False):
        (text,) = entity_texts([entity], meta=meta, fallback=lambda e: "dict path")
        assert _names(json.loads(text)) == ["PartitionKey", "RowKey", "Timestamp", "a", "b"]
        (text,) = entity_texts(
            [entity],
            meta=meta,
            fallback=lambda e: "dict path",
            fixed=True,
            timestamp_last=True,
            key_places=True,
        )
        # the keys where they were sent, as the dict path writes them
        fmt = Fmt.MINIMAL if meta else Fmt.NOMETADATA
        row = EntityWriter(fmt, "http://h/acct", "acct", "t", form=COSMOS_FORM).entity(entity)
        assert text == json.dumps(row, separators=(",", ":"))
        assert _names(json.loads(text)) == ["a", "PartitionKey", "b", "RowKey", "Timestamp"]
    # and a merge there (properties in name order) puts the keys first again
    merged = apply_write(
        WriteOp("merge", "p", "r", {"c": (Edm.INT32, 3)}, "*"), entity, 5, sorted_updates=True
    )
    assert merged is not None
    assert merged.keys_at == 0
    merged = apply_write(WriteOp("merge", "p", "r", {"c": (Edm.INT32, 3)}, "*"), entity, 5)
    assert merged is not None
    assert merged.keys_at == entity.keys_at


# -- inserts, reads, queries -------------------------------------------------------------------


@pytest.mark.parametrize("sent", [RECORDED_SHAPE, PLAIN_SHAPE], ids=["recorded", "plain"])
async def test_cosmos_writes_the_keys_where_an_insert_sent_them(
    cosmos: RawClient, storage: RawClient, sent: dict[str, Any]
) -> None:
    values = _values(sent)
    props = [n for n in values if n not in ("PartitionKey", "RowKey")]
    for raw in (cosmos, storage):
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(sent))
        assert r.status == 201, r.body
        expected = (
            [*values, "Timestamp"]
            if raw is cosmos
            else ["PartitionKey", "RowKey", "Timestamp", *props]
        )
        assert _names(json.loads(r.body)) == expected  # the insert echo
        for accept in (JSON_MINIMAL, JSON_NONE, JSON_FULL):
            assert _names(await _get(raw, ENTITY, accept)) == expected  # the point read
            page = await _get(raw, "/mytable()", accept)
            assert [_names(row) for row in page["value"]] == [expected]  # a query page
    full = await _get(cosmos, ENTITY, JSON_FULL)
    assert "PartitionKey@odata.type" not in full  # (nor in the recording)
    assert "RowKey@odata.type" not in full
    assert (full["PartitionKey"], full["RowKey"]) == ("p", "r")


async def test_cosmos_query_pages_mix_placed_and_plain_rows_in_creation_order(
    cosmos: RawClient,
) -> None:
    rows = [
        {"PartitionKey": "p", "RowKey": "1", "a": 1},
        {"a": 2, "PartitionKey": "p", "b": 2, "RowKey": "2"},
        {"RowKey": "3", "PartitionKey": "p", "a": 3},
        {"PartitionKey": "p", "a": 4, "RowKey": "4"},
    ]
    for row in rows:
        r = await cosmos.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(row))
        assert r.status == 201, r.body
    for accept in (JSON_MINIMAL, JSON_NONE, JSON_FULL):
        for _ in range(2):  # the second time from the remembered texts
            page = await _get(cosmos, "/mytable()", accept)
            assert [_names(r) for r in page["value"]] == [[*row, "Timestamp"] for row in rows]
    page = await _get(cosmos, "/mytable()", JSON_MINIMAL, **{"$top": "2"})
    assert [_names(r) for r in page["value"]] == [[*row, "Timestamp"] for row in rows[:2]]


async def test_cosmos_select_keeps_its_own_order(cosmos: RawClient) -> None:
    # a $select lists the keys where it names them (the Cosmos flavour's projection order,
    # REC 8), whatever the places the entity was sent with
    await _write(cosmos, "PUT", PLAIN_SHAPE)  # an upsert: the body's places
    assert _names(await _get(cosmos, ENTITY)) == [*PLAIN_SHAPE, "Timestamp"]
    select = {"$select": "RowKey,Mid,PartitionKey,zeta"}
    assert _names(await _get(cosmos, ENTITY, **select)) == ["RowKey", "Mid", "PartitionKey", "zeta"]
    page = await _get(cosmos, "/mytable()", **select)
    assert [_names(r) for r in page["value"]] == [["RowKey", "Mid", "PartitionKey", "zeta"]]


# -- replaces, merges, upserts -----------------------------------------------------------------


STORED = {"a": 1, "PartitionKey": "p", "b": 2, "RowKey": "r", "c": 3}


@pytest.mark.parametrize("if_match", [{"If-Match": "*"}, {}], ids=["merge", "insert-or-merge"])
@pytest.mark.parametrize(
    "body",
    [
        {"PartitionKey": "p", "RowKey": "r", "c": 30, "d": 4, "a": 10},  # keys first
        {"d": 4, "RowKey": "r", "a": 10, "PartitionKey": "p", "c": 30},  # keys elsewhere
        {"c": 30, "d": 4, "a": 10},  # no keys
    ],
    ids=["keys-first", "keys-elsewhere", "no-keys"],
)
async def test_cosmos_merge_keeps_the_stored_places(
    cosmos: RawClient, if_match: dict[str, str], body: dict[str, Any]
) -> None:
    # test_table_entity_cosmos_async.test_merge_entity #1-3: the stored members keep their
    # places (the keys are stored members), new names go after them
    await _write(cosmos, "PUT", STORED)
    await _write(cosmos, "MERGE", body, **if_match)
    got = await _get(cosmos, ENTITY)
    assert _names(got) == ["a", "PartitionKey", "b", "RowKey", "c", "d", "Timestamp"]
    assert (got["a"], got["c"], got["d"]) == (10, 30, 4)


@pytest.mark.parametrize("if_match", [{"If-Match": "*"}, {}], ids=["replace", "insert-or-replace"])
async def test_cosmos_replace_takes_the_places_of_its_body(
    cosmos: RawClient, if_match: dict[str, str]
) -> None:
    # test_table_entity_cosmos.test_update_entity #2-3: a replace is written in its body's order
    await _write(cosmos, "PUT", STORED)
    body = {"x": 1, "RowKey": "r", "y": 2, "PartitionKey": "p"}
    await _write(cosmos, "PUT", body, **if_match)
    assert _names(await _get(cosmos, ENTITY)) == ["x", "RowKey", "y", "PartitionKey", "Timestamp"]
    await _write(cosmos, "PUT", {"y": 3, "x": 4}, **if_match)  # no keys in the body: first
    assert _names(await _get(cosmos, ENTITY)) == ["PartitionKey", "RowKey", "y", "x", "Timestamp"]


@pytest.mark.parametrize("method", ["PUT", "MERGE"])
async def test_cosmos_upsert_of_a_new_entity_takes_the_places_of_its_body(
    cosmos: RawClient, storage: RawClient, method: str
) -> None:
    await _write(cosmos, method, STORED)
    assert _names(await _get(cosmos, ENTITY)) == [*STORED, "Timestamp"]
    wire = "MERGE" if method == "MERGE" else "PUT"
    r = await storage.request(wire, ENTITY, headers=JSON_HEADERS, body=json.dumps(STORED))
    assert r.status == 204, r.body
    assert _names(await _get(storage, ENTITY)) == [
        "PartitionKey",
        "RowKey",
        "Timestamp",
        "a",
        "b",
        "c",
    ]


# -- change sets -------------------------------------------------------------------------------


@pytest.mark.parametrize("plain", [True, False], ids=["one-pass", "general"])
async def test_cosmos_change_set_parts_keep_the_places(
    cosmos: RawClient, monkeypatch: pytest.MonkeyPatch, plain: bool
) -> None:
    monkeypatch.setattr(hb, "PLAIN_CHANGESETS", plain)
    await _write(
        cosmos, "PUT", {**STORED, "RowKey": "m"}, path="/mytable(PartitionKey='p',RowKey='m')"
    )
    base = "http://127.0.0.1/devstoreaccount1/mytable"
    inserted = {"a": 1, "PartitionKey": "p", "RowKey": "i", "b": 2}
    replaced = {"x": 1, "RowKey": "u", "PartitionKey": "p"}
    merge = {"PartitionKey": "p", "RowKey": "m", "d": 4}
    parts = [
        request_part("POST", base, json.dumps(inserted)),
        request_part("PUT", f"{base}(PartitionKey='p',RowKey='u')", json.dumps(replaced)),
        request_part(
            "POST",
            f"{base}(PartitionKey='p',RowKey='m')",
            json.dumps(merge),
            {"X-HTTP-Method": "MERGE", "If-Match": "*"},
        ),
    ]
    r = await cosmos.request(
        "POST", "/$batch", headers={"Content-Type": BATCH_CT}, body=envelope(parts)
    )
    assert r.status == 202, r.body
    answers = parts_of(r.body)
    assert [status for status, _, _ in answers] == [201, 204, 204]
    assert _names(json.loads(answers[0][2])) == [*inserted, "Timestamp"]  # the insert echo
    page = await _get(cosmos, "/mytable()")
    assert [_names(row) for row in page["value"]] == [
        ["a", "PartitionKey", "b", "RowKey", "c", "d", "Timestamp"],  # m, merged
        [*inserted, "Timestamp"],
        [*replaced, "Timestamp"],
    ]


# -- the durable store -------------------------------------------------------------------------


@pytest.fixture
def location(tmp_path: Path) -> Path:
    return tmp_path / "data"


async def _cosmos_on(location: Path) -> AsyncIterator[RawClient]:
    config = StubConfig(location=location)
    async with StubServer(config, flavor="cosmos") as stub, aiohttp.ClientSession() as session:
        yield RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)


async def test_cosmos_places_survive_a_restart_of_the_durable_store(location: Path) -> None:
    async for raw in _cosmos_on(location):
        await make_table(raw)
        await _write(raw, "PUT", STORED)
        second = json.dumps({**PLAIN_SHAPE, "RowKey": "r2"})
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=second)
        assert r.status == 201, r.body
    async for raw in _cosmos_on(location):
        assert _names(await _get(raw, ENTITY)) == [*STORED, "Timestamp"]
        page = await _get(raw, "/mytable()", JSON_NONE)
        assert [_names(row) for row in page["value"]] == [
            [*STORED, "Timestamp"],
            [*PLAIN_SHAPE, "Timestamp"],
        ]
        await _write(raw, "MERGE", {"e": 5}, **{"If-Match": "*"})  # read back from disk, merged
    async for raw in _cosmos_on(location):
        assert _names(await _get(raw, ENTITY)) == [*STORED, "e", "Timestamp"]


def test_a_store_written_before_key_places_opens_with_the_keys_first(location: Path) -> None:
    def backend() -> Backend:
        return Backend(
            location, table_naming=COSMOS_TABLE_NAMES, key_order=False, sorted_updates=False
        )

    placed = key_places(list(STORED), {"a", "b", "c"})
    props = {n: (Edm.INT32, v) for n, v in STORED.items() if isinstance(v, int)}
    old = backend()
    try:
        old.create_table("acct", "t")
        old.write("acct", "t", WriteOp("insert", "p", "r", props, keys_at=placed))
        assert old.get_entity("acct", "t", "p", "r").keys_at == placed
    finally:
        old.close()
    with sqlite3.connect(location / DB_FILE) as db:  # the layout before places were kept
        db.execute("ALTER TABLE entity_rows DROP COLUMN keys_at")
    reopened = backend()
    try:
        assert reopened.get_entity("acct", "t", "p", "r").keys_at == 0  # keys first, as then
        reopened.write("acct", "t", WriteOp("insert", "p", "s", props, keys_at=placed))
        assert reopened.get_entity("acct", "t", "p", "s").keys_at == placed
    finally:
        reopened.close()
    with sqlite3.connect(location / DB_FILE) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(entity_rows)")]
    assert columns[-2:] == ["created", "keys_at"]
