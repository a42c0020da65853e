"""BATCH saves against the Cosmos DB Table API cut transactions at its 2 MB limit, exactly:
as few transactions as the exact encoded sizes allow, none over 2,000,000 bytes, and one
landing on exactly 2,000,000 bytes is sent whole (one byte more makes two).

Runs against the stub's Cosmos flavour (it refuses a body over 2 MB with 413); the
expected transaction counts are computed from the bodies actually sent, as in
``test_batch_sizing``, with the Cosmos limit."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import azt
from azt import Flavor
from azt._core.wire.batch import MAX_BATCH_OPERATIONS
from azt.context import SaveChangesOptions, TableContext
from azt.dynamic import DynamicEntity
from azt_server_stub import StubServer

from .conftest import fresh_name
from .test_batch_sizing import Recording, _parts

COSMOS_MAX = Flavor.COSMOS.limits.max_batch_bytes


@pytest.fixture
async def cosmos_stub() -> AsyncIterator[StubServer]:
    async with StubServer(flavor="cosmos") as server:
        yield server


def _fewest_transactions(envelope: int, sizes: list[int], cap: int) -> int:
    """The fewest in-order transactions the parts fit under ``cap`` bytes (DP over cuts)."""
    n = len(sizes)
    best = [0] + [n + 1] * n
    for end in range(1, n + 1):
        for start in range(end - 1, -1, -1):
            count = end - start
            body = envelope + sum(sizes[start + k] + len(str(k + 1)) for k in range(count))
            if count > MAX_BATCH_OPERATIONS or body > cap:
                break
            best[end] = min(best[end], best[start] + 1)
    return best[n]


async def _save(
    stub: StubServer, entities: list[DynamicEntity], name: str
) -> tuple[Recording, azt.SaveChangesResult, list[azt.TableEntity]]:
    transport = Recording()
    try:
        async with azt.TableServiceClient.from_connection_string(
            stub.connection_string, flavor=Flavor.COSMOS, transport=transport
        ) as service:
            await service.create_table(name)
            ctx = TableContext(service)
            for e in entities:
                ctx.add(name, e)
            result = await ctx.save_changes(SaveChangesOptions.BATCH)
            rows = await service.get_table_client(name).list_entities().to_list()
    finally:
        await transport.aclose()
    return transport, result, rows


async def test_large_entities_take_the_fewest_2_mb_transactions(cosmos_stub: StubServer) -> None:
    entities = [
        DynamicEntity("p", f"{i:03d}", **{f"S{j}": "x" * 30_000 for j in range(7)})
        for i in range(40)
    ]
    transport, result, rows = await _save(cosmos_stub, entities, fresh_name("cosmos"))
    assert result.ok
    assert len(rows) == 40
    bodies = transport.bodies
    assert all(len(body) <= COSMOS_MAX for body in bodies)
    envelopes = set()
    sizes: list[int] = []
    for body in bodies:
        env, parts = _parts(body)
        envelopes.add(env)
        sizes.extend(parts)
    assert len(envelopes) == 1
    assert len(sizes) == 40
    # ~210 KB each: 9 fit a 2 MB body (19 would fit Storage's 4 MiB, in 3 transactions)
    assert len(bodies) == _fewest_transactions(envelopes.pop(), sizes, COSMOS_MAX) == 5
    assert len({r.batch for r in result}) == len(bodies)


async def _exact_entities(stub: StubServer, name: str, target: int) -> list[DynamicEntity]:
    """Ten entities whose single transaction body for table ``name`` (its URL is in every
    part) is exactly ``target`` bytes."""
    base = [
        DynamicEntity("p", str(i), **{f"S{j}": "x" * 30_000 for j in range(7)}) for i in range(9)
    ]

    def pad_entity(pad: int) -> DynamicEntity:
        quotient, rest = divmod(pad, 16)
        props = {f"P{j}": "y" * (quotient + (1 if j < rest else 0)) for j in range(16)}
        return DynamicEntity("p", "pad", **props)

    async with azt.TableServiceClient.from_connection_string(
        stub.connection_string, flavor=Flavor.COSMOS
    ) as service:
        table = service.get_table_client(name)

        def size(pad: int) -> int:
            batch = table.batch()
            for e in [*base, pad_entity(pad)]:
                batch.create(e.to_entity())
            assert batch.size is not None
            return batch.size

        pad = 1_000
        for _ in range(3):  # one byte per character, but Content-Length may gain a digit
            pad += target - size(pad)
        assert size(pad) == target
    return [*base, pad_entity(pad)]


@pytest.mark.parametrize("extra", [0, 1])
async def test_a_transaction_lands_exactly_on_2_mb_and_not_a_byte_over(
    cosmos_stub: StubServer, extra: int
) -> None:
    name = fresh_name("cosmos")
    entities = await _exact_entities(cosmos_stub, name, COSMOS_MAX + extra)
    transport, result, rows = await _save(cosmos_stub, entities, name)
    assert result.ok
    assert len(rows) == 10
    lengths = [len(body) for body in transport.bodies]
    if extra == 0:
        assert lengths == [COSMOS_MAX]  # one transaction of exactly 2,000,000 bytes
    else:
        assert len(lengths) == 2
        assert max(lengths) < COSMOS_MAX
