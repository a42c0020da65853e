"""The client's own cost of a 100-operation transaction without the network: the typed path
(entity objects) and dicts beside the bare loop of ``client_bench.py``.

Each contender builds 100 entities (objects for the typed path), the transaction's request
body from them, and reads the service's answer: azt through ``submit_transaction`` against
a ``MockTransport`` that hands back an answer recorded once from a stub (signing, the
pipeline and the write-back included), the bare loop with its own hand-written body and
answer reader. No socket and no server run while measuring, so the figures are the client's
work alone and repeatable under load, as instruction counts too:
``valgrind --tool=callgrind python benchmarks/batch_build_bench.py --only typed --batches N``
for two values of N gives the instructions of one batch (their difference over the
difference of N), the interpreter's start-up cancelled out.

Run: ``.venv/bin/python benchmarks/batch_build_bench.py [--batches 200] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
from collections.abc import Awaitable, Callable

import client_bench as cb  # the bench's entity shapes and bare loop

import azt
from azt._core.transport import HttpRequest, HttpResponse, MockTransport
from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubServer

CONN = (
    f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};AccountKey={DEV_KEY};"
    f"TableEndpoint=http://127.0.0.1:1/{DEV_ACCOUNT};"
)
Answer = tuple[int, dict[str, str], bytes]


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


def azt_batch(answer: Answer, typed: bool) -> Callable[[int], Awaitable[None]]:
    status, headers, body = answer
    service = azt.TableServiceClient.from_connection_string(
        CONN, transport=MockTransport(lambda request: HttpResponse(status, headers, body))
    )
    table = service.get_table_client("bench")
    make = cb.make_object if typed else cb.make_entity

    async def one(b: int) -> None:
        batch = table.batch()
        for entity in [make(f"b{b}", i) for i in range(cb.BATCH_SIZE)]:
            batch.create(entity)
        await table.submit_transaction(batch)

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


async def cpu_per_batch(one: Callable[[int], Awaitable[None]], batches: int) -> float:
    for b in range(3):  # warm: writers and codecs generated, caches filled
        await one(b)
    gc.collect()
    start = time.process_time()
    for b in range(batches):
        await one(b)
    return (time.process_time() - start) / max(batches, 1)


async def run(batches: int, rounds: int, only: str | None) -> None:
    answer = await record_answer()
    contenders = {
        "bare": bare_batch(answer),
        "dicts": azt_batch(answer, typed=False),
        "typed": azt_batch(answer, typed=True),
    }
    if only is not None:  # one contender (for callgrind)
        await cpu_per_batch(contenders[only], batches)
        return
    runs = []
    for r in range(rounds):
        names = list(contenders)
        names = names[r % 3 :] + names[: r % 3]
        runs.append({name: await cpu_per_batch(contenders[name], batches) for name in names})
    best = {name: min(run[name] for run in runs) for name in contenders}
    print(f"client CPU per {cb.BATCH_SIZE}-op transaction, no network, best of {rounds} rounds")
    for name in contenders:
        print(f"  {name:<6} {best[name] * 1e6:8.1f} us")
    for a, b in (("dicts", "bare"), ("typed", "bare"), ("typed", "dicts")):
        ratios = [run[a] / run[b] for run in runs]
        print(
            f"  {a}/{b}: {best[a] / best[b]:.2f} ({min(ratios):.2f}-{max(ratios):.2f} over the"
            " rounds)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--batches", type=int, default=200, help="transactions per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--only",
        choices=("bare", "dicts", "typed"),
        help="run one contender, print nothing (for instruction counts under callgrind)",
    )
    args = parser.parse_args()
    asyncio.run(run(args.batches, args.rounds, args.only))


if __name__ == "__main__":
    main()
