"""One scenario, three ways to run it: the async API, the blocking API (``azt.sync``) on a
thread without an event loop, and the blocking API called from inside a running loop (a
Jupyter notebook's situation).

A scenario is written once, as ``async def scenario(api, ...)``. Every call of the client
goes through ``await api(...)``: the async flavor awaits the coroutine; the blocking
flavors check that they got a value (never a coroutine) and return it. ``api.list``
collects an iterator (``async for`` or ``for``), ``api.open`` enters a client (``async
with`` or ``with``). The blocking flavors drive the scenario coroutine by hand: it never
suspends (nothing real is awaited), so the blocking calls run on the test's own thread,
with no event loop, exactly as in a script.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import azt
import azt.sync

T = TypeVar("T")

FLAVORS = ["async", "sync", "sync-in-loop"]


class Api:
    """The facade a scenario talks to (``TableServiceClient``, ``Query``, ... of the
    flavor, and the helpers that await or not)."""

    def __init__(self, flavor: str) -> None:
        self.flavor = flavor
        self.is_async = flavor == "async"
        mod: Any = azt if self.is_async else azt.sync
        self.TableServiceClient: Any = mod.TableServiceClient
        self.TableClient: Any = mod.TableClient
        self.Query: Any = mod.Query
        self.TableContext: Any = mod.TableContext

    async def __call__(self, value: Any) -> Any:
        if self.is_async:
            assert inspect.isawaitable(value), f"the async API returned {value!r}"
            return await value
        assert not inspect.isawaitable(value), f"the blocking API returned {value!r}"
        return value

    async def list(self, iterable: Any) -> list[Any]:
        if self.is_async:
            return [item async for item in iterable]
        assert not hasattr(iterable, "__anext__")
        return list(iterable)

    @contextlib.asynccontextmanager
    async def open(self, client: Any) -> AsyncIterator[Any]:
        if self.is_async:
            async with client as entered:
                yield entered
        else:
            with client as entered:
                yield entered

    async def close(self, client: Any) -> None:
        if self.is_async:
            await client.aclose()
        else:
            client.close()


def drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a blocking-flavor scenario coroutine to its end without an event loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    coro.close()
    raise AssertionError("a blocking scenario suspended: it awaited something real")


def run(flavor: str, scenario: Callable[[Api], Awaitable[T]]) -> T:
    """Run ``scenario`` in ``flavor`` (from a plain ``def`` test)."""
    api = Api(flavor)

    async def main() -> T:
        return await scenario(api)

    if flavor == "async":
        return asyncio.run(main())
    if flavor == "sync":
        return drive(main())

    async def in_loop() -> T:
        asyncio.get_running_loop()  # the blocking calls below run with this loop running
        return drive(main())

    return asyncio.run(in_loop())
