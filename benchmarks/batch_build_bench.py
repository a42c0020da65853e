"""The client's own cost of 100-operation transactions without the network, on each
write path that builds them: a ``TableBatch`` (``submit_transaction``), the
``BatchWriter`` and the bulk loader (``azt.bulk.load``), each with entity objects (typed)
and with dicts, beside the bare loop of ``client_bench.py``.

Each contender builds its entities (objects for the typed path), the transactions' request
bodies from them, and reads the service's answers: azt against a ``MockTransport`` that
hands back an answer recorded once from a stub (signing, the pipeline and the write-back
included), the bare loop with its own hand-written body and answer reader. The batch and
the writer write one transaction of 100 entities a round; the loader loads 1,000 entities
over 10 partitions a round (its start and end spread over them), counted per 100. No
socket and no server run while measuring, so the figures are the client's work alone.

Process CPU moves between runs on a loaded machine; instruction counts do not:
``--instructions`` runs each contender twice under ``valgrind --tool=callgrind`` (``--only
NAME`` with ``--batches`` 3 and 3 + ``--extra``) and prints one transaction's instructions
(the difference over ``--extra``: start-up and warm-up cancelled out) with the ratios.

Run: ``.venv/bin/python benchmarks/batch_build_bench.py [--batches 200] [--rounds 5]
[--paths batch writer loader]``, or ``... --instructions [--extra 20]`` (needs valgrind).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import client_bench as cb  # the bench's entity shapes and bare loop
from _callgrind import child_instructions

import azt
from azt._core.transport import HttpRequest, HttpResponse, MockTransport
from azt.bulk import BulkOptions, load
from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer

CONN = (
    f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
    f"TableEndpoint=http://127.0.0.1:1/{DEV_ACCOUNT};"
)
Answer = tuple[int, dict[str, str], bytes]
#: the write paths measured, each with dicts and typed: ``dicts``/``typed`` are the batch's
PATHS = ("batch", "writer", "loader")
#: transactions of 100 a loader round writes (one load, one partition each)
LOADER_PARTITIONS = 10


async def record_answer() -> Answer:
    """The stub's answer to one 100-create transaction (the answer every measured
    transaction gets back)."""
    answers: list[Answer] = []
    async with StubServer() as stub:
        inner = azt.TableServiceClient.from_connection_string(stub.connection_string)
        transport = inner._core.pipeline.transport

        async def keep(request: HttpRequest) -> HttpResponse:
            resp = await transport.send(request)
            answers.append((resp.status, dict(resp.headers), resp.body))
            return resp

        async with azt.TableServiceClient.from_connection_string(
            stub.connection_string, transport=MockTransport(keep)
        ) as service:
            table = await service.create_table("recorded")
            batch = table.batch()
            for i in range(cb.BATCH_SIZE):
                batch.create(cb.make_entity("p", i))
            await table.submit_transaction(batch)
        await inner.aclose()
    return answers[-1]


def _table(answer: Answer) -> azt.TableClient:
    status, headers, body = answer
    service = azt.TableServiceClient.from_connection_string(
        CONN, transport=MockTransport(lambda request: HttpResponse(status, headers, body))
    )
    return service.get_table_client("bench")


def azt_batch(answer: Answer, typed: bool) -> Callable[[int], Awaitable[None]]:
    table = _table(answer)
    make = cb.make_object if typed else cb.make_entity

    async def one(b: int) -> None:
        batch = table.batch()
        for entity in [make(f"b{b}", i) for i in range(cb.BATCH_SIZE)]:
            batch.create(entity)
        await table.submit_transaction(batch)

    return one


def azt_writer(answer: Answer, typed: bool) -> Callable[[int], Awaitable[None]]:
    """A ``BatchWriter`` given 100 entities of one partition: it sends them as one
    transaction when the 100th comes."""
    table = _table(answer)
    make = cb.make_object if typed else cb.make_entity

    async def one(b: int) -> None:
        async with table.batch_writer() as writer:
            for entity in [make(f"b{b}", i) for i in range(cb.BATCH_SIZE)]:
                await writer.insert(entity)
        assert writer.transactions == 1

    return one


def azt_loader(answer: Answer, typed: bool) -> Callable[[int], Awaitable[None]]:
    """A bulk load of ``LOADER_PARTITIONS`` partitions of 100 entities (paces out of the
    way: the client's work, not its waits)."""
    table = _table(answer)
    make = cb.make_object if typed else cb.make_entity
    options = BulkOptions(partition_rate=1e9, account_rate=1e9)

    async def one(b: int) -> None:
        items = [
            make(f"b{b}-{p}", i) for p in range(LOADER_PARTITIONS) for i in range(cb.BATCH_SIZE)
        ]
        result = await load(table, items, options=options)
        assert result.written == len(items), result

    return one


def bare_batch(answer: Answer) -> Callable[[int], Awaitable[None]]:
    """The bare loop's transaction (client_bench.Bare.batch) without its request: the
    body built the same way, its answer read the same way."""
    _, headers, answer_body = answer
    url = f"http://127.0.0.1:1/{DEV_ACCOUNT}/bench"

    async def one(b: int) -> None:
        entities = [cb.make_entity(f"b{b}", i) for i in range(cb.BATCH_SIZE)]
        payload, _ = cb.batch_body(url, entities)
        assert payload
        assert len(cb.batch_etags(headers["Content-Type"], answer_body)) == len(entities)

    return one


#: transactions one call of each contender writes
_PER_CALL = {"loader-dicts": LOADER_PARTITIONS, "loader-typed": LOADER_PARTITIONS}


def _names(paths: tuple[str, ...]) -> list[str]:
    """The contenders' names: ``bare``, then each path's dicts and typed (the batch's are
    ``dicts`` and ``typed``; the others' ``writer-dicts`` ...)."""
    out = ["bare"]
    for path in paths:
        out += ["dicts", "typed"] if path == "batch" else [f"{path}-dicts", f"{path}-typed"]
    return out


def contenders(answer: Answer, paths: tuple[str, ...] = PATHS) -> dict[str, Any]:
    """Each contender's one round, by name: ``bare``, then ``dicts`` and ``typed`` (the
    batch), ``writer-dicts``, ``writer-typed``, ``loader-dicts``, ``loader-typed``."""
    makers = {"batch": azt_batch, "writer": azt_writer, "loader": azt_loader}
    found: dict[str, Any] = {}
    for name in _names(paths):
        if name == "bare":
            found[name] = bare_batch(answer)
        else:
            path = name.split("-")[0] if "-" in name else "batch"
            found[name] = makers[path](answer, typed=name.endswith("typed"))
    return found


async def cpu_per_batch(name: str, one: Callable[[int], Awaitable[None]], batches: int) -> float:
    """Process CPU per 100-entity transaction of ``batches`` rounds, after a warm-up."""
    for b in range(3):  # warm: writers and codecs generated, caches filled
        await one(-1 - b)
    gc.collect()
    start = time.process_time()
    for b in range(batches):
        await one(b)
    return (time.process_time() - start) / max(batches, 1) / _PER_CALL.get(name, 1)


def _pairs(names: list[str]) -> list[tuple[str, str]]:
    """The ratios printed: each path's dicts/bare, typed/bare and typed/dicts."""
    out = []
    for path in PATHS:
        d, t = ("dicts", "typed") if path == "batch" else (f"{path}-dicts", f"{path}-typed")
        out += [(a, b) for a, b in ((d, "bare"), (t, "bare"), (t, d)) if a in names]
    return out


async def run(batches: int, rounds: int, only: str | None, paths: tuple[str, ...]) -> None:
    answer = await record_answer()
    found = contenders(answer, paths)
    if only is not None:  # one contender (for callgrind)
        await cpu_per_batch(only, contenders(answer)[only], batches)  # (every path's)
        return
    runs = []
    for r in range(rounds):
        names = list(found)
        names = names[r % len(names) :] + names[: r % len(names)]
        runs.append({name: await cpu_per_batch(name, found[name], batches) for name in names})
    best = {name: min(run[name] for run in runs) for name in found}
    print(f"client CPU per {cb.BATCH_SIZE}-op transaction, no network, best of {rounds} rounds")
    for name in found:
        print(f"  {name:<13} {best[name] * 1e6:8.1f} us")
    for a, b in _pairs(list(found)):
        ratios = [run[a] / run[b] for run in runs]
        print(
            f"  {a}/{b}: {best[a] / best[b]:.2f} ({min(ratios):.2f}-{max(ratios):.2f} over the"
            " rounds)"
        )


def instructions(name: str, batches: int) -> int:
    """The instructions callgrind counts in a child running ``batches`` rounds of ``name``."""
    return child_instructions([sys.executable, __file__, "--only", name, "--batches", str(batches)])


def count_instructions(extra: int, paths: tuple[str, ...]) -> None:
    names = _names(paths)
    per: dict[str, float] = {}
    for name in names:
        base = instructions(name, 3)
        more = instructions(name, 3 + extra)
        per[name] = (more - base) / extra / _PER_CALL.get(name, 1)
        print(f"  {name:<13} {per[name]:>12,.0f} instructions per {cb.BATCH_SIZE}-op transaction")
    for a, b in _pairs(names):
        print(f"  {a}/{b}: {per[a] / per[b]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--batches", type=int, default=200, help="rounds measured")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=PATHS)
    parser.add_argument(
        "--only",
        choices=_names(PATHS),
        help="run one contender, print nothing (for instruction counts under callgrind)",
    )
    parser.add_argument("--instructions", action="store_true", help="count under callgrind")
    parser.add_argument("--extra", type=int, default=20, help="rounds beyond 3 (callgrind)")
    args = parser.parse_args()
    if args.instructions:
        count_instructions(args.extra, tuple(args.paths))
        return
    asyncio.run(run(args.batches, args.rounds, args.only, tuple(args.paths)))


if __name__ == "__main__":
    main()
