"""A bulk load's pacing: how fast it sends to the account and to each partition, how many
transactions it keeps in flight, and how it answers the service's pushback.

* :class:`Pace` is one scope's pace (the account's, or one partition's): an AIMD rate in
  entities per second (:class:`azt._core.bulk.control.Aimd`), the client-side token
  bucket that holds requests to it, and the meter of what the service admitted.
* :class:`Pacing` is the load's: the account's pace, the partitions' (one made by
  :meth:`Pacing.partition` for each), the number of transactions in flight, the latency
  tracker that cuts it, and what a partition's cut was made from (partitions share a
  target). The loader (:mod:`azt._core.bulk.loader`) asks it how long a transaction must
  wait, tells it what was sent, admitted and refused, and takes the wait it answers.

Example::

    >>> from azt._core.bulk.outcomes import BulkOptions
    >>> now = [0.0]
    >>> options = BulkOptions(partition_rate=100, account_rate=1000)
    >>> pacing = Pacing(options, lambda: now[0], backoff_cap=90.0)
    >>> part = pacing.partition(0.0)
    >>> part.delay(100, 0.0), pacing.account.delay(100, 0.0)    # both buckets start full
    (0.0, 0.0)
    >>> part.take(100, 0.0), pacing.account.take(100, 0.0)      # bound: the bucket is low
    (True, False)
    >>> part.delay(100, 0.0)                                    # a second of its pace
    1.0
"""

from __future__ import annotations

from collections.abc import Callable

from azt._core.bulk.control import Aimd, LatencyTracker, RateLimiter, RateMeter
from azt._core.bulk.outcomes import BulkOptions
from azt._core.wire.batch import MAX_BATCH_OPERATIONS

__all__ = ["Pace", "Pacing"]

Clock = Callable[[], float]
Uniform = Callable[[float, float], float]

#: After a cut of a pace, further throttling answers (of requests already under way)
#: are one episode for this long.
PACE_HOLD = 0.25

#: After a cut, a pace closes this share of the gap to the rate it was cut from per
#: second of traffic at that pace ...
APPROACH = 0.5

#: ... and above that rate probes by this share of it per second.
PROBE = 0.03


class Pace:
    """One scope's pace: ``rate``, an :class:`Aimd` limit in entities per second between
    ``rate / 1000`` and the ``maximum`` given (cut by ``decrease``, once per
    :data:`PACE_HOLD`; after a cut it returns to the rate it was cut from and then probes
    above it, :data:`APPROACH`, :data:`PROBE`); ``limiter``, the token bucket that holds
    requests to that rate; ``meter``, the entities the service admitted over the last
    second (from ``measured_from`` on, when that is later: the first success after a
    back-off, when the service's bucket was empty and a longer span would dilute the rate);
    ``refusals``, the refusals in a row that measured nothing (:meth:`back_off`).

    Example::

        >>> pace = Pace(200, decrease=0.85, clock=lambda: 0.0, now=0.0)
        >>> pace.take(150, 0.0)             # the bucket is at most half full: it binds
        True
        >>> pace.admitted(150, 0.0, bound=True); pace.admitted_rate(0.0)
        150.0
    """

    __slots__ = ("backoff_until", "limiter", "measured_from", "meter", "rate", "refusals")

    def __init__(self, maximum: float, *, decrease: float, clock: Clock, now: float) -> None:
        self.rate = Aimd(
            maximum,
            minimum=max(1.0, maximum / 1000),
            maximum=maximum,
            increase=maximum * PROBE,
            decrease=decrease,
            hold=PACE_HOLD,
            approach=APPROACH,
            clock=clock,
        )
        self.limiter = RateLimiter(maximum, now=now)
        self.meter = RateMeter(span=1.0)
        self.refusals = 0
        self.backoff_until = float("-inf")
        self.measured_from = float("-inf")

    @property
    def value(self) -> float:
        """The pace now, in entities per second."""
        return self.rate.value

    def delay(self, n: int, now: float) -> float:
        """Seconds until ``n`` entities may go at this pace (0.0: now)."""
        return self.limiter.delay(n, now)

    def take(self, n: int, now: float) -> bool:
        """Charge ``n`` entities sent at ``now``; whether this pace is what holds the
        requests back (its bucket is being emptied: only then does a success grow it)."""
        self.limiter.take(n, now)
        return self.limiter.binding(now)

    def admitted(self, n: int, now: float, *, bound: bool) -> None:
        """``n`` entities the service admitted: metered, and the pace grows when it held
        them back (``bound``, :meth:`take`'s answer when they were sent)."""
        if bound:
            self.rate.grow(n)
            self.limiter.set_rate(self.rate.value, now)
        self.meter.add(n, now)
        if self.refusals:  # the first success after a back-off: the meter starts here
            self.refusals = 0
            self.measured_from = now

    def admitted_rate(self, now: float) -> float:
        """Entities per second the service admitted over the last second, or since the
        first success after a back-off when that is later (at least 0.1 s)."""
        return self.meter.rate(now, since=self.measured_from)

    def cut(self, to: float, now: float) -> bool:
        """Cut the pace from ``to`` entities per second (once per episode); the bucket
        starts again empty, as the service's is. Whether it was cut."""
        if not self.rate.cut(to=to):
            return False
        self.rate.increase = self.rate.value * PROBE
        self.limiter.set_rate(self.rate.value, now)
        self.limiter.empty(now)  # the service's bucket is empty: so is ours
        return True

    def back_off(self, n: int, now: float, uniform: Uniform, cap: float) -> float:
        """A refusal that measured nothing: how long a transaction of ``n`` entities waits.
        The pace is left as it is; the wait is exponential over such refusals in a row
        (:meth:`admitted` ends the row), jittered by +-20 % so that refused requests do not
        all return at once: ``base x (2**k - 1) x U(0.8, 1.2)`` for the ``k``-th, where
        ``base`` is the time ``n`` entities take at the pace, at most ``cap`` and at least
        ``base`` (the pace's own wait). Requests to this scope wait with it (its bucket is
        in debt until then); a refusal of a request sent before the back-off (one under
        way) waits for its end and does not count again.

        Example::

            >>> pace = Pace(1000, decrease=0.85, clock=lambda: 0.0, now=0.0)
            >>> mid = lambda lo, hi: (lo + hi) / 2    # no jitter: the middle of its range
            >>> [pace.back_off(100, t, mid, cap=1.0) for t in (0.0, 1.0, 2.0, 3.0, 4.0)]
            [0.1, 0.30000000000000004, 0.7000000000000001, 1.0, 1.0]
            >>> pace.back_off(100, 4.5, mid, cap=1.0)  # under way: waits for the back-off
            0.5
            >>> pace.admitted(100, 5.0, bound=False); pace.back_off(100, 6.0, mid, cap=1.0)
            0.1
        """
        if now < self.backoff_until:
            return self.backoff_until - now
        self.refusals += 1
        base = n / self.rate.value
        step = base * (2.0 ** min(self.refusals, 32) - 1.0) * uniform(0.8, 1.2)
        wait = min(max(step, base), max(cap, base))
        self.backoff_until = now + wait
        # the bucket holds n entities again when the wait is over, not before
        self.limiter.empty(now, hold=wait - base)
        return wait


class Pacing:
    """A bulk load's pacing: ``account``, the account's :class:`Pace` (at most
    ``options.account_rate``); :meth:`partition`, a new partition's (at most
    ``options.partition_rate``); ``concurrency``, the limit of transactions in flight (an
    :class:`Aimd` between 1 and ``options.max_concurrency``, or ``options.concurrency``
    fixed); ``latency``, the tracker whose rise cuts it; ``partition_hint``, the rate the
    last partition's cut was made from; ``backoff_cap``, the longest back-off after
    refusals that measured nothing (the client's retry policy's ``maximum``).

    Example::

        >>> from azt._core.bulk.outcomes import BulkOptions
        >>> pacing = Pacing(BulkOptions(concurrency=4), lambda: 0.0, backoff_cap=90.0)
        >>> pacing.room(), pacing.account.value
        (4, 20000.0)
    """

    __slots__ = (
        "_clock",
        "_options",
        "account",
        "backoff_cap",
        "concurrency",
        "latency",
        "partition_hint",
    )

    def __init__(self, options: BulkOptions, clock: Clock, *, backoff_cap: float) -> None:
        self._options = options
        self._clock = clock
        self.backoff_cap = backoff_cap
        self.account = Pace(
            options.account_rate, decrease=options.decrease, clock=clock, now=clock()
        )
        fixed = options.concurrency
        self.concurrency = Aimd(
            fixed or min(options.initial_concurrency, options.max_concurrency),
            minimum=fixed or 1,
            maximum=fixed or options.max_concurrency,
            increase=0.0 if fixed else 1.0,
            decrease=0.7,
            hold=1.0,
            clock=clock,
        )
        self.latency = LatencyTracker(factor=options.latency_factor)
        #: the rate the last partition cut was made from (a partition's target, learned)
        self.partition_hint: float | None = None

    def partition(self, now: float) -> Pace:
        """A new partition's pace, at ``options.partition_rate``."""
        options = self._options
        return Pace(options.partition_rate, decrease=options.decrease, clock=self._clock, now=now)

    def room(self) -> int:
        """How many transactions may be in flight now."""
        return int(self.concurrency.value)

    def succeeded(
        self,
        part: Pace,
        n: int,
        now: float,
        *,
        took: float,
        account_bound: bool,
        partition_bound: bool,
    ) -> None:
        """A transaction of ``n`` entities to ``part`` succeeded in ``took`` seconds: the
        latency of a large one is tracked (rising: the concurrency is cut, once an
        episode), the concurrency grows, and each pace meters it (and grows when it held
        the transaction back)."""
        if n >= MAX_BATCH_OPERATIONS // 2:  # a small one's latency says little
            latency = self.latency
            latency.add(took)
            if latency.rising() and self.concurrency.cut():
                latency.baseline *= 1.5  # one cut per episode: relearn from here
        self.concurrency.grow()
        self.account.admitted(n, now, bound=account_bound)
        part.admitted(n, now, bound=partition_bound)

    def refused(self, part: Pace, scope: str, n: int, now: float, uniform: Uniform) -> float:
        """The service refused a transaction of ``n`` entities to ``part``, for the
        account (``scope`` ``"account"``) or for the partition. Return how long the
        transaction waits.

        When the service admitted some of ours over the last second, that is what the
        scope holds for us: its pace is cut from that rate (an account's refusal also
        cuts the concurrency), and the transaction waits for room in the cut pace,
        jittered (so refused partitions do not all return at once).

        When it admitted none (before the first success, or after an idle spell), the
        refusal says that the service's bucket is empty, not how much it holds for us:
        something else may be drawing on the same budget (a migration's reads count
        against the account and the partitions as its writes do). So the pace is not cut
        from a guess (a guess, cut again with each refusal, would fall far below the
        budget and take long to climb back); the transaction backs off in time,
        exponentially over such refusals in a row (:meth:`Pace.back_off`; for the
        account, every partition with it), and the first success measures the rate. A
        partition with a learned target (``partition_hint``: what another partition's
        cut was made from, partitions share a target) is brought down to it first.

        Example::

            >>> from azt._core.bulk.outcomes import BulkOptions
            >>> pacing = Pacing(BulkOptions(account_rate=1000), lambda: 0.0, backoff_cap=90.0)
            >>> mid = lambda lo, hi: (lo + hi) / 2
            >>> part = pacing.partition(0.0)
            >>> pacing.refused(part, "account", 100, 0.0, mid), pacing.account.value
            (0.1, 1000.0)
            >>> pacing.account.admitted(300, 0.5, bound=True)    # measured from here
            >>> round(pacing.refused(part, "account", 100, 1.0, mid), 3), pacing.account.value
            (0.196, 510.0)
        """
        account = scope == "account"
        pace = self.account if account else part
        admitted = pace.admitted_rate(now)
        if admitted > 0:
            if account:
                self.concurrency.cut()
            if pace.cut(admitted, now) and not account:
                self.partition_hint = pace.rate.ceiling
            return n / pace.value * uniform(0.5, 1.5)
        hint = None if account else self.partition_hint
        if hint is not None and pace.value > hint:
            pace.cut(hint, now)
        return pace.back_off(n, now, uniform, self.backoff_cap)
