"""Writes (insert, update, upsert; and the operations of a transaction, which the batch
writer and the context build too) of entity objects and dicts take the per-shape
writers (``encode_valid``: checked and encoded in one pass) and send what the general path
(``check_entity`` then ``encode_entity``) stores: the same entities, the same stored types
(the writers' bytes against the general encoder's: tests/client/test_wire_json_fast_paths.py);
anything a writer refuses still raises the general path's error."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

import azt
from azt import (
    BatchOperation,
    Entity,
    Int64,
    Prop,
    TableClient,
    TableServiceClient,
    UpdateMode,
    prop,
)
from azt._core import base as base_module
from azt._core import batch as batch_module
from azt._core.wire import json as wire_json
from azt._core.wire import writers
from azt_server_stub import StubServer


class Reading(Entity):
    """Every plain kind the writers know, an Int64 with a small value among them."""

    name: Prop[str] = prop(default="")
    count: Prop[int] = prop(default=0)
    big: Prop[Int64] = prop(default=0)
    score: Prop[float] = prop(default=0.0)
    ok: Prop[bool] = prop(default=False)
    when: Prop[datetime | None] = prop(default=None)
    id: Prop[uuid.UUID | None] = prop(default=None)
    raw: Prop[bytes | None] = prop(default=None)


@pytest.fixture
async def table() -> AsyncIterator[TableClient]:
    async with (
        StubServer() as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        yield await service.create_table("bodies")


class Bodies:
    """The bodies the writers encoded (the per-shape writers of dicts and ``TableEntity``
    objects, and the generated ``__azt_encoded__`` of entity classes), and the entities the
    general encoder encoded; ``writers_on=False`` turns both writers off."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, *, writers_on: bool, module: Any = None
    ) -> None:
        self.by_writer: list[bytes] = []
        self.general: list[str] = []
        real_valid = writers.encode_valid
        real_encode = wire_json.encode_entity
        real_encoded = Entity.__azt_encoded__

        def encode_valid(entity: Any) -> bytes | None:
            body = real_valid(entity) if writers_on else None
            if body is not None:
                self.by_writer.append(body)
            return body

        def encode(entity: Any, **kwargs: Any) -> bytes:
            self.general.append(entity["RowKey"])
            return real_encode(entity, **kwargs)

        def encoded(obj: Any) -> Any:
            found = real_encoded(obj) if writers_on else None
            if found is not None and found[3] is not None:
                self.by_writer.append(found[3])
            return found

        if module is not None:
            monkeypatch.setattr(module, "encode_valid", encode_valid)
        monkeypatch.setattr(base_module, "encode_valid", encode_valid)
        monkeypatch.setattr(Entity, "__azt_encoded__", encoded)
        monkeypatch.setattr(wire_json, "encode_entity", encode)
        # Writers are remembered by shape and typed by the first value they met: start from
        # none, so what an earlier test wrote under the same names cannot decide the path.
        monkeypatch.setattr(writers, "_writers", {})
        monkeypatch.setattr(writers, "_typed_writers", {})


def _reading(rk: str, n: int) -> Reading:
    return Reading(
        "p",
        rk,
        name=f"n{n}",
        count=n,
        big=n,  # small: still sent as an Int64
        score=n / 4,
        ok=n % 2 == 0,
        when=datetime(2024, 1, 2, 3, 4, 5, n, tzinfo=UTC),
        id=uuid.UUID(int=n),
        raw=bytes([n]),
    )


async def _write_all(table: TableClient, rk: str) -> dict[str, Any]:
    obj = _reading(rk, 1)
    await table.insert_entity(obj)
    obj.count = 2
    obj.big = 2**40
    await table.update_entity(obj, UpdateMode.REPLACE)
    obj.name = "merged"
    await table.update_entity(obj)  # MERGE, If-Match: its ETag
    await table.upsert_entity(obj, UpdateMode.REPLACE)
    plain = {"PartitionKey": "p", "RowKey": rk + "-d", "n": 5, "x": 0.5}
    await table.upsert_entity(plain)
    await table.update_entity(dict(plain, n=6), UpdateMode.MERGE)
    stored = await table.get_entity("p", rk)
    stored_plain = await table.get_entity("p", rk + "-d")
    del stored["RowKey"], stored_plain["RowKey"]
    return {
        "entity": dict(stored),
        "types": stored.edm_types,
        "plain": dict(stored_plain),
        "plain types": stored_plain.edm_types,
    }


async def test_writes_take_the_writers_and_store_what_the_general_path_stores(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        general = Bodies(m, writers_on=False)
        old = await _write_all(table, "old")
    assert general.by_writer == []
    assert general.general == ["old", "old", "old", "old", "old-d", "old-d"]
    fast = Bodies(monkeypatch, writers_on=True)
    new = await _write_all(table, "new")  # the same entities under other RowKeys
    assert fast.general == []
    assert len(fast.by_writer) == 6
    assert new == old
    assert b'"big@odata.type":"Edm.Int64","big":"1"' in fast.by_writer[0]


async def test_a_refused_entity_takes_the_general_path_and_its_error(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    bodies = Bodies(monkeypatch, writers_on=True)
    with pytest.raises(azt.ValidationError, match="RowKey"):
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "a/b", "n": 1})
    with pytest.raises(azt.ValidationError, match="64 KiB"):
        await table.update_entity({"PartitionKey": "p", "RowKey": "r", "s": "x" * 40000})
    assert bodies.by_writer == []


def _batch_requests(table: TableClient) -> list[bytes]:
    """Every kind of transaction operation, of entity objects and dicts, as encoded."""
    batch = table.batch()
    batch.create(_reading("c", 1))
    batch.create({"PartitionKey": "p", "RowKey": "cd", "n": 1})
    old = _reading("u", 2)
    old.ETag = "W/\"datetime'2024-01-01T00%3A00%3A00Z'\""
    batch.update(old, UpdateMode.REPLACE)
    batch.update({"PartitionKey": "p", "RowKey": "ud", "x": 0.25}, etag="*")
    batch.upsert(_reading("s", 3))
    batch.upsert({"PartitionKey": "p", "RowKey": "sd", "b": True}, UpdateMode.REPLACE)
    batch.add(BatchOperation("create", _reading("a1", 4).to_entity()))
    batch.add(
        BatchOperation("update", {"PartitionKey": "p", "RowKey": "a2"}, mode=UpdateMode.MERGE)
    )
    obj: Any = _reading("a3", 5)  # an entity object as the operation's entity (documented)
    batch.add(BatchOperation("upsert", obj, mode=UpdateMode.REPLACE))
    batch.delete("p", "gone")
    assert batch._changeset is not None
    return list(batch._changeset._requests)


async def test_transaction_operations_take_the_writers_and_encode_alike(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as m:
        general = Bodies(m, writers_on=False, module=batch_module)
        old = _batch_requests(table)
    assert general.by_writer == []
    fast = Bodies(monkeypatch, writers_on=True, module=batch_module)
    new = _batch_requests(table)
    assert new == old
    assert fast.general == []  # every entity above checked and encoded by a writer
    assert len(fast.by_writer) == 9
