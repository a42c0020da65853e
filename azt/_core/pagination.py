"""Continuation-token following: :class:`AsyncPager` fetches pages until the service stops
sending continuation headers (a page may be short or empty before that); iterate it for
items, or page by page for :class:`Page` objects whose :class:`ContinuationToken` can be
stored as a string and passed back later to resume.

Example::

    >>> import asyncio
    >>> async def fetch(token):
    ...     start = int(token.next_partition_key) if token else 0
    ...     more = ContinuationToken(next_partition_key=str(start + 2)) if start < 4 else None
    ...     return Page([start, start + 1], more, request_id=None)
    >>> async def demo():
    ...     return [x async for x in AsyncPager(fetch)]
    >>> asyncio.run(demo())
    [0, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Generic, TypeVar

import attrs

from azt._errors import ValidationError

__all__ = ["AsyncPager", "ContinuationToken", "Page"]

T = TypeVar("T")

_TOKEN_PREFIX = "azt1."


@attrs.frozen
class ContinuationToken:
    """Where a query resumes: the service's ``NextPartitionKey``/``NextRowKey`` (entities)
    or ``NextTableName`` (tables), kept opaque and echoed verbatim.

    ``str(token)`` (or :meth:`to_string`) gives a compact URL-safe string;
    :meth:`from_string` reads it back.

    Example::

        >>> t = ContinuationToken(next_partition_key="1!8!U21pdGg-", next_row_key="1!4!cjE-")
        >>> ContinuationToken.from_string(str(t)) == t
        True
    """

    next_partition_key: str | None = None
    next_row_key: str | None = None
    next_table_name: str | None = None

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> ContinuationToken | None:
        """The token announced by a response's ``x-ms-continuation-*`` headers, if any.

        Example::

            >>> ContinuationToken.from_headers({"x-ms-continuation-NextTableName": "abc"})
            ContinuationToken(next_partition_key=None, next_row_key=None, next_table_name='abc')
        """
        pk = headers.get("x-ms-continuation-NextPartitionKey")
        rk = headers.get("x-ms-continuation-NextRowKey")
        tn = headers.get("x-ms-continuation-NextTableName")
        if pk is None and rk is None and tn is None:
            return None
        return cls(next_partition_key=pk, next_row_key=rk, next_table_name=tn)

    def query_params(self) -> dict[str, str]:
        """The query parameters that resume the query.

        Example::

            >>> ContinuationToken(next_partition_key="a").query_params()
            {'NextPartitionKey': 'a'}
        """
        params: dict[str, str] = {}
        if self.next_partition_key is not None:
            params["NextPartitionKey"] = self.next_partition_key
        if self.next_row_key is not None:
            params["NextRowKey"] = self.next_row_key
        if self.next_table_name is not None:
            params["NextTableName"] = self.next_table_name
        return params

    def to_string(self) -> str:
        """A URL-safe string holding the token (see :meth:`from_string`).

        Example::

            >>> ContinuationToken(next_table_name="t").to_string()
            'azt1.W251bGwsbnVsbCwidCJd'
        """
        payload = json.dumps(
            [self.next_partition_key, self.next_row_key, self.next_table_name],
            separators=(",", ":"),
        ).encode("utf-8")
        return _TOKEN_PREFIX + base64.urlsafe_b64encode(payload).decode("ascii").rstrip("=")

    def __str__(self) -> str:
        return self.to_string()

    @classmethod
    def from_string(cls, text: str) -> ContinuationToken:
        """Read a token written by :meth:`to_string`; anything else raises
        :class:`azt.ValidationError`.

        Example::

            >>> ContinuationToken.from_string("garbage")
            Traceback (most recent call last):
            ...
            azt._errors.ValidationError: not an azt continuation token: 'garbage'
        """
        if not isinstance(text, str) or not text.startswith(_TOKEN_PREFIX):
            raise ValidationError(f"not an azt continuation token: {text!r}")
        data = text[len(_TOKEN_PREFIX) :]
        try:
            raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
            values = json.loads(raw)
        except (binascii.Error, ValueError) as exc:
            raise ValidationError(f"corrupt azt continuation token: {text!r}") from exc
        if (
            not isinstance(values, list)
            or len(values) != 3
            or not all(v is None or isinstance(v, str) for v in values)
            or all(v is None for v in values)
        ):
            raise ValidationError(f"corrupt azt continuation token: {text!r}")
        return cls(next_partition_key=values[0], next_row_key=values[1], next_table_name=values[2])


class Page(Generic[T]):
    """One page of results: ``items``, the ``continuation`` to resume after it (``None``
    on the last page) and the service's ``request_id``.

    A page may be empty and still have a continuation (the service stopped at a
    partition boundary or ran out of time).

    Example::

        >>> p = Page(["a"], None, request_id="r1")
        >>> list(p), p.is_last
        (['a'], True)
    """

    __slots__ = ("continuation", "items", "request_id")

    def __init__(
        self,
        items: list[T],
        continuation: ContinuationToken | None,
        *,
        request_id: str | None,
    ) -> None:
        self.items = items
        self.continuation = continuation
        self.request_id = request_id

    @property
    def is_last(self) -> bool:
        """True when no continuation follows.

        Example::

            >>> Page([], None, request_id=None).is_last
            True
        """
        return self.continuation is None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"Page({len(self.items)} items, last={self.is_last})"


Fetch = Callable[[ContinuationToken | None], Awaitable[Page[T]]]


class AsyncPager(Generic[T]):
    """Follows continuation tokens; iterate for items or use :meth:`by_page`.

    ``continuation`` resumes a query where an earlier page left off. The pager can be
    iterated more than once; each iteration starts again from ``continuation``.

    Example::

        >>> import asyncio
        >>> async def fetch(token):
        ...     if token is None:
        ...         return Page([], ContinuationToken(next_partition_key="p"), request_id=None)
        ...     return Page(["x"], None, request_id=None)
        >>> async def demo():
        ...     pager = AsyncPager(fetch)
        ...     return [len(p) async for p in pager.by_page()], await pager.to_list()
        >>> asyncio.run(demo())
        ([0, 1], ['x'])
    """

    def __init__(self, fetch: Fetch[T], *, continuation: ContinuationToken | None = None) -> None:
        self._fetch = fetch
        self._start = continuation

    async def by_page(
        self, continuation: ContinuationToken | str | None = None
    ) -> AsyncIterator[Page[T]]:
        """Yield pages until the service sends no continuation (empty pages included).

        ``continuation`` (a token or its string form) overrides the pager's start.

        Example::

            async for page in table.query_entities("PartitionKey eq 'p'").by_page():
                handle(page.items)
                checkpoint(str(page.continuation) if page.continuation else None)
        """
        token: ContinuationToken | None
        if isinstance(continuation, str):
            token = ContinuationToken.from_string(continuation)
        else:
            token = continuation if continuation is not None else self._start
        while True:
            page = await self._fetch(token)
            yield page
            if page.continuation is None:
                return
            token = page.continuation

    async def first_page(self) -> Page[T]:
        """Fetch just the first page (its ``continuation`` resumes the rest).

        Example::

            page = await table.query_entities("PartitionKey eq 'p'").first_page()
            resume_with = page.continuation
        """
        return await self._fetch(self._start)

    def __aiter__(self) -> AsyncIterator[T]:
        return self._items()

    async def _items(self) -> AsyncIterator[T]:
        async for page in self.by_page():
            for item in page.items:
                yield item

    async def to_list(self) -> list[T]:
        """All items of all pages in one list.

        Example::

            rows = await table.list_entities().to_list()
        """
        out: list[T] = []
        async for page in self.by_page():
            out.extend(page.items)
        return out
