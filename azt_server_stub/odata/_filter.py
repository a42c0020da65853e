"""Compiled filters: :class:`EntityFilter` and the two ``compile_*`` entry points."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from ..model import Entity
from ._ast import Const, Node
from ._compile import compile_entity_matcher, compile_table_matcher
from ._parser import parse_filter
from ._planner import FULL_RANGE, KeyRange, classify, plan_ranges


class EntityFilter:
    """A compiled ``$filter`` for Query Entities: evaluator plus key-range plan.

    Attributes:

    * ``text`` - the filter as given;
    * ``matches(entity) -> bool`` - the evaluator (one compiled function);
    * ``ranges`` - sorted, disjoint, half-open ``((pk, rk), (pk, rk) | None)``
      ranges that contain every matching entity (``[]``: nothing matches;
      ``[(("", ""), None)]``: full scan);
    * ``kind`` - ``"point" | "row-range" | "partition" | "partition-range" |
      "multi" | "scan" | "empty"``;
    * ``exact`` - True when the ranges hold exactly the matching keys (a pure key
      filter): every entity inside them matches, so ``matches`` could be skipped.

    Instances are immutable and shared: :func:`compile_entity_filter` caches them.

    Example::

        >>> f = compile_entity_filter("PartitionKey eq 'p' and RowKey eq 'r'")
        >>> f.kind, f.ranges, f.exact
        ('point', [(('p', 'r'), ('p', 'r\\x00'))], True)
        >>> f.matches(Entity("p", "r", 0))
        True
    """

    __slots__ = ("exact", "kind", "matches", "ranges", "root", "text")

    text: str
    root: Node
    matches: Callable[[Entity], bool]
    ranges: list[KeyRange]
    kind: str
    exact: bool

    def __init__(self, text: str, root: Node) -> None:
        self.text = text
        self.root = root
        self.matches = compile_entity_matcher(root)
        ranges, exact = plan_ranges(root)
        self.ranges = ranges
        self.kind = classify(ranges)
        self.exact = exact

    def __repr__(self) -> str:
        return f"EntityFilter({self.text!r}, kind={self.kind!r})"


def _match_all(_: Entity) -> bool:
    return True


@lru_cache(maxsize=512)
def compile_entity_filter(text: str) -> EntityFilter:
    """Lex, parse, type-check and plan a Query Entities ``$filter``.

    An empty (or all-blank) filter matches everything. Raises
    :class:`~azt_server_stub.errors.StubError`: ``400 InvalidInput`` for
    anything the service rejects, ``501 NotImplemented`` for functions and
    arithmetic. Results are cached by text (continuation requests repeat the
    filter).

    Example::

        >>> compile_entity_filter("PartitionKey ge 'a' and PartitionKey lt 'b'").kind
        'partition-range'
        >>> compile_entity_filter("").ranges
        [(('', ''), None)]
    """
    if not text.strip():
        return EntityFilter(text, Const(True))
    return EntityFilter(text, parse_filter(text))


@lru_cache(maxsize=256)
def compile_table_filter(text: str) -> Callable[[str], bool]:
    """Compile a Query Tables ``$filter`` into a predicate over table names.

    Only ``TableName`` exists (compared ordinally with the name as created);
    any other property is missing, so comparisons on it are false. Same syntax
    and refusals as :func:`compile_entity_filter`.

    Example::

        >>> pred = compile_table_filter("TableName ge 'b' and TableName lt 'c'")
        >>> pred("books"), pred("cars")
        (True, False)
    """
    if not text.strip():
        return compile_table_matcher(Const(True))
    return compile_table_matcher(parse_filter(text))


FULL_SCAN: list[KeyRange] = [FULL_RANGE]
