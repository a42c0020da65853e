"""Key helpers for the partitioning patterns of the seed articles.

Keys sort by ordinal string comparison, so everything here produces fixed-width,
lexically ordered strings:

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

from azt._orm.keys import (
    MAX_TICKS,
    all_buckets,
    composite_key,
    composite_prefix,
    from_reverse_ticks_key,
    from_ticks_key,
    hash_bucket,
    padded,
    random_bucket,
    reverse_date_key,
    reverse_ticks_key,
    split_key,
    ticks_key,
    time_bucket,
)

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
