"""The main demo: a typed tour of azt in a few seconds, no Azure account needed.

Run it with ``bash scripts/demo.sh`` (or ``python -m examples.demo``). It starts an embedded
Table service stub, or uses ``--connection-string`` / ``$AZT_CONNECTION_STRING``, and:

1. creates a table and loads a movie catalogue with entity group transactions;
2. runs a typed query of each efficiency class (point, row range, partition range, full
   scan, and an ``or`` of partitions run as parallel sub-queries), printing each plan;
3. pages through results with continuation tokens and resumes from a saved token;
4. shows that a failing batch applies nothing;
5. saves a change with optimistic concurrency and shows a stale writer being refused.

Example::

    $ python -m examples.demo --connection-string "UseDevelopmentStorage=true"
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from itertools import groupby

from azt import (
    EntityAlreadyExistsError,
    PreconditionFailedError,
    TableClient,
    TableServiceClient,
    TransactionError,
    UpdateMode,
)
from azt.query import Query

from ._common import Out, describe, fetch_all, parse_args, printer, service_for, table_name
from .movies_data import Movie, catalogue


async def load(table: TableClient, out: Out) -> int:
    """Insert the catalogue, one entity group transaction per category (= partition)."""
    movies = catalogue()
    batches = 0
    for _category, group in groupby(movies, key=lambda m: m.PartitionKey):
        batch = table.batch()
        for movie in group:
            batch.create(movie.to_entity())
        await table.submit_transaction(batch)
        batches += 1
    out(f"inserted {len(movies)} movies in {batches} entity group transactions (one per category)")
    return len(movies)


async def queries(table: TableClient, out: Out) -> None:
    """One typed query of each efficiency class, cheapest first."""
    examples: list[tuple[str, Query[Movie]]] = [
        (
            "point query (the cheapest)",
            Query(Movie).where(Movie.PartitionKey == "SciFi", Movie.RowKey == "Star Wars"),
        ),
        (
            'row range: action movies whose title starts with "Sh"',
            Query(Movie).where(Movie.PartitionKey == "Action", Movie.RowKey.startswith("Sh")),
        ),
        (
            "partition range: favourites from Action up to (not including) Drama",
            Query(Movie).where(
                Movie.PartitionKey >= "Action", Movie.PartitionKey < "Drama", Movie.favorite
            ),
        ),
        (
            "full scan: no key bounds, every partition is read",
            Query(Movie).where(Movie.rating >= 4.8),
        ),
        (
            "two partitions: run as parallel sub-queries, merged in key order",
            Query(Movie).where(Movie.PartitionKey.in_(["Thriller", "War"]), Movie.rating > 4.5),
        ),
    ]
    for title, query in examples:
        plan = query.explain()
        found = await fetch_all(query, table)
        out("")
        out(f"{title}")
        out(f"  plan:    {plan}")
        out(f"  results: {', '.join(f'{describe(m)} ({m.rating})' for m in found) or '-'}")


async def continuation(table: TableClient, out: Out) -> None:
    """Page through the whole table seven entities at a time, then resume from a token."""
    out("")
    out("continuation: the whole catalogue, 7 entities per request")
    query = Query(Movie, table).page_size(7)
    tokens: list[str] = []
    async for page in query.pages():
        first = describe(page.items[0]) if page.items else "-"
        more = page.continuation is not None
        out(f"  page of {len(page.items)} starting at {first}; more: {more}")
        if page.continuation is not None:
            tokens.append(page.continuation)
    saved = tokens[1]
    out(f"  resuming from the token saved after page 2 ({saved[:24]}...):")
    resumed = Query(Movie, table).page_size(7).pages(saved)
    page = await anext(resumed)
    await resumed.aclose()
    out(f"  got {len(page.items)} movies starting at {describe(page.items[0])}")


async def failing_batch(table: TableClient, out: Out) -> None:
    """A batch whose second operation fails: nothing of it is applied."""
    out("")
    out("entity group transaction: all or nothing")
    batch = table.batch()
    batch.create(Movie("Comedy", "Paddington 2", rating=4.6, year=2017).to_entity())
    batch.create(Movie("Comedy", "Hot Fuzz", rating=1.0).to_entity())  # already there
    try:
        await table.submit_transaction(batch)
    except TransactionError as exc:
        kind = type(exc.error).__name__ if exc.error is not None else exc.code
        out(f"  operation {exc.index} failed with {kind}; the batch was rolled back")
    else:
        raise RuntimeError("the batch should have failed")
    gone = await fetch_all(
        Query(Movie).where(Movie.PartitionKey == "Comedy", Movie.RowKey == "Paddington 2"), table
    )
    out(f"  'Paddington 2' stored: {bool(gone)}")


async def save_with_etag(table: TableClient, out: Out) -> None:
    """Read, change and save a movie with its ETag; a stale writer gets a 412."""
    out("")
    out("optimistic concurrency: saves carry the ETag they read")
    query = Query(Movie).where(Movie.PartitionKey == "Action", Movie.RowKey == "Heat")
    mine = (await fetch_all(query, table))[0]
    theirs = (await fetch_all(query, table))[0]
    mine.views += 1
    mine.favorite = True
    assert mine.ETag is not None
    result = await table.update_entity(mine.to_entity(), UpdateMode.MERGE, etag=mine.ETag)
    out(f"  saved views={mine.views}, favorite={mine.favorite} (new ETag {result.etag})")
    theirs.rating = 1.0
    assert theirs.ETag is not None
    try:
        await table.update_entity(theirs.to_entity(), UpdateMode.MERGE, etag=theirs.ETag)
    except PreconditionFailedError:
        out("  a second writer holding the old ETag was refused (412): re-read and retry")
    else:
        raise RuntimeError("the stale write should have been refused")
    try:
        await table.insert_entity(Movie("Action", "Heat").to_entity())
    except EntityAlreadyExistsError:
        out("  inserting an existing key raises EntityAlreadyExistsError")


async def run(service: TableServiceClient, out: Out, *, keep: bool = False) -> str:
    """The whole demo on ``service``; returns the table name it used."""
    name = table_name("demomovies")
    table = await service.create_table(name)
    out(f"created table {name}")
    try:
        await load(table, out)
        await queries(table, out)
        await continuation(table, out)
        await failing_batch(table, out)
        await save_with_etag(table, out)
    finally:
        if not keep:
            await service.delete_table(name)
    out("")
    out("done: see examples/ for more, and docs/ for the guide")
    return name


async def amain(argv: Sequence[str] | None = None, out: Out | None = None) -> int:
    """Parse ``argv`` and run the demo; returns the exit status."""
    args = parse_args("azt demo: typed queries against the Table service", argv)
    out = out or printer()
    out("azt demo")
    async with service_for(args.connection_string, out) as service:
        await run(service, out, keep=args.keep)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m examples.demo``."""
    return asyncio.run(amain(argv))


if __name__ == "__main__":
    sys.exit(main())
