"""Throttled retries: the service's hint is a floor with jitter added (no lockstep), and a
``429`` gets the Cosmos DB SDKs' budget (10 attempts, 30 s of waits). Delays are computed
with injected ``uniform`` and ``sleep``; nothing here measures time."""

from __future__ import annotations

import asyncio
import random

import pytest

import azt
from azt._core.retry import BackoffWait, hinted_wait
from azt._errors import error_from_response
from azt_server_stub import StubConfig, StubServer
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits

from .conftest import Sleeps
from .test_retry import error_response, make_service, ok_tables, sequence


def _throttled(ms: int) -> azt.ServiceError:
    return error_from_response(
        429, "TooManyRequests", "Request rate is large", headers={"x-ms-retry-after-ms": str(ms)}
    )


def test_the_hint_is_a_floor_and_the_jitter_span_doubles() -> None:
    low = BackoffWait(azt.RetryPolicy(), uniform=lambda lo, hi: lo)
    high = BackoffWait(azt.RetryPolicy(), uniform=lambda lo, hi: hi)
    hint = _throttled(120)
    for retry in (1, 2, 3, 9):
        assert low.delay(retry, hint) == pytest.approx(0.12)  # never less than asked
        assert high.delay(retry, hint) == pytest.approx(0.12 + 0.12 * 2 ** (retry - 1))
    # a tiny hint still spreads retries over at least 50 ms
    assert high.delay(1, _throttled(1)) == pytest.approx(0.001 + 0.05)
    # the span is capped by the policy's maximum
    capped = BackoffWait(azt.RetryPolicy(minimum=0.5, maximum=1.0), uniform=lambda lo, hi: hi)
    assert capped.delay(9, hint) == pytest.approx(0.12 + 1.0)
    # not the policy's back-off: 3 s would idle far longer than Cosmos asks
    assert high.delay(1, hint) < azt.RetryPolicy().minimum


def test_clients_throttled_together_do_not_come_back_together() -> None:
    draws = random.Random(35)
    waits = [hinted_wait(0.05, 1, 90.0, draws.uniform) for _ in range(40)]
    assert min(waits) >= 0.05
    assert max(waits) <= 0.10
    assert len(set(waits)) == 40
    assert max(waits) - min(waits) > 0.025  # spread over more than half the span


def test_other_hints_are_floors_on_the_back_off_with_jitter() -> None:
    wait = BackoffWait(azt.RetryPolicy(), uniform=lambda lo, hi: hi)  # back-off 3 s first
    busy = error_from_response(503, "ServerBusy", "busy", headers={"Retry-After": "7"})
    assert wait.delay(1, busy) == pytest.approx(7.0 + 7.0)  # hint + span
    short = error_from_response(503, "ServerBusy", "busy", headers={"Retry-After": "1"})
    assert wait.delay(1, short) == pytest.approx(3.0)  # the back-off is longer
    # a 429 is throttling whatever its hint's header: the hint plus jitter, no back-off
    plain_429 = error_from_response(429, None, "x", headers={"Retry-After": "1"})
    assert wait.delay(1, plain_429) == pytest.approx(1.0 + 1.0)
    # the recorded Cosmos 429 (2020) has no hint: jitter alone, from a 50 ms span
    recorded = error_from_response(429, "429", "Request rate is large")
    assert wait.delay(1, recorded) == pytest.approx(0.05)
    assert wait.delay(3, recorded) == pytest.approx(0.2)


async def test_a_throttled_request_gets_ten_attempts_whatever_max_attempts() -> None:
    sleeps = Sleeps()
    policy = azt.RetryPolicy(max_attempts=2)
    client, transport = make_service(
        sequence(*(error_response(429, "TooManyRequests", {"x-ms-retry-after-ms": "10"}),) * 10),
        sleeps=sleeps,
        policy=policy,
    )
    async with client:
        with pytest.raises(azt.TooManyRequestsError) as info:
            await client.list_tables().to_list()
    assert len(transport.requests) == 10
    assert info.value.attempts == 10
    # uniform is the midpoint: 10 ms + half of a span doubling from 50 ms
    assert sleeps.delays == pytest.approx([0.01 + 0.05 * 2**n / 2 for n in range(9)])


async def test_throttled_waits_stay_within_thirty_seconds() -> None:
    sleeps = Sleeps()
    client, transport = make_service(
        sequence(*(error_response(429, "TooManyRequests", {"x-ms-retry-after-ms": "5000"}),) * 10),
        sleeps=sleeps,
    )
    async with client:
        with pytest.raises(azt.TooManyRequestsError) as info:
            await client.list_tables().to_list()
    # waits 5 + 2.5, then 5 + 5 (17.5 in all); the next, 5 + 10, would pass 30 s
    assert sleeps.delays == pytest.approx([7.5, 10.0])
    assert info.value.attempts == len(transport.requests) == 3


@pytest.mark.parametrize(
    ("budget", "delays"),
    [
        (17.499, [7.5]),  # 7.5 + 10 would pass the budget
        (17.5, [7.5, 10.0]),  # 7.5 + 10 == 17.5: exactly the budget is allowed
        (17.501, [7.5, 10.0]),  # the next, 5 + 10, would make 32.5
    ],
)
async def test_throttled_waits_exactly_at_their_budget_are_allowed(
    budget: float, delays: list[float]
) -> None:
    sleeps = Sleeps()
    policy = azt.RetryPolicy(throttled_total_delay=budget)
    client, transport = make_service(
        sequence(*(error_response(429, "TooManyRequests", {"x-ms-retry-after-ms": "5000"}),) * 10),
        sleeps=sleeps,
        policy=policy,
    )
    async with client:
        with pytest.raises(azt.TooManyRequestsError) as info:
            await client.list_tables().to_list()
    assert sleeps.delays == pytest.approx(delays)
    assert info.value.attempts == len(transport.requests) == len(delays) + 1


async def test_other_errors_keep_max_attempts_and_no_retries_means_one() -> None:
    sleeps = Sleeps()
    client, transport = make_service(
        sequence(*(error_response(503, "ServerBusy"),) * 5),
        sleeps=sleeps,
        policy=azt.RetryPolicy(max_attempts=2, base=0.0, minimum=0.0),
    )
    async with client:
        with pytest.raises(azt.ServerBusyError):
            await client.list_tables().to_list()
    assert len(transport.requests) == 2
    once, transport = make_service(
        sequence(
            error_response(429, "TooManyRequests", {"x-ms-retry-after-ms": "10"}), ok_tables()
        ),
        sleeps=sleeps,
        policy=azt.RetryPolicy.no_retries(),
    )
    async with once:
        with pytest.raises(azt.TooManyRequestsError):
            await once.list_tables().to_list()
    assert len(transport.requests) == 1


async def test_forty_concurrent_upserts_under_cosmos_throttling_all_land() -> None:
    # issue 35 item 6: --flavor cosmos --throttle partition=20,account=20, the default policy
    throttle = Throttle(ThrottleLimits.parse("partition=20,account=20"))
    waits: list[float] = []

    async def sleep(delay: float) -> None:
        waits.append(delay)
        await asyncio.sleep(delay)

    async with (
        StubServer(StubConfig(throttle=throttle, flavor="cosmos")) as stub,
        azt.TableClient.from_connection_string(
            stub.connection_string, "hot", flavor=azt.Flavor.COSMOS, sleep=sleep
        ) as table,
    ):
        await table.create_table()
        rows = [{"PartitionKey": "p", "RowKey": f"{i:02d}", "N": i} for i in range(40)]
        await asyncio.gather(*(table.upsert_entity(row) for row in rows))
        assert len([e async for e in table.list_entities()]) == 40
    assert throttle.stats.throttled["partition"] + throttle.stats.throttled["account"] > 0
    assert len(waits) > 1
    assert len(set(waits)) == len(waits)  # no two tasks waited the same time
