"""Exporting a table to Parquet: azt's Arrow export vs an azure-data-tables + pandas loop;
peak memory as the table grows; CPU per row of the Arrow decode vs ``json.loads``; the Dask
read on 1 and 2 workers.

One command prints every figure of issue 31's "What must show it", the peer run on the
full million beside azt (4 min 13 s to 4 min 47 s on the loaded 2-core development
machine, load average 4 to 6; less on a quiet one, where the peer's two minutes shrink the
most; ``--peer-rows 100000`` samples the peer instead, about 100 s less)::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/frames_bench.py

**The table.** A stub in its own process (``benchmarks/_seeded_stub.py``: the ``azt-stub``
server, its table filled before it listens through the stub's own backend API, each body
parsed by the stub's request parser; benchmark-only, not a protocol path) holds the
largest of ``--sizes`` entities (default 100,000 and 1,000,000; 1,000 per partition,
``benchmarks/_frames_rows.py``) with one property of each of the eight EDM types.

**The export.** Each export runs in a fresh child process (so its peak resident memory,
``ru_maxrss``, is its own) and reads the first ``size`` rows (``PartitionKey lt 'pNNNN'``,
a key range):

* **adt + pandas**: the peer, written as azure-data-tables' docs suggest:
  ``list(table.query_entities(...))``, ``pd.DataFrame(entities)``, ``df.to_parquet(path)``;
  its Int64 values come back as ``EntityProperty`` objects pyarrow cannot write, so they are
  unwrapped first (``.value``), and its GUIDs written as text, the least a user must add.
  It runs on ``--peer-rows`` rows (default: the largest size, minutes at a million); given
  fewer, its rate at that sample stands in for the larger sizes, and their lines say so
  (``peer extrapolated``): nothing checks that the rate holds at the full size (the peer
  holds the whole table in memory: 3.3 GB at a million rows);
* **azt export_parquet**: ``azt.frames.export_parquet`` (parallel scan, ``concurrency=4``,
  pages decoded straight to Arrow, row groups written on a worker thread), on each size;
* **azt export (CLI)**: the same through the command, ``azt export TABLE --format parquet
  -o FILE --filter ...`` (its ``main`` called in the child: argument parsing, the client,
  the progress bar), on each size;
* **ordered=False**: ``export_parquet(..., ordered=False)`` at the largest size: rows in
  the order pages arrive instead of key order. An ordered scan lets a range other than
  the first read only a few pages ahead, so fewer requests stay in flight (a mean of about
  2 of 4 measured, 3.7 unordered): this line shows what that costs.

For each: rows/s (wall clock, the child's own timing of the export) and the ratio to the
peer; the client's CPU per row (the child's CPU over the export, all its threads; its
start-up and imports left out) and the ratio; the **stub's** CPU per row served (the stub
process's CPU during the child's run, from ``/proc``) and how busy the stub was (its CPU
over the child's wall time: near 100 % the stub's single core bounds the rate, whatever
the client does); the child's peak memory.

**The Dask read.** ``azt.frames_dask.read_dask`` of ``--dask-rows`` rows (default
100,000) in 8 partitions on a ``LocalCluster`` of 1 and of 2 worker processes (one thread
each), counted on the workers (which import azt first, outside the timing): rows/s, the
scaling, the workers' CPU per row and the stub's, and the stub's busy share as above. On
this 2-core machine the scaling cannot show: a row costs a worker about 5 us of CPU and
the stub about 4.5, so one worker on one core and the stub on the other already use the
machine (the stub alone caps any number of workers at one core's worth), and a second
worker process only shares those two cores (with the scheduler, this
script and, here, other jobs).

**The decode.** The first ``--pages`` pages (1,000 rows each) of the table exactly as the
stub sends them to the export (fetched with a table SAS over HTTP, minimal metadata), in
CPU microseconds per row, best of 3: ``json.loads`` of the bodies; azt's JSON-to-Arrow
decode (``decode_rows`` + ``FrameDecoder``: bodies to record batches); azt's
``decode_feed`` (bodies to ``TableEntity`` objects).

The machine's load average is printed at the start and the end: under load, judge by the
CPU figures (steady) more than the wall-clock ones.

Measured on the 2-core development machine with nothing else running, on 2026-11-29,
after the stub's rendering was halved (msgspec) and ordered scans kept their concurrency:
the default command (load average 0.42 at the start, 1.12 at the end; 2 min 26 s)::

    export                    rows       s   rows/s  vs adt   cli us  vs adt  stub us   busy peak MB
    adt + pandas         1,000,000    80.2   12,463   1.00x     74.7   1.00x      5.6     7%    3257
    azt export_parquet     100,000     0.6  157,550  12.64x      4.3  17.35x      4.7    74%     254
    azt export (CLI)       100,000     0.6  177,183  14.22x      4.2  17.97x      4.3    76%     249
    azt export_parquet   1,000,000     7.3  136,686  10.97x      4.6  16.23x      5.3    72%     262
    azt export (CLI)     1,000,000     8.0  125,106  10.04x      5.1  14.65x      5.8    73%     264
      ordered=False      1,000,000     4.9  206,034  16.53x      4.8  15.72x      4.2    88%     222
    azt peak memory 254 MB at 100,000 rows, 262 MB at 1,000,000 (1.03x for 10x the rows)
    process CPU per row, start-up and imports (pandas, pyarrow, the client) included:
      adt + pandas         1,000,000 rows    75.6 us  (file 40.4 MB)
      azt export_parquet     100,000 rows    12.6 us  (file 3.4 MB)
      azt export_parquet   1,000,000 rows     5.4 us  (file 34.2 MB)

    read_dask of 100,000 rows in 8 partitions (LocalCluster, processes, 1 thread each)
    workers       rows       s   rows/s  scaling  workers us  stub us  stub busy
    1          100,000     0.7  141,567    1.00x         4.4      4.5        64%
    2          100,000     0.6  156,234    1.10x         5.3      4.5        70%

    decode of the stub's first 50 pages (23.3 MB; CPU us per row, best of 3)
    json.loads                      1.59 us    1.00x json.loads
    azt Arrow decode                1.77 us    1.12x json.loads
    azt decode_feed (entities)      3.09 us    1.95x json.loads

On a loaded machine the wall-clock ratio follows the load (with other jobs running, before
those two changes, 3.0x to 8.0x at a million rows over six runs) while the client's CPU per
row stays the steady figure (8.4x to 14.5x less than the peer's in every run then). The
stub's CPU per row served is the same for both and bounds azt's rate: azt's client and the
stub share the machine's two cores, the peer's rate is its own client's CPU (the stub 7 %
busy).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import io
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow.parquet as pq
from _frames_rows import PER_PARTITION, TABLE, size_filter

from azt import SharedKeyCredential, TableClient, generate_table_sas
from azt._core.wire import json as wire_json
from azt.cli import main as azt_cli
from azt.frames import FrameDecoder, export_parquet
from azt_server_stub import DEV_ACCOUNT, DEV_KEY

HERE = Path(__file__).resolve().parent


def connection_string(port: int) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
    )


# --- children: one export each, in a fresh process ------------------------------------


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _import_pandas() -> None:
    """pyarrow imports pandas, when it is installed, the first time it builds an array from
    a Python list (half a second of CPU in a fresh process); the peer imports pandas before
    its clock starts, so azt's children do too: neither side's export pays for it."""
    importlib.import_module("pandas")


def child_azt(conn: str, size: int, path: str, *, ordered: bool = True) -> dict[str, Any]:
    _import_pandas()

    async def run() -> int:
        async with TableClient.from_connection_string(conn, TABLE) as table:
            return await export_parquet(
                table, path, filter=size_filter(size), concurrency=4, ordered=ordered
            )

    cpu0 = _cpu()
    start = time.perf_counter()
    rows = asyncio.run(run())
    seconds = time.perf_counter() - start
    return _child_result(rows, seconds, cpu0)


def child_cli(conn: str, size: int, path: str) -> dict[str, Any]:
    _import_pandas()
    err = io.StringIO()
    argv = ["export", TABLE, "--format", "parquet", "-o", path, "--filter", size_filter(size)]
    cpu0 = _cpu()
    start = time.perf_counter()
    status = azt_cli([*argv, "--connection-string", conn], stderr=err)
    seconds = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"azt export failed ({status}): {err.getvalue()}")
    return _child_result(int(pq.read_metadata(path).num_rows), seconds, cpu0)


def child_adt(conn: str, size: int, path: str) -> dict[str, Any]:
    import pandas as pd
    from azure.data.tables import EntityProperty
    from azure.data.tables import TableClient as AdtTableClient

    cpu0 = _cpu()
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
    return _child_result(len(df), seconds, cpu0)


def _child_result(rows: int, seconds: float, cpu0: float) -> dict[str, Any]:
    cpu = _cpu()
    return {
        "rows": rows,
        "seconds": seconds,
        "cpu": cpu - cpu0,
        "cpu_total": cpu,
        "maxrss_mb": _maxrss_mb(),
    }


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far, from ``/proc`` (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_child(mode: str, conn: str, size: int, stub_pid: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "out.parquet")
        argv = [sys.executable, __file__, "--child", mode, "--conn", conn]
        argv += ["--size", str(size), "--out", path]
        stub0 = proc_cpu(stub_pid)
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        stub_cpu = proc_cpu(stub_pid) - stub0
        if done.returncode != 0:
            raise RuntimeError(f"{mode} failed:\n{done.stderr}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        result["file_mb"] = os.path.getsize(path) / 2**20
        # the stub works for the child only while it exports (the child's start-up and
        # imports send nothing); its busy share is over the export's wall time
        result["stub_cpu"] = stub_cpu
        return result


# --- the stub -------------------------------------------------------------------------


class SeededStub:
    """``benchmarks/_seeded_stub.py`` in its own process, holding ``rows`` entities."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.seed_seconds = 0.0

    def __enter__(self) -> SeededStub:
        argv = [sys.executable, str(HERE / "_seeded_stub.py"), "--module", "_frames_rows"]
        argv += ["--rows", str(self.rows), "--port", "0"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            word, _, rest = line.partition(" ")
            if word == "seeded":
                self.seed_seconds = float(rest.split()[1])
            elif word == "listening":
                self.port = int(rest)
                return self
        self.proc.wait(10)
        raise RuntimeError(f"the seeded stub exited ({self.proc.returncode}) before listening")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid


# --- the decode alone, on the stub's own pages -------------------------------------------


def fetch_pages(port: int, pages: int) -> list[bytes]:
    """The first ``pages`` query pages of the table as the stub sends them (minimal
    metadata), through a read-only table SAS and plain HTTP."""
    sas = generate_table_sas(
        SharedKeyCredential(DEV_ACCOUNT, DEV_KEY),
        TABLE,
        permission="r",
        expiry="2099-01-01T00:00:00Z",
    )
    base = f"http://127.0.0.1:{port}/{DEV_ACCOUNT}/{TABLE}()?{sas}"
    headers = {
        "Accept": "application/json;odata=minimalmetadata",
        "x-ms-version": "2019-02-02",
        "DataServiceVersion": "3.0",
    }
    bodies: list[bytes] = []
    url = base
    while len(bodies) < pages:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as answer:
            bodies.append(answer.read())
            npk = answer.headers.get("x-ms-continuation-NextPartitionKey")
            nrk = answer.headers.get("x-ms-continuation-NextRowKey")
        if npk is None:
            break
        url = f"{base}&NextPartitionKey={quote(npk)}"
        if nrk is not None:
            url += f"&NextRowKey={quote(nrk)}"
    return bodies


def cpu_per_row(decode: Any, bodies: list[bytes], rows: int, rounds: int = 3) -> float:
    best = math.inf
    for _ in range(rounds):
        start = time.process_time()
        for body in bodies:
            decode(body)
        best = min(best, time.process_time() - start)
    return best / rows * 1e6


def decode_figures(bodies: list[bytes]) -> dict[str, float]:
    rows = sum(len(wire_json.decode_rows(b)) for b in bodies)
    dec = FrameDecoder()
    return {
        "json.loads": cpu_per_row(json.loads, bodies, rows),
        "azt Arrow decode": cpu_per_row(
            lambda b: dec.decode(wire_json.decode_rows(b)), bodies, rows
        ),
        "azt decode_feed (entities)": cpu_per_row(wire_json.decode_feed, bodies, rows),
    }


# --- Dask -------------------------------------------------------------------------------


def dask_read(
    conn: str, size: int, workers: int, partitions: int, stub_pid: int
) -> dict[str, float]:
    """``read_dask`` over the first ``size`` rows on a LocalCluster of ``workers`` worker
    processes (one thread each), the frame counted on the workers: rows, seconds, the
    workers' CPU and the stub's over the read."""
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
        workers0 = sum(dask_client.run(time.process_time).values())
        stub0 = proc_cpu(stub_pid)
        start = time.perf_counter()
        ddf: Any = read_dask(conn, TABLE, partitions=partitions, filter=size_filter(size))
        n = int(ddf.map_partitions(len).compute().sum())
        seconds = time.perf_counter() - start
        stub_cpu = proc_cpu(stub_pid) - stub0
        workers_cpu = sum(dask_client.run(time.process_time).values()) - workers0
    return {"rows": n, "seconds": seconds, "workers_cpu": workers_cpu, "stub_cpu": stub_cpu}


# --- the parent -----------------------------------------------------------------------


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} (2 cores: {os.cpu_count()})"


def _line(name: str, got: dict[str, Any], peer: dict[str, Any] | None, note: str = "") -> str:
    rows, seconds = got["rows"], got["seconds"]
    rate = rows / seconds
    cpu = got["cpu"] / rows * 1e6
    stub = got["stub_cpu"] / rows * 1e6
    busy = got["stub_cpu"] / seconds * 100
    if peer is None:
        vs_rate = vs_cpu = "1.00x"
    else:
        vs_rate = f"{rate / (peer['rows'] / peer['seconds']):.2f}x"
        vs_cpu = f"{(peer['cpu'] / peer['rows'] * 1e6) / cpu:.2f}x"
    return (
        f"{name:<20}{rows:>10,}{seconds:>8.1f}{rate:>9,.0f}{vs_rate:>8}"
        f"{cpu:>9.1f}{vs_cpu:>8}{stub:>9.1f}{busy:>6.0f}%{got['maxrss_mb']:>8.0f}{note}"
    )


def main(sizes: list[int], peer_rows: int, pages: int, dask_rows: int) -> None:
    top = max([*sizes, peer_rows, dask_rows])
    top = -(-top // PER_PARTITION) * PER_PARTITION
    print(f"start: {_load()}")
    with SeededStub(top) as stub:
        conn = connection_string(stub.port)
        print(
            f"stub seeded with {top:,} entities in {stub.seed_seconds:.1f} s "
            "(through its backend, benchmark-only)\n"
        )
        print(
            f"{'export':<20}{'rows':>10}{'s':>8}{'rows/s':>9}{'vs adt':>8}"
            f"{'cli us':>9}{'vs adt':>8}{'stub us':>9}{'busy':>7}{'peak MB':>8}"
            "    (us: CPU per row; busy: stub CPU / wall)"
        )
        peer: dict[str, Any] | None = None
        if peer_rows:
            peer = run_child("adt", conn, peer_rows, stub.pid)
            print(_line("adt + pandas", peer, None))
        results: list[dict[str, Any]] = []
        for size in sizes:
            got = run_child("azt", conn, size, stub.pid)
            results.append(got)
            note = ""
            if peer is not None and peer["rows"] < got["rows"]:
                note = f"  (peer extrapolated from {peer['rows']:,} rows)"
            print(_line("azt export_parquet", got, peer, note))
            cli = run_child("cli", conn, size, stub.pid)
            print(_line("azt export (CLI)", cli, peer, note))
        free = run_child("azt-unordered", conn, sizes[-1], stub.pid)
        print(_line("  ordered=False", free, peer, note))
        if len(results) > 1:
            a, b = results[0], results[-1]
            print(
                f"azt peak memory {a['maxrss_mb']:.0f} MB at {a['rows']:,} rows, "
                f"{b['maxrss_mb']:.0f} MB at {b['rows']:,} ({b['maxrss_mb'] / a['maxrss_mb']:.2f}x "
                f"for {b['rows'] / a['rows']:.0f}x the rows)"
            )
        print("process CPU per row, start-up and imports (pandas, pyarrow, the client) included:")
        totals = [("azt export_parquet", r) for r in results]
        if peer is not None:
            totals.insert(0, ("adt + pandas", peer))
        for name, got in totals:
            total = got["cpu_total"] / got["rows"] * 1e6
            file_size = f"file {got['file_mb']:.1f} MB"
            print(f"  {name:<20}{got['rows']:>10,} rows{total:>8.1f} us  ({file_size})")
        if dask_rows:
            print(
                f"\nread_dask of {dask_rows:,} rows in 8 partitions (LocalCluster, processes, "
                "1 thread each)"
            )
            print(
                f"{'workers':<8}{'rows':>10}{'s':>8}{'rows/s':>9}{'scaling':>9}"
                f"{'workers us':>12}{'stub us':>9}{'stub busy':>11}"
            )
            one = 0.0
            for workers in (1, 2):
                d = dask_read(conn, dask_rows, workers, 8, stub.pid)
                rate = d["rows"] / d["seconds"]
                one = one or rate
                print(
                    f"{workers:<8}{int(d['rows']):>10,}{d['seconds']:>8.1f}{rate:>9,.0f}"
                    f"{rate / one:>8.2f}x{d['workers_cpu'] / d['rows'] * 1e6:>12.1f}"
                    f"{d['stub_cpu'] / d['rows'] * 1e6:>9.1f}"
                    f"{d['stub_cpu'] / d['seconds'] * 100:>10.0f}%"
                )
        bodies = fetch_pages(stub.port, pages)
    print(
        f"\ndecode of the stub's first {len(bodies)} pages "
        f"({sum(map(len, bodies)) / 2**20:.1f} MB; CPU us per row, best of 3)"
    )
    figures = decode_figures(bodies)
    ref = figures["json.loads"]
    for name, us in figures.items():
        print(f"{name:<28}{us:>8.2f} us{us / ref:>8.2f}x json.loads")
    print(f"\nend: {_load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="100000,1000000", help="export sizes, rows")
    parser.add_argument(
        "--peer-rows",
        type=int,
        default=None,
        help="rows the azure-data-tables + pandas peer exports (default: the largest size; "
        "0: none); its rate stands in, labelled, for larger sizes",
    )
    parser.add_argument("--pages", type=int, default=50, help="pages for the decode figures")
    parser.add_argument("--dask-rows", type=int, default=100_000, help="0: no Dask read")
    parser.add_argument("--child", choices=("azt", "azt-unordered", "cli", "adt"), default=None)
    parser.add_argument("--conn", default="")
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.child is not None:
        runner: dict[str, Callable[[str, int, str], dict[str, Any]]] = {
            "azt": child_azt,
            "azt-unordered": functools.partial(child_azt, ordered=False),
            "cli": child_cli,
            "adt": child_adt,
        }
        print(json.dumps(runner[args.child](args.conn, args.size, args.out)))
    else:
        sizes = sorted(int(s) for s in args.sizes.split(","))
        peer_rows = sizes[-1] if args.peer_rows is None else args.peer_rows
        main(sizes, peer_rows, args.pages, args.dask_rows)
