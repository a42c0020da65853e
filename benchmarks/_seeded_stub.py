"""A stub process for benchmarks, its table filled in-process before it listens
(benchmark-only seeding: not a protocol path, and not part of ``azt-stub``).

Loading a million entities over HTTP takes the shared machine many minutes, and the
benchmarks measure reading, not loading. This script starts the same server as
``azt-stub`` (the command line's parser, configuration and garbage-collector setting),
creates one table and inserts ``--rows`` entities through the running stub's own
backend API (:meth:`~azt_server_stub.backend.Backend.execute_batch`, change sets of 100
entities of one partition: the same checks, Timestamps and stored form as inserts over
the wire). Each entity's body is the JSON an insert sends (``azt``'s request encoder) and
is parsed by the stub's own request parser (:func:`azt_server_stub.formats.json.parse_entity`),
so the stored values are exactly what the wire would have stored. Nothing about the
protocol changes: clients see an ordinary stub whose table already holds the rows.

Run by ``benchmarks/frames_bench.py``; by hand::

    python benchmarks/_seeded_stub.py --module _frames_rows --rows 100000 --port 0

It prints ``seeded ROWS SECONDS`` then ``listening PORT`` and serves until SIGTERM or
SIGINT; ``--profile FILE`` writes cProfile statistics of the serving to FILE then (where
the stub's time goes on the query page path: ``python -m pstats FILE``). ``--module``
names a benchmark module (next to this file) whose ``TABLE``, ``PER_PARTITION`` and
``entity(i)`` describe the rows.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import signal
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

from azt._core.wire import json as wire_json
from azt_server_stub import DEV_ACCOUNT, StubServer
from azt_server_stub.__main__ import _tune_collector, build_parser, config_from_args
from azt_server_stub.backend import WriteOp
from azt_server_stub.formats.json import parse_entity

#: entities per change set (the service's most)
BATCH = 100


def seed(stub: StubServer, rows: int, source: Any) -> float:
    """Insert ``rows`` entities ``source.entity(i)`` into ``source.TABLE``; returns seconds."""
    backend = stub.backend
    backend.create_table(DEV_ACCOUNT, source.TABLE)
    encode = msgspec.json.Encoder().encode
    started = time.perf_counter()
    ops: list[WriteOp] = []
    partition: str | None = None
    for i in range(rows):
        body = encode(wire_json.entity_json(source.entity(i)))
        pk, rk, props = parse_entity(body)
        if ops and (len(ops) == BATCH or pk != partition):
            backend.execute_batch(DEV_ACCOUNT, source.TABLE, ops)
            ops = []
        partition = pk
        ops.append(WriteOp("insert", pk, rk, props))
    if ops:
        backend.execute_batch(DEV_ACCOUNT, source.TABLE, ops)
    return time.perf_counter() - started


async def serve(
    port: int,
    rows: int,
    source: Any,
    profile: str | None = None,
    flavor: str = "storage",
    location: str | None = None,
) -> None:
    argv = ["--port", str(port), "--log-level", "WARNING", "--flavor", flavor]
    if location is not None:  # the durable store, as ``azt-stub --durability process``
        argv += ["--location", location, "--durability", "process"]
    args = build_parser().parse_args(argv)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with StubServer(config_from_args(args), host="127.0.0.1", port=port) as stub:
        seconds = seed(stub, rows, source)
        print(f"seeded {rows} {seconds:.2f}", flush=True)
        profiler = cProfile.Profile() if profile else None
        if profiler is not None:
            profiler.enable()  # what serving costs, not the seeding
        print(f"listening {stub.port}", flush=True)
        await stop.wait()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--module", required=True, help="benchmark module describing the rows")
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--profile",
        default=None,
        metavar="FILE",
        help="write cProfile statistics of the serving (after the seeding) to FILE at exit",
    )
    parser.add_argument("--flavor", choices=("storage", "cosmos"), default="storage")
    parser.add_argument("--location", default=None, help="a new folder: a durable stub")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    source = importlib.import_module(args.module)
    _tune_collector()  # as azt-stub does in its own process
    asyncio.run(serve(args.port, args.rows, source, args.profile, args.flavor, args.location))


if __name__ == "__main__":
    main()
