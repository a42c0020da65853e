"""OData query options for the stub: ``$filter``, ``$select``, ``$top`` and continuation tokens.

The implementation lives in the private submodules; other stub modules code against
exactly the names re-exported here.

Example::

    >>> from azt_server_stub.model import Entity, Edm
    >>> f = compile_entity_filter("PartitionKey eq 'p' and Age ge 21")
    >>> f.kind, f.matches(Entity("p", "r", 0, {"Age": (Edm.INT32, 30)}))
    ('partition', True)
"""

# CONTRACT (other stub modules code against exactly these names; the
# implementation lives in the private submodules and is re-exported here):
#
# * ``compile_entity_filter(text) -> EntityFilter`` - lex, parse and type-check
#   a ``$filter`` for Query Entities. Raises ``StubError``: ``400 InvalidInput``
#   for anything the service rejects (syntax, ``null``, two properties or two
#   literals compared, non-Boolean conditions, a literal that does not fit its
#   type, ``in``/``has``, more than 15 comparisons, nesting deeper than 64
#   parentheses/``not``), ``501 NotImplemented`` for
#   valid OData the service does not implement (functions such as
#   ``startswith``, as Azure answers; arithmetic; navigation/lambda paths). An
#   empty or blank filter matches everything. Cached by text.
# * ``EntityFilter.matches(entity) -> bool`` - evaluate against a stored
#   :class:`~azt_server_stub.model.Entity` with the service's typing rules.
# * ``EntityFilter.ranges`` - the planner's output: a sorted list of disjoint
#   half-open key ranges ``(lo, hi)`` over ``(PartitionKey, RowKey)`` tuples;
#   ``hi is None`` means unbounded. Every matching entity lies in one of them;
#   ``[]`` means nothing can match; ``[(("", ""), None)]`` is a full scan.
#   The backend scans only these ranges and still applies ``matches``. Strings
#   are ordered as the service orders them (UTF-16 code units, like the
#   backend's store); compiled filters are cached and shared, so do not mutate
#   the list.
# * ``EntityFilter.kind`` - ``"point" | "row-range" | "partition" |
#   "partition-range" | "multi" | "scan" | "empty"`` (for logs and tests).
# * ``EntityFilter.exact`` - True when the ranges hold exactly the matching keys
#   (pure key filters); ``matches`` is then true for every entity in them.
# * ``compile_table_filter(text) -> Callable[[str], bool]`` - a ``$filter`` for
#   Query Tables (comparisons on ``TableName``, the name as created).
# * ``parse_select(text) -> list[str]`` - names in order, duplicates removed;
#   ``[]`` for ``*`` or an empty value, meaning "no projection". ``400
#   InvalidInput`` for empty items, invalid names, more than 255 names.
# * ``parse_top(text) -> int`` - 1..1000; ``400 InvalidQueryParameterValue`` for
#   a non-integer, ``400 OutOfRangeQueryParameterValue`` outside the range.
# * ``encode_continuation(value) -> str`` / ``decode_continuation(token) -> str`` -
#   Azure's ``1!<len>!<base64 with - for =>`` token form (``Smith`` ->
#   ``1!8!U21pdGg-``); decoding also accepts raw values; a malformed token
#   (including an empty one) is ``400 InvalidInput``.
# * ``encode_table_continuation(name)`` / ``decode_table_continuation(token)`` -
#   the ``NextTableName`` form (name, ``0x01``, opaque suffix).
from ._continuation import (
    decode_continuation,
    decode_cosmos_continuation,
    decode_table_continuation,
    encode_continuation,
    encode_cosmos_continuation,
    encode_table_continuation,
)
from ._filter import EntityFilter, compile_entity_filter, compile_table_filter
from ._options import parse_select, parse_top
from ._planner import KeyRange

__all__ = [
    "EntityFilter",
    "KeyRange",
    "compile_entity_filter",
    "compile_table_filter",
    "decode_continuation",
    "decode_cosmos_continuation",
    "decode_table_continuation",
    "encode_continuation",
    "encode_cosmos_continuation",
    "encode_table_continuation",
    "parse_select",
    "parse_top",
]
