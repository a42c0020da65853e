"""BATCH saves cut transactions on exact encoded sizes: as few as the sizes allow, never
over 4 MiB, each change encoded once (hardening issue 11.4).

The expected counts are computed here from the bodies actually sent, independently of
the client's sizing code: each body is split at its change set boundary into parts, and
the fewest in-order transactions those parts fit is found by dynamic programming."""

from __future__ import annotations

import re
from typing import Any

import pytest

import azt
import azt._core.wire.json as wire_json
from azt import AiohttpTransport, HttpRequest, HttpResponse, WireFormat
from azt._core.wire.batch import MAX_BATCH_BYTES, MAX_BATCH_OPERATIONS
from azt.context import SaveChangesOptions, TableContext
from azt.dynamic import DynamicEntity
from azt_server_stub import StubServer

from .conftest import fresh_name


class Recording(AiohttpTransport):
    """The real transport, keeping the body of every ``$batch`` request sent."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[bytes] = []

    async def send(self, request: HttpRequest) -> HttpResponse:
        if request.url.split("?")[0].endswith("/$batch") and request.body is not None:
            self.bodies.append(bytes(request.body))
        return await super().send(request)


def _parts(body: bytes) -> tuple[int, list[int]]:
    """``(envelope, part sizes)`` of a change set body; a part's size counts its delimiter
    line and MIME header without the digits of its Content-ID (they depend on position)."""
    changeset = re.search(rb"boundary=(changeset_[0-9a-f-]+)", body)
    assert changeset is not None
    marker = b"--" + changeset.group(1)
    chunks = body.split(marker)[1:-1]  # between the opening and the closing delimiter
    sizes = []
    for i, chunk in enumerate(chunks, start=1):
        assert f"\r\nContent-ID: {i}\r\n".encode() in chunk
        sizes.append(len(marker) + len(chunk) - len(str(i)))
    envelope = len(body) - sum(sizes) - sum(len(str(i)) for i in range(1, len(sizes) + 1))
    return envelope, sizes


def _fewest_transactions(envelope: int, sizes: list[int]) -> int:
    """The fewest in-order transactions the parts fit (DP over cut points)."""
    n = len(sizes)
    best = [0] + [n + 1] * n
    for end in range(1, n + 1):
        for start in range(end - 1, -1, -1):
            count = end - start
            body = envelope + sum(sizes[start + k] + len(str(k + 1)) for k in range(count))
            if count > MAX_BATCH_OPERATIONS or body > MAX_BATCH_BYTES:
                break
            best[end] = min(best[end], best[start] + 1)
    return best[n]


async def _save(
    stub: StubServer,
    wire_format: WireFormat,
    entities: list[DynamicEntity],
    name: str | None = None,
) -> tuple[Recording, azt.SaveChangesResult, list[azt.TableEntity]]:
    transport = Recording()
    name = name or fresh_name("size")
    try:
        async with azt.TableServiceClient.from_connection_string(
            stub.connection_string, wire_format=wire_format, transport=transport
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


# 40 entities of about 210 KB encoded each: ASCII in JSON, CJK in JSON (3 UTF-8 bytes per
# character), '<' in AtomPub (escaped as &lt;).
CASES = {
    "ascii-json": (WireFormat.JSON_MINIMAL, "x", 30_000),
    "cjk-json": (WireFormat.JSON_MINIMAL, "漢", 10_000),
    "lt-atom": (WireFormat.ATOM, "<", 7_500),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_large_entities_take_the_fewest_transactions(stub: StubServer, case: str) -> None:
    wire_format, char, per_property = CASES[case]
    entities = [
        DynamicEntity("p", f"{i:03d}", **{f"S{j}": char * per_property for j in range(7)})
        for i in range(40)
    ]
    transport, result, rows = await _save(stub, wire_format, entities)
    assert result.ok
    assert len(rows) == 40
    assert all(row["S6"] == char * per_property for row in rows)
    bodies = transport.bodies
    assert all(len(body) <= MAX_BATCH_BYTES for body in bodies)
    envelope = set()
    sizes: list[int] = []
    for body in bodies:
        env, parts = _parts(body)
        envelope.add(env)
        sizes.extend(parts)
    assert len(envelope) == 1
    assert len(sizes) == 40
    assert min(sizes) > 200_000
    assert max(sizes) < 230_000
    assert len(bodies) == _fewest_transactions(envelope.pop(), sizes) == 3
    assert len({r.batch for r in result}) == len(bodies)


def _blob_entity(rk: str) -> DynamicEntity:
    # 15 x 64,000 bytes as the service counts them; ~1.28 MB as base64 on the wire
    return DynamicEntity("p", rk, **{f"B{j:02d}": bytes([j]) * 64_000 for j in range(15)})


async def _exact_entities(stub: StubServer, name: str, extra: int) -> list[DynamicEntity]:
    """Four entities whose single transaction body for table ``name`` (its URL is in every
    part) is exactly 4 MiB + ``extra`` bytes."""

    def pad_entity(pad: int) -> DynamicEntity:
        quotient, rest = divmod(pad, 16)
        props = {f"S{j}": "y" * (quotient + (1 if j < rest else 0)) for j in range(16)}
        return DynamicEntity("p", "3", **props)

    async with azt.TableServiceClient.from_connection_string(stub.connection_string) as service:
        table = service.get_table_client(name)

        def size(pad: int) -> int:
            batch = table.batch()
            for e in [*(_blob_entity(str(i)) for i in range(3)), pad_entity(pad)]:
                batch.create(e.to_entity())
            assert batch.size is not None
            return batch.size

        pad = 8_000
        for _ in range(3):  # one byte per character, but Content-Length may gain a digit
            pad += MAX_BATCH_BYTES + extra - size(pad)
        assert size(pad) == MAX_BATCH_BYTES + extra
    return [*(_blob_entity(str(i)) for i in range(3)), pad_entity(pad)]


@pytest.mark.parametrize("extra", [0, 1])
async def test_a_transaction_lands_exactly_on_the_limit_and_not_a_byte_over(
    stub: StubServer, extra: int
) -> None:
    name = fresh_name("size")
    entities = await _exact_entities(stub, name, extra)
    transport, result, rows = await _save(stub, WireFormat.JSON_MINIMAL, entities, name)
    assert result.ok
    assert len(rows) == 4
    lengths = [len(body) for body in transport.bodies]
    if extra == 0:
        assert lengths == [MAX_BATCH_BYTES]  # one transaction, exactly 4 MiB: accepted
    else:
        assert len(lengths) == 2
        assert max(lengths) < MAX_BATCH_BYTES


async def test_each_change_is_encoded_once(
    stub: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    real = wire_json.encode_entity

    def counting(entity: Any, **kwargs: Any) -> bytes:
        calls.append(entity["RowKey"])
        return real(entity, **kwargs)

    monkeypatch.setattr(wire_json, "encode_entity", counting)
    entities = [
        DynamicEntity("p", f"{i:03d}", **{f"S{j}": "x" * 30_000 for j in range(7)})
        for i in range(40)
    ]
    _transport, result, _ = await _save(stub, WireFormat.JSON_MINIMAL, entities)
    assert result.ok
    assert sorted(calls) == [f"{i:03d}" for i in range(40)]
