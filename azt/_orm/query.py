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
scan the service would do.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import heapq
import inspect
import json
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, cast

import attrs

from azt._edm.types import EdmType, format_literal
from azt._errors import AztError, ValidationError

if TYPE_CHECKING:
    from typing import TypeAlias

    from azt._orm.entity import Prop

    #: what where(), &, | and ~ take: a condition, or a Boolean column on its own
    _Conditional: TypeAlias = "Condition | Prop[bool] | Prop[bool | None]"

__all__ = [
    "And",
    "Comparison",
    "CompiledQuery",
    "Condition",
    "KeyRange",
    "MultipleResultsError",
    "Not",
    "Or",
    "PlanKind",
    "Query",
    "QueryPage",
    "QueryPlan",
    "QueryTarget",
    "as_condition",
    "decoder_for",
    "make_plan",
    "page_decoder_for",
    "plan_conjunction",
    "prefix_condition",
    "prefix_upper_bound",
]

T = TypeVar("T")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

MAX_COMPARISONS = 15
MAX_FANOUT = 100
DEFAULT_CONCURRENCY = 8
MAX_PAGE = 1000


class MultipleResultsError(AztError):
    """``one_or_none()`` found more than one entity.

    Example::

        >>> isinstance(MultipleResultsError("2 rows"), AztError)
        True
    """


# ============================================================================ conditions


class Condition:
    """A filter condition (immutable). Combine with ``&``, ``|``, ``~``; ``str()`` compiles.

    Example::

        >>> c = (Movie.rating > 4.0) & ~(Movie.language == "en")
        >>> str(c)
        "rating gt 4.0 and not (language eq 'en')"
    """

    __slots__ = ()

    def __and__(self, other: _Conditional) -> Condition:
        return And.of(self, as_condition(other))

    def __rand__(self, other: _Conditional) -> Condition:
        return And.of(as_condition(other), self)

    def __or__(self, other: _Conditional) -> Condition:
        return Or.of(self, as_condition(other))

    def __ror__(self, other: _Conditional) -> Condition:
        return Or.of(as_condition(other), self)

    def __invert__(self) -> Condition:
        if isinstance(self, Not):
            return self.item
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"a query condition ({self}) has no truth value: use & | ~ instead of and/or/not, "
            "avoid chained comparisons (a < X < b), and pass conditions to Query.where()"
        )

    def __str__(self) -> str:
        return self.to_odata()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.to_odata()}>"

    def to_odata(self) -> str:
        """The ``$filter`` text of this condition.

        Example::

            >>> (Movie.PartitionKey == "O'Neil").to_odata()
            "PartitionKey eq 'O''Neil'"
        """
        raise NotImplementedError

    def comparisons(self) -> int:
        """How many comparisons the service counts in this condition (limit: 15).

        Example::

            >>> Movie.RowKey.startswith("Sh").comparisons()
            2
        """
        raise NotImplementedError


def as_condition(x: _Conditional) -> Condition:
    """A condition from a condition or a bare Boolean column (``Movie.favorite``).

    Example::

        >>> str(as_condition(Movie.favorite))
        'favorite eq true'
    """
    if isinstance(x, Condition):
        return x
    from azt._orm.entity import Prop

    if isinstance(x, Prop):
        return x._as_condition()
    if isinstance(x, bool):  # type: ignore[unreachable]
        raise TypeError(
            "got a bool where a condition was expected: was a column compared with a value of "
            "the wrong type (e.g. Movie.rating == 'x'), or 'and'/'or' used instead of & and |?"
        )
    raise TypeError(f"expected a query condition, got {type(x).__name__}")


_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


@attrs.frozen(eq=False, repr=False)
class Comparison(Condition):
    """``property op literal``; build it with the column operators (``Movie.rating > 4``).
    ``value`` is the Python value (normalised for the property's type), ``literal`` its
    OData spelling.

    Example::

        >>> cmp = Movie.rating >= 4
        >>> cmp.prop.wire, cmp.op, cmp.value, cmp.literal
        ('rating', 'ge', 4.0, '4.0')
    """

    prop: Prop[Any]
    op: str
    value: Any
    literal: str

    @staticmethod
    def build(prop: Prop[Any], op: str, value: Any) -> Comparison:
        """Check and build a comparison (the column operators call this).

        Example::

            >>> Comparison.build(Movie.rating, "gt", 4).literal
            '4.0'
        """
        from azt._orm.entity import Prop

        label = prop._label()
        if op not in _OPS:
            raise ValueError(f"unknown comparison operator {op!r}")
        if isinstance(value, Prop):
            raise ValidationError(
                f"{label} {op} {value._label()}: the Table service cannot compare two "
                "properties; filter on one and compare in Python"
            )
        if isinstance(value, Condition):
            raise ValidationError(f"{label} {op} <condition>: compare with a literal value")
        if value is None:
            raise ValidationError(
                f"{label} {op} None: null is not a $filter literal (the service never stores "
                "nulls; a missing property makes every comparison false)"
            )
        if prop.attr == "ETag":
            raise ValidationError("ETag cannot be filtered: it is not a stored property")
        wire_value = _literal_value(prop, value)
        if prop.converter is None:
            value = wire_value  # normalised (int -> float for Double, aware -> UTC ...)
        return Comparison(prop, op, value, format_literal(wire_value, prop.edm))

    def to_odata(self) -> str:
        """``wire-name op literal``.

        Example::

            >>> (Movie.release_year >= 1979).to_odata()
            'ReleaseYear ge 1979'
        """
        return f"{self.prop.wire} {self.op} {self.literal}"

    def comparisons(self) -> int:
        """One comparison.

        Example::

            >>> (Movie.rating > 4.0).comparisons()
            1
        """
        return 1


def _literal_value(prop: Prop[Any], value: Any) -> Any:
    """The storage value of a literal compared with ``prop`` (type checked, not key-checked)."""
    from azt._orm.entity import _storage_value

    try:
        return _storage_value(prop, value, key_rules=False)
    except ValidationError as exc:
        raise ValidationError(f"in a comparison: {exc}") from None


@attrs.frozen(eq=False, repr=False)
class _Junction(Condition):
    """``And`` / ``Or``: several conditions joined by one word, flattened."""

    items: tuple[Condition, ...]
    _word: ClassVar[str] = ""

    @classmethod
    def of(cls, *items: Condition) -> Condition:
        """Join ``items`` (nested joins of the same kind are flattened); one item is
        returned as is.

        Example::

            >>> isinstance(And.of(Movie.favorite == True), Comparison)
            True
            >>> len(Or.of(Or.of(Movie.rating < 1.0, Movie.rating > 4.0), Movie.favorite).items)
            3
        """
        flat: list[Condition] = []
        for it in items:
            if isinstance(it, cls):
                flat.extend(it.items)
            else:
                flat.append(as_condition(it))
        if not flat:
            raise ValueError(f"{cls.__name__}.of() needs at least one condition")
        return flat[0] if len(flat) == 1 else cls(tuple(flat))

    def to_odata(self) -> str:
        """The items joined by the word; a nested join (the other kind: same kinds are
        flattened) is parenthesised.

        Example::

            >>> ((Movie.rating < 1.0) | (Movie.rating > 4.0)) & Movie.favorite
            <And (rating lt 1.0 or rating gt 4.0) and favorite eq true>
        """
        return f" {self._word} ".join(
            f"({c.to_odata()})" if isinstance(c, _Junction) else c.to_odata() for c in self.items
        )

    def comparisons(self) -> int:
        """The comparisons of all items.

        Example::

            >>> Movie.rating.between(1.0, 2.0).comparisons()
            2
        """
        return sum(c.comparisons() for c in self.items)


@attrs.frozen(eq=False, repr=False)
class And(_Junction):
    """All of several conditions (``And.of(a, b)``, or ``a & b``).

    Example::

        >>> str(And.of(Movie.rating > 1.0, Movie.rating < 2.0))
        'rating gt 1.0 and rating lt 2.0'
    """

    _word: ClassVar[str] = "and"


@attrs.frozen(eq=False, repr=False)
class Or(_Junction):
    """Any of several conditions (``Or.of(a, b)``, or ``a | b``).

    Example::

        >>> str(Or.of(Movie.PartitionKey == "A", Movie.PartitionKey == "B"))
        "PartitionKey eq 'A' or PartitionKey eq 'B'"
    """

    _word: ClassVar[str] = "or"


@attrs.frozen(eq=False, repr=False)
class Not(Condition):
    """Negation. Note the service's rule: a comparison on a missing property is false, so
    ``~(Movie.language == "en")`` also matches rows without ``language`` (unlike ``!=``).

    Example::

        >>> str(~(Movie.language == "en"))
        "not (language eq 'en')"
    """

    item: Condition

    def to_odata(self) -> str:
        """``not (item)``.

        Example::

            >>> (~Movie.favorite).to_odata()
            'not (favorite eq true)'
        """
        return f"not ({self.item.to_odata()})"

    def comparisons(self) -> int:
        """The comparisons of the negated condition.

        Example::

            >>> (~Movie.rating.between(1.0, 2.0)).comparisons()
            2
        """
        return self.item.comparisons()


def _next_char(c: str) -> str | None:
    o = ord(c) + 1
    if 0xD800 <= o <= 0xDFFF:
        o = 0xE000
    return chr(o) if o <= 0x10FFFF else None


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (``None`` if
    there is none); ``"Sh"`` -> ``"Si"``, the seeds' ``"Sports;"`` -> ``"Sports<"``.

    Example::

        >>> prefix_upper_bound("Sh"), prefix_upper_bound("")
        ('Si', None)
    """
    s = prefix
    while s:
        nxt = _next_char(s[-1])
        if nxt is not None:
            return s[:-1] + nxt
        s = s[:-1]
    return None


def prefix_condition(prop: Prop[Any], prefix: str) -> Condition:
    """``prop`` starts with ``prefix``, as the range the service can evaluate.

    Example::

        >>> str(prefix_condition(Movie.RowKey, "Sports;"))
        "RowKey ge 'Sports;' and RowKey lt 'Sports<'"
    """
    if prop.edm is not EdmType.STRING or prop.converter is not None:
        raise ValidationError(
            f"{prop._label()}.startswith(): only Edm.String properties have prefixes"
        )
    if not isinstance(prefix, str):
        raise ValidationError(f"{prop._label()}.startswith() needs a str prefix")
    lower = Comparison.build(prop, "ge", prefix)
    upper = prefix_upper_bound(prefix)
    if upper is None:
        return lower
    return And.of(lower, Comparison.build(prop, "lt", upper))


# ============================================================================ plans


class PlanKind(StrEnum):
    """Query classes of the seed article "How to get most out of Windows Azure Tables".

    Example::

        >>> PlanKind.POINT.value
        'point'
    """

    POINT = "point"  #: PartitionKey eq and RowKey eq: one entity, the cheapest query
    ROW_RANGE = "row range"  #: one partition, a range (or all) of its rows
    PARTITION_RANGE = "partition range"  #: a range of partitions
    FULL_SCAN = "full scan"  #: every partition is read
    MULTI = "multi"  #: an OR of key-bounded branches, run as parallel sub-queries


@attrs.frozen
class KeyRange:
    """Bounds on one key, as the planner derived them (``None`` = unbounded).

    Example::

        >>> KeyRange("A", True, "B", False).describe("PartitionKey")
        "'A' <= PartitionKey < 'B'"
    """

    low: str | None = None
    low_inclusive: bool = True
    high: str | None = None
    high_inclusive: bool = True

    @property
    def bounded(self) -> bool:
        """Whether either side is bounded.

        Example::

            >>> KeyRange().bounded, KeyRange(low="a").bounded
            (False, True)
        """
        return self.low is not None or self.high is not None

    def describe(self, name: str) -> str:
        """Human-readable form.

        Example::

            >>> KeyRange(high="B").describe("RowKey")
            "RowKey <= 'B'"
        """
        parts = []
        if self.low is not None:
            parts.append(f"{self.low!r} {'<=' if self.low_inclusive else '<'} ")
        parts.append(name)
        if self.high is not None:
            parts.append(f" {'<=' if self.high_inclusive else '<'} {self.high!r}")
        return "".join(parts)


@attrs.frozen
class QueryPlan:
    """How a query will run: its class, the filter(s) sent, the key bounds found.

    Example::

        >>> plan = Query(Movie).where(Movie.PartitionKey == "Action").explain()
        >>> plan.kind, plan.partition_key
        (<PlanKind.ROW_RANGE: 'row range'>, 'Action')
    """

    kind: PlanKind
    filter: str | None
    partition_key: str | None = None
    row_key: str | None = None
    partition_range: KeyRange | None = None
    row_range: KeyRange | None = None
    subplans: tuple[QueryPlan, ...] = ()
    condition: Condition | None = attrs.field(default=None, repr=False, eq=False)

    def __str__(self) -> str:
        lines = [self._line()]
        for sp in self.subplans:
            lines.append("  - " + sp._line())
        return "\n".join(lines)

    def _line(self) -> str:
        f = f"$filter={self.filter}" if self.filter else "no $filter"
        if self.kind is PlanKind.POINT:
            what = f"PartitionKey={self.partition_key!r}, RowKey={self.row_key!r}"
        elif self.kind is PlanKind.ROW_RANGE:
            rr = self.row_range
            rows = rr.describe("RowKey") if rr and rr.bounded else "all rows"
            what = f"PartitionKey={self.partition_key!r}, {rows}"
        elif self.kind is PlanKind.PARTITION_RANGE:
            assert self.partition_range is not None
            what = self.partition_range.describe("PartitionKey")
        elif self.kind is PlanKind.MULTI:
            what = f"{len(self.subplans)} parallel sub-queries merged in key order"
        else:
            what = "no usable key bounds: every partition is read"
        return f"{self.kind.value}: {what}; {f}"


def _key_bounds(conj: Sequence[Condition]) -> tuple[list[str], KeyRange, list[str], KeyRange]:
    pk_eq: list[str] = []
    rk_eq: list[str] = []
    bounds: dict[str, list[Any]] = {
        "PartitionKey": [None, True, None, True],
        "RowKey": [None, True, None, True],
    }
    for c in conj:
        if not isinstance(c, Comparison) or not c.prop.is_key:
            continue
        name = c.prop.wire
        v = c.value
        if c.op == "eq":
            (pk_eq if name == "PartitionKey" else rk_eq).append(v)
            continue
        b = bounds[name]
        if c.op in ("gt", "ge"):
            incl = c.op == "ge"
            if b[0] is None or v > b[0] or (v == b[0] and not incl):
                b[0], b[1] = v, incl
        elif c.op in ("lt", "le"):
            incl = c.op == "le"
            if b[2] is None or v < b[2] or (v == b[2] and not incl):
                b[2], b[3] = v, incl
    pb, rb = bounds["PartitionKey"], bounds["RowKey"]
    return pk_eq, KeyRange(*pb), rk_eq, KeyRange(*rb)


def _conjuncts(c: Condition | None) -> list[Condition]:
    if c is None:
        return []
    return list(c.items) if isinstance(c, And) else [c]


def plan_conjunction(cond: Condition | None) -> QueryPlan:
    """Classify one conjunction (the ``and`` of its parts) by its key bounds.

    Example::

        >>> plan_conjunction(Movie.PartitionKey >= "A").kind
        <PlanKind.PARTITION_RANGE: 'partition range'>
    """
    text = cond.to_odata() if cond is not None else None
    pk_eq, pr, rk_eq, rr = _key_bounds(_conjuncts(cond))
    if pk_eq:
        pk = pk_eq[0]
        if rk_eq:
            return QueryPlan(
                PlanKind.POINT, text, partition_key=pk, row_key=rk_eq[0], condition=cond
            )
        return QueryPlan(PlanKind.ROW_RANGE, text, partition_key=pk, row_range=rr, condition=cond)
    if pr.bounded:
        return QueryPlan(
            PlanKind.PARTITION_RANGE, text, partition_range=pr, row_range=rr, condition=cond
        )
    return QueryPlan(PlanKind.FULL_SCAN, text, condition=cond)


def _dnf(c: Condition, limit: int) -> list[list[Condition]] | None:
    """Disjunctive normal form as lists of conjuncts, or None when larger than ``limit``.
    ``Not`` is kept whole (pushing it inward would change missing-property semantics)."""
    if isinstance(c, Or):
        out: list[list[Condition]] = []
        for it in c.items:
            sub = _dnf(it, limit)
            if sub is None:
                return None
            out.extend(sub)
            if len(out) > limit:
                return None
        return out
    if isinstance(c, And):
        acc: list[list[Condition]] = [[]]
        for it in c.items:
            sub = _dnf(it, limit)
            if sub is None or len(acc) * len(sub) > limit:
                return None
            acc = [a + b for a in acc for b in sub]
        return acc
    return [[c]]


def _cost(plan: QueryPlan) -> int:
    """Rank of a single plan, cheapest first (for deciding on a fan-out)."""
    if plan.kind is PlanKind.POINT:
        return 0
    if plan.kind is PlanKind.ROW_RANGE:
        return 1 if plan.row_range is not None and plan.row_range.bounded else 2
    if plan.kind is PlanKind.PARTITION_RANGE:
        return 3
    return 4


def make_plan(cond: Condition | None, *, max_fanout: int = MAX_FANOUT) -> QueryPlan:
    """The plan for a filter: a single query, or MULTI when an ``or`` splits into branches
    that are each cheaper than the whole (each branch is sent as its own query): partitions
    instead of a table scan, points instead of a partition scan.

    Example::

        >>> c = (Movie.PartitionKey == "Action") | (Movie.PartitionKey == "Thriller")
        >>> make_plan(c).kind
        <PlanKind.MULTI: 'multi'>
    """
    whole = plan_conjunction(cond)
    if cond is None or whole.kind is PlanKind.POINT:
        return whole
    branches = _dnf(cond, max_fanout)
    if branches is None or len(branches) < 2:
        return whole
    limit = _cost(whole)
    subplans: list[QueryPlan] = []
    seen: set[str] = set()
    for conj in branches:
        sub = plan_conjunction(And.of(*conj))
        if _cost(sub) >= limit:
            return whole
        if sub.filter not in seen:
            seen.add(cast(str, sub.filter))
            subplans.append(sub)
    if len(subplans) == 1:
        return subplans[0]
    return QueryPlan(PlanKind.MULTI, whole.filter, subplans=tuple(subplans), condition=cond)


# ============================================================================ execution


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
    from azt._orm.entity import EntityMeta

    if isinstance(target, EntityMeta):
        from azt._orm.codec import codec_for

        return codec_for(cast(Any, target), select).from_entity
    dec = getattr(target, "decoder", None)
    if dec is None:
        raise TypeError(
            f"cannot query into {target!r}: expected an Entity class, DynamicEntity or a "
            "resolver (azt.dynamic)"
        )
    return cast(Callable[[Mapping[str, Any]], Any], dec(select))


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
    from azt._orm.entity import EntityMeta

    if isinstance(target, EntityMeta):
        from azt._orm.codec import codec_for

        return codec_for(cast(Any, target), select).decode_rows
    make = getattr(target, "page_decoder", None)
    if make is None:
        return None
    return cast(Callable[[list[Any]], list[Any]] | None, make(select))


#: query_entities function -> whether it takes ``page_decoder=``
_TAKES_PAGE_DECODER: dict[Any, bool] = {}


def _takes_page_decoder(client: Any) -> bool:
    """Whether ``client.query_entities`` can hand page bodies to a page decoder: it takes
    ``page_decoder=`` and the client speaks JSON (Atom pages have no JSON rows)."""
    fmt = getattr(client, "wire_format", None)
    if fmt is not None and not getattr(fmt, "is_json", False):
        return False
    qe = client.query_entities
    fn = getattr(qe, "__func__", qe)
    known = _TAKES_PAGE_DECODER.get(fn)
    if known is None:
        try:
            known = "page_decoder" in inspect.signature(qe).parameters
        except (TypeError, ValueError):
            known = False
        _TAKES_PAGE_DECODER[fn] = known
    return known


@attrs.frozen
class _Decoding:
    """How a query turns service pages into results."""

    row: Callable[[Mapping[str, Any]], Any]
    page: Callable[[list[Any]], list[Any]] | None


async def _fetch(
    client: Any,
    filter: str | None,
    select: Sequence[str] | None,
    top: int | None,
    cont: Any,
    decoding: _Decoding,
) -> tuple[list[Any], str | None]:
    """One request through the client core's ``TableClient.query_entities``: (results,
    next continuation as a string, or None). With a client that takes ``page_decoder=``,
    the page's JSON rows go straight to entity objects."""
    from azt._core.pagination import ContinuationToken

    token = ContinuationToken.from_string(cont) if cont else None
    kwargs: dict[str, Any] = {}
    fast = decoding.page is not None and _takes_page_decoder(client)
    if fast:
        kwargs["page_decoder"] = decoding.page
    pager = client.query_entities(
        filter,
        select=list(select) if select is not None else None,
        results_per_page=top,
        continuation=token,
        **kwargs,
    )
    page = await pager.first_page()
    nxt = page.continuation
    if fast:
        items: list[Any] = page.items
    else:
        decode = decoding.row
        items = [decode(r) for r in page.items]
    return items, (nxt.to_string() if nxt is not None else None)


def _ordinal(s: str) -> str:
    """A string whose code-point order equals the service's UTF-16 ordinal order."""
    if s.isascii() or max(s) <= "\uffff":
        return s
    out = []
    for ch in s:
        o = ord(ch)
        if o > 0xFFFF:
            o -= 0x10000
            out.append(chr(0xD800 + (o >> 10)) + chr(0xDC00 + (o & 0x3FF)))
        else:
            out.append(ch)
    return "".join(out)


def _row_key(obj: Any) -> tuple[str, str]:
    return (_ordinal(obj.PartitionKey), _ordinal(obj.RowKey))


def _encode_token(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str, fingerprint: str) -> dict[str, Any]:
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
    n, c, a = data.get("n"), data.get("c"), data.get("a")
    if (
        type(n) is not int
        or n < 0
        or not (c is None or isinstance(c, str))
        or not (
            a is None or (isinstance(a, list) and len(a) == 2 and all(type(k) is str for k in a))
        )
    ):
        raise ValidationError("malformed query continuation token (edited?)")
    return data


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

    __slots__ = ("_client", "_concurrency", "_cond", "_limit", "_page_size", "_select", "_target")

    _target: Any
    _client: Any
    _cond: Condition | None
    _select: tuple[str, ...] | None
    _limit: int | None
    _page_size: int | None
    _concurrency: int

    def __init__(self, target: type[R] | QueryTarget[R], client: Any = None) -> None:
        init = object.__setattr__
        init(self, "_target", target)
        init(self, "_client", client)
        init(self, "_cond", None)
        init(self, "_select", None)
        init(self, "_limit", None)
        init(self, "_page_size", None)
        init(self, "_concurrency", DEFAULT_CONCURRENCY)

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
    def using(self, client: Any) -> Query[R]:
        """The same query bound to a table client (``azt.TableClient``).

        Example::

            >>> Query(Movie).using(None).compile().filter is None
            True
        """
        return self._copy(_client=client)

    def where(self, *conditions: _Conditional) -> Query[R]:
        """Add conditions (joined with ``and`` to what is there).

        Example::

            >>> Query(Movie).where(Movie.favorite).where(Movie.rating > 4.0).compile().filter
            'favorite eq true and rating gt 4.0'
        """
        if not conditions:
            return self
        parts = [as_condition(c) for c in conditions]
        if self._cond is not None:
            parts.insert(0, self._cond)
        return self._copy(_cond=And.of(*parts))

    def select(self, *props: Prop[Any] | str) -> Query[R]:
        """Project onto some properties (``$select``, by column or wire name; a name that is
        not a property name is refused). PartitionKey, RowKey and Timestamp are always added,
        and so is the discriminator of a resolver choosing by property.

        Properties outside the projection are left *unset* on the results: reading one raises
        ``AttributeError``, ``repr`` shows ``<not selected>``, and ``to_entity()`` omits them.
        No default is invented for them (a sentinel or the declared default would be a wrong
        value of the declared type, and a read-modify-write would store it over real data).

        Example::

            >>> Query(Movie).select(Movie.rating).compile().select
            ('PartitionKey', 'RowKey', 'Timestamp', 'rating')
        """
        from azt._orm.entity import Prop, _check_property_name

        names = ["PartitionKey", "RowKey", "Timestamp"]
        for p in props:
            name = p.wire if isinstance(p, Prop) else p
            if not isinstance(name, str):
                raise TypeError(f"select() takes columns or names, got {type(p).__name__}")
            try:
                _check_property_name("select()", name)
            except TypeError as exc:  # the class-definition error, here about user input
                raise ValidationError(str(exc)) from None
            if name == "ETag":
                continue  # the etag comes with every entity anyway
            if name not in names:
                names.append(name)
        for name in getattr(self._target, "required_properties", ()):
            if name not in names:  # a resolver's discriminator (azt.dynamic.by_property)
                names.append(name)
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
        top = self._page_size
        if self._limit is not None:
            remaining = max(self._limit - already, 1)
            top = min(top or MAX_PAGE, remaining)
        return top

    def compile(self) -> CompiledQuery:
        """The request parameters of this query when run as one request sequence.

        Example::

            >>> Query(Movie).where(Movie.RowKey.startswith("Sh")).compile().filter
            "RowKey ge 'Sh' and RowKey lt 'Si'"
        """
        text = self._cond.to_odata() if self._cond is not None else None
        return CompiledQuery(text, self._select, self._top())

    def explain(self) -> QueryPlan:
        """The plan: point, row range, partition range, full scan, or multi (fan-out).

        Example::

            >>> q = Query(Movie).where(Movie.PartitionKey == "SciFi", Movie.RowKey == "Alien")
            >>> q.explain().kind
            <PlanKind.POINT: 'point'>
        """
        return make_plan(self._cond)

    def _fingerprint(self) -> str:
        target = getattr(self._target, "__qualname__", type(self._target).__qualname__)
        basis = f"{target}|{self.compile().filter}|{self._select}|{self._limit}"
        return hashlib.sha1(basis.encode(), usedforsecurity=False).hexdigest()[:12]

    def _check_limit(self, cond: Condition | None) -> None:
        if cond is not None:
            n = cond.comparisons()
            if n > MAX_COMPARISONS:
                raise ValidationError(
                    f"the filter has {n} comparisons; the Table service evaluates at most "
                    f"{MAX_COMPARISONS} per query (split it, or narrow it with keys; an OR "
                    f"splits into parallel sub-queries only when each branch is bounded by "
                    f"keys and there are at most {MAX_FANOUT} branches)"
                )

    # -- execution ---------------------------------------------------------------------
    def _need_client(self) -> Any:
        if self._client is None:
            raise ValidationError(
                "this query has no table client: pass one to Query(...) or call .using(client)"
            )
        return self._client

    async def pages(self, continuation: str | None = None) -> AsyncGenerator[QueryPage[R], None]:
        """Results page by page; each page's ``continuation`` resumes after it (also in a new
        process, given the same query). Empty service pages are skipped.

        Example::

            async for page in Query(Movie, table).page_size(100).pages():
                save(page.continuation)
        """
        client = self._need_client()
        plan = self.explain()
        fp = self._fingerprint()
        state: dict[str, Any] = (
            _decode_token(continuation, fp) if continuation else {"v": 1, "q": fp, "n": 0}
        )
        if self._limit is not None and state["n"] >= self._limit:
            return
        sel = frozenset(self._select) if self._select is not None else None
        decoding = _Decoding(decoder_for(self._target, sel), page_decoder_for(self._target, sel))
        if plan.kind is PlanKind.MULTI:
            async for page in self._multi_pages(client, plan, state, decoding, fp):
                yield page
            return
        self._check_limit(self._cond)
        text = self._cond.to_odata() if self._cond is not None else None
        done = state["n"]
        cont: Any = state.get("c")
        while True:
            items, cont = await _fetch(client, text, self._select, self._top(done), cont, decoding)
            if self._limit is not None and done + len(items) >= self._limit:
                items = items[: self._limit - done]
                cont = None
            done += len(items)
            token = _encode_token({"v": 1, "q": fp, "n": done, "c": cont}) if cont else None
            if items or token is None:
                yield QueryPage(items, token)
            if token is None:
                return

    async def _multi_pages(
        self,
        client: Any,
        plan: QueryPlan,
        state: dict[str, Any],
        decoding: _Decoding,
        fp: str,
    ) -> AsyncIterator[QueryPage[R]]:

        after = state.get("a")
        conds: list[Condition] = []
        for sp in plan.subplans:
            c = sp.condition
            assert c is not None
            if after is not None:
                resumed = _resume_after(sp, c, after[0], after[1])
                if resumed is None:
                    continue  # this branch lies wholly before the resume point
                c = resumed
            self._check_limit(c)
            conds.append(c)
        sem = asyncio.Semaphore(self._concurrency)
        done = state["n"]
        page_size = self._page_size or MAX_PAGE

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
                    got, s.cont = await _fetch(
                        client, s.filter, self._select, self._top(done), s.cont, decoding
                    )
                s.buf.extend(got)
                if s.cont is None:
                    s.finished = True

        heap: list[tuple[tuple[str, str], int]] = []
        last: tuple[str, str] | None = None
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
                        heapq.heappush(heap, (_row_key(streams[i].buf[0]), i))
                pending = []
            if not heap:
                break
            key, i = heapq.heappop(heap)
            s = streams[i]
            obj = s.buf.popleft()
            if s.buf:
                heapq.heappush(heap, (_row_key(s.buf[0]), i))
            elif not s.finished:
                pending.append(i)
            if key == last:
                continue  # the same entity matched two branches
            last = key
            last_raw = (obj.PartitionKey, obj.RowKey)
            items.append(obj)
            done += 1
            if self._limit is not None and done >= self._limit:
                break
            if len(items) >= page_size:
                token = _encode_token({"v": 1, "q": fp, "n": done, "a": list(last_raw)})
                yield QueryPage(items, token)
                items = []
        yield QueryPage(items, None)

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
        """The first result in key order, or ``None``.

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


def _resume_after(plan: QueryPlan, cond: Condition, pk: str, rk: str) -> Condition | None:
    """``cond`` restricted to keys after (pk, rk); None when nothing can be left. A branch
    pinned to one partition needs at most one extra comparison."""
    from azt._orm.entity import Entity

    if plan.partition_key is not None:  # point or row range: one partition
        if _ordinal(plan.partition_key) < _ordinal(pk):
            return None
        if plan.partition_key != pk:
            return cond
        if plan.kind is PlanKind.POINT:
            return (
                cond if plan.row_key is not None and _ordinal(plan.row_key) > _ordinal(rk) else None
            )
        return And.of(cond, Entity.RowKey > rk)
    return And.of(
        cond,
        Or.of(Entity.PartitionKey > pk, (Entity.PartitionKey == pk) & (Entity.RowKey > rk)),
    )


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first real error of a task group (sub-query failures surface as themselves)."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def _describe(obj: Any) -> str:
    return f"PartitionKey={obj.PartitionKey!r} RowKey={obj.RowKey!r}"
