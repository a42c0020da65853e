"""Cancellation-safe waits for the client's own background tasks.

Two asyncio idioms lose a caller's cancellation on Python 3.11, and a lost cancellation
turns ``task.cancel()`` on a load or a scan into "keep going until done":

- ``asyncio.wait_for(aw, timeout)`` returns ``aw``'s result when the caller is cancelled in
  the same loop step as ``aw`` finishes (CPython gh-86296, fixed in 3.12);
- ``task.cancel(); with suppress(CancelledError): await task`` swallows the *caller's*
  cancellation too when it arrives while waiting for ``task`` to wind down.

:func:`wait_until` and :func:`cancel_and_wait` are their replacements: the caller's
cancellation always propagates.

Example::

    >>> import asyncio
    >>> async def demo():
    ...     wake = asyncio.Event()
    ...     woke = await wait_until(wake, 0.01)  # nobody sets it: times out
    ...     child = asyncio.ensure_future(asyncio.sleep(10))
    ...     await cancel_and_wait(child)
    ...     return woke, child.cancelled()
    >>> asyncio.run(demo())
    (False, True)
"""

from __future__ import annotations

import asyncio


async def wait_until(event: asyncio.Event, seconds: float) -> bool:
    """Wait for ``event`` at most ``seconds``; ``True`` if it was set.

    Unlike ``asyncio.wait_for`` on Python 3.11, a cancellation of the caller that arrives
    as the event is set is never swallowed.

    Example::

        >>> import asyncio
        >>> async def demo():
        ...     event = asyncio.Event()
        ...     asyncio.get_running_loop().call_soon(event.set)
        ...     return await wait_until(event, 5)
        >>> asyncio.run(demo())
        True
    """
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True


async def cancel_and_wait(*tasks: asyncio.Future[object] | asyncio.Task[object]) -> None:
    """Cancel ``tasks`` and wait until each has ended, whatever it raised.

    The tasks' own cancellations and errors are absorbed (the caller is stopping them);
    a cancellation of the caller itself, before or during the wait, propagates.

    Example::

        >>> import asyncio
        >>> async def demo():
        ...     tasks = [asyncio.ensure_future(asyncio.sleep(10)) for _ in range(2)]
        ...     await cancel_and_wait(*tasks)
        ...     return [t.cancelled() for t in tasks]
        >>> asyncio.run(demo())
        [True, True]
    """
    for task in tasks:
        task.cancel()
    # gather() raises CancelledError when *this* task is cancelled while it waits, and
    # returns the children's outcomes (their CancelledErrors included) otherwise.
    await asyncio.gather(*tasks, return_exceptions=True)
