"""What tracing costs: today's code (before tracing existed) vs tracing off vs tracing on,
side by side in one run, reported as ratios to today.

Configurations, each measured on the same event loop, interleaved round by round:

* ``today``: the code path before tracing was added: the client's methods without their
  operation wrapper (``__wrapped__``) over the ``Pipeline`` class of the commit before
  ``azt/_core/tracing.py`` existed (loaded from git into this process);
* ``no provider``: OpenTelemetry API installed, no tracer provider configured (the
  default for an application that does not set one up): what every azt user pays;
* ``enabled=False``: ``TracingOptions(enabled=False)``;
* ``sdk``: an SDK ``TracerProvider`` with a ``SimpleSpanProcessor`` into an
  ``InMemorySpanExporter`` (spans made, recorded and exported; cleared between rounds).

Workloads: point reads and single inserts against the in-process stub, and two
MockTransport micro-runs without any network or server: ``Pipeline.send`` alone and
``TableClient.delete_entity`` (decorator + pipeline). Figures are the best per-operation
time over the rounds. Run::

    .venv/bin/python benchmarks/tracing_bench.py [--n 500] [--micro 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import subprocess
import time
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import azt
from azt._core.connection_string import DEV_ACCOUNT_KEY, Endpoint
from azt._core.pipeline import Pipeline
from azt._core.tracing import Operation
from azt._core.transport import HttpRequest, HttpResponse, MockTransport
from azt_server_stub import StubServer

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ("today", "no provider", "enabled=False", "sdk")
ENDPOINT = "http://127.0.0.1:10002/devstoreaccount1"


def pipeline_before_tracing() -> type[Pipeline]:
    """The ``Pipeline`` class of the commit before ``azt/_core/tracing.py`` was added."""
    git = ["git", "-C", str(ROOT)]
    added = subprocess.run(
        [*git, "log", "--format=%H", "--diff-filter=A", "--", "azt/_core/tracing.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not added:
        raise SystemExit("cannot find the commit that added azt/_core/tracing.py")
    source = subprocess.run(
        [*git, "show", f"{added[-1]}^:azt/_core/pipeline.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    spec = importlib.util.spec_from_loader("azt_pipeline_before_tracing", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    assert isinstance(module, types.ModuleType)
    exec(compile(source, "pipeline_before_tracing.py", "exec"), module.__dict__)
    cls: type[Pipeline] = module.Pipeline
    return cls


class Setup:
    """One configuration: how its clients are made and how it calls them."""

    def __init__(self, name: str, old_pipeline: type[Pipeline]) -> None:
        self.name = name
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracing: azt.TracingOptions | None = {
            "today": None,
            "no provider": None,
            "enabled=False": azt.TracingOptions(enabled=False),
            "sdk": azt.TracingOptions(tracer_provider=provider),
        }[name]
        self.old_pipeline = old_pipeline

    def table(self, conn: str | None, name: str, transport: Any = None) -> azt.TableClient:
        key = azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
        if conn is None:
            table = azt.TableClient(ENDPOINT, name, key, transport=transport, tracing=self.tracing)
        else:
            table = azt.TableClient.from_connection_string(conn, name, tracing=self.tracing)
        if self.name == "today":
            core = table._core
            core.pipeline = self.old_pipeline(core.endpoint, core.credential, core.transport)
        return table

    def method(self, bound: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        if self.name == "today":  # the method without its operation wrapper
            raw: Callable[..., Awaitable[Any]] = bound.__func__.__wrapped__  # type: ignore[attr-defined]
            owner = bound.__self__  # type: ignore[attr-defined]
            return lambda *args, **kwargs: raw(owner, *args, **kwargs)
        return bound


async def timed(n: int, call: Callable[[int], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    for i in range(n):
        await call(i)
    return (time.perf_counter() - start) / n


async def run(n: int, micro: int, rounds: int) -> None:
    old = pipeline_before_tracing()
    setups = [Setup(name, old) for name in CONFIGS]
    best: dict[tuple[str, str], float] = {}

    def keep(workload: str, setup: Setup, value: float) -> None:
        key = (workload, setup.name)
        best[key] = min(best.get(key, float("inf")), value)

    def answer(request: HttpRequest) -> HttpResponse:
        return HttpResponse(204, {"x-ms-request-id": "r"})

    endpoint = Endpoint.parse(ENDPOINT)
    credential = azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)

    async def measure(
        setup: Setup, table: azt.TableClient, mocked: azt.TableClient, round_no: int
    ) -> None:
        get = setup.method(table.get_entity)
        insert = setup.method(table.insert_entity)
        delete = setup.method(mocked.delete_entity)
        path = "/t(PartitionKey='p',RowKey='r')"
        pipe: Pipeline = (
            old(endpoint, credential, mock) if setup.name == "today" else mocked._core.pipeline
        )
        tracing = mocked._core.tracing

        async def read(i: int) -> Any:
            return await get("p", "read")

        async def write(i: int) -> Any:
            return await insert({"PartitionKey": f"{setup.name}-{round_no}", "RowKey": str(i)})

        async def remove(i: int) -> Any:
            return await delete("p", "r")

        async def send(i: int) -> HttpResponse:
            if setup.name != "sdk":
                return await pipe.send("DELETE", path)
            # Attempt spans are made inside an operation: one per send.
            tracer = tracing.tracer()
            assert tracer is not None
            with Operation(tracing, tracer, "delete_entity", "t"):
                return await pipe.send("DELETE", path)

        keep("point read", setup, await timed(n, read))
        keep("insert", setup, await timed(n, write))
        keep("client over mock", setup, await timed(micro, remove))
        keep("pipeline over mock", setup, await timed(micro, send))

    mock = MockTransport(answer)
    async with StubServer() as stub:
        # One table for all: every configuration reads the same row and inserts into
        # partitions of the same table (per-table differences would swamp the signal).
        tables = {s.name: s.table(stub.connection_string, "tracebench") for s in setups}
        await tables["today"].create_table()
        await tables["today"].insert_entity({"PartitionKey": "p", "RowKey": "read", "N": 1})
        mocked = {s.name: s.table(None, "movies", mock) for s in setups}
        for r in range(rounds):
            order = setups[r % len(setups) :] + setups[: r % len(setups)]
            for setup in order:
                await measure(setup, tables[setup.name], mocked[setup.name], r)
                setup.exporter.clear()
        for table in [*tables.values(), *mocked.values()]:
            await table.aclose()

    print(
        f"\nper-operation cost, best of {rounds} rounds (stub in-process: n={n}; "
        f"MockTransport: n={micro}); ratio = configuration / today"
    )
    print(f"{'workload':<20}" + "".join(f"{name:>16}" for name in CONFIGS))
    for workload in ("point read", "insert", "client over mock", "pipeline over mock"):
        today = best[(workload, "today")]
        cells = "".join(f"{best[(workload, name)] * 1e6:>13.1f} us" for name in CONFIGS)
        ratios = "".join(f"{best[(workload, name)] / today:>16.3f}" for name in CONFIGS)
        print(f"{workload:<20}{cells}")
        print(f"{'  ratio':<20}{ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=500, help="stub reads / inserts per round")
    parser.add_argument("--micro", type=int, default=20_000, help="MockTransport requests")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(run(args.n, args.micro, args.rounds))


if __name__ == "__main__":
    main()
