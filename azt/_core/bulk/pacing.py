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
    >>> pacing = Pacing(BulkOptions(partition_rate=100, account_rate=1000), lambda: now[0])
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
    second.

    Example::

        >>> pace = Pace(200, decrease=0.85, clock=lambda: 0.0, now=0.0)
        >>> pace.take(150, 0.0)             # the bucket is at most half full: it binds
        True
        >>> pace.admitted(150, 0.0, bound=True); pace.meter.rate(0.0)
        150.0
    """

    __slots__ = ("limiter", "meter", "rate")

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

    def cut(self, to: float, now: float) -> bool:
        """Cut the pace from ``to`` entities per second (once per episode); the bucket
        starts again empty, as the service's is. Whether it was cut."""
        if not self.rate.cut(to=to):
            return False
        self.rate.increase = self.rate.value * PROBE
        self.limiter.set_rate(self.rate.value, now)
        self.limiter.empty(now)  # the service's bucket is empty: so is ours
        return True


class Pacing:
    """A bulk load's pacing: ``account``, the account's :class:`Pace` (at most
    ``options.account_rate``); :meth:`partition`, a new partition's (at most
    ``options.partition_rate``); ``concurrency``, the limit of transactions in flight (an
    :class:`Aimd` between 1 and ``options.max_concurrency``, or ``options.concurrency``
    fixed); ``latency``, the tracker whose rise cuts it; ``partition_hint``, the rate the
    last partition's cut was made from.

    Example::

        >>> from azt._core.bulk.outcomes import BulkOptions
        >>> pacing = Pacing(BulkOptions(concurrency=4), lambda: 0.0)
        >>> pacing.room(), pacing.account.value
        (4, 20000.0)
    """

    __slots__ = ("_clock", "_options", "account", "concurrency", "latency", "partition_hint")

    def __init__(self, options: BulkOptions, clock: Clock) -> None:
        self._options = options
        self._clock = clock
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
        account (``scope`` ``"account"``: its pace and the concurrency are cut) or for the
        partition (its pace is cut). Return how long the transaction waits: room for it in
        the cut pace, jittered (so refused partitions do not all return at once).

        A pace is cut from what the service admitted over the last second; with no
        success in it, from what another partition was cut from (partitions share a
        target), or by a factor 4 at most."""
        if scope == "account":
            pace, hint = self.account, None
            self.concurrency.cut()
        else:
            pace, hint = part, self.partition_hint
        admitted = pace.meter.rate(now)
        if admitted <= 0:
            admitted = hint if hint is not None else pace.value / 4
        if pace.cut(admitted, now) and scope != "account":
            self.partition_hint = pace.rate.ceiling
        return n / pace.value * uniform(0.5, 1.5)
