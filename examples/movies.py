"""Movie catalogue: entity classes, every query kind, and continuation across "processes".

The seed article's ``Movies`` table: PartitionKey = category, RowKey = title. This example
loads the catalogue with a unit of work and runs the article's queries, printing how each
one runs (point, row range, partition range, full scan, parallel sub-queries). It then
pages through a query, keeps the continuation token as a string (as a web application
would in a "next page" link) and resumes it with a brand-new query object.

Run it::

    python -m examples.movies [--connection-string CONN]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from azt import TableServiceClient
from azt.context import SaveChangesOptions, TableContext
from azt.query import Query

from ._common import Out, describe, run_example, scratch_table
from .movies_data import Movie, catalogue

#: The queries of the seed article, by name, as built with the query builder.
QUERIES: dict[str, Query[Movie]] = {
    "SciFi 'Star Wars' (point)": Query(Movie).where(
        Movie.PartitionKey == "SciFi", Movie.RowKey == "Star Wars"
    ),
    "SciFi from 'Sphere' to 'Star Wars' (row range)": Query(Movie).where(
        Movie.PartitionKey == "SciFi", Movie.RowKey.between("Sphere", "Star Wars")
    ),
    "Action titles starting with 'Sh' (row range)": Query(Movie).where(
        Movie.PartitionKey == "Action", Movie.RowKey.startswith("Sh")
    ),
    "favourites from 'Action' to 'Thriller' (partition range)": Query(Movie).where(
        Movie.PartitionKey.between("Action", "Thriller"), Movie.favorite
    ),
    "Action or Thriller rated above 4 (parallel sub-queries)": Query(Movie).where(
        (Movie.PartitionKey == "Action") | (Movie.PartitionKey == "Thriller"), Movie.rating > 4.0
    ),
    "titles from 'Cars' to 'Star Wars' in any category (full scan)": Query(Movie).where(
        Movie.RowKey.between("Cars", "Star Wars")
    ),
    "released before 1970 (full scan)": Query(Movie).where(Movie.year < 1970),
}


async def run(service: TableServiceClient, out: Out, *, keep: bool = False) -> dict[str, object]:
    """Load the catalogue, run :data:`QUERIES`, page and resume; returns what was found:
    ``{query name: [(PartitionKey, RowKey), ...], "pages": [...], "resumed": [...]}``."""
    found: dict[str, object] = {}
    async with scratch_table(service, "movies", out, keep=keep) as name:
        ctx = TableContext(service)
        for movie in catalogue():
            ctx.add(name, movie)
        result = await ctx.save_changes(SaveChangesOptions.BATCH)
        out(f"loaded {len(result)} movies, one entity group transaction per category")

        table = service.get_table_client(name)
        for title, query in QUERIES.items():
            movies = await query.using(table).to_list()
            found[title] = [(m.PartitionKey, m.RowKey) for m in movies]
            out("")
            out(title)
            out(f"  {query.explain()}".replace("\n", "\n  "))
            out(f"  -> {', '.join(describe(m) for m in movies) or 'nothing'}")

        # Continuation: a page per request, the token kept as text between "requests".
        out("")
        out("all movies rated 4.5 or more, 4 per page")
        best = Query(Movie).where(Movie.rating >= 4.5).page_size(4)
        pages: list[list[str]] = []
        token: str | None = None
        async for page in best.using(table).pages():
            pages.append([m.RowKey for m in page.items])
            out(f"  page {len(pages)}: {', '.join(m.RowKey for m in page.items)}")
            if len(pages) == 2:
                token = page.continuation
                break
        found["pages"] = pages
        assert token is not None
        out(f"  saved token after page 2: {token[:32]}...")
        # Later, elsewhere: the same query, rebuilt from scratch, resumes from the text.
        again = Query(Movie).where(Movie.rating >= 4.5).page_size(4).using(table)
        resumed = [m.RowKey async for page in again.pages(token) for m in page.items]
        found["resumed"] = resumed
        out(f"  resumed: {', '.join(resumed)}")

        # Point reads through a context: a missing entity can be None instead of an error.
        reader = TableContext(service, ignore_resource_not_found=True)
        missing = await reader.get(Movie, name, "Action", "No Such Movie")
        out("")
        out(f"point read of a missing movie with ignore_resource_not_found: {missing}")
        found["missing"] = missing
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m examples.movies``."""
    return run_example("Movie catalogue: entities, query kinds, continuation", run, argv)


if __name__ == "__main__":
    sys.exit(main())
