"""The eight EDM types, ``Typed`` values, type inference and coercion, filter literals.

The Table service stores eight primitive types (PROTOCOL.md 5.1): ``str``, ``int``
(Int32, or Int64 outside the Int32 range or when declared), ``float``, ``bool``,
:class:`~azt.edm.EdmDateTime`, ``uuid.UUID`` and ``bytes``.

Example::

    >>> from azt.edm import EdmType, Typed, format_literal
    >>> Typed(5, EdmType.INT64).edm_type.value, format_literal("O'Brien")
    ('Edm.Int64', "'O''Brien'")
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

import attrs

from azt._edm.datetime import EdmDateTime
from azt._errors import ValidationError

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "EdmType",
    "Typed",
    "coerce_value",
    "format_literal",
    "infer_edm_type",
    "resolved_type",
]

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


class EdmType(StrEnum):
    """The eight Entity Data Model types the Table service stores.

    The value is the wire spelling used in ``@odata.type`` and ``m:type``.

    Example::

        >>> EdmType.INT64 == "Edm.Int64"
        True
        >>> EdmType("Edm.Guid") is EdmType.GUID
        True
    """

    STRING = "Edm.String"
    INT32 = "Edm.Int32"
    INT64 = "Edm.Int64"
    DOUBLE = "Edm.Double"
    BOOLEAN = "Edm.Boolean"
    DATETIME = "Edm.DateTime"
    GUID = "Edm.Guid"
    BINARY = "Edm.Binary"


@attrs.frozen(slots=True)
class Typed:
    """A value with an explicit EDM type, for writing.

    The value is checked and normalised on construction (``Typed("c9da...", GUID)``
    holds a ``uuid.UUID``; an Int32 out of range raises ``ValidationError``).

    Example::

        >>> Typed(5, EdmType.INT64).value
        5
        >>> Typed(2.0, EdmType.DOUBLE).edm_type
        <EdmType.DOUBLE: 'Edm.Double'>
    """

    value: Any = attrs.field()
    edm_type: EdmType = attrs.field(converter=EdmType)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "value", coerce_value(self.value, self.edm_type))


# --------------------------------------------------------------------------- typing rules


def resolved_type(name: str, value: Any, explicit: EdmType | None) -> tuple[EdmType, Any]:
    """The EDM type and the bare value of property ``name`` as it will be sent: the
    ``explicit`` type (from ``types`` / ``edm_types``) wins, then a :class:`Typed` value's
    own type, then :func:`infer_edm_type`; an uninferable value raises ``ValidationError``.

    Example::

        >>> resolved_type("n", Typed(5, EdmType.INT64), None)
        (<EdmType.INT64: 'Edm.Int64'>, 5)
        >>> resolved_type("n", 5, EdmType.DOUBLE)
        (<EdmType.DOUBLE: 'Edm.Double'>, 5)
    """
    if isinstance(value, Typed):
        return (value.edm_type if explicit is None else explicit), value.value
    if explicit is not None:
        return explicit, value
    try:
        return infer_edm_type(value), value
    except TypeError as exc:
        raise ValidationError(f"property {name!r}: {exc}") from None


def infer_edm_type(value: object) -> EdmType:
    """The EDM type azt uses for a Python value when no type is given.

    ``int`` is Int32 when it fits, else Int64; ``bool`` is Boolean; ``datetime`` is
    DateTime; ``uuid.UUID`` is Guid; ``bytes``/``bytearray``/``memoryview`` are Binary.
    Anything else raises ``TypeError``.

    Example::

        >>> infer_edm_type(2**40)
        <EdmType.INT64: 'Edm.Int64'>
        >>> infer_edm_type(1.0)
        <EdmType.DOUBLE: 'Edm.Double'>
    """
    t = _INFER.get(type(value))
    if t is not None:
        if t is EdmType.INT32 and not INT32_MIN <= value <= INT32_MAX:  # type: ignore[operator]
            return EdmType.INT64
        return t
    if isinstance(value, Typed):
        return value.edm_type
    if isinstance(value, bool):
        return EdmType.BOOLEAN
    if isinstance(value, int):
        return EdmType.INT32 if INT32_MIN <= value <= INT32_MAX else EdmType.INT64
    if isinstance(value, float):
        return EdmType.DOUBLE
    if isinstance(value, str):
        return EdmType.STRING
    if isinstance(value, datetime):
        return EdmType.DATETIME
    if isinstance(value, uuid.UUID):
        return EdmType.GUID
    if isinstance(value, bytes | bytearray | memoryview):
        return EdmType.BINARY
    raise TypeError(
        f"no EDM type for {type(value).__name__} value {value!r}; supported: str, int, float, "
        "bool, datetime, uuid.UUID, bytes (or wrap it in Typed)"
    )


_INFER: Final[dict[type, EdmType]] = {
    str: EdmType.STRING,
    bool: EdmType.BOOLEAN,
    int: EdmType.INT32,
    float: EdmType.DOUBLE,
    datetime: EdmType.DATETIME,
    EdmDateTime: EdmType.DATETIME,
    uuid.UUID: EdmType.GUID,
    bytes: EdmType.BINARY,
    bytearray: EdmType.BINARY,
    memoryview: EdmType.BINARY,
}


def _what(name: str | None) -> str:
    return f"property {name!r}: " if name is not None else ""


def coerce_value(value: Any, edm_type: EdmType, name: str | None = None) -> Any:
    """Check ``value`` against ``edm_type`` and return its canonical Python form.

    Canonical forms: ``int`` (Int32/Int64, range-checked), ``float`` (Double; ints are
    accepted), ``bool``, ``str``, :class:`EdmDateTime` (aware datetimes converted, naive
    refused, 1601..9999), ``uuid.UUID`` (a GUID string is accepted), ``bytes``. Raises
    ``ValidationError`` naming ``name`` when given.

    Example::

        >>> coerce_value(3, EdmType.DOUBLE)
        3.0
        >>> coerce_value("C9DA6455-213D-42C9-9A79-3E9149A57833", EdmType.GUID)
        UUID('c9da6455-213d-42c9-9a79-3e9149a57833')
    """
    if isinstance(value, Typed):
        value = value.value
    t = edm_type
    try:
        if t is EdmType.STRING:
            if isinstance(value, str):
                return value
        elif t is EdmType.INT32 or t is EdmType.INT64:
            if isinstance(value, int) and not isinstance(value, bool):
                lo, hi = (INT32_MIN, INT32_MAX) if t is EdmType.INT32 else (INT64_MIN, INT64_MAX)
                if not lo <= value <= hi:
                    raise ValidationError(
                        f"{_what(name)}{value} is outside the {t.value} range {lo}..{hi}"
                    )
                return int(value)
        elif t is EdmType.DOUBLE:
            if isinstance(value, float | int) and not isinstance(value, bool):
                return float(value)
        elif t is EdmType.BOOLEAN:
            if isinstance(value, bool):
                return value
        elif t is EdmType.DATETIME:
            if isinstance(value, datetime):
                dt = EdmDateTime.from_datetime(value)
                if dt.year < 1601:
                    raise ValidationError(
                        f"{_what(name)}DateTime {dt.to_wire()} is before 1601-01-01T00:00:00Z, "
                        "the earliest value the service stores"
                    )
                return dt
            if isinstance(value, str):
                return coerce_value(EdmDateTime.parse(value), t, name)
        elif t is EdmType.GUID:
            if isinstance(value, uuid.UUID):
                return value
            if isinstance(value, str):
                return uuid.UUID(value)
        elif t is EdmType.BINARY:
            if isinstance(value, bytes | bytearray | memoryview):
                return bytes(value)
        else:  # pragma: no cover - EdmType is closed
            raise ValidationError(f"unknown EDM type {t!r}")
    except ValidationError as exc:
        if name is not None and not str(exc).startswith("property "):
            raise ValidationError(f"{_what(name)}{exc}") from None
        raise
    except (ValueError, OverflowError) as exc:
        raise ValidationError(f"{_what(name)}invalid {t.value} value {value!r}: {exc}") from None
    raise ValidationError(
        f"{_what(name)}a {type(value).__name__} value cannot be written as {t.value}"
    )


# --------------------------------------------------------------------------- literals


def format_literal(value: Any, edm_type: EdmType | None = None) -> str:
    """An OData ``$filter`` literal for ``value``, correctly escaped.

    The type is inferred as in :func:`infer_edm_type` unless given (or the value is
    :class:`Typed`). Int64 gets ``L``; doubles always carry a ``.`` or an exponent;
    NaN and infinities are refused (the filter grammar cannot express them reliably);
    ``None`` is refused (``null`` is not a filter literal). The result is *not*
    URL-encoded: :func:`azt._core.wire.urls.encode_query` does that.

    Example::

        >>> format_literal("O'Brien"), format_literal(42), format_literal(2**40)
        ("'O''Brien'", '42', '1099511627776L')
        >>> format_literal(2.0), format_literal(5, EdmType.INT64)
        ('2.0', '5L')
        >>> format_literal(EdmDateTime(2008, 7, 10))
        "datetime'2008-07-10T00:00:00.0000000Z'"
        >>> format_literal(b"\\x0a\\x1b"), format_literal(True)
        ("X'0a1b'", 'true')
    """
    if isinstance(value, Typed):
        edm_type = value.edm_type if edm_type is None else edm_type
        value = value.value
    if value is None:
        raise ValidationError(
            "null is not a valid $filter literal (the service cannot test for null)"
        )
    if edm_type is None:
        try:
            edm_type = infer_edm_type(value)
        except TypeError as exc:
            raise ValidationError(str(exc)) from None
    t = EdmType(edm_type)
    v = coerce_value(value, t)
    if t is EdmType.STRING:
        s: str = v
        return "'" + s.replace("'", "''") + "'"
    if t is EdmType.INT32:
        return str(v)
    if t is EdmType.INT64:
        return f"{v}L"
    if t is EdmType.DOUBLE:
        if not math.isfinite(v):
            raise ValidationError(
                f"{v!r} cannot be used in a $filter: the service has no reliable literal for "
                "NaN or infinity"
            )
        return repr(v)  # repr of a finite float always has '.' or an exponent
    if t is EdmType.BOOLEAN:
        return "true" if v else "false"
    if t is EdmType.DATETIME:
        return f"datetime'{v.to_wire()}'"
    if t is EdmType.GUID:
        return f"guid'{v}'"
    if t is EdmType.BINARY:
        return f"X'{v.hex()}'"
    raise ValidationError(f"unknown EDM type {t!r}")  # pragma: no cover
