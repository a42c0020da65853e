"""Key helpers for the partitioning patterns of the seed articles.

Keys sort by ordinal string comparison, so everything here produces fixed-width,
lexically ordered strings. Every helper returns a key the service accepts or raises
:class:`azt.ValidationError` (a forbidden character ``/ \\ # ?`` or control character, a
lone surrogate, more than 1024 UTF-16 code units):

* composite keys: ``composite_key("ReportingRole", "Instance0002")`` ->
  ``"ReportingRole;Instance0002"``, :func:`split_key` to parse back, and
  :func:`composite_prefix` for the seeds' "delimiter + 1" prefix ranges
  (``Logs.PartitionKey.startswith(composite_prefix("ReportingRole"))`` compiles to
  ``PartitionKey ge 'ReportingRole;' and PartitionKey lt 'ReportingRole<'``);
* fixed-width numbers: :func:`padded` (``padded(42, 6) == "000042"``);
* time keys: :func:`ticks_key` (oldest first) and :func:`reverse_ticks_key` (newest first,
  ``DateTime.MaxValue.Ticks - ticks`` in 19 digits as the .NET samples do), and
  :func:`reverse_date_key` for the seed's ``YYYY'-MM'-DD'`` RecentMovies table;
* bucketed partition keys: :func:`hash_bucket` (stable, not Python's salted ``hash``),
  :func:`random_bucket` to spread writes, :func:`time_bucket`, and :func:`all_buckets` to
  query every bucket (``Logs.PartitionKey.in_(...)`` runs as parallel sub-queries).
"""

from __future__ import annotations

import hashlib
import random
from datetime import UTC, date, datetime, timedelta  # noqa: F401  (UTC: doc examples)

from azt._edm.datetime import EdmDateTime
from azt._edm.validation import MAX_KEY_UTF16, validate_key
from azt._errors import ValidationError
from azt._orm.values import refuse_lone_surrogate

__all__ = [
    "MAX_TICKS",
    "all_buckets",
    "composite_key",
    "composite_prefix",
    "from_reverse_ticks_key",
    "from_ticks_key",
    "hash_bucket",
    "padded",
    "random_bucket",
    "reverse_date_key",
    "reverse_ticks_key",
    "split_key",
    "ticks_key",
    "time_bucket",
]

#: ``DateTime.MaxValue.Ticks`` in .NET (9999-12-31T23:59:59.9999999).
MAX_TICKS = 3_155_378_975_999_999_999
_TICKS_WIDTH = 19


def _checked_key(what: str, key: str) -> str:
    """``key`` if the service takes it as a PartitionKey or RowKey, else ValidationError."""
    if not key.isascii():
        refuse_lone_surrogate(what, key)
    return validate_key(what, key)


def _check_sep(sep: str) -> None:
    if not isinstance(sep, str) or len(sep) != 1:
        raise ValidationError(f"sep must be one character, got {sep!r}")
    _checked_key("the separator", sep)


def composite_key(*parts: str, sep: str = ";") -> str:
    """Join key parts with ``sep``; a part containing ``sep`` is refused (it could not be
    split back unambiguously), and so is a key the service would refuse (a forbidden
    character in a part or the separator, a lone surrogate, over 1024 UTF-16 code units).

    Example::

        >>> composite_key("Brady", "20100920", "RandyToVikings")
        'Brady;20100920;RandyToVikings'
        >>> composite_key("a/b", "c")
        Traceback (most recent call last):
        ...
        azt._errors.ValidationError: composite key 'a/b;c' contains '/' at index 1; ...
    """
    _check_sep(sep)
    for p in parts:
        if not isinstance(p, str):
            raise ValidationError(f"key parts must be str, got {type(p).__name__} {p!r}")
        if sep in p:
            raise ValidationError(f"key part {p!r} contains the separator {sep!r}")
    return _checked_key("composite key", sep.join(parts))


def split_key(key: str, sep: str = ";", parts: int | None = None) -> list[str]:
    """Split a composite key; with ``parts``, the count must match.

    Example::

        >>> split_key("Sports;RandyToVikings")
        ['Sports', 'RandyToVikings']
    """
    out = key.split(sep)
    if parts is not None and len(out) != parts:
        raise ValidationError(f"key {key!r} has {len(out)} parts separated by {sep!r}, not {parts}")
    return out


def composite_prefix(*parts: str, sep: str = ";") -> str:
    """The prefix shared by every composite key starting with ``parts`` (separator included,
    so ``"Sports"`` does not also match ``"SportsCars"``). Use with ``startswith``.

    Example::

        >>> composite_prefix("ReportingRole", "Instance0002")
        'ReportingRole;Instance0002;'
    """
    return _checked_key("composite prefix", composite_key(*parts, sep=sep) + sep)


def padded(n: int, width: int) -> str:
    """A non-negative integer zero-padded to ``width`` digits, so that keys sort numerically.

    Example::

        >>> padded(42, 6), sorted([padded(10, 3), padded(9, 3)])
        ('000042', ['009', '010'])
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValidationError(f"padded() needs an int, got {type(n).__name__}")
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_KEY_UTF16:
        raise ValidationError(
            f"padded() needs a width of 1..{MAX_KEY_UTF16} digits (a key's limit), got {width!r}"
        )
    if n < 0:
        raise ValidationError(f"padded() cannot keep the order of negative numbers ({n})")
    s = str(n)
    if len(s) > width:
        raise ValidationError(f"{n} does not fit in {width} digits")
    return s.zfill(width)


def _ticks(dt: datetime) -> int:
    return EdmDateTime.from_datetime(dt).ticks


def ticks_key(dt: datetime, width: int = _TICKS_WIDTH) -> str:
    """The .NET ticks of an aware datetime, zero-padded (oldest first), like the seeds'
    ``String.Format("{0:D19}", DateTime.UtcNow.Ticks)``.

    Example::

        >>> ticks_key(datetime(2020, 9, 15, 23, 2, 10, 436394, tzinfo=UTC))
        '0637358077304363940'
    """
    return padded(_ticks(dt), width)


def from_ticks_key(key: str) -> EdmDateTime:
    """Inverse of :func:`ticks_key` (reads the leading digits of a key).

    Example::

        >>> from_ticks_key("0637358077304363943").to_wire()
        '2020-09-15T23:02:10.4363943Z'
    """
    return EdmDateTime.from_ticks(_leading_int(key))


def reverse_ticks_key(dt: datetime) -> str:
    """``MAX_TICKS - ticks`` in 19 digits: later times sort first (newest-first listing).

    Example::

        >>> a = reverse_ticks_key(datetime(2020, 1, 1, tzinfo=UTC))
        >>> b = reverse_ticks_key(datetime(2021, 1, 1, tzinfo=UTC))
        >>> b < a, len(a)
        (True, 19)
    """
    return padded(MAX_TICKS - _ticks(dt), _TICKS_WIDTH)


def from_reverse_ticks_key(key: str) -> EdmDateTime:
    """Inverse of :func:`reverse_ticks_key` (reads the leading digits of a key).

    Example::

        >>> t = datetime(2020, 1, 1, tzinfo=UTC)
        >>> from_reverse_ticks_key(reverse_ticks_key(t) + ";log-7") == t
        True
    """
    return EdmDateTime.from_ticks(MAX_TICKS - _leading_int(key))


def _leading_int(key: str) -> int:
    digits = key[: len(key) - len(key.lstrip("0123456789"))]
    if not digits:
        raise ValidationError(f"key {key!r} does not start with digits")
    return int(digits)


def reverse_date_key(d: date) -> str:
    """The seed's RecentMovies key: ``YYYY'-MM'-DD'`` with ``YYYY' = 9999 - YYYY``,
    ``MM' = 12 - MM``, ``DD' = 31 - DD``; later dates sort first.

    Example::

        >>> reverse_date_key(date(2010, 10, 23)), reverse_date_key(date(2009, 1, 20))
        ('7989-02-08', '7990-11-11')
    """
    return f"{9999 - d.year:04d}-{12 - d.month:02d}-{31 - d.day:02d}"


def _stable_hash(value: str | bytes) -> int:
    data = value.encode("utf-8") if isinstance(value, str) else value
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def _bucket_width(buckets: int) -> int:
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
        raise ValidationError(f"buckets must be a positive int, got {buckets!r}")
    return len(str(buckets - 1))


def hash_bucket(value: str | bytes, buckets: int) -> str:
    """A stable bucket (``"00"`` .. ``"NN"``, zero-padded) for ``value``, the same in every
    process (Python's ``hash`` is salted per process and must not be used for keys).

    Example::

        >>> hash_bucket("customer-42", 16) == hash_bucket("customer-42", 16)
        True
        >>> len(hash_bucket("x", 100))
        2
    """
    width = _bucket_width(buckets)
    return padded(_stable_hash(value) % buckets, width)


def random_bucket(buckets: int, rng: random.Random | None = None) -> str:
    """A random bucket, to spread a hot writer over ``buckets`` partitions (the seed's
    logging example: ``PartitionKey = ComponentName + InstanceId + BucketId``).

    Example::

        >>> random_bucket(8) in all_buckets(8)
        True
    """
    width = _bucket_width(buckets)
    r = rng.randrange(buckets) if rng is not None else random.randrange(buckets)
    return padded(r, width)


def all_buckets(buckets: int, *prefix: str, sep: str = ";") -> list[str]:
    """Every bucket value, optionally as composite keys after ``prefix``; query them with
    ``Entity.PartitionKey.in_(all_buckets(...))`` (parallel sub-queries).

    Example::

        >>> all_buckets(3, "Reporting", "I2")
        ['Reporting;I2;0', 'Reporting;I2;1', 'Reporting;I2;2']
    """
    width = _bucket_width(buckets)
    return [
        composite_key(*prefix, padded(i, width), sep=sep) if prefix else padded(i, width)
        for i in range(buckets)
    ]


def time_bucket(dt: datetime, size: timedelta) -> str:
    """The start of ``dt``'s time bucket of ``size`` as 19-digit ticks (sorts in time order).

    Example::

        >>> t = datetime(2024, 5, 1, 12, 34, tzinfo=UTC)
        >>> time_bucket(t, timedelta(hours=1)) == ticks_key(datetime(2024, 5, 1, 12, tzinfo=UTC))
        True
    """
    step = size // timedelta(microseconds=1) * 10
    if step <= 0:
        raise ValidationError("time_bucket() needs a positive size")
    t = _ticks(dt)
    return padded(t - t % step, _TICKS_WIDTH)
