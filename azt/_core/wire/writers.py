"""Per-shape entity writers: :func:`azt.edm.validate_entity` and
:func:`azt._core.wire.json.encode_entity` in one pass, by a function generated once per
entity shape (its property names, in order).

The write paths check an entity against the service limits, then encode it: two passes
over its properties, each deciding every value's type again. Entities written together
(a bulk load, a batch) almost always share one shape, so for a plain ``dict`` the names
are checked once, when its writer is generated, and the writer only checks each value
(its exact type, range, length) and builds the JSON object in one expression.
:func:`encode_valid` returns ``None`` for anything a writer is not sure of; the caller
then validates and encodes as before (that path raises the precise error), so that the
results, bytes and errors are the same either way. :func:`declared_writer` generates the
same checks and members for a shape declared ahead (an entity class's columns: each
property's kind, and which may be ``None``, then left out), returning the body itself.

Example::

    >>> encode_valid({"PartitionKey": "p", "RowKey": "r", "n": 1, "x": 2.5})
    b'{"PartitionKey":"p","RowKey":"r","n":1,"x@odata.type":"Edm.Double","x":2.5}'
    >>> encode_valid({"PartitionKey": "p", "RowKey": "a/b"}) is None   # refused: not here
    True
"""

from __future__ import annotations

import binascii
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, cast

from azt._core.wire.json import _ms_encode
from azt._edm.datetime import EdmDateTime
from azt._edm.entity import TableEntity
from azt._edm.types import EdmType
from azt._edm.validation import (
    _KEY_FORBIDDEN,
    MAX_BINARY_BYTES,
    MAX_ENTITY_BYTES,
    MAX_KEY_UTF16,
    MAX_NAME_LENGTH,
    MAX_PROPERTIES,
    MAX_STRING_UTF16,
    utf16_len,
)

__all__ = ["declared_writer", "encode_valid"]

Writer = Callable[..., dict[str, Any] | None]

#: writers by entity shape (``None``: the shape's first entity was not plain)
_writers: dict[tuple[Any, ...], Writer | None] = {}
_WRITERS_MAX: Final = 256


def encode_valid(entity: Mapping[str, Any]) -> bytes | None:
    """The request body :func:`~azt._core.wire.json.encode_entity` writes for ``entity``
    when it is a plain ``dict`` that :func:`~azt.edm.validate_entity` accepts (Azure Table
    storage's limits): ``str`` keys and values of the exact types ``str``, ``int``,
    ``float`` (in ``repr``'s positional range), ``bool``, aware UTC ``datetime``,
    ``EdmDateTime``, ``uuid.UUID`` and ``bytes``, no ``Timestamp``, no ``None``; or a
    :class:`~azt.edm.TableEntity` of such values whose ``edm_types`` declare nothing but
    ``Int64`` (what entity objects give). ``None`` for anything else: validate and encode
    it as usual.

    Example::

        >>> encode_valid({"PartitionKey": "p", "RowKey": "r", "When": None}) is None
        True
    """
    te = type(entity)
    if te is dict:
        keys: tuple[Any, ...] = tuple(entity)
        try:
            writer = _writers[keys]
        except KeyError:
            writer = _new_writer(keys, cast("dict[str, Any]", entity))
    elif te is TableEntity:
        writer = _typed_writer(cast(TableEntity, entity))
    else:
        return None
    if writer is None:
        return None
    out = writer(*entity.values())
    if out is None:
        return None
    try:
        return _ms_encode(out)
    except (TypeError, ValueError):  # (a lone surrogate: encode_entity raises it)
        return None


def _new_writer(keys: tuple[Any, ...], sample: dict[str, Any]) -> Writer | None:
    if len(_writers) >= _WRITERS_MAX:
        _writers.clear()
    writer = _writers[keys] = _generate(keys, list(sample.values()))
    return writer


#: writers of ``TableEntity`` shapes by property names: (the ``edm_types`` they were
#: generated for, as a dict of Int64s, or ``None`` for none; the writer)
_typed_writers: dict[tuple[Any, ...], tuple[dict[str, EdmType] | None, Writer | None]] = {}


def _typed_writer(entity: TableEntity) -> Writer | None:
    """The writer of a ``TableEntity`` whose ``edm_types`` declare nothing but Int64 (what
    entity objects give, ``to_entity``), ``None`` for any other: a declared Int64 is written
    as one whatever its value, as :func:`~azt._core.wire.json.encode_entity` does. Found by
    the property names, then the entity's ``edm_types`` compared with the ones the writer
    was generated for (one dict comparison: entities of one class declare the same)."""
    keys = tuple(entity)
    types = getattr(entity, "_types", None) or None
    found = _typed_writers.get(keys)
    if found is not None and found[0] == types:
        return found[1]
    int64: tuple[str, ...] = ()
    if types:
        for t in types.values():
            if t is not EdmType.INT64:
                return None
        int64 = tuple(types)
    if len(_typed_writers) >= _WRITERS_MAX:
        _typed_writers.clear()
    writer = None
    if all(name in keys for name in int64) and not {"PartitionKey", "RowKey"} & set(int64):
        writer = _generate(keys, list(entity.values()), frozenset(int64))
    _typed_writers[keys] = (dict(types) if types else None, writer)
    return writer


# Each value kind: the check of a value of that kind (``{v}``: the value; any failed check
# returns None), its fixed size as validate_entity counts it, its variable size (an
# expression), and the JSON members it writes (a dict display fragment).
_Kind = tuple[str, int, str | None, str]
_KINDS: Final[dict[str, _Kind]] = {
    "str": (
        "if type({v}) is not str: return None\n"
        "u{i} = len({v}) if {v}.isascii() else utf16_len({v})\n"
        f"if u{{i}} > {MAX_STRING_UTF16}: return None",
        4,
        "2 * u{i}",
        "{n!r}: {v}",
    ),
    "int32": (
        "if type({v}) is not int or not -2147483648 <= {v} <= 2147483647: return None",
        4,
        None,
        "{n!r}: {v}",
    ),
    "int64": (
        "if type({v}) is not int or -2147483648 <= {v} <= 2147483647 "
        "or not -9223372036854775808 <= {v} <= 9223372036854775807: return None",
        8,
        None,
        "{a!r}: 'Edm.Int64', {n!r}: str({v})",
    ),
    "float": (
        # repr's positional notation, which msgspec writes alike (see wire.json._POS_MIN)
        "if type({v}) is not float or not (1e-4 <= {v} < 1e16 or -1e16 < {v} <= -1e-4 "
        "or {v} == 0.0): return None",
        8,
        None,
        "{a!r}: 'Edm.Double', {n!r}: {v}",
    ),
    "bool": ("if type({v}) is not bool: return None", 1, None, "{n!r}: {v}"),
    "datetime": (
        "if type({v}) is not datetime or {v}.tzinfo is not UTC or {v}.year < 1601: return None",
        8,
        None,
        "{a!r}: 'Edm.DateTime', {n!r}: _iso({v}, 'T', 'microseconds')[:26] + '0Z'",
    ),
    "EdmDateTime": (
        "if type({v}) is not EdmDateTime or {v}.year < 1601: return None",
        8,
        None,
        # EdmDateTime.to_wire inline: the C isoformat, its "+00:00" tail replaced
        "{a!r}: 'Edm.DateTime', {n!r}: _iso({v}, 'T', 'microseconds')[:26] + _tail[{v}._hns]",
    ),
    "UUID": (  # (msgspec writes a UUID as str() does: its canonical form)
        "if type({v}) is not UUID: return None",
        16,
        None,
        "{a!r}: 'Edm.Guid', {n!r}: {v}",
    ),
    "bytes": (
        f"if type({{v}}) is not bytes or len({{v}}) > {MAX_BINARY_BYTES}: return None",
        4,
        "len({v})",
        "{a!r}: 'Edm.Binary', {n!r}: b64({v}, newline=False).decode('ascii')",
    ),
}
#: a property declared Int64 (``TableEntity.edm_types``): annotated whatever its value
_DECLARED_INT64: Final[_Kind] = (
    "if type({v}) is not int "
    "or not -9223372036854775808 <= {v} <= 9223372036854775807: return None",
    8,
    None,
    "{a!r}: 'Edm.Int64', {n!r}: str({v})",
)
_KINDS["Int64"] = _DECLARED_INT64
_KEY_CHECK: Final = (
    "if type({v}) is not str: return None\n"
    "u{i} = len({v}) if {v}.isascii() else utf16_len({v})\n"
    f"if u{{i}} > {MAX_KEY_UTF16} or forbidden({{v}}) is not None: return None"
)
_GLOBALS: Final[dict[str, Any]] = {
    "utf16_len": utf16_len,
    "forbidden": _KEY_FORBIDDEN.search,
    "datetime": datetime,
    "EdmDateTime": EdmDateTime,
    "UUID": uuid.UUID,
    "UTC": UTC,
    "_iso": datetime.isoformat,
    "_tail": tuple(f"{d}Z" for d in range(10)),  # the seventh digit and the Z
    "b64": binascii.b2a_base64,
    "_encode": _ms_encode,
}


_KIND_OF: Final[dict[type, str]] = {
    str: "str",
    float: "float",
    bool: "bool",
    datetime: "datetime",
    EdmDateTime: "EdmDateTime",
    uuid.UUID: "UUID",
    bytes: "bytes",
}


def _kind(value: Any) -> str | None:
    """The writer kind of a sample value (``None``: not plain)."""
    if type(value) is int:
        if -(2**31) <= value < 2**31:
            return "int32"
        return "int64" if -(2**63) <= value < 2**63 else None
    return _KIND_OF.get(type(value))


def _generate(
    keys: tuple[Any, ...], sample: list[Any], int64: frozenset[str] = frozenset()
) -> Writer | None:
    """The writer of entities shaped as ``keys`` whose values are of the kinds ``sample``'s
    are (``int64``: the names declared Int64), or ``None`` when the shape or a sample value
    is not plain."""
    kinds: list[str] = []
    for name, value in zip(keys, sample, strict=True):
        kind = "Int64" if name in int64 else _kind(value)
        if kind is None and name != "PartitionKey" and name != "RowKey":
            return None
        kinds.append(kind or "")
    return _compile(keys, kinds)


#: the kinds :func:`declared_writer` takes (the EDM types' plain values)
DECLARED_KINDS: Final = frozenset(
    {"str", "int32", "Int64", "float", "bool", "EdmDateTime", "UUID", "bytes"}
)


def declared_writer(
    names: tuple[str, ...], kinds: tuple[str, ...], optional: tuple[bool, ...]
) -> Callable[..., bytes | None] | None:
    """A function of the values of entities shaped as ``names`` (in order; ``kinds``: each
    property's kind, one of :data:`DECLARED_KINDS`, ignored for the keys; ``optional``:
    whether a ``None`` value is allowed, the property then left out), returning what
    :func:`encode_valid` returns for the entity of those values with the ``None`` ones left
    out and the ``Int64`` ones declared so (``edm_types``): its body, checked against Azure
    Table storage's limits, else ``None``. ``None`` when the shape itself is not plain.

    Example::

        >>> write = declared_writer(("PartitionKey", "RowKey", "n", "big"),
        ...                         ("", "", "int32", "Int64"), (False, False, True, False))
        >>> write("p", "r", None, 5)
        b'{"PartitionKey":"p","RowKey":"r","big@odata.type":"Edm.Int64","big":"5"}'
        >>> write("p", "r", 2**40, 5) is None   # not an Int32: the general path's error
        True
    """
    for name, kind, may_be_none in zip(names, kinds, optional, strict=True):
        if name == "PartitionKey" or name == "RowKey":
            if may_be_none:
                return None
        elif kind not in DECLARED_KINDS:
            return None
    # (with ``optional`` the generated writer returns the body: see _compile)
    return cast("Callable[..., bytes | None] | None", _compile(names, kinds, optional))


def _compile(
    keys: tuple[Any, ...], kinds: list[str] | tuple[str, ...], optional: tuple[bool, ...] = ()
) -> Writer | None:
    """The writer of entities shaped as ``keys`` whose values are of the ``kinds`` (keys'
    ignored); with ``optional`` (a declared shape) the values flagged there may be ``None``,
    left out, and the writer returns the body itself rather than its JSON object. Property
    names are checked here, once, exactly as validate_entity checks them; the size it
    estimates is a constant plus the lengths of the strings, keys and binaries (and of the
    properties present, for the optional ones)."""
    if "PartitionKey" not in keys or "RowKey" not in keys:
        return None
    lines: list[str] = []
    members: list[str] = []
    sizes: list[str] = []
    dropped: list[str] = []
    fixed = 4
    count = 0
    for i, (name, kind) in enumerate(zip(keys, kinds, strict=True)):
        v = f"v{i}"
        if name == "PartitionKey" or name == "RowKey":
            lines.append(_KEY_CHECK.format(v=v, i=i))
            sizes.append(f"2 * u{i}")
            members.append(f"{name!r}: {v}")
            continue
        if (
            type(name) is not str
            or name == "Timestamp"
            or len(name) > MAX_NAME_LENGTH
            or not name.isidentifier()
        ):
            return None
        check, size, variable, member = _KINDS[kind]
        own = 8 + 2 * len(name) + size
        check = check.format(v=v, i=i)
        member = member.format(v=v, n=name, a=name + "@odata.type")
        count += 1
        if optional and optional[i]:
            lines.append(f"if {v} is not None:\n    " + check.replace("\n", "\n    "))
            more = f" + {variable.format(v=v, i=i)}" if variable is not None else ""
            sizes.append(f"(0 if {v} is None else {own}{more})")
            value_at = member.rindex(": ") + 2  # the value's expression: none for None
            members.append(f"{member[:value_at]}(None if {v} is None else {member[value_at:]})")
            gone = [repr(name + "@odata.type")] if "@odata.type" in member else []
            drops = "; ".join(f"del j[{k}]" for k in [*gone, repr(name)])
            dropped.append(f"if {v} is None: {drops}")
            continue
        lines.append(check)
        fixed += own
        if variable is not None:
            sizes.append(variable.format(v=v, i=i))
        members.append(member)
    if count > MAX_PROPERTIES:
        return None
    lines.append(f"if {' + '.join([str(fixed), *sizes])} > {MAX_ENTITY_BYTES}: return None")
    if optional:  # the body itself (the JSON object's Nones left out)
        lines.append("j = {" + ", ".join(members) + "}")
        lines += dropped
        lines.append("try:\n    return _encode(j)")
        lines.append("except (TypeError, ValueError):\n    return None")
    else:
        lines.append("return {" + ", ".join(members) + "}")
    params = ", ".join(f"v{i}" for i in range(len(keys)))
    source = f"def writer({params}):\n" + "".join(
        f"    {line}\n" for text in lines for line in text.split("\n")
    )
    namespace = dict(_GLOBALS)
    exec(compile(source, f"<azt entity writer {len(_writers)}>", "exec"), namespace)
    writer: Writer = namespace["writer"]
    return writer
