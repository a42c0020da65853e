"""A private event loop on a background thread, for blocking facades over the async core.

The legacy ``TableService`` is synchronous; its calls run the async client's coroutines on
the loop owned here (one per ``TableService``) with ``asyncio.run_coroutine_threadsafe``
and wait for the result. Because the loop lives on its own thread, a blocking call also
works from code that already runs an event loop (it blocks that loop's thread for the
call's duration, as any blocking I/O would). Calling back into the facade from the
facade's own loop thread would deadlock and raises ``RuntimeError`` instead.

This is deliberately small and separate: when ``azt.sync`` (the blocking facade over the
async core) lands, ``TableService`` should run on it and this module can go.

Example::

    >>> async def answer() -> int:
    ...     return 42
    >>> runner = LoopThread()
    >>> runner.run(answer())
    42
    >>> runner.close()
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from azt._errors import ClientClosedError

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An event loop running on a daemon thread; :meth:`run` executes a coroutine on it
    and blocks until it is done; :meth:`close` runs the clean-ups and stops the thread.

    Example::

        runner = LoopThread()
        try:
            entity = runner.run(table.get_entity("a", "1"))
        finally:
            runner.close(table.aclose)
    """

    def __init__(self, name: str = "azt-legacy-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._closed = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        self._loop.run_forever()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called. Example: ``assert not runner.closed``"""
        return self._closed

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (or raise its exception).

        Example::

            etag = runner.run(table.upsert_entity(entity))
        """
        if self._closed:
            coro.close()
            raise ClientClosedError("this TableService was closed")
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a blocking TableService call from its own event loop thread")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()
            raise

    def close(self, *cleanups: Callable[[], Awaitable[object]]) -> None:
        """Run ``cleanups`` (e.g. the async client's ``aclose``) on the loop, then stop the
        loop, join the thread and close the loop. Idempotent; safe at interpreter exit.

        Example::

            runner.close(service.aclose)
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        errors: list[Exception] = []
        if not self._loop.is_closed() and self._thread.is_alive():
            for cleanup in cleanups:
                future = asyncio.run_coroutine_threadsafe(_awaited(cleanup), self._loop)
                try:
                    future.result(timeout=30)
                except Exception as exc:  # stop the thread first, then report it
                    errors.append(exc)
            self._loop.call_soon_threadsafe(self._loop.stop)
            if threading.current_thread() is not self._thread:
                self._thread.join(timeout=30)
        if not self._thread.is_alive():
            self._loop.close()
        if errors:
            raise errors[0]


async def _awaited(cleanup: Callable[[], Awaitable[object]]) -> None:
    await cleanup()
