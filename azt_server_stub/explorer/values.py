"""The explorer's value forms: every property as ``{"type", "value"}`` with the value as text.

The page never turns a value into a JavaScript number: an Int64 beyond 2**53, a Double's
last bit, a DateTime's seventh fractional digit all stay exact because every value travels
as the text the service itself would write (Int64 and Int32 in decimal, Double in its
shortest round-trip form or ``NaN``/``Infinity``/``-Infinity``, Boolean ``true``/``false``,
DateTime with seven fractional digits, Guid in its hyphenated form, Binary in base64).
Values coming back are read by the stub's own JSON value parser (the one that reads
annotated members of an insert), so the page is refused exactly what the service refuses.

The export forms are here too: JSON lines (one entity per line, each property annotated
with ``Name@odata.type``, as the service's full-metadata JSON; Int64 as a string, Double
NaN/infinities as strings, finite Doubles as JSON numbers) and CSV (``PartitionKey``,
``RowKey``, ``Timestamp``, then for each property a ``Name`` and a ``Name@type`` column,
the text forms above; a cell of an entity lacking the property is empty in both columns).

Example::

    >>> from azt_server_stub.model import Edm
    >>> value_text(Edm.INT64, 2**63 - 1), value_text(Edm.DOUBLE, float("-inf"))
    ('9223372036854775807', '-Infinity')
    >>> typed_from_text("N", "Edm.Int64", "9007199254740993")
    ('Edm.Int64', 9007199254740993)
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import StubError
from ..formats.json import convert_value
from ..model import EDM_TYPES, Edm, Entity, TypedValue, format_datetime_7
from ..validation import validate_key

__all__ = [
    "columns_of",
    "csv_header",
    "csv_row",
    "entity_json",
    "entity_line",
    "props_from_json",
    "typed_from_text",
    "value_text",
]


def value_text(edm: str, value: Any) -> str:
    """A stored value as the explorer's text form (exact for every type).

    Example::

        >>> from azt_server_stub.model import Edm, parse_datetime
        >>> value_text(Edm.DATETIME, parse_datetime("2024-01-02T03:04:05.1234567Z"))
        '2024-01-02T03:04:05.1234567Z'
        >>> value_text(Edm.BINARY, b"\\x00\\xff"), value_text(Edm.BOOLEAN, True)
        ('AP8=', 'true')
    """
    if edm is Edm.STRING:
        return str(value)
    if edm is Edm.INT32 or edm is Edm.INT64:
        return str(int(value))
    if edm is Edm.DOUBLE:
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(float(value))
    if edm is Edm.BOOLEAN:
        return "true" if value else "false"
    if edm is Edm.DATETIME:
        return format_datetime_7(int(value))
    if edm is Edm.GUID:
        return str(value)
    return base64.b64encode(bytes(value)).decode("ascii")


def typed_from_text(name: str, edm_name: str, text: object) -> TypedValue:
    """Read one property the page sent: ``400 InvalidInput`` as the service refuses it.

    Every value must come as text (the page never sends numbers); the stub's own JSON value
    parser reads it with the type annotation, so the same values pass and fail as on
    the wire.

    Example::

        >>> typed_from_text("D", "Edm.Double", "-Infinity")
        ('Edm.Double', -inf)
        >>> typed_from_text("I", "Edm.Int32", "2147483648")
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidInput: One of the request inputs is not valid.
    """
    if not isinstance(text, str) or edm_name not in EDM_TYPES:
        raise StubError(400, "InvalidInput", f"Property {name!r}: a type and a text value.")
    typed = convert_value(name, edm_name, text)
    if typed is None:  # pragma: no cover - text is never JSON null
        raise StubError(400, "InvalidInput", f"Property {name!r} has no value.")
    return typed


def props_from_json(document: object) -> tuple[str, str, dict[str, TypedValue]]:
    """``(PartitionKey, RowKey, properties)`` of an entity the page sent.

    The document: ``{"PartitionKey": text, "RowKey": text, "properties": [{"name",
    "type", "value"}, ...]}``, nothing else; ``properties`` is required (an empty list for
    an entity without properties: a replace never empties an entity by omission). A
    duplicate property name is ``400 InvalidInput`` (nothing is dropped silently).

    Example::

        >>> props_from_json({"PartitionKey": "p", "RowKey": "r",
        ...                  "properties": [{"name": "N", "type": "Edm.Int64", "value": "5"}]})
        ('p', 'r', {'N': ('Edm.Int64', 5)})
    """
    if not isinstance(document, dict):
        raise StubError(400, "InvalidInput", "The entity must be a JSON object.")
    pk, rk = document.get("PartitionKey"), document.get("RowKey")
    validate_key("PartitionKey", pk)
    validate_key("RowKey", rk)
    assert isinstance(pk, str)  # validate_key checked
    assert isinstance(rk, str)
    unknown = sorted(set(document) - {"PartitionKey", "RowKey", "properties"})
    if unknown:
        raise StubError(400, "InvalidInput", f"Unknown member {unknown[0]!r} in the entity.")
    items = document.get("properties")
    if not isinstance(items, list):
        raise StubError(400, "InvalidInput", "properties must be a list (empty for none).")
    props: dict[str, TypedValue] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise StubError(400, "InvalidInput", "Each property needs a name, type and value.")
        name = item["name"]
        if name in props:
            raise StubError(400, "InvalidInput", f"Property {name!r} is given twice.")
        props[name] = typed_from_text(name, str(item.get("type")), item.get("value"))
    return pk, rk, props


def entity_json(entity: Entity) -> dict[str, Any]:
    """One entity for the page: keys, Timestamp, ETag, properties as text.

    Example::

        >>> from azt_server_stub.model import Edm
        >>> entity_json(Entity("p", "r", 0, {"N": (Edm.INT64, 2**62)}))["properties"]
        [{'name': 'N', 'type': 'Edm.Int64', 'value': '4611686018427387904'}]
    """
    return {
        "PartitionKey": entity.pk,
        "RowKey": entity.rk,
        "Timestamp": format_datetime_7(entity.timestamp),
        "etag": entity.etag,
        "properties": [
            {"name": name, "type": edm, "value": value_text(edm, value)}
            for name, (edm, value) in entity.props.items()
        ],
    }


def _json_value(edm: str, value: Any) -> Any:
    if edm is Edm.INT32 or edm is Edm.BOOLEAN or edm is Edm.STRING:
        return value
    if edm is Edm.DOUBLE and not (math.isnan(value) or math.isinf(value)):
        return float(value)
    return value_text(edm, value)


def entity_line(entity: Entity, select: Sequence[str] | None = None) -> str:
    """One entity as a JSON line of the export (ends with ``\\n``).

    Example::

        >>> from azt_server_stub.model import Edm
        >>> entity_line(Entity("p", "r", 0, {"N": (Edm.INT64, 7)}))[-36:]
        '"N@odata.type":"Edm.Int64","N":"7"}\\n'
    """
    line: dict[str, Any] = {
        "PartitionKey": entity.pk,
        "RowKey": entity.rk,
        "Timestamp@odata.type": "Edm.DateTime",
        "Timestamp": format_datetime_7(entity.timestamp),
        "odata.etag": entity.etag,
    }
    names: Iterable[str] = entity.props if select is None else select
    for name in names:
        typed = entity.props.get(name)
        if typed is None:
            continue
        edm, value = typed
        line[name + "@odata.type"] = edm
        line[name] = _json_value(edm, value)
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


def csv_header(columns: Sequence[str]) -> str:
    """The CSV header line for these property columns.

    Example::

        >>> csv_header(["Age"])
        'PartitionKey,RowKey,Timestamp,Age,Age@type\\r\\n'
    """
    cells = ["PartitionKey", "RowKey", "Timestamp"]
    for name in columns:
        cells += [name, name + "@type"]
    return _csv_line(cells)


def csv_row(entity: Entity, columns: Sequence[str]) -> str:
    """One entity as a CSV line under :func:`csv_header` of the same columns.

    Example::

        >>> from azt_server_stub.model import Edm
        >>> csv_row(Entity("p", "r", 0, {"Age": (Edm.INT32, 3)}), ["Age", "X"])
        'p,r,0001-01-01T00:00:00.0000000Z,3,Edm.Int32,,\\r\\n'
    """
    cells = [entity.pk, entity.rk, format_datetime_7(entity.timestamp)]
    for name in columns:
        typed = entity.props.get(name)
        if typed is None:
            cells += ["", ""]
        else:
            cells += [value_text(*typed), typed[0]]
    return _csv_line(cells)


def _csv_line(cells: Sequence[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(cells)
    return out.getvalue()


def columns_of(entities: Iterable[Entity], known: Mapping[str, None] | None = None) -> list[str]:
    """The property names of ``entities`` in order of first appearance (after ``known``).

    Example::

        >>> columns_of([Entity("p", "r", 0, {"B": ("Edm.String", "x"), "A": ("Edm.String", "y")})])
        ['B', 'A']
    """
    seen: dict[str, None] = dict(known or {})
    for entity in entities:
        for name in entity.props:
            seen.setdefault(name, None)
    return list(seen)
