"""Running a query's requests: the table a query reads (``QueryTable``), how result rows
become objects (``decoder_for``, ``page_decoder_for``), one request per page, resumable
continuation tokens, and the two ways of running a fan-out's sub-queries: merged in key
order on Azure Table storage, one after another on the Cosmos DB Table API (whose query
results are not sorted by key, so a merge by key would drop rows).

Example::

    >>> page_decoder_for(Movie, None)([{"PartitionKey": "a", "RowKey": "b"}])[0].RowKey
    'b'
"""

from __future__ import annotations

import asyncio
import base64
import heapq
import json
import operator
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar, cast, overload

import attrs

from azt._core.config import WireFormat
from azt._core.pagination import ContinuationToken, Page
from azt._edm.entity import TableEntity
from azt._errors import ValidationError
from azt._orm.codec import codec_for
from azt._orm.entity import Entity, EntityMeta
from azt._orm.expr import And, Condition, Or
from azt._orm.indexes import declared_indexes, is_index_row_key, note_index_keys
from azt._orm.planner import MAX_COMPARISONS, KeyRange, PlanKind, QueryPlan, ordinal

__all__ = [
    "MAX_PAGE",
    "Decoding",
    "PageSource",
    "QueryPage",
    "QueryTable",
    "QueryTarget",
    "branches_disjoint",
    "concatenated_pages",
    "decode_token",
    "decoder_for",
    "encode_token",
    "fetch_page",
    "merged_pages",
    "page_decoder_for",
    "page_top",
    "resume_after",
    "row_key",
    "single_pages",
]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

#: the service's largest page (and ``$top``)
MAX_PAGE = 1000


class PageSource(Protocol[R]):
    """One query request, as ``TableClient.query_entities`` returns it (an ``AsyncPager``).

    Example::

        >>> hasattr(PageSource, "first_page")
        True
    """

    async def first_page(self) -> Page[R]:
        """Send the request: its page of results and the continuation after it.

        Example::

            page = await table.query_entities("PartitionKey eq 'a'").first_page()
        """
        ...


class QueryTable(Protocol):
    """The table a :class:`~azt.query.Query` reads; ``azt.TableClient`` is one. Given
    ``page_decoder=``, ``query_entities`` hands each page's JSON rows to it: the query
    does so when the table speaks JSON (``wire_format.is_json``); Atom tables give
    ``TableEntity`` rows, decoded one by one.

    Example::

        >>> from azt import TableClient
        >>> hasattr(TableClient, "query_entities") and hasattr(TableClient, "wire_format")
        True
    """

    @property
    def wire_format(self) -> WireFormat:
        """The table's wire format.

        Example::

            table.wire_format.is_json   # True at every JSON metadata level
        """
        ...

    @overload
    def query_entities(
        self,
        filter: str | None = None,
        *,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | None = None,
        page_decoder: None = None,
    ) -> PageSource[TableEntity]: ...
    @overload
    def query_entities(
        self,
        filter: str | None = None,
        *,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | None = None,
        page_decoder: Callable[[list[dict[str, Any]]], list[R]],
    ) -> PageSource[R]: ...
    def query_entities(
        self,
        filter: str | None = None,
        *,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | None = None,
        page_decoder: Callable[[list[dict[str, Any]]], list[Any]] | None = None,
    ) -> PageSource[Any]:
        """One request's pager (see ``azt.TableClient.query_entities``).

        Example::

            page = await table.query_entities(None, results_per_page=10).first_page()
        """
        ...


class QueryTarget(Protocol[R_co]):
    """What a query can produce besides entity classes: an object with a ``decoder``
    that turns result rows (``TableEntity``) into results; ``DynamicEntity`` and the
    resolvers of :mod:`azt.dynamic` implement it. A target may also have a
    ``page_decoder(select)`` method returning a decoder of a page's raw JSON rows, or
    ``None`` (see :func:`page_decoder_for`); the built-in resolvers do.

    Example::

        >>> from azt.dynamic import DynamicEntity
        >>> Query(DynamicEntity).compile().filter is None
        True
    """

    def decoder(self, select: frozenset[str] | None) -> Callable[[Mapping[str, Any]], R_co]:
        """The row decoder, for a projection (``select``: wire names) or everything.

        Example::

            >>> from azt.dynamic import DynamicEntity
            >>> DynamicEntity.decoder(None)({"PartitionKey": "p", "RowKey": "r"}).PartitionKey
            'p'
        """
        ...


def decoder_for(target: Any, select: frozenset[str] | None) -> Callable[[Mapping[str, Any]], Any]:
    """The function that turns one row of a query page (a ``TableEntity``) into a result.

    Example::

        >>> decoder_for(Movie, None)({"PartitionKey": "a", "RowKey": "b"}).PartitionKey
        'a'
    """
    if isinstance(target, EntityMeta):
        one = codec_for(cast(Any, target), select).from_entity
        if not declared_indexes(target):
            return one

        def decode_noted(row: Mapping[str, Any]) -> Any:
            obj = one(row)
            note_index_keys(obj)  # the stored index keys, for later writes
            return obj

        return decode_noted
    dec = getattr(target, "decoder", None)
    if dec is None:
        raise TypeError(
            f"cannot query into {target!r}: expected an Entity class, DynamicEntity or a "
            "resolver (azt.dynamic)"
        )
    return cast(Callable[[Mapping[str, Any]], Any], dec(select))


@attrs.frozen
class QueryPage(Generic[R]):
    """One page of results and the token that resumes after it (``None`` at the end).

    Example::

        >>> QueryPage(items=[], continuation=None).continuation is None
        True
    """

    items: list[R]
    continuation: str | None


def page_decoder_for(
    target: Any, select: frozenset[str] | None
) -> Callable[[list[Any]], list[Any]] | None:
    """The function that turns the JSON entity objects of one query page, as parsed from
    the body at any metadata level, straight into results (``None``: this target decodes
    ``TableEntity`` rows only). Entity classes have one: their values are converted by the
    declared EDM types, with no intermediate ``TableEntity``; other targets may offer one
    with a ``page_decoder(select)`` method (the built-in resolvers of :mod:`azt.dynamic` do).

    Example::

        >>> rows = [{"odata.etag": 'W/"1"', "PartitionKey": "a", "RowKey": "b", "rating": 4}]
        >>> page_decoder_for(Movie, None)(rows)[0].rating
        4.0
    """
    if isinstance(target, EntityMeta):
        rows_decoder = codec_for(cast(Any, target), select).decode_rows
        if not declared_indexes(target):
            return rows_decoder

        def decode_noted(rows: list[Any]) -> list[Any]:
            objs = rows_decoder(rows)
            for obj in objs:
                note_index_keys(obj)
            return objs

        return decode_noted
    make = getattr(target, "page_decoder", None)
    if make is None:
        return None
    return cast(Callable[[list[Any]], list[Any]] | None, make(select))


@attrs.frozen
class Decoding:
    """How a query turns service pages into results: ``row`` decodes a ``TableEntity``,
    ``page`` (if any) a page's JSON rows.

    Example::

        >>> Decoding(decoder_for(Movie, None), None).page is None
        True
    """

    row: Callable[[Mapping[str, Any]], Any]
    page: Callable[[list[Any]], list[Any]] | None
    #: the query reads index rows (an index plan): rows in the reserved range are kept
    index_rows: bool = False


def page_top(page_size: int | None, limit: int | None, already: int = 0) -> int | None:
    """``$top`` of the next request, ``already`` results into a query of at most ``limit``.

    Example::

        >>> page_top(None, 5, already=3), page_top(100, None)
        (2, 100)
    """
    top = page_size
    if limit is not None:
        remaining = max(limit - already, 1)
        top = min(top or MAX_PAGE, remaining)
    return top


async def fetch_page(
    table: QueryTable,
    filter: str | None,
    select: Sequence[str] | None,
    top: int | None,
    cont: str | None,
    decoding: Decoding,
) -> tuple[list[Any], str | None]:
    """One request: (results, next continuation as a string, or None). A table speaking
    JSON hands the page's JSON rows straight to the page decoder, if there is one.

    Example::

        items, cont = await fetch_page(table, "PartitionKey eq 'a'", None, 10, None, decoding)
    """
    token = ContinuationToken.from_string(cont) if cont else None
    sel = list(select) if select is not None else None
    page: Page[Any]
    keep = decoding.index_rows
    if decoding.page is not None and table.wire_format.is_json:
        page = await table.query_entities(
            filter,
            select=sel,
            results_per_page=top,
            continuation=token,
            page_decoder=decoding.page if keep else _main_rows(decoding.page),
        ).first_page()
        items: list[Any] = page.items
    else:
        page = await table.query_entities(
            filter, select=sel, results_per_page=top, continuation=token
        ).first_page()
        decode = decoding.row
        items = [decode(r) for r in page.items if keep or not is_index_row_key(r.get("RowKey"))]
    nxt = page.continuation
    return items, (nxt.to_string() if nxt is not None else None)


_ROW_KEY = operator.itemgetter("RowKey")


def _main_rows(decode: Callable[[list[Any]], list[Any]]) -> Callable[[list[Any]], list[Any]]:
    """``decode`` of a page's JSON rows, leaving out index rows (RowKeys in the range azt
    reserves for them): queries of main rows never see them, whatever class reads."""

    def decode_main(rows: list[Any]) -> list[Any]:
        # Fast path (a C-level max, ~3x quicker than a Python loop per row): no RowKey at or
        # above U+FFFD means no index row. A projection without RowKey takes the exact path.
        try:
            top = max(map(_ROW_KEY, rows), default="")
        except (KeyError, TypeError):
            top = "\ufffd"
        if top < "\ufffd":
            return decode(rows)
        return decode([r for r in rows if not is_index_row_key(r.get("RowKey"))])

    return decode_main


def page_out(
    items: list[Any], cont: Any, limit: int | None, done: int, fingerprint: str
) -> tuple[list[Any], str | None, int]:
    """One page's results cut to ``take(n)``, the token that resumes after them (``None``
    at the end) and the new count of results returned so far.

    Example::

        >>> page_out([1, 2, 3], None, 2, 0, "fp")
        ([1, 2], None, 2)
    """
    if limit is not None and done + len(items) >= limit:
        items = items[: limit - done]
        cont = None
    done += len(items)
    token = encode_token({"v": 1, "q": fingerprint, "n": done, "c": cont}) if cont else None
    return items, token, done


async def single_pages(
    table: QueryTable,
    filter: str | None,
    select: Sequence[str] | None,
    page_size: int | None,
    limit: int | None,
    state: dict[str, Any],
    decoding: Decoding,
    fingerprint: str,
) -> AsyncGenerator[QueryPage[Any], None]:
    """The pages of one request sequence, resuming from ``state`` (a decoded token);
    empty service pages are skipped.

    Example::

        async for page in single_pages(table, None, None, 100, None, state, decoding, fp): ...
    """
    done = state["n"]
    cont: Any = state.get("c")
    while True:
        top = page_top(page_size, limit, done)
        items, cont = await fetch_page(table, filter, select, top, cont, decoding)
        items, token, done = page_out(items, cont, limit, done, fingerprint)
        if items or token is None:
            yield QueryPage(items, token)
        if token is None:
            return


async def merged_pages(
    table: QueryTable,
    conds: Sequence[Condition],
    select: Sequence[str] | None,
    page_size: int | None,
    limit: int | None,
    concurrency: int,
    state: dict[str, Any],
    decoding: Decoding,
    fingerprint: str,
) -> AsyncGenerator[QueryPage[Any], None]:
    """The pages of a fan-out: the sub-queries ``conds`` run in parallel (at most
    ``concurrency`` requests at once), merged in the service's (PartitionKey, RowKey)
    order without duplicates. Resumed (``state["a"]``: the last key returned), results up
    to that key are dropped (a sub-query's resume filter may be looser, see
    :func:`resume_after`).

    Example::

        async for page in merged_pages(table, conds, None, None, None, 8, state, dec, fp): ...
    """
    sem = asyncio.Semaphore(concurrency)
    done = state["n"]
    per_page = page_size or MAX_PAGE

    class _Stream:
        __slots__ = ("buf", "cont", "filter", "finished")

        def __init__(self, text: str) -> None:
            self.filter = text
            self.buf: deque[Any] = deque()
            self.cont: Any = None
            self.finished = False

    streams = [_Stream(c.to_odata()) for c in conds]

    async def refill(s: _Stream) -> None:
        while not s.buf and not s.finished:
            async with sem:
                top = page_top(page_size, limit, done)
                got, s.cont = await fetch_page(table, s.filter, select, top, s.cont, decoding)
            s.buf.extend(got)
            if s.cont is None:
                s.finished = True

    heap: list[tuple[tuple[str, str], int]] = []
    after = state.get("a")
    last: tuple[str, str] | None = (ordinal(after[0]), ordinal(after[1])) if after else None
    last_raw: tuple[str, str] | None = None
    pending = list(range(len(streams)))
    items: list[Any] = []
    while True:
        if pending:
            try:
                async with asyncio.TaskGroup() as tg:  # a failure cancels the others
                    for i in pending:
                        tg.create_task(refill(streams[i]))
            except BaseExceptionGroup as group:
                raise _first_error(group) from None
            for i in pending:
                if streams[i].buf:
                    heapq.heappush(heap, (row_key(streams[i].buf[0]), i))
            pending = []
        if not heap:
            break
        key, i = heapq.heappop(heap)
        s = streams[i]
        obj = s.buf.popleft()
        if s.buf:
            heapq.heappush(heap, (row_key(s.buf[0]), i))
        elif not s.finished:
            pending.append(i)
        if last is not None and key <= last:
            continue  # the same entity matched two branches, or it precedes a resume point
        last = key
        last_raw = (obj.PartitionKey, obj.RowKey)
        items.append(obj)
        done += 1
        if limit is not None and done >= limit:
            break
        if len(items) >= per_page:
            token = encode_token({"v": 1, "q": fingerprint, "n": done, "a": list(last_raw)})
            yield QueryPage(items, token)
            items = []
    yield QueryPage(items, None)


async def concatenated_pages(
    table: QueryTable,
    conds: Sequence[Condition],
    select: Sequence[str] | None,
    page_size: int | None,
    limit: int | None,
    state: dict[str, Any],
    decoding: Decoding,
    fingerprint: str,
) -> AsyncGenerator[QueryPage[Any], None]:
    """The pages of a fan-out whose sub-queries ``conds`` match disjoint key ranges (see
    :func:`branches_disjoint`), one sub-query after another, each in the order the service
    returns its rows. Needs no key order from the service (the Cosmos DB Table API's is
    unsorted) and, the branches being disjoint, no de-duplication. Resumed from ``state``:
    ``"s"`` the sub-query, ``"c"`` its service continuation.

    Example::

        async for page in concatenated_pages(table, conds, None, 100, None, state, dec, fp): ...
    """
    done = state["n"]
    index: int = state.get("s", 0)
    cont: Any = state.get("c")
    while index < len(conds):
        top = page_top(page_size, limit, done)
        items, cont = await fetch_page(table, conds[index].to_odata(), select, top, cont, decoding)
        if limit is not None and done + len(items) >= limit:
            items = items[: limit - done]
            done += len(items)
            yield QueryPage(items, None)
            return
        done += len(items)
        if cont is None:
            index += 1
        token = None
        if index < len(conds):
            token = encode_token({"v": 1, "q": fingerprint, "n": done, "s": index, "c": cont})
        if items or token is None:
            yield QueryPage(items, token)
        if token is None:
            return
    yield QueryPage([], None)


def branches_disjoint(subplans: Sequence[QueryPlan]) -> bool:
    """Whether no entity's key lies in the key ranges of two of ``subplans`` (so that no
    entity can match two branches of a fan-out).

    Example::

        >>> from azt.query import make_plan
        >>> a, b = Movie.PartitionKey == "A", Movie.PartitionKey == "B"
        >>> branches_disjoint(make_plan(a | b).subplans)
        True
        >>> branches_disjoint(make_plan(a | (a & (Movie.RowKey > "m"))).subplans)
        False
    """
    spans = [_key_span(sp) for sp in subplans]
    for i, (pa, ra) in enumerate(spans):
        for pb, rb in spans[i + 1 :]:
            if not _ranges_disjoint(pa, pb) and not (
                _single(pa) and _single(pb) and _ranges_disjoint(ra, rb)
            ):
                return False
    return True


def _key_span(plan: QueryPlan) -> tuple[KeyRange, KeyRange]:
    """The (PartitionKey, RowKey) ranges a branch's matches lie in."""
    if plan.partition_key is not None:
        pk = KeyRange(plan.partition_key, True, plan.partition_key, True)
        if plan.row_key is not None:
            return pk, KeyRange(plan.row_key, True, plan.row_key, True)
        return pk, plan.row_range or KeyRange()
    return plan.partition_range or KeyRange(), KeyRange()


def _single(r: KeyRange) -> bool:
    return r.low is not None and r.low == r.high and r.low_inclusive and r.high_inclusive


def _ranges_disjoint(a: KeyRange, b: KeyRange) -> bool:
    return _below(a, b) or _below(b, a)


def _below(a: KeyRange, b: KeyRange) -> bool:
    """Whether every key of ``a`` is under every key of ``b`` (UTF-16 order)."""
    if a.high is None or b.low is None:
        return False
    hi, lo = ordinal(a.high), ordinal(b.low)
    return hi < lo or (hi == lo and not (a.high_inclusive and b.low_inclusive))


def row_key(obj: Any) -> tuple[str, str]:
    """The (PartitionKey, RowKey) of a result, comparable in the service's key order.

    Example::

        >>> row_key(Movie("a", "b"))
        ('a', 'b')
    """
    return (ordinal(obj.PartitionKey), ordinal(obj.RowKey))


def encode_token(data: dict[str, Any]) -> str:
    """A query continuation token: ``data`` as URL-safe base64 JSON.

    Example::

        >>> decode_token(encode_token({"v": 1, "q": "f", "n": 0}), "f")["n"]
        0
    """
    raw = json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str, fingerprint: str) -> dict[str, Any]:
    """The state in a continuation token of the query with ``fingerprint``; a malformed
    token, or one of another query, raises :class:`azt.ValidationError`.

    Example::

        >>> decode_token(encode_token({"v": 1, "q": "f", "n": 2}), "f")["n"]
        2
    """
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
    except (ValueError, TypeError) as exc:
        raise ValidationError(f"malformed query continuation token: {exc}") from None
    if not isinstance(data, dict) or data.get("v") != 1:
        raise ValidationError("malformed query continuation token")
    if data.get("q") != fingerprint:
        raise ValidationError(
            "this continuation token belongs to a different query (filter, select or target "
            "changed)"
        )
    n, c, a, s = data.get("n"), data.get("c"), data.get("a"), data.get("s", 0)
    if (
        type(n) is not int
        or n < 0
        or type(s) is not int
        or s < 0
        or not (c is None or isinstance(c, str))
        or not (
            a is None or (isinstance(a, list) and len(a) == 2 and all(type(k) is str for k in a))
        )
    ):
        raise ValidationError("malformed query continuation token (edited?)")
    return data


def resume_after(plan: QueryPlan, cond: Condition, pk: str, rk: str) -> Condition | None:
    """``cond`` narrowed to keys after (pk, rk) for a resumed fan-out; None when nothing
    can be left. A branch pinned to one partition needs one extra comparison, others
    three. The narrowing never takes the filter over the service's 15 comparisons: with
    less room it is looser (``PartitionKey ge pk``, or none), and :func:`merged_pages`,
    given the same resume point, drops what the looser filter returns up to it.

    Example::

        >>> from azt.query import make_plan
        >>> plan = make_plan(Movie.PartitionKey == "A")
        >>> str(resume_after(plan, plan.condition, "A", "r5"))
        "PartitionKey eq 'A' and RowKey gt 'r5'"
    """
    room = MAX_COMPARISONS - cond.comparisons()
    if plan.partition_key is not None:  # point or row range: one partition
        if ordinal(plan.partition_key) < ordinal(pk):
            return None
        if plan.partition_key != pk:
            return cond
        if plan.kind is PlanKind.POINT:
            return (
                cond if plan.row_key is not None and ordinal(plan.row_key) > ordinal(rk) else None
            )
        return And.of(cond, Entity.RowKey > rk) if room >= 1 else cond
    if room >= 3:
        return And.of(
            cond,
            Or.of(Entity.PartitionKey > pk, (Entity.PartitionKey == pk) & (Entity.RowKey > rk)),
        )
    return And.of(cond, Entity.PartitionKey >= pk) if room >= 1 else cond


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first real error of a task group (sub-query failures surface as themselves)."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc
