"""Large entities in transactions: how many transactions, and entities per second.

40 entities of about 210 KB each (encoded) in one partition, in three shapes: ASCII text
in JSON, CJK text in JSON (3 UTF-8 bytes a character) and text full of ``<`` in AtomPub
(escaped as ``&lt;``). Each shape is written by:

* **azt before**: the cuts the context made before exact sizing (summed upper-bound size
  estimates, the formula of ``azt/_uow/context.py`` at 32994b5, reproduced here), each
  transaction sent with ``TableClient.submit_transaction``;
* **azt context**: ``TableContext.save_changes(SaveChangesOptions.BATCH)``, cut on exact
  encoded sizes;
* **azt writer**: ``TableClient.batch_writer()``;
* **azure-data-tables (aio)**: the peer, a ``submit_transaction`` loop over chunks of the
  largest size that fits 4 MiB for ASCII (19 entities; the peer does not split by size),
  JSON only (it has no AtomPub).

All against one in-process stub over loopback; best of ``--rounds``; ratios are peer
time / azt time (above 1: azt faster).

Usage::

    .venv/bin/python benchmarks/batch_bench.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import time
from typing import Any

from azt import BatchOperation, RetryPolicy, TableServiceClient, WireFormat
from azt._core.wire import atom as wire_atom
from azt._core.wire import json as wire_json
from azt.context import SaveChangesOptions, TableContext
from azt.dynamic import DynamicEntity
from azt_server_stub import StubServer

N = 40
MAX_BYTES = 4 * 1024 * 1024
SHAPES = {
    "ascii/json": (WireFormat.JSON_MINIMAL, "x", 30_000),
    "cjk/json": (WireFormat.JSON_MINIMAL, "漢", 10_000),
    "'<'/atom": (WireFormat.ATOM, "<", 7_500),
}


def rows(char: str, per: int, tag: str) -> list[dict[str, Any]]:
    return [
        {"PartitionKey": tag, "RowKey": f"{i:03d}", **{f"S{j}": char * per for j in range(7)}}
        for i in range(N)
    ]


def old_cuts(
    entities: list[dict[str, Any]], endpoint_len: int, table: str, fmt: WireFormat
) -> list[int]:
    """Transaction sizes the pre-exact-sizing context chose: per operation an upper bound
    of its part's headers plus a cheap bound on its payload, or, near the budget, the
    payload encoded to measure it (then encoded again to send it)."""
    encode = wire_atom.encode_entity if fmt is WireFormat.ATOM else wire_json.encode_entity

    def head(e: dict[str, Any]) -> int:
        return 640 + endpoint_len + len(table) + 12 * (len(e["PartitionKey"]) + len(e["RowKey"]))

    def bound(e: dict[str, Any]) -> int:
        n = head(e) + 800
        for name, v in e.items():
            n += 14 * len(name) + 60 + (12 * len(v) + 2 if isinstance(v, str) else 64)
        return n

    budget, cuts, used, count = MAX_BYTES - 2048, [], 0, 0
    for e in entities:
        size = bound(e)
        if used + size > budget:
            size = head(e) + len(encode(e))
        if count and (count >= 100 or used + size > budget):
            cuts.append(count)
            used = count = 0
        used += size
        count += 1
    cuts.append(count)
    return cuts


async def azt_before(service: TableServiceClient, table: str, entities: list[Any]) -> int:
    client = service.get_table_client(table)
    cuts = old_cuts(entities, len(service.endpoint), table, service.wire_format)
    start = 0
    for n in cuts:
        await client.submit_transaction(
            [BatchOperation("create", e) for e in entities[start : start + n]]
        )
        start += n
    return len(cuts)


async def azt_context(service: TableServiceClient, table: str, entities: list[Any]) -> int:
    ctx = TableContext(service)
    for e in entities:
        pk, rk = e["PartitionKey"], e["RowKey"]
        ctx.add(table, DynamicEntity(pk, rk, **{k: v for k, v in e.items() if k[0] == "S"}))
    result = await ctx.save_changes(SaveChangesOptions.BATCH)
    return len({r.batch for r in result})


async def azt_writer(service: TableServiceClient, table: str, entities: list[Any]) -> int:
    async with service.get_table_client(table).batch_writer() as writer:
        for e in entities:
            await writer.insert(e)
    return writer.transactions


async def adt_loop(adt_table: Any, entities: list[Any]) -> int:
    # The peer escapes non-ASCII as \\uXXXX: as many per transaction as its encoding allows.
    per = MAX_BYTES // (len(json.dumps(entities[0])) + 1_000)
    chunks = [entities[i : i + per] for i in range(0, len(entities), per)]
    for chunk in chunks:
        await adt_table.submit_transaction([("create", e) for e in chunk])
    return len(chunks)


async def main(rounds: int) -> None:
    from azure.data.tables.aio import TableServiceClient as AdtService

    async with StubServer() as stub:
        conn = stub.connection_string
        adt = AdtService.from_connection_string(conn)
        adt_table = adt.get_table_client("benchbatchadt")
        await adt_table.create_table()
        print(f"{N} entities of ~210 KB in one partition, best of {rounds} rounds")
        print(f"{'shape':<11} {'writer':<12} {'transactions':>12} {'ent/s':>8} {'adt/this':>9}")
        try:
            for k, (shape, (fmt, char, per)) in enumerate(SHAPES.items()):
                async with TableServiceClient.from_connection_string(
                    conn, wire_format=fmt, retry=RetryPolicy.no_retries()
                ) as service:
                    name = "benchbatch" + "".join(c for c in shape if c.isalnum())
                    await service.create_table(name)
                    best: dict[str, tuple[float, int]] = {}
                    runs: dict[str, Any] = {
                        "azt before": functools.partial(azt_before, service, name),
                        "azt context": functools.partial(azt_context, service, name),
                        "azt writer": functools.partial(azt_writer, service, name),
                    }
                    if fmt is not WireFormat.ATOM:
                        runs["adt loop"] = functools.partial(adt_loop, adt_table)
                    for r in range(rounds):
                        for name, run in runs.items():
                            entities = rows(char, per, f"s{k}{name[4:7]}{r}")
                            t0 = time.perf_counter()
                            count = await run(entities)
                            elapsed = time.perf_counter() - t0
                            if name not in best or elapsed < best[name][0]:
                                best[name] = (elapsed, count)
                    peer = best.get("adt loop")
                    for name, (elapsed, count) in best.items():
                        ratio = f"{peer[0] / elapsed:>8.2f}x" if peer else f"{'-':>9}"
                        print(f"{shape:<11} {name:<12} {count:>12} {N / elapsed:>8.0f} {ratio}")
        finally:
            await adt.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.rounds))
