"""Every legal key pair can be written, read, updated, deleted and queried through the
client: the longest legal keys of each character class (1,024 UTF-16 units) make URLs and
response headers (``Location``) of 9 to 18 KiB, past aiohttp's default 8,190-byte limit,
so a write the service applied must not read as a broken connection."""

from __future__ import annotations

import pytest

import azt

#: The longest legal key of each character class (1,024 UTF-16 units).
LONGEST_KEYS = {
    "ascii": "a" * 1024,
    "quote": "'" * 1024,  # doubled in the OData literal
    "two-byte": "é" * 1024,
    "three-byte": "€" * 1024,  # 9 encoded bytes a unit
    "astral": "\U0001f600" * 512,  # two UTF-16 units each
    "needs-encoding": ("% +&=" * 205)[:1024],
}


@pytest.mark.parametrize("kind", sorted(LONGEST_KEYS))
async def test_longest_keys_round_trip(table: azt.TableClient, kind: str) -> None:
    key = LONGEST_KEYS[kind]
    pk, rk = key, key[::-1]
    written = await table.insert_entity({"PartitionKey": pk, "RowKey": rk, "n": 1})
    assert written.etag is not None
    got = await table.get_entity(pk, rk)
    assert (got["PartitionKey"], got["RowKey"], got["n"]) == (pk, rk, 1)
    await table.update_entity({"PartitionKey": pk, "RowKey": rk, "n": 2}, etag=written.etag)
    await table.upsert_entity({"PartitionKey": pk, "RowKey": rk, "n": 3})
    rows = [
        e
        async for e in table.query_entities(
            "PartitionKey eq @pk and RowKey eq @rk", parameters={"pk": pk, "rk": rk}
        )
    ]
    assert [r["n"] for r in rows] == [3]
    await table.delete_entity(pk, rk)
    with pytest.raises(azt.EntityNotFoundError):
        await table.get_entity(pk, rk)
