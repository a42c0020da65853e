"""``Query``: an immutable query over one table, built from conditions, compiled to
request parameters, planned, and run page by page.

Example::

    >>> q = Query(Movie).where(Movie.PartitionKey == "Action", Movie.rating > 4.0).take(10)
    >>> q.compile().filter
    "PartitionKey eq 'Action' and rating gt 4.0"
    >>> q.explain().kind
    <PlanKind.ROW_RANGE: 'row range'>
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from contextlib import aclosing
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

import attrs

from azt._core.batch import BatchOperation, companions
from azt._core.config import Flavor
from azt._core.results import WriteResult
from azt._core.wire.batch import MAX_BATCH_OPERATIONS
from azt._errors import AztError, ValidationError
from azt._orm.columns import EntityInfo, Prop, default_table
from azt._orm.evolution import BoundEvolution
from azt._orm.expr import And, Condition, Conditional, as_condition
from azt._orm.index_plans import index_pages, index_plan, main_rows_condition
from azt._orm.indexes import declared_indexes
from azt._orm.pages import (
    MAX_PAGE,
    Decoding,
    QueryPage,
    QueryTable,
    QueryTarget,
    branches_disjoint,
    concatenated_pages,
    decode_token,
    decoder_for,
    merged_pages,
    page_decoder_for,
    page_top,
    resume_after,
    single_pages,
)
from azt._orm.planner import (
    MAX_COMPARISONS,
    FanOut,
    PlanKind,
    QueryPlan,
    check_comparisons,
    make_plan,
)
from azt._orm.values import check_property_name

__all__ = [
    "CompiledQuery",
    "MultipleResultsError",
    "Query",
    "QueryDeleteError",
    "TableProvider",
    "TableSource",
]

R = TypeVar("R")

DEFAULT_CONCURRENCY = 8
#: ``$select`` names the service takes at most
MAX_SELECT = 255


class MultipleResultsError(AztError):
    """``one_or_none()`` found more than one entity.

    Example::

        >>> isinstance(MultipleResultsError("2 rows"), AztError)
        True
    """


class QueryDeleteError(AztError):
    """``Query.delete()`` stopped at a failed transaction. ``deleted`` holds what was
    deleted before it, ``failed`` the results of the failed transaction (none of them was
    deleted: a transaction is all or nothing), and ``error`` the service's error (often a
    :class:`azt.TransactionError` with a 412: an entity changed after it was read). Results
    after the failed group were not deleted (nor read further).

    Example::

        >>> err = QueryDeleteError("stopped", deleted=[], failed=[], error=AztError("x"))
        >>> err.deleted, str(err.error)
        ([], 'x')
    """

    def __init__(
        self, message: str, *, deleted: list[Any], failed: list[Any], error: BaseException
    ) -> None:
        super().__init__(message)
        self.deleted = deleted
        self.failed = failed
        self.error = error


class TableProvider(Protocol):
    """What hands out table clients by name: ``azt.TableServiceClient`` is one. A query
    given one reads the table its entity class names (or the name it was given).

    Example::

        >>> from azt import TableServiceClient
        >>> hasattr(TableServiceClient, "get_table_client")
        True
    """

    def get_table_client(self, table_name: str, /) -> QueryTable:
        """A table client for ``table_name``.

        Example::

            table = service.get_table_client("movies")
        """
        ...


#: What a query reads from: a table client, a service client (with the entity class's
#: table or a name), or a table name (bound to a client later with ``using``).
TableSource = QueryTable | TableProvider | str


class _Transactions(Protocol):
    async def submit_transaction(self, batch: Iterable[BatchOperation], /) -> list[WriteResult]:
        """Run an entity group transaction (``azt.TableClient.submit_transaction``)."""
        ...


class _KeyRow(NamedTuple):
    """The keys of one result row: what ``Query.count()`` reads."""

    PartitionKey: str
    RowKey: str


class _KeysTarget:
    """A query target that decodes rows to their keys only (``Query.count()``)."""

    def decoder(self, select: frozenset[str] | None) -> Callable[[Mapping[str, Any]], _KeyRow]:
        return _key_row

    def page_decoder(self, select: frozenset[str] | None) -> Callable[[list[Any]], list[Any]]:
        return _key_rows


def _key_row(row: Mapping[str, Any]) -> _KeyRow:
    return _KeyRow(row["PartitionKey"], row["RowKey"])


def _key_rows(rows: list[Any]) -> list[Any]:
    return [_KeyRow(r["PartitionKey"], r["RowKey"]) for r in rows]


_KEYS = _KeysTarget()


@attrs.frozen
class CompiledQuery:
    """The request parameters of a (single) query.

    Example::

        >>> cq = Query(Movie).where(Movie.rating > 4.0).select(Movie.rating).compile()
        >>> cq.filter, cq.select
        ('rating gt 4.0', ('PartitionKey', 'RowKey', 'Timestamp', 'rating'))
    """

    filter: str | None
    select: tuple[str, ...] | None
    top: int | None


class Query(Generic[R]):
    """An immutable query over one table; every builder method returns a new query.

    ``R`` is the result type: an entity class, ``DynamicEntity`` or a resolver's union.

    Example::

        >>> q = Query(Movie).where(Movie.PartitionKey == "Action").take(5)
        >>> q.compile().filter
        "PartitionKey eq 'Action'"
        >>> q2 = q.where(Movie.rating > 4.0)   # q itself is unchanged
        >>> q.compile().filter
        "PartitionKey eq 'Action'"
    """

    __slots__ = (
        "_client",
        "_concurrency",
        "_cond",
        "_limit",
        "_page_size",
        "_provider",
        "_select",
        "_table",
        "_target",
    )

    _target: Any
    _client: QueryTable | None
    _provider: TableProvider | None
    _table: str | None
    _cond: Condition | None
    _select: tuple[str, ...] | None
    _limit: int | None
    _page_size: int | None
    _concurrency: int

    def __init__(self, target: type[R] | QueryTarget[R], source: TableSource | None = None) -> None:
        init = object.__setattr__
        init(self, "_target", target)
        init(self, "_client", None)
        init(self, "_provider", None)
        init(self, "_table", None)
        init(self, "_cond", None)
        init(self, "_select", None)
        init(self, "_limit", None)
        init(self, "_page_size", None)
        init(self, "_concurrency", DEFAULT_CONCURRENCY)
        for name, value in _source_slots(source, None, None).items():
            init(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Query objects are immutable; builder methods return new queries")

    def __repr__(self) -> str:
        target = getattr(self._target, "__qualname__", type(self._target).__qualname__)
        parts = [target]
        if self._cond is not None:
            parts.append(f"where {self._cond.to_odata()}")
        if self._select is not None:
            parts.append(f"select {', '.join(self._select)}")
        if self._limit is not None:
            parts.append(f"take {self._limit}")
        return f"<Query {' '.join(parts)}>"

    def _copy(self, **changes: Any) -> Query[R]:
        q: Query[R] = Query.__new__(Query)
        for name in Query.__slots__:
            object.__setattr__(q, name, changes.get(name, getattr(self, name)))
        return q

    # -- builders ------------------------------------------------------------------------
    def using(self, client: TableSource | None) -> Query[R]:
        """The same query bound to what it reads: a table client (``azt.TableClient``), a
        service client (``azt.TableServiceClient``: the table is the name the query was
        given, else the one its entity class names), or a table name (bound to a service
        client by a later ``using``). ``None`` unbinds.

        Example::

            >>> Query(Movie).using(None).compile().filter is None
            True
            >>> Query(Movie).using("movies").table_name
            'movies'
        """
        return self._copy(**_source_slots(client, self._table, self._provider))

    @property
    def table_name(self) -> str | None:
        """The table the query reads: its table client's, the name it was given, or the
        one its entity class names (``None``: none known yet).

        Example::

            >>> class Review(Entity, table="reviews"):
            ...     pass
            >>> Query(Review).table_name, Query(Review, "critiques").table_name
            ('reviews', 'critiques')
        """
        if self._client is not None:
            name = getattr(self._client, "table_name", None)
            return name if isinstance(name, str) else None
        return self._table if self._table is not None else default_table(self._target)

    def where(self, *conditions: Conditional) -> Query[R]:
        """Add conditions (joined with ``and`` to what is there). A filter the service would
        refuse, over 15 comparisons in a request (:data:`MAX_COMPARISONS`), is refused here
        with :class:`azt.ValidationError`; a larger ``or`` is fine when it runs as parallel
        sub-queries that each stay within the limit.

        Example::

            >>> Query(Movie).where(Movie.favorite).where(Movie.rating > 4.0).compile().filter
            'favorite eq true and rating gt 4.0'
        """
        if not conditions:
            return self
        parts = [as_condition(c) for c in conditions]
        evolution = _evolution_of(self._target)
        if evolution is not None:  # old rows' names and types, where the service can
            parts = [evolution.rewrite(c) for c in parts]
        if self._cond is not None:
            parts.insert(0, self._cond)
        cond = And.of(*parts)
        check_comparisons(cond)
        return self._copy(_cond=cond)

    def select(self, *props: Prop[Any] | str) -> Query[R]:
        """Project onto some properties (``$select``, by column or wire name; a name that is
        not a property name, or more than 255 names in all, is refused). PartitionKey,
        RowKey and Timestamp are always added, and so is the discriminator of a resolver
        choosing by property.

        Properties outside the projection are left *unset* on the results: reading one raises
        ``AttributeError``, ``repr`` shows ``<not selected>``, and ``to_entity()`` omits them.
        No default is invented for them (a sentinel or the declared default would be a wrong
        value of the declared type, and a read-modify-write would store it over real data).

        Example::

            >>> Query(Movie).select(Movie.rating).compile().select
            ('PartitionKey', 'RowKey', 'Timestamp', 'rating')
        """
        names = ["PartitionKey", "RowKey", "Timestamp"]
        for p in props:
            name = p.wire if isinstance(p, Prop) else p
            if not isinstance(name, str):
                raise TypeError(f"select() takes columns or names, got {type(p).__name__}")
            try:
                check_property_name("select()", name)
            except TypeError as exc:  # the class-definition error, here about user input
                raise ValidationError(str(exc)) from None
            if name == "ETag":
                continue  # the etag comes with every entity anyway
            if name not in names:
                names.append(name)
        for name in getattr(self._target, "required_properties", ()):
            if name not in names:  # a resolver's discriminator (azt.dynamic.by_property)
                names.append(name)
        if len(names) > MAX_SELECT:
            raise ValidationError(
                f"select() names {len(names)} properties with PartitionKey, RowKey and "
                f"Timestamp; the Table service takes at most {MAX_SELECT} (an entity has no "
                "more properties than that)"
            )
        return self._copy(_select=tuple(names))

    def take(self, n: int) -> Query[R]:
        """At most ``n`` results in total, across pages (``$top`` is per page).

        Example::

            >>> Query(Movie).take(5).compile().top
            5
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValidationError(f"take() needs a non-negative int, got {n!r}")
        return self._copy(_limit=n)

    def page_size(self, n: int) -> Query[R]:
        """Entities per request (``$top``), 1..1000 (default: the service's 1000).

        Example::

            >>> Query(Movie).page_size(100).compile().top
            100
        """
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_PAGE:
            raise ValidationError(f"page_size() needs 1..1000, got {n!r}")
        return self._copy(_page_size=n)

    def concurrency(self, n: int) -> Query[R]:
        """How many sub-queries of a MULTI plan run at once (default 8).

        Example::

            >>> Query(Movie).concurrency(2)._concurrency
            2
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValidationError(f"concurrency() needs a positive int, got {n!r}")
        return self._copy(_concurrency=n)

    # -- compilation -------------------------------------------------------------------
    @property
    def condition(self) -> Condition | None:
        """The filter condition (``None``: everything).

        Example::

            >>> str(Query(Movie).where(Movie.favorite).condition)
            'favorite eq true'
        """
        return self._cond

    def _top(self, already: int = 0) -> int | None:
        return page_top(self._page_size, self._limit, already)

    def compile(self) -> CompiledQuery:
        """The request parameters of this query when run as one request sequence (a
        fan-out, see :meth:`explain`, sends one per branch instead). What the service would
        refuse is refused here, as in :meth:`where`.

        Example::

            >>> Query(Movie).where(Movie.RowKey.startswith("Sh")).compile().filter
            "RowKey ge 'Sh' and RowKey lt 'Si'"
        """
        check_comparisons(self._cond)
        cond = main_rows_condition(self._target, self._cond)
        text = cond.to_odata() if cond is not None else None
        return CompiledQuery(text, self._select, self._top())

    def explain(self) -> QueryPlan:
        """The plan: point, row range, partition range, full scan, multi (fan-out), or
        index: for an entity class declaring secondary indexes, a filter that pins one
        PartitionKey and tests an index's first properties with ``==`` reads that index
        (the plan names it and its RowKey range); its other scans are bounded to the main
        rows.

        Example::

            >>> q = Query(Movie).where(Movie.PartitionKey == "SciFi", Movie.RowKey == "Alien")
            >>> q.explain().kind
            <PlanKind.POINT: 'point'>
        """
        plan = index_plan(self._target, self._cond, self._select)
        if plan is None:
            plan = make_plan(main_rows_condition(self._target, self._cond))
            if plan.kind is PlanKind.MULTI and self._flavor() is Flavor.COSMOS:
                # Cosmos DB returns results out of key order: a fan-out there cannot be
                # merged by key. Branches over disjoint keys run one after another;
                # overlapping branches run as the one whole filter (the service evaluates
                # each entity once).
                disjoint = branches_disjoint(plan.subplans)
                plan = attrs.evolve(plan, fanout=FanOut.BRANCHES if disjoint else FanOut.WHOLE)
        evolution = _evolution_of(self._target)
        if evolution is not None:
            notes = evolution.blind_spots(self._cond)
            if notes:
                plan = attrs.evolve(plan, notes=notes)
        return plan

    def _flavor(self) -> Flavor | None:
        """The flavour of the client (or provider) the query runs on, if it has one."""
        source = self._client if self._client is not None else self._provider
        flavor = getattr(source, "flavor", None)
        return flavor if isinstance(flavor, Flavor) else None

    def _fingerprint(self) -> str:
        target = getattr(self._target, "__qualname__", type(self._target).__qualname__)
        text = self._cond.to_odata() if self._cond is not None else None
        basis = f"{target}|{text}|{self._select}|{self._limit}"
        return hashlib.sha1(basis.encode(), usedforsecurity=False).hexdigest()[:12]

    def _check_limit(self, cond: Condition | None) -> None:
        """Refuse one request's filter over the comparison limit (``where`` refuses such
        queries first; this guards what is actually sent)."""
        if cond is not None and cond.comparisons() > MAX_COMPARISONS:
            raise ValidationError(
                f"the filter has {cond.comparisons()} comparisons; the Table service "
                f"evaluates at most {MAX_COMPARISONS} per query"
            )

    # -- execution ---------------------------------------------------------------------
    def _need_client(self) -> QueryTable:
        if self._client is not None:
            return self._client
        if self._provider is None:
            raise ValidationError(
                "this query has no table client: pass a TableClient or a TableServiceClient "
                "to Query(...) or call .using(client)"
            )
        name = self.table_name
        if name is None:
            raise ValidationError(
                f"no table for this query: {_target_name(self._target)} names none (declare "
                "it with class ...(Entity, table='name')) and no table name was given "
                "(Query(cls, 'name') or .using('name'))"
            )
        return self._provider.get_table_client(name)

    async def pages(self, continuation: str | None = None) -> AsyncGenerator[QueryPage[R], None]:
        """Results page by page; each page's ``continuation`` resumes after it (also in a new
        process, given the same query). Empty service pages are skipped.

        Example::

            async for page in Query(Movie, table).page_size(100).pages():
                save(page.continuation)
        """
        table = self._need_client()
        plan = self.explain()
        fp = self._fingerprint()
        state: dict[str, Any] = (
            decode_token(continuation, fp) if continuation else {"v": 1, "q": fp, "n": 0}
        )
        if self._limit is not None and state["n"] >= self._limit:
            return
        sel = frozenset(self._select) if self._select is not None else None
        decoding = Decoding(decoder_for(self._target, sel), page_decoder_for(self._target, sel))
        # explain() chose how a fan-out runs for the client's flavour (FanOut)
        multi = plan.kind is PlanKind.MULTI
        pages: AsyncGenerator[QueryPage[Any], None]
        conds: list[Condition] = []
        if plan.kind is PlanKind.INDEX:
            self._check_limit(plan.condition)
            pages = index_pages(
                table,
                plan,
                self._select,
                self._page_size,
                self._limit,
                self._concurrency,
                state,
                decoding,
                fp,
            )
        elif multi and plan.fanout is FanOut.BRANCHES:
            _check_token_kind(state, "s")
            for sp in plan.subplans:
                assert sp.condition is not None
                self._check_limit(sp.condition)
                conds.append(sp.condition)
            pages = concatenated_pages(
                table, conds, self._select, self._page_size, self._limit, state, decoding, fp
            )
        elif multi and plan.fanout is FanOut.MERGED:
            _check_token_kind(state, "a")
            after = state.get("a")
            for sp in plan.subplans:
                c = sp.condition
                assert c is not None
                if after is not None:
                    resumed = resume_after(sp, c, after[0], after[1])
                    if resumed is None:
                        continue  # this branch lies wholly before the resume point
                    c = resumed
                self._check_limit(c)
                conds.append(c)
            pages = merged_pages(
                table,
                conds,
                self._select,
                self._page_size,
                self._limit,
                self._concurrency,
                state,
                decoding,
                fp,
            )
        else:
            _check_token_kind(state, "c")
            # One filter: the plan's (main rows only), or on Cosmos DB an overlapping
            # fan-out's whole filter, also restricted to main rows.
            cond = (
                plan.condition
                if plan.kind is not PlanKind.MULTI
                else main_rows_condition(self._target, self._cond)
            )
            self._check_limit(cond)
            text = cond.to_odata() if cond is not None else None
            pages = single_pages(
                table, text, self._select, self._page_size, self._limit, state, decoding, fp
            )
        async with aclosing(pages):
            async for page in pages:
                yield page

    async def __aiter__(self) -> AsyncGenerator[R, None]:
        """Every result, following continuations, up to ``take(n)``.

        Example::

            async for movie in Query(Movie, table).where(Movie.PartitionKey == "Action"):
                print(movie.RowKey)
        """
        async with aclosing(self.pages()) as pages:
            async for page in pages:
                for item in page.items:
                    yield item

    async def to_list(self) -> list[R]:
        """All results as a list.

        Example::

            movies = await Query(Movie, table).take(10).to_list()
        """
        return [x async for x in self]

    def _at_most(self, n: int) -> Query[R]:
        """This query limited to ``n`` results, keeping a smaller ``take()``."""
        return self.take(n if self._limit is None else min(self._limit, n))

    async def first(self) -> R | None:
        """The first result in key order (on Cosmos DB, whose results are not sorted by
        key: the first the service returns), or ``None``.

        Example::

            movie = await Query(Movie, table).where(Movie.PartitionKey == "Action").first()
        """
        async with aclosing(self._at_most(1).__aiter__()) as items:
            async for x in items:
                return x
        return None

    async def one_or_none(self) -> R | None:
        """The only result, ``None`` if there is none; :class:`MultipleResultsError` if more.

        Example::

            q = Query(Movie, table).where(Movie.PartitionKey == "A", Movie.RowKey == "B")
            movie = await q.one_or_none()
        """
        found = [x async for x in self._at_most(2)]
        if len(found) > 1:
            raise MultipleResultsError(
                f"one_or_none() found more than one entity ({_describe(found[0])}, "
                f"{_describe(found[1])}, ...)"
            )
        return found[0] if found else None

    # -- conveniences --------------------------------------------------------------------
    async def count(self) -> int:
        """How many entities the query matches (at most ``take(n)``), following every
        continuation. Only the keys are read (``$select=PartitionKey,RowKey``), so it costs
        one request per page of up to 1000 keys.

        Example::

            n = await Query(Movie, table).where(Movie.PartitionKey == "Action").count()
        """
        table = self._need_client()  # before the target changes: it may name the table
        keys = self._copy(
            _target=_KEYS,
            _select=("PartitionKey", "RowKey"),
            _client=table,
            _provider=None,
            _table=None,
        )
        n = 0
        async with aclosing(keys.pages()) as pages:
            async for page in pages:
                n += len(page.items)
        return n

    async def first_page(self, continuation: str | None = None) -> QueryPage[R]:
        """One page of results and the token that resumes after it (``None`` at the end):
        pass the token back as ``first_page(token)`` (or ``pages(token)``) on the same query,
        also in another process. A query with no (more) results gives an empty page.

        Example::

            page = await Query(Movie, table).page_size(50).first_page()
            show(page.items)
            if page.continuation:
                more = await Query(Movie, table).page_size(50).first_page(page.continuation)
        """
        async with aclosing(self.pages(continuation)) as pages:
            async for page in pages:
                return page
        return QueryPage([], None)

    async def delete(self, *, dry_run: bool = False) -> list[R]:
        """Delete every entity the query matches (at most ``take(n)``); return them.

        Results are read page by page and deleted in entity group transactions of up to
        100 entities of one partition. Each delete is conditional on the ETag just read, so
        an entity changed after the read (which may no longer match the query) is not
        deleted: its transaction fails and :class:`QueryDeleteError` reports what was
        deleted before (``deleted``), the failed group (``failed``) and the ``error``;
        nothing after it is deleted. ``dry_run=True`` only reads, returning what would be
        deleted. The table client must offer transactions (``azt.TableClient`` does).

        Example::

            doomed = await Query(Movie, table).where(Movie.rating < 1.0).delete(dry_run=True)
            gone = await Query(Movie, table).where(Movie.rating < 1.0).delete()
        """
        if not isinstance(dry_run, bool):
            raise ValidationError(f"dry_run must be a bool, got {dry_run!r}")
        table = self._need_client()
        submit = getattr(table, "submit_transaction", None)
        if not dry_run and not callable(submit):
            raise ValidationError(
                f"delete() needs a table client with transactions (azt.TableClient), got "
                f"{type(table).__name__}"
            )
        bound = self._copy(_client=table, _provider=None, _table=None)
        if dry_run:
            return await bound.to_list()
        send = cast(_Transactions, table).submit_transaction
        deleted: list[R] = []
        group: list[R] = []

        indexed = bool(declared_indexes(self._target)) if isinstance(self._target, type) else False

        def ops_of(obj: Any) -> list[BatchOperation]:
            etag = getattr(obj, "ETag", None) or "*"
            main = BatchOperation(
                "delete", {"PartitionKey": obj.PartitionKey, "RowKey": obj.RowKey}, etag=etag
            )
            return [main, *companions(obj, "delete", None, None, etag)] if indexed else [main]

        async def flush() -> None:
            ops = [op for obj in group for op in ops_of(obj)]
            try:
                await send(ops)
            except AztError as exc:
                raise QueryDeleteError(
                    f"delete() stopped after deleting {len(deleted)} entities: the transaction "
                    f"deleting {len(group)} (from {_describe(group[0])}) failed: {exc}",
                    deleted=deleted,
                    failed=list(group),
                    error=exc,
                ) from exc
            deleted.extend(group)
            group.clear()

        per = 1 + len(declared_indexes(self._target)) if indexed else 1
        async with aclosing(bound.__aiter__()) as items:
            async for obj in items:
                if group and (
                    obj.PartitionKey != group[0].PartitionKey  # type: ignore[attr-defined]
                    or (len(group) + 1) * per > MAX_BATCH_OPERATIONS
                ):
                    await flush()
                group.append(obj)
        if group:
            await flush()
        return deleted


def _check_token_kind(state: dict[str, Any], kind: str) -> None:
    """Refuse a token made by this query run another way: ``"a"`` a fan-out merged in key
    order (Storage), ``"s"`` a fan-out run branch by branch (Cosmos DB), ``"c"`` one
    request sequence."""
    found = next((k for k in ("a", "s", "c") if k in state), None)
    if found is not None and found != kind:
        raise ValidationError(
            "this continuation token belongs to the same query run another way (a fan-out "
            "is merged in key order on Azure Table storage, run branch by branch on Cosmos "
            "DB): a token does not carry over between service flavours"
        )


def _evolution_of(target: Any) -> BoundEvolution | None:
    """The bound evolution of an entity class target (``None`` for anything else)."""
    info = getattr(target, "__azt_info__", None) if isinstance(target, type) else None
    return info.evolution if isinstance(info, EntityInfo) else None


def _target_name(target: Any) -> str:
    return str(getattr(target, "__qualname__", type(target).__qualname__))


def _source_slots(
    source: object, table: str | None, provider: TableProvider | None
) -> dict[str, Any]:
    """The slots a query's table source sets: a table name keeps a bound service client, a
    service client keeps a given name, a table client replaces both."""
    if source is None:
        return {"_client": None, "_provider": None, "_table": None}
    if isinstance(source, str):
        if not source:
            raise ValidationError("a table name must be a non-empty str")
        return {"_client": None, "_provider": provider, "_table": source}
    if callable(getattr(source, "get_table_client", None)):
        return {"_client": None, "_provider": cast(TableProvider, source), "_table": table}
    if callable(getattr(source, "query_entities", None)):
        return {"_client": cast(QueryTable, source), "_provider": None, "_table": None}
    raise ValidationError(
        "a query reads from a TableClient, a TableServiceClient or a table name, got "
        f"{type(source).__name__}"
    )


def _describe(obj: Any) -> str:
    return f"PartitionKey={obj.PartitionKey!r} RowKey={obj.RowKey!r}"
