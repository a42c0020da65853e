"""Unit of work vs hand-made transactions: 10,000 entities over 10 partitions, one run.

* **azt**: ``TableContext.add`` for every entity (declarative class, six properties), then
  ``save_changes(SaveChangesOptions.BATCH)``: grouping by table and PartitionKey, splitting
  at 100 operations / 4 MiB, encoding, sending, and moving every entity to Unchanged with
  its new ETag.
* **azure-data-tables (aio)**: the same entities as dicts, grouped into lists of 100
  ``("create", entity)`` operations per partition by hand, each sent with
  ``TableClient.submit_transaction``.

Both talk to one in-process stub (``azt_server_stub.StubServer``) over loopback, with the
same number of transactions in flight (``--concurrency``). Building the entity objects is
not timed for either; each round writes fresh partitions; the best of ``--rounds`` is
reported. The stub's own cost is in both figures.

Usage::

    .venv/bin/python benchmarks/context_bench.py [--entities 10000] [--partitions 10]
                                                 [--rounds 3] [--concurrency 1 8]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from azt import RetryPolicy, TableServiceClient
from azt.context import SaveChangesOptions, TableContext
from azt.entity import Entity, Int64, Prop, prop
from azt_server_stub import StubServer

WHEN = datetime(2010, 10, 16, 15, 48, 53, tzinfo=UTC)
PAYLOAD = "x" * 100


class Movie(Entity):
    """Six properties of five EDM types (plus the keys)."""

    release_year: Prop[int] = prop(name="ReleaseYear", default=2010)
    rating: Prop[float] = prop(name="Rating", default=0.0)
    language: Prop[str] = prop(name="Language", default="English")
    favorite: Prop[bool] = prop(name="Favorite", default=False)
    released: Prop[datetime] = prop(name="Released", default=WHEN)
    views: Prop[Int64] = prop(name="Views", default=0)


def keys(n: int, partitions: int, tag: str) -> list[tuple[str, str, int]]:
    per = n // partitions
    return [
        (f"{tag}p{p:02d}", f"{i:06d}", p * per + i) for p in range(partitions) for i in range(per)
    ]


async def run_azt(
    service: TableServiceClient, table: str, ks: list[tuple[str, str, int]], concurrency: int
) -> float:
    movies = [
        Movie(pk, rk, rating=float(i % 50) / 10, language=PAYLOAD, views=i * 1_000_003)
        for pk, rk, i in ks
    ]
    start = time.perf_counter()
    ctx = TableContext(service)
    for m in movies:
        ctx.add(table, m)
    result = await ctx.save_changes(SaveChangesOptions.BATCH, max_concurrency=concurrency)
    elapsed = time.perf_counter() - start
    assert len(result) == len(movies)
    assert result.ok
    assert all(m.ETag for m in movies)
    return elapsed


async def run_adt(adt_table: Any, ks: list[tuple[str, str, int]], concurrency: int) -> float:
    from azure.data.tables import EdmType

    entities: list[dict[str, Any]] = [
        {
            "PartitionKey": pk,
            "RowKey": rk,
            "ReleaseYear": 2010,
            "Rating": float(i % 50) / 10,
            "Language": PAYLOAD,
            "Favorite": False,
            "Released": WHEN,
            "Views": (i * 1_000_003, EdmType.INT64),
        }
        for pk, rk, i in ks
    ]
    start = time.perf_counter()
    groups: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for e in entities:
        groups.setdefault(e["PartitionKey"], []).append(("create", e))
    chunks = [ops[i : i + 100] for ops in groups.values() for i in range(0, len(ops), 100)]
    sem = asyncio.Semaphore(concurrency)

    async def send(ops: list[tuple[str, dict[str, Any]]]) -> int:
        async with sem:
            results = await adt_table.submit_transaction(ops)
            return len(results)

    counts = await asyncio.gather(*(send(c) for c in chunks))
    elapsed = time.perf_counter() - start
    assert sum(counts) == len(entities)
    return elapsed


async def main(n: int, partitions: int, rounds: int, concurrencies: list[int]) -> None:
    from azure.data.tables.aio import TableServiceClient as AdtService

    async with StubServer() as stub:
        conn = stub.connection_string
        service = TableServiceClient.from_connection_string(conn, retry=RetryPolicy.no_retries())
        adt = AdtService.from_connection_string(conn)
        async with service:
            await service.create_table("benchctxazt")
            adt_table = adt.get_table_client("benchctxadt")
            await adt_table.create_table()
            try:
                print(
                    f"{n:,} entities over {partitions} partitions, transactions of 100, "
                    f"best of {rounds} rounds"
                )
                print(f"{'in flight':>9}  {'azt ent/s':>11}  {'adt ent/s':>11}  {'azt/adt':>8}")
                for conc in concurrencies:
                    best_azt = best_adt = float("inf")
                    for r in range(rounds):
                        tag = f"c{conc}r{r}"
                        best_adt = min(
                            best_adt, await run_adt(adt_table, keys(n, partitions, tag), conc)
                        )
                        best_azt = min(
                            best_azt,
                            await run_azt(service, "benchctxazt", keys(n, partitions, tag), conc),
                        )
                    print(
                        f"{conc:>9}  {n / best_azt:>11,.0f}  {n / best_adt:>11,.0f}  "
                        f"{best_adt / best_azt:>7.2f}x"
                    )
            finally:
                await adt.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args()
    asyncio.run(main(args.entities, args.partitions, args.rounds, args.concurrency))
