"""The azt client against a throttled stub, on simulated time: the client's retry sleeps
advance the throttle's clock, so rates are measured exactly and nothing waits for real.

The throttle must hold a hot partition near its configured rate, while a second partition
loaded in the same loop is never refused."""

from __future__ import annotations

import asyncio

import azt
from azt_server_stub.realism.throttle import FakeClock, Throttle, ThrottleLimits
from tests.realism.support import realism_stub, table_client

ACCOUNT = "devstoreaccount1"


def simulated() -> azt.RetryPolicy:
    return azt.RetryPolicy(max_attempts=60, base=0.01, minimum=0.005, maximum=0.05)


async def test_hot_partition_is_held_near_its_rate_and_a_cold_one_is_unaffected() -> None:
    clock = FakeClock()
    rate, burst = 200.0, 0.5
    throttle = Throttle(
        ThrottleLimits(partition_rate=rate, account_rate=None, burst=burst), clock=clock
    )
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.advance(seconds)
        await asyncio.sleep(0)

    async with realism_stub(throttle=throttle) as stub:
        async with table_client(stub, "throttled") as setup:
            await setup.create_table()
        throttle.reset()
        async with table_client(stub, "throttled", retry=simulated(), sleep=sleep) as table:
            for i in range(600):
                await table.upsert_entity({"PartitionKey": "hot", "RowKey": f"{i:04d}", "i": i})
                if i % 6 == 0:
                    before = len(sleeps)
                    await table.upsert_entity({"PartitionKey": "cold", "RowKey": f"{i:04d}"})
                    assert len(sleeps) == before  # admitted at the first attempt
            elapsed = clock()
            admitted = throttle.stats.by_partition[(ACCOUNT, "throttled", "hot")]
            hot = await table.query_entities("PartitionKey eq 'hot'").to_list()
            cold = await table.query_entities("PartitionKey eq 'cold'").to_list()
    assert [e["i"] for e in hot] == list(range(600))
    assert len(cold) == 100
    hot_id, cold_id = (ACCOUNT, "throttled", "hot"), (ACCOUNT, "throttled", "cold")
    assert admitted == 600
    assert throttle.stats.by_partition[hot_id] == 1200  # the query page charged 600 more
    capacity = rate * burst
    # never above the bucket's bound, and near the configured rate (within 10 %)
    assert admitted <= rate * elapsed + capacity
    assert (admitted - capacity) / elapsed >= 0.9 * rate
    refused = throttle.stats.throttled_by_partition[hot_id]
    assert refused == len(sleeps) > 100  # every refusal was one client retry
    assert throttle.stats.throttled_by_partition[cold_id] == 0
    assert throttle.stats.throttled == {"partition": refused}


async def test_batches_at_the_default_targets() -> None:
    """5,000 entities in batches of 100 into one partition at the default 2,000/s."""
    clock = FakeClock()
    throttle = Throttle(ThrottleLimits(), clock=clock)  # 2,000/s per partition, 20,000/s

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    async with realism_stub(throttle=throttle) as stub:
        async with table_client(stub, "bigbatch") as setup:
            await setup.create_table()
        throttle.reset()
        retry = azt.RetryPolicy(max_attempts=60, base=0.01, minimum=0.01, maximum=0.1)
        async with table_client(stub, "bigbatch", retry=retry, sleep=sleep) as table:
            for b in range(50):
                batch = table.batch()
                for r in range(100):
                    batch.upsert({"PartitionKey": "one", "RowKey": f"{b:02d}{r:02d}"})
                assert len(await table.submit_transaction(batch)) == 100
            elapsed = clock()
            written = throttle.stats.by_partition[(ACCOUNT, "bigbatch", "one")]
            rows = await table.list_entities(select=["RowKey"]).to_list()
    assert len(rows) == 5000
    pid = (ACCOUNT, "bigbatch", "one")
    assert written == 5000
    assert throttle.stats.throttled_by_partition[pid] > 0
    # 2,000 came from the full bucket; the other 3,000 needed at least 1.5 s of refill
    assert elapsed >= (5000 - 2000) / 2000
    assert (5000 - 2000) / elapsed >= 0.8 * 2000


async def test_inserts_refused_with_timeouts_are_never_applied_twice() -> None:
    """Half of the refusals are 500 OperationTimedOut ("may have been applied" for the
    client); the stub applied none of them, so plain inserts never meet a conflict."""
    clock = FakeClock()
    limits = ThrottleLimits(partition_rate=100, account_rate=None, burst=0.1, timeout_share=0.5)
    throttle = Throttle(limits, clock=clock, seed=4)

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    async with realism_stub(throttle=throttle) as stub:
        async with table_client(stub, "timeouts") as setup:
            await setup.create_table()
        async with table_client(stub, "timeouts", retry=simulated(), sleep=sleep) as table:
            results = [
                await table.insert_entity({"PartitionKey": "hot", "RowKey": f"{i:03d}"})
                for i in range(200)
            ]
            rows = await table.list_entities().to_list()
    assert not any(r.ambiguity_resolved for r in results)
    assert len(rows) == 200
    assert throttle.stats.timeouts > 20
    assert throttle.stats.throttled["partition"] > throttle.stats.timeouts
