"""Entity objects (``azt.Entity``, ``azt.DynamicEntity``) in transactions built on add-time
encoding: the object's entity is taken once and encoded once when its operation is added
(``TableBatch``, ``BatchWriter``), and the object gets the new ETag and Timestamp only
after its transaction succeeds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt import (
    BatchOperation,
    BatchWriteError,
    DynamicEntity,
    Entity,
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


class Film(Entity):
    """A declarative entity used by these tests."""

    rating: Prop[float] = prop(default=0.0)
    title: Prop[str | None] = prop(name="Title", default=None)


@pytest.fixture
async def table() -> AsyncIterator[TableClient]:
    async with (
        StubServer() as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        yield await service.create_table("objects")


class Counts:
    """Counts the takings of ``Film`` objects' entities (``__azt_entity__``, and
    ``__azt_encoded__``, which takes it and encodes its body in one call) and entity
    encodings (the general encoder's, the per-shape writers' that checked and encoded in
    one pass, and ``__azt_encoded__``'s), by RowKey."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.taken: list[str] = []
        self.encoded: list[str] = []
        real_take = Film.__azt_entity__
        real_encoded = Film.__azt_encoded__
        real_encode = wire_json.encode_entity
        real_valid = writers.encode_valid

        def encode_valid(entity: Any) -> bytes | None:
            body = real_valid(entity)
            if body is not None:
                self.encoded.append(entity["RowKey"])
            return body

        def take(obj: Film) -> Any:
            self.taken.append(obj.RowKey)
            return real_take(obj)

        def encode(entity: Any, **kwargs: Any) -> bytes:
            self.encoded.append(entity["RowKey"])
            return real_encode(entity, **kwargs)

        def encoded(obj: Film) -> Any:
            found = real_encoded(obj)
            if found is not None:
                self.taken.append(obj.RowKey)
                if found[3] is not None:
                    self.encoded.append(obj.RowKey)
            return found

        monkeypatch.setattr(Film, "__azt_entity__", take)
        monkeypatch.setattr(Film, "__azt_encoded__", encoded)
        monkeypatch.setattr(wire_json, "encode_entity", encode)
        monkeypatch.setattr(batch_module, "encode_valid", encode_valid)
        monkeypatch.setattr(base_module, "encode_valid", encode_valid)


async def test_batch_writer_writes_back_etag_and_timestamp(table: TableClient) -> None:
    keep = Film("Action", "Heat", rating=1.0)
    gone = Film("Drama", "Gone")
    await table.insert_entity(keep)
    await table.insert_entity(gone)
    old_etag = keep.ETag
    new = Film("Action", "Ronin", rating=4.0, title="Ronin")
    dyn = DynamicEntity("Drama", "Alien", Year=1979)
    async with table.batch_writer() as writer:
        await writer.insert(new)
        keep.rating = 2.0
        await writer.update(keep, UpdateMode.REPLACE)  # If-Match: keep.ETag
        await writer.upsert(dyn)
        await writer.delete(gone)
        assert new.ETag is None  # nothing sent yet
        assert keep.ETag == old_etag
    outcomes = {o.row_key: o for o in writer.results}
    assert all(o.ok for o in outcomes.values())
    assert writer.transactions == 2  # one per partition
    for obj in (new, keep, dyn):
        result = outcomes[obj.RowKey].result
        assert result is not None
        assert obj.ETag == result.etag is not None
        assert obj.Timestamp == result.timestamp is not None
        stored = await table.get_entity(obj.PartitionKey, obj.RowKey)
        assert stored.metadata.etag == obj.ETag
        assert stored.metadata.timestamp == obj.Timestamp
    assert keep.ETag != old_etag
    assert (await table.get_entity("Action", "Ronin"))["Title"] == "Ronin"
    assert not await table.query_entities("RowKey eq 'Gone'").to_list()


async def test_batch_writer_writes_nothing_back_to_a_failed_transactions_objects(
    table: TableClient,
) -> None:
    film = Film("Action", "Heat")
    await table.insert_entity(film)
    stale = film.ETag
    await table.upsert_entity(Film("Action", "Heat", rating=3.0))
    other = Film("Action", "Ronin")

    async def write() -> None:
        async with table.batch_writer() as writer:
            await writer.insert(other)
            await writer.update(film)  # If-Match: the stale ETag

    with pytest.raises(BatchWriteError) as info:
        await write()
    assert [f.row_key for f in info.value.failures] == ["Ronin", "Heat"]
    assert [f.caused_failure for f in info.value.failures] == [False, True]
    assert other.ETag is None
    assert other.Timestamp is None
    assert film.ETag == stale


async def test_an_objects_batch_operation_is_taken_and_encoded_once(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = Counts(monkeypatch)
    batch = table.batch()
    film = Film("Action", "Heat", rating=4.5)
    batch.create(film)
    batch.upsert(Film("Action", "Ronin"), UpdateMode.REPLACE)
    size = batch.size
    assert counts.taken == counts.encoded == ["Heat", "Ronin"]
    film.rating = 1.0  # taken when added: the transaction sends what was added
    results = await table.submit_transaction(batch)
    assert counts.taken == counts.encoded == ["Heat", "Ronin"]  # submitting re-encodes nothing
    assert batch.size == size
    assert film.ETag == results[0].etag is not None
    assert (await table.get_entity("Action", "Heat"))["rating"] == 4.5


async def test_a_batch_writers_object_is_taken_and_encoded_once(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = Counts(monkeypatch)
    films = [Film("p", f"{i:03d}", title="x" * 1000) for i in range(150)]
    async with table.batch_writer() as writer:
        for film in films:
            await writer.upsert(film)
    assert writer.transactions == 2
    expected = [f"{i:03d}" for i in range(150)]
    assert counts.taken == expected
    assert counts.encoded == expected
    assert all(f.ETag is not None and f.Timestamp is not None for f in films)


async def test_add_takes_operations_built_from_objects_or_holding_them(
    table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = table.batch()
    heat = Film("Action", "Heat")
    built.create(heat)
    counts = Counts(monkeypatch)
    batch = table.batch()
    batch.add(built.operations[0])  # keeps its source; its entity is not taken again
    ronin = Film("Action", "Ronin")
    batch.add(BatchOperation("upsert", ronin, mode=UpdateMode.MERGE))  # type: ignore[arg-type]
    assert counts.taken == ["Ronin"]
    assert counts.encoded == ["Heat", "Ronin"]
    assert batch.operations[0].source is heat
    assert batch.operations[1].source is ronin
    results = await table.submit_transaction(batch)
    assert heat.ETag == results[0].etag is not None
    assert ronin.ETag == results[1].etag is not None
    assert counts.encoded == ["Heat", "Ronin"]


async def test_batch_writer_delete_takes_keys_or_one_entity(table: TableClient) -> None:
    async with table.batch_writer() as writer:
        with pytest.raises(azt.ValidationError, match="one entity"):
            await writer.delete(Film("a", "b"), "b")  # type: ignore[call-overload]
        with pytest.raises(azt.ValidationError, match="row_key"):
            await writer.delete("a")  # type: ignore[call-overload]
        with pytest.raises(azt.ValidationError, match="mapping or an entity object"):
            await writer.insert(42)  # type: ignore[arg-type]
    assert writer.results == []
