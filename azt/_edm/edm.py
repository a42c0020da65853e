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

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from enum import StrEnum
from typing import Any, Final, SupportsIndex, overload

import attrs

from azt._errors import ValidationError

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

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

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

_TICKS_PER_SECOND: Final = 10_000_000
_TICKS_PER_DAY: Final = 86_400 * _TICKS_PER_SECOND


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


# --------------------------------------------------------------------------- EdmDateTime

tzinfo_type = tzinfo
_dt_new = datetime.__new__
_iso = datetime.isoformat
_TAIL: Final = tuple(f"{d}Z" for d in range(10))
_fromiso = datetime.fromisoformat
_ISO_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,7}))?)?)?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?",
    re.ASCII,
)


class EdmDateTime(datetime):
    """An aware UTC ``datetime`` that keeps the service's 100 ns precision.

    Python's ``datetime`` stops at microseconds; the service stores ticks of 100 ns and
    prints up to seven fractional digits. ``EdmDateTime`` keeps the seventh digit in
    :attr:`nanosecond` (0, 100, ..., 900), so a value read from the service and written
    back is bit-for-bit the same. It is a real ``datetime`` (always ``tzinfo=UTC``):
    comparisons, hashing and arithmetic with ``timedelta`` work and take the extra
    digit into account; subtracting two values gives a ``timedelta`` rounded to the
    microsecond.

    The constructor takes UTC fields (``tzinfo`` defaults to UTC; any other tzinfo is
    converted to UTC). Use :meth:`from_datetime` for an existing aware datetime and
    :meth:`parse` for wire text.

    Example::

        >>> t = EdmDateTime.parse("2020-09-15T23:02:10.4363943Z")
        >>> t.microsecond, t.nanosecond
        (436394, 300)
        >>> t.to_wire()
        '2020-09-15T23:02:10.4363943Z'
        >>> t.ticks
        637358077304363943
        >>> EdmDateTime(2008, 7, 10).to_wire()
        '2008-07-10T00:00:00.0000000Z'
    """

    __slots__ = ("_hns",)
    _hns: int  # hundreds of nanoseconds beyond the microsecond, 0..9

    def __new__(
        cls,
        year: int,
        month: int | None = None,
        day: int | None = None,
        hour: int = 0,
        minute: int = 0,
        second: int = 0,
        microsecond: int = 0,
        tzinfo: tzinfo | None = UTC,
        *,
        fold: int = 0,
        nanosecond: int = 0,
    ) -> EdmDateTime:
        if month is None or day is None:
            raise TypeError("EdmDateTime() needs year, month and day")
        if nanosecond % 100 or not 0 <= nanosecond <= 900:
            raise ValidationError(
                f"nanosecond must be a multiple of 100 in 0..900 (the service stores 100 ns "
                f"ticks), got {nanosecond}"
            )
        if tzinfo is None or tzinfo is UTC:
            self = _dt_new(cls, year, month, day, hour, minute, second, microsecond, UTC)
        else:
            local = datetime(year, month, day, hour, minute, second, microsecond, tzinfo, fold=fold)
            off = local.utcoffset()
            if off is None:
                raise ValidationError(f"tzinfo {tzinfo!r} gives no UTC offset for {local}")
            u = local.replace(tzinfo=None) - off
            self = _dt_new(
                cls, u.year, u.month, u.day, u.hour, u.minute, u.second, u.microsecond, UTC
            )
        self._hns = nanosecond // 100
        return self

    # -- construction ---------------------------------------------------------------

    @classmethod
    def _make(cls, dt: datetime, hns: int) -> EdmDateTime:
        """Build from a UTC (aware or naive) datetime plus the 100 ns digit; no checks."""
        self = _dt_new(
            cls, dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond, UTC
        )
        self._hns = hns
        return self

    @classmethod
    def from_datetime(cls, value: datetime) -> EdmDateTime:
        """Convert an aware ``datetime`` to UTC; naive datetimes are refused.

        Example::

            >>> from datetime import datetime, timedelta, timezone
            >>> cet = timezone(timedelta(hours=1))
            >>> EdmDateTime.from_datetime(datetime(2020, 1, 1, 1, 0, tzinfo=cet)).to_wire()
            '2020-01-01T00:00:00.0000000Z'
        """
        if type(value) is cls:
            return value
        if isinstance(value, EdmDateTime):
            return cls._make(value, value._hns)
        off = value.utcoffset()
        if off is None:
            raise ValidationError(
                f"naive datetime {value.isoformat()} refused: it does not say which time zone "
                "it is in; attach a tzinfo (e.g. datetime.now(timezone.utc))"
            )
        if off:
            try:
                value = value.replace(tzinfo=None) - off
            except OverflowError:
                raise ValidationError(
                    f"datetime {value.isoformat()} is outside the range of DateTime in UTC"
                ) from None
        return cls._make(value, 0)

    @classmethod
    def parse(cls, text: str) -> EdmDateTime:
        """Parse ISO 8601 text with 0-7 fractional digits; no zone means UTC.

        Offsets other than ``Z`` are converted to UTC. Malformed text raises
        ``ValidationError``.

        Example::

            >>> EdmDateTime.parse("2008-07-10T00:00:00").to_wire()
            '2008-07-10T00:00:00.0000000Z'
            >>> EdmDateTime.parse("2021-09-21T07:50:52.398525Z").nanosecond
            0
        """
        # Fast path: the service's own forms, "YYYY-MM-DDTHH:MM:SS[.f{1,7}]Z" (Azure trims
        # trailing zeros of the fraction, and the whole fraction when it is zero).
        n = len(text)
        if (
            20 <= n <= 28
            and text[n - 1] == "Z"
            and text.isascii()
            and text[10] == "T"
            and text[4] == "-"
            and text[7] == "-"
            and text[13] == ":"
            and text[16] == ":"
        ):
            try:
                if n == 20:
                    b = _fromiso(text[:19])
                    micro = hns = 0
                elif text[19] == "." and n > 21 and text[20 : n - 1].isdigit():
                    frac = text[20 : n - 1] + "0000000"[: 28 - n]
                    b = _fromiso(text[:19])
                    micro = int(frac[:6])
                    hns = ord(frac[6]) - 48
                else:
                    b = None
                if b is not None:
                    self = _dt_new(
                        cls, b.year, b.month, b.day, b.hour, b.minute, b.second, micro, UTC
                    )
                    self._hns = hns
                    return self
            except ValueError:
                pass
        m = _ISO_RE.fullmatch(text)
        if m is None:
            raise ValidationError(f"not an ISO 8601 DateTime: {text!r}")
        y, mo, d, h, mi, s, frac, _z, sign, oh, om = m.groups()
        frac = (frac or "").ljust(7, "0")
        try:
            dt = datetime(
                int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), int(frac[:6])
            )
            if sign:
                off = timedelta(hours=int(oh), minutes=int(om))
                dt = dt - off if sign == "+" else dt + off
        except (ValueError, OverflowError) as exc:
            raise ValidationError(f"invalid DateTime {text!r}: {exc}") from None
        return cls._make(dt, int(frac[6]))

    @classmethod
    def from_ticks(cls, ticks: int) -> EdmDateTime:
        """Build from 100 ns ticks since 0001-01-01T00:00:00Z (the .NET epoch).

        Example::

            >>> EdmDateTime.from_ticks(637358077304363943).to_wire()
            '2020-09-15T23:02:10.4363943Z'
        """
        days, rem = divmod(ticks, _TICKS_PER_DAY)
        if not 0 <= days < 3652059:
            raise ValidationError(f"ticks {ticks} outside 0001-01-01 .. 9999-12-31")
        secs, rem = divmod(rem, _TICKS_PER_SECOND)
        us, hns = divmod(rem, 10)
        base = datetime.fromordinal(days + 1) + timedelta(seconds=secs, microseconds=us)
        return cls._make(base, hns)

    # datetime's alternate constructors that read the local clock would otherwise hand
    # local wall-clock fields to __new__, which treats fields as UTC.

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> EdmDateTime:
        """The current time as UTC (``tz`` is accepted and ignored: the result is UTC).

        Example::

            >>> EdmDateTime.now().tzinfo
            datetime.timezone.utc
        """
        return cls.from_datetime(datetime.now(UTC))

    @classmethod
    def utcnow(cls) -> EdmDateTime:
        """The current time as UTC (same as :meth:`now`).

        Example::

            >>> EdmDateTime.utcnow().tzinfo
            datetime.timezone.utc
        """
        return cls.from_datetime(datetime.now(UTC))

    @classmethod
    def today(cls) -> EdmDateTime:
        """The current time as UTC (same as :meth:`now`).

        Example::

            >>> EdmDateTime.today().utcoffset()
            datetime.timedelta(0)
        """
        return cls.from_datetime(datetime.now(UTC))

    @classmethod
    def fromtimestamp(cls, t: float, tz: tzinfo | None = None) -> EdmDateTime:
        """The UTC time of a POSIX timestamp (``tz`` is accepted and ignored).

        Example::

            >>> EdmDateTime.fromtimestamp(0).to_wire()
            '1970-01-01T00:00:00.0000000Z'
        """
        return cls.from_datetime(datetime.fromtimestamp(t, UTC))

    @classmethod
    def utcfromtimestamp(cls, t: float) -> EdmDateTime:
        """Same as :meth:`fromtimestamp`.

        Example::

            >>> EdmDateTime.utcfromtimestamp(86400).to_wire()
            '1970-01-02T00:00:00.0000000Z'
        """
        return cls.from_datetime(datetime.fromtimestamp(t, UTC))

    @classmethod
    def fromisoformat(cls, date_string: str) -> EdmDateTime:
        """Same as :meth:`parse` (keeps the seventh digit; no zone means UTC).

        Example::

            >>> EdmDateTime.fromisoformat("2020-01-01T00:00:00.0000001").nanosecond
            100
        """
        return cls.parse(date_string)

    # -- accessors ------------------------------------------------------------------

    @property
    def nanosecond(self) -> int:
        """The sub-microsecond part in nanoseconds: 0, 100, ..., 900.

        Example::

            >>> EdmDateTime.parse("2020-01-01T00:00:00.0000007Z").nanosecond
            700
        """
        return self._hns * 100

    @property
    def ticks(self) -> int:
        """100 ns ticks since 0001-01-01T00:00:00Z (.NET ``DateTime.Ticks``).

        Example::

            >>> EdmDateTime(1, 1, 1, nanosecond=100).ticks
            1
        """
        return (
            (self.toordinal() - 1) * _TICKS_PER_DAY
            + (self.hour * 3600 + self.minute * 60 + self.second) * _TICKS_PER_SECOND
            + self.microsecond * 10
            + self._hns
        )

    def to_wire(self) -> str:
        """The exact wire text: ``YYYY-MM-DDTHH:MM:SS.fffffffZ`` (always seven digits).

        Example::

            >>> EdmDateTime(2021, 9, 21, 7, 50, 52, 398525).to_wire()
            '2021-09-21T07:50:52.3985250Z'
        """
        # datetime.isoformat is C; its "+00:00" tail is replaced by the 7th digit and Z.
        return _iso(self, "T", "microseconds")[:26] + _TAIL[self._hns]

    def to_datetime(self) -> datetime:
        """A plain aware ``datetime`` (the seventh digit is dropped).

        Example::

            >>> EdmDateTime(2020, 1, 1, nanosecond=500).to_datetime()
            datetime.datetime(2020, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
        """
        return datetime(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.microsecond,
            UTC,
        )

    # -- datetime behaviour that must keep (or account for) the seventh digit ----------

    def replace(
        self,
        year: SupportsIndex | None = None,
        month: SupportsIndex | None = None,
        day: SupportsIndex | None = None,
        hour: SupportsIndex | None = None,
        minute: SupportsIndex | None = None,
        second: SupportsIndex | None = None,
        microsecond: SupportsIndex | None = None,
        tzinfo: tzinfo | bool | None = True,
        *,
        fold: int | None = None,
        nanosecond: int | None = None,
    ) -> EdmDateTime:
        """Like ``datetime.replace``; also takes ``nanosecond``, which is otherwise kept.

        Example::

            >>> EdmDateTime(2020, 1, 1, nanosecond=300).replace(year=2021).to_wire()
            '2021-01-01T00:00:00.0000003Z'
        """
        tz = UTC if tzinfo is True else tzinfo
        if not (tz is None or isinstance(tz, tzinfo_type)):
            raise TypeError("tzinfo must be a tzinfo or None")
        return EdmDateTime(
            self.year if year is None else int(year),
            self.month if month is None else int(month),
            self.day if day is None else int(day),
            self.hour if hour is None else int(hour),
            self.minute if minute is None else int(minute),
            self.second if second is None else int(second),
            self.microsecond if microsecond is None else int(microsecond),
            tz,
            fold=self.fold if fold is None else fold,
            nanosecond=self._hns * 100 if nanosecond is None else nanosecond,
        )

    def astimezone(self, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        """Convert to another time zone; returns a plain ``datetime`` (µs precision).

        Example::

            >>> from datetime import timedelta, timezone
            >>> EdmDateTime(2020, 1, 1).astimezone(timezone(timedelta(hours=2))).hour
            2
        """
        return self.to_datetime().astimezone(tz)

    def __add__(self, other: timedelta) -> EdmDateTime:
        if not isinstance(other, timedelta):
            return NotImplemented
        try:
            return EdmDateTime._make(self.to_datetime() + other, self._hns)
        except OverflowError:
            raise OverflowError("date value out of range") from None

    __radd__ = __add__

    @overload  # type: ignore[override]
    def __sub__(self, other: timedelta) -> EdmDateTime: ...
    @overload
    def __sub__(self, other: datetime) -> timedelta: ...
    def __sub__(self, other: timedelta | datetime) -> EdmDateTime | timedelta:
        if isinstance(other, timedelta):
            return EdmDateTime._make(self.to_datetime() - other, self._hns)
        if isinstance(other, datetime):
            base = datetime.__sub__(self.to_datetime(), other)
            diff_hns = self._hns - (other._hns if isinstance(other, EdmDateTime) else 0)
            if diff_hns:
                us, rem = divmod(
                    (base // timedelta(microseconds=1)) * 10 + diff_hns, 10
                )  # round half to even, like timedelta itself
                if rem > 5 or (rem == 5 and us % 2):
                    us += 1
                return timedelta(microseconds=us)
            return base
        return NotImplemented

    def _cmp_other_hns(self, other: object) -> int | None:
        if isinstance(other, EdmDateTime):
            return other._hns
        if isinstance(other, datetime):
            return 0
        return None

    def __eq__(self, other: object) -> bool:
        o = self._cmp_other_hns(other)
        if o is None:
            return NotImplemented
        return datetime.__eq__(self, other) is True and self._hns == o

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __lt__(self, other: datetime) -> bool:  # type: ignore[override]
        o = self._cmp_other_hns(other)
        if o is None:
            return NotImplemented
        if datetime.__eq__(self, other) is True:
            return self._hns < o
        return super().__lt__(other)

    def __le__(self, other: datetime) -> bool:  # type: ignore[override]
        o = self._cmp_other_hns(other)
        if o is None:
            return NotImplemented
        if datetime.__eq__(self, other) is True:
            return self._hns <= o
        return super().__le__(other)

    def __gt__(self, other: datetime) -> bool:  # type: ignore[override]
        o = self._cmp_other_hns(other)
        if o is None:
            return NotImplemented
        if datetime.__eq__(self, other) is True:
            return self._hns > o
        return super().__gt__(other)

    def __ge__(self, other: datetime) -> bool:  # type: ignore[override]
        o = self._cmp_other_hns(other)
        if o is None:
            return NotImplemented
        if datetime.__eq__(self, other) is True:
            return self._hns >= o
        return super().__ge__(other)

    def __hash__(self) -> int:
        h = datetime.__hash__(self)
        return h if not self._hns else hash((h, self._hns))

    def __reduce__(self) -> tuple[Any, ...]:
        return (EdmDateTime.from_ticks, (self.ticks,))

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return self.__reduce__()

    def __repr__(self) -> str:
        return f"EdmDateTime.parse({self.to_wire()!r})"

    def __str__(self) -> str:
        return self.to_wire()

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        """ISO 8601 text; with the default ``timespec`` all seven digits are shown.

        Example::

            >>> EdmDateTime(2020, 1, 1, 0, 0, 0, 5, nanosecond=100).isoformat()
            '2020-01-01T00:00:00.0000051+00:00'
        """
        if timespec != "auto" or not self._hns:
            return datetime.isoformat(self, sep, timespec)
        base = self.to_datetime().replace(tzinfo=None).isoformat(sep, "microseconds")
        return f"{base}{self._hns}+00:00"


DATETIME_MIN: Final = EdmDateTime(1601, 1, 1)
"""The earliest DateTime the service stores (1601-01-01T00:00:00Z)."""
DATETIME_MAX: Final = EdmDateTime(9999, 12, 31, 23, 59, 59, 999999, nanosecond=900)
"""The latest DateTime the service stores (9999-12-31T23:59:59.9999999Z)."""


# --------------------------------------------------------------------------- entities


@attrs.frozen(slots=True)
class EntityMetadata:
    """Service metadata of an entity: its ETag and last-modified Timestamp.

    Example::

        >>> m = EntityMetadata(etag='W/"datetime\\'2020-01-01T00%3A00%3A00Z\\'"')
        >>> m.timestamp is None
        True
    """

    etag: str | None = None
    timestamp: EdmDateTime | None = None


_EMPTY_METADATA: Final = EntityMetadata()


class TableEntity(dict[str, Any]):
    """A dict-shaped entity: property name -> plain Python value.

    ``PartitionKey`` and ``RowKey`` are ordinary keys. ``metadata`` holds the ETag and
    Timestamp (``Timestamp`` is not a property of the dict). ``edm_types`` maps property
    names to an :class:`EdmType` where the Python type alone is ambiguous (Int64, or any
    property whose type the service annotated), so that a read-modify-write keeps the
    stored types. Values may also be :class:`Typed` when writing.

    Example::

        >>> e = TableEntity(PartitionKey="p", RowKey="r", Big=5)
        >>> e.edm_types["Big"] = EdmType.INT64
        >>> e.metadata.etag is None
        True
        >>> e2 = e.copy(); e2.edm_types
        {'Big': <EdmType.INT64: 'Edm.Int64'>}
    """

    # _etag / _ts are filled by the decoders; metadata is built from them on first use so
    # that a page decode does not parse 1,000 Timestamps nobody reads.
    __slots__ = ("_etag", "_meta", "_ts", "_types")
    _etag: str | None
    _ts: str | EdmDateTime | None
    _meta: EntityMetadata
    _types: dict[str, EdmType]

    @property
    def metadata(self) -> EntityMetadata:
        """ETag and Timestamp as last seen from the service (empty for new entities).

        Example::

            >>> TableEntity(PartitionKey="p").metadata
            EntityMetadata(etag=None, timestamp=None)
        """
        meta: EntityMetadata | None = getattr(self, "_meta", None)
        if meta is not None:
            return meta
        etag = getattr(self, "_etag", None)
        ts = getattr(self, "_ts", None)
        if etag is None and ts is None:
            return _EMPTY_METADATA
        if isinstance(ts, str):
            ts = EdmDateTime.parse(ts)
        meta = self._meta = EntityMetadata(etag, ts)
        return meta

    @metadata.setter
    def metadata(self, value: EntityMetadata) -> None:
        self._meta = value

    @property
    def edm_types(self) -> dict[str, EdmType]:
        """Explicit EDM types by property name (mutable; created on first use).

        Example::

            >>> e = TableEntity(N=1)
            >>> e.edm_types["N"] = EdmType.INT64
            >>> e.edm_types
            {'N': <EdmType.INT64: 'Edm.Int64'>}
        """
        t: dict[str, EdmType] | None = getattr(self, "_types", None)
        if t is None:
            t = self._types = {}
        return t

    @edm_types.setter
    def edm_types(self, value: dict[str, EdmType]) -> None:
        self._types = value

    def copy(self) -> TableEntity:
        """A shallow copy that keeps metadata and a copy of ``edm_types``.

        Example::

            >>> e = TableEntity(a=1)
            >>> e.metadata = EntityMetadata(etag="W/1")
            >>> e.copy().metadata.etag
            'W/1'
        """
        new = TableEntity(self)
        new._meta = self.metadata
        types = getattr(self, "_types", None)
        if types:
            new._types = dict(types)
        return new

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_entity, (dict(self), self.metadata, dict(self.edm_types)))

    def __repr__(self) -> str:
        return f"TableEntity({dict.__repr__(self)})"


def _restore_entity(
    props: dict[str, Any], meta: EntityMetadata, types: dict[str, EdmType]
) -> TableEntity:
    ent = TableEntity(props)
    ent._meta = meta
    if types:
        ent._types = types
    return ent


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


# --------------------------------------------------------------------------- limits

_KEY_FORBIDDEN: Final = re.compile(r"[/\\#?\x00-\x1f\x7f-\x9f]")


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (how the service counts string sizes).

    Example::

        >>> utf16_len("abc"), utf16_len("\\U0001f600")
        (3, 2)
    """
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def validate_key(name: str, value: object) -> str:
    """Check a PartitionKey or RowKey value (PROTOCOL.md 5.4) and return it.

    Keys are strings of at most 1024 UTF-16 code units without ``/ \\ # ?`` or control
    characters (U+0000-U+001F, U+007F-U+009F). The empty string is allowed.

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
    return value


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
) -> None:
    """Check an entity against the service limits before it is sent.

    Checks (PROTOCOL.md 5.2-5.4): keys (present when ``require_keys``, strings, length,
    forbidden characters), property names (C#-identifier-like, at most 255 characters,
    no ``odata.`` annotations), at most 252 custom properties, each value's type and
    range (Int32/Int64/DateTime 1601..9999), strings at most 32 768 UTF-16 code units,
    binaries at most 64 KiB, and the entity's estimated size at most 1 MiB. ``None``
    values are skipped (they are not sent) and ``Timestamp`` is ignored (the service
    sets it). ``types`` (or ``entity.edm_types``) give explicit types as in encoding.
    Raises ``ValidationError`` naming the property and the limit.

    Example::

        >>> validate_entity({"PartitionKey": "p", "RowKey": "r", "Age": 23})
        >>> validate_entity({"PartitionKey": "p", "RowKey": "r", "bad-name": 1})
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: property name 'bad-name' is invalid: ...
    """
    if not _plainly_valid(entity, types, require_keys):
        _check_fully(entity, types=types, require_keys=require_keys)


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
