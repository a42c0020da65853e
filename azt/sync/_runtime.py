"""The private event loop behind the blocking API (``azt.sync``).

Every blocking call runs the async implementation (the same wire, ORM, query and context
code) on a private event loop owned by a :class:`Runtime`. One client tree (a service
client, the table clients it hands out, the queries and contexts built on them) shares one
runtime, so it shares one loop and one HTTP session.

How a call runs (measured against the stub in another process, a point read costs about
500 µs with the async client):

* On a thread without a running event loop (the usual case), the calling thread drives
  the private loop itself: ``loop.run_until_complete(coroutine)`` under the runtime's
  lock. No thread hop: about 30 µs per call on top of the async client.
* Several threads sharing one client take turns (the lock); each step of a query holds it
  only for that page fetch. Threads that want parallel I/O use one client each (each has
  its own loop and session) or the async API.
* On a thread whose own loop is running (a Jupyter notebook, a sync helper called from
  async code), ``run_until_complete`` is impossible there; the call is handed to a helper
  thread that drives the private loop, and the caller blocks until it is done (a thread
  hop, about 100 µs). Calling the sync API from inside the runtime's *own* loop would
  deadlock and raises :class:`RuntimeError` instead.
* After ``os.fork()`` the child must not touch the parent's loop, selector or sockets
  (closing an inherited TLS connection would write on the parent's stream). On its first
  call in the child a runtime starts a fresh loop and lets the HTTP transports it serves
  open fresh sessions; the inherited objects are kept referenced and never closed or
  collected in the child. The parent's objects keep working.

Example::

    >>> import asyncio
    >>> runtime = Runtime()
    >>> async def answer() -> int:
    ...     return 42
    >>> runtime.run(answer())
    42
    >>> runtime.close()
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import AsyncIterator, Coroutine, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, Self, TypeVar

from azt._core.transport import AiohttpTransport

__all__ = ["UNBOUND", "Runtime", "Wrapper", "runtime_of", "track_transport", "unwrap"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class HasItems(Protocol[T_co]):
    """A page: its ``items`` (:class:`azt.Page`, :class:`azt.QueryPage`).

    Example::

        page: HasItems[int] = azt.Page([1, 2], None, request_id=None)
    """

    @property
    def items(self) -> Sequence[T_co]: ...


#: Bumped in a forked child (``os.register_at_fork``): a runtime created under another
#: generation is stale and resets itself before its next call.
_generation = 0

#: What a forked child inherited and must never close or let be collected (closing an
#: inherited socket or loop in the child could disturb the parent's connections).
_ABANDONED: list[object] = []

_helpers: ThreadPoolExecutor | None = None
_helpers_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _generation, _helpers, _helpers_lock
    _generation += 1
    if _helpers is not None:
        _ABANDONED.append(_helpers)  # its threads do not exist in the child
    _helpers = None
    _helpers_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _helper_pool() -> ThreadPoolExecutor:
    global _helpers
    with _helpers_lock:
        if _helpers is None:
            _helpers = ThreadPoolExecutor(thread_name_prefix="azt-sync")
        return _helpers


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def track_transport(runtime: Runtime, inner: object) -> None:
    """Let ``runtime`` reset the HTTP session of ``inner``'s transport after a fork.

    ``inner`` is an async client (or anything with a ``_core.transport``); transports
    other than :class:`azt.AiohttpTransport` (a :class:`azt.MockTransport`, a user's own)
    are left alone.

    Example::

        track_transport(runtime, async_table_client)
    """
    core = getattr(inner, "_core", None)
    transport = getattr(core, "transport", None)
    if isinstance(transport, AiohttpTransport):
        runtime._transports.add(transport)


class Runtime:
    """A private event loop that blocking calls run their coroutines on.

    ``run`` runs one coroutine to completion and returns its result (or raises its
    exception, unchanged); ``iterate`` turns an async iterator into a blocking one;
    ``close`` shuts the loop down (a client's ``close()`` does it for the runtime it owns).

    Example::

        runtime = Runtime()
        entity = runtime.run(async_table.get_entity("pk", "rk"))
        runtime.close()
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._generation = _generation
        self._closed = False
        self._transports: weakref.WeakSet[AiohttpTransport] = weakref.WeakSet()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<azt.sync Runtime {state}>"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called.

        Example::

            >>> r = Runtime(); r.close(); r.closed
            True
        """
        return self._closed

    def _reset_after_fork(self) -> None:
        # The child inherited the parent's loop (its selector and self-pipe) and the
        # transports' sessions: keep them referenced, untouched, and start afresh.
        self._lock = threading.Lock()
        if self._loop is not None:
            _ABANDONED.append(self._loop)
            self._loop = None
        for transport in list(self._transports):
            inherited = transport.reset_after_fork()
            if inherited is not None:
                _ABANDONED.append(inherited)
        self._generation = _generation

    def _drive(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            # A closed client still answers (its methods raise ClientClosedError), on a
            # loop of its own, without reopening the runtime's.
            with asyncio.Runner() as runner:
                return runner.run(coro)
        with self._lock:
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.new_event_loop()
            return loop.run_until_complete(coro)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop and return its result (blocking).

        Example::

            >>> async def two() -> int:
            ...     return 2
            >>> r = Runtime(); r.run(two())
            2
            >>> r.close()
        """
        if self._generation != _generation:
            self._reset_after_fork()
        running = _running_loop()
        if running is None:
            return self._drive(coro)
        if running is self._loop:
            coro.close()
            raise RuntimeError(
                "the blocking azt.sync API was called from inside its own event loop "
                "(from async code that a sync call is running); use the async API there"
            )
        return _helper_pool().submit(self._drive, coro).result()

    def iterate(self, source: AsyncIterator[T]) -> Iterator[T]:
        """A blocking iterator over ``source``; each item is fetched by one :meth:`run`.

        Leaving the loop early (``break``, an exception, or dropping the iterator) closes
        ``source`` on the private loop.

        Example::

            >>> async def gen():
            ...     yield 1
            ...     yield 2
            >>> r = Runtime(); list(r.iterate(gen()))
            [1, 2]
            >>> r.close()
        """
        return self._iterate(source)

    def _iterate(self, source: AsyncIterator[T]) -> Generator[T, None, None]:
        done = False
        try:
            while True:
                try:
                    item = self.run(_anext(source))
                except StopAsyncIteration:
                    done = True
                    return
                yield item
        finally:
            aclose = getattr(source, "aclose", None)
            if not done and aclose is not None:
                self.run(aclose())

    def items(self, pages: AsyncIterator[HasItems[T]]) -> Iterator[T]:
        """A blocking iterator over the items of ``pages``: one :meth:`run` per page, not per
        item (the async iterators of pagers and queries yield a page's items the same way,
        fetching the next page only when the last item is consumed).

        Example::

            >>> from types import SimpleNamespace
            >>> async def pages():
            ...     yield SimpleNamespace(items=[1, 2])
            ...     yield SimpleNamespace(items=[3])
            >>> r = Runtime(); list(r.items(pages()))
            [1, 2, 3]
            >>> r.close()
        """
        return self._items(pages)

    def _items(self, pages: AsyncIterator[HasItems[T]]) -> Iterator[T]:
        source = self._iterate(pages)
        try:
            for page in source:
                yield from page.items
        finally:
            source.close()

    def close(self) -> None:
        """Shut the private loop down (async generators first). Idempotent.

        Example::

            >>> r = Runtime(); r.close(); r.close(); r.closed
            True
        """
        if self._generation != _generation:
            self._reset_after_fork()
        with self._lock:
            self._closed = True
            loop, self._loop = self._loop, None
            if loop is None:
                return
            if _running_loop() is None:
                self._shutdown(loop)
                return
        _helper_pool().submit(self._shutdown, loop).result()

    @staticmethod
    def _shutdown(loop: asyncio.AbstractEventLoop) -> None:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


async def _anext(source: AsyncIterator[T]) -> T:
    return await source.__anext__()


class Wrapper:
    """The base of the blocking classes: the async object they drive and its runtime.

    Example::

        table = azt.sync.TableClient.from_connection_string(conn_str, "movies")
        table._inner   # the azt.TableClient doing the work
    """

    __slots__ = ("_inner", "_owns", "_rt")

    _inner: Any
    _rt: Runtime
    _owns: bool

    @classmethod
    def _from_inner(cls, rt: Runtime, inner: Any, owns: bool = False) -> Self:
        self = cls.__new__(cls)
        self._inner = inner
        self._rt = rt
        self._owns = owns
        return self

    def __repr__(self) -> str:
        return f"azt.sync.{self._inner!r}"


def unwrap(value: Any) -> Any:
    """The async object behind a blocking one (anything else is returned as it is).

    Example::

        >>> unwrap(3)
        3
    """
    return value._inner if isinstance(value, Wrapper) else value


def runtime_of(*values: object) -> Runtime | None:
    """The runtime of the first blocking object among ``values``, or ``None``.

    Example::

        >>> runtime_of(None, 3) is None
        True
    """
    for value in values:
        if isinstance(value, Wrapper):
            return value._rt
    return None


#: The runtime of objects bound to no client yet (a ``Query`` built without one): their
#: coroutines raise before any I/O (e.g. "bind it to a client"), so one shared loop serves.
UNBOUND = Runtime()
