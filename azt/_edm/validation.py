"""The service's limits on keys, property names, values and entity size, checked before
anything is sent (PROTOCOL.md 5.2-5.4).

Example::

    >>> from azt.edm import validate_entity
    >>> validate_entity({"PartitionKey": "p", "RowKey": "r", "Age": 23})
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from azt._edm.datetime import EdmDateTime
from azt._edm.types import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    EdmType,
    Typed,
    coerce_value,
    resolved_type,
)
from azt._errors import ValidationError

__all__ = [
    "COSMOS_LIMITS",
    "STORAGE_LIMITS",
    "ServiceLimits",
    "utf16_len",
    "validate_entity",
    "validate_key",
]

MAX_PROPERTIES: Final = 252
"""Custom properties per entity (255 minus PartitionKey, RowKey, Timestamp)."""
MAX_STRING_UTF16: Final = 32 * 1024
"""Edm.String limit in UTF-16 code units (64 KiB)."""
MAX_BINARY_BYTES: Final = 64 * 1024
MAX_KEY_UTF16: Final = 1024
"""PartitionKey / RowKey limit in UTF-16 code units (2 KB as the service counts it)."""
MAX_NAME_LENGTH: Final = 255
MAX_ENTITY_BYTES: Final = 1024 * 1024

SYSTEM_PROPERTIES: Final = frozenset({"PartitionKey", "RowKey", "Timestamp"})


_KEY_FORBIDDEN: Final = re.compile(r"[/\\#?\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class ServiceLimits:
    """The limits of one service flavour that differ between Azure Table storage and the
    Azure Cosmos DB Table API (``docs/cosmos.md``); the rest are the module constants.

    ``max_row_key_bytes``: a RowKey limit in UTF-8 bytes on top of the 1024 UTF-16 code
    units every key has (Cosmos: 255 bytes; ``None``: none). ``reserved_names``: custom
    property names the flavour refuses, compared case-insensitively (Cosmos reserves
    ``id``, ``rid``, ``etag`` and ``ResourceId``), except the exact spellings in
    ``accepted_names`` (Cosmos: ``etag``, which real Cosmos stores as recorded; its other
    casings stay refused, so a body with ``etag`` and ``Etag``, whose ``Etag`` real Cosmos
    drops silently, never leaves the client). ``max_batch_bytes``: the size of an
    entity group transaction's body (Storage 4 MiB, Cosmos 2 MB).

    Example::

        >>> COSMOS_LIMITS.max_row_key_bytes, STORAGE_LIMITS.max_row_key_bytes
        (255, None)
        >>> validate_key("RowKey", "r" * 256, COSMOS_LIMITS)
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: RowKey is 256 bytes as UTF-8; the Cosmos DB Table API ...
    """

    flavor: str
    max_row_key_bytes: int | None = None
    reserved_names: frozenset[str] = frozenset()
    max_batch_bytes: int = 4 * 1024 * 1024
    accepted_names: frozenset[str] = frozenset()

    @property
    def is_storage(self) -> bool:
        """True for Azure Table storage's limits (the fast path's own).

        Example::

            >>> STORAGE_LIMITS.is_storage, COSMOS_LIMITS.is_storage
            (True, False)
        """
        return self.max_row_key_bytes is None and not self.reserved_names


STORAGE_LIMITS: Final = ServiceLimits("storage")
"""Azure Table storage (and Azurite, and the stub's default flavour)."""

COSMOS_LIMITS: Final = ServiceLimits(
    "cosmos",
    max_row_key_bytes=255,
    reserved_names=frozenset({"id", "rid", "etag", "resourceid"}),
    max_batch_bytes=2 * 1000 * 1000,
    accepted_names=frozenset({"etag"}),
)
"""The Azure Cosmos DB Table API (its FAQ: RowKey up to 255 bytes, batches up to 2 MB,
reserved property names ID, rid, etag, ResourceId; recorded traffic of 2021 and 2022 shows
``etag`` itself stored, docs/cosmos.md REC 16)."""


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (how the service counts string sizes).

    Example::

        >>> utf16_len("abc"), utf16_len("\\U0001f600")
        (3, 2)
    """
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def validate_key(name: str, value: object, limits: ServiceLimits = STORAGE_LIMITS) -> str:
    """Check a PartitionKey or RowKey value (PROTOCOL.md 5.4) and return it.

    Keys are strings of at most 1024 UTF-16 code units without ``/ \\ # ?`` or control
    characters (U+0000-U+001F, U+007F-U+009F). The empty string is allowed. ``limits``
    adds a flavour's own key limits (:data:`COSMOS_LIMITS`: a RowKey of at most 255 bytes).

    Example::

        >>> validate_key("RowKey", "")
        ''
        >>> validate_key("RowKey", "a/b")
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: RowKey 'a/b' contains '/' ...
    """
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a str, got {type(value).__name__} {value!r}")
    n = utf16_len(value)
    if n > MAX_KEY_UTF16:
        raise ValidationError(
            f"{name} is {n} UTF-16 code units long; the service limit is {MAX_KEY_UTF16} (2 KB)"
        )
    m = _KEY_FORBIDDEN.search(value)
    if m is not None:
        shown = value if len(value) <= 60 else value[:57] + "..."
        raise ValidationError(
            f"{name} {shown!r} contains {m.group()!r} at index {m.start()}; keys may not contain "
            "'/', '\\', '#', '?' or control characters (U+0000-U+001F, U+007F-U+009F)"
        )
    if limits.max_row_key_bytes is not None and name == "RowKey":
        _check_row_key_bytes(value, limits)
    return value


def _check_row_key_bytes(value: str, limits: ServiceLimits) -> None:
    cap = limits.max_row_key_bytes
    if cap is None or len(value) * 4 <= cap:  # at most 4 UTF-8 bytes per character
        return
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > cap:
        raise ValidationError(
            f"RowKey is {size} bytes as UTF-8; the Cosmos DB Table API allows at most {cap}"
        )


def _check_flavor(entity: Mapping[str, Any], limits: ServiceLimits) -> None:
    """The flavour's own entity rules (after the common checks passed)."""
    row_key = entity.get("RowKey")
    if isinstance(row_key, Typed):
        row_key = row_key.value
    if isinstance(row_key, str):
        _check_row_key_bytes(row_key, limits)
    reserved = limits.reserved_names
    if reserved:
        for name, value in entity.items():
            if (
                value is not None
                and isinstance(name, str)
                and name.lower() in reserved
                and name not in limits.accepted_names
            ):
                raise ValidationError(
                    f"property name {name!r} is reserved by the Cosmos DB Table API "
                    "(ID, rid and ResourceId in any casing, and etag in any casing but "
                    "'etag', are not supported as property names)"
                )


def _value_size(t: EdmType, v: Any) -> int:
    if t is EdmType.STRING:
        return 2 * utf16_len(v) + 4
    if t is EdmType.BINARY:
        return len(v) + 4
    return _FIXED_SIZE[t]


_FIXED_SIZE: Final = {
    EdmType.INT32: 4,
    EdmType.INT64: 8,
    EdmType.DOUBLE: 8,
    EdmType.DATETIME: 8,
    EdmType.GUID: 16,
    EdmType.BOOLEAN: 1,
}


# The EDM type of a value of each plain Python type (int is Int32 or Int64 by its size).
_NATURAL_TYPE: Final[dict[type, EdmType]] = {
    str: EdmType.STRING,
    float: EdmType.DOUBLE,
    bool: EdmType.BOOLEAN,
    datetime: EdmType.DATETIME,
    EdmDateTime: EdmType.DATETIME,
    uuid.UUID: EdmType.GUID,
    bytes: EdmType.BINARY,
}


# Property names already found valid (C#-identifier-like, at most 255 characters): entities
# of one application use few names, so each is checked once. Bounded like the codecs' caches.
_VALID_NAMES: set[str] = set()
_VALID_NAMES_MAX = 4096
_KEY_NAMES = frozenset({"PartitionKey", "RowKey"})


def _plainly_valid(
    entity: Mapping[str, Any],
    types: Mapping[str, EdmType] | None = None,
    require_keys: bool = True,
) -> bool:
    """The fast path of :func:`validate_entity` for the common entity: plain
    ``str``/``int``/``float``/``bool``/UTC ``datetime``/``UUID``/``bytes`` values, each
    either untyped or explicitly typed as the type it has (an ``int`` may also be typed
    Int64). True only when :func:`_check_fully` would accept the entity (same limits, same
    size estimate); False sends it to the full check, which accepts what is merely unusual
    and raises the precise error for what is wrong."""
    tmap: Mapping[str, EdmType] | None = getattr(entity, "_types", None) or None
    if types:
        tmap = {**tmap, **types} if tmap else types
    size = 4
    count = 0
    keys = 0
    names = _VALID_NAMES
    for name, v in entity.items():
        tv = type(v)
        if name in _KEY_NAMES:
            if tv is not str:
                return False
            u = len(v) if v.isascii() else utf16_len(v)
            if u > MAX_KEY_UTF16 or _KEY_FORBIDDEN.search(v) is not None:
                return False
            size += 2 * u
            keys += 1
            continue
        if v is None or name == "Timestamp":
            continue
        if name not in names:
            if type(name) is not str or len(name) > MAX_NAME_LENGTH or not name.isidentifier():
                return False
            if len(names) >= _VALID_NAMES_MAX:
                names.clear()
            names.add(name)
        count += 1
        size += 8 + 2 * len(name)
        if tmap is not None:
            explicit = tmap.get(name)
            if explicit is not None:
                if tv is int:
                    if explicit is EdmType.INT64:
                        if INT32_MIN <= v <= INT32_MAX:
                            size += 4  # an Int64 is 8 bytes; the int branch below counts 4
                    elif explicit is not EdmType.INT32 or not INT32_MIN <= v <= INT32_MAX:
                        return False
                elif explicit is not _NATURAL_TYPE.get(tv):
                    return False
        if tv is str:
            u = len(v) if v.isascii() else utf16_len(v)
            if u > MAX_STRING_UTF16:
                return False
            size += 2 * u + 4
        elif tv is int:
            if INT32_MIN <= v <= INT32_MAX:
                size += 4
            elif INT64_MIN <= v <= INT64_MAX:
                size += 8
            else:
                return False
        elif tv is float:
            size += 8
        elif tv is bool:
            size += 1
        elif tv is datetime or tv is EdmDateTime:
            if v.year < 1601 or (tv is datetime and v.tzinfo is not UTC):
                return False
            size += 8
        elif tv is uuid.UUID:
            size += 16
        elif tv is bytes:
            if len(v) > MAX_BINARY_BYTES:
                return False
            size += len(v) + 4
        else:
            return False
    return (keys == 2 or not require_keys) and count <= MAX_PROPERTIES and size <= MAX_ENTITY_BYTES


def validate_entity(
    entity: Mapping[str, Any],
    *,
    types: Mapping[str, EdmType] | None = None,
    require_keys: bool = True,
    limits: ServiceLimits = STORAGE_LIMITS,
) -> None:
    """Check an entity against the service limits before it is sent.

    Checks (PROTOCOL.md 5.2-5.4): keys (present when ``require_keys``, strings, length,
    forbidden characters), property names (C#-identifier-like, at most 255 characters,
    no ``odata.`` annotations), at most 252 custom properties, each value's type and
    range (Int32/Int64/DateTime 1601..9999), strings at most 32 768 UTF-16 code units,
    binaries at most 64 KiB, and the entity's estimated size at most 1 MiB. ``None``
    values are skipped (they are not sent) and ``Timestamp`` is ignored (the service
    sets it). ``types`` (or ``entity.edm_types``) give explicit types as in encoding.
    ``limits`` adds a flavour's own rules (:data:`COSMOS_LIMITS`: RowKey bytes, reserved
    property names). Raises ``ValidationError`` naming the property and the limit.

    Example::

        >>> validate_entity({"PartitionKey": "p", "RowKey": "r", "Age": 23})
        >>> validate_entity({"PartitionKey": "p", "RowKey": "r", "bad-name": 1})
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: property name 'bad-name' is invalid: ...
    """
    if not _plainly_valid(entity, types, require_keys):
        _check_fully(entity, types=types, require_keys=require_keys)
    if not limits.is_storage:
        _check_flavor(entity, limits)


def _check_fully(
    entity: Mapping[str, Any],
    *,
    types: Mapping[str, EdmType] | None = None,
    require_keys: bool = True,
) -> None:
    """:func:`validate_entity` without its fast path: every value resolved and coerced,
    the precise error for the first problem."""
    tmap: Mapping[str, EdmType] | None = getattr(entity, "_types", None) or None
    if types:
        tmap = {**tmap, **types} if tmap else types
    if require_keys:
        for key in ("PartitionKey", "RowKey"):
            if entity.get(key) is None:
                raise ValidationError(
                    f"{key} is missing; every entity needs PartitionKey and RowKey"
                )
    size = 4
    count = 0
    for name, value in entity.items():
        if value is None:
            continue
        if not isinstance(name, str):
            raise ValidationError(f"property names must be str, got {name!r}")
        if name == "PartitionKey" or name == "RowKey":
            if isinstance(value, Typed):
                if value.edm_type is not EdmType.STRING:
                    raise ValidationError(f"{name} must be Edm.String, not {value.edm_type}")
                value = value.value
            validate_key(name, value)
            size += 2 * utf16_len(value)
            continue
        if name == "Timestamp":
            continue
        if len(name) > MAX_NAME_LENGTH:
            raise ValidationError(
                f"property name {name[:40]!r}... is {len(name)} characters; the service "
                f"limit is {MAX_NAME_LENGTH}"
            )
        if not name.isidentifier():
            raise ValidationError(
                f"property name {name!r} is invalid: names must start with a letter or '_' and "
                "contain only letters, digits and '_' (C# identifier rules)"
            )
        count += 1
        t, value = resolved_type(name, value, tmap.get(name) if tmap else None)
        v = coerce_value(value, t, name)
        if t is EdmType.STRING:
            n = utf16_len(v)
            if n > MAX_STRING_UTF16:
                raise ValidationError(
                    f"property {name!r}: string is {n} UTF-16 code units; the service limit is "
                    f"{MAX_STRING_UTF16} (64 KiB as UTF-16)"
                )
        elif t is EdmType.BINARY and len(v) > MAX_BINARY_BYTES:
            raise ValidationError(
                f"property {name!r}: binary value is {len(v)} bytes; the service limit is "
                f"{MAX_BINARY_BYTES} (64 KiB)"
            )
        size += 8 + 2 * len(name) + _value_size(t, v)
    if count > MAX_PROPERTIES:
        raise ValidationError(
            f"entity has {count} custom properties; the service allows at most {MAX_PROPERTIES} "
            "(255 including PartitionKey, RowKey and Timestamp)"
        )
    if size > MAX_ENTITY_BYTES:
        raise ValidationError(
            f"entity is about {size} bytes as the service counts it; the limit is "
            f"{MAX_ENTITY_BYTES} (1 MiB)"
        )
