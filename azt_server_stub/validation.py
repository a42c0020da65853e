"""Service-side validation of table names, keys, property names, values and entity limits.

Pure functions that raise :class:`~azt_server_stub.errors.StubError` with the service's
status and code (PROTOCOL.md 5.2-5.5); they run once per entity on the write path, so the
common cases (ASCII names and keys, names seen before) take a fast path.

Example::

    >>> validate_table_name("Movies2024")
    >>> validate_entity("pk", "rk", {"Title": (Edm.STRING, "Heat")})
    >>> entity_size("pk", "rk", {"Age": (Edm.INT32, 23)})
    30
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lxml import etree

from . import errors
from .model import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    MAX_DATETIME_TICKS,
    MIN_DATETIME_TICKS,
    Edm,
    EdmName,
    TypedValue,
    is_edm_type,
)

# Choices where the service's behaviour is not pinned down (see PROTOCOL.md):
#
# * Forbidden key characters -> ``400 InvalidInput``; a non-string key -> ``400 InvalidInput``.
# * Text that is not Unicode (a lone UTF-16 surrogate, which JSON's ``\ud800`` escape can
#   express) in a key or a String value -> ``400 InvalidInput``: the service stores UTF-16
#   text and cannot echo it as UTF-8. Property names with one are not identifiers.
# * Property names follow the C# identifier rule: a letter (Unicode categories
#   Lu, Ll, Lt, Lm, Lo, Nl) or ``_`` first, then letters, decimal digits (Nd),
#   connectors (Pc) and combining marks (Mn, Mc). Formatting characters (Cf),
#   which C# allows, are refused because names must also be XML names, and so
#   are the few letters the XML writer does not take as name characters.
# * ``PartitionKey``, ``RowKey`` and ``Timestamp`` are refused as custom
#   properties (``400 PropertyNameInvalid``): the format layer strips them from
#   bodies before the values reach the backend.
# * Int32 or Int64 out of range -> ``400 InvalidInput``; DateTime outside
#   1601-01-01 ... 9999-12-31T23:59:59.9999999Z -> ``400 OutOfRangeInput``.
# * Entity size follows the accounting of PROTOCOL.md 5.2: 4 bytes + 2 x (UTF-16
#   length of PartitionKey + RowKey) + for each custom property 8 bytes + 2 x name
#   length + value size (string 2 x len + 4, binary len + 4, Int64/Double/DateTime 8,
#   Int32 4, Guid 16, Boolean 1). The system Timestamp is not counted.

__all__ = [
    "COSMOS_TABLE_NAMES",
    "MAX_BINARY_BYTES",
    "MAX_ENTITY_BYTES",
    "MAX_KEY_UNITS",
    "MAX_PROPERTIES",
    "MAX_PROPERTY_NAME",
    "MAX_STRING_UNITS",
    "RESERVED_PROPERTY_NAMES",
    "STORAGE_TABLE_NAMES",
    "TableNaming",
    "check_entity_limits",
    "entity_size",
    "extend_name",
    "is_property_name",
    "utf16_len",
    "validate_cosmos_table_name",
    "validate_entity",
    "validate_key",
    "validate_properties",
    "validate_property_name",
    "validate_table_name",
    "validate_value",
]

#: Custom properties per entity (255 minus PartitionKey, RowKey, Timestamp).
MAX_PROPERTIES = 252
#: Entity size limit in bytes by the accounting described after the imports.
MAX_ENTITY_BYTES = 1024 * 1024
#: String property limit in UTF-16 code units (64 KiB).
MAX_STRING_UNITS = 32 * 1024
#: Binary property limit in bytes.
MAX_BINARY_BYTES = 64 * 1024
#: PartitionKey / RowKey limit in UTF-16 code units (2 KiB).
MAX_KEY_UNITS = 1024
#: Property name limit in characters.
MAX_PROPERTY_NAME = 255
#: Names that can never be custom properties.
RESERVED_PROPERTY_NAMES = frozenset({"PartitionKey", "RowKey", "Timestamp"})

_TABLE_NAME_CHARS = re.compile(r"[A-Za-z][A-Za-z0-9]*\Z")
_COSMOS_TABLE_FORBIDDEN = re.compile(r"[/\\#?]")
#: Longest Cosmos DB table name, in characters.
MAX_COSMOS_TABLE_NAME = 255
_KEY_FORBIDDEN = re.compile("[/\\\\#?\x00-\x1f\x7f-\x9f]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NAME_START_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nl"})
_NAME_PART_CATEGORIES = _NAME_START_CATEGORIES | {"Nd", "Pc", "Mn", "Mc"}

# Names already accepted: entities of one table repeat the same few names, so a
# set lookup replaces the character checks. Bounded so hostile input cannot grow it.
_KNOWN_NAMES: set[str] = set()
_KNOWN_NAMES_LIMIT = 50_000
#: The same names with what each adds to an entity's size (8 + 2 x its UTF-16 length).
_NAME_COSTS: dict[str, int] = {}

_FIXED_VALUE_SIZE = {
    Edm.INT32: 4,
    Edm.INT64: 8,
    Edm.DOUBLE: 8,
    Edm.DATETIME: 8,
    Edm.GUID: 16,
    Edm.BOOLEAN: 1,
}


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (characters above U+FFFF count twice).

    Example::

        >>> utf16_len("abc"), utf16_len("\\U0001F600")
        (3, 2)
    """
    if text.isascii():
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


def validate_table_name(name: str) -> None:
    """Refuse a table name the service would refuse (PROTOCOL.md 5.5).

    3-63 alphanumerics starting with a letter; ``tables`` (any casing) is reserved.
    Wrong length -> ``400 OutOfRangeInput``; anything else -> ``400 InvalidResourceName``.
    The length is checked first.

    Example::

        >>> validate_table_name("ab")
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 OutOfRangeInput: The specified resource name \
length is not within the permissible limits.
    """
    if not 3 <= len(name) <= 63:
        raise errors.resource_name_length()
    if _TABLE_NAME_CHARS.match(name) is None or not name.isascii():
        raise errors.invalid_resource_name()
    if name.lower() == "tables":
        raise errors.invalid_resource_name()


def validate_cosmos_table_name(name: str) -> None:
    """Refuse a table name the Azure Cosmos DB Table API refuses.

    1-255 characters, none of ``/ \\ # ?``, no trailing space (the rule azure-data-tables
    checks for Cosmos, ``_validate_cosmos_tablename``, and Cosmos DB's rule for resource
    ids). ``Tables`` itself is refused as it names the table collection in a URL (the
    stub's choice). Cosmos's status and code for a refused name are not documented: the
    stub answers as Storage does (``400 OutOfRangeInput`` for the length,
    ``400 InvalidResourceName`` otherwise).

    Example::

        >>> validate_cosmos_table_name("my-table_" + "x" * 191)
        >>> validate_cosmos_table_name("a#b")
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidResourceName: The specified resource \
name contains invalid characters.
    """
    if not 1 <= len(name) <= MAX_COSMOS_TABLE_NAME:
        raise errors.resource_name_length()
    if _COSMOS_TABLE_FORBIDDEN.search(name) is not None or name.endswith(" ") or name == "Tables":
        raise errors.invalid_resource_name()


@dataclass(frozen=True, slots=True)
class TableNaming:
    """A service's table-name rule: which names are valid and when two names are the same
    table (Storage: case-insensitively; Cosmos DB: case-sensitively).

    Example::

        >>> STORAGE_TABLE_NAMES.key("Movies"), COSMOS_TABLE_NAMES.key("Movies")
        ('movies', 'Movies')
    """

    check: Callable[[str], None]
    case_sensitive: bool

    def validate(self, name: str) -> None:
        """Refuse an invalid name with the service's ``400``.

        Example::

            >>> COSMOS_TABLE_NAMES.validate("ok name")
        """
        self.check(name)

    def key(self, name: str) -> str:
        """The key two names share exactly when they name the same table.

        Example::

            >>> STORAGE_TABLE_NAMES.key("ABC") == STORAGE_TABLE_NAMES.key("abc")
            True
        """
        return name if self.case_sensitive else name.lower()


STORAGE_TABLE_NAMES = TableNaming(validate_table_name, case_sensitive=False)
"""Azure Table storage: 3-63 alphanumerics starting with a letter; case-insensitive."""

COSMOS_TABLE_NAMES = TableNaming(validate_cosmos_table_name, case_sensitive=True)
"""The Azure Cosmos DB Table API: 1-255 characters but ``/ \\ # ?``; case-sensitive."""


def validate_key(which: str, value: object) -> None:
    """Refuse a PartitionKey/RowKey (``which``) the service would refuse (PROTOCOL.md 5.4).

    Not a string or a forbidden character -> ``400 InvalidInput``; more than 1024 UTF-16
    code units -> ``400 KeyValueTooLarge``. The empty string is a legal key.

    Example::

        >>> validate_key("RowKey", "a/b")
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidInput: The 'RowKey' value contains a \
character that is not allowed in keys (/ \\ # ? or a control character).
    """
    if type(value) is not str:
        raise errors.invalid_input()
    if len(value) > MAX_KEY_UNITS // 2 and utf16_len(value) > MAX_KEY_UNITS:
        raise errors.key_value_too_large(which)
    if not value.isascii() and _SURROGATE.search(value) is not None:
        raise errors.invalid_input()
    if _KEY_FORBIDDEN.search(value) is not None:
        raise errors.invalid_input(
            f"The '{which}' value contains a character that is not allowed in keys "
            "(/ \\ # ? or a control character)."
        )


def _is_identifier(name: str) -> bool:
    if _ASCII_NAME.match(name) is not None:
        return True
    if name.isascii():
        return False
    first = name[0]
    if first != "_" and unicodedata.category(first) not in _NAME_START_CATEGORIES:
        return False
    if not all(unicodedata.category(ch) in _NAME_PART_CATEGORIES for ch in name[1:]):
        return False
    # Names are also XML element names in Atom bodies; a few letters (U+00AA, U+00B5,
    # U+00BA...) are not XML name characters for the XML library that writes them.
    try:
        etree.QName(name)
    except ValueError:
        return False
    return True


def is_property_name(name: str) -> bool:
    """Whether ``name`` follows the property-name rule (identifier, 1-255 characters).

    The one rule for names everywhere: stored properties, ``$select`` and ``$filter``.
    System names (``PartitionKey``, ...) pass: they are names, just not custom ones.

    Example::

        >>> is_property_name("e\u0301clair"), is_property_name("x\u00b2")
        (True, False)
    """
    return 0 < len(name) <= MAX_PROPERTY_NAME and _is_identifier(name)


def extend_name(text: str, end: int) -> int:
    """Where a name that a simpler scanner ended at ``end`` really ends in ``text``.

    Scanners built on ``\\w`` stop before combining marks (Mn, Mc) and some connectors,
    which names may contain; this moves ``end`` past every name-part character.

    Example::

        >>> extend_name("e\u0301clair eq 1", 1)
        7
    """
    n = len(text)
    while end < n:
        ch = text[end]
        if ch.isascii():
            if not (ch.isalnum() or ch == "_"):
                break
        elif unicodedata.category(ch) not in _NAME_PART_CATEGORIES:
            break
        end += 1
    return end


def validate_property_name(name: str) -> None:
    """Refuse a custom property name the service would refuse (PROTOCOL.md 5.3).

    Longer than 255 -> ``400 PropertyNameTooLong``; not a C# identifier, or a
    reserved system name -> ``400 PropertyNameInvalid``.

    Example::

        >>> validate_property_name("Größe")
        >>> validate_property_name("123")
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 PropertyNameInvalid: The property name is invalid.
    """
    if name in _KNOWN_NAMES:
        return
    if type(name) is not str:
        raise errors.property_name_invalid()
    if len(name) > MAX_PROPERTY_NAME:
        raise errors.property_name_too_long()
    if not name or name in RESERVED_PROPERTY_NAMES or not _is_identifier(name):
        raise errors.property_name_invalid()
    if len(_KNOWN_NAMES) < _KNOWN_NAMES_LIMIT:
        _KNOWN_NAMES.add(name)
        _NAME_COSTS[name] = 8 + 2 * utf16_len(name)


def _value_size(edm: EdmName, value: Any) -> int:
    """Size of a validated value by the accounting described after the imports."""
    if edm is Edm.STRING:
        return 2 * utf16_len(value) + 4
    if edm is Edm.BINARY:
        return len(value) + 4
    return _FIXED_VALUE_SIZE[edm]


def validate_value(edm: EdmName, value: object) -> None:
    """Refuse a value that is not a legal ``edm`` value (PROTOCOL.md 5.1-5.2).

    The Python type must be the one ``model`` prescribes (``400 InvalidInput``
    otherwise). Strings over 32 768 UTF-16 code units and binaries over 64 KiB ->
    ``400 PropertyValueTooLarge``; Int32/Int64 out of range -> ``400 InvalidInput``;
    DateTime ticks outside 1601-01-01 ... 9999-12-31 -> ``400 OutOfRangeInput``.

    Example::

        >>> validate_value(Edm.INT32, 2**31)
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 InvalidInput: One of the request inputs is not valid.
    """
    if edm is Edm.STRING:
        if type(value) is not str:
            raise errors.invalid_input()
        if len(value) > MAX_STRING_UNITS // 2 and utf16_len(value) > MAX_STRING_UNITS:
            raise errors.property_value_too_large()
        if not value.isascii() and _SURROGATE.search(value) is not None:
            raise errors.invalid_input()
    elif edm is Edm.INT32:
        if type(value) is not int:
            raise errors.invalid_input()
        if not INT32_MIN <= value <= INT32_MAX:
            raise errors.invalid_input()
    elif edm is Edm.INT64:
        if type(value) is not int:
            raise errors.invalid_input()
        if not INT64_MIN <= value <= INT64_MAX:
            raise errors.invalid_input("An error occurred while processing this request.")
    elif edm is Edm.DOUBLE:
        if type(value) is not float:
            raise errors.invalid_input()
    elif edm is Edm.BOOLEAN:
        if type(value) is not bool:
            raise errors.invalid_input()
    elif edm is Edm.DATETIME:
        if type(value) is not int:
            raise errors.invalid_input()
        if not MIN_DATETIME_TICKS <= value <= MAX_DATETIME_TICKS:
            raise errors.out_of_range_input()
    elif edm is Edm.GUID:
        if type(value) is not uuid.UUID:
            raise errors.invalid_input()
    elif edm is Edm.BINARY:
        if type(value) is not bytes:
            raise errors.invalid_input()
        if len(value) > MAX_BINARY_BYTES:
            raise errors.property_value_too_large()
    else:  # pragma: no cover - Edm is closed; a foreign object lands here
        raise errors.invalid_input()


def validate_properties(props: Mapping[str, TypedValue]) -> int:
    """Validate custom properties (count, names, values); return their accounted size.

    More than 252 -> ``400 TooManyProperties``; then each name and value in order.

    Example::

        >>> validate_properties({"Age": (Edm.INT32, 23)})
        18
    """
    if len(props) > MAX_PROPERTIES:
        raise errors.too_many_properties()
    size = 0
    for name, typed in props.items():
        validate_property_name(name)
        if type(typed) is not tuple or len(typed) != 2:
            raise errors.invalid_input()
        edm, value = typed
        if not is_edm_type(edm):
            raise errors.invalid_input()
        validate_value(edm, value)
        size += 8 + 2 * utf16_len(name) + _value_size(edm, value)
    return size


def entity_size(pk: str, rk: str, props: Mapping[str, TypedValue]) -> int:
    """The accounted size in bytes of an entity (see the accounting after the imports).

    Example::

        >>> entity_size("", "", {})
        4
    """
    size = 4 + 2 * (utf16_len(pk) + utf16_len(rk))
    for name, (edm, value) in props.items():
        size += 8 + 2 * utf16_len(name) + _value_size(edm, value)
    return size


def check_entity_limits(pk: str, rk: str, props: Mapping[str, TypedValue]) -> None:
    """Check only the whole-entity limits (count, 1 MiB) of already validated parts.

    Used after a merge, whose result may exceed limits that each part respects.

    Example::

        >>> check_entity_limits("pk", "rk", {"A": (Edm.BINARY, b"x" * 1000)})
    """
    if len(props) > MAX_PROPERTIES:
        raise errors.too_many_properties()
    if entity_size(pk, rk, props) > MAX_ENTITY_BYTES:
        raise errors.entity_too_large()


def validate_entity(pk: object, rk: object, props: Mapping[str, TypedValue]) -> None:
    """Validate a whole entity as the service does on insert/replace/merge.

    Order: PartitionKey, RowKey, property count, each property (name, then value),
    then the 1 MiB size (``400 EntityTooLarge``).

    Example::

        >>> validate_entity("pk", "rk", {"Photo": (Edm.BINARY, b"x" * 65537)})
        Traceback (most recent call last):
        ...
        azt_server_stub.errors.StubError: 400 PropertyValueTooLarge: The property value exceeds \
the maximum allowed size (64KB). If the property value is a string, it is UTF-16 encoded and the \
maximum number of characters should be 32K or less.
    """
    if _entity_passes(pk, rk, props):
        return
    validate_key("PartitionKey", pk)
    validate_key("RowKey", rk)
    if type(pk) is not str or type(rk) is not str:  # pragma: no cover - checked above
        raise errors.invalid_input()
    size = validate_properties(props)
    size += 4 + 2 * (utf16_len(pk) + utf16_len(rk))
    if size > MAX_ENTITY_BYTES:
        raise errors.entity_too_large()


def _entity_passes(pk: object, rk: object, props: Mapping[str, TypedValue]) -> bool:
    """True only if :func:`validate_entity` accepts the entity: a quick check of the common
    case (ASCII keys and strings, property names accepted before) in one loop; False
    leaves the verdict, and the error, to the full checks."""
    if type(pk) is not str or type(rk) is not str or len(props) > MAX_PROPERTIES:
        return False
    if not (pk.isascii() and rk.isascii()) or len(pk) > MAX_KEY_UNITS or len(rk) > MAX_KEY_UNITS:
        return False
    if _KEY_FORBIDDEN.search(pk) is not None or _KEY_FORBIDDEN.search(rk) is not None:
        return False
    size = 4 + 2 * (len(pk) + len(rk))
    costs = _NAME_COSTS
    for name, typed in props.items():
        cost = costs.get(name)
        if cost is None or type(typed) is not tuple or len(typed) != 2:
            return False
        edm, value = typed
        t = type(value)
        if edm is _STRING:
            if t is not str or not value.isascii() or len(value) > MAX_STRING_UNITS:
                return False
            cost += 2 * len(value) + 4
        elif edm is _INT32:
            if t is not int or not INT32_MIN <= value <= INT32_MAX:
                return False
            cost += 4
        elif edm is _DOUBLE:
            if t is not float:
                return False
            cost += 8
        elif edm is _BOOLEAN:
            if t is not bool:
                return False
            cost += 1
        elif edm is _INT64:
            if t is not int or not INT64_MIN <= value <= INT64_MAX:
                return False
            cost += 8
        elif edm is _DATETIME:
            if t is not int or not MIN_DATETIME_TICKS <= value <= MAX_DATETIME_TICKS:
                return False
            cost += 8
        elif edm is _GUID:
            if t is not uuid.UUID:
                return False
            cost += 16
        elif edm is _BINARY:
            if t is not bytes or len(value) > MAX_BINARY_BYTES:
                return False
            cost += len(value) + 4
        else:
            return False
        size += cost
    return size <= MAX_ENTITY_BYTES


_STRING, _INT32, _INT64, _DOUBLE = Edm.STRING, Edm.INT32, Edm.INT64, Edm.DOUBLE
_BOOLEAN, _DATETIME, _GUID, _BINARY = Edm.BOOLEAN, Edm.DATETIME, Edm.GUID, Edm.BINARY
