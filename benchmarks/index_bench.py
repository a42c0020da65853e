"""Secondary indexes (``azt.indexes``): a lookup through an index against a partition scan,
and the write cost of index rows, all against the in-process stub in one run.

Lookup: one partition of ``--entities`` (100,000) entities; each lookup asks for the
entities of one ``category`` (or ``label``) value, 100 matches of 1,000 distinct values.
Side by side, interleaved round by round:

* **scan**: a class without indexes, ``Query(...).where(PartitionKey == p, category == c)``
  on a table holding only main rows: a partition scan (the service reads every entity of
  the partition to apply the filter);
* **keys index**: the same query on a class declaring ``Index("by_category", "category")``
  (key-only rows: the index range, then bounded parallel point reads);
* **entity index**: ``Index("by_label", "label", holds=Holds.ENTITY)`` (the index rows are
  copies: the index range only).

Reported: entities the service reads per lookup (the scan: the whole partition; an index:
the rows of its key range, plus the point reads of a key-only index) and time, as ratios
to the scan.

Write cost: ``--writes`` (2,000) entities inserted with no index, one and two indexes,
one by one (``insert_entity``: one request each, a transaction when there are index rows)
and through ``batch_writer()`` (transactions cut between entities); time and rows written
relative to no index.

Across partitions: ``--across`` (20,000) entities over 100 partitions, each with a
distinct ``email``; a lookup by e-mail without a PartitionKey is a full table scan for a
class without indexes, and one index row plus one point read through
``Index("by_email", "email", across_partitions=True)``. Its write cost is in the write
table ("across index": the transaction with its intent row, then the index row and the
intent's deletion, three requests per insert).

Run: ``.venv/bin/python benchmarks/index_bench.py [--entities N] [--writes M] [--across A]
[--rounds R]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import azt
from azt import TableClient, TableServiceClient
from azt.entity import Entity, Prop, prop
from azt.indexes import Holds, Index
from azt.query import PlanKind, Query
from azt_server_stub import StubServer

DISTINCT = 1000


class Plain(Entity):
    category: Prop[str] = prop(default="")
    label: Prop[str] = prop(default="")
    text: Prop[str] = prop(default="")


class Indexed(Entity):
    category: Prop[str] = prop(default="")
    label: Prop[str] = prop(default="")
    text: Prop[str] = prop(default="")

    class Meta:
        indexes = (
            Index("by_category", "category"),
            Index("by_label", "label", holds=Holds.ENTITY),
        )


class OneIndex(Entity):
    category: Prop[str] = prop(default="")
    label: Prop[str] = prop(default="")
    text: Prop[str] = prop(default="")

    class Meta:
        indexes = (Index("by_category", "category"),)


class Person(Entity):
    email: Prop[str] = prop(default="")
    text: Prop[str] = prop(default="")


class IndexedPerson(Entity):
    email: Prop[str] = prop(default="")
    text: Prop[str] = prop(default="")

    class Meta:
        indexes = (Index("by_email", "email", across_partitions=True),)


class AcrossIndex(Entity):
    category: Prop[str] = prop(default="")
    label: Prop[str] = prop(default="")
    text: Prop[str] = prop(default="")

    class Meta:
        indexes = (Index("by_category", "category", across_partitions=True),)


def value(i: int) -> str:
    return f"v{i % DISTINCT:04}"


def make(cls: type[Any], i: int, pk: str = "p") -> Any:
    return cls(pk, f"r{i:07}", category=value(i), label=value(i * 7), text="x" * 100)


async def seed(table: TableClient, cls: type[Any], n: int) -> float:
    start = time.perf_counter()
    async with table.batch_writer() as writer:
        for i in range(n):
            await writer.insert(make(cls, i))
    return time.perf_counter() - start


async def timed(fn: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await fn()
    return time.perf_counter() - start, result


async def lookups(service: TableServiceClient, n: int, rounds: int) -> None:
    plain = await service.create_table("plain")
    indexed = await service.create_table("indexed")
    t_plain = await seed(plain, Plain, n)
    t_indexed = await seed(indexed, Indexed, n)
    print(f"seeded {n:,} entities: no index {t_plain:.1f} s, two indexes {t_indexed:.1f} s")

    def scan(v: str) -> Any:
        return Query(Plain, plain).where(Plain.PartitionKey == "p", Plain.category == v)

    def by_keys(v: str) -> Any:
        return Query(Indexed, indexed).where(Indexed.PartitionKey == "p", Indexed.category == v)

    def by_copy(v: str) -> Any:
        return Query(Indexed, indexed).where(Indexed.PartitionKey == "p", Indexed.label == v)

    assert scan("v0001").explain().kind is not PlanKind.INDEX
    assert by_keys("v0001").explain().index == "by_category"
    assert by_copy("v0001").explain().index == "by_label"

    times: dict[str, list[float]] = {"scan": [], "keys index": [], "entity index": []}
    found: dict[str, int] = {}
    for r in range(rounds):
        v = value(r * 37 + 1)
        for name, q in (("scan", scan), ("keys index", by_keys), ("entity index", by_copy)):
            t, rows = await timed(q(v).to_list)
            times[name].append(t)
            found[name] = len(rows)
            assert len(rows) == n // DISTINCT, (name, len(rows))
    matches = n // DISTINCT
    reads = {"scan": n, "keys index": 2 * matches, "entity index": matches}
    base = statistics.median(times["scan"])
    print(f"\nlookup of {matches} entities in a partition of {n:,} (median of {rounds})")
    print(f"{'':14}{'entities read':>15}{'ratio':>9}{'time ms':>10}{'ratio':>9}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(
            f"{name:14}{reads[name]:>15,}{reads[name] / n:>9.4f}{med * 1000:>10.1f}"
            f"{med / base:>9.4f}"
        )


async def across(service: TableServiceClient, n: int, rounds: int) -> None:
    plain = await service.create_table("people")
    indexed = await service.create_table("indexedpeople")
    for table, cls in ((plain, Person), (indexed, IndexedPerson)):
        start = time.perf_counter()
        async with table.batch_writer() as writer:
            for i in range(n):
                await writer.insert(cls(f"org{i % 100:03}", f"u{i:06}", email=f"e{i}@x.com"))
        print(f"seeded {n:,} {cls.__name__} in {time.perf_counter() - start:.1f} s")

    def scan(e: str) -> Any:
        return Query(Person, plain).where(Person.email == e)

    def by_index(e: str) -> Any:
        return Query(IndexedPerson, indexed).where(IndexedPerson.email == e)

    assert scan("e1@x.com").explain().kind is PlanKind.FULL_SCAN
    assert by_index("e1@x.com").explain().across
    times: dict[str, list[float]] = {"full scan": [], "across index": []}
    for r in range(rounds):
        e = f"e{(r * 7919) % n}@x.com"
        for name, q in (("full scan", scan), ("across index", by_index)):
            t, rows = await timed(q(e).to_list)
            assert len(rows) == 1, (name, len(rows))
            times[name].append(t)
    reads = {"full scan": n, "across index": 2}
    base = statistics.median(times["full scan"])
    print(f"\nlookup by e-mail, no PartitionKey, {n:,} entities in 100 partitions")
    print(f"{'':14}{'entities read':>15}{'ratio':>9}{'time ms':>10}{'ratio':>9}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(
            f"{name:14}{reads[name]:>15,}{reads[name] / n:>9.5f}{med * 1000:>10.1f}"
            f"{med / base:>9.4f}"
        )


async def writes(service: TableServiceClient, m: int, rounds: int) -> None:
    classes: list[tuple[str, type[Any], int]] = [
        ("no index", Plain, 1),
        ("one index", OneIndex, 2),
        ("two indexes", Indexed, 3),
        ("across index", AcrossIndex, 3),
    ]
    single: dict[str, list[float]] = {c[0]: [] for c in classes}
    batched: dict[str, list[float]] = {c[0]: [] for c in classes}
    for r in range(rounds):
        for name, cls, _ in classes:
            t1 = await service.create_table(f"w1{r}{cls.__name__}")
            start = time.perf_counter()
            for i in range(m):
                await t1.insert_entity(make(cls, i, pk=f"p{i % 10}"))
            single[name].append(time.perf_counter() - start)
            t2 = await service.create_table(f"w2{r}{cls.__name__}")
            start = time.perf_counter()
            async with t2.batch_writer() as writer:
                for i in range(m):
                    await writer.insert(make(cls, i, pk=f"p{i % 10}"))
            batched[name].append(time.perf_counter() - start)
            await service.delete_table(t1.table_name)
            await service.delete_table(t2.table_name)
    base1 = statistics.median(single["no index"])
    base2 = statistics.median(batched["no index"])
    print(f"\nwrite cost: {m:,} inserts over 10 partitions (median of {rounds})")
    print(f"{'':13}{'rows':>6}{'one by one ms':>15}{'ratio':>8}{'batch_writer ms':>17}{'ratio':>8}")
    for name, _, rows in classes:
        s = statistics.median(single[name])
        b = statistics.median(batched[name])
        print(
            f"{name:13}{rows:>6}{s * 1000:>15.0f}{s / base1:>8.2f}"
            f"{b * 1000:>17.0f}{b / base2:>8.2f}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=2_000)
    parser.add_argument("--across", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    async with (
        StubServer() as stub,
        TableServiceClient.from_connection_string(
            stub.connection_string, retry=azt.RetryPolicy.no_retries()
        ) as service,
    ):
        await lookups(service, args.entities, args.rounds)
        await across(service, args.across, args.rounds)
        await writes(service, args.writes, args.rounds)


if __name__ == "__main__":
    asyncio.run(main())
