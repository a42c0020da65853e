"""The blocking API (``azt.sync``) vs the async client, with azure-data-tables' blocking
client as the peer, in the same run against the same stub.

The stub runs in a separate process (``python -m azt_server_stub --port 0``), so the
server's time is not spent on the clients' cores and the ratios show what the blocking
layer adds: the private event loop driven by the calling thread. Scenarios, each run
sequentially (one operation after another):

* single inserts (one entity per request),
* point reads,
* 100-operation entity group transactions,
* a query of 5,000 entities (five pages of 1,000), cost per entity.

Each round runs each scenario for every client in turn (rotating the order); the best
round counts. It prints the
cost per operation and the ratios sync/async (target: at most 1.2) and
azure-data-tables/sync. Run: ``.venv/bin/python benchmarks/sync_bench.py [--n 300]``.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import azt
import azt.sync

QUERY_ENTITIES = 5_000
BATCH_SIZE = 100
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def make_entity(pk: str, i: int) -> dict[str, Any]:
    return {
        "PartitionKey": pk,
        "RowKey": f"{i:08d}",
        "Name": f"name-{i}",
        "Count": i,
        "Score": i * 0.5,
        "Active": i % 2 == 0,
        "When": datetime(2024, 1, 1, 12, 0, 0, i % 1000 * 1000, tzinfo=UTC),
        "Id": uuid.UUID(int=i),
        "Note": "x" * 40,
    }


class Scenarios:
    """The four scenarios of one client, each a blocking callable (the async client's are
    run by one ``asyncio.run`` per scenario, so its loop is not part of the per-op cost)."""

    name: str

    def insert_all(self, pk: str, n: int) -> None:
        raise NotImplementedError

    def read_all(self, pk: str, n: int) -> None:
        raise NotImplementedError

    def batches(self, pks: list[str]) -> None:
        raise NotImplementedError

    def query(self, pk: str) -> int:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class AsyncAzt(Scenarios):
    name = "azt async"

    def __init__(self, conn: str, table: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.table = azt.TableClient.from_connection_string(conn, table)
        self.loop.run_until_complete(self.table.create_table_if_not_exists())

    def insert_all(self, pk: str, n: int) -> None:
        async def go() -> None:
            for i in range(n):
                await self.table.insert_entity(make_entity(pk, i))

        self.loop.run_until_complete(go())

    def read_all(self, pk: str, n: int) -> None:
        async def go() -> None:
            for i in range(n):
                await self.table.get_entity(pk, f"{i:08d}")

        self.loop.run_until_complete(go())

    def batches(self, pks: list[str]) -> None:
        async def go() -> None:
            for pk in pks:
                batch = self.table.batch()
                for i in range(BATCH_SIZE):
                    batch.create(make_entity(pk, i))
                await self.table.submit_transaction(batch)

        self.loop.run_until_complete(go())

    def query(self, pk: str) -> int:
        async def go() -> int:
            count = 0
            async for _ in self.table.query_entities("PartitionKey eq @pk", parameters={"pk": pk}):
                count += 1
            return count

        return self.loop.run_until_complete(go())

    def close(self) -> None:
        self.loop.run_until_complete(self.table.aclose())
        self.loop.close()


class SyncAzt(Scenarios):
    name = "azt.sync"

    def __init__(self, conn: str, table: str) -> None:
        self.table = azt.sync.TableClient.from_connection_string(conn, table)
        self.table.create_table_if_not_exists()

    def insert_all(self, pk: str, n: int) -> None:
        for i in range(n):
            self.table.insert_entity(make_entity(pk, i))

    def read_all(self, pk: str, n: int) -> None:
        for i in range(n):
            self.table.get_entity(pk, f"{i:08d}")

    def batches(self, pks: list[str]) -> None:
        for pk in pks:
            batch = self.table.batch()
            for i in range(BATCH_SIZE):
                batch.create(make_entity(pk, i))
            self.table.submit_transaction(batch)

    def query(self, pk: str) -> int:
        count = 0
        for _ in self.table.query_entities("PartitionKey eq @pk", parameters={"pk": pk}):
            count += 1
        return count

    def close(self) -> None:
        self.table.close()


class AzureDataTablesSync(Scenarios):
    name = "azure-data-tables"

    def __init__(self, conn: str, table: str) -> None:
        from azure.data.tables import TableClient

        self.table = TableClient.from_connection_string(conn, table)
        try:
            self.table.create_table()
        except Exception as exc:  # ResourceExistsError
            if "Exists" not in type(exc).__name__:
                raise

    def insert_all(self, pk: str, n: int) -> None:
        for i in range(n):
            self.table.create_entity(make_entity(pk, i))

    def read_all(self, pk: str, n: int) -> None:
        for i in range(n):
            self.table.get_entity(pk, f"{i:08d}")

    def batches(self, pks: list[str]) -> None:
        for pk in pks:
            self.table.submit_transaction(
                [("create", make_entity(pk, i)) for i in range(BATCH_SIZE)]
            )

    def query(self, pk: str) -> int:
        count = 0
        for _ in self.table.query_entities("PartitionKey eq @pk", parameters={"pk": pk}):
            count += 1
        return count

    def close(self) -> None:
        self.table.close()


def measure(clients: list[Scenarios], r: int, n: int) -> dict[tuple[str, str], float]:
    """One round: each scenario runs for every client in turn (rotated), so load changes
    on a shared machine hit the clients alike; seconds per operation (per entity)."""
    out: dict[tuple[str, str], float] = {}
    order = clients[r % len(clients) :] + clients[: r % len(clients)]
    n_batches = max(3, n // 50)
    pks = [f"b{r}x{b}" for b in range(n_batches)]
    for c in order:
        t = time.perf_counter()
        c.insert_all(f"ins{r}", n)
        out[(c.name, "single insert")] = (time.perf_counter() - t) / n
    for c in order:
        t = time.perf_counter()
        c.read_all(f"ins{r}", n)
        out[(c.name, "point read")] = (time.perf_counter() - t) / n
    for c in order:
        t = time.perf_counter()
        c.batches(pks)
        out[(c.name, "100-op batch")] = (time.perf_counter() - t) / n_batches
    for c in order:
        t = time.perf_counter()
        count = c.query("Q")
        out[(c.name, "query (per entity)")] = (time.perf_counter() - t) / QUERY_ENTITIES
        assert count == QUERY_ENTITIES, count
    return out


def start_stub() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "azt_server_stub", "--port", "0", "--log-level", "WARNING"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if found is None:
        proc.kill()
        raise RuntimeError(f"the stub did not start: {line!r}")
    conn = (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
        f"AccountKey={DEV_KEY};TableEndpoint=http://127.0.0.1:{found.group(1)}/devstoreaccount1;"
    )
    return proc, conn


def run(n: int, rounds: int) -> dict[str, dict[str, float]]:
    proc, conn = start_stub()
    try:
        clients: list[Scenarios] = [
            AsyncAzt(conn, "benchasync"),
            SyncAzt(conn, "benchsync"),
            AzureDataTablesSync(conn, "benchadt"),
        ]
        loader = azt.sync.TableServiceClient.from_connection_string(conn)
        for name in ("benchasync", "benchsync", "benchadt"):
            table = loader.get_table_client(name)
            for start in range(0, QUERY_ENTITIES, BATCH_SIZE):
                batch = table.batch()
                for i in range(start, start + BATCH_SIZE):
                    batch.create(make_entity("Q", i))
                table.submit_transaction(batch)
        loader.close()
        best: dict[tuple[str, str], float] = {}
        for r in range(rounds):
            for key, value in measure(clients, r, n).items():
                best[key] = min(best.get(key, float("inf")), value)
        for client in clients:
            client.close()
    finally:
        proc.terminate()
        proc.wait(10)
    results: dict[str, dict[str, float]] = {}
    for (name, op), value in best.items():
        results.setdefault(op, {})[name] = value
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=200, help="single inserts / reads per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = run(args.n, args.rounds)
    print(
        f"\nper-operation cost, best of {args.rounds} rounds (n={args.n}; stub in its own process)"
    )
    print(
        f"{'operation':<20}{'azt async':>12}{'azt.sync':>12}{'azure-data-tables':>19}"
        f"{'sync/async':>12}{'adt/sync':>10}"
    )
    for op, row in results.items():
        a, s, adt = row["azt async"], row["azt.sync"], row["azure-data-tables"]
        print(
            f"{op:<20}{a * 1e6:>9.1f} us{s * 1e6:>9.1f} us{adt * 1e6:>16.1f} us"
            f"{s / a:>12.2f}{adt / s:>10.2f}"
        )


if __name__ == "__main__":
    main()
