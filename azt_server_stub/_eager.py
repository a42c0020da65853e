"""Run a coroutine at once, in the calling callback, up to its first real wait.

:func:`start_eagerly` is what Python 3.12's eager tasks do, for 3.11 too: the
coroutine's first steps run now, and a coroutine that finishes without waiting never
becomes a task (no event-loop pass, no task object). One that waits goes on in a task
from there. On 3.12 and later it *is* an eager task (``asyncio.Task(eager_start=True)``),
current from its first step; on 3.11 the steps before the first wait run with no
current task (``asyncio.current_task()`` is None, so ``asyncio.timeout`` cannot be used
before the first wait) and in a copy of the caller's context, as a task's would.

The stub's front end (:mod:`azt_server_stub.front`) serves requests this way.

Example::

    >>> import asyncio
    >>> async def answer(out: list[str]) -> None:
    ...     out.append("answered")
    >>> async def main() -> tuple[list[str], object]:
    ...     out: list[str] = []
    ...     task = start_eagerly(answer(out), asyncio.get_running_loop())
    ...     return out, task  # answered before start_eagerly returned; no task left
    >>> asyncio.run(main())
    (['answered'], None)
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import types
from collections.abc import Coroutine, Generator
from typing import Any


def start_eagerly(
    coro: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop
) -> asyncio.Task[None] | None:
    """Run ``coro`` now up to its first wait; the task going on with it, or None if done.

    Example::

        worker = start_eagerly(self._serve(), loop)  # None: served without waiting
    """
    context = contextvars.copy_context()
    if sys.version_info >= (3, 12):
        task = asyncio.Task(coro, loop=loop, context=context, eager_start=True)
        return None if task.done() else task
    try:
        waiting_on = context.run(coro.send, None)
    except StopIteration:
        return None
    return loop.create_task(_resumed(coro, waiting_on), context=context)


@types.coroutine
def _continued(coro: Coroutine[Any, Any, None], waiting_on: Any) -> Generator[Any, Any, None]:
    """Go on with ``coro``, suspended on ``waiting_on``, inside the task running this.

    What the task sends in (the awaited result) or throws in (a cancellation) goes to
    ``coro``; what ``coro`` waits on next goes back to the task.
    """
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # thrown in by the task: hand it on
            try:
                waiting_on = coro.throw(exc)
            except StopIteration:
                return
        else:
            try:
                waiting_on = coro.send(sent)
            except StopIteration:
                return


async def _resumed(coro: Coroutine[Any, Any, None], waiting_on: Any) -> None:
    """The body of a task that goes on with a coroutine started by :func:`start_eagerly`."""
    await _continued(coro, waiting_on)
