"""The typed JSON-lines format of ``azt export`` / ``azt import`` (and ``query --format jsonl``).

One entity per line, as one JSON object in the Table service's own JSON convention: values
whose EDM type JSON cannot carry get an ``Name@odata.type`` annotation next to them, so an
export/import round trip keeps every type exactly:

=================  ==============================  ========================================
EDM type           JSON value                      annotation
=================  ==============================  ========================================
``Edm.String``     string                          none
``Edm.Int32``      number (integer)                none
``Edm.Boolean``    ``true`` / ``false``            none
``Edm.Double``     number, or ``"NaN"``,           ``Edm.Double`` (always, so that ``2.0``
                   ``"Infinity"``, ``"-Infinity"``  and ``2`` cannot be confused)
``Edm.Int64``      string of digits                ``Edm.Int64``
``Edm.DateTime``   ``2024-01-02T03:04:05.1234567Z``  ``Edm.DateTime``
``Edm.Guid``       ``"c9da6455-..."``              ``Edm.Guid``
``Edm.Binary``     base64 string                   ``Edm.Binary``
=================  ==============================  ========================================

``Timestamp`` is exported (annotated) for information and ignored on import, as the service
sets it; ``odata.*`` members are ignored on import. On import an unannotated integer is
Int32 when it fits and Int64 otherwise, and an unannotated fraction is a Double.

Example::

    >>> from azt.edm import TableEntity, EdmType
    >>> e = TableEntity(PartitionKey="p", RowKey="r", Views=5)
    >>> e.edm_types["Views"] = EdmType.INT64
    >>> line = dumps_entity(e)
    >>> line
    '{"PartitionKey":"p","RowKey":"r","Views@odata.type":"Edm.Int64","Views":"5"}'
    >>> back = loads_entity(line)
    >>> back["Views"]
    Typed(value=5, edm_type=<EdmType.INT64: 'Edm.Int64'>)
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import uuid
from typing import Any, Final

from azt._core.wire import json as wire_json
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import EdmType, Typed, infer_edm_type
from azt._edm.validation import validate_entity
from azt._errors import ValidationError

__all__ = ["InputError", "dumps_entity", "entity_row", "loads_entity", "text_value"]

_ANN: Final = "@odata.type"
_SKIP: Final = frozenset({"PartitionKey", "RowKey", "Timestamp"})
_LINE_BREAKS: Final = re.compile("[\u0085\u2028\u2029]")
_SPECIAL_DOUBLES: Final = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class InputError(ValueError):
    """A line of the input is not a valid entity (the message says which line and why).

    Example::

        >>> try:
        ...     loads_entity("[]", 7)
        ... except InputError as exc:
        ...     print(exc)
        line 7: expected a JSON object, got list
    """


def entity_row(entity: TableEntity, *, timestamp: bool = True) -> dict[str, Any]:
    """The JSON object of one entity (see the module docstring for the format).

    Example::

        >>> entity_row(TableEntity(PartitionKey="p", RowKey="r", Rating=4.5))
        {'PartitionKey': 'p', 'RowKey': 'r', 'Rating@odata.type': 'Edm.Double', 'Rating': 4.5}
    """
    row: dict[str, Any] = {
        "PartitionKey": entity.get("PartitionKey"),
        "RowKey": entity.get("RowKey"),
    }
    if timestamp:
        ts = entity.metadata.timestamp
        if ts is not None:
            row["Timestamp@odata.type"] = EdmType.DATETIME.value
            row["Timestamp"] = ts.to_wire()
    row.update(wire_json.entity_json(entity))  # the request body's own encoding
    return row


def dumps_entity(entity: TableEntity, *, timestamp: bool = True) -> str:
    """One line of JSON (no newline) for ``entity``.

    Characters other tools take for line breaks (U+0085, U+2028, U+2029) are escaped, so
    the line never splits.

    Example::

        >>> dumps_entity(TableEntity(PartitionKey="p", RowKey="r", Ok=True))
        '{"PartitionKey":"p","RowKey":"r","Ok":true}'
        >>> print(dumps_entity(TableEntity(PartitionKey="p", RowKey="r", S="a\u2028b")))
        {"PartitionKey":"p","RowKey":"r","S":"a\\u2028b"}
    """
    text = json.dumps(
        entity_row(entity, timestamp=timestamp),
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=False,
    )
    # JSON allows these raw inside strings, but line-oriented readers (str.splitlines,
    # JavaScript before ES2019, many editors) take them for line ends: escape them, so one
    # entity is always exactly one line whatever reads it.
    if _LINE_BREAKS.search(text):
        text = _LINE_BREAKS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _typed(name: str, value: Any, t: EdmType) -> Typed:
    if t is EdmType.DOUBLE:
        if isinstance(value, str):
            if value not in _SPECIAL_DOUBLES:
                raise ValueError(f"{value!r} is not a number (nor NaN/Infinity/-Infinity)")
            value = _SPECIAL_DOUBLES[value]
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{value!r} is not a number")
    elif t is EdmType.INT64:
        if isinstance(value, str):
            text = value.strip()
            if not text.lstrip("-").isdigit():
                raise ValueError(f"{value!r} is not an integer")
            value = int(text)
        elif isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{value!r} is not an integer")
    elif t is EdmType.DATETIME:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a date-time string")
        value = EdmDateTime.parse(value)
    elif t is EdmType.GUID:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a GUID string")
        value = uuid.UUID(value)
    elif t is EdmType.BINARY:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a base64 string")
        value = base64.b64decode(value, validate=True)
    return Typed(value, t)


def loads_entity(line: str, line_no: int | None = None) -> TableEntity:
    """Parse one line into an entity ready to send; :class:`InputError` if it is not one,
    including an entity the service would refuse (a key with ``/ \\ # ?`` or control
    characters, a key over 1 KiB, a string over 64 KiB, a bad property name...).

    Example::

        >>> e = loads_entity('{"PartitionKey":"p","RowKey":"r","N":1,"Big":5000000000}')
        >>> e["N"], e["Big"]
        (1, 5000000000)
        >>> loads_entity('{"PartitionKey":"a/b","RowKey":"r"}', 3)
        Traceback (most recent call last):
        ...
        azt.cli._jsonl.InputError: line 3: PartitionKey 'a/b' contains '/' at index 1; ...
    """
    where = f"line {line_no}: " if line_no is not None else ""
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise InputError(f"{where}not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise InputError(f"{where}expected a JSON object, got {type(obj).__name__}")
    pk, rk = obj.get("PartitionKey"), obj.get("RowKey")
    if not isinstance(pk, str) or not isinstance(rk, str):
        raise InputError(f"{where}PartitionKey and RowKey must both be strings")
    entity = TableEntity(PartitionKey=pk, RowKey=rk)
    for name, value in obj.items():
        if name in _SKIP or name.startswith("odata.") or name.endswith(_ANN):
            continue
        ann = obj.get(name + _ANN)
        try:
            if ann is not None:
                try:
                    t = EdmType(ann)
                except ValueError:
                    raise ValueError(f"unknown type annotation {ann!r}") from None
                entity[name] = _typed(name, value, t)
            elif value is None:
                continue  # the service does not store nulls
            elif isinstance(value, bool | str):
                entity[name] = value
            elif isinstance(value, int):
                entity[name] = Typed(value, infer_edm_type(value)).value  # range check
            elif isinstance(value, float):
                entity[name] = value
            else:
                raise ValueError(f"a JSON {type(value).__name__} is not a table value")
        except (ValueError, ValidationError, binascii.Error) as exc:
            raise InputError(f"{where}property {name!r}: {exc}") from None
    for name in obj:
        if name.endswith(_ANN) and name[: -len(_ANN)] not in obj:
            raise InputError(f"{where}annotation {name!r} has no value")
    try:  # the service's limits, checked here so that the error names the line
        validate_entity(entity)
    except ValidationError as exc:
        raise InputError(f"{where}{exc}") from None
    return entity


def text_value(value: Any) -> str:
    """A value as text for the table and CSV outputs (DateTime in wire form, Binary base64).

    Example::

        >>> text_value(b"\\x00\\x01"), text_value(True), text_value(None)
        ('AAE=', 'true', '')
    """
    if isinstance(value, Typed):
        value = value.value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, EdmDateTime):
        return value.to_wire()
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    return str(value)
