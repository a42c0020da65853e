"""The bulk load's pacing when its budget is shared (a migration's reads count against
the same account and partitions as its writes): refused before its first success, a
pace is not cut as if the refusal had measured the budget; the transaction backs off in
time (jittered, exponential over the refusals in a row), and the pace the load settles
at is what the budget leaves it.

The simulations drive :class:`azt._core.bulk.pacing.Pacing` the way the loader's
dispatcher does, against the stub's own token buckets
(:class:`azt_server_stub.realism.throttle.Throttle`) on a fake clock, with a competitor
that empties the buckets before the load starts and then keeps taking its share (or all
of it for two seconds): no network, no timing, the same answer on a loaded machine. On
the controllers before this rule the load got 33-43 % of its share over the first three
seconds and took 8 seconds to climb back, and after two seconds refused its pace had
fallen to 1 % of the account's and had not recovered ten seconds later."""

from __future__ import annotations

import doctest
import random
from dataclasses import dataclass, field

import pytest

from azt import RetryPolicy
from azt._core.bulk import control, pacing
from azt._core.bulk.outcomes import BulkOptions
from azt._core.bulk.pacing import Pace, Pacing
from azt._core.bulk.queues import throttle_scope
from azt._errors import error_from_response
from azt_server_stub.realism.throttle import FakeClock, Throttle, ThrottleLimits

ACCOUNT = "acct"
TABLE = "t"
STEP = 0.005  # the simulation's clock step: 5 ms
TRANSACTION = 100  # entities a transaction carries


@dataclass
class _Part:
    key: str
    pace: Pace
    not_before: float = 0.0


@dataclass
class _Run:
    """What a simulated load was admitted, by second, and its refusals by scope."""

    admitted: dict[int, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)
    #: the lowest account pace and the lowest partition pace seen
    lowest_account: float = float("inf")
    lowest_partition: float = float("inf")

    def rate(self, start: int, end: int) -> float:
        """Entities per second admitted to the load over seconds [start, end)."""
        return sum(self.admitted.get(s, 0) for s in range(start, end)) / (end - start)


def simulate(
    *,
    limits: ThrottleLimits,
    told: BulkOptions,
    partitions: int,
    compete_account: float = 0.0,
    compete_partition: float = 0.0,
    drained: bool = True,
    compete_until: float = float("inf"),
    seconds: float = 12.0,
) -> tuple[_Run, Pacing]:
    """A load of ``partitions`` partitions, each with more to send than it can, paced by
    :class:`Pacing` (``told`` the targets) against ``limits``, beside a competitor that
    empties every bucket at the start (``drained``) and then takes ``compete_account`` entities/s of
    the account and ``compete_partition`` of each partition (a scan reading them), for
    ``compete_until`` seconds."""
    clock = FakeClock(100.0)
    throttle = Throttle(limits, clock=clock)
    draw = random.Random(7)
    load = Pacing(told, clock, backoff_cap=RetryPolicy().maximum)
    parts = [_Part(f"p{i:03d}", load.partition(clock())) for i in range(partitions)]
    run = _Run()
    start = clock()
    # the competitor's first reads take every bucket's burst: the load's first
    # transactions are refused before any of them succeeds
    if drained and compete_partition:
        for part in parts:
            assert (
                throttle.admit(ACCOUNT, TABLE, part.key, int(limits.partition_capacity or 0))
                is None
            )
    elif drained:
        assert throttle.admit(ACCOUNT, None, None, int(limits.account_capacity or 0)) is None
    account_not_before = 0.0
    # the competitor's reads: every step a small read of its share, each one asked for
    # again at the next step until admitted (it keeps its share, as a scan would)
    backlog = {part.key: 0.0 for part in parts} if compete_partition else {"": 0.0}
    rate = compete_partition or compete_account
    chunk = max(1.0, round(rate * STEP))
    while clock() - start < seconds:
        now = clock()
        for key in backlog if now - start < compete_until else ():
            backlog[key] += rate * STEP
            while backlog[key] >= chunk:
                if throttle.admit(ACCOUNT, TABLE if key else None, key or None, int(chunk)):
                    break  # refused: asked again at the next step
                backlog[key] -= chunk
        for part in parts:  # the dispatcher: each partition ready in turn
            if part.not_before > now or account_not_before > now:
                continue
            delay = part.pace.delay(TRANSACTION, now)
            if delay > 0:
                part.not_before = now + delay
                continue
            delay = load.account.delay(TRANSACTION, now)
            if delay > 0:
                account_not_before = now + delay
                continue
            partition_bound = part.pace.take(TRANSACTION, now)
            account_bound = load.account.take(TRANSACTION, now)
            refusal = throttle.admit(ACCOUNT, TABLE, part.key, TRANSACTION)
            if refusal is None:
                load.succeeded(
                    part.pace,
                    TRANSACTION,
                    now,
                    took=0.01,
                    account_bound=account_bound,
                    partition_bound=partition_bound,
                )
                second = int(now - start)
                run.admitted[second] = run.admitted.get(second, 0) + TRANSACTION
                continue
            answer = error_from_response(refusal.status, refusal.code, refusal.message)
            scope = throttle_scope(answer)
            assert scope is not None
            run.refused[scope] = run.refused.get(scope, 0) + 1
            wait = load.refused(part.pace, scope, TRANSACTION, now, draw.uniform)
            assert wait > 0
            part.not_before = now + wait
        run.lowest_account = min(run.lowest_account, load.account.value)
        run.lowest_partition = min([run.lowest_partition, *(p.pace.value for p in parts)])
        clock.advance(STEP)
    return run, load


def test_a_load_sharing_the_account_settles_at_what_the_account_leaves_it() -> None:
    # told the account's 2,000/s; a reader takes 1,000/s of it and emptied it first
    run, _ = simulate(
        limits=ThrottleLimits(partition_rate=200, account_rate=2000),
        told=BulkOptions(partition_rate=200, account_rate=2000),
        partitions=20,
        compete_account=1000,
    )
    assert run.refused.get("account", 0) > 0  # refused before its first success
    assert run.rate(0, 3) >= 0.6 * 1000, run.admitted  # it finds its share quickly ...
    assert run.rate(3, 12) >= 0.9 * 1000, run.admitted  # ... and keeps it
    # its pace is cut from what was measured, never from a guess below it
    assert run.lowest_account >= 0.6 * 1000, run.lowest_account


def test_a_load_sharing_its_partitions_settles_at_what_each_leaves_it() -> None:
    # told each partition's 200/s; a scan reads 100/s of each and emptied each first
    run, _ = simulate(
        limits=ThrottleLimits(partition_rate=200, account_rate=None),
        told=BulkOptions(partition_rate=200, account_rate=20000),
        partitions=10,
        compete_partition=100,
    )
    assert run.refused.get("partition", 0) > 0
    assert run.rate(0, 3) >= 0.6 * 10 * 100, run.admitted
    assert run.rate(3, 12) >= 0.9 * 10 * 100, run.admitted
    assert run.lowest_partition >= 0.6 * 100, run.lowest_partition


def test_a_load_refused_for_seconds_takes_the_whole_budget_once_it_is_free() -> None:
    # a reader takes all of the account for two seconds: the load is refused again and
    # again before its first success, then has the account to itself
    run, _ = simulate(
        limits=ThrottleLimits(partition_rate=200, account_rate=2000),
        told=BulkOptions(partition_rate=200, account_rate=2000),
        partitions=20,
        compete_account=2000,
        compete_until=2.0,
    )
    assert run.rate(0, 2) <= 100, run.admitted  # (the reader had it all)
    assert run.rate(4, 12) >= 0.95 * 2000, run.admitted
    assert run.lowest_account == 2000


def test_a_lone_load_is_paced_as_before() -> None:
    # nothing shares the budget: the first refusals are measured ones (the buckets'
    # burst was admitted first) and the load holds the account's target
    run, _ = simulate(
        limits=ThrottleLimits(partition_rate=200, account_rate=2000),
        told=BulkOptions(partition_rate=200, account_rate=2000),
        partitions=20,
        drained=False,
    )
    assert run.rate(3, 12) >= 0.95 * 2000, run.admitted


@pytest.mark.parametrize("module", [control, pacing])
def test_docstring_examples_run(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.failed == 0
