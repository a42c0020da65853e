"""Throttling at the scalability targets (PROTOCOL.md 12.1): token buckets, ``503 ServerBusy``.

One bucket per partition ``(account, table, PartitionKey)`` (default 2,000 entities/s)
and one per account (default 20,000/s), both optional; :class:`Throttle` says what a
request costs and whether it is admitted. The HTTP side (middleware, query costs) is
:mod:`azt_server_stub.realism.throttle_middleware`.

Example::

    >>> clock = FakeClock()
    >>> t = Throttle(ThrottleLimits(partition_rate=10, account_rate=None), clock=clock)
    >>> [t.admit("a", "t", "p", 4) is None for _ in range(3)]
    [True, True, False]
    >>> clock.advance(0.5)                  # 5 tokens refilled: 2 + 5 = 7 >= 4
    >>> t.admit("a", "t", "p", 4) is None, t.admit("a", "t", "q", 10) is None
    (True, True)
"""

from __future__ import annotations

import collections
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import errors
from ..errors import StubError
from .inspection import BUSY_MESSAGES

PARTITION_LIMIT_MESSAGE = BUSY_MESSAGES["server"]


ACCOUNT_LIMIT_MESSAGE = BUSY_MESSAGES["account"]


Clock = Callable[[], float]


PartitionId = tuple[str, str, str]
"""``(account, lower-cased table name, PartitionKey)``."""


class FakeClock:
    """A manual monotonic clock for tests: ``clock()`` reads it, ``advance`` moves it.

    Example::

        >>> c = FakeClock(10.0); c.advance(0.25); c()
        10.25
    """

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward (ValueError for a negative step).

        Example::

            >>> c = FakeClock(); c.advance(1.5); c.advance(0.5); c()
            2.0
            >>> c.advance(-1)
            Traceback (most recent call last):
            ...
            ValueError: a monotonic clock cannot go back
        """
        if seconds < 0:
            raise ValueError("a monotonic clock cannot go back")
        self.now += seconds


@dataclass(frozen=True, slots=True)
class ThrottleLimits:
    """Rates in entities per second (``None``: no limit), the burst in seconds, and the
    share of refusals answered ``500 OperationTimedOut`` instead of ``503 ServerBusy``.

    Defaults are the published targets: 2,000 entities/s per partition, 20,000/s per
    account, with one second of burst; every refusal is a ServerBusy. The service answers
    an overloaded partition with either code (PROTOCOL.md 12.1); ``timeout_share`` makes a
    seeded fraction of refusals the timeout, which clients must treat as "may have been
    applied" although the stub applied nothing.

    Example::

        >>> ThrottleLimits.parse("partition=500,account=off,burst=0.5,timeouts=0.25")
        ThrottleLimits(partition_rate=500.0, account_rate=None, burst=0.5, timeout_share=0.25)
    """

    partition_rate: float | None = 2000.0
    account_rate: float | None = 20000.0
    burst: float = 1.0
    timeout_share: float = 0.0

    def __post_init__(self) -> None:
        for name in ("partition_rate", "account_rate"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0 or None, got {value!r}")
        if not self.burst > 0:
            raise ValueError(f"burst must be > 0 seconds, got {self.burst!r}")
        if not 0.0 <= self.timeout_share <= 1.0:
            raise ValueError(f"timeout_share must be within [0, 1], got {self.timeout_share!r}")

    @property
    def partition_capacity(self) -> float | None:
        """Tokens a partition bucket holds when full.

        Example::

            >>> ThrottleLimits(partition_rate=500, burst=0.5).partition_capacity
            250.0
            >>> ThrottleLimits(partition_rate=None).partition_capacity is None
            True
        """
        return None if self.partition_rate is None else self.partition_rate * self.burst

    @property
    def account_capacity(self) -> float | None:
        """Tokens the account bucket holds when full.

        Example::

            >>> ThrottleLimits(burst=2.0).account_capacity
            40000.0
            >>> ThrottleLimits(account_rate=None).account_capacity is None
            True
        """
        return None if self.account_rate is None else self.account_rate * self.burst

    @classmethod
    def parse(cls, spec: str) -> ThrottleLimits:
        """``partition=N,account=N,burst=SECONDS,timeouts=SHARE`` (each optional; ``off``
        disables a rate limit).

        Example::

            >>> ThrottleLimits.parse("").partition_rate
            2000.0
        """
        values: dict[str, float | None] = {}
        for item in spec.split(","):
            item = item.strip()
            if not item:
                continue
            name, eq, value = item.partition("=")
            name = name.strip().lower()
            if not eq or name not in ("partition", "account", "burst", "timeouts"):
                raise ValueError(
                    f"bad throttle setting {item!r} "
                    "(use partition=N, account=N, burst=SECONDS, timeouts=SHARE)"
                )
            value = value.strip().lower()
            if value in ("off", "none", "0") and name in ("partition", "account"):
                values[name] = None
                continue
            try:
                values[name] = float(value)
            except ValueError:
                raise ValueError(f"bad number in throttle setting {item!r}") from None
        defaults = cls()
        burst = values.get("burst", defaults.burst)
        share = values.get("timeouts", defaults.timeout_share)
        return cls(
            partition_rate=values.get("partition", defaults.partition_rate),
            account_rate=values.get("account", defaults.account_rate),
            burst=defaults.burst if burst is None else burst,
            timeout_share=defaults.timeout_share if share is None else share,
        )


class TokenBucket:
    """A token bucket refilled continuously at ``rate`` tokens/s up to ``capacity``.

    Example::

        >>> b = TokenBucket(rate=10, capacity=10, now=0.0)
        >>> b.admits(10, 0.0), b.take(10), b.admits(1, 0.05), b.admits(1, 0.1)
        (True, None, False, True)
    """

    __slots__ = ("capacity", "rate", "stamp", "tokens")

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.stamp = now

    def level(self, now: float) -> float:
        """Refill up to ``now`` and return the tokens held (negative while in debt).

        Example::

            >>> b = TokenBucket(rate=10.0, capacity=5.0, now=0.0); b.take(8.0)
            >>> b.level(0.0), b.level(0.5), b.level(10.0)
            (-3.0, 2.0, 5.0)
        """
        elapsed = now - self.stamp
        if elapsed > 0:
            self.tokens = min(self.capacity, self.tokens + elapsed * self.rate)
            self.stamp = now
        return self.tokens

    def admits(self, cost: float, now: float) -> bool:
        """Whether a request costing ``cost`` may pass now (see the :class:`Throttle` docstring).

        A cost above the capacity passes only a full bucket.

        Example::

            >>> b = TokenBucket(rate=10.0, capacity=5.0, now=0.0)
            >>> b.admits(5.0, 0.0), b.admits(50.0, 0.0)
            (True, True)
            >>> b.take(1.0); b.admits(50.0, 0.0), b.admits(4.0, 0.0)
            (False, True)
        """
        return self.level(now) >= min(cost, self.capacity)

    def take(self, cost: float) -> None:
        """Take ``cost`` tokens (after :meth:`admits`); may leave the bucket in debt.

        Example::

            >>> b = TokenBucket(rate=1.0, capacity=10.0, now=0.0); b.take(15.0); b.tokens
            -5.0
        """
        self.tokens -= cost

    def wait_for(self, cost: float, now: float) -> float:
        """Seconds until the bucket admits a request costing ``cost`` (0 if it does now).

        Example::

            >>> b = TokenBucket(rate=10.0, capacity=5.0, now=0.0); b.take(5.0)
            >>> b.wait_for(1.0, 0.0), b.wait_for(1.0, 0.1)
            (0.1, 0.0)
        """
        if self.rate <= 0:
            return 1.0
        return max(0.0, (min(cost, self.capacity) - self.level(now)) / self.rate)

    def full_at(self, now: float) -> bool:
        """Whether the bucket would be full at ``now`` (so forgetting it changes nothing).

        Example::

            >>> b = TokenBucket(rate=10.0, capacity=10.0, now=0.0); b.take(5.0)
            >>> b.full_at(0.2), b.full_at(0.5)
            (False, True)
        """
        return self.tokens + (now - self.stamp) * self.rate >= self.capacity


@dataclass(slots=True)
class ThrottleStats:
    """What the throttle let through and refused, for test assertions.

    ``admitted`` / ``admitted_entities``: requests and entities admitted (query pages count
    their charged cost); ``throttled``: refusals by scope (``"partition"``, ``"account"``);
    ``timeouts``: how many refusals were answered ``500 OperationTimedOut``;
    ``by_partition`` / ``throttled_by_partition``: entities admitted and requests refused
    per ``(account, table, PartitionKey)``.

    Example::

        >>> ThrottleStats().throttled["partition"]
        0
    """

    admitted: int = 0
    admitted_entities: int = 0
    throttled: collections.Counter[str] = field(default_factory=collections.Counter)
    timeouts: int = 0
    by_partition: collections.Counter[PartitionId] = field(default_factory=collections.Counter)
    throttled_by_partition: collections.Counter[PartitionId] = field(
        default_factory=collections.Counter
    )


class Throttle:
    """Token buckets per partition and per account; thread-safe.

    Each bucket refills continuously at its rate and holds at most ``rate x burst`` tokens
    (``burst`` seconds, default 1 s); a bucket starts full. What a request costs:

    ==============================  =========================================================
    single-entity operation         1, to the account and to the entity's partition (the
    (insert, update, merge,         PartitionKey comes from the URL, or from the body for an
    delete, upsert, point read)     insert)
    entity group transaction        the number of operations (a batch of 100 costs 100), to the
                                    account and to the batch's partition
    query page                      admitted when the account bucket and the bucket of the
                                    partition the scan starts in (the continuation's, or the
                                    filter's lowest PartitionKey; unknown for a scan from the
                                    table's start) each hold at least 1 token; then charged what
                                    the page examined (``scanned``, at least 1): each returned
                                    entity to its partition, the examined but not returned ones
                                    to the partition the page started in, all of it to the
                                    account. The charge may overdraw the buckets, so the
                                    partition's next requests wait for the debt to be repaid.
    anything else (tables, ACLs,    1, to the account
    service properties)
    ==============================  =========================================================

    A request costing ``c`` is admitted when every bucket it draws on holds at least
    ``min(c, capacity)`` tokens; then ``c`` is taken from each (a batch larger than the
    capacity is admitted from a full bucket and leaves it in debt). So the admitted rate of a
    partition stays within ``rate x T + capacity`` entities over any interval ``T``. A refused
    request takes nothing and is answered ``503 ServerBusy`` with the service's texts
    (PROTOCOL.md 11.2): "The server is currently unable to receive requests. Please retry your
    request." for a partition, "Operations per second is over the account limit." for the
    account. No ``Retry-After`` header is sent (Azure Table storage sends none either).
    With ``ThrottleLimits.timeout_share`` a seeded share of refusals is answered ``500
    OperationTimedOut`` instead, the service's other answer to an overloaded partition.

    ``limits`` may be replaced at run time with :meth:`set_limits` (buckets restart full).
    ``clock`` is a monotonic clock in seconds (tests pass a :class:`FakeClock`).
    ``enabled`` switches throttling off without losing the configuration. ``seed`` (or
    ``rng``) drives the choice of ``OperationTimedOut`` refusals (``timeout_share``).
    ``refuse`` (default ``None``: the answers above) replaces the refusal: it gets the
    message and the seconds until the refusing bucket would admit the request, and returns
    the error to send (the Cosmos flavour's ``429`` with ``x-ms-retry-after-ms``).

    Example::

        >>> t = Throttle(ThrottleLimits(partition_rate=1, account_rate=None), clock=FakeClock())
        >>> t.admit("a", "t", "p", 1) is None
        True
        >>> t.admit("a", "t", "p", 1).code
        'ServerBusy'
    """

    def __init__(
        self,
        limits: ThrottleLimits | None = None,
        *,
        clock: Clock = time.monotonic,
        max_partitions: int = 100_000,
        seed: int | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._rng = rng if rng is not None else random.Random(seed)
        self._clock = clock
        self.limits = limits or ThrottleLimits()
        self.enabled = True
        self.stats = ThrottleStats()
        self._partitions: dict[PartitionId, TokenBucket] = {}
        self._accounts: dict[str, TokenBucket] = {}
        self._max_partitions = max_partitions
        self.refuse: Callable[[str, float], StubError] | None = None

    def set_limits(self, limits: ThrottleLimits) -> None:
        """Use new limits from now on; every bucket starts again full.

        Example::

            >>> t = Throttle(ThrottleLimits(partition_rate=10), clock=FakeClock())
            >>> t.charge("a", "t", [("p", 10)]); t.tokens("a", "t", "p")
            0.0
            >>> t.set_limits(ThrottleLimits(partition_rate=50)); t.tokens("a", "t", "p")
            50.0
        """
        with self._lock:
            self.limits = limits
            self._partitions.clear()
            self._accounts.clear()

    def reset(self) -> None:
        """Refill every bucket and zero the statistics.

        Example::

            >>> t = Throttle(ThrottleLimits(partition_rate=1), clock=FakeClock())
            >>> t.admit("a", "t", "p", 1), t.admit("a", "t", "p", 1).code
            (None, 'ServerBusy')
            >>> t.reset(); t.stats.throttled["partition"], t.admit("a", "t", "p", 1)
            (0, None)
        """
        with self._lock:
            self._partitions.clear()
            self._accounts.clear()
            self.stats = ThrottleStats()

    # -- buckets ----------------------------------------------------------------------------
    def _account_bucket(self, account: str, now: float) -> TokenBucket | None:
        limits = self.limits
        if limits.account_rate is None:
            return None
        bucket = self._accounts.get(account)
        if bucket is None:
            capacity = limits.account_capacity
            assert capacity is not None
            bucket = self._accounts[account] = TokenBucket(limits.account_rate, capacity, now)
        return bucket

    def _partition_bucket(self, pid: PartitionId, now: float) -> TokenBucket | None:
        limits = self.limits
        if limits.partition_rate is None:
            return None
        bucket = self._partitions.get(pid)
        if bucket is None:
            if len(self._partitions) >= self._max_partitions:
                self._prune(now)
            capacity = limits.partition_capacity
            assert capacity is not None
            bucket = self._partitions[pid] = TokenBucket(limits.partition_rate, capacity, now)
        return bucket

    def _prune(self, now: float) -> None:
        """Forget partition buckets that are full again (they behave like new ones)."""
        for pid in [p for p, b in self._partitions.items() if b.full_at(now)]:
            del self._partitions[pid]

    def _refusal(self, busy_message: str, wait: float = 0.0) -> StubError:
        """The answer to a refused request (ServerBusy, or sometimes OperationTimedOut;
        ``refuse``'s answer when set)."""
        if self.refuse is not None:
            return self.refuse(busy_message, wait)
        share = self.limits.timeout_share
        if share and self._rng.random() < share:
            self.stats.timeouts += 1
            return errors.operation_timed_out()
        return errors.server_busy(busy_message)

    # -- decisions -----------------------------------------------------------------------------
    def admit(
        self, account: str, table: str | None, partition_key: str | None, cost: int
    ) -> StubError | None:
        """Admit a request costing ``cost`` entities, or return the ``503 ServerBusy`` to send.

        ``table``/``partition_key`` ``None``: the account bucket only. Nothing is taken
        from any bucket when the request is refused.

        Example::

            >>> t = Throttle(ThrottleLimits(partition_rate=100), clock=FakeClock())
            >>> t.admit("acct", "orders", "2024-01", 100) is None   # a batch of 100
            True
            >>> t.admit("acct", "orders", "2024-01", 1).message[:22]
            'The server is currentl'
        """
        if not self.enabled:
            return None
        cost = max(1, cost)
        with self._lock:
            now = self._clock()
            pid: PartitionId | None = None
            pbucket = None
            if table is not None and partition_key is not None:
                pid = (account, table.lower(), partition_key)
                pbucket = self._partition_bucket(pid, now)
                if pbucket is not None and not pbucket.admits(cost, now):
                    self.stats.throttled["partition"] += 1
                    self.stats.throttled_by_partition[pid] += 1
                    return self._refusal(PARTITION_LIMIT_MESSAGE, pbucket.wait_for(cost, now))
            abucket = self._account_bucket(account, now)
            if abucket is not None and not abucket.admits(cost, now):
                self.stats.throttled["account"] += 1
                if pid is not None:
                    self.stats.throttled_by_partition[pid] += 1
                return self._refusal(ACCOUNT_LIMIT_MESSAGE, abucket.wait_for(cost, now))
            if pbucket is not None:
                pbucket.take(cost)
            if abucket is not None:
                abucket.take(cost)
            self.stats.admitted += 1
            self.stats.admitted_entities += cost
            if pid is not None:
                self.stats.by_partition[pid] += cost
            return None

    def admit_query(self, account: str) -> StubError | None:
        """Admission of a query page: the account bucket must hold at least one token.

        Nothing is taken; :meth:`charge` takes the page's cost once it is known.

        Example::

            >>> Throttle(ThrottleLimits(account_rate=1), clock=FakeClock()).admit_query("a")
        """
        if not self.enabled:
            return None
        with self._lock:
            now = self._clock()
            abucket = self._account_bucket(account, now)
            if abucket is not None and not abucket.admits(1, now):
                self.stats.throttled["account"] += 1
                return self._refusal(ACCOUNT_LIMIT_MESSAGE, abucket.wait_for(1, now))
            self.stats.admitted += 1
            return None

    def admit_query_partition(
        self, account: str, table: str, partition_key: str
    ) -> StubError | None:
        """The partition half of a query page's admission (after :meth:`admit_query`): the
        bucket of the partition the scan starts in must hold at least one token (not be in
        debt). A refusal takes nothing and withdraws the page's admission.

        Example::

            >>> t = Throttle(ThrottleLimits(partition_rate=10), clock=FakeClock())
            >>> t.charge("a", "t", [("p", 12)])
            >>> t.admit_query("a"), t.admit_query_partition("a", "t", "p").code
            (None, 'ServerBusy')
            >>> t.admit_query_partition("a", "t", "q") is None
            True
        """
        if not self.enabled:
            return None
        with self._lock:
            now = self._clock()
            pid = (account, table.lower(), partition_key)
            bucket = self._partition_bucket(pid, now)
            if bucket is None or bucket.admits(1, now):
                return None
            self.stats.admitted = max(0, self.stats.admitted - 1)
            self.stats.throttled["partition"] += 1
            self.stats.throttled_by_partition[pid] += 1
            return self._refusal(PARTITION_LIMIT_MESSAGE, bucket.wait_for(1, now))

    def charge(
        self, account: str, table: str | None, costs: Sequence[tuple[str | None, int]]
    ) -> None:
        """Take costs already incurred (a query page): ``(PartitionKey or None, entities)``.

        Buckets may go into debt. The account is charged the sum.

        Example::

            >>> t = Throttle(ThrottleLimits(partition_rate=10), clock=FakeClock())
            >>> t.charge("a", "t", [("p", 15)]); t.tokens("a", "t", "p")
            -5.0
        """
        if not self.enabled:
            return
        with self._lock:
            now = self._clock()
            total = 0
            for pk, cost in costs:
                if cost <= 0:
                    continue
                total += cost
                if table is None or pk is None:
                    continue
                pid = (account, table.lower(), pk)
                self.stats.by_partition[pid] += cost
                pbucket = self._partition_bucket(pid, now)
                if pbucket is not None:
                    pbucket.level(now)
                    pbucket.take(cost)
            abucket = self._account_bucket(account, now)
            if abucket is not None and total:
                abucket.level(now)
                abucket.take(total)
            self.stats.admitted_entities += total

    def tokens(
        self, account: str, table: str | None = None, partition_key: str | None = None
    ) -> float | None:
        """The tokens a bucket holds now (``None``: that limit is off). For tests and logs.

        Example::

            >>> Throttle(clock=FakeClock()).tokens("a", "t", "p")
            2000.0
        """
        with self._lock:
            now = self._clock()
            if table is None or partition_key is None:
                bucket = self._account_bucket(account, now)
            else:
                bucket = self._partition_bucket((account, table.lower(), partition_key), now)
            return None if bucket is None else bucket.level(now)
