"""A caller's cancellation always reaches it: the waits in :mod:`azt._core.tasks`, and a
source rule that keeps the two idioms that lose one out of both packages.

On Python 3.11, ``asyncio.wait_for`` returns the awaited result when its caller is
cancelled in the same loop step as the result arrives, and ``suppress(CancelledError)``
around awaiting a cancelled child also swallows the caller's own cancellation. The bulk
loader's idle wait used the first: a ``task.cancel()`` on a load could be lost, and the load
ran on to the end of its input (seen in a full CI run under load).
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from azt._core.tasks import cancel_and_wait, wait_until

ROOT = Path(__file__).resolve().parents[2]


async def _cancel_as_event_is_set(wait: object) -> str:
    event = asyncio.Event()

    async def waiter() -> str:
        try:
            await wait(event)  # type: ignore[operator]
        except asyncio.CancelledError:
            return "cancelled"
        return "returned"

    task = asyncio.create_task(waiter())
    for _ in range(3):
        await asyncio.sleep(0)  # the waiter is parked on the event
    event.set()  # the event's waiter completes in the next step...
    task.cancel()  # ...the same step the cancellation is delivered in
    return await task


async def test_a_cancellation_that_meets_the_event_is_not_swallowed() -> None:
    assert await _cancel_as_event_is_set(lambda e: wait_until(e, 5)) == "cancelled"


async def test_wait_until_reports_whether_the_event_was_set() -> None:
    event = asyncio.Event()
    assert await wait_until(event, 0.01) is False
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_until(event, 5) is True
    assert await wait_until(event, 0) is True  # already set: no wait at all


async def test_cancel_and_wait_propagates_the_callers_cancellation() -> None:
    release = asyncio.Event()
    stopped = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            stopped.set()
            await release.wait()  # winds down only when released

    child = asyncio.create_task(slow_to_stop())
    await asyncio.sleep(0)

    async def stopper() -> str:
        try:
            await cancel_and_wait(child)
        except asyncio.CancelledError:
            return "cancelled"
        return "returned"

    outer = asyncio.create_task(stopper())
    await stopped.wait()  # the stopper waits for the child to wind down
    outer.cancel()
    release.set()
    assert await outer == "cancelled"
    assert child.done()


async def test_cancel_and_wait_absorbs_the_tasks_own_outcomes() -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    failing = asyncio.create_task(fails())
    sleeping = asyncio.create_task(asyncio.sleep(10))
    await asyncio.sleep(0)
    await cancel_and_wait(failing, sleeping)
    assert sleeping.cancelled()
    assert isinstance(failing.exception(), RuntimeError)


def _offences(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "wait_for"
            and isinstance(func.value, ast.Name)
            and func.value.id == "asyncio"
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: asyncio.wait_for")
        if isinstance(func, ast.Attribute) and func.attr == "suppress":
            names = {ast.unparse(arg) for arg in node.args}
            if names & {"asyncio.CancelledError", "CancelledError"}:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: suppress(CancelledError)")
    return found


@pytest.mark.parametrize("package", ["azt", "azt_server_stub"])
def test_no_idiom_that_loses_a_cancellation(package: str) -> None:
    offences = [o for p in sorted((ROOT / package).rglob("*.py")) for o in _offences(p)]
    assert offences == [], (
        "use azt._core.tasks.wait_until / cancel_and_wait (the stub: asyncio.timeout and "
        "gather(..., return_exceptions=True)): " + "; ".join(offences)
    )
