"""Bulk loads against a throttling stub: azt bulk vs a plain azure-data-tables loop vs
azt's context, on the same stub and data.

The stub throttles at scaled-down scalability targets (default 100 entities/s per
partition, 1,000 per account; ``--partition-rate``, ``--account-rate``) so that this
machine is not the bottleneck. The data: ``--partitions`` x ``--rows`` small entities,
interleaved across partitions. Each writer loads it into a fresh table (the throttle's
buckets and counters reset in between):

* **azt bulk**: ``azt.bulk.load`` told the targets (as it is told Azure's by default);
* **azt bulk (untold)**: ``azt.bulk.load`` with its defaults (Azure's 2,000 / 20,000),
  learning the stub's 20x lower limits from its throttling answers;
* **adt loop**: azure-data-tables (aio), ``submit_transaction`` per partition in chunks of
  100, one partition after the other, its default retry policy (the usual hand loop);
* **azt context**: ``TableContext.save_changes(SaveChangesOptions.BATCH)``.

The azt clients retry like the peer's default (exponential, base 0.8 s). Reported per
writer: seconds, entities per second, the steady rate (entities the stub admitted per
second between 20 % and 80 % of the load, sampled every 0.1 s, and that as a share of the
account target), transactions sent, requests throttled (the stub's counters) and the ratio
azt bulk / writer (above 1: azt bulk faster). The told and the untold bulk loads run in
the same process on the same stub, one after the other.

Usage::

    .venv/bin/python benchmarks/bulk_bench.py [--partitions 30] [--rows 100]
    .venv/bin/python benchmarks/bulk_bench.py --partitions 50 --rows 400 --writers bulk

(``--writers bulk``: the two bulk loads only; the hand loop writes one partition after the
other at the partition target and takes minutes on 20,000 entities.)
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from azt import RetryPolicy, TableServiceClient
from azt.bulk import BulkOptions, load
from azt.context import SaveChangesOptions, TableContext
from azt.dynamic import DynamicEntity
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits

#: azt's retries shaped like azure-core's defaults (backoff factor 0.8 s, 10 retries)
RETRY = RetryPolicy(max_attempts=11, base=0.8, minimum=0.0, maximum=120.0)


def rows(partitions: int, per: int) -> list[dict[str, Any]]:
    return [
        {"PartitionKey": f"p{p:03d}", "RowKey": f"r{r:05d}", "N": r, "Tag": f"{p}/{r}"}
        for r in range(per)
        for p in range(partitions)
    ]


async def adt_loop(adt_table: Any, items: list[dict[str, Any]]) -> None:
    by_pk: dict[str, list[dict[str, Any]]] = {}
    for e in items:
        by_pk.setdefault(e["PartitionKey"], []).append(e)
    for group in by_pk.values():
        for i in range(0, len(group), 100):
            await adt_table.submit_transaction([("upsert", e) for e in group[i : i + 100]])


async def azt_context(service: TableServiceClient, table: str, items: list[Any]) -> None:
    ctx = TableContext(service)
    for e in items:
        ctx.add(
            table,
            DynamicEntity(
                e["PartitionKey"], e["RowKey"], **{k: v for k, v in e.items() if "Key" not in k}
            ),
        )
    await ctx.save_changes(SaveChangesOptions.BATCH)


async def sample(throttle: Throttle, out: list[tuple[float, int]]) -> None:
    """Record (seconds, entities admitted) every 0.1 s until cancelled."""
    start = time.perf_counter()
    while True:
        out.append((time.perf_counter() - start, throttle.stats.admitted_entities))
        await asyncio.sleep(0.1)


def steady(samples: list[tuple[float, int]], total: int) -> float:
    """Entities per second between 20 % and 80 % of the load."""
    a = next((s for s in samples if s[1] >= 0.2 * total), None)
    b = next((s for s in samples if s[1] >= 0.8 * total), None)
    if a is None or b is None or b[0] <= a[0]:
        return float("nan")
    return (b[1] - a[1]) / (b[0] - a[0])


async def main(
    partitions: int, per: int, partition_rate: float, account_rate: float, writers: str
) -> None:
    from azure.data.tables.aio import TableServiceClient as AdtService

    throttle = Throttle(ThrottleLimits(partition_rate=partition_rate, account_rate=account_rate))
    items = rows(partitions, per)
    told = BulkOptions(partition_rate=partition_rate, account_rate=account_rate)
    async with StubServer(StubConfig(throttle=throttle)) as stub:
        conn = stub.connection_string
        adt = AdtService.from_connection_string(conn)
        async with TableServiceClient.from_connection_string(conn, retry=RETRY) as service:
            runs: dict[str, Callable[[str], Awaitable[Any]]] = {
                "azt bulk": lambda t: load(service.get_table_client(t), items, options=told),
                "azt bulk (untold)": lambda t: load(service.get_table_client(t), items),
                "adt loop": lambda t: adt_loop(adt.get_table_client(t), items),
                "azt context": lambda t: azt_context(service, t, items),
            }
            if writers == "bulk":
                runs = {k: v for k, v in runs.items() if k.startswith("azt bulk")}
            results: dict[str, tuple[float, float, int, int]] = {}
            for k, (name, run) in enumerate(runs.items()):
                table = f"bulkbench{k}"
                throttle.enabled = False
                await service.create_table(table)
                throttle.reset()
                throttle.enabled = True
                samples: list[tuple[float, int]] = []
                sampler = asyncio.create_task(sample(throttle, samples))
                start = time.perf_counter()
                await run(table)
                seconds = time.perf_counter() - start
                sampler.cancel()
                stats = throttle.stats
                samples.append((seconds, stats.admitted_entities))
                results[name] = (
                    seconds,
                    steady(samples, len(items)),
                    stats.admitted,
                    sum(stats.throttled.values()),
                )
        await adt.close()
    n = len(items)
    print(
        f"{n} entities in {partitions} partitions; stub targets {partition_rate:.0f}/s per "
        f"partition, {account_rate:.0f}/s per account"
    )
    print(
        f"{'writer':<18} {'seconds':>8} {'ent/s':>7} {'steady':>14} {'sent':>5} "
        f"{'throttled':>11} {'bulk/this':>9}"
    )
    base = n / results["azt bulk"][0]
    for name, (seconds, steady_rate, admitted, refused) in results.items():
        rate = n / seconds
        share = refused / (admitted + refused) if admitted + refused else 0.0
        print(
            f"{name:<18} {seconds:8.2f} {rate:7.0f} {steady_rate:6.0f} "
            f"({steady_rate / account_rate:5.1%}) {admitted:5d} {refused:5d} ({share:4.1%})"
            f" {base / rate:9.2f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=30)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--partition-rate", type=float, default=100.0)
    parser.add_argument("--account-rate", type=float, default=1000.0)
    parser.add_argument("--writers", choices=["all", "bulk"], default="all")
    a = parser.parse_args()
    asyncio.run(main(a.partitions, a.rows, a.partition_rate, a.account_rate, a.writers))
