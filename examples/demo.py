"""The main demo: a typed tour of azt in a few seconds, no Azure account needed.

Run it with ``bash scripts/demo.sh`` (or ``python -m examples.demo``). It starts an embedded
Table service stub, or uses ``--connection-string`` / ``$AZT_CONNECTION_STRING``, and:

1. creates a table and loads a movie catalogue with entity group transactions;
2. runs a typed query of each efficiency class (point, row range, partition range, full
   scan, and an ``or`` of partitions run as parallel sub-queries), printing each plan;
3. pages through results with continuation tokens and resumes from a saved token;
4. shows that a failing batch applies nothing;
5. changes objects in a unit of work (``TableContext``) and saves only what changed; a
   second context holding a stale ETag is refused, re-reads and saves.

Example::

    $ python -m examples.demo --connection-string "UseDevelopmentStorage=true"
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from azt import TableClient, TableServiceClient, TransactionError
from azt.context import SaveChangesError, SaveChangesOptions, TableContext
from azt.query import Query

from ._common import Out, describe, fetch_all, parse_args, printer, service_for, table_name
from .movies_data import Movie, catalogue


async def load(service: TableServiceClient, name: str, out: Out) -> int:
    """Insert the catalogue through a unit of work: a BATCH save sends one entity group
    transaction per partition (here: per category)."""
    ctx = TableContext(service)
    movies = catalogue()
    for movie in movies:
        ctx.add(name, movie)
    result = await ctx.save_changes(SaveChangesOptions.BATCH)
    batches = len({r.batch for r in result})
    out(f"inserted {len(result.succeeded)} movies in {batches} entity group transactions")
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


async def unit_of_work(service: TableServiceClient, name: str, out: Out) -> None:
    """Change tracked entities and save; a stale context is refused, then recovers."""
    out("")
    out("unit of work: change objects, save_changes() sends only what changed")
    mine, theirs = TableContext(service), TableContext(service)
    heat = await mine.get(Movie, name, "Action", "Heat", ignore_resource_not_found=False)
    stale = await theirs.get(  # read before our save
        Movie, name, "Action", "Heat", ignore_resource_not_found=False
    )
    heat.views += 1
    heat.favorite = True
    await mine.save_changes()
    out(f"  saved views={heat.views}, favorite={heat.favorite} with a MERGE of two properties")

    stale.rating = 4.7
    try:
        await theirs.save_changes()
    except SaveChangesError as exc:
        (error,) = exc.errors
        out(f"  a second context holding the old ETag was refused: {type(error).__name__}")
    else:
        raise RuntimeError("the stale save should have been refused")
    # PRESERVE_CHANGES (the default) keeps our edit and takes the server's ETag and values.
    again = (
        await theirs.query(Movie, name)
        .where(Movie.PartitionKey == "Action", Movie.RowKey == "Heat")
        .one_or_none()
    )
    assert again is stale
    await theirs.save_changes()
    out(
        f"  after re-reading (MergeOption.PRESERVE_CHANGES) it saved: rating={stale.rating}, "
        f"views={stale.views}, favorite={stale.favorite}"
    )


async def run(service: TableServiceClient, out: Out, *, keep: bool = False) -> str:
    """The whole demo on ``service``; returns the table name it used."""
    name = table_name("demomovies")
    table = await service.create_table(name)
    out(f"created table {name}")
    try:
        await load(service, name, out)
        await queries(table, out)
        await continuation(table, out)
        await failing_batch(table, out)
        await unit_of_work(service, name, out)
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
