"""The Cosmos DB Table API's 2 MB transaction limit goes through the exact-size batch
design: ``table.batch()`` and the batch writer cut at 2 MB exactly (a body of 2,000,000
bytes is sent, one byte more is not), and an over-limit :class:`azt.TableBatch` is
refused before anything is sent, also one built for Storage and submitted to Cosmos.

The stub's Cosmos flavour refuses a body over 2 MB (413), so what it accepts was within
the limit; the sizes are also checked here from the bodies actually sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import azt
from azt import Flavor, TableClient, TableServiceClient
from azt._core.transport import MockTransport
from azt._core.wire.batch import MAX_BATCH_BYTES
from azt_server_stub import StubServer

from .test_cosmos import COSMOS_URL, CREDENTIAL, never_called

COSMOS_MAX = Flavor.COSMOS.limits.max_batch_bytes


def _big(pk: str, rk: str, chars: int = 30_000) -> dict[str, Any]:
    """About 7 x ``chars`` bytes encoded (ASCII strings)."""
    return {"PartitionKey": pk, "RowKey": rk, **{f"S{j}": "x" * chars for j in range(7)}}


@pytest.fixture
async def cosmos_table() -> AsyncIterator[TableClient]:
    async with (
        StubServer(flavor="cosmos") as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, flavor=Flavor.COSMOS, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        yield await service.create_table("limits")


def test_the_cosmos_limit_is_2_mb() -> None:
    assert COSMOS_MAX == 2_000_000
    assert Flavor.STORAGE.limits.max_batch_bytes == MAX_BATCH_BYTES


def _padded(
    table: TableClient, base: list[dict[str, Any]], target: int, pk: str = "p"
) -> dict[str, Any]:
    """An entity that brings the transaction of creating ``base`` and it to exactly
    ``target`` bytes."""

    def pad_entity(pad: int) -> dict[str, Any]:
        quotient, rest = divmod(pad, 16)
        props = {f"P{j}": "y" * (quotient + (1 if j < rest else 0)) for j in range(16)}
        return {"PartitionKey": pk, "RowKey": "pad", **props}

    def size(pad: int) -> int:
        batch = table.batch()
        for entity in [*base, pad_entity(pad)]:
            batch.create(entity)
        assert batch.size is not None
        return batch.size

    pad = 1_000
    for _ in range(3):  # one byte per character, but Content-Length may gain a digit
        pad += target - size(pad)
    assert size(pad) == target
    return pad_entity(pad)


async def test_a_cosmos_batch_of_exactly_2_mb_is_sent_and_one_byte_more_is_refused(
    cosmos_table: TableClient,
) -> None:
    base = [_big("p", str(i)) for i in range(9)]  # ~1.9 MB
    for extra, sent in ((1, False), (0, True)):
        batch = cosmos_table.batch()
        for entity in [*base, _padded(cosmos_table, base, COSMOS_MAX + extra)]:
            batch.create(entity)
        assert batch.size == COSMOS_MAX + extra
        if sent:
            results = await cosmos_table.submit_transaction(batch)
            assert len(results) == 10
        else:
            with pytest.raises(azt.BatchValidationError, match="at most 2000000 \\(2 MB\\)"):
                await cosmos_table.submit_transaction(batch)
            assert await cosmos_table.list_entities().to_list() == []  # nothing was sent
    assert len(await cosmos_table.list_entities().to_list()) == 10


async def test_an_over_limit_batch_is_refused_before_sending() -> None:
    transport = MockTransport(never_called)
    async with TableServiceClient(COSMOS_URL, CREDENTIAL, transport=transport) as service:
        table = service.get_table_client("ttt")
        # 15 x ~210 KB: about 3.2 MB, within Storage's 4 MiB but not Cosmos's 2 MB
        entities = [_big("p", str(i)) for i in range(15)]
        bound = table.batch()
        for entity in entities:
            bound.create(entity)
        assert bound.size is not None
        assert COSMOS_MAX < bound.size < MAX_BATCH_BYTES
        # built for Storage (checked against Storage's limits, where it fits): checked
        # again against Cosmos's when submitted to a Cosmos client
        storage_batch = azt.TableBatch("ttt")
        for entity in entities:
            storage_batch.create(entity)
        assert storage_batch.flavor is Flavor.STORAGE
        for batch in (bound, storage_batch, list(storage_batch.operations)):
            with pytest.raises(azt.BatchValidationError, match="at most 2000000"):
                await table.submit_transaction(batch)
    assert transport.requests == []


class Spy:
    """Records each transaction a writer submits: (operation count, exact body size)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[tuple[int, int]] = []
        real = TableClient.submit_transaction

        async def submit(client: TableClient, batch: Any) -> Any:
            assert batch.size is not None
            self.sent.append((len(batch), batch.size))
            return await real(client, batch)

        monkeypatch.setattr(TableClient, "submit_transaction", submit)


async def test_the_batch_writer_cuts_at_2_mb_exactly(
    cosmos_table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    entities = [_big("big", f"{i:03d}") for i in range(45)]
    async with cosmos_table.batch_writer() as writer:
        for entity in entities:
            await writer.insert(entity)
    counts = [count for count, _ in spy.sent]
    sizes = [size for _, size in spy.sent]
    assert counts == [9, 9, 9, 9, 9]  # ~210 KB each: 9 fit 2 MB, 10 do not (Storage: 19)
    assert all(size <= COSMOS_MAX for size in sizes)
    # each full transaction ended because the next operation would have passed 2 MB
    probe = cosmos_table.batch()
    for entity in entities[:10]:
        probe.create(entity)
    assert probe.size is not None
    assert probe.size > COSMOS_MAX
    assert all(r.ok for r in writer.results)
    assert len(await cosmos_table.list_entities().to_list()) == 45


async def test_the_batch_writer_lands_exactly_on_2_mb(
    cosmos_table: TableClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    for extra, pk in ((0, "p"), (1, "q")):
        spy.sent.clear()
        base = [_big(pk, str(i)) for i in range(9)]
        entities = [*base, _padded(cosmos_table, base, COSMOS_MAX + extra, pk)]
        async with cosmos_table.batch_writer() as writer:
            for entity in entities:
                await writer.insert(entity)
        if extra == 0:
            assert spy.sent == [(10, COSMOS_MAX)]  # one transaction of exactly 2 MB
        else:
            assert [count for count, _ in spy.sent] == [9, 1]
            assert all(size < COSMOS_MAX for _, size in spy.sent)
        assert all(r.ok for r in writer.results)
