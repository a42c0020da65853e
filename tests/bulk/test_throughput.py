"""Bulk loads at the (scaled-down) scalability targets: against a stub throttling at
100 entities/s per partition and 1,000 per account, a load over 40 partitions reaches at
least 90 % of the account target once warmed up, with under 10 % of its requests
throttled, whether it is told the targets or not; the stub's own counters say so.

The margins: on this machine both loads measure 98-100 % of the target between 20 % and
80 % of the load (the stub's bucket holds one second of burst, so a little over 100 % is
possible); 90 % leaves room for a shared, busy machine delaying the event loop. The
untold load's throttled requests are a fixed cost of learning (the first episode, when
the pace falls from Azure's 20,000/s, and about one refusal per probe above the learned
rate every few seconds): 9-11 of about 170 requests (5-7 %) for 16,000 entities, so the
load is long enough for 10 % to hold with room; a shorter one would measure the
learning, not the steady state."""

from __future__ import annotations

from typing import Any

import attrs

from azt import RetryPolicy
from azt.bulk import BulkOptions, BulkProgress, load
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits
from tests.bulk.support import expected, rows, stored, stub, table_on

PARTITION_RATE = 100
ACCOUNT_RATE = 1000
PARTITIONS = 40
PER_PARTITION = 150  # 6,000 entities: about 6 s at the account target
UNTOLD_PER_PARTITION = 400  # 16,000 entities: about 16 s


def steady_rate(samples: list[tuple[float, int]], total: int) -> float:
    """Entities per second between 20 % and 80 % of the load, measured by the stub's
    admitted-entity counter: after the buckets' initial burst and before the tail, where
    too few partitions are left to fill the account."""
    start = next((t, n) for t, n in samples if n >= 0.2 * total)
    end = next((t, n) for t, n in samples if n >= 0.8 * total)
    return (end[1] - start[1]) / (end[0] - start[0])


async def run_load(
    options: BulkOptions, per_partition: int = PER_PARTITION, **client: Any
) -> tuple[float, float, Throttle, Any]:
    throttle = Throttle(ThrottleLimits(partition_rate=PARTITION_RATE, account_rate=ACCOUNT_RATE))
    items = list(rows(PARTITIONS, per_partition))
    samples: list[tuple[float, int]] = []

    def progress(p: BulkProgress) -> None:
        samples.append((p.elapsed, throttle.stats.admitted_entities))

    async with stub(throttle=throttle) as server, table_on(server, "speed", **client) as table:
        await table.create_table()
        throttle.reset()  # the buckets start full, the counters at zero
        result = await load(
            table, items, options=attrs.evolve(options, progress_interval=0.1), progress=progress
        )
        throttle.enabled = False
        assert result.ok, result.failures[:3]
        assert result.written == len(items)
        assert await stored(table) == expected(items)
    stats = throttle.stats
    assert stats.admitted_entities == len(items)  # every entity admitted exactly once
    refused = sum(stats.throttled.values())
    assert refused == result.throttled  # the client saw every refusal the stub made
    share = refused / (stats.admitted + refused)
    return steady_rate(samples, len(items)), share, throttle, result


async def test_load_reaches_90_percent_of_the_account_target() -> None:
    # The client is told the targets, as it is told Azure's (2,000 / 20,000) by default.
    rate, share, _, result = await run_load(
        BulkOptions(partition_rate=PARTITION_RATE, account_rate=ACCOUNT_RATE)
    )
    assert rate >= 0.9 * ACCOUNT_RATE, (rate, share)
    assert share <= 0.1, (rate, share, result.throttled, result.requests)


async def test_load_finds_the_target_when_told_nothing() -> None:
    # Told nothing (Azure's defaults, 20x the stub's targets) the load learns the limits
    # from the throttling answers (the default client: its retry policy's seconds-long
    # waits are not the loader's back-off) and holds the account's pace near its target.
    rate, share, throttle, result = await run_load(
        BulkOptions(), UNTOLD_PER_PARTITION, retry=RetryPolicy()
    )
    assert rate >= 0.9 * ACCOUNT_RATE, (rate, share)
    assert share < 0.1, (rate, share, dict(throttle.stats.throttled), result.requests)
