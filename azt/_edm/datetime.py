"""``EdmDateTime``: an aware UTC ``datetime`` with the service's 100 ns precision.

Example::

    >>> from azt.edm import EdmDateTime
    >>> EdmDateTime.parse("2008-07-10T00:00:00.1234567Z").to_wire()
    '2008-07-10T00:00:00.1234567Z'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final, SupportsIndex, overload

from azt._errors import ValidationError

__all__ = ["DATETIME_MAX", "DATETIME_MIN", "EdmDateTime"]

_TICKS_PER_SECOND: Final = 10_000_000
_TICKS_PER_DAY: Final = 86_400 * _TICKS_PER_SECOND


tzinfo_type = tzinfo
_dt_new = datetime.__new__
_iso = datetime.isoformat
_TAIL: Final = tuple(f"{d}Z" for d in range(10))
_fromiso = datetime.fromisoformat
# the packed fields of a datetime, as pickle takes them: datetime.__new__(cls, state, tz)
_dt_state = datetime.__reduce__
_dt_unpack: Callable[..., Any] = datetime.__new__
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
    :meth:`parse` for wire text. ``str()`` and ``isoformat()`` give a ``datetime``'s text
    (the seventh digit appended when there is one); :meth:`to_wire` the service's.

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
        if value.__class__ is datetime and value.tzinfo is UTC:
            # the common case (an aware UTC datetime): its fields as its pickled state,
            # as _make builds them (fold dropped), without seven attribute reads
            self: EdmDateTime = _dt_unpack(cls, _dt_state(value)[1][0], UTC)
            self._hns = 0
            return self
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
        # trailing zeros of the fraction, and the whole fraction when it is zero): the
        # fields read by datetime.fromisoformat (which truncates past six digits) and the
        # value built from their packed state instead of seven attributes.
        # text[4:20:3] is the characters at 4, 7, 10, 13, 16 (the separators) and 19.
        n = len(text)
        form = text[4:20:3]
        if (
            (n == 20 and form == "--T::Z")
            or (
                21 < n <= 28
                and form == "--T::."
                and text[n - 1] == "Z"
                and text[20 : n - 1].isdigit()
            )
        ) and text.isascii():
            try:
                b = _fromiso(text)
            except ValueError:
                pass
            else:
                self: EdmDateTime = _dt_unpack(cls, _dt_state(b)[1][0], UTC)
                self._hns = ord(text[26]) - 48 if n == 28 else 0
                return self
        return cls._parse_general(text)

    @classmethod
    def _parse_general(cls, text: str) -> EdmDateTime:
        """:meth:`parse` by the ISO 8601 pattern alone (every form; what the fast path's
        answers are checked against)."""
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
        """The text ``str()`` of a ``datetime`` gives (``isoformat(" ")``), so printing a
        value read back shows what printing the value written showed; a seventh digit, which
        no ``datetime`` holds, is shown after the microseconds. :meth:`to_wire` gives the
        service's text.

        Example::

            >>> from datetime import UTC, datetime
            >>> str(EdmDateTime(1995, 12, 15)) == str(datetime(1995, 12, 15, tzinfo=UTC))
            True
            >>> str(EdmDateTime.parse("2020-09-15T23:02:10.4363943Z"))
            '2020-09-15 23:02:10.4363943+00:00'
        """
        return self.isoformat(" ")

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
