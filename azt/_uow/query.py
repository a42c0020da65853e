"""``ContextQuery``: a :class:`azt.query.Query` run through a context, whose results the
context tracks (merged per its :class:`MergeOption`), and whose point queries of missing
entities raise as the legacy context's do.

Example::

    async for movie in ctx.query(Movie, "movies").where(Movie.PartitionKey == "Action"):
        movie.favorite = True
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar

from azt._edm.types import format_literal
from azt._errors import EntityNotFoundError
from azt._orm.pages import QueryPage
from azt._orm.planner import PlanKind, QueryPlan
from azt._orm.query import CompiledQuery, MultipleResultsError, Query
from azt._uow.tracker import Tracker
from azt._uow.types import MergeOption, check_merge_option

if TYPE_CHECKING:
    from azt._orm.columns import Prop
    from azt._orm.expr import Condition

__all__ = ["ContextQuery", "QueryHost"]

R = TypeVar("R")


class QueryHost(Protocol):
    """What a :class:`ContextQuery` needs of its context (:class:`azt.context.TableContext`
    is one): the defaults of ``merge_option`` and ``ignore_resource_not_found``, the tracker
    results are merged into, the busy guard, and the count of pages being fetched (a save
    refuses to start while it is not 0).

    Example::

        host: QueryHost = TableContext(service)
        q = ContextQuery(host, "movies", Query(Movie, service.get_table_client("movies")))
    """

    ignore_resource_not_found: bool
    _tracker: Tracker
    _fetching: int

    @property
    def merge_option(self) -> MergeOption: ...

    def _idle(self, what: str) -> None: ...


def _pure_point(plan: QueryPlan) -> bool:
    """A query of the form ``PartitionKey eq .. and RowKey eq ..`` and nothing else: the
    legacy context addresses such a query to the entity URL, which answers 404 when the
    entity does not exist."""
    if plan.kind is not PlanKind.POINT or plan.partition_key is None or plan.row_key is None:
        return False
    pk = "PartitionKey eq " + format_literal(plan.partition_key)
    rk = "RowKey eq " + format_literal(plan.row_key)
    return plan.filter in (f"{pk} and {rk}", f"{rk} and {pk}")


class ContextQuery(Generic[R]):
    """A :class:`azt.query.Query` run through a context: results are tracked per the
    merge option, and a point query of a missing entity raises
    :class:`azt.EntityNotFoundError` (as the legacy context does) unless
    ``ignore_resource_not_found``. A point query is exactly ``PartitionKey eq .. and RowKey
    eq ..``; with any further condition it is a filter, and an entity that does not match
    gives an empty result.

    Immutable like ``Query``: each builder returns a new query.

    Example::

        q = ctx.query(Movie, "movies").where(Movie.PartitionKey == "Action").take(10)
        movies = await q.to_list()
    """

    __slots__ = ("_ctx", "_ignore", "_option", "_query", "_table")

    def __init__(
        self,
        context: QueryHost,
        table: str,
        query: Query[R],
        *,
        merge_option: MergeOption | None = None,
        ignore_resource_not_found: bool | None = None,
    ) -> None:
        self._ctx = context
        self._table = table
        self._query = query
        self._option = merge_option
        self._ignore = ignore_resource_not_found

    def _with(self, query: Query[R]) -> Self:
        return type(self)(
            self._ctx,
            self._table,
            query,
            merge_option=self._option,
            ignore_resource_not_found=self._ignore,
        )

    @property
    def context(self) -> QueryHost:
        """The context the query runs through (its results are tracked there).

        Example::

            assert ctx.query(Movie, "movies").context is ctx
        """
        return self._ctx

    @property
    def table(self) -> str:
        """The table queried.

        Example::

            assert ctx.query(Movie, "movies").table == "movies"
        """
        return self._table

    @property
    def query(self) -> Query[R]:
        """The underlying :class:`azt.query.Query`.

        Example::

            plan = ctx.query(Movie, "movies").query.explain()
        """
        return self._query

    def where(self, *conditions: Condition | Prop[bool]) -> Self:
        """Add conditions (see :meth:`azt.query.Query.where`).

        Example::

            q = ctx.query(Movie, "movies").where(Movie.PartitionKey == "Action")
        """
        return self._with(self._query.where(*conditions))

    def select(self, *props: Prop[Any] | str) -> Self:
        """Project (see :meth:`azt.query.Query.select`); tracked entities keep the values
        of properties outside the projection.

        Example::

            q = ctx.query(Movie, "movies").select(Movie.rating)
        """
        return self._with(self._query.select(*props))

    def take(self, n: int) -> Self:
        """At most ``n`` results (see :meth:`azt.query.Query.take`).

        Example::

            top10 = await ctx.query(Movie, "movies").take(10).to_list()
        """
        return self._with(self._query.take(n))

    def page_size(self, n: int) -> Self:
        """Entities per request (see :meth:`azt.query.Query.page_size`).

        Example::

            q = ctx.query(Movie, "movies").page_size(100)
        """
        return self._with(self._query.page_size(n))

    def merge_option(self, option: MergeOption) -> Self:
        """This query with its own merge option (instead of the context's).

        Example::

            fresh = await ctx.query(Movie, "movies").merge_option(
                MergeOption.OVERWRITE_CHANGES).to_list()
        """
        q = self._with(self._query)
        q._option = check_merge_option(option)
        return q

    def ignore_resource_not_found(self, ignore: bool = True) -> Self:
        """This query with its own ``ignore_resource_not_found`` setting.

        Example::

            found = await ctx.query(Movie, "movies").where(
                Movie.PartitionKey == "A", Movie.RowKey == "B"
            ).ignore_resource_not_found().to_list()   # [] instead of EntityNotFoundError
        """
        q = self._with(self._query)
        q._ignore = bool(ignore)
        return q

    def compile(self) -> CompiledQuery:
        """The request parameters (see :meth:`azt.query.Query.compile`).

        Example::

            text = ctx.query(Movie, "movies").where(Movie.rating > 4.0).compile().filter
        """
        return self._query.compile()

    def explain(self) -> QueryPlan:
        """The plan (see :meth:`azt.query.Query.explain`).

        Example::

            kind = ctx.query(Movie, "movies").where(Movie.PartitionKey == "A").explain().kind
        """
        return self._query.explain()

    async def pages(self, continuation: str | None = None) -> AsyncGenerator[QueryPage[R], None]:
        """Tracked results page by page (``continuation`` resumes, as in ``Query``).

        Example::

            async for page in ctx.query(Movie, "movies").page_size(100).pages():
                save(page.continuation)
        """
        ctx = self._ctx
        ctx._idle("query")
        option = ctx.merge_option if self._option is None else self._option
        ignore = ctx.ignore_resource_not_found if self._ignore is None else self._ignore
        point = _pure_point(self._query.explain())
        partial = self._query.compile().select is not None
        materialize = ctx._tracker.materialize
        table = self._table
        found = 0
        agen = self._query.pages(continuation).__aiter__()
        try:
            while True:
                ctx._idle("query")
                ctx._fetching += 1
                try:
                    page = await agen.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    ctx._fetching -= 1
                ctx._idle("track query results")
                items = [materialize(table, obj, option, partial=partial) for obj in page.items]
                found += len(items)
                yield QueryPage(items, page.continuation)
        finally:
            close = getattr(agen, "aclose", None)
            if close is not None:
                await close()
        if point and not found and continuation is None and not ignore:
            plan = self._query.explain()
            raise EntityNotFoundError(
                f"The specified resource does not exist: {table}(PartitionKey="
                f"{plan.partition_key!r}, RowKey={plan.row_key!r}) (a point query; set "
                "ignore_resource_not_found to get an empty result instead)",
                status=404,
                code="ResourceNotFound",
            )

    async def __aiter__(self) -> AsyncIterator[R]:
        """Every tracked result, following continuations.

        Example::

            async for movie in ctx.query(Movie, "movies"):
                ...
        """
        async with contextlib.aclosing(self.pages()) as pages:
            async for page in pages:
                for item in page.items:
                    yield item

    async def to_list(self) -> list[R]:
        """All results as a list (tracked).

        Example::

            movies = await ctx.query(Movie, "movies").to_list()
        """
        out: list[R] = []
        async with contextlib.aclosing(self.pages()) as pages:
            async for page in pages:
                out.extend(page.items)
        return out

    async def first(self) -> R | None:
        """The first result, or ``None``.

        Example::

            movie = await ctx.query(Movie, "movies").first()
        """
        found = await self.take(1).to_list()
        return found[0] if found else None

    async def one_or_none(self) -> R | None:
        """The only result, ``None`` if none; :class:`azt.query.MultipleResultsError` if
        more.

        Example::

            movie = await ctx.query(Movie, "movies").where(Movie.RowKey == "Heat").one_or_none()
        """
        found = await self.take(2).to_list()
        if len(found) > 1:
            raise MultipleResultsError(f"one_or_none() found more than one entity in {self._table}")
        return found[0] if found else None
