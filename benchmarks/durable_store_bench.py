"""Start time, memory and range-query cost of the stub's durable store (a script, not a test).

For each size (default 100,000, 1,000,000 and 3,000,000 entities) a store is written
directly with SQLite in the stub's own layout and key encoding (``_store.key_blob``,
``_store.encode_props``), not through HTTP. Then ``python -m azt_server_stub --location``
is started on it and measured:

* start: from spawning the process until it answers an HTTP request (best of
  ``--starts``; the first start of each store is cold);
* RSS after start and after the queries (``/proc``, Linux);
* a 1,000-row range query (one PartitionKey, a RowKey range), best of ``--repeat``,
  signed SharedKey over loopback.

The peers, measured in the same run: the same stub started with an empty in-memory
store (start and RSS ratios), and the same query on a 10,000-entity store (query
ratio; the goal is within 1.5x at 3,000,000).

Usage::

    .venv/bin/python benchmarks/durable_store_bench.py [--sizes 100000,1000000,3000000]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from urllib.parse import quote

import aiohttp
from yarl import URL

from azt_server_stub import DEV_ACCOUNT, DEV_KEY
from azt_server_stub._store import DB_FILE, SqliteStore, encode_props, key_blob
from azt_server_stub.model import Edm

REPO = Path(__file__).resolve().parents[1]
TABLE = "bench"
PER_PARTITION = 2000
_KEY = base64.b64decode(DEV_KEY)
_WHEN = 638_400_000_000_000_000


def build_store(directory: Path, n: int) -> float:
    """Write ``n`` entities (``PER_PARTITION`` per PartitionKey) in the stub's layout;
    returns seconds."""
    started = time.perf_counter()
    store = SqliteStore(directory)
    store.create_table(DEV_ACCOUNT, TABLE, "Bench")
    store.close()
    db = sqlite3.connect(directory / DB_FILE, isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=OFF")
        (tid,) = db.execute("SELECT tid FROM table_meta WHERE lname = ?", (TABLE,)).fetchone()

        def rows() -> Iterator[tuple[int, bytes, bytes, int, str]]:
            for i in range(n):
                pk = f"p{i // PER_PARTITION:05d}"
                rk = f"{i % PER_PARTITION:06d}"
                props = encode_props(
                    {
                        "Name": (Edm.STRING, f"name {i}"),
                        "Count": (Edm.INT32, i),
                        "Big": (Edm.INT64, i * 1_000_003),
                        "Ratio": (Edm.DOUBLE, i / 7),
                        "Flag": (Edm.BOOLEAN, i % 2 == 0),
                        "When": (Edm.DATETIME, _WHEN + i),
                    }
                )
                yield (tid, key_blob(pk), key_blob(rk), _WHEN + i, props)

        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO entity_rows (tid, pk, rk, ts, props) VALUES (?, ?, ?, ?, ?)",
            rows(),
        )
        db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES ('last_timestamp', ?)", (_WHEN + n,))
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Stub:
    """``python -m azt_server_stub`` in a child process, timed until it answers."""

    def __init__(self, location: Path | None) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        args = ["--port", str(self.port), "--log-level", "WARNING"]
        if location is not None:
            args += ["--location", str(location)]
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "azt_server_stub", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=REPO,
        )
        deadline = started + 120
        while True:
            try:
                urllib.request.urlopen(f"{self.endpoint}/{DEV_ACCOUNT}/Tables", timeout=5)
                break
            except urllib.error.HTTPError:  # any answer will do (403: unsigned)
                break
            except (urllib.error.URLError, ConnectionError):
                if self.proc.poll() is not None or time.perf_counter() > deadline:
                    raise RuntimeError("the stub did not start") from None
                time.sleep(0.005)
        self.start_seconds = time.perf_counter() - started

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


async def range_query_ms(endpoint: str, pk: str, repeat: int) -> tuple[float, int]:
    """Best time of a 1,000-row range query (SharedKey-signed GET)."""
    flt = quote(f"PartitionKey eq '{pk}' and RowKey ge '000500' and RowKey lt '001500'", safe="")
    raw_path = f"/{DEV_ACCOUNT}/{TABLE}()"
    best, count = float("inf"), 0
    async with aiohttp.ClientSession() as session:
        for _ in range(repeat):
            date = formatdate(usegmt=True)
            sts = f"GET\n\n\n{date}\n/{DEV_ACCOUNT}{raw_path}"
            sig = base64.b64encode(hmac.new(_KEY, sts.encode(), hashlib.sha256).digest())
            headers = {
                "x-ms-date": date,
                "x-ms-version": "2019-02-02",
                "Accept": "application/json;odata=minimalmetadata",
                "DataServiceVersion": "3.0",
                "Authorization": f"SharedKey {DEV_ACCOUNT}:{sig.decode()}",
            }
            url = URL(f"{endpoint}{raw_path}?$filter={flt}", encoded=True)
            t0 = time.perf_counter()
            async with session.get(url, headers=headers) as resp:
                body = await resp.read()
            best = min(best, time.perf_counter() - t0)
            if resp.status != 200:
                raise RuntimeError(f"query: {resp.status} {body[:300]!r}")
            count = len(json.loads(body)["value"])
    return best * 1000, count


def measure(location: Path | None, n: int, repeat: int, starts: int) -> dict[str, float]:
    """Best start of ``starts`` (the first is cold), then RSS and the query on the last."""
    best = float("inf")
    for _ in range(starts - 1):
        earlier = Stub(location)
        earlier.stop()
        best = min(best, earlier.start_seconds)
    stub = Stub(location)
    try:
        best = min(best, stub.start_seconds)
        out = {"start_s": best, "rss_start_mib": rss_mib(stub.proc.pid)}
        if location is not None:
            middle = f"p{(n // PER_PARTITION) // 2:05d}"
            out["query_ms"], rows = asyncio.run(range_query_ms(stub.endpoint, middle, repeat))
            if rows != 1000:
                raise RuntimeError(f"the range query returned {rows} rows, not 1000")
            out["rss_after_mib"] = rss_mib(stub.proc.pid)
        return out
    finally:
        stub.stop()


def main(sizes: list[int], repeat: int, starts: int, keep: Path | None) -> None:
    with tempfile.TemporaryDirectory(dir=keep) as folder:
        root = Path(folder)
        peer = measure(None, 0, repeat, starts)
        small_dir = root / "n10000"
        build_store(small_dir, 10_000)
        small = measure(small_dir, 10_000, repeat, starts)
        print(
            f"peer: in-memory stub, empty: start {peer['start_s'] * 1000:.0f} ms, "
            f"RSS {peer['rss_start_mib']:.1f} MiB"
        )
        print(f"peer: 10,000-entity store: 1,000-row range query {small['query_ms']:.2f} ms")
        header = (
            f"{'entities':>10} {'build s':>8} {'db MiB':>7} {'start ms':>9} {'x peer':>7} "
            f"{'RSS MiB':>8} {'x peer':>7} {'RSS after':>10} {'query ms':>9} {'x 10k':>6}"
        )
        print(header)
        for n in sizes:
            directory = root / f"n{n}"
            built = build_store(directory, n)
            size = (directory / DB_FILE).stat().st_size / 2**20
            got = measure(directory, n, repeat, starts)
            print(
                f"{n:>10,} {built:>8.1f} {size:>7.0f} {got['start_s'] * 1000:>9.0f} "
                f"{got['start_s'] / peer['start_s']:>7.2f} {got['rss_start_mib']:>8.1f} "
                f"{got['rss_start_mib'] / peer['rss_start_mib']:>7.2f} "
                f"{got['rss_after_mib']:>10.1f} {got['query_ms']:>9.2f} "
                f"{got['query_ms'] / small['query_ms']:>6.2f}",
                flush=True,
            )
            for path in directory.iterdir():
                path.unlink()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="100000,1000000,3000000")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--starts", type=int, default=3, help="starts per store (best)")
    parser.add_argument("--tmp", type=Path, default=None, help="where to write the stores")
    ns = parser.parse_args()
    main([int(s) for s in ns.sizes.split(",")], ns.repeat, ns.starts, ns.tmp)
