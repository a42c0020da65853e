"""Flow control for bulk loads: an AIMD limit (additive increase, multiplicative
decrease), a client-side token bucket that paces entities per second, a meter of the
recent success rate, and a latency tracker that notices latency rising over its moving
baseline. All take an injectable monotonic clock, so they are tested on a fake one.

Example::

    >>> now = [0.0]
    >>> limit = Aimd(4, minimum=1, maximum=10, increase=1, clock=lambda: now[0])
    >>> for _ in range(4):        # one window of 4 successes: +1
    ...     limit.grow()
    >>> limit.value
    5.0
    >>> limit.cut(), limit.value  # throttled: x0.7 ...
    (True, 3.5)
    >>> limit.cut()               # ... once per hold period
    False
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable

__all__ = ["Aimd", "LatencyTracker", "RateLimiter", "RateMeter"]

Clock = Callable[[], float]


class Aimd:
    """A limit that grows by ``increase`` per window and shrinks by ``decrease`` on
    congestion (TCP's AIMD): :meth:`grow` adds ``increase * amount / value`` (so a
    window of ``value`` units of success adds ``increase``), :meth:`cut` multiplies by
    ``decrease``, at most once per ``hold`` seconds (one congestion episode, many
    refused requests, is one cut). ``value`` stays within ``[minimum, maximum]``.

    After a cut, ``ceiling`` remembers where the limit was cut from (the measured rate
    given as ``to``, or the value): below it, a window adds at least ``approach`` times
    the gap (the limit returns quickly to just under the level that was congested), and
    beyond it ``increase``, doubled with each further window (a probe, slow at first, that
    finds a higher level within a few windows when the old one was wrong). So the limit
    spends its time near the congestion level instead of in a wide saw-tooth under it
    (the idea of TCP CUBIC).

    Used for the number of transactions in flight (units: requests) and for entity rates
    (units: entities; a window of ``value`` entities at ``value`` entities/s lasts one
    second, so a rate grows by ``increase`` entities/s per second).

    Example::

        >>> rate = Aimd(100, minimum=10, maximum=200, increase=50, clock=lambda: 0.0)
        >>> rate.grow(100); rate.value
        150.0
        >>> rate.cut(to=80.0); rate.value     # a cut may start from a measured rate
        True
        56.0
    """

    __slots__ = (
        "_base",
        "_clock",
        "_hold_until",
        "_probes",
        "_used",
        "approach",
        "ceiling",
        "cuts",
        "decrease",
        "hold",
        "increase",
        "maximum",
        "minimum",
        "value",
    )

    def __init__(
        self,
        initial: float,
        *,
        minimum: float,
        maximum: float,
        increase: float,
        decrease: float = 0.7,
        hold: float = 1.0,
        approach: float = 0.0,
        clock: Clock = time.monotonic,
    ) -> None:
        if not 0 < minimum <= maximum:
            raise ValueError(f"need 0 < minimum <= maximum, got {minimum} and {maximum}")
        if not 0 < decrease < 1:
            raise ValueError(f"decrease must be between 0 and 1, got {decrease}")
        self.minimum = float(minimum)
        self.maximum = float(maximum)
        self.value = min(max(float(initial), self.minimum), self.maximum)
        self.increase = float(increase)
        self.decrease = float(decrease)
        self.hold = float(hold)
        self.approach = float(approach)
        self.ceiling: float | None = None
        self.cuts = 0
        self._clock = clock
        self._hold_until = float("-inf")
        self._base = self.value  # the window: the value when it began
        self._used = 0.0
        self._probes = 0  # windows begun above the ceiling

    def grow(self, amount: float = 1.0) -> None:
        """Count ``amount`` units of success: additive increase (none while a cut holds).

        Example::

            >>> a = Aimd(2, minimum=1, maximum=9, increase=1, clock=lambda: 0.0)
            >>> a.grow(); a.grow(); a.value
            3.0
        """
        if self._clock() < self._hold_until:
            return
        step = self.increase
        if self.ceiling is not None and self.approach:
            if self._base < self.ceiling:
                step = max(step, (self.ceiling - self._base) * self.approach)
            else:
                step *= 2.0 ** min(self._probes, 10)
        self.value = min(self.maximum, self.value + step * amount / self._base)
        self._used += amount
        if self._used >= self._base:
            self._used -= self._base
            self._base = self.value
            if self.ceiling is not None and self._base >= self.ceiling:
                self._probes += 1

    def cut(self, to: float | None = None) -> bool:
        """Congestion: multiply the limit (or ``to``, a measured rate, when lower) by
        ``decrease``; ``False`` (nothing changed) while an earlier cut holds.

        Example::

            >>> a = Aimd(10, minimum=1, maximum=10, increase=1, decrease=0.5, clock=lambda: 0.0)
            >>> a.cut(), a.value
            (True, 5.0)
        """
        now = self._clock()
        if now < self._hold_until:
            return False
        base = self.value if to is None else min(self.value, max(to, self.minimum))
        self.ceiling = base
        self.value = max(self.minimum, base * self.decrease)
        self._hold_until = now + self.hold
        self._base = self.value
        self._used = 0.0
        self._probes = 0
        self.cuts += 1
        return True


class RateLimiter:
    """A client-side token bucket in entities per second, shaped like the service's: it
    holds at most ``rate x burst`` tokens, a request of ``cost`` entities may go when the
    bucket holds ``min(cost, capacity)`` and then takes all of ``cost`` (the bucket may go
    into debt, as the service's does for a transaction larger than its capacity).

    Example::

        >>> lim = RateLimiter(100, now=0.0)
        >>> lim.delay(100, 0.0)               # starts full
        0.0
        >>> lim.take(100, 0.0); lim.delay(50, 0.0)
        0.5
    """

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, *, burst: float = 1.0, now: float) -> None:
        self.rate = float(rate)
        self.burst = float(burst)
        self.tokens = self.rate * self.burst
        self.stamp = now

    def _level(self, now: float) -> float:
        return min(self.rate * self.burst, self.tokens + (now - self.stamp) * self.rate)

    def delay(self, cost: float, now: float) -> float:
        """Seconds until a request of ``cost`` entities may go (0.0: now)."""
        need = min(cost, self.rate * self.burst)
        level = self._level(now)
        return 0.0 if level >= need else (need - level) / self.rate

    def binding(self, now: float) -> bool:
        """Whether the bucket is at most half full: requests go at about its rate, so
        this limit is what holds them back (a limit that nothing reaches must not grow:
        growing it would only mean it no longer limits when it becomes the bottleneck).

        Example::

            >>> lim = RateLimiter(100, now=0.0)
            >>> lim.binding(0.0)
            False
            >>> lim.take(80, 0.0); lim.binding(0.0)
            True
        """
        return self._level(now) <= self.rate * self.burst / 2

    def take(self, cost: float, now: float) -> None:
        """Charge ``cost`` entities sent at ``now``."""
        self.tokens = self._level(now) - cost
        self.stamp = now

    def empty(self, now: float, *, hold: float = 0.0) -> None:
        """Start again from an empty bucket (the service said its own is empty: a request
        was refused), so what was saved up is not sent at once into the refusal; with
        ``hold`` seconds of debt, nothing goes for that long (a back-off of all requests).

        Example::

            >>> lim = RateLimiter(100, now=0.0); lim.empty(0.0); lim.delay(50, 0.0)
            0.5
            >>> lim.empty(0.0, hold=2.0); lim.delay(50, 0.0)
            2.5
        """
        self.tokens = -hold * self.rate
        self.stamp = now

    def set_rate(self, rate: float, now: float) -> None:
        """Change the rate (what is in the bucket is kept, capped to the new capacity)."""
        self.tokens = self._level(now)
        self.stamp = now
        self.rate = float(rate)
        self.tokens = min(self.tokens, self.rate * self.burst)


class RateMeter:
    """Successes per second over the last ``span`` seconds (in ``slot``-second slots).

    Example::

        >>> m = RateMeter(span=1.0, slot=0.1)
        >>> for t in range(10):
        ...     m.add(10, t / 10)
        >>> m.rate(0.95)
        100.0
    """

    __slots__ = ("_slots", "slot", "span", "total")

    def __init__(self, *, span: float = 2.0, slot: float = 0.1) -> None:
        self.span = span
        self.slot = slot
        self.total = 0
        self._slots: collections.deque[list[int]] = collections.deque()

    def _trim(self, now: float) -> None:
        oldest = math.floor((now - self.span) / self.slot + 1e-9) + 1
        while self._slots and self._slots[0][0] < oldest:
            self._slots.popleft()

    def add(self, count: int, now: float) -> None:
        """Count ``count`` successes at ``now``."""
        self.total += count
        number = int(now / self.slot + 1e-9)
        if self._slots and self._slots[-1][0] == number:
            self._slots[-1][1] += count
        else:
            self._slots.append([number, count])
        self._trim(now)

    def rate(self, now: float, *, since: float | None = None) -> float:
        """The rate over the last ``span`` seconds (or since ``since``, when later)."""
        self._trim(now)
        window = self.span if since is None else min(self.span, max(now - since, self.slot))
        return sum(c for _, c in self._slots) / window


class LatencyTracker:
    """Notices latency rising: a fast moving average of request latencies compared with a
    slow baseline (a minimum that drifts up slowly, so a lasting change of the normal is
    learned). :meth:`rising` once ``samples`` latencies were seen and the recent average
    is over ``factor`` times the baseline.

    Example::

        >>> lat = LatencyTracker(factor=2.0, samples=3)
        >>> for s in (0.01, 0.01, 0.01, 0.01):
        ...     lat.add(s)
        >>> lat.rising()
        False
        >>> for s in (0.05, 0.05, 0.05, 0.05):
        ...     lat.add(s)
        >>> lat.rising()
        True
    """

    __slots__ = ("baseline", "count", "factor", "recent", "samples")

    def __init__(self, *, factor: float = 3.0, samples: int = 10) -> None:
        self.factor = factor
        self.samples = samples
        self.baseline = float("inf")
        self.recent = 0.0
        self.count = 0

    def add(self, seconds: float) -> None:
        """Record one request's latency."""
        self.count += 1
        self.recent = seconds if self.count == 1 else 0.7 * self.recent + 0.3 * seconds
        if seconds < self.baseline:
            self.baseline = seconds
        else:
            self.baseline += (seconds - self.baseline) * 0.01

    def rising(self) -> bool:
        """Whether recent latency is over ``factor`` times the baseline."""
        return self.count >= self.samples and self.recent > self.factor * self.baseline
