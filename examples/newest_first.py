"""Newest-first keys: let the table's sort order do the "ORDER BY date DESC".

Results always come back in (PartitionKey, RowKey) order, ascending, and there is no
ORDER BY. To list the newest first, store a key that sorts the other way round:

* the seed's ``RecentMovies`` table: PartitionKey ``YYYY'-MM'-DD'`` with
  ``YYYY' = 9999 - YYYY``, ``MM' = 12 - MM``, ``DD' = 31 - DD`` (fixed width! a key of
  ``7989-2-8`` would sort after ``7989-11-0``);
* an activity feed: RowKey ``DateTime.MaxValue.Ticks - ticks`` in 19 digits, so "the
  latest 5" is ``take(5)`` of one partition, a single short request.

Run it::

    python -m examples.newest_first [--connection-string CONN]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from azt import TableServiceClient
from azt.context import SaveChangesOptions, TableContext
from azt.entity import Entity, Prop, prop
from azt.keys import composite_key, from_reverse_ticks_key, reverse_date_key, reverse_ticks_key
from azt.query import Query

from ._common import Out, run_example, scratch_table


class RecentMovie(Entity):
    """PartitionKey = reversed release date, RowKey = title.

    Example::

        >>> RecentMovie.released(date(2010, 10, 23), "Movie5").PartitionKey
        '7989-02-08'
    """

    released_on: Prop[str] = prop(name="ReleaseDate", default="")

    @classmethod
    def released(cls, day: date, title: str) -> RecentMovie:
        """A movie released on ``day``."""
        return cls(reverse_date_key(day), title, released_on=day.isoformat())


class Activity(Entity):
    """PartitionKey = user, RowKey = ``<reverse ticks>;<id>``: newest first per user.

    Example::

        >>> a = Activity.at("ada", datetime(2024, 1, 1, tzinfo=UTC), "a1", what="login")
        >>> a.RowKey.endswith(";a1"), len(a.RowKey)
        (True, 22)
    """

    what: Prop[str] = prop(name="What", default="")

    @classmethod
    def at(cls, user: str, when: datetime, ident: str, *, what: str) -> Activity:
        """An activity of ``user`` at ``when``."""
        return cls(user, composite_key(reverse_ticks_key(when), ident), what=what)

    @property
    def when(self) -> datetime:
        """When it happened (from the RowKey)."""
        return from_reverse_ticks_key(self.RowKey)


RELEASES = [
    (date(2009, 1, 20), "Movie1"),
    (date(2009, 5, 1), "Movie2"),
    (date(2010, 1, 31), "Movie3"),
    (date(2010, 6, 20), "Movie4"),
    (date(2010, 10, 23), "Movie5"),
]


def naive_reverse_key(day: date) -> str:
    """The seed's counter-example: the same arithmetic without fixed width.

    Example::

        >>> naive_reverse_key(date(2010, 10, 23))
        '7989-2-8'
    """
    return f"{9999 - day.year}-{12 - day.month}-{31 - day.day}"


async def run(service: TableServiceClient, out: Out, *, keep: bool = False) -> dict[str, Any]:
    """Store both tables' rows and read them newest first; returns what was read."""
    found: dict[str, Any] = {}
    async with scratch_table(service, "recent", out, keep=keep) as table:
        ctx = TableContext(service)
        for day, title in RELEASES:
            ctx.add(table, RecentMovie.released(day, title))
        start = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
        for i in range(30):
            when = start + timedelta(minutes=7 * i)
            ctx.add(table, Activity.at("ada", when, f"a{i:03d}", what=f"action {i}"))
        await ctx.save_changes(SaveChangesOptions.BATCH)
        client = service.get_table_client(table)

        movies = (
            await Query(RecentMovie, client)
            .where(
                RecentMovie.PartitionKey < "8"  # the movie rows (years 1000..9999 reversed)
            )
            .to_list()
        )
        out("RecentMovies in table order (newest release first, no sorting needed):")
        for m in movies:
            out(f"  {m.PartitionKey}  {m.RowKey}  released {m.released_on}")
        found["movies"] = [m.RowKey for m in movies]

        naive = sorted((naive_reverse_key(day), title) for day, title in RELEASES)
        out("the same keys without fixed width would sort as:")
        out("  " + ", ".join(f"{k} {t}" for k, t in naive))
        found["naive"] = [t for _, t in naive]

        latest = Query(Activity, client).where(Activity.PartitionKey == "ada").take(5)
        out("")
        out(f"ada's latest 5 activities: {latest.explain()}")
        rows = await latest.to_list()
        for a in rows:
            out(f"  {a.when:%Y-%m-%d %H:%M}  {a.what}")
        found["latest"] = [a.what for a in rows]

        # "Older than what I have seen": the next page is a RowKey range, no token needed.
        older = (
            await Query(Activity, client)
            .where(Activity.PartitionKey == "ada", Activity.RowKey > rows[-1].RowKey)
            .take(5)
            .to_list()
        )
        out("the 5 before those: " + ", ".join(a.what for a in older))
        found["older"] = [a.what for a in older]
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m examples.newest_first``."""
    return run_example("Newest-first keys: reverse dates and reverse ticks", run, argv)


if __name__ == "__main__":
    sys.exit(main())
