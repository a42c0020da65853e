"""Blocking parallel scans (:mod:`azt.scan` for ``azt.sync`` clients): the same ranges,
order, pages, statistics and resume tokens, iterated with ``for``.

Example::

    from azt.sync.scan import parallel_scan

    with parallel_scan(table, filter="Rating ge 4", concurrency=16) as scan:
        for entity in scan:
            ...
    token = scan.token        # resume later with parallel_scan(table, ..., token=token)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal

from azt._edm.entity import TableEntity
from azt._orm import scan as _scan
from azt._orm.scan import ScanPage, ScanStats
from azt.sync._generated import TableClient
from azt.sync._runtime import Runtime

__all__ = ["ParallelScan", "parallel_scan"]


class ParallelScan:
    """A blocking parallel scan: iterate it for entities, or :meth:`by_page` for pages;
    :attr:`token` resumes after the last entity returned; leave it with ``with`` or
    :meth:`close` to stop the requests in flight.

    Example::

        scan = parallel_scan(table, ordered=True)
        for page in scan.by_page():
            write(page.items); save(page.token)
    """

    __slots__ = ("_inner", "_rt")

    def __init__(self, rt: Runtime, inner: _scan.ParallelScan) -> None:
        self._rt = rt
        self._inner = inner

    @property
    def token(self) -> str | None:
        """The token that resumes the scan after the last entity returned (``None`` once
        it is complete).

        Example::

            later = parallel_scan(table, token=scan.token)
        """
        return self._inner.token

    @property
    def stats(self) -> ScanStats:
        """What the scan did so far (requests, probes, ranges, entities, concurrency).

        Example::

            print(scan.stats.entities, scan.stats.ranges)
        """
        return self._inner.stats

    def __iter__(self) -> Iterator[TableEntity]:
        return self._rt.iterate(self._inner.__aiter__())

    def by_page(self) -> Iterator[ScanPage]:
        """The scan's pages, each with its entities and the token after it.

        Example::

            for page in scan.by_page():
                print(len(page.items), page.token)
        """
        return self._rt.iterate(self._inner.by_page())

    def close(self) -> None:
        """Stop the scan (cancel the requests in flight); :attr:`token` still resumes
        after the last entity returned.

        Example::

            scan.close()
        """
        self._rt.run(self._inner.aclose())

    def __enter__(self) -> ParallelScan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parallel_scan(
    table: TableClient,
    *,
    filter: str | None = None,
    parameters: dict[str, Any] | None = None,
    select: Sequence[str] | None = None,
    start: str | None = None,
    stop: str | None = None,
    prefix: str | None = None,
    concurrency: int | Literal["auto"] = 8,
    ordered: bool = False,
    token: str | None = None,
    page_size: int | None = None,
    read_ahead: int | None = None,
) -> ParallelScan:
    """:func:`azt.scan.parallel_scan` for a blocking table client (the same arguments).

    Example::

        for entity in parallel_scan(table, prefix="2024-", concurrency=16):
            ...
    """
    inner = _scan.parallel_scan(
        table._inner,
        filter=filter,
        parameters=parameters,
        select=select,
        start=start,
        stop=stop,
        prefix=prefix,
        concurrency=concurrency,
        ordered=ordered,
        token=token,
        page_size=page_size,
        read_ahead=read_ahead,
    )
    return ParallelScan(table._rt, inner)
