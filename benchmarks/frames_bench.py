"""Exporting a table to Parquet: azt's Arrow export vs an azure-data-tables + pandas loop;
peak memory as the table grows; CPU per row of the Arrow decode vs ``json.loads``.

A stub in its own process holds ``--rows`` entities (default 400,000; 1,000 per partition)
with one property of each of the eight EDM types. Each export runs in a fresh child process
(so its peak resident memory, ``ru_maxrss``, is its own) and reads the first ``size`` rows
(``PartitionKey lt 'pNNNN'``, a key range) for each of ``--sizes`` (default 100,000 and
400,000):

* **adt + pandas**: the peer, written as azure-data-tables' docs suggest:
  ``list(table.query_entities(...))``, ``pd.DataFrame(entities)``, ``df.to_parquet(path)``;
  its Int64 values come back as ``EntityProperty`` objects pyarrow cannot write, so they are
  unwrapped first (``.value``), and its GUIDs written as text, the least a user must add;
  run at the smallest size only (it holds the whole table in memory);
* **azt export_parquet**: ``azt.frames.export_parquet`` (parallel scan, ``concurrency=4``,
  pages decoded straight to Arrow, row groups streamed).

Then ``azt.frames_dask.read_dask`` of ``--dask-rows`` rows (default 100,000) in 8
partitions on a ``LocalCluster`` of 1 and of 2 worker processes (one thread each),
counted on the workers (which import azt first, outside the timing). On 2 cores shared
with the stub (and other jobs) the scaling is bounded by the machine, not by the design.

Then the decode alone, on pages of 1,000 rows built as the service sends them (minimal
metadata, the same eight properties), in CPU microseconds per row: ``json.loads`` of the
bodies; azt's JSON-to-Arrow decode (``decode_rows`` + ``FrameDecoder``: bodies to record
batches); azt's ``decode_feed`` (bodies to ``TableEntity`` objects).

Usage::

    .venv/bin/python benchmarks/frames_bench.py [--rows 400000] [--sizes 100000,400000]

Measured on the 2-core shared development machine (stub and client each on a core, other
helpers' jobs running, load average 6 to 9; 1,000,000 rows would take the shared machine
too long to load, so 100,000 vs 400,000)::

    export                     rows   rows/s  vs adt  client CPU us/row  vs adt  peak MB
    adt + pandas            100,000    3,790   1.00x               81.1   1.00x      508
    azt export_parquet      100,000   20,652   5.45x               17.2   4.70x      252

    read_dask of 100,000 rows, 8 partitions (LocalCluster, processes)
    1 worker(s)     100,000 rows     5,356 rows/s   1.00x
    2 worker(s)     100,000 rows     5,134 rows/s   0.96x

    decode of 20 pages of 1,000 rows (CPU us per row, best of 3)
    json.loads                      1.91 us    1.00x json.loads
    azt Arrow decode                2.06 us    1.08x json.loads
    azt decode_feed (entities)      3.36 us    1.76x json.loads

Over three runs the export's wall-clock ratio was 3.9x to 6.2x (1.5x in a run where other
jobs took the stub's core) and its client CPU per row 4.7x to 5.9x less; with
``--rows 400000 --sizes 100000,400000`` azt's peak memory was 244 MB and 246 MB (flat), the
peer's 502 MB at 100,000. The Dask read cannot scale here: the second worker has no core of
its own (the stub has one).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import math
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from azt import RetryPolicy, TableClient
from azt._core.wire import json as wire_json
from azt.bulk import BulkOptions, load
from azt.edm import EdmDateTime, EdmType, Typed
from azt.frames import FrameDecoder, export_parquet
from azt_server_stub import DEV_ACCOUNT, DEV_KEY

TABLE = "framesbench"
PER_PARTITION = 1000


def connection_string(port: int) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
    )


def entity(i: int) -> dict[str, Any]:
    """Row ``i``: one property of each EDM type."""
    return {
        "PartitionKey": f"p{i // PER_PARTITION:04d}",
        "RowKey": f"r{i % PER_PARTITION:04d}",
        "Name": f"customer-{i:08d}",
        "Count": i % 100_000,
        "Total": Typed(i * 1_000_003, EdmType.INT64),
        "Price": i / 7,
        "Active": i % 3 == 0,
        "Seen": EdmDateTime.from_ticks(637_358_077_304_363_943 + i * 10_000_001),
        "Id": uuid.UUID(int=i * 2_654_435_761),
        "Blob": i.to_bytes(16, "little"),
    }


def size_filter(size: int) -> str:
    return f"PartitionKey lt 'p{size // PER_PARTITION:04d}'"


# --- children: one export each, in a fresh process ------------------------------------


def _usage() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_maxrss / 1024


def child_azt(conn: str, size: int, path: str) -> dict[str, Any]:
    async def run() -> int:
        async with TableClient.from_connection_string(conn, TABLE) as table:
            return await export_parquet(table, path, filter=size_filter(size), concurrency=4)

    start = time.perf_counter()
    rows = asyncio.run(run())
    seconds = time.perf_counter() - start
    cpu, rss = _usage()
    return {"rows": rows, "seconds": seconds, "cpu": cpu, "maxrss_mb": rss}


def child_adt(conn: str, size: int, path: str) -> dict[str, Any]:
    import pandas as pd
    from azure.data.tables import EntityProperty
    from azure.data.tables import TableClient as AdtTableClient

    start = time.perf_counter()
    with AdtTableClient.from_connection_string(conn, TABLE) as table:
        entities = list(table.query_entities(query_filter=size_filter(size)))
    rows = [
        {
            k: (
                v.value
                if isinstance(v, EntityProperty)
                else str(v)
                if isinstance(v, uuid.UUID)
                else v
            )
            for k, v in e.items()
        }
        for e in entities
    ]
    df = pd.DataFrame(rows)
    df.to_parquet(path)
    seconds = time.perf_counter() - start
    cpu, rss = _usage()
    return {"rows": len(df), "seconds": seconds, "cpu": cpu, "maxrss_mb": rss}


def run_child(mode: str, conn: str, size: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "out.parquet")
        argv = [sys.executable, __file__, "--child", mode, "--conn", conn]
        argv += ["--size", str(size), "--out", path]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{mode} failed:\n{done.stderr}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        result["file_mb"] = os.path.getsize(path) / 2**20
        return result


# --- the decode alone ---------------------------------------------------------------


def page_bodies(pages: int) -> list[bytes]:
    import msgspec

    bodies = []
    for p in range(pages):
        rows = []
        for i in range(p * 1000, (p + 1) * 1000):
            row = {"odata.etag": "W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\""}
            row["Timestamp"] = "2024-01-02T03:04:05.1234567Z"
            row.update(wire_json.entity_json(entity(i)))
            rows.append(row)
        bodies.append(msgspec.json.encode({"value": rows}))
    return bodies


def cpu_per_row(decode: Any, bodies: list[bytes], rounds: int = 3) -> float:
    best = math.inf
    for _ in range(rounds):
        start = time.process_time()
        for body in bodies:
            decode(body)
        best = min(best, time.process_time() - start)
    return best / (len(bodies) * 1000) * 1e6


def decode_figures(pages: int) -> dict[str, float]:
    bodies = page_bodies(pages)
    dec = FrameDecoder()
    return {
        "json.loads": cpu_per_row(json.loads, bodies),
        "azt Arrow decode": cpu_per_row(lambda b: dec.decode(wire_json.decode_rows(b)), bodies),
        "azt decode_feed (entities)": cpu_per_row(wire_json.decode_feed, bodies),
    }


# --- the parent -----------------------------------------------------------------------


async def fill(conn: str, rows: int) -> None:
    async with TableClient.from_connection_string(
        conn, TABLE, retry=RetryPolicy(max_attempts=20, base=0.01, minimum=0.01, maximum=0.2)
    ) as table:
        await table.create_table()
        partitions = rows // PER_PARTITION
        order = (p * PER_PARTITION + r for r in range(PER_PARTITION) for p in range(partitions))
        result = await load(
            table,
            (entity(i) for i in order),  # partitions interleaved: all of them in flight
            kind="insert",
            options=BulkOptions(account_rate=1e9, partition_rate=1e9),
        )
        result.raise_for_failures()


def dask_read(conn: str, size: int, workers: int, partitions: int) -> tuple[int, float]:
    """Rows and seconds of ``read_dask`` over the first ``size`` rows on a LocalCluster of
    ``workers`` worker processes (one thread each); the frame is counted on the workers."""
    from distributed import Client, LocalCluster

    from azt.frames_dask import read_dask

    local_cluster: Any = LocalCluster  # distributed leaves its constructors untyped
    client: Any = Client
    with (
        local_cluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
        ) as cluster,
        client(cluster) as dask_client,
    ):
        # the workers import azt, pyarrow and pandas before the clock starts (else the
        # first task of each worker process pays for it)
        dask_client.run(importlib.import_module, "azt.frames_dask")
        start = time.perf_counter()
        ddf: Any = read_dask(conn, TABLE, partitions=partitions, filter=size_filter(size))
        n = int(ddf.map_partitions(len).compute().sum())
        return n, time.perf_counter() - start


def main(rows: int, sizes: list[int], pages: int, dask_rows: int) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "stub.log"
        with log.open("wb") as out:
            stub = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "azt_server_stub",
                    "--port",
                    str(port),
                    "--log-level",
                    "WARNING",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            conn = connection_string(port)
            deadline = time.monotonic() + 30
            while not _listening(port):
                if stub.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the stub did not start:\n{log.read_text()}")
                time.sleep(0.05)
            start = time.perf_counter()
            asyncio.run(fill(conn, rows))
            print(f"loaded {rows:,} entities in {time.perf_counter() - start:.1f} s")
            print(
                f"{'export':<22}{'rows':>9}{'rows/s':>9}{'vs adt':>8}"
                f"{'client CPU us/row':>19}{'vs adt':>8}{'peak MB':>9}"
            )
            peer = run_child("adt", conn, sizes[0])
            base = peer["rows"] / peer["seconds"]
            base_cpu = peer["cpu"] / peer["rows"] * 1e6
            print(
                f"{'adt + pandas':<22}{peer['rows']:>9,}{base:>9,.0f}{1.0:>7.2f}x"
                f"{base_cpu:>19.1f}{1.0:>7.2f}x{peer['maxrss_mb']:>9.0f}"
            )
            for size in sizes:
                got = run_child("azt", conn, size)
                rate = got["rows"] / got["seconds"]
                cpu = got["cpu"] / got["rows"] * 1e6
                print(
                    f"{'azt export_parquet':<22}{got['rows']:>9,}{rate:>9,.0f}"
                    f"{rate / base:>7.2f}x{cpu:>19.1f}{base_cpu / cpu:>7.2f}x"
                    f"{got['maxrss_mb']:>9.0f}"
                )
            if dask_rows:
                print(
                    f"\nread_dask of {dask_rows:,} rows in 8 partitions (LocalCluster, processes)"
                )
                one = 0.0
                for workers in (1, 2):
                    n, seconds = dask_read(conn, dask_rows, workers, 8)
                    rate = n / seconds
                    one = one or rate
                    print(
                        f"{workers} worker(s){n:>12,} rows{rate:>10,.0f} rows/s{rate / one:>7.2f}x"
                    )
        finally:
            stub.terminate()
            stub.wait(10)
    print(f"\ndecode of {pages} pages of 1,000 rows (CPU us per row, best of 3)")
    figures = decode_figures(pages)
    ref = figures["json.loads"]
    for name, us in figures.items():
        print(f"{name:<28}{us:>8.2f} us{us / ref:>8.2f}x json.loads")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--sizes", default="100000,400000")
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--dask-rows", type=int, default=100_000, help="0: no Dask read")
    parser.add_argument("--child", choices=("azt", "adt"), default=None)
    parser.add_argument("--conn", default="")
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.child is not None:
        runner = child_azt if args.child == "azt" else child_adt
        print(json.dumps(runner(args.conn, args.size, args.out)))
    else:
        main(args.rows, [int(s) for s in args.sizes.split(",")], args.pages, args.dask_rows)
