"""The client's instructions per queried entity, counted by callgrind: the bare aiohttp
loop, azt with dicts and azt typed (``client_bench.py``'s contenders and its 10,000-entity
query, pages of 1,000, the stub in its own process, which callgrind does not follow).

Wall clock and process CPU of one query (40-50 ms of CPU) move by 20-40 % between runs
even on a quiet machine; instruction counts do not. Each contender runs twice under
``valgrind --tool=callgrind``, once with one query and once with ``1 + extra`` queries; the
difference over ``extra`` is one query's instructions, the start-up, the seeding and the
first query's warm-up cancelled out.

Run: ``.venv/bin/python benchmarks/query_instructions.py [--extra 2] [--contenders bare azt
typed]`` (needs ``valgrind``; about a minute a contender). ``--one NAME QUERIES`` is the
measured child: seed the partition, run the queries.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import client_bench as cb  # the contenders, the query partition and the stub starter
from _callgrind import child_instructions

CONTENDERS = ("bare", "azt", "typed")


async def _one(which: str, queries: int) -> None:
    async with cb.stub_endpoint("process") as (conn, account, key, endpoint):
        client: Any
        if which == "bare":
            client = cb.Bare(endpoint, account, key, "qbare")
        elif which == "azt":
            client = cb.Azt(conn, "qazt")
        else:
            client = cb.AztTyped(conn, "qtyped")
        await client.setup()
        make = cb._maker(client)
        for start in range(0, cb.QUERY_ENTITIES, cb.BATCH_SIZE):
            await client.batch([make("Q", i) for i in range(start, start + cb.BATCH_SIZE)])
        for _ in range(queries):
            count = await client.query("Q")
            assert count == cb.QUERY_ENTITIES, count
        await client.close()


def instructions(which: str, queries: int) -> int:
    """The instructions callgrind counts in a child running ``queries`` queries."""
    return child_instructions([sys.executable, __file__, "--one", which, str(queries)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--extra", type=int, default=2, help="queries beyond the first")
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=CONTENDERS)
    parser.add_argument("--one", nargs=2, metavar=("NAME", "QUERIES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        asyncio.run(_one(args.one[0], int(args.one[1])))
        return
    per_entity: dict[str, float] = {}
    for which in args.contenders:
        base = instructions(which, 1)
        more = instructions(which, 1 + args.extra)
        per_entity[which] = (more - base) / args.extra / cb.QUERY_ENTITIES
        print(f"{which:>6}: {per_entity[which]:>9,.0f} instructions per queried entity")
    if "bare" in per_entity:
        for which in ("azt", "typed"):
            if which in per_entity:
                print(f"{which}/bare: {per_entity[which] / per_entity['bare']:.2f}")


if __name__ == "__main__":
    main()
