"""The stub's data model: EDM types, typed property values, stored entities, time.

The one vocabulary shared by the stub's parts (filter evaluator, backend, wire formats);
independent of the client package ``azt``: the two sides never share wire code.

Example::

    >>> ticks = parse_datetime("2020-09-15T23:02:10.4363943Z")
    >>> format_datetime(ticks)
    '2020-09-15T23:02:10.4363943Z'
    >>> etag_for(ticks)
    'W/"datetime\\'2020-09-15T23%3A02%3A10.4363943Z\\'"'
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import time
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

EdmName: TypeAlias = Literal[
    "Edm.String",
    "Edm.Int32",
    "Edm.Int64",
    "Edm.Double",
    "Edm.Boolean",
    "Edm.DateTime",
    "Edm.Guid",
    "Edm.Binary",
]
"""The type of a stored property: one of the eight constants of :class:`Edm`."""


class Edm:
    """The eight EDM types the Table service stores: their names, as plain strings.

    Plain strings, not Enum members: a stored property is ``(type, value)``, and the
    cyclic garbage collector leaves a tuple of plain values alone, where a tuple holding
    an Enum member (itself a collected object) stays tracked, so every property of every
    entity an in-memory store held was traversed by each full collection. Compare types
    with ``is``: every type the stub makes is one of these objects (:func:`edm_type`
    turns a name into it).

    Example::

        >>> edm_type("Edm.Int64") is Edm.INT64
        True
        >>> Edm.INT64
        'Edm.Int64'
    """

    STRING: Final[EdmName] = "Edm.String"
    INT32: Final[EdmName] = "Edm.Int32"
    INT64: Final[EdmName] = "Edm.Int64"
    DOUBLE: Final[EdmName] = "Edm.Double"
    BOOLEAN: Final[EdmName] = "Edm.Boolean"
    DATETIME: Final[EdmName] = "Edm.DateTime"
    GUID: Final[EdmName] = "Edm.Guid"
    BINARY: Final[EdmName] = "Edm.Binary"


#: Each type -> its attribute name in :class:`Edm` (``"Edm.Int64"`` -> ``"INT64"``).
EDM_NAMES: dict[EdmName, str] = {edm: attr for attr, edm in vars(Edm).items() if attr.isupper()}
#: The eight types, in :class:`Edm`'s order.
EDM_TYPES: tuple[EdmName, ...] = tuple(EDM_NAMES)
_BY_NAME: dict[str, EdmName] = {edm: edm for edm in EDM_TYPES}


def edm_type(name: str) -> EdmName:
    """The type named ``name`` (the :class:`Edm` constant itself); ``ValueError`` for
    any other name.

    Example::

        >>> edm_type("Edm.Guid") is Edm.GUID
        True
        >>> edm_type("Edm.Single")
        Traceback (most recent call last):
        ...
        ValueError: 'Edm.Single' is not an EDM type
    """
    edm = _BY_NAME.get(name) if type(name) is str else None
    if edm is None:
        raise ValueError(f"{name!r} is not an EDM type")
    return edm


def is_edm_type(edm: object) -> bool:
    """Whether ``edm`` is one of the :class:`Edm` constants (the objects, not equal text).

    Example::

        >>> is_edm_type(Edm.INT32), is_edm_type("Edm." + "Int32"), is_edm_type(1)
        (True, False, False)
    """
    return type(edm) is str and _BY_NAME.get(edm) is edm


Value: TypeAlias = Any
"""A typed property value.

The Python type per EDM type:

==============  ==============================================================
``Edm.String``  ``str``
``Edm.Int32``   ``int`` in [-2**31, 2**31 - 1]
``Edm.Int64``   ``int`` in [-2**63, 2**63 - 1]
``Edm.Double``  ``float`` (NaN and +-inf allowed)
``Edm.Boolean`` ``bool``
``Edm.DateTime````int``: 100 ns ticks since 0001-01-01T00:00:00Z (as .NET)
``Edm.Guid``    ``uuid.UUID``
``Edm.Binary``  ``bytes``
==============  ==============================================================
"""

TypedValue: TypeAlias = tuple[EdmName, Value]
"""An EDM type with its value, e.g. ``(Edm.INT64, 255)``."""

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# --- time -------------------------------------------------------------------

TICKS_PER_SECOND = 10_000_000
_EPOCH_0001 = _dt.datetime(1, 1, 1, tzinfo=_dt.UTC)
#: Ticks of 1601-01-01T00:00:00Z, the earliest DateTime the service stores.
MIN_DATETIME_TICKS = 504_911_232_000_000_000
#: Ticks of 9999-12-31T23:59:59.9999999Z.
MAX_DATETIME_TICKS = 3_155_378_975_999_999_999

# re.ASCII and \Z: \d would also take non-ASCII digits and $ a trailing newline.
_DT_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?"
    r"(Z|[+-]\d{2}:\d{2})?\Z",
    re.ASCII,
)


def parse_datetime(text: str) -> int:
    """Parse an ISO 8601 DateTime (0-7 fractional digits) into 100 ns ticks.

    A missing zone designator means UTC; an offset is converted to UTC.
    Raises ``ValueError`` when the text is not a valid DateTime.

    Example::

        >>> parse_datetime("0001-01-01T00:00:00Z")
        0
    """
    # The forms clients send (``YYYY-MM-DDTHH:MM:SS.fffffffZ`` with one to seven fraction
    # digits, or none and no point) whose whole seconds were parsed before: the cached
    # ticks of those seconds plus the fraction's.
    size = len(text)
    if size == 28 and text[27] == "Z":  # seven digits (.NET's and azt's form), in fewer steps
        base = _SECOND_TICKS.get(text[:19])
        if base is not None:
            frac = text[20:27]
            if text[19] == "." and frac.isascii() and frac.isdigit():
                return base + int(frac)
    elif 20 <= size < 28 and text[-1] == "Z":
        base = _SECOND_TICKS.get(text[:19])
        if base is not None:
            if size == 20:
                return base
            frac = text[20:-1]
            if text[19] == "." and frac.isascii() and frac.isdigit():
                return base + int(frac) * _FRACTION_SCALE[size - 22]
    m = _DT_RE.match(text)
    if m is None:
        raise ValueError(f"not an ISO 8601 DateTime: {text!r}")
    year, month, day, hour, minute, second, frac, zone = m.groups()
    base_dt = _dt.datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second or 0), tzinfo=_dt.UTC
    )
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        offset = _dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        base_dt = base_dt - sign * offset
    delta = base_dt - _EPOCH_0001
    ticks = (delta.days * 86_400 + delta.seconds) * TICKS_PER_SECOND
    if (
        zone == "Z"
        and second is not None
        and len(text) == 20 + (frac is not None) + len(frac or "")
    ):
        if len(_SECOND_TICKS) >= 65_536:
            _SECOND_TICKS.clear()
        _SECOND_TICKS[text[:19]] = ticks
    return ticks + int((frac or "").ljust(7, "0"))


#: Ticks of ``YYYY-MM-DDTHH:MM:SS`` texts already parsed (UTC; bounded): a batch's
#: DateTimes repeat the same few seconds.
_SECOND_TICKS: dict[str, int] = {}

#: Ticks per unit of a fraction of one to seven digits (index: digits - 1).
_FRACTION_SCALE: tuple[int, ...] = tuple(10 ** (7 - digits) for digits in range(1, 8))


#: ``YYYY-MM-DDTHH:MM:SS`` per whole second since 0001-01-01; pages and batches repeat the
#: same seconds, so the text is cached (bounded). The JSON writer reads it directly.
SECONDS_TEXT: dict[int, str] = {}


def seconds_text(seconds: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` for whole seconds since 0001-01-01T00:00:00Z (cached).

    Example::

        >>> seconds_text(86_400 + 3_661)
        '0001-01-02T01:01:01'
    """
    text = SECONDS_TEXT.get(seconds)
    if text is None:
        days, rem = divmod(seconds, 86_400)
        day = _dt.date.fromordinal(days + 1)
        hours, rem = divmod(rem, 3600)
        minutes, secs = divmod(rem, 60)
        text = f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{hours:02d}:{minutes:02d}:{secs:02d}"
        if len(SECONDS_TEXT) >= 65_536:
            SECONDS_TEXT.clear()
        SECONDS_TEXT[seconds] = text
    return text


def format_datetime(ticks: int) -> str:
    """Format ticks the way the service prints DateTimes: UTC, ``Z``, up to 7
    fractional digits with trailing zeros removed, no fraction when zero.

    Example::

        >>> format_datetime(parse_datetime("1973-10-04T00:00:00.5000000Z"))
        '1973-10-04T00:00:00.5Z'
    """
    seconds, frac = divmod(ticks, TICKS_PER_SECOND)
    if frac:
        return f"{seconds_text(seconds)}.{frac:07d}".rstrip("0") + "Z"
    return seconds_text(seconds) + "Z"


def format_datetime_7(ticks: int) -> str:
    """Format ticks with exactly seven fractional digits (used for Timestamp).

    Example::

        >>> format_datetime_7(parse_datetime("2020-01-01T00:00:00Z"))
        '2020-01-01T00:00:00.0000000Z'
    """
    seconds, frac = divmod(ticks, TICKS_PER_SECOND)
    return f"{seconds_text(seconds)}.{frac:07d}Z"


def ticks_from_datetime(moment: _dt.datetime) -> int:
    """Convert an aware ``datetime`` to ticks (naive values are taken as UTC).

    Example::

        >>> ticks_from_datetime(_dt.datetime(1, 1, 1, tzinfo=_dt.UTC))
        0
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    delta = moment - _EPOCH_0001
    return (delta.days * 86_400 + delta.seconds) * TICKS_PER_SECOND + delta.microseconds * 10


_UNIX_EPOCH_TICKS = 621_355_968_000_000_000


def wall_clock_ticks() -> int:
    """The current time in ticks (the stub's default clock).

    Example::

        >>> wall_clock_ticks() > ticks_from_datetime(_dt.datetime(2020, 1, 1))
        True
    """
    return time.time_ns() // 100 + _UNIX_EPOCH_TICKS


def datetime_from_ticks(ticks: int) -> _dt.datetime:
    """Convert ticks to an aware UTC ``datetime`` (sub-microsecond digits are dropped).

    Example::

        >>> datetime_from_ticks(0).year
        1
    """
    return _EPOCH_0001 + _dt.timedelta(microseconds=ticks // 10)


def etag_for(timestamp_ticks: int) -> str:
    """The weak ETag the service derives from an entity's Timestamp.

    Uses the same string the service prints as Timestamp, with ``:`` escaped.

    Example::

        >>> etag_for(parse_datetime("2020-09-15T23:02:10.4363943Z"))
        'W/"datetime\\'2020-09-15T23%3A02%3A10.4363943Z\\'"'
    """
    seconds, frac = divmod(timestamp_ticks, TICKS_PER_SECOND)
    head = _ETAG_HEADS.get(seconds)
    if head is None:
        head = "W/\"datetime'" + seconds_text(seconds).replace(":", "%3A") + "."
        if len(_ETAG_HEADS) >= 4096:
            _ETAG_HEADS.clear()
        _ETAG_HEADS[seconds] = head
    return f"{head}{'%07d' % frac}Z'\""  # noqa: UP031 (%: half what a format spec costs)


#: Whole seconds -> the ETag text up to the fraction of a Timestamp in that second
#: (writes of one second share it). Bounded.
_ETAG_HEADS: dict[int, str] = {}


# --- entities ---------------------------------------------------------------


@dataclass(slots=True)
class Entity:
    """A stored entity: keys, the service-assigned Timestamp, and typed properties.

    ``props`` holds only custom properties (never PartitionKey, RowKey or
    Timestamp), in insertion order, each as ``(Edm, value)``. Stored entities
    never contain nulls. ``created``: the entity's rank in creation order (assigned when
    its key is inserted, kept by replaces and merges; the Cosmos DB Table API lists rows
    in that order), not part of its value. ``keys_at``: where the client sent
    PartitionKey and RowKey among the properties (:func:`key_places`; 0: before them,
    PartitionKey first), which the Cosmos DB Table API writes them at
    (:func:`placed_items`); not part of its value either.

    Example::

        >>> e = Entity("pk", "rk", 0, {"Age": (Edm.INT32, 23)})
        >>> e.props["Age"]
        ('Edm.Int32', 23)
    """

    pk: str
    rk: str
    timestamp: int
    props: dict[str, TypedValue] = field(default_factory=dict)
    created: int = field(default=0, compare=False, repr=False)
    keys_at: int = field(default=0, compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str]:
        """``(PartitionKey, RowKey)``, the entity's position in ordinal order.

        Example::

            >>> Entity("pk", "rk", 0).key
            ('pk', 'rk')
        """
        return (self.pk, self.rk)

    @property
    def etag(self) -> str:
        """The entity's current ETag, derived from its Timestamp (see :func:`etag_for`).

        Example::

            >>> Entity("pk", "rk", parse_datetime("2020-09-15T23:02:10.4363943Z")).etag
            'W/"datetime\\'2020-09-15T23%3A02%3A10.4363943Z\\'"'
        """
        return etag_for(self.timestamp)

    def get(self, name: str) -> TypedValue | None:
        """Look up any property by name, system properties included.

        ``PartitionKey``/``RowKey`` are ``Edm.String``, ``Timestamp`` is ``Edm.DateTime``;
        a missing property gives ``None``.

        Example::

            >>> Entity("a", "b", 0).get("PartitionKey")
            ('Edm.String', 'a')
        """
        if name == "PartitionKey":
            return (Edm.STRING, self.pk)
        if name == "RowKey":
            return (Edm.STRING, self.rk)
        if name == "Timestamp":
            return (Edm.DATETIME, self.timestamp)
        return self.props.get(name)

    def copy(self) -> Entity:
        """A copy whose property dict can be changed independently (values are immutable).

        Example::

            >>> original = Entity("pk", "rk", 0, {"Age": (Edm.INT32, 23)})
            >>> changed = original.copy()
            >>> changed.props["Age"] = (Edm.INT32, 24)
            >>> original.props["Age"][1], changed.props["Age"][1]
            (23, 24)
        """
        return Entity(
            self.pk, self.rk, self.timestamp, dict(self.props), self.created, self.keys_at
        )


#: :func:`key_places` codes: bits 0-15 hold how many properties precede PartitionKey, bits
#: 16-31 how many precede RowKey, bit 32 whether RowKey came first when as many precede both.
_PLACE_BITS = 16
_PLACE_MASK = (1 << _PLACE_BITS) - 1
_ROW_KEY_FIRST = 1 << (2 * _PLACE_BITS)


def key_places(names: Iterable[str], props: Container[str]) -> int:
    """Where PartitionKey and RowKey were sent among an entity's members ``names`` (in the
    order sent), counted in the stored properties ``props`` that precede each: the
    ``Entity.keys_at`` of the entity (0 when the keys came first, PartitionKey before
    RowKey, or when either is missing: the keys are then written first).

    Annotations, ``odata.*`` members, ``Timestamp`` and null values are not properties, so
    they do not count.

    Example::

        >>> key_places(["PartitionKey", "RowKey", "a"], {"a"})
        0
        >>> placed = key_places(["a", "PartitionKey", "b", "RowKey"], {"a", "b"})
        >>> placed & 0xFFFF, placed >> 16 & 0xFFFF, placed >> 32
        (1, 2, 0)
    """
    pk_at = rk_at = -1
    seen = 0
    for name in names:
        if name == "PartitionKey":
            pk_at = seen
            if rk_at >= 0:
                break
        elif name == "RowKey":
            rk_at = seen
            if pk_at >= 0:
                break
        elif name in props:
            seen += 1
    if pk_at < 0 or rk_at < 0:
        return 0
    rk_first = _ROW_KEY_FIRST if rk_at == pk_at and name == "PartitionKey" else 0
    return min(pk_at, _PLACE_MASK) | min(rk_at, _PLACE_MASK) << _PLACE_BITS | rk_first


def placed_items(entity: Entity) -> list[tuple[str, TypedValue]]:
    """The entity's keys (``Edm.String``) and properties in the order its ``keys_at``
    says the client sent them (see :func:`key_places`).

    Example::

        >>> e = Entity("p", "r", 0, {"a": (Edm.INT32, 1), "b": (Edm.INT32, 2)})
        >>> e.keys_at = key_places(["a", "PartitionKey", "b", "RowKey"], e.props)
        >>> [name for name, _ in placed_items(e)]
        ['a', 'PartitionKey', 'b', 'RowKey']
    """
    code = entity.keys_at
    pk_at, rk_at = code & _PLACE_MASK, code >> _PLACE_BITS & _PLACE_MASK
    pk: tuple[str, TypedValue] = ("PartitionKey", (Edm.STRING, entity.pk))
    rk: tuple[str, TypedValue] = ("RowKey", (Edm.STRING, entity.rk))
    if rk_at < pk_at or (rk_at == pk_at and code & _ROW_KEY_FIRST):
        (first_at, first), (second_at, second) = (rk_at, rk), (pk_at, pk)
    else:
        (first_at, first), (second_at, second) = (pk_at, pk), (rk_at, rk)
    items = list(entity.props.items())
    count = len(items)
    items.insert(min(first_at, count), first)
    items.insert(min(second_at, count) + 1, second)
    return items


#: Ready request ids (``list.pop`` and ``extend`` are atomic, so threads may share it).
_GUIDS: list[str] = []


_GUID_BATCH = 256


#: Byte 6 of a GUID as ``uuid.uuid4`` sets its version (``0100xxxx``), byte 8 as it sets
#: the RFC 4122 variant (``10xxxxxx``): tables for ``bytes.translate``.
_VERSION_BYTE = bytes(byte & 0x0F | 0x40 for byte in range(256))
_VARIANT_BYTE = bytes(byte & 0x3F | 0x80 for byte in range(256))


def _guid_batch() -> list[str]:
    """``_GUID_BATCH`` random version-4 GUIDs, exactly what ``str(uuid.uuid4())`` makes of
    the same random bytes, from one read of the system's random source."""
    # All in C, for the whole batch at once (slicing each GUID out of one hex text cost
    # eight thousand instructions a GUID): the version and variant bits set, the hex
    # digits in groups of four, each GUID's "xxxx-xxxx-...-xxxx-" (40 characters) cut to
    # "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\n" by deleting its 8th, 7th and 1st dashes (the
    # later first: a deletion shortens every GUID before the next), then split.
    raw = bytearray(os.urandom(16 * _GUID_BATCH))
    raw[6::16] = raw[6::16].translate(_VERSION_BYTE)
    raw[8::16] = raw[8::16].translate(_VARIANT_BYTE)
    text = bytearray(raw.hex("-", 2), "ascii")
    text += b"-"
    del text[34::40]
    del text[29::39]
    del text[4::38]
    text[36::37] = b"\n" * _GUID_BATCH
    return text.decode("ascii").splitlines()


def new_guid() -> str:
    """A fresh request id in the service's GUID shape (a random version-4 UUID).

    Example::

        >>> len(new_guid())
        36
    """
    while True:
        try:
            return _GUIDS.pop()
        except IndexError:
            _GUIDS.extend(_guid_batch())


# A forked child must not hand out the ids its parent already holds.
os.register_at_fork(after_in_child=_GUIDS.clear)
