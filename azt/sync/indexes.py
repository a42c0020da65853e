"""Blocking forms of :mod:`azt.indexes`' adopt, verify and repair functions, for the
blocking ``azt.sync.TableClient``: the same arguments and the same
:class:`azt.indexes.IndexReport`.

Example::

    from azt.sync import TableServiceClient
    from azt.sync.indexes import repair_index, verify_index

    with TableServiceClient.from_connection_string(conn_str) as service:
        posts = service.get_table_client("posts")
        if not verify_index(posts, Post).consistent:
            repair_index(posts, Post)
"""

from __future__ import annotations

from azt._orm import index_repair
from azt._orm.index_repair import IndexReport, PartitionDone
from azt.sync._generated import TableClient

__all__ = ["build_index", "repair_index", "verify_index"]


def verify_index(
    table: TableClient,
    cls: type,
    *,
    after: str | None = None,
    progress: PartitionDone | None = None,
) -> IndexReport:
    """:func:`azt.indexes.verify_index` for a blocking table client: compare the index
    rows with what the main rows imply, changing nothing.

    Example::

        report = verify_index(table, Post)
        assert report.consistent, report.problems
    """
    coro = index_repair.verify_index(table._inner, cls, after=after, progress=progress)
    return table._rt.run(coro)


def build_index(
    table: TableClient,
    cls: type,
    *,
    after: str | None = None,
    progress: PartitionDone | None = None,
) -> IndexReport:
    """:func:`azt.indexes.build_index` for a blocking table client: write the missing index
    rows, refresh stale copies and settle pending intents.

    Example::

        print(build_index(table, Post).written, "index rows written")
    """
    coro = index_repair.build_index(table._inner, cls, after=after, progress=progress)
    return table._rt.run(coro)


def repair_index(
    table: TableClient,
    cls: type,
    *,
    after: str | None = None,
    progress: PartitionDone | None = None,
) -> IndexReport:
    """:func:`azt.indexes.repair_index` for a blocking table client: build, and delete
    every orphan index row.

    Example::

        repair_index(table, Post)
        assert verify_index(table, Post).consistent
    """
    coro = index_repair.repair_index(table._inner, cls, after=after, progress=progress)
    return table._rt.run(coro)
