"""Reading a whole table: parallel scans vs one query vs azure-data-tables ``list_entities``.

A table of ``--partitions`` x ``--rows`` entities (default 50 x 1,000 = 50,000) in a stub
running in its own process, throttled per partition (``--throttle``, default
``partition=5000,account=off,burst=0.02``: a bucket of 100 entities refilled at 5,000/s),
read in pages of ``--page`` entities (default 100). One reader is then throttle-bound: each
page after a partition's first waits for its bucket, while readers of other partitions do
not wait for each other.

Readers, each reading every entity once:

* **adt list_entities**: the peer, ``azure.data.tables.aio`` ``list_entities(results_per_page=)``;
* **azt query**: one ``TableClient.query_entities`` pager (sequential pages);
* **azt scan N**: ``azt.scan.parallel_scan(concurrency=N)``, unordered; ``ordered`` in key
  order; ``auto`` the adaptive bound.

Both clients get the same short retry back-off (the defaults wait seconds after a 503), so
the throttle, not the back-off formula, sets the pace. Ratios are entities/s over the
peer's (above 1: faster than azure-data-tables) and over azt's single query.

Usage::

    .venv/bin/python benchmarks/scan_bench.py [--partitions 50] [--rows 1000] [--page 100]

Measured on the 2-core shared development machine (stub and client each on a core, other
engineers' jobs running), default workload::

    reader               entities/s   vs adt  vs query
    adt list_entities         4,874    1.00x     0.88x
    azt query                 5,517    1.13x     1.00x
    azt scan 4               17,027    3.49x     3.09x
    azt scan 16              23,339    4.79x     4.23x
    azt scan 16 ordered      11,361    2.33x     2.06x
    azt scan auto            13,337    2.74x     2.42x

Ordered scans trail unordered ones: later ranges may buffer only a few pages, so readers
wait for the head range. ``auto`` starts at 2 and grows every half second, so over a run of
a few seconds it spends much of it below 16.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from azt import RetryPolicy, TableClient
from azt.scan import parallel_scan
from azt_server_stub import DEV_ACCOUNT, DEV_KEY

TABLE = "scanbench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_stub(port: int, throttle: str | None, log: Path) -> subprocess.Popen[bytes]:
    """A stub process on ``port`` (throttled by ``throttle``, if given), once it listens."""
    argv = [sys.executable, "-m", "azt_server_stub", "--port", str(port)]
    argv += ["--log-level", "WARNING"]
    if throttle:
        argv += ["--throttle", throttle]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the stub exited:\n{log.read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the stub did not start listening")


def fast_retry() -> RetryPolicy:
    return RetryPolicy(max_attempts=100, base=0.01, minimum=0.01, maximum=0.2)


async def load(table: TableClient, partitions: int, rows: int) -> None:
    await table.create_table()

    async def partition(p: int) -> None:
        for start in range(0, rows, 100):
            batch = table.batch()
            for r in range(start, min(start + 100, rows)):
                batch.create(
                    {"PartitionKey": f"part{p:04d}", "RowKey": f"{r:06d}", "n": r, "s": "x" * 40}
                )
            await table.submit_transaction(batch)

    await asyncio.gather(*(partition(p) for p in range(partitions)))


async def timed(run: Callable[[], Awaitable[int]], expected: int) -> float:
    await asyncio.sleep(1.0)  # let every partition's bucket fill up again
    t0 = time.perf_counter()
    n = await run()
    elapsed = time.perf_counter() - t0
    if n != expected:
        raise AssertionError(f"read {n} entities, expected {expected}")
    return n / elapsed


async def main(partitions: int, rows: int, page: int, throttle: str) -> None:
    from azure.data.tables.aio import TableClient as AdtTable

    port = free_port()
    conn = (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
    )
    total = partitions * rows
    with tempfile.TemporaryDirectory() as tmp:
        proc = start_stub(port, throttle, Path(tmp) / "stub.log")
        try:
            async with TableClient.from_connection_string(conn, TABLE, retry=fast_retry()) as table:
                await load(table, partitions, rows)
                adt = AdtTable.from_connection_string(
                    conn, TABLE, retry_total=100, retry_backoff_factor=0.01, retry_backoff_max=0.2
                )

                async def adt_list() -> int:
                    n = 0
                    async for _ in adt.list_entities(results_per_page=page):
                        n += 1
                    return n

                async def azt_query() -> int:
                    n = 0
                    async for _ in table.query_entities(results_per_page=page):
                        n += 1
                    return n

                def azt_scan(concurrency: int | str, ordered: bool = False) -> Any:
                    async def run() -> int:
                        scan = parallel_scan(
                            table,
                            concurrency=concurrency,  # type: ignore[arg-type]
                            ordered=ordered,
                            page_size=page,
                        )
                        n = 0
                        async for _ in scan:
                            n += 1
                        return n

                    return run

                runs: dict[str, Callable[[], Awaitable[int]]] = {
                    "adt list_entities": adt_list,
                    "azt query": azt_query,
                    "azt scan 4": azt_scan(4),
                    "azt scan 16": azt_scan(16),
                    "azt scan 16 ordered": azt_scan(16, True),
                    "azt scan auto": azt_scan("auto"),
                }
                rates: dict[str, float] = {}
                try:
                    for name, run in runs.items():
                        rates[name] = await timed(run, total)
                finally:
                    await adt.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    print(f"{total:,} entities in {partitions} partitions, pages of {page}, throttle {throttle}")
    print(f"{'reader':<20} {'entities/s':>10} {'vs adt':>8} {'vs query':>9}")
    peer, query = rates["adt list_entities"], rates["azt query"]
    for name, rate in rates.items():
        print(f"{name:<20} {rate:>10,.0f} {rate / peer:>7.2f}x {rate / query:>8.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--page", type=int, default=100)
    parser.add_argument("--throttle", default="partition=5000,account=off,burst=0.02")
    args = parser.parse_args()
    logging.getLogger("azt").setLevel(logging.ERROR)  # no line per retried 503
    logging.getLogger("azure").setLevel(logging.ERROR)
    asyncio.run(main(args.partitions, args.rows, args.page, args.throttle))
