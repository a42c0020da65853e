"""Checkpoints of a bulk load: which input positions the service has acknowledged, kept
as the contiguous prefix done plus the done ranges above it, and stored so that an
interrupted load resumes without redoing acknowledged work. :class:`FileCheckpoint`
writes a small JSON file atomically (a temporary file, fsync, then rename); any object
with ``load()`` and ``save(state)`` (:class:`CheckpointStore`) can keep it elsewhere.

Example::

    >>> done = DonePositions()
    >>> for i in (0, 1, 2, 5, 6, 9):
    ...     done.add(i)
    >>> done.state()
    {'version': 1, 'done_below': 3, 'ranges': [[5, 7], [9, 10]]}
    >>> 6 in done, 7 in done
    (True, False)
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from azt._errors import ValidationError

__all__ = ["CheckpointStore", "DonePositions", "FileCheckpoint", "OrderedSaves"]

_VERSION = 1


@runtime_checkable
class CheckpointStore(Protocol):
    """Where a bulk load keeps its checkpoint: ``load()`` returns the last saved state
    (a JSON-able dict) or ``None``; ``save(state)`` stores one durably (it must not be
    possible to read back a half-written state).

    Example::

        class MemoryStore:
            def __init__(self): self.state = None
            def load(self): return self.state
            def save(self, state): self.state = state
    """

    def load(self) -> dict[str, Any] | None:
        """The last saved state, or ``None`` when there is none.

        Example::

            state = store.load()   # None before the first save
        """
        ...

    def save(self, state: dict[str, Any]) -> None:
        """Store ``state`` durably, replacing the previous one.

        Example::

            store.save({"version": 1, "done_below": 100, "ranges": []})
        """
        ...


class FileCheckpoint:
    """A checkpoint kept in a JSON file at ``path``: ``save`` writes a temporary file in
    the same directory, flushes it to disk and renames it over ``path``, so a load killed
    at any moment leaves the previous checkpoint or the new one, never a mix.

    Example::

        from azt.bulk import FileCheckpoint, load
        result = await load(table, rows, checkpoint=FileCheckpoint("movies.ckpt"))
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, Any] | None:
        """The saved state, or ``None`` when the file does not exist.

        Example::

            state = FileCheckpoint("load.ckpt").load()
        """
        try:
            text = self.path.read_text("utf-8")
        except FileNotFoundError:
            return None
        try:
            state = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"checkpoint {str(self.path)!r} is not JSON: {exc}") from None
        if not isinstance(state, dict):
            raise ValidationError(f"checkpoint {str(self.path)!r} is not a JSON object")
        return state

    def save(self, state: dict[str, Any]) -> None:
        """Write ``state`` atomically (temporary file, fsync, rename).

        Example::

            FileCheckpoint("load.ckpt").save({"version": 1, "done_below": 0, "ranges": []})
        """
        directory = self.path.parent
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(state, f, separators=(",", ":"))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


class OrderedSaves:
    """Saves to one :class:`CheckpointStore` from async code, each on a worker thread, one
    at a time and in the order asked.

    A save's thread runs to its end even when the coroutine that started it is cancelled;
    the next save waits for it, so two saves never race and the store is never left at
    an older state than the last one asked.

    Example::

        saves = OrderedSaves(FileCheckpoint("load.ckpt"))
        await saves.save({"version": 1, "done_below": 10, "ranges": []})
        await saves.failed()  # False: the last save reached the store
    """

    def __init__(self, store: CheckpointStore) -> None:
        self.store = store
        self._running: asyncio.Future[None] | None = None

    async def failed(self) -> bool:
        """Wait for the save in progress, if any; whether the last save raised (its state
        did not reach the store).

        Example::

            if await saves.failed():
                await saves.save(state)  # try again
        """
        running = self._running
        if running is None:
            return False
        await asyncio.wait([running])
        return not running.cancelled() and running.exception() is not None

    async def save(self, state: dict[str, Any]) -> None:
        """Save ``state`` after the save in progress; raises what the store raised.

        Example::

            await saves.save({"version": 1, "done_below": 0, "ranges": []})
        """
        await self.failed()
        self._running = asyncio.ensure_future(asyncio.to_thread(self.store.save, state))
        await asyncio.shield(self._running)


def _start(item: list[int]) -> int:
    return item[0]


class DonePositions:
    """Input positions acknowledged by the service: every position below ``done_below``
    plus sorted, disjoint half-open ``[start, end)`` ranges above it. Adding positions
    in roughly increasing order keeps it small (the ranges close as the prefix grows).

    Example::

        >>> d = DonePositions.from_state({"version": 1, "done_below": 2, "ranges": [[4, 6]]})
        >>> d.add(2); d.add(3); d.done_below, d.ranges
        (6, [])
    """

    __slots__ = ("done_below", "ranges")

    def __init__(self) -> None:
        self.done_below = 0
        self.ranges: list[list[int]] = []

    @classmethod
    def from_state(cls, state: dict[str, Any] | None) -> DonePositions:
        """Positions from a saved state (``None``: nothing done); a state that is not one
        raises :class:`azt.ValidationError` (a load must not skip what it cannot read)."""
        done = cls()
        if state is None:
            return done
        if state.get("version") != _VERSION:
            raise ValidationError(f"unknown checkpoint version {state.get('version')!r}")
        below = state.get("done_below")
        ranges = state.get("ranges")
        if not isinstance(below, int) or below < 0 or not isinstance(ranges, list):
            raise ValidationError("a checkpoint needs done_below (an int >= 0) and ranges")
        done.done_below = below
        for item in ranges:
            if (
                not isinstance(item, list)
                or len(item) != 2
                or not all(isinstance(x, int) for x in item)
                or not below < item[0] < item[1]
            ):
                raise ValidationError(f"a checkpoint range must be [start, end), got {item!r}")
            for i in range(item[0], item[1]):
                done.add(i)
        return done

    def __contains__(self, position: int) -> bool:
        if position < self.done_below:
            return True
        i = bisect.bisect_right(self.ranges, position, key=_start) - 1
        return i >= 0 and self.ranges[i][0] <= position < self.ranges[i][1]

    def add(self, position: int) -> None:
        """Mark ``position`` done."""
        if position in self:
            return
        ranges = self.ranges
        i = bisect.bisect_right(ranges, position, key=_start)
        joins_left = i > 0 and ranges[i - 1][1] == position
        joins_right = i < len(ranges) and ranges[i][0] == position + 1
        if joins_left and joins_right:
            ranges[i - 1][1] = ranges[i][1]
            del ranges[i]
        elif joins_left:
            ranges[i - 1][1] = position + 1
        elif joins_right:
            ranges[i][0] = position
        else:
            ranges.insert(i, [position, position + 1])
        if position == self.done_below:
            first = ranges.pop(0)
            self.done_below = first[1]

    def count(self) -> int:
        """How many positions are done."""
        return self.done_below + sum(end - start for start, end in self.ranges)

    def state(self) -> dict[str, Any]:
        """The JSON-able state a :class:`CheckpointStore` saves."""
        return {
            "version": _VERSION,
            "done_below": self.done_below,
            "ranges": [list(r) for r in self.ranges],
        }
