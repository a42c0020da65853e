"""A bulk update by query of many entities under injected faults and a concurrent writer
(``azt.bulk.update_where``), checked afterwards: every selected entity changed exactly as
asked, none missed, and every change the concurrent writer surely made still there (no
stale overwrite: the update replaces each entity as read, If-Match its ETag, and reads
again what changed meanwhile).

The stub, in this process, fails 10 % of the requests to the table (6 % ``503
ServerBusy``, 2 % of writes dropped before they apply, 2 % after: answers lost). The
writer merges a growing counter into random selected entities while the update runs.

Usage::

    .venv/bin/python benchmarks/bulk_update_bench.py [--entities 50000] [--partitions 100]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from azt import RetryPolicy, TableClient, UpdateMode
from azt.bulk import BulkOptions, load, update_where
from azt.entity import Entity, Prop, prop
from azt.query import Query
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.faults import FaultInjector, FaultKind


class Doc(Entity):
    status: Prop[str] = prop(default="new")
    stamp: Prop[str] = prop(default="")
    writer: Prop[int] = prop(default=0)


def faults(seed: int) -> FaultInjector:
    inj = FaultInjector(seed=seed)
    inj.fail_rate(FaultKind.BUSY, 0.06, table="chaos")
    inj.fail_rate(FaultKind.DROP_BEFORE, 0.02, only="writes", table="chaos")
    inj.fail_rate(FaultKind.DROP_AFTER, 0.02, only="writes", table="chaos")
    return inj


async def main(n: int, partitions: int) -> None:
    inj = faults(seed=29)
    retry = RetryPolicy(max_attempts=8, base=0.05, minimum=0.01, maximum=1.0)
    async with (
        StubServer(StubConfig(faults=inj)) as stub,
        TableClient.from_connection_string(stub.connection_string, "chaos", retry=retry) as table,
    ):
        with inj.suspended():
            await table.create_table()
            docs = [
                Doc(f"p{i % partitions:03d}", f"d{i:06d}", status="old" if i % 10 else "keep")
                for i in range(n)
            ]
            assert (await load(table, docs)).ok
        rng = random.Random(1)
        touched: dict[str, int] = {}
        stop = asyncio.Event()

        async def writer() -> None:
            k = 0
            while not stop.is_set():
                k += 1
                i = rng.randrange(n)
                if i % 10:
                    pk, rk = f"p{i % partitions:03d}", f"d{i:06d}"
                    try:
                        await table.update_entity(
                            {"PartitionKey": pk, "RowKey": rk, "writer": k}, mode=UpdateMode.MERGE
                        )
                        touched[rk] = k
                    except Exception:
                        touched[rk] = -1  # outcome unknown
                await asyncio.sleep(0.001)

        task = asyncio.create_task(writer())
        start = time.perf_counter()
        result = await update_where(
            Query(Doc, table).where(Doc.status == "old"),
            {"status": "new", "stamp": "bulk"},
            mode="replace",
            options=BulkOptions(),
        )
        seconds = time.perf_counter() - start
        stop.set()
        await task
        with inj.suspended():
            stored = {d.RowKey: d for d in await Query(Doc, table).to_list()}
    selected = [rk for rk in stored if int(rk[1:]) % 10]
    changed = sum(stored[rk].status == "new" and stored[rk].stamp == "bulk" for rk in selected)
    untouched = sum(stored[f"d{i:06d}"].status == "keep" for i in range(0, n, 10))
    stale = sum(1 for rk, k in touched.items() if k > 0 and stored[rk].writer < k)
    injected = sum(rule.injected for rule in inj.rules)
    rate = len(selected) / seconds
    print(f"{len(selected)} entities selected of {n}; {seconds:.1f} s, {rate:.0f}/s")
    print(
        f"written {result.written}, failures {len(result.failures)}, requests {result.requests}, "
        f"resolved by reading back {result.resolved}, faults injected {injected}"
    )
    print(
        f"changed as asked {changed}/{len(selected)}; not selected and untouched "
        f"{untouched}/{n // 10}; concurrent writes {len(touched)}, overwritten stale {stale}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entities", type=int, default=50_000)
    parser.add_argument("--partitions", type=int, default=100)
    a = parser.parse_args()
    asyncio.run(main(a.entities, a.partitions))
