"""The eight EDM types, typed values, dict-shaped entities, filter literals and limits.

The Table service stores eight primitive types (PROTOCOL.md 5.1). This module maps them
onto Python values and is shared by the client core, the ORM and the wire codecs:

================  ===========================  ==========================================
EDM type          Python value                 notes
================  ===========================  ==========================================
``Edm.String``    ``str``                      at most 32 768 UTF-16 code units
``Edm.Int32``     ``int``                      -2**31 .. 2**31-1
``Edm.Int64``     ``int``                      -2**63 .. 2**63-1; ``int`` outside Int32
                                               range is inferred as Int64
``Edm.Double``    ``float``                    NaN and +/-inf allowed as values
``Edm.Boolean``   ``bool``
``Edm.DateTime``  :class:`EdmDateTime`         UTC, 100 ns precision, 1601..9999
``Edm.Guid``      ``uuid.UUID``
``Edm.Binary``    ``bytes``                    at most 64 KiB
================  ===========================  ==========================================

Choices made here (documented because the service leaves them open):

* **Naive datetimes are refused** (``ValidationError``) wherever a value is sent to the
  service (entity encoding, filter literals, :meth:`EdmDateTime.from_datetime`). A naive
  datetime does not say whether it is local time or UTC, and guessing silently shifts
  data by hours. Use ``datetime.now(timezone.utc)`` or attach a tzinfo. The one exception
  is the explicit constructor ``EdmDateTime(2020, 1, 2)``, whose fields are UTC by
  definition of the class.
* Decoded entities keep ``Timestamp`` out of the property dict: it is read-only and the
  service overwrites it, so it lives in ``entity.metadata.timestamp`` next to the ETag.
* ``EdmDateTime.to_wire()`` always writes seven fractional digits (the .NET round-trip
  form ``2008-07-10T00:00:00.0000000Z``); the service accepts 0-7 on input.
* ``Edm.Double`` NaN/infinity can be stored, but :func:`format_literal` refuses them: the
  ``$filter`` grammar has no reliable spelling for them (PROTOCOL.md 7.2).

Example::

    >>> from azt.edm import TableEntity, Typed, EdmType, format_literal
    >>> e = TableEntity(PartitionKey="p", RowKey="r", Count=Typed(5, EdmType.INT64))
    >>> format_literal("O'Brien")
    "'O''Brien'"
"""

from azt._edm.datetime import DATETIME_MAX, DATETIME_MIN, EdmDateTime
from azt._edm.entity import EntityMetadata, TableEntity
from azt._edm.types import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    EdmType,
    Typed,
    coerce_value,
    format_literal,
    infer_edm_type,
    resolved_type,
)
from azt._edm.validation import utf16_len, validate_entity, validate_key

__all__ = [
    "DATETIME_MAX",
    "DATETIME_MIN",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "EdmDateTime",
    "EdmType",
    "EntityMetadata",
    "TableEntity",
    "Typed",
    "coerce_value",
    "format_literal",
    "infer_edm_type",
    "resolved_type",
    "utf16_len",
    "validate_entity",
    "validate_key",
]
