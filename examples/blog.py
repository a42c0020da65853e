"""A micro-blog with a second index kept consistent by entity group transactions.

The seed's blog has two dominant queries for an author: posts by date and posts by
category. A table has one index (PartitionKey, RowKey), so the author is the
PartitionKey and each post is stored as two rows of that partition:

* the post itself, RowKey ``date;<yyyymmdd>;<slug>``: date ranges are row-range scans;
* an index row, RowKey ``cat;<category>;<slug>``, holding only the post's RowKey: a
  category is a prefix scan over small rows, then point reads of the posts.

(The ``date;`` / ``cat;`` prefixes keep the two kinds apart even for a category that
looks like a date.) Publishing, re-categorising and deleting change both rows in one
entity group transaction, so the index never disagrees with the posts, even when an
operation fails half way through its planning.

Run it::

    python -m examples.blog [--connection-string CONN]
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from azt import TableServiceClient
from azt.context import SaveChangesError, SaveChangesOptions, TableContext
from azt.entity import Entity, Prop, prop
from azt.keys import composite_key, composite_prefix, split_key
from azt.query import Query

from ._common import Out, run_example, scratch_table


class Post(Entity):
    """A post: PartitionKey = author, RowKey = ``date;<yyyymmdd>;<slug>``.

    Example::

        >>> Post.for_author("brady", datetime(2010, 9, 20, tzinfo=UTC), "randy").RowKey
        'date;20100920;randy'
    """

    title: Prop[str] = prop(name="Title", default="")
    category: Prop[str] = prop(name="Category", default="")
    published: Prop[datetime | None] = prop(name="DatePublished", default=None)
    text: Prop[str] = prop(name="Text", default="")

    @classmethod
    def for_author(cls, author: str, when: datetime, slug: str, **props: Any) -> Post:
        """A post of ``author`` published at ``when``."""
        return cls(author, post_key(when, slug), published=when, **props)

    @property
    def slug(self) -> str:
        """The post's slug (the last part of the RowKey)."""
        return split_key(self.RowKey)[-1]


class CategoryIndex(Entity):
    """The index row: RowKey ``cat;<category>;<slug>``; ``post`` is the post's RowKey.

    Example::

        >>> CategoryIndex("brady", index_key("Sports", "randy"), post="date;20100920;randy").RowKey
        'cat;Sports;randy'
    """

    post: Prop[str] = prop(name="PostKey", default="")


def post_key(when: datetime, slug: str) -> str:
    """RowKey of a post.

    Example::

        >>> post_key(datetime(2010, 12, 1, tzinfo=UTC), "x")
        'date;20101201;x'
    """
    return composite_key("date", when.strftime("%Y%m%d"), slug)


def index_key(category: str, slug: str) -> str:
    """RowKey of a category index row.

    Example::

        >>> index_key("Sports", "x")
        'cat;Sports;x'
    """
    return composite_key("cat", category, slug)


async def publish(service: TableServiceClient, table: str, post: Post) -> None:
    """Insert the post and its index row in one transaction."""
    ctx = TableContext(service)
    ctx.add(table, post)
    ctx.add(
        table,
        CategoryIndex(post.PartitionKey, index_key(post.category, post.slug), post=post.RowKey),
    )
    await ctx.save_changes(SaveChangesOptions.BATCH)


async def recategorize(
    service: TableServiceClient, table: str, author: str, row_key: str, category: str
) -> None:
    """Move a post to another category: update the post, delete the old index row and
    insert the new one, atomically (conditional on the post's ETag)."""
    ctx = TableContext(service)
    post = await ctx.get(Post, table, author, row_key, ignore_resource_not_found=False)
    old = await ctx.get(
        CategoryIndex,
        table,
        author,
        index_key(post.category, post.slug),
        ignore_resource_not_found=False,
    )
    post.category = category
    ctx.delete(old)
    ctx.add(table, CategoryIndex(author, index_key(category, post.slug), post=post.RowKey))
    await ctx.save_changes(SaveChangesOptions.BATCH)


async def by_month(service: TableServiceClient, table: str, author: str, yyyymm: str) -> list[Post]:
    """Posts of a month: one row-range scan (``RowKey`` from ``date;<yyyymm>``)."""
    q = Query(Post, service.get_table_client(table)).where(
        Post.PartitionKey == author, Post.RowKey.startswith(composite_key("date", yyyymm))
    )
    return await q.to_list()


async def by_category(
    service: TableServiceClient, table: str, author: str, category: str
) -> list[Post]:
    """Posts of a category: a prefix scan of the small index rows, then point reads."""
    client = service.get_table_client(table)
    index = (
        await Query(CategoryIndex, client)
        .where(
            CategoryIndex.PartitionKey == author,
            CategoryIndex.RowKey.startswith(composite_prefix("cat", category)),
        )
        .to_list()
    )
    ctx = TableContext(service)
    posts = await asyncio.gather(
        *(ctx.get(Post, table, author, row.post, ignore_resource_not_found=False) for row in index)
    )
    return list(posts)


async def check_index(service: TableServiceClient, table: str, author: str) -> list[str]:
    """Problems between posts and index rows (an empty list when they agree)."""
    client = service.get_table_client(table)
    posts = (
        await Query(Post, client)
        .where(Post.PartitionKey == author, Post.RowKey.startswith("date;"))
        .to_list()
    )
    index = (
        await Query(CategoryIndex, client)
        .where(CategoryIndex.PartitionKey == author, CategoryIndex.RowKey.startswith("cat;"))
        .to_list()
    )
    expected = {index_key(p.category, p.slug): p.RowKey for p in posts}
    actual = {i.RowKey: i.post for i in index}
    problems = [f"missing index row {k}" for k in expected.keys() - actual.keys()]
    problems += [f"orphan index row {k}" for k in actual.keys() - expected.keys()]
    problems += [
        f"index row {k} points at {actual[k]}, not {v}"
        for k, v in expected.items()
        if k in actual and actual[k] != v
    ]
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
        out(f"published {len(POSTS)} posts, each with its index row, one transaction each")

        december = await by_month(service, table, "brady", "201012")
        out(f"December 2010: {', '.join(p.title for p in december)}")
        result["december"] = [p.slug for p in december]
        sports = await by_category(service, table, "brady", "Sports")
        out(f"Sports: {', '.join(p.title for p in sports)}")
        result["sports"] = [p.slug for p in sports]

        # The same slug on the same day again: the post insert fails, so the index row
        # that came with it is not written either.
        dup = Post.for_author(
            "brady", _day(2010, 12, 12), "bowl", title="Bowl picks II", category="Fun"
        )
        try:
            await publish(service, table, dup)
        except SaveChangesError as exc:
            out(f"duplicate post refused ({type(exc.errors[0]).__name__}); no orphan index row")

        await recategorize(service, table, "brady", post_key(_day(2010, 12, 12), "bowl"), "Fun")
        out("moved 'Bowl picks' from Sports to Fun (post + old index + new index, atomically)")
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
    return run_example("Blog: a second index row kept consistent by a batch", run, argv)


if __name__ == "__main__":
    sys.exit(main())
