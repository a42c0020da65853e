"""``Query.count()``, ``Query.first_page()``, ``Query.delete()`` and where a query finds its
table (a table client, a service client with the entity class's table or a name), against
the in-process stub."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import pytest

import azt
from azt import DynamicEntity, Entity, Prop, Query, QueryDeleteError, prop
from azt_server_stub import StubServer


class Review(Entity, table="reviews"):
    """An entity class that names its table."""

    stars: Prop[int] = prop(default=0)


class Note(Entity):
    """An entity class that names no table."""

    text: Prop[str] = prop(default="")


class Recorder:
    """A table client wrapper that records each query request's select and lets a test act
    before each transaction (``before_transaction``)."""

    def __init__(self, inner: azt.TableClient) -> None:
        self.inner = inner
        self.selects: list[list[str] | None] = []
        self.transactions: list[int] = []
        self.before_transaction: Any = None

    @property
    def wire_format(self) -> azt.WireFormat:
        return self.inner.wire_format

    @property
    def table_name(self) -> str:
        return self.inner.table_name

    def query_entities(self, filter: str | None = None, **kwargs: Any) -> Any:
        select: Sequence[str] | None = kwargs.get("select")
        self.selects.append(list(select) if select is not None else None)
        return self.inner.query_entities(filter, **kwargs)

    async def submit_transaction(
        self, batch: Iterable[azt.BatchOperation]
    ) -> list[azt.WriteResult]:
        ops = list(batch)
        self.transactions.append(len(ops))
        if self.before_transaction is not None:
            await self.before_transaction()
        return await self.inner.submit_transaction(ops)


@pytest.fixture
async def service() -> AsyncIterator[azt.TableServiceClient]:
    async with StubServer() as stub:
        client = azt.TableServiceClient.from_connection_string(stub.connection_string)
        async with client:
            yield client


@pytest.fixture
async def notes(service: azt.TableServiceClient) -> azt.TableClient:
    """A fresh table with 7 notes in partition A, 3 in B and 2 in C."""
    table = await service.create_table("notes" + uuid.uuid4().hex[:10])
    for pk, n in (("A", 7), ("B", 3), ("C", 2)):
        batch = table.batch()
        for i in range(n):
            batch.create(Note(pk, f"r{i:03}", text=f"{pk}{i}"))
        await table.submit_transaction(batch)
    return table


async def test_count_reads_keys_only_across_pages(notes: azt.TableClient) -> None:
    rec = Recorder(notes)
    assert await Query(Note, rec).page_size(2).count() == 12
    assert len(rec.selects) == 6  # 12 keys, 2 per page
    assert all(s == ["PartitionKey", "RowKey"] for s in rec.selects)
    q = Query(Note, notes)
    assert await q.where(Note.PartitionKey == "A").count() == 7
    assert await q.where(Note.PartitionKey == "A").take(5).count() == 5
    assert await q.where(Note.text == "nothing").count() == 0
    # a fan-out (one sub-query per branch) counts each entity once
    both = q.where((Note.PartitionKey == "A") | (Note.PartitionKey == "C"))
    assert both.explain().kind is azt.PlanKind.MULTI
    assert await both.page_size(3).count() == 9
    assert await Query(DynamicEntity, notes).count() == 12


async def test_first_page_and_resume(notes: azt.TableClient) -> None:
    q = Query(Note, notes).page_size(5)
    page = await q.first_page()
    assert [n.RowKey for n in page.items] == [f"r{i:03}" for i in range(5)]
    assert page.continuation is not None
    seen = list(page.items)
    token: str | None = page.continuation
    while token is not None:
        page = await q.first_page(token)
        seen.extend(page.items)
        token = page.continuation
    assert len(seen) == 12
    assert len({(n.PartitionKey, n.RowKey) for n in seen}) == 12
    empty = await q.where(Note.PartitionKey == "Z").first_page()
    assert empty.items == []
    assert empty.continuation is None
    with pytest.raises(azt.ValidationError):
        await q.first_page("not-a-token")


async def test_delete_dry_run_deletes_nothing(notes: azt.TableClient) -> None:
    rec = Recorder(notes)
    doomed = await Query(Note, rec).where(Note.PartitionKey == "B").delete(dry_run=True)
    assert [n.RowKey for n in doomed] == ["r000", "r001", "r002"]
    assert rec.transactions == []
    assert await Query(Note, notes).count() == 12


async def test_delete_groups_by_partition(notes: azt.TableClient) -> None:
    rec = Recorder(notes)
    q = Query(Note, rec).where(Note.PartitionKey != "C").page_size(4)
    gone = await q.delete()
    assert [(n.PartitionKey, n.RowKey) for n in gone][:2] == [("A", "r000"), ("A", "r001")]
    assert len(gone) == 10
    assert rec.transactions == [7, 3]  # one per partition, across pages
    left = await Query(Note, notes).to_list()
    assert [(n.PartitionKey, n.RowKey) for n in left] == [("C", "r000"), ("C", "r001")]
    assert await Query(Note, notes).take(1).delete() == left[:1]
    assert await Query(Note, notes).count() == 1


async def test_delete_splits_at_100(service: azt.TableServiceClient) -> None:
    table = await service.create_table("big" + uuid.uuid4().hex[:10])
    for start in (0, 100):
        batch = table.batch()
        for i in range(start, min(start + 100, 130)):
            batch.create(Note("P", f"r{i:04}"))
        await table.submit_transaction(batch)
    rec = Recorder(table)
    assert len(await Query(Note, rec).delete()) == 130
    assert rec.transactions == [100, 30]
    assert await Query(Note, table).count() == 0


async def test_delete_is_conditional_and_reports_a_partial_failure(
    notes: azt.TableClient,
) -> None:
    rec = Recorder(notes)

    async def change_c_after_it_was_read() -> None:
        if len(rec.transactions) == 3:  # A and B are deleted; C was read meanwhile
            await notes.upsert_entity(Note("C", "r001", text="changed"))

    rec.before_transaction = change_c_after_it_was_read
    with pytest.raises(QueryDeleteError) as info:
        await Query(Note, rec).delete()
    err = info.value
    assert len(err.deleted) == 10
    assert [(n.PartitionKey, n.RowKey) for n in err.failed] == [("C", "r000"), ("C", "r001")]
    assert isinstance(err.error, azt.TransactionError)
    assert isinstance(err.error.error, azt.PreconditionFailedError)
    left = await Query(Note, notes).to_list()
    assert [(n.RowKey, n.text) for n in left] == [("r000", "C0"), ("r001", "changed")]


async def test_delete_needs_transactions(notes: azt.TableClient) -> None:
    class ReadOnly:
        wire_format = notes.wire_format

        def query_entities(self, *args: Any, **kwargs: Any) -> Any:
            return notes.query_entities(*args, **kwargs)

    with pytest.raises(azt.ValidationError, match="transactions"):
        await Query(Note, ReadOnly()).delete()
    assert len(await Query(Note, ReadOnly()).delete(dry_run=True)) == 12
    with pytest.raises(azt.ValidationError, match="dry_run"):
        await Query(Note, notes).delete(dry_run="yes")  # type: ignore[arg-type]


async def test_table_from_the_entity_class(service: azt.TableServiceClient) -> None:
    reviews = await service.create_table_if_not_exists("reviews")
    assert reviews  # created
    table = service.get_table_client("reviews")
    await table.insert_entity(Review("m", "r1", stars=4))
    q = Query(Review, service)
    assert q.table_name == "reviews"
    assert [r.stars for r in await q.to_list()] == [4]
    assert await q.count() == 1
    assert [r.stars for r in (await q.first_page()).items] == [4]
    assert [r.stars for r in await q.delete(dry_run=True)] == [4]
    assert [r.stars for r in await Query(Review).using(service).to_list()] == [4]
    # an explicit table wins over the class's
    other = await service.create_table("other" + uuid.uuid4().hex[:8])
    assert await Query(Review, other).count() == 0
    assert await Query(Review, other.table_name).using(service).count() == 0
    assert await Query(Review, service).using(other.table_name).count() == 0
    assert Query(Review, other).table_name == other.table_name


async def test_missing_table_is_a_clear_error(service: azt.TableServiceClient) -> None:
    with pytest.raises(azt.ValidationError, match="names none"):
        await Query(Note, service).to_list()
    with pytest.raises(azt.ValidationError, match="no table client"):
        await Query(Review).to_list()
    with pytest.raises(azt.ValidationError, match="no table client"):
        await Query(Review, "reviews").count()
    with pytest.raises(azt.ValidationError, match="TableClient"):
        Query(Note, 42)  # type: ignore[arg-type]
    with pytest.raises(azt.ValidationError, match="non-empty"):
        Query(Note).using("")
