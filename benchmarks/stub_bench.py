"""Throughput of the stub's HTTP service (a script, not a test).

Runs the stub in-process and drives it over loopback with a bare aiohttp client
that signs requests itself (SharedKey), so the figures are the stub's cost plus
a minimal client, both in this one process:

* point reads/s, inserts/s, batch entities/s (100-entity change sets), query
  entities/s (1000-entity pages, minimal metadata);
* a 1,000-row range query on a 1,000,000-entity table vs the same query on a
  10,000-entity table (both tables are loaded through the backend directly);
* with ``--explorer``: the CPU time of a point read and of an insert (stub and client) with
  the stub serving the data explorer (its gate in front of the middlewares, every request
  recorded for its requests view) beside the same stub without it, as a ratio (rounds
  alternate, best of three each);
* with ``--durable``: inserts/s and batch entities/s with ``--location`` (SQLite,
  WAL, synchronous=FULL; concurrent writes share group commits), and point reads/s
  served while 8 clients insert (the fsyncs run on the writer thread).

Usage::

    .venv/bin/python benchmarks/stub_bench.py [--big 1000000] [--seconds 3] [--durable]
    .venv/bin/python benchmarks/stub_bench.py --explorer [--seconds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from pathlib import Path
from urllib.parse import quote

import aiohttp
from yarl import URL

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer
from azt_server_stub.backend import WriteOp
from azt_server_stub.model import Edm

ACCEPT = "application/json;odata=minimalmetadata"
_KEY = base64.b64decode(DEV_KEY)


class Client:
    """A minimal signing client (SharedKey, Table flavour)."""

    def __init__(self, session: aiohttp.ClientSession, endpoint: str) -> None:
        self.session = session
        self.endpoint = endpoint

    async def call(
        self,
        method: str,
        path: str,
        query: str = "",
        body: bytes | None = None,
        content_type: str = "",
        extra: dict[str, str] | None = None,
    ) -> tuple[int, bytes, dict[str, str]]:
        raw_path = f"/{DEV_ACCOUNT}{path}"
        date = formatdate(usegmt=True)
        sts = f"{method}\n\n{content_type}\n{date}\n/{DEV_ACCOUNT}{raw_path}"
        sig = base64.b64encode(hmac.new(_KEY, sts.encode(), hashlib.sha256).digest()).decode()
        headers = {
            "x-ms-date": date,
            "x-ms-version": "2019-02-02",
            "Accept": ACCEPT,
            "DataServiceVersion": "3.0",
            "Authorization": f"SharedKey {DEV_ACCOUNT}:{sig}",
        }
        if content_type:
            headers["Content-Type"] = content_type
        if extra:
            headers.update(extra)
        url = URL(self.endpoint + raw_path + (f"?{query}" if query else ""), encoded=True)
        async with self.session.request(method, url, headers=headers, data=body) as resp:
            payload = await resp.read()
            if resp.status >= 300:
                raise RuntimeError(f"{method} {path}: {resp.status} {payload[:300]!r}")
            return resp.status, payload, dict(resp.headers)


async def rate(seconds: float, concurrency: int, op: Callable[[int], Awaitable[int]]) -> float:
    """Units per second of ``op`` (returns units done) run by ``concurrency`` workers."""
    done = 0
    counter = 0
    deadline = time.perf_counter() + seconds
    start = time.perf_counter()

    async def worker() -> None:
        nonlocal done, counter
        while time.perf_counter() < deadline:
            counter += 1
            units = await op(counter)  # not `done += await ...`: that loses updates
            done += units

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (time.perf_counter() - start)


def entity(pk: str, rk: str, i: int) -> dict[str, object]:
    return {
        "PartitionKey": pk,
        "RowKey": rk,
        "Name": f"name {i}",
        "Count": i,
        "Big@odata.type": "Edm.Int64",
        "Big": str(i * 1_000_003),
        "Ratio": i / 7,
        "Flag": i % 2 == 0,
        "When@odata.type": "Edm.DateTime",
        "When": "2024-01-02T03:04:05.1234567Z",
    }


def load_direct(stub: StubServer, table: str, n: int, per_partition: int) -> float:
    """Load ``n`` small entities through the backend (100-op change sets); returns seconds."""
    backend = stub.backend
    backend.create_table(DEV_ACCOUNT, table)
    started = time.perf_counter()
    ops: list[WriteOp] = []
    for i in range(n):
        pk = f"p{i // per_partition:05d}"
        ops.append(WriteOp("insert", pk, f"{i % per_partition:06d}", {"v": (Edm.INT32, i)}))
        if len(ops) == 100 or (i + 1) % per_partition == 0:
            backend.execute_batch(DEV_ACCOUNT, table, ops)
            ops = []
    if ops:
        backend.execute_batch(DEV_ACCOUNT, table, ops)
    return time.perf_counter() - started


async def range_query_ms(client: Client, table: str, pk: str, repeat: int) -> tuple[float, int]:
    flt = quote(f"PartitionKey eq '{pk}' and RowKey ge '000000' and RowKey lt '001000'", safe="")
    best = float("inf")
    count = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        _, body, _ = await client.call("GET", f"/{table}()", f"$filter={flt}")
        best = min(best, time.perf_counter() - t0)
        count = len(json.loads(body)["value"])
    return best * 1000, count


async def main(big: int, seconds: float, concurrency: int) -> None:
    results: list[tuple[str, str]] = []
    async with StubServer() as stub, aiohttp.ClientSession() as session:
        client = Client(session, stub.endpoint)
        await client.call(
            "POST", "/Tables", body=b'{"TableName":"bench"}', content_type="application/json"
        )

        async def insert(i: int) -> int:
            body = json.dumps(entity("ins", f"{i:09d}", i)).encode()
            await client.call(
                "POST",
                "/bench",
                body=body,
                content_type="application/json",
                extra={"Prefer": "return-no-content"},
            )
            return 1

        results.append(("inserts/s", f"{await rate(seconds, concurrency, insert):,.0f}"))

        async def point_read(i: int) -> int:
            await client.call("GET", f"/bench(PartitionKey='ins',RowKey='{i % 500 + 1:09d}')")
            return 1

        results.append(("point reads/s", f"{await rate(seconds, concurrency, point_read):,.0f}"))

        async def batch(i: int) -> int:
            body, ctype = batch_body(stub.endpoint, i)
            _, out, _ = await client.call("POST", "/$batch", body=body, content_type=ctype)
            if b"HTTP/1.1 4" in out:
                raise RuntimeError(out[:500])
            return 100

        results.append(
            ("batch entities/s (100/batch)", f"{await rate(seconds, concurrency, batch):,.0f}")
        )

        async def query(i: int) -> int:
            flt = quote(f"PartitionKey eq 'b{i % 20 + 1}'", safe="")
            _, body, _ = await client.call("GET", "/bench()", f"$filter={flt}&$top=1000")
            n = body.count(b'"odata.etag"')
            return n

        results.append(
            (
                "query entities/s (100-entity pages)",
                f"{await rate(seconds, concurrency, query):,.0f}",
            )
        )

        async def full_page(i: int) -> int:
            _, body, _ = await client.call("GET", "/bench()", "$top=1000")
            return body.count(b'"odata.etag"')

        results.append(
            (
                "query entities/s (1000-entity pages)",
                f"{await rate(seconds, max(1, concurrency // 4), full_page):,.0f}",
            )
        )

        small_load = load_direct(stub, "small", 10_000, 1000)
        big_load = load_direct(stub, "big", big, 1000)
        small_ms, small_n = await range_query_ms(client, "small", "p00005", 5)
        big_ms, big_n = await range_query_ms(client, "big", f"p{big // 2000:05d}", 5)
        results.append(("load 10,000 entities (backend)", f"{small_load:.2f} s"))
        results.append((f"load {big:,} entities (backend)", f"{big_load:.2f} s"))
        results.append(
            (f"1,000-row range query, 10,000-entity table ({small_n} rows)", f"{small_ms:.1f} ms")
        )
        results.append(
            (f"1,000-row range query, {big:,}-entity table ({big_n} rows)", f"{big_ms:.1f} ms")
        )
    width = max(len(name) for name, _ in results)
    print(f"{'measure':<{width}}  value")
    print(f"{'-' * width}  {'-' * 12}")
    for name, value in results:
        print(f"{name:<{width}}  {value}")


def batch_body(endpoint: str, i: int, pk_prefix: str = "b") -> tuple[bytes, str]:
    """A 100-insert change set for partition ``{pk_prefix}{i}``: (body, Content-Type)."""
    boundary, cs = f"batch_{i}", f"changeset_{i}"
    parts = []
    for j in range(100):
        payload = json.dumps(entity(f"{pk_prefix}{i}", f"{j:04d}", j))
        parts.append(
            f"--{cs}\r\nContent-Type: application/http\r\n"
            "Content-Transfer-Encoding: binary\r\n\r\n"
            f"POST {endpoint}/{DEV_ACCOUNT}/bench HTTP/1.1\r\n"
            "Content-Type: application/json\r\nPrefer: return-no-content\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n{payload}\r\n"
        )
    body = (
        f"--{boundary}\r\nContent-Type: multipart/mixed; boundary={cs}\r\n\r\n"
        + "".join(parts)
        + f"--{cs}--\r\n--{boundary}--\r\n"
    ).encode()
    return body, f"multipart/mixed; boundary={boundary}"


async def durable(seconds: float, concurrency: int) -> list[tuple[str, str]]:
    """Write rates with a durable location, and reads served beside durable writes."""
    results: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        config = StubConfig(location=Path(tmp))
        async with StubServer(config) as stub, aiohttp.ClientSession() as session:
            client = Client(session, stub.endpoint)
            await client.call(
                "POST", "/Tables", body=b'{"TableName":"bench"}', content_type="application/json"
            )

            async def insert(i: int) -> int:
                body = json.dumps(entity("ins", f"{i:09d}", i)).encode()
                await client.call(
                    "POST",
                    "/bench",
                    body=body,
                    content_type="application/json",
                    extra={"Prefer": "return-no-content"},
                )
                return 1

            results.append(
                ("durable inserts/s", f"{await rate(seconds, concurrency, insert):,.0f}")
            )

            async def batch(i: int) -> int:
                body, ctype = batch_body(stub.endpoint, i, "d")
                await client.call("POST", "/$batch", body=body, content_type=ctype)
                return 100

            results.append(
                (
                    "durable batch entities/s (100/batch)",
                    f"{await rate(seconds, concurrency, batch):,.0f}",
                )
            )

            async def point_read(i: int) -> int:
                await client.call("GET", f"/bench(PartitionKey='ins',RowKey='{i % 500 + 1:09d}')")
                return 1

            async def insert_more(i: int) -> int:
                body = json.dumps(entity("more", f"{i:09d}", i)).encode()
                await client.call("POST", "/bench", body=body, content_type="application/json")
                return 1

            alone = await rate(seconds, concurrency, point_read)
            writers = asyncio.ensure_future(rate(seconds, 8, insert_more))
            beside = await rate(seconds, concurrency, point_read)
            await writers
            results.append(("point reads/s (durable store, no writes)", f"{alone:,.0f}"))
            results.append(("point reads/s beside 8 durable inserters", f"{beside:,.0f}"))
    return results


async def explorer_cost(seconds: float, concurrency: int) -> list[tuple[str, str]]:
    """CPU microseconds per request (this process: stub and client) with the explorer on,
    beside off; best of 3 alternating rounds. CPU time, not a rate: other processes on a
    loaded machine slow the rate, not the CPU a request takes."""
    best: dict[tuple[str, bool], float] = {}
    for _round in range(3):
        for explorer in (False, True):
            async with (
                StubServer(explorer=explorer) as stub,
                aiohttp.ClientSession() as session,
            ):
                client = Client(session, stub.endpoint)
                await client.call(
                    "POST",
                    "/Tables",
                    body=b'{"TableName":"bench"}',
                    content_type="application/json",
                )

                async def insert(i: int, client: Client = client) -> int:
                    body = json.dumps(entity("ins", f"{i:09d}", i)).encode()
                    extra = {"Prefer": "return-no-content"}
                    await client.call(
                        "POST", "/bench", body=body, content_type="application/json", extra=extra
                    )
                    return 1

                async def point_read(i: int, client: Client = client) -> int:
                    await client.call(
                        "GET", f"/bench(PartitionKey='ins',RowKey='{i % 500 + 1:09d}')"
                    )
                    return 1

                for name, op in (("insert", insert), ("point read", point_read)):
                    cpu = time.process_time()
                    wall = time.perf_counter()
                    per_second = await rate(seconds, concurrency, op)
                    done = per_second * (time.perf_counter() - wall)
                    micros = (time.process_time() - cpu) / max(done, 1.0) * 1e6
                    key = (name, explorer)
                    best[key] = min(best.get(key, float("inf")), micros)
    rows = []
    for name in ("insert", "point read"):
        off, on = best[name, False], best[name, True]
        rows.append((f"{name}: CPU us without / with the explorer", f"{off:.1f} / {on:.1f}"))
        rows.append((f"{name}: with / without", f"{on / off:.3f}"))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--big", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--durable", action="store_true", help="only the durable-store figures")
    parser.add_argument("--explorer", action="store_true", help="only the explorer's cost")
    ns = parser.parse_args()
    if ns.explorer:
        for name, value in asyncio.run(explorer_cost(ns.seconds, ns.concurrency)):
            print(f"{name:<42}  {value}")
    elif ns.durable:
        rows = asyncio.run(durable(ns.seconds, ns.concurrency))
        for name, value in rows:
            print(f"{name:<42}  {value}")
    else:
        asyncio.run(main(ns.big, ns.seconds, ns.concurrency))
