"""A micro-blog with a declared secondary index, kept exact by azt.

The seed's blog has two dominant queries for an author: posts by date and posts by
category. A table has one index (PartitionKey, RowKey), so the author is the
PartitionKey and a post's RowKey is ``date;<yyyymmdd>;<slug>``: date ranges are
row-range scans. Posts by category come from a secondary index declared on the class
(``Meta.indexes``): azt keeps a key-only index row per post in the author's partition,
under the RowKey range reserved for index rows, and writes it in the post's own entity
group transaction, so publishing, re-categorising and deleting can never leave the index
disagreeing with the posts. ``Query(Post).where(Post.PartitionKey == author,
Post.category == c)`` is answered from the index: a prefix scan of the small index rows,
then point reads of the posts. No index code is written by hand.

Run it::

    python -m examples.blog [--connection-string CONN]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from azt import TableServiceClient
from azt.context import SaveChangesError, TableContext
from azt.entity import Entity, Prop, prop
from azt.indexes import Index, index_row_keys, is_index_row_key
from azt.keys import composite_key, split_key
from azt.query import Query

from ._common import Out, run_example, scratch_table


class Post(Entity):
    """A post: PartitionKey = author, RowKey = ``date;<yyyymmdd>;<slug>``, indexed by
    category (a key-only index: its rows hold the post's keys, nothing else).

    Example::

        >>> Post.for_author("brady", datetime(2010, 9, 20, tzinfo=UTC), "randy").RowKey
        'date;20100920;randy'
    """

    title: Prop[str] = prop(name="Title", default="")
    category: Prop[str] = prop(name="Category", default="")
    published: Prop[datetime | None] = prop(name="DatePublished", default=None)
    text: Prop[str] = prop(name="Text", default="")

    class Meta:
        indexes = (Index("by_category", "category"),)

    @classmethod
    def for_author(cls, author: str, when: datetime, slug: str, **props: Any) -> Post:
        """A post of ``author`` published at ``when``."""
        return cls(author, post_key(when, slug), published=when, **props)

    @property
    def slug(self) -> str:
        """The post's slug (the last part of the RowKey)."""
        return split_key(self.RowKey)[-1]


def post_key(when: datetime, slug: str) -> str:
    """RowKey of a post.

    Example::

        >>> post_key(datetime(2010, 12, 1, tzinfo=UTC), "x")
        'date;20101201;x'
    """
    return composite_key("date", when.strftime("%Y%m%d"), slug)


async def publish(service: TableServiceClient, table: str, post: Post) -> None:
    """Insert the post; its index row goes in the same transaction."""
    ctx = TableContext(service)
    ctx.add(table, post)
    await ctx.save_changes()


async def recategorize(
    service: TableServiceClient, table: str, author: str, row_key: str, category: str
) -> None:
    """Move a post to another category: the post is updated (conditional on its ETag),
    its old index row deleted and the new one inserted, in one transaction."""
    ctx = TableContext(service)
    post = await ctx.get(Post, table, author, row_key, ignore_resource_not_found=False)
    post.category = category
    await ctx.save_changes()


async def by_month(service: TableServiceClient, table: str, author: str, yyyymm: str) -> list[Post]:
    """Posts of a month: one row-range scan (``RowKey`` from ``date;<yyyymm>``)."""
    q = Query(Post, service.get_table_client(table)).where(
        Post.PartitionKey == author, Post.RowKey.startswith(composite_key("date", yyyymm))
    )
    return await q.to_list()


def category_query(service: TableServiceClient, table: str, author: str, category: str) -> Any:
    """The query for an author's posts of a category (answered from ``by_category``)."""
    return Query(Post, service.get_table_client(table)).where(
        Post.PartitionKey == author, Post.category == category
    )


async def by_category(
    service: TableServiceClient, table: str, author: str, category: str
) -> list[Post]:
    """Posts of a category, in index order (then by date): the index rows, then point
    reads of the posts."""
    posts: list[Post] = await category_query(service, table, author, category).to_list()
    return posts


async def check_index(service: TableServiceClient, table: str, author: str) -> list[str]:
    """Problems between posts and index rows (an empty list when they agree): every row
    of the partition read raw, the index rows compared with what the posts imply."""
    client = service.get_table_client(table)
    rows = [e async for e in client.query_entities("PartitionKey eq @a", parameters={"a": author})]
    expected = {
        rk
        for e in rows
        if not is_index_row_key(e["RowKey"])
        for rk in index_row_keys(Post.from_entity(e)).values()
        if rk is not None
    }
    actual = {e["RowKey"] for e in rows if is_index_row_key(e["RowKey"])}
    problems = [f"missing index row {k!r}" for k in sorted(expected - actual)]
    problems += [f"orphan index row {k!r}" for k in sorted(actual - expected)]
    return problems


def _day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 12, tzinfo=UTC)


POSTS = [
    ("randy", _day(2010, 9, 20), "Randy to Vikings", "Sports", "Randy has left the building"),
    ("xmas", _day(2010, 12, 1), "Christmas lights", "Life", "Too many lights"),
    ("bowl", _day(2010, 12, 12), "Bowl picks", "Sports", "My picks for the bowls"),
    ("snow", _day(2010, 12, 28), "Snowed in", "Life", "Three feet of snow"),
    ("draft", _day(2011, 1, 3), "Draft order", "Sports", "Who goes first"),
]


async def run(service: TableServiceClient, out: Out, *, keep: bool = False) -> dict[str, Any]:
    """The blog story; returns what the queries found and the index check."""
    result: dict[str, Any] = {}
    async with scratch_table(service, "blog", out, keep=keep) as table:
        for slug, when, title, category, text in POSTS:
            await publish(
                service,
                table,
                Post.for_author("brady", when, slug, title=title, category=category, text=text),
            )
        out(f"published {len(POSTS)} posts; azt wrote each one's index row in its transaction")

        december = await by_month(service, table, "brady", "201012")
        out(f"December 2010: {', '.join(p.title for p in december)}")
        result["december"] = [p.slug for p in december]
        plan = category_query(service, table, "brady", "Sports").explain()
        out(f"plan: {plan.kind.value} via index {plan.index!r}")
        result["plan"] = (plan.kind.value, plan.index)
        sports = await by_category(service, table, "brady", "Sports")
        out(f"Sports: {', '.join(p.title for p in sports)}")
        result["sports"] = [p.slug for p in sports]

        # The same slug on the same day again: the post insert fails, so the index row
        # that travelled with it in the transaction is not written either.
        dup = Post.for_author(
            "brady", _day(2010, 12, 12), "bowl", title="Bowl picks II", category="Fun"
        )
        try:
            await publish(service, table, dup)
        except SaveChangesError as exc:
            out(f"duplicate post refused ({type(exc.errors[0]).__name__}); no orphan index row")

        await recategorize(service, table, "brady", post_key(_day(2010, 12, 12), "bowl"), "Fun")
        out("moved 'Bowl picks' from Sports to Fun (post and index rows in one transaction)")
        result["sports_after"] = [
            p.slug for p in await by_category(service, table, "brady", "Sports")
        ]
        result["fun_after"] = [p.slug for p in await by_category(service, table, "brady", "Fun")]
        out(f"Fun now: {', '.join(result['fun_after'])}")

        problems = await check_index(service, table, "brady")
        out(f"index check: {problems or 'consistent'}")
        result["problems"] = problems
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m examples.blog``."""
    return run_example("Blog: a declared secondary index kept exact by azt", run, argv)


if __name__ == "__main__":
    sys.exit(main())
