"""Key helpers: order-preserving encodings of the seeds' key patterns."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta

import pytest

from azt._errors import ValidationError
from azt.edm import EdmDateTime
from azt.keys import (
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
from azt.query import Query

from .models import Movie


def test_composite_keys_roundtrip_and_refuse_ambiguity() -> None:
    k = composite_key("Brady", "20100920", "RandyToVikings")
    assert k == "Brady;20100920;RandyToVikings"
    assert split_key(k, parts=3) == ["Brady", "20100920", "RandyToVikings"]
    assert composite_key("a", "b", sep="_") == "a_b"
    with pytest.raises(ValidationError, match="separator"):
        composite_key("a;b", "c")
    with pytest.raises(ValidationError, match="has 2 parts"):
        split_key("a;b", parts=3)


def test_composite_prefix_gives_the_seed_range() -> None:
    q = Query(Movie).where(
        Movie.PartitionKey.startswith(composite_prefix("ReportingRole", "Instance0002"))
    )
    assert q.compile().filter == (
        "PartitionKey ge 'ReportingRole;Instance0002;' and "
        "PartitionKey lt 'ReportingRole;Instance0002<'"
    )


def test_padded_numbers_sort_numerically() -> None:
    nums = random.Random(1).sample(range(100000), 200)
    assert sorted(padded(n, 5) for n in nums) == [padded(n, 5) for n in sorted(nums)]
    for bad in (-1, 100000):
        with pytest.raises(ValidationError):
            padded(bad, 5)


def test_ticks_keys() -> None:
    t = EdmDateTime.parse("2020-09-15T23:02:10.4363943Z")
    assert ticks_key(t) == "0637358077304363943"
    assert from_ticks_key(ticks_key(t) + "|some-guid") == t
    times = [datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=s) for s in (5, 1, 99999, 3)]
    asc = sorted(times, key=ticks_key)
    desc = sorted(times, key=reverse_ticks_key)
    assert asc == sorted(times)
    assert desc == sorted(times, reverse=True)
    assert (
        reverse_ticks_key(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == "0" * 18 + "9"
    )
    assert int(reverse_ticks_key(t)) == MAX_TICKS - t.ticks
    assert from_reverse_ticks_key(reverse_ticks_key(t)) == t
    with pytest.raises(ValidationError):
        ticks_key(datetime(2020, 1, 1))  # naive


def test_reverse_date_key_is_the_seed_table() -> None:
    dates = [
        date(2009, 1, 20),
        date(2009, 5, 1),
        date(2010, 1, 31),
        date(2010, 6, 20),
        date(2010, 10, 23),
    ]
    keys = [reverse_date_key(d) for d in dates]
    assert keys == ["7990-11-11", "7990-07-30", "7989-11-00", "7989-06-11", "7989-02-08"]
    assert sorted(keys) == keys[::-1]


def test_buckets() -> None:
    assert hash_bucket("customer-42", 16) == hash_bucket("customer-42", 16)
    spread = {hash_bucket(f"c{i}", 16) for i in range(500)}
    assert spread == set(all_buckets(16))
    assert all_buckets(12)[:2] == ["00", "01"]
    assert len(all_buckets(12)) == 12
    assert all_buckets(2, "Logs", "I1") == ["Logs;I1;0", "Logs;I1;1"]
    rng = random.Random(7)
    assert {random_bucket(4, rng) for _ in range(200)} == {"0", "1", "2", "3"}
    with pytest.raises(ValidationError):
        hash_bucket("x", 0)
    t = datetime(2024, 5, 1, 12, 34, 56, tzinfo=UTC)
    hour = time_bucket(t, timedelta(hours=1))
    assert from_ticks_key(hour) == datetime(2024, 5, 1, 12, tzinfo=UTC)
    assert time_bucket(t + timedelta(minutes=20), timedelta(hours=1)) == hour
    assert time_bucket(t + timedelta(hours=1), timedelta(hours=1)) > hour
    plan = Query(Movie).where(Movie.PartitionKey.in_(all_buckets(4, "Logs"))).explain()
    assert plan.kind.value == "multi"
    assert len(plan.subplans) == 4
