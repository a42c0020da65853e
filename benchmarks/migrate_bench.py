"""A migration's rows per second against the bulk loader's, on the same stub.

The stub runs in its own process (as a service would), unthrottled and then throttled at
scaled-down targets (``--throttle``, default 200 entities/s per partition, 2,000 per
account). The data: ``--partitions`` x ``--rows`` entities of one small shape. For each
setting, on fresh tables:

* **bulk load**: ``azt.bulk.load(kind="upsert-replace")`` writes the rows (the peer: the
  fastest way azt writes them);
* **migration**: the same rows, already stored (loaded, untimed), rewritten by a
  ``Migration`` renaming one property (``azt.migrate.run_migrations``): it reads every row
  (parallel scan) and replaces each, conditional on its ETag.

Reported: seconds, rows per second, and the ratio migration / bulk load (the goal of
issue 30: at least 0.8).

Usage::

    .venv/bin/python benchmarks/migrate_bench.py [--partitions 40] [--rows 250]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from azt import RetryPolicy, TableServiceClient
from azt.bulk import BulkOptions, load
from azt.migrate import Migration, rename, run_migrations
from azt_server_stub import DEV_ACCOUNT, DEV_KEY


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_stub(port: int, throttle: str | None, log: Path) -> subprocess.Popen[bytes]:
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


def rows(partitions: int, per: int) -> list[dict[str, Any]]:
    return [
        {"PartitionKey": f"p{p:03d}", "RowKey": f"r{r:05d}", "Name": f"n{p}/{r}", "N": r}
        for r in range(per)
        for p in range(partitions)
    ]


async def bulk(
    service: TableServiceClient, name: str, items: list[Any], opts: BulkOptions
) -> float:
    table = await service.create_table(name)
    await asyncio.sleep(1.5)  # the stub's buckets refill (a burst of one second): a fair start
    started = time.perf_counter()
    result = await load(table, items, kind="upsert-replace", options=opts)
    seconds = time.perf_counter() - started
    assert result.ok, result
    assert result.written == len(items), result
    return seconds


async def migrate(
    service: TableServiceClient, name: str, items: list[Any], opts: BulkOptions
) -> float:
    table = await service.create_table(name)
    await load(table, items, kind="upsert-replace", options=opts)  # untimed: the old rows
    migration = Migration("0001_full_name", name, [rename("Name", "FullName")])
    await asyncio.sleep(1.5)  # as for the bulk load
    started = time.perf_counter()
    [report] = await run_migrations(service, [migration], options=opts)
    seconds = time.perf_counter() - started
    assert report.ok, report
    assert report.written == len(items), report
    return seconds


async def run(conn: str, items: list[Any], opts: BulkOptions, label: str, tag: str) -> None:
    retry = RetryPolicy(max_attempts=100, base=0.01, minimum=0.01, maximum=0.2)
    async with TableServiceClient.from_connection_string(conn, retry=retry) as service:
        b = await bulk(service, f"bulk{tag}", items, opts)
        m = await migrate(service, f"migrate{tag}", items, opts)
    n = len(items)
    print(f"{label}:")
    print(f"  bulk load   {b:7.2f} s  {n / b:9,.0f} rows/s")
    print(f"  migration   {m:7.2f} s  {n / m:9,.0f} rows/s")
    print(f"  ratio migration / bulk load: {b / m:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40)
    ap.add_argument("--rows", type=int, default=250, help="rows per partition")
    ap.add_argument("--throttle", default="partition=200,account=2000")
    args = ap.parse_args()
    items = rows(args.partitions, args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        for label, throttle, opts, tag in (
            ("unthrottled", None, BulkOptions(), "a"),
            (f"throttled ({args.throttle})", args.throttle, _told(args.throttle), "b"),
        ):
            port = free_port()
            proc = start_stub(port, throttle, Path(tmp) / f"stub{tag}.log")
            try:
                conn = (
                    f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};"
                    f"AccountKey={DEV_KEY};TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
                )
                asyncio.run(run(conn, items, opts, f"{len(items):,} rows, {label}", tag))
            finally:
                proc.terminate()
                proc.wait(timeout=30)


def _told(spec: str) -> BulkOptions:
    """The loader told the stub's targets (as it is told Azure's by default)."""
    values = dict(part.split("=") for part in spec.split(","))
    return BulkOptions(
        partition_rate=float(values.get("partition", 2000)),
        account_rate=float(values.get("account", 20000)),
    )


if __name__ == "__main__":
    main()
