"""The stub vs Azurite, each in its own process, driven by the same azt client (a script).

Both servers run as separate processes on 127.0.0.1 (free ports); this process runs one
``azt.TableServiceClient`` per server and measures, in alternated rounds (the order of
the two servers flips every round; best of the rounds is kept), the throughput of:

* single inserts, sequential (inserts/s);
* single inserts, 16 concurrent (inserts/s);
* point reads (reads/s), sequential and 16 concurrent;
* 100-operation entity group transactions of inserts (transactions/s), sequential and
  16 concurrent (beside the sequential figure: the client's own work per transaction is
  then spread over the server's waits, so the server's capacity shows more);
* a query paged at 1,000 rows (pages/s);
* a key-range query returning 50 rows of one partition (queries/s).

It prints each figure for both servers and the ratio stub / Azurite (higher is better),
and, in memory, for single inserts, point reads and transactions sent one at a time, the
ceiling: the same client against a server that does no work
(``benchmarks/_replay_server.py`` replays the stub's own answers), which bounds the ratio
any server could reach against Azurite with this client; the same replay served through
the stub's own HTTP layer (``--front``: its connection protocol, aiohttp's parser and
request/response objects, one handler), which bounds what the Table service's own work
may cost for a given ratio; and, for single inserts and point reads, a minimal Table
server in Python (``benchmarks/_minimal_server.py``: only the framing, SharedKey
verification, the entity's JSON and a dict), which shows what the least Table work costs
on asyncio (all three measured in the same alternated rounds as the stub and Azurite).
On Linux it also prints each server process's own CPU time per unit (from ``/proc``):
with the client's cost in every round trip and a shared machine, that is the steadier
view of what a server change did.

The server CPU ratio of a transaction is that of each of its 100 entities ("batch
entity"), that of a page that of each of its 1,000 rows ("query entity"). In memory, before
the timed rounds, it also prints the resident memory each new server grows by per stored
1.1 KB entity (20,000 entities in 100-entity transactions; ``--no-memory`` skips it).

First with both stores in memory (``azt-stub`` / ``azurite --inMemoryPersistence``), then
both on disk (``azt-stub --location``, an fsync per acknowledged write / ``azurite
--location``, which rewrites its whole in-memory database as one JSON file every 5 s,
without fsync: a kill loses up to 5 s of acknowledged writes), then the stub on disk with
``--durability process`` (acknowledged once handed to the operating system: survives
``kill -9``, not power loss).

Azurite is installed as ``scripts/test-azurite.sh`` does (``.cache/azurite``, the
version pinned there); without ``node``/``npm`` the script prints a notice and exits 0.

Usage::

    .venv/bin/python benchmarks/stub_vs_azurite.py [--rounds 3] [--seconds 1.0]
        [--store memory|disk|process|both|all]
        [--ops insert,insert16,read,read16,batch,batch16,page,range]
        [--no-memory] [--stub-loop auto|asyncio|uvloop]

The stub runs as ``azt-stub`` does: on uvloop when it is installed (the ``[stub]`` extra;
``--stub-loop asyncio`` measures it on asyncio's own loop); the title names the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import azt
from azt_server_stub.__main__ import loop_factory

ROOT = Path(__file__).resolve().parent.parent
AZURITE_PREFIX = ROOT / ".cache" / "azurite"
AZURITE_JS = AZURITE_PREFIX / "node_modules" / "azurite" / "dist" / "src" / "table" / "main.js"
DEV_ACCOUNT = "devstoreaccount1"
DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
TABLE = "benchtable"
QUERY_PK = "Q"
QUERY_ROWS = 3_000  # three 1,000-row pages per pass
RANGE_ROWS = 50
BATCH_SIZE = 100
CONCURRENCY = 16

OPERATIONS: dict[str, str] = {
    "insert": "single inserts, sequential (/s)",
    "insert16": f"single inserts, {CONCURRENCY} concurrent (/s)",
    "read": "point reads (/s)",
    "read16": f"point reads, {CONCURRENCY} concurrent (/s)",
    "batch": f"{BATCH_SIZE}-op transactions (/s)",
    "batch16": f"{BATCH_SIZE}-op transactions, {CONCURRENCY} concurrent (/s)",
    "page": "query, 1,000-row pages (/s)",
    "range": f"key-range query, {RANGE_ROWS} rows (/s)",
}


def azurite_version() -> str:
    """The Azurite version ``scripts/test-azurite.sh`` pins (one source of truth)."""
    script = (ROOT / "scripts" / "test-azurite.sh").read_text()
    match = re.search(r'AZURITE_VERSION="\$\{AZURITE_VERSION:-([0-9.]+)\}"', script)
    if match is None:
        raise RuntimeError("cannot find the pinned Azurite version in scripts/test-azurite.sh")
    return os.environ.get("AZURITE_VERSION", match.group(1))


def ensure_azurite() -> Path | None:
    """Azurite's table entry point, installing the pinned version if needed (None: no node)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return None
    version = azurite_version()
    package = AZURITE_PREFIX / "node_modules" / "azurite" / "package.json"
    installed = json.loads(package.read_text())["version"] if package.exists() else None
    if not AZURITE_JS.exists() or installed != version:
        print(f"installing azurite@{version} into {AZURITE_PREFIX}", file=sys.stderr)
        AZURITE_PREFIX.mkdir(parents=True, exist_ok=True)
        argv = [npm, "install", "--prefix", str(AZURITE_PREFIX), "--no-audit", "--no-fund"]
        argv += ["--loglevel=error", f"azurite@{version}"]
        subprocess.run(
            argv,
            check=True,
            stdout=sys.stderr,
        )
    return AZURITE_JS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], name: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited ({proc.returncode}):\n{log.read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{name} did not listen on {port} within 30 s:\n{log.read_text()}")


def connection_string(port: int) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
        f"TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
    )


@contextmanager
def server_process(
    name: str, argv: list[str], port: int, workdir: Path
) -> Iterator[tuple[str, int]]:
    """Run one server process until the block ends; yields its connection string and pid."""
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_listening(port, proc, name, log)
        yield connection_string(port), proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stub_argv(
    port: int, location: Path | None, durability: str = "full", loop: str = "auto"
) -> list[str]:
    argv = [sys.executable, "-m", "azt_server_stub", "--port", str(port), "--loop", loop]
    argv += ["--log-level", "WARNING"]  # no access log line per request (Azurite: none either)
    if location is not None:
        argv += ["--location", str(location), "--durability", durability]
    return argv


def azurite_argv(js: Path, port: int, location: Path | None) -> list[str]:
    argv = ["node", str(js), "--tableHost", "127.0.0.1", "--tablePort", str(port)]
    argv += ["--disableTelemetry"]
    if location is None:
        argv += ["--inMemoryPersistence"]
    else:
        argv += ["--location", str(location)]
    return argv


# --- the workload ---------------------------------------------------------------------------


def make_entity(pk: str, rk: str, i: int) -> dict[str, Any]:
    return {
        "PartitionKey": pk,
        "RowKey": rk,
        "Name": f"name-{i}",
        "Count": i,
        "Score": i * 0.5,
        "Active": i % 2 == 0,
        "Big": 2**40 + i,
        "When": datetime(2024, 1, 1, 12, 0, 0, i % 1000 * 1000, tzinfo=UTC),
        "Note": "x" * 40,
    }


#: the stored entity of the memory figure: its JSON (annotations included) is 1.1 KB
MEMORY_NOTE = "x" * 850
MEMORY_BATCHES = 200  # 20,000 entities
WARM_BATCHES = 20  # loaded before the baseline


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a process (``VmRSS``); None where /proc is unavailable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


async def memory_per_entity(
    servers: list[tuple[str, int]], batches: int = MEMORY_BATCHES
) -> list[float | None]:
    """Resident memory each server grows by per stored 1.1 KB entity (bytes): RSS before and
    after ``batches`` 100-entity transactions into a new table (the baseline taken after
    ``WARM_BATCHES`` more), the servers loaded in turn
    chunk by chunk (so that both see the same host). The servers' heaps also hold what
    the requests left behind (buffers, garbage not yet collected): alike for both."""
    targets = [Target(f"mem{i}", *server) for i, server in enumerate(servers)]
    try:
        for target in targets:
            target.table = target.service.get_table_client("memtable")
            await target.table.create_table()
        before: list[int | None] = []
        for b in range(-WARM_BATCHES, batches):
            if b == 0:  # the baseline after a warm-up load (first heap growth, caches)
                await asyncio.sleep(0.5)
                before = [rss_bytes(t.pid) for t in targets]
            for target in targets:
                batch = target.table.batch()
                for i in range(BATCH_SIZE):
                    entity = make_entity(f"m{b + WARM_BATCHES:05d}", f"{i:08d}", i)
                    entity["Note"] = MEMORY_NOTE
                    batch.create(entity)
                await target.table.submit_transaction(batch)
        await asyncio.sleep(0.5)
        after = [rss_bytes(t.pid) for t in targets]
    finally:
        for target in targets:
            await target.close()
    n = batches * BATCH_SIZE
    return [
        (a - b) / n if a is not None and b is not None else None
        for a, b in zip(after, before, strict=True)
    ]


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of a process so far; None where /proc is unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Target:
    """One server and the azt client that drives it."""

    name: str
    conn: str
    pid: int
    service: azt.TableServiceClient = field(init=False)
    table: azt.TableClient = field(init=False)
    counter: int = 0

    def __post_init__(self) -> None:
        self.service = azt.TableServiceClient.from_connection_string(self.conn)
        self.table = self.service.get_table_client(TABLE)

    def next(self) -> int:
        self.counter += 1
        return self.counter

    async def setup(self) -> None:
        await self.table.create_table()
        for start in range(0, QUERY_ROWS, BATCH_SIZE):
            batch = self.table.batch()
            for i in range(start, start + BATCH_SIZE):
                batch.create(make_entity(QUERY_PK, f"{i:08d}", i))
            await self.table.submit_transaction(batch)

    async def seed_singly(self) -> None:
        """The table and the rows ``read`` reads, one insert each (no transactions)."""
        await self.table.create_table()
        for i in range(QUERY_ROWS):
            await self.table.insert_entity(make_entity(QUERY_PK, f"{i:08d}", i))

    async def insert(self) -> int:
        n = self.next()
        await self.table.insert_entity(make_entity("ins", f"{n:010d}", n))
        return 1

    async def read(self) -> int:
        n = self.next() % QUERY_ROWS
        await self.table.get_entity(QUERY_PK, f"{n:08d}")
        return 1

    async def batch(self) -> int:
        pk = f"tx{self.next():08d}"
        batch = self.table.batch()
        for i in range(BATCH_SIZE):
            batch.create(make_entity(pk, f"{i:08d}", i))
        await self.table.submit_transaction(batch)
        return 1

    async def pages(self) -> int:
        pages = 0
        pager = self.table.query_entities(
            "PartitionKey eq @pk", parameters={"pk": QUERY_PK}, results_per_page=1000
        )
        async for page in pager.by_page():
            assert len(page.items) == 1000, len(page.items)
            pages += 1
        return pages

    async def range_query(self) -> int:
        start = self.next() % (QUERY_ROWS - RANGE_ROWS)
        rows = await self.table.query_entities(
            "PartitionKey eq @pk and RowKey ge @lo and RowKey lt @hi",
            parameters={"pk": QUERY_PK, "lo": f"{start:08d}", "hi": f"{start + RANGE_ROWS:08d}"},
        ).to_list()
        assert len(rows) == RANGE_ROWS, len(rows)
        return 1

    async def close(self) -> None:
        await self.service.aclose()


async def rate(
    seconds: float, concurrency: int, op: Callable[[], Awaitable[int]]
) -> tuple[int, float]:
    """(units done, seconds taken) by ``concurrency`` workers running ``op`` (returns units)."""
    done = 0
    start = time.perf_counter()
    deadline = start + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            units = await op()
            done += units

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, time.perf_counter() - start


async def measure(target: Target, op: str, seconds: float) -> tuple[float, float | None]:
    """(units/s, the server's CPU milliseconds per unit or None) of one timed run."""
    cpu_before = cpu_seconds(target.pid)
    units, elapsed = await run_op(target, op, seconds)
    cpu_after = cpu_seconds(target.pid)
    cpu = None
    # (no clock tick counted while the server answered units: no reading, not zero)
    if cpu_before is not None and cpu_after is not None and units and cpu_after > cpu_before:
        cpu = (cpu_after - cpu_before) * 1000 / units
    return units / elapsed, cpu


async def run_op(target: Target, op: str, seconds: float) -> tuple[int, float]:
    if op == "insert":
        return await rate(seconds, 1, target.insert)
    if op == "insert16":
        return await rate(seconds, CONCURRENCY, target.insert)
    if op == "read":
        return await rate(seconds, 1, target.read)
    if op == "read16":
        return await rate(seconds, CONCURRENCY, target.read)
    if op == "batch":
        return await rate(seconds, 1, target.batch)
    if op == "batch16":
        return await rate(seconds, CONCURRENCY, target.batch)
    if op == "page":
        return await rate(seconds, 1, target.pages)
    if op == "range":
        return await rate(seconds, 1, target.range_query)
    raise ValueError(op)


@dataclass
class Figures:
    """One operation's result: best throughputs, the stub's spread, server CPU per unit."""

    stub: float
    azurite: float
    spread: float  # the stub's worst round below its best (0: no noise)
    stub_cpu: float | None  # server CPU milliseconds per unit, least of the rounds
    azurite_cpu: float | None
    floor: float | None = None  # the same client against a server doing no work
    # the same through the stub's own HTTP layer (FrontAppRunner + one replaying handler)
    front_floor: float | None = None
    front_floor_cpu: float | None = None  # that server's CPU milliseconds per unit
    # a minimal Table server in Python (framing, SharedKey, JSON, a dict)
    minimal: float | None = None
    minimal_cpu: float | None = None


def _least(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None


#: Operations whose ceiling is measured: requests sent one at a time, where the client's own
#: share of each round trip bounds the ratio any server can reach.
CEILING_OPS = ("insert", "read", "batch")
REPLAY = Path(__file__).resolve().parent / "_replay_server.py"
MINIMAL = Path(__file__).resolve().parent / "_minimal_server.py"


@dataclass
class FloorServer:
    """A server measured beside the two for single requests only, in the same rounds.

    ``kind``: ``replay`` (``_replay_server.py``: the stub's answers replayed, no work),
    ``front`` (the same through the stub's own HTTP layer) or ``minimal``
    (``_minimal_server.py``: the least Table work). ``counter``: where the keys of its
    inserts start (a replay's first insert reaches the stub: keys no other target uses).
    ``seed``: the server keeps its own rows: create the table and the rows reads read.
    ``ops``: the operations it serves (the minimal server: no transactions).
    """

    kind: str
    server: tuple[str, int]
    counter: int
    seed: bool = False
    ops: tuple[str, ...] = CEILING_OPS


async def compare(
    stub: tuple[str, int],
    azurite: tuple[str, int],
    ops: list[str],
    rounds: int,
    seconds: float,
    floors: list[FloorServer] | None = None,
) -> dict[str, Figures]:
    """Run the operations in alternated rounds against both servers (and, for the
    operations in :data:`CEILING_OPS`, against the ``floors`` in the same rounds, so that
    a host that speeds up or slows down between phases moves every figure alike)."""
    targets = [Target("stub", *stub), Target("azurite", *azurite)]
    floors = floors or []
    extra: list[Target] = []
    for floor in floors:
        extra.append(Target(floor.kind, *floor.server))
        extra[-1].counter = floor.counter
    runs: dict[tuple[str, str], list[tuple[float, float | None]]] = {}
    try:
        for target in targets:
            await target.setup()
            for op in ops:  # warm-up: connections, code paths, JITs
                await measure(target, op, min(0.2, seconds))
        for target, floor in zip(extra, floors, strict=True):
            if floor.seed:
                await target.seed_singly()
            for op in ops:  # warm-up, and a replay's recording
                if op in floor.ops:
                    await measure(target, op, min(0.2, seconds))
        for r in range(rounds):
            for op in ops:
                order = targets + [t for t, f in zip(extra, floors, strict=True) if op in f.ops]
                for target in order if r % 2 == 0 else order[::-1]:
                    runs.setdefault((target.name, op), []).append(
                        await measure(target, op, seconds)
                    )
    finally:
        for target in targets + extra:
            await target.close()
    out: dict[str, Figures] = {}
    for op in ops:
        stub_rates = [rate for rate, _ in runs[("stub", op)]]
        out[op] = f = Figures(
            stub=max(stub_rates),
            azurite=max(rate for rate, _ in runs[("azurite", op)]),
            spread=1 - min(stub_rates) / max(stub_rates),
            stub_cpu=_least([cpu for _, cpu in runs[("stub", op)]]),
            azurite_cpu=_least([cpu for _, cpu in runs[("azurite", op)]]),
        )
        best = {
            kind: (
                max(rate for rate, _ in runs[(kind, op)]),
                _least([c for _, c in runs[(kind, op)]]),
            )
            for kind in ("replay", "front", "minimal")
            if (kind, op) in runs
        }
        f.floor = best["replay"][0] if "replay" in best else None
        f.front_floor, f.front_floor_cpu = best.get("front", (None, None))
        f.minimal, f.minimal_cpu = best.get("minimal", (None, None))
    return out


def report(title: str, results: dict[str, Figures]) -> None:
    print(f"\n{title}")
    print(
        f"{'operation':<42}{'stub':>9}{'azurite':>9}{'ratio':>7}{'noise':>7}"
        f"{'stub cpu':>10}{'az cpu':>9}{'ratio':>7}"
    )
    for op, f in results.items():
        line = (
            f"{OPERATIONS[op]:<42}{f.stub:>9.1f}{f.azurite:>9.1f}{f.stub / f.azurite:>7.2f}"
            f"{f.spread:>7.0%}"
        )
        if f.stub_cpu is not None and f.azurite_cpu is not None:
            cpu_ratio = f"{f.azurite_cpu / f.stub_cpu:>7.2f}" if f.stub_cpu else f"{'-':>7}"
            line += f"{f.stub_cpu:>8.3f}ms{f.azurite_cpu:>7.3f}ms{cpu_ratio}"
        print(line)
    for op, f in results.items():
        if f.floor is not None:
            print(
                f"ceiling, {OPERATIONS[op]}: {f.floor:.1f} against a server doing no work"
                f" (answers replayed), {f.floor / f.azurite:.2f}x azurite: the best ratio"
                " any server reaches with this client"
            )
        if f.front_floor is not None:
            cpu = f", {f.front_floor_cpu:.3f}ms cpu" if f.front_floor_cpu is not None else ""
            print(
                f"  through the stub's HTTP layer (FrontAppRunner, one replaying handler):"
                f" {f.front_floor:.1f}{cpu}, {f.front_floor / f.azurite:.2f}x azurite: the"
                " best any server on that layer reaches"
            )
        if f.minimal is not None:
            cpu = f", {f.minimal_cpu:.3f}ms cpu" if f.minimal_cpu is not None else ""
            print(
                f"  a minimal Table server in Python (_minimal_server.py: framing, SharedKey,"
                f" JSON, a dict): {f.minimal:.1f}{cpu}, {f.minimal / f.azurite:.2f}x azurite,"
                f" the stub {f.stub / f.minimal:.2f}x of it"
            )
    print(
        "throughput per second, best of the rounds; ratio: stub/azurite (higher is better);\n"
        "noise: the stub's worst round below its best; cpu: the server process's CPU per\n"
        "unit (least of the rounds; 10 ms clock ticks), ratio azurite/stub (higher is better)"
    )


def run_store(
    js: Path,
    store: str,
    ops: list[str],
    rounds: int,
    seconds: float,
    memory: bool = True,
    loop: str = "auto",
) -> dict[str, Figures]:
    with tempfile.TemporaryDirectory(prefix="azt-vs-azurite-") as tmp:
        work = Path(tmp)
        stub_loc = azurite_loc = None
        if store in ("disk", "process"):
            stub_loc, azurite_loc = work / "stub-data", work / "azurite-data"
            stub_loc.mkdir()
            azurite_loc.mkdir()
        stub_port, azurite_port = free_port(), free_port()
        with (
            server_process(
                "stub",
                stub_argv(stub_port, stub_loc, "process" if store == "process" else "full", loop),
                stub_port,
                work,
            ) as stub,
            server_process(
                "azurite", azurite_argv(js, azurite_port, azurite_loc), azurite_port, work
            ) as azurite,
        ):
            floors: list[FloorServer] = []
            with ExitStack() as stack:
                if store == "memory" and any(op in CEILING_OPS for op in ops):
                    for kind, counter, served in (
                        ("replay", 10**9, CEILING_OPS),
                        ("front", 2 * 10**9, CEILING_OPS),
                        ("minimal", 0, ("insert", "read")),  # (it serves no transactions)
                    ):
                        port = free_port()
                        argv = [sys.executable, str(MINIMAL if kind == "minimal" else REPLAY)]
                        argv += [str(port)] if kind == "minimal" else [str(port), str(stub_port)]
                        argv += ["--front"] if kind == "front" else []
                        server = stack.enter_context(server_process(kind, argv, port, work))
                        floors.append(FloorServer(kind, server, counter, kind == "minimal", served))
                if memory and store == "memory":
                    # on new servers: before the timed rounds leave their rows and garbage
                    per = asyncio.run(memory_per_entity([stub, azurite]))
                    print(memory_line(per))
                results = asyncio.run(compare(stub, azurite, ops, rounds, seconds, floors))
            return results


def memory_line(per: list[float | None]) -> str:
    stub, azurite = per
    if stub is None or azurite is None:
        return "memory per stored entity: unavailable (no /proc)"
    return (
        f"\nmemory per stored 1.1 KB entity ({MEMORY_BATCHES * BATCH_SIZE:,} entities, RSS"
        f" growth): stub {stub / 1024:.2f} KB, azurite {azurite / 1024:.2f} KB,"
        f" ratio azurite/stub {azurite / stub:.2f} (higher is better)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds (best kept)")
    parser.add_argument("--seconds", type=float, default=1.0, help="per operation per round")
    parser.add_argument(
        "--store",
        choices=["memory", "disk", "process", "both", "all"],
        default="all",
        help="memory; disk (--location, fsync per write); process (--location --durability "
        "process); both: memory and disk; all: the three",
    )
    parser.add_argument(
        "--ops", default=",".join(OPERATIONS), help="comma-separated: " + ",".join(OPERATIONS)
    )
    parser.add_argument(
        "--no-memory",
        action="store_true",
        help="skip the memory per stored entity (in memory: 20,000 1.1 KB entities per server)",
    )
    parser.add_argument(
        "--stub-loop",
        choices=["auto", "asyncio", "uvloop"],
        default="auto",
        help="azt-stub's --loop (auto: uvloop when installed, the [stub] extra)",
    )
    args = parser.parse_args()
    ops = [op.strip() for op in args.ops.split(",") if op.strip()]
    unknown = [op for op in ops if op not in OPERATIONS]
    if unknown:
        parser.error(f"unknown operations {unknown}; choose from {list(OPERATIONS)}")
    js = ensure_azurite()
    if js is None:
        print("stub_vs_azurite: skipped, node/npm not found (Azurite needs Node.js)")
        return 0
    stores = {"both": ["memory", "disk"], "all": ["memory", "disk", "process"]}.get(
        args.store, [args.store]
    )
    for store in stores:
        results = run_store(
            js, store, ops, args.rounds, args.seconds, not args.no_memory, args.stub_loop
        )
        title = {
            "memory": "in memory: azt-stub vs azurite --inMemoryPersistence",
            "disk": "on disk: azt-stub --location (an fsync per acknowledged write) vs azurite"
            " --location (no fsync; saves every 5 s)",
            "process": "on disk: azt-stub --location --durability process (every acknowledged"
            " write survives kill -9) vs azurite --location (a kill loses up to 5 s)",
        }[store]
        loop = args.stub_loop if args.stub_loop != "auto" else loop_factory("auto")[0]
        report(
            f"{title} ({args.rounds} rounds x {args.seconds:g} s, alternated; the stub on"
            f" the {loop} event loop)",
            results,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
