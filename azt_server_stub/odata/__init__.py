"""OData query options for the stub: ``$filter``, ``$select``, ``$top`` and continuation tokens.

CONTRACT (other stub modules code against exactly these names; the module's
owner fills in the implementation in submodules and re-exports them here):

* ``compile_entity_filter(text) -> EntityFilter`` - lex, parse and type-check
  a ``$filter`` for Query Entities. Raises ``StubError`` (``400 InvalidInput``)
  for anything the service rejects.
* ``EntityFilter.matches(entity) -> bool`` - evaluate against a stored
  :class:`~azt_server_stub.model.Entity` with the service's typing rules.
* ``EntityFilter.ranges`` - the planner's output: a sorted list of disjoint
  half-open key ranges ``(lo, hi)`` over ``(PartitionKey, RowKey)`` tuples;
  ``hi is None`` means unbounded. Every matching entity lies in one of them;
  ``[]`` means nothing can match; ``[(("", ""), None)]`` is a full scan.
  The backend scans only these ranges and still applies ``matches``.
* ``EntityFilter.kind`` - ``"point" | "row-range" | "partition" |
  "partition-range" | "multi" | "scan" | "empty"`` (for logs and tests).
* ``compile_table_filter(text) -> Callable[[str], bool]`` - a ``$filter`` for
  Query Tables (comparisons on ``TableName``).
* ``parse_select(text) -> list[str]``, ``parse_top(text) -> int`` - raise
  ``StubError`` with the service's code on bad values.
* ``encode_continuation(value) -> str`` / ``decode_continuation(token) -> str`` -
  Azure's ``1!<len>!<base64 with - for =>`` token form (``Smith`` ->
  ``1!8!U21pdGg-``); decoding also accepts what clients echo back.
"""
