"""Throttling over HTTP: the aiohttp middleware, query-page costs, ``install``.

Query costs reach the throttle through :func:`record_query` (called by
:func:`azt_server_stub.realism.partitions.query`, which also calls
:func:`admit_query_partition` before scanning); without it a query page costs 1.

Example::

    throttle = install(app, Throttle(ThrottleLimits(partition_rate=500)))
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from ..addressing import Kind
from ..model import Entity
from .inspection import describe_request, prepare_refusal
from .throttle import Throttle


@dataclass(slots=True)
class QueryCost:
    """What a query page examined: ``(PartitionKey or None, entities)`` pairs.

    Example::

        >>> QueryCost([("p", 3)]).total
        3
    """

    parts: list[tuple[str | None, int]]

    @property
    def total(self) -> int:
        """Entities examined in all.

        Example::

            >>> QueryCost([("a", 2), (None, 3)]).total
            5
        """
        return sum(n for _, n in self.parts)


QUERY_COST_KEY = web.RequestKey("azt.throttle.query_cost", QueryCost)


_QUERY_REFUSED = web.RequestKey("azt.throttle.query_refused", bool)


def query_cost(entities: Sequence[Entity], scanned: int, start_pk: str | None) -> QueryCost:
    """The cost of a page: each returned entity to its partition, the examined but not
    returned ones to ``start_pk``, the partition the scan started in (when that is unknown
    or the table's start ``""``: the first returned entity's partition); at least 1.

    Example::

        >>> from azt_server_stub.model import Entity
        >>> query_cost([Entity("a", "1", 0), Entity("a", "2", 0), Entity("b", "1", 0)], 5, "a")
        QueryCost(parts=[('a', 2), ('b', 1), ('a', 2)])
    """
    parts: list[tuple[str | None, int]] = [
        (pk, sum(1 for _ in group)) for pk, group in itertools.groupby(e.pk for e in entities)
    ]
    rest = max(1, scanned) - len(entities)
    if rest > 0:
        owner = start_pk or (entities[0].pk if entities else None)
        parts.append((owner, rest))
    return QueryCost(parts)


def record_query(
    request: web.Request, entities: Sequence[Entity], scanned: int, start_pk: str | None
) -> None:
    """Record a query page's cost on ``request`` for the throttle middleware to charge.

    Called by the query adapter right after the backend produced the page; a no-op when
    the application has no throttle.

    Example::

        record_query(request, page.entities, page.scanned, start[0] if start else None)
    """
    if THROTTLE_KEY in request.app:
        request[QUERY_COST_KEY] = query_cost(entities, scanned, start_pk)


def admit_query_partition(
    request: web.Request, account: str, table: str, partition_key: str | None
) -> None:
    """Refuse a query page (raise ``503 ServerBusy``) when the partition its scan starts in
    is over its rate; a no-op without a throttle or a known partition.

    Called by the query adapter before it scans (:func:`azt_server_stub.realism.partitions.query`).

    Example::

        admit_query_partition(request, account, table, start_partition(flt, start))
    """
    # Why a query is admitted on one token and charged afterwards, rather than admitted by an
    # estimate of its cost: the cost (entities examined) is only known once the page is cut, and
    # any estimate made before (``$top``, 1,000, the scan budget) would refuse small queries on a
    # partition that has capacity for them, or admit big ones anyway. Charging the real cost
    # keeps the long-run rate exact: the overdraft is at most one page (at most ``scan_budget``
    # entities, or 1,000 returned plus the non-matching ones examined) and the partition's
    # next requests are refused until it is repaid, so over any interval ``T`` a partition
    # serves at most ``rate x T + capacity + one page``.
    throttle = request.app.get(THROTTLE_KEY)
    if throttle is None or partition_key is None:
        return
    refusal = throttle.admit_query_partition(account, table, partition_key)
    if refusal is not None:
        request[_QUERY_REFUSED] = True
        prepare_refusal(request)
        raise refusal


def _is_query(request: web.Request, kind: Kind | None, method: str) -> bool:
    return kind is Kind.COLLECTION and method in ("GET", "HEAD") and "comp" not in request.query


def middleware(throttle: Throttle) -> Middleware:
    """An aiohttp middleware throttling requests with ``throttle``.

    Place it inside the stub's service middleware (which renders the ``503 ServerBusy``).

    Example::

        app.middlewares.append(middleware(Throttle(ThrottleLimits(partition_rate=500))))
    """

    @web.middleware
    async def throttle_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not throttle.enabled:
            return await handler(request)
        info = await describe_request(request, inspect_body=True)
        account = info.account
        if account is None or request.method == "OPTIONS":
            return await handler(request)
        if _is_query(request, info.kind, info.method):
            refusal = throttle.admit_query(account)
            if refusal is not None:
                prepare_refusal(request)
                raise refusal
            try:
                return await handler(request)
            finally:
                cost = request.get(QUERY_COST_KEY)
                if request.get(_QUERY_REFUSED):
                    pass  # refused at the partition: takes nothing
                elif cost is not None:
                    throttle.charge(account, info.table, cost.parts)
                else:
                    throttle.charge(account, None, [(None, 1)])
        table = info.table if info.kind in (Kind.ENTITY, Kind.COLLECTION, Kind.BATCH) else None
        refusal = throttle.admit(account, table, info.partition_key, info.operations)
        if refusal is not None:
            prepare_refusal(request)
            raise refusal
        return await handler(request)

    return throttle_middleware


THROTTLE_KEY = web.AppKey("azt.throttle", Throttle)
"""Where :func:`install` keeps the throttle: ``app[THROTTLE_KEY]``."""


def install(app: web.Application, throttle: Throttle | None) -> Throttle | None:
    """Store ``throttle`` on ``app`` (``app[THROTTLE_KEY]``) and append its middleware.

    A no-op for ``None``. Call it before the application starts, after the service
    middleware (and after :func:`azt_server_stub.realism.fault_middleware.install`, so
    injected faults are decided before throttling).

    Example::

        throttle = install(app, Throttle(ThrottleLimits()))
    """
    if throttle is None:
        return None
    app[THROTTLE_KEY] = throttle
    app.middlewares.append(middleware(throttle))
    return throttle
