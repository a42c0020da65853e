"""The eight EDM types, typed values, and dict-shaped entities.

CONTRACT (owned by the wire-format work; the client core and the ORM import it):

* ``EdmType`` (``StrEnum``: ``EdmType.INT64 == "Edm.Int64"``, all eight).
* ``EdmDateTime(datetime)``: an aware UTC datetime that also carries the 7th
  fractional digit (``.ticks`` = 100 ns units since 0001-01-01, ``.to_wire()`` gives
  the exact 7-digit string); decoding always yields it, encoding any datetime works.
* ``TableEntity(dict[str, Any])``: keys are property names (``PartitionKey`` and
  ``RowKey`` included); values are plain Python values (``int`` for Int32 and Int64,
  ``float``, ``bool``, ``str``, ``EdmDateTime``, ``uuid.UUID``, ``bytes``);
  ``.metadata`` is ``EntityMetadata(etag, timestamp)``; ``.edm_types`` maps a property
  name to its ``EdmType`` wherever the Python type alone is ambiguous (Int64, and any
  property whose type came annotated from the service), so a read-modify-write keeps types.
* ``Typed(value, edm_type)``: an explicit type for one value when writing
  (``entity["n"] = Typed(5, EdmType.INT64)``).
* ``infer_edm_type(value) -> EdmType``: str/bool/int (Int32 in range, else Int64)/
  float/datetime/UUID/bytes; anything else raises ``TypeError``.
* ``format_literal(value, edm_type=None) -> str``: an OData ``$filter`` literal with
  correct escaping (``'O''Brien'``, ``42``, ``42L``, ``2.0``, ``datetime'...'``,
  ``guid'...'``, ``X'0a1b'``, ``true``).
* ``validate_entity(entity)``: the service limits checked client-side (key characters and
  length, property names, 252 properties, 64 KiB values, 1 MiB) raising ``azt`` errors.
"""
