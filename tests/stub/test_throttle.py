"""Throttling: token buckets, limits per partition and account on an injected clock, query
costs, and the middleware over HTTP (503 ServerBusy at top level, nothing applied)."""

from __future__ import annotations

import argparse

import pytest

from azt_server_stub.cli import add_throttle_arguments, throttle_from_args
from azt_server_stub.model import Entity
from azt_server_stub.realism.throttle import (
    ACCOUNT_LIMIT_MESSAGE,
    PARTITION_LIMIT_MESSAGE,
    FakeClock,
    Throttle,
    ThrottleLimits,
    TokenBucket,
)
from azt_server_stub.realism.throttle_middleware import query_cost
from tests.realism.support import batch_body, raw_client, realism_stub

TABLE = "hot"


def test_bucket_refills_up_to_capacity_and_carries_debt() -> None:
    b = TokenBucket(rate=100, capacity=50, now=0.0)
    assert b.level(10.0) == 50  # capped
    b.take(120)  # admitted from a full bucket: debt
    assert b.level(10.0) == -70
    assert not b.admits(1, 10.5)  # -70 + 50 = -20
    assert b.admits(1, 10.71)
    assert b.full_at(12.0)
    assert not b.full_at(10.71)


def test_limits_parse_and_validate() -> None:
    assert ThrottleLimits.parse("") == ThrottleLimits(2000.0, 20000.0, 1.0)
    assert ThrottleLimits.parse("partition=off, account=500 ,burst=2") == ThrottleLimits(
        None, 500.0, 2.0
    )
    assert ThrottleLimits(100, None, 0.5).partition_capacity == 50
    for bad in ("partition", "speed=3", "account=fast"):
        with pytest.raises(ValueError, match="throttle setting"):
            ThrottleLimits.parse(bad)
    with pytest.raises(ValueError, match="partition_rate"):
        ThrottleLimits(partition_rate=-1)
    with pytest.raises(ValueError, match="burst"):
        ThrottleLimits.parse("burst=0")


def test_command_line() -> None:
    parser = argparse.ArgumentParser()
    add_throttle_arguments(parser)
    assert throttle_from_args(parser.parse_args([])) is None
    default = throttle_from_args(parser.parse_args(["--throttle"]))
    assert default is not None
    assert default.limits == ThrottleLimits()
    custom = throttle_from_args(parser.parse_args(["--throttle", "partition=500,account=off"]))
    assert custom is not None
    assert custom.limits == ThrottleLimits(500.0, None, 1.0)


def test_partition_refusal_takes_nothing_and_other_partitions_pass() -> None:
    clock = FakeClock()
    t = Throttle(ThrottleLimits(partition_rate=10, account_rate=1000), clock=clock)
    assert t.admit("a", "T", "p", 6) is None
    refusal = t.admit("a", "t", "p", 6)  # 4 left, table names are case-insensitive
    assert refusal is not None
    assert (refusal.status, refusal.code, refusal.message) == (
        503,
        "ServerBusy",
        PARTITION_LIMIT_MESSAGE,
    )
    assert t.tokens("a", "t", "p") == 4
    assert t.tokens("a") == 994
    assert t.admit("a", "t", "q", 10) is None
    assert t.admit("a", "other", "p", 10) is None
    assert t.admit("b", "t", "p", 10) is None
    assert t.stats.throttled == {"partition": 1}
    assert t.stats.by_partition[("a", "t", "p")] == 6
    assert t.stats.throttled_by_partition[("a", "t", "p")] == 1
    assert (t.stats.admitted, t.stats.admitted_entities) == (4, 36)


def test_account_refusal_has_the_account_message() -> None:
    t = Throttle(ThrottleLimits(partition_rate=None, account_rate=5), clock=FakeClock())
    for pk in "abcde":
        assert t.admit("acct", "t", pk, 1) is None
    refusal = t.admit("acct", "t", "f", 1)
    assert refusal is not None
    assert refusal.message == ACCOUNT_LIMIT_MESSAGE
    assert t.stats.throttled == {"account": 1}
    assert t.admit("other", "t", "f", 1) is None  # accounts are separate
    assert t.tokens("acct", "t", "f") is None  # no partition limit


def test_refusal_by_the_account_takes_nothing_from_the_partition() -> None:
    t = Throttle(ThrottleLimits(partition_rate=10, account_rate=3), clock=FakeClock())
    assert t.admit("a", "t", "p", 3) is None
    assert t.admit("a", "t", "q", 1) is not None
    assert t.tokens("a", "t", "q") == 10


def test_a_batch_larger_than_the_capacity_is_admitted_from_a_full_bucket() -> None:
    clock = FakeClock()
    t = Throttle(ThrottleLimits(partition_rate=50, account_rate=None), clock=clock)
    assert t.admit("a", "t", "p", 100) is None  # full bucket (50) admits a batch of 100
    assert t.tokens("a", "t", "p") == -50
    clock.advance(1.5)  # -50 + 75 = 25: not full
    assert t.admit("a", "t", "p", 100) is not None
    clock.advance(0.5)  # 50: full again
    assert t.admit("a", "t", "p", 100) is None


def test_throttle_holds_a_hot_partition_at_its_rate_while_a_cold_one_is_untouched() -> None:
    """Offer 8,000/s to one partition and 1,000/s to another for 10 simulated seconds."""
    clock = FakeClock()
    limits = ThrottleLimits()  # 2,000/s per partition, 20,000/s per account, 1 s burst
    t = Throttle(limits, clock=clock)
    seconds, step = 10, 0.001
    for _ in range(int(seconds / step)):
        clock.advance(step)
        for _ in range(8):
            t.admit("a", "t", "hot", 1)
        assert t.admit("a", "t", "cold", 1) is None
    hot = t.stats.by_partition[("a", "t", "hot")]
    rate = 2000 * seconds
    capacity = 2000
    assert rate <= hot <= rate + capacity  # near the configured rate, never above rate + burst
    assert t.stats.by_partition[("a", "t", "cold")] == 10_000
    assert t.stats.throttled_by_partition[("a", "t", "cold")] == 0
    assert t.stats.throttled_by_partition[("a", "t", "hot")] == 80_000 - hot


def test_batches_are_held_to_the_entity_rate() -> None:
    clock = FakeClock()
    t = Throttle(ThrottleLimits(partition_rate=2000, account_rate=None), clock=clock)
    admitted = 0
    for _ in range(1000):  # a batch of 100 every 10 ms for 10 s: 10,000 entities/s offered
        clock.advance(0.01)
        if t.admit("a", "t", "p", 100) is None:
            admitted += 100
    assert 20_000 <= admitted <= 22_000 + 100
    assert t.stats.by_partition[("a", "t", "p")] == admitted


def test_account_rate_caps_the_sum_of_partitions() -> None:
    clock = FakeClock()
    t = Throttle(ThrottleLimits(partition_rate=2000, account_rate=20000), clock=clock)
    for _ in range(2000):  # 2 s; 20 partitions at 1,000/s each = 20,000/s... times 2
        clock.advance(0.001)
        for p in range(40):
            t.admit("a", "t", f"p{p}", 1)
    total = t.stats.admitted_entities
    assert 40_000 <= total <= 40_000 + 20_000
    assert t.stats.throttled["account"] == 80_000 - total
    assert t.stats.throttled["partition"] == 0


def test_query_admission_and_charge() -> None:
    clock = FakeClock()
    t = Throttle(ThrottleLimits(partition_rate=10, account_rate=20), clock=clock)
    assert t.admit_query("a") is None
    t.charge("a", "T", [("p", 15), (None, 3)])  # partition p into debt: 10 - 15
    assert t.tokens("a", "t", "p") == -5
    assert t.tokens("a") == 2
    assert t.admit("a", "t", "p", 1) is not None
    assert t.admit("a", "t", "q", 1) is None
    t.charge("a", "t", [("q", 5)])
    refusal = t.admit_query("a")  # 2 - 1 - 5 < 1
    assert refusal is not None
    assert refusal.message == ACCOUNT_LIMIT_MESSAGE
    clock.advance(1.0)
    assert t.admit_query("a") is None


def test_query_cost_splits_by_partition() -> None:
    rows = [Entity("a", "1", 0), Entity("a", "2", 0), Entity("b", "1", 0)]
    assert query_cost(rows, 3, None).parts == [("a", 2), ("b", 1)]
    assert query_cost(rows, 7, "0").parts == [("a", 2), ("b", 1), ("0", 4)]
    assert query_cost([], 0, "s").parts == [("s", 1)]  # an empty page still costs 1
    assert query_cost([], 4, None).parts == [(None, 4)]
    assert query_cost(rows[:1], 2, None).total == 2


def test_disabled_reset_and_new_limits() -> None:
    t = Throttle(ThrottleLimits(partition_rate=1, account_rate=None), clock=FakeClock())
    assert t.admit("a", "t", "p", 1) is None
    assert t.admit("a", "t", "p", 1) is not None
    t.enabled = False
    assert t.admit("a", "t", "p", 1) is None
    assert t.admit_query("a") is None
    t.enabled = True
    t.reset()
    assert t.stats.admitted == 0
    assert t.admit("a", "t", "p", 1) is None
    t.set_limits(ThrottleLimits(partition_rate=3, account_rate=None))
    assert t.tokens("a", "t", "p") == 3


def test_full_buckets_are_pruned() -> None:
    clock = FakeClock()
    t = Throttle(
        ThrottleLimits(partition_rate=10, account_rate=None), clock=clock, max_partitions=4
    )
    for p in range(4):
        t.admit("a", "t", str(p), 5)
    clock.advance(1.0)  # all full again
    t.admit("a", "t", "x", 5)
    assert len(t._partitions) == 1
    assert t.tokens("a", "t", "0") == 10  # forgotten bucket behaves like a new one


# --- over HTTP --------------------------------------------------------------------------------


async def test_inserts_are_throttled_per_partition_from_the_body() -> None:
    throttle = Throttle(ThrottleLimits(partition_rate=5, account_rate=None), clock=FakeClock())
    async with realism_stub(throttle=throttle) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        for i in range(5):
            answer = await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": str(i)})
            assert answer.status == 204
        refused = await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": "5"})
        assert (refused.status, refused.code) == (503, "ServerBusy")
        error = refused.json()["odata.error"]
        assert error["code"] == "ServerBusy"
        assert error["message"]["value"].startswith(PARTITION_LIMIT_MESSAGE + "\nRequestId:")
        assert "Retry-After" not in refused.headers
        assert refused.headers["x-ms-request-id"]
        assert refused.headers["x-ms-version"] == "2019-02-02"  # the request's, echoed
        other = await raw.insert(TABLE, {"PartitionKey": "q", "RowKey": "5"})
        assert other.status == 204
        # reads and updates addressed by URL draw on the same partition bucket
        assert (await raw.get(TABLE, "p", "0")).status == 503
        assert (await raw.upsert(TABLE, "p", "0", {"x": 1})).status == 503
        assert (await raw.get(TABLE, "q", "5")).status == 200
        throttle.enabled = False
        assert (await raw.get(TABLE, "p", "5")).status == 404  # the refused insert was not applied
    assert throttle.stats.throttled_by_partition[("devstoreaccount1", TABLE, "p")] == 3


async def test_a_batch_costs_its_operations_and_is_refused_whole() -> None:
    throttle = Throttle(ThrottleLimits(partition_rate=15, account_rate=None), clock=FakeClock())
    async with realism_stub(throttle=throttle) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        url = f"{stub.endpoint}/devstoreaccount1/{TABLE}"
        ctype, body = batch_body(url, [("POST", "b", str(i), {"i": i}) for i in range(10)])
        first = await raw.request("POST", "/$batch", headers={"Content-Type": ctype}, body=body)
        assert first.status == 202
        ctype, body = batch_body(url, [("PUT", "b", f"x{i}", {"i": i}) for i in range(10)])
        second = await raw.request("POST", "/$batch", headers={"Content-Type": ctype}, body=body)
        assert (second.status, second.code) == (503, "ServerBusy")  # not a 202 with a part error
        throttle.enabled = False
        assert (await raw.get(TABLE, "b", "x0")).status == 404
    pid = ("devstoreaccount1", TABLE, "b")
    assert throttle.stats.by_partition[pid] == 10
    assert throttle.stats.throttled_by_partition[pid] == 1


async def test_account_limit_applies_to_every_operation() -> None:
    throttle = Throttle(ThrottleLimits(partition_rate=None, account_rate=3), clock=FakeClock())
    async with realism_stub(throttle=throttle) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)  # 1
        assert (await raw.request("GET", "/Tables")).status == 200  # 2
        assert (await raw.request("GET", f"/{TABLE}()")).status == 200  # query: 1 at least
        refused = await raw.request("GET", "/Tables")
        assert (refused.status, refused.code) == (503, "ServerBusy")
        assert refused.json()["odata.error"]["message"]["value"].startswith(ACCOUNT_LIMIT_MESSAGE)
        query = await raw.request("GET", f"/{TABLE}()")
        assert query.status == 503


def test_a_share_of_refusals_are_operation_timeouts() -> None:
    limits = ThrottleLimits(partition_rate=1, account_rate=None, timeout_share=0.3)
    assert ThrottleLimits.parse("timeouts=0.3,partition=1,account=off") == limits
    with pytest.raises(ValueError, match="timeout_share"):
        ThrottleLimits(timeout_share=1.5)

    def codes(seed: int) -> list[str]:
        t = Throttle(limits, clock=FakeClock(), seed=seed)
        assert t.admit("a", "t", "p", 1) is None
        out = []
        for _ in range(400):
            refusal = t.admit("a", "t", "p", 1)
            assert refusal is not None
            out.append(refusal.code)
        assert t.stats.timeouts == out.count("OperationTimedOut")
        assert t.stats.throttled["partition"] == 400
        return out

    first = codes(1)
    assert first == codes(1)
    assert 80 < first.count("OperationTimedOut") < 160
    assert set(first) == {"OperationTimedOut", "ServerBusy"}


def test_docstring_examples() -> None:
    import doctest

    from azt_server_stub.realism import throttle as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 10
