"""The legacy Python Table SDK's JSON rules (azure-cosmosdb-table 1.0.x), written for
``azt.legacy``: what an entity becomes on the wire and what a JSON row becomes when read.

The legacy SDK did not check values the service checks: it converted each property by
its Python type (or its ``EntityProperty`` type) and sent the result, and the service
refused what it refuses (a PartitionKey with ``/``, a string over 64 KiB, a date before
1601, a malformed Guid, ...). ``azt.legacy`` sends the same JSON, so the same
``AzureHttpError`` (with the service's ``status_code`` and ``error_code``) comes back.

Writing (:func:`entity_json`): ``int`` -> ``Edm.Int64`` (as a string), ``float`` as a
JSON number (``NaN``/``Infinity``/``-Infinity`` as annotated strings), ``bool`` and
``str`` as themselves, ``datetime`` -> ``Edm.DateTime`` (naive = UTC), ``None`` -> JSON
``null``; an ``EntityProperty`` by its type: ``Edm.Binary`` base64, ``Edm.Guid``
``str(value)``, ``Edm.Int64`` ``str(value)`` (range checked), ``Edm.Int32`` ``int(value)``
(range checked), and ``Edm.Boolean``/``Edm.String`` (and ``Edm.Double`` for a non-float)
the value as given, unannotated: ``EntityProperty(EdmType.BOOLEAN, 'true')`` is sent as
the string ``"true"``, which the service stores as an ``Edm.String``, as it did for the
legacy SDK.

Reading (:func:`json_entity`): a JSON integer -> ``EntityProperty(EdmType.INT32, n)``,
``Edm.Int64`` -> ``int``, ``Edm.Double`` -> ``float``, ``Edm.DateTime`` -> aware
``datetime``, ``Edm.Binary`` -> ``EntityProperty(EdmType.BINARY, bytes)``, other annotated
types -> ``EntityProperty(type, value)``, unannotated values as JSON gave them (so under
``odata=nometadata`` an Int64 stays the string ``'39'``); a ``property_resolver(pk, rk,
name, value, edm_type)`` picks the type of each property. ``etag`` is derived from the
row's ``Timestamp`` (``W/"datetime'<quoted timestamp>'"``), as the legacy SDK did.

Example::

    >>> entity_json({"PartitionKey": "p", "RowKey": "r", "n": 5, "b": EntityProperty(
    ...     EdmType.BOOLEAN, "true")})
    {'PartitionKey': 'p', 'RowKey': 'r', 'n': '5', 'n@odata.type': 'Edm.Int64', 'b': 'true'}
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from azt._edm.datetime import EdmDateTime
from azt.legacy._models import AzureException, EdmType, Entity, EntityProperty

__all__ = [
    "EDM_TYPES",
    "ERROR_CANNOT_SERIALIZE_VALUE_TO_ENTITY",
    "ERROR_INVALID_PROPERTY_RESOLVER",
    "ERROR_TYPE_NOT_SUPPORTED",
    "ERROR_VALUE_TOO_LARGE",
    "PropertyResolver",
    "check_entity",
    "decode_base64",
    "encode_base64",
    "encode_entity",
    "entity_json",
    "json_entity",
    "legacy_datetime_text",
    "parse_datetime",
]

#: The legacy SDK's messages, word for word (its tests compare them).
ERROR_VALUE_TOO_LARGE = "{0} is too large to be cast to type {1}."
ERROR_TYPE_NOT_SUPPORTED = "Type not supported when sending data to the service: {0}."
ERROR_CANNOT_SERIALIZE_VALUE_TO_ENTITY = (
    "Cannot serialize the specified value ({0}) to an entity.  Please use an EntityProperty "
    "(which can specify custom types), int, str, bool, or datetime."
)
ERROR_INVALID_PROPERTY_RESOLVER = (
    "The specified property resolver returned an invalid type. Name: {0}, Value: {1}, EdmType: {2}"
)
_ERROR_INVALID_ENTITY_TYPE = "The entity must be either in dict format or an entity object."
_ERROR_TOO_MANY_PROPERTIES = "The entity contains more properties than allowed."
_ERROR_PROPERTY_NAME_TOO_LONG = "The property name exceeds the maximum allowed length."

EDM_TYPES = (
    EdmType.BINARY,
    EdmType.INT64,
    EdmType.GUID,
    EdmType.DATETIME,
    EdmType.STRING,
    EdmType.INT32,
    EdmType.DOUBLE,
    EdmType.BOOLEAN,
)
"""The eight EDM type names a property resolver may return."""

PropertyResolver = Callable[[str | None, str | None, str, Any, str | None], str | None]
"""``resolver(partition_key, row_key, name, value, edm_type) -> edm_type or None``."""

_ENCRYPTION_METADATA = ("_ClientEncryptionMetadata1", "_ClientEncryptionMetadata2")

# --------------------------------------------------------------------------- helpers


def encode_base64(data: bytes | str) -> str:
    """Base64 text of bytes (a ``str`` is encoded as UTF-8 first).

    Example::

        >>> encode_base64(b"binary")
        'YmluYXJ5'
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    return base64.b64encode(data).decode("utf-8")


def decode_base64(text: str) -> bytes:
    """The bytes of base64 text.

    Example::

        >>> decode_base64("YmluYXJ5")
        b'binary'
    """
    return base64.b64decode(text.encode("utf-8"))


def legacy_datetime_text(value: datetime) -> str:
    """A datetime as the wire's UTC text (naive = UTC); microseconds are kept (the
    legacy SDK cut them, a documented difference).

    Example::

        >>> legacy_datetime_text(datetime(1973, 10, 4))
        '1973-10-04T00:00:00Z'
        >>> legacy_datetime_text(datetime(2020, 1, 2, 3, 4, 5, 6))
        '2020-01-02T03:04:05.000006Z'
    """
    if value.tzinfo is not None and value.utcoffset() is not None:
        value = value.astimezone(UTC)
    text = (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T"
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    )
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "Z"


def parse_datetime(text: str) -> datetime:
    """An aware UTC datetime from the service's date text (100 ns digits cut to µs).

    Example::

        >>> parse_datetime("2016-12-31T11:59:59.1234567Z")
        datetime.datetime(2016, 12, 31, 11, 59, 59, 123456, tzinfo=datetime.timezone.utc)
    """
    return EdmDateTime.parse(text).to_datetime()


def _checked_int(value: Any, bits: int, edm: str) -> int:
    number = int(value)
    if number >= 2 ** (bits - 1) or number < -(2 ** (bits - 1)):
        raise TypeError(ERROR_VALUE_TOO_LARGE.format(str(value), edm))
    return number


# --------------------------------------------------------------------------- writing


def _float(value: Any) -> tuple[str | None, Any]:
    if isinstance(value, float):
        if math.isnan(value):
            return EdmType.DOUBLE, "NaN"
        if value == math.inf:
            return EdmType.DOUBLE, "Infinity"
        if value == -math.inf:
            return EdmType.DOUBLE, "-Infinity"
    return None, value


def _datetime(value: Any) -> tuple[str | None, Any]:
    # A string is sent as given (the legacy SDK failed on it with AttributeError).
    return EdmType.DATETIME, legacy_datetime_text(value) if isinstance(value, datetime) else value


def _typed(prop: EntityProperty) -> tuple[str | None, Any]:
    edm, value = prop.type, prop.value
    if edm == EdmType.BINARY:
        return EdmType.BINARY, encode_base64(value)
    if edm in (EdmType.BOOLEAN, EdmType.STRING):
        return None, value
    if edm == EdmType.DATETIME:
        return _datetime(value)
    if edm == EdmType.DOUBLE:
        return _float(value)
    if edm == EdmType.GUID:
        return EdmType.GUID, str(value)
    if edm == EdmType.INT32:
        return None, _checked_int(value, 32, EdmType.INT32)
    if edm == EdmType.INT64:
        _checked_int(value, 64, EdmType.INT64)
        return EdmType.INT64, str(value)
    raise TypeError(ERROR_TYPE_NOT_SUPPORTED.format(edm))


def _plain(value: Any) -> tuple[str | None, Any]:
    kind = type(value)
    if kind is int:
        _checked_int(value, 64, EdmType.INT64)
        return EdmType.INT64, str(value)
    if kind is bool or kind is str or value is None:
        return None, value
    if kind is float:
        return _float(value)
    if kind is datetime:
        return _datetime(value)
    raise TypeError(ERROR_CANNOT_SERIALIZE_VALUE_TO_ENTITY.format(kind.__name__))


def check_entity(entity: object, max_properties: int = 255) -> None:
    """The legacy SDK's own checks of an entity before sending (``ValueError`` /
    ``TypeError``, its messages); everything else is left to the service.

    Example::

        >>> check_entity({"PartitionKey": "p"})
        Traceback (most recent call last):
        ...
        ValueError: RowKey should not be None or empty.
    """
    if entity is None:
        raise ValueError("entity should not be None.")
    if not isinstance(entity, dict):
        raise TypeError(_ERROR_INVALID_ENTITY_TYPE)
    for key in ("PartitionKey", "RowKey"):
        if entity.get(key) is None:
            raise ValueError(f"{key} should not be None or empty.")
    if len(entity) > max_properties or (
        len(entity) == max_properties and "Timestamp" not in entity
    ):
        raise ValueError(_ERROR_TOO_MANY_PROPERTIES)
    for name in entity:
        if len(name) > 255:
            raise ValueError(_ERROR_PROPERTY_NAME_TOO_LONG)


def entity_json(entity: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object the legacy SDK sends for ``entity`` (annotations included).
    ``etag`` and ``Timestamp`` are the entity's metadata and are not sent.

    Example::

        >>> entity_json({"PartitionKey": "p", "RowKey": "r", "x": 1.5})
        {'PartitionKey': 'p', 'RowKey': 'r', 'x': 1.5}
    """
    out: dict[str, Any] = {}
    for name, value in entity.items():
        if name in ("etag", "Timestamp"):
            continue
        edm, wire = _typed(value) if isinstance(value, EntityProperty) else _plain(value)
        out[name] = wire
        if edm:
            out[name + "@odata.type"] = edm
    return out


def encode_entity(entity: Mapping[str, Any]) -> bytes:
    """:func:`entity_json` as the request body (``TypeError`` for a value JSON cannot
    hold, as the legacy SDK raised).

    Example::

        >>> encode_entity({"PartitionKey": "p", "RowKey": "r"})
        b'{"PartitionKey": "p", "RowKey": "r"}'
    """
    return json.dumps(entity_json(entity)).encode("utf-8")


# --------------------------------------------------------------------------- reading


def _binary(value: Any) -> EntityProperty:
    return EntityProperty(EdmType.BINARY, decode_base64(value))


def _int32(value: Any) -> EntityProperty:
    return EntityProperty(EdmType.INT32, int(value))


_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    EdmType.BINARY: _binary,
    EdmType.INT32: _int32,
    EdmType.INT64: int,
    EdmType.DOUBLE: float,
    EdmType.DATETIME: parse_datetime,
}


def json_entity(
    row: Mapping[str, Any],
    property_resolver: PropertyResolver | None = None,
    encrypted_properties: frozenset[str] | None = None,
) -> Entity:
    """A JSON row (any ``odata=`` metadata level) as the legacy SDK returned it.

    ``encrypted_properties`` (client-side encryption) are read as ``Edm.Binary`` whatever
    the resolver says.

    Example::

        >>> e = json_entity({"PartitionKey": "p", "RowKey": "r", "n": 5, "big": "7",
        ...                  "big@odata.type": "Edm.Int64"})
        >>> e.n, e.big
        (EntityProperty('Edm.Int32', 5), 7)
    """
    entity = Entity()
    properties: dict[str, Any] = {}
    edm_types: dict[str, Any] = {}
    odata: dict[str, Any] = {}
    for name, value in row.items():
        if name.startswith("odata."):
            odata[name[6:]] = value
        elif name.endswith("@odata.type"):
            edm_types[name[:-11]] = value
        else:
            properties[name] = value
    partition_key = properties.pop("PartitionKey", None)
    if partition_key:
        entity["PartitionKey"] = partition_key
    row_key = properties.pop("RowKey", None)
    if row_key:
        entity["RowKey"] = row_key
    timestamp = properties.pop("Timestamp", None)
    if timestamp:
        entity["Timestamp"] = parse_datetime(timestamp)
    for name, value in properties.items():
        edm = edm_types.get(name)
        if property_resolver is not None and name not in _ENCRYPTION_METADATA:
            edm = property_resolver(partition_key, row_key, name, value, edm)
            if edm and edm not in EDM_TYPES:
                raise AzureException(ERROR_TYPE_NOT_SUPPORTED.format(edm))
        if encrypted_properties is not None and name in encrypted_properties:
            edm = EdmType.BINARY
        if type(value) is int:
            edm = EdmType.INT32
        if not edm:
            entity[name] = value
            continue
        convert = _CONVERSIONS.get(edm)
        if convert is None:
            entity[name] = EntityProperty(edm, value)
            continue
        try:
            entity[name] = convert(value)
        except Exception as exc:
            if property_resolver is None:
                raise
            raise AzureException(ERROR_INVALID_PROPERTY_RESOLVER.format(name, value, edm)) from exc
    etag = odata.get("etag")
    if timestamp:
        etag = "W/\"datetime'" + quote(timestamp) + "'\""
    entity["etag"] = etag
    return entity
