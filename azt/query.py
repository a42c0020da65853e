"""The LINQ-like query builder: typed conditions, OData compilation, plans and execution.

Conditions are built from entity columns and combined with ``&``, ``|`` and ``~``::

    q = (
        Query(Movie, table)
        .where(Movie.PartitionKey == "Action", (Movie.rating > 4.0) & Movie.favorite)
        .take(10)
    )
    q.compile().filter   # "PartitionKey eq 'Action' and rating gt 4.0 and favorite eq true"
    q.explain().kind     # PlanKind.ROW_RANGE
    async for movie in q: ...

Rules the builder enforces before anything is sent (each refusal is a
:class:`azt.ValidationError` that says why):

* a property is compared with a literal of its own type: comparing two properties, ``None``
  (``null`` is not a literal), NaN/infinity, or a value of the wrong type is refused;
* only what the service evaluates is expressible: no functions; ``startswith`` becomes a
  range (``ge 'Sh' and lt 'Si'``) on any string property; ``in_`` becomes ``or``;
* at most 15 comparisons per request (the service's documented limit);
* ``ETag`` cannot be filtered; conditions have no truth value, so ``if Movie.rating > 4:``
  raises ``TypeError`` instead of silently being true.

Plans follow the seed article's efficiency classes (:class:`PlanKind`): point, row range,
partition range, full scan. A filter that is an ``or`` of conditions each pinned to key
ranges (``PartitionKey eq 'A' or PartitionKey eq 'B'``) runs as parallel sub-queries, one
per branch, merged in (PartitionKey, RowKey) order without duplicates, instead of the table
scan the service would do. On Cosmos DB, whose results are not in key order, the branches
are not merged (:class:`FanOut`: run one after another, or as the one filter when they
overlap); ``explain()`` on a Cosmos client says which.
"""

from azt._orm.expr import (
    And,
    Comparison,
    Condition,
    Not,
    Or,
    as_condition,
    prefix_condition,
    prefix_upper_bound,
)
from azt._orm.pages import QueryPage, QueryTarget, decoder_for, page_decoder_for
from azt._orm.planner import FanOut, KeyRange, PlanKind, QueryPlan, make_plan, plan_conjunction
from azt._orm.query import (
    CompiledQuery,
    MultipleResultsError,
    Query,
    QueryDeleteError,
    TableProvider,
    TableSource,
)

__all__ = [
    "And",
    "Comparison",
    "CompiledQuery",
    "Condition",
    "FanOut",
    "KeyRange",
    "MultipleResultsError",
    "Not",
    "Or",
    "PlanKind",
    "Query",
    "QueryDeleteError",
    "QueryPage",
    "QueryPlan",
    "QueryTarget",
    "TableProvider",
    "TableSource",
    "as_condition",
    "decoder_for",
    "make_plan",
    "page_decoder_for",
    "plan_conjunction",
    "prefix_condition",
    "prefix_upper_bound",
]
