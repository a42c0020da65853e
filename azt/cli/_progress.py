"""A small progress bar for stderr (no dependency: one line, redrawn with a carriage return).

Example::

    >>> import io
    >>> buf = io.StringIO()
    >>> bar = Progress("import movies", stream=buf, total_bytes=100, enabled=True, interval=0)
    >>> bar.advance(entities=10, nbytes=50)
    >>> bar.close()
    >>> "50%" in buf.getvalue() and "10 entities" in buf.getvalue()
    True
"""

from __future__ import annotations

import time
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 24


class Progress:
    """Counts entities (and input bytes done, when the total size is known: the percentage)
    and redraws at most every ``interval`` seconds; :meth:`close` draws the final state and
    ends the line. The caller decides what counts as done: ``azt import`` advances both
    when the service has answered for a line, not when it was read.

    Disabled bars (``enabled=False``) count but never write.

    Example::

        >>> import io
        >>> bar = Progress("export t", stream=io.StringIO(), enabled=False)
        >>> bar.advance(entities=3)
        >>> bar.entities
        3
    """

    def __init__(
        self,
        label: str,
        *,
        stream: TextIO,
        enabled: bool,
        total_bytes: int | None = None,
        interval: float = 0.1,
    ) -> None:
        self.label = label
        self.stream = stream
        self.enabled = enabled
        self.total_bytes = total_bytes if total_bytes else None
        self.interval = interval
        self.entities = 0
        self.nbytes = 0
        #: entities per second now (set by a bulk load; else the average is shown)
        self.current_rate: float | None = None
        #: transactions in flight allowed now, and how many were throttled (bulk loads)
        self.concurrency: int | None = None
        self.throttled = 0
        self._start = time.monotonic()
        self._last_draw = float("-inf")
        self._width = 0
        #: more to show after the rate (the export sets ``"concurrency 8"``); "" for nothing
        self.detail = ""

    def advance(self, *, entities: int = 0, nbytes: int = 0) -> None:
        """Count ``entities`` more entities and ``nbytes`` more input bytes done."""
        self.entities += entities
        self.nbytes += nbytes
        if self.enabled:
            now = time.monotonic()
            if now - self._last_draw >= self.interval:
                self._last_draw = now
                self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The text of the bar as it stands.

        Example::

            >>> import io
            >>> Progress("export t", stream=io.StringIO(), enabled=False).line(0.0)[:8]
            'export t'
        """
        now = time.monotonic() if now is None else now
        elapsed = max(now - self._start, 1e-9)
        rate = self.entities / elapsed if self.current_rate is None else self.current_rate
        parts = [self.label]
        if self.total_bytes is not None:
            frac = min(self.nbytes / self.total_bytes, 1.0)
            filled = int(frac * _WIDTH)
            # Rounded down: 99.5% done is not yet 100%.
            parts.append(f"[{'#' * filled}{'.' * (_WIDTH - filled)}] {int(frac * 100):3d}%")
        parts.append(f"{self.entities:,} entities")
        parts.append(f"{rate:,.0f}/s")
        if self.concurrency is not None:
            parts.append(f"concurrency {self.concurrency}")
            if self.throttled:
                parts.append(f"{self.throttled:,} throttled")
        if self.detail:
            parts.append(self.detail)
        return "  ".join(parts)

    def bulk(self, *, rate: float, concurrency: int, throttled: int) -> None:
        """Show a bulk load's current rate, concurrency and throttled requests (drawn
        with the next :meth:`advance`, or now when the interval has passed).

        Example::

            >>> import io
            >>> bar = Progress("import t", stream=io.StringIO(), enabled=False)
            >>> bar.bulk(rate=950.0, concurrency=6, throttled=2)
            >>> bar.line(0.0).split("  ")[2:]
            ['950/s', 'concurrency 6', '2 throttled']
        """
        self.current_rate = rate
        self.concurrency = concurrency
        self.throttled = throttled
        self.advance()

    def _draw(self, now: float) -> None:
        text = self.line(now)
        pad = " " * max(self._width - len(text), 0)
        self._width = len(text)
        self.stream.write(f"\r{text}{pad}")
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line (nothing when disabled)."""
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
