"""Requests served in the callback that received them (front.py, _eager.py).

The front end serves the stub's requests in ``data_received`` up to their first wait
(:func:`azt_server_stub._eager.start_eagerly`); what waits goes on in a task. These
tests hold the pieces to task semantics: results, errors and cancellations reach the
coroutine as they would in a task, the context is a task's, an application that did not
opt in keeps one task per request (its handlers may need their task at once), and the
stub's own simple requests really are answered without a task.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest
from aiohttp import web

from azt_server_stub import DEV_ACCOUNT
from azt_server_stub._eager import start_eagerly
from azt_server_stub.app import StubConfig, create_app
from azt_server_stub.connection import SERVES_WITHOUT_TASK
from azt_server_stub.front import FrontAppRunner, FrontProtocol, FrontServer

from .test_http_parser_refusals import signed_head

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("_VAR", default="caller")


async def test_a_coroutine_that_never_waits_is_done_before_the_call_returns() -> None:
    steps: list[str] = []

    async def work() -> None:
        steps.append("ran")

    assert start_eagerly(work(), asyncio.get_running_loop()) is None
    assert steps == ["ran"]


async def test_after_its_first_wait_a_task_goes_on_with_the_awaited_results() -> None:
    loop = asyncio.get_running_loop()
    first: asyncio.Future[int] = loop.create_future()
    second: asyncio.Future[str] = loop.create_future()
    seen: list[object] = []

    async def work() -> None:
        seen.append("before")
        seen.append(await first)
        seen.append(asyncio.current_task() is not None)  # a task from the first wait on
        seen.append(await second)

    task = start_eagerly(work(), loop)
    assert task is not None
    assert not task.done()
    assert seen == ["before"]
    first.set_result(7)
    await asyncio.sleep(0)
    second.set_result("x")
    await task
    assert seen == ["before", 7, True, "x"]


async def test_an_error_after_the_first_wait_is_the_tasks_error() -> None:
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[None] = loop.create_future()

    async def work() -> None:
        await gate
        raise LookupError("after the wait")

    task = start_eagerly(work(), loop)
    assert task is not None
    gate.set_result(None)
    with pytest.raises(LookupError, match="after the wait"):
        await task


async def test_an_error_raised_into_the_awaited_future_reaches_the_coroutine() -> None:
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[None] = loop.create_future()
    caught: list[BaseException] = []

    async def work() -> None:
        try:
            await gate
        except ConnectionResetError as exc:
            caught.append(exc)

    task = start_eagerly(work(), loop)
    assert task is not None
    gate.set_exception(ConnectionResetError("gone"))
    await task
    assert [str(e) for e in caught] == ["gone"]


async def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    loop = asyncio.get_running_loop()
    never: asyncio.Future[None] = loop.create_future()
    events: list[str] = []

    async def work() -> None:
        try:
            await never
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        finally:
            events.append("cleaned up")

    task = start_eagerly(work(), loop)
    assert task is not None
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert events == ["cancelled", "cleaned up"]
    assert never.cancelled()


async def test_a_bare_yield_is_a_pass_of_the_loop() -> None:
    seen: list[str] = []

    async def work() -> None:
        await asyncio.sleep(0)
        seen.append("after")

    task = start_eagerly(work(), asyncio.get_running_loop())
    assert task is not None
    assert seen == []
    await task
    assert seen == ["after"]


async def test_the_steps_run_in_a_copy_of_the_callers_context() -> None:
    loop = asyncio.get_running_loop()
    gate: asyncio.Future[None] = loop.create_future()
    seen: list[str] = []

    async def work() -> None:
        seen.append(_VAR.get())
        _VAR.set("inside")
        await gate
        seen.append(_VAR.get())  # the same context after the wait

    _VAR.set("outer")
    task = start_eagerly(work(), loop)
    assert task is not None
    assert _VAR.get() == "outer"  # nothing leaked to the caller
    gate.set_result(None)
    await task
    assert seen == ["outer", "inside"]
    assert _VAR.get() == "outer"


# -- the front end ------------------------------------------------------------------


class _Transport(asyncio.Transport):
    """Collects what the protocol writes."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def write(self, data: Any) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 10002)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_reading(self) -> bool:
        return True


def _worker_of(protocol: FrontProtocol) -> asyncio.Task[None] | None:
    return protocol.worker


def _request(method: str, path: str, body: bytes = b"", content_type: str = "") -> bytes:
    extra = f"Content-Length: {len(body)}\r\n" if body else ""
    return signed_head(method, path, extra + "\r\n", content_type=content_type) + body


async def test_the_stubs_simple_requests_are_answered_inside_data_received() -> None:
    runner = FrontAppRunner(create_app(StubConfig()), handle_signals=False)
    await runner.setup()
    try:
        server = runner.server
        assert isinstance(server, FrontServer)
        assert server.eager
        protocol = server()
        assert isinstance(protocol, FrontProtocol)
        transport = _Transport()
        protocol.connection_made(transport)
        steps = [
            (
                _request(
                    "POST", f"/{DEV_ACCOUNT}/Tables", b'{"TableName":"eager"}', "application/json"
                ),
                b"HTTP/1.1 201 ",
            ),
            (
                _request(
                    "POST",
                    f"/{DEV_ACCOUNT}/eager",
                    b'{"PartitionKey":"p","RowKey":"r"}',
                    "application/json",
                ),
                b"HTTP/1.1 201 ",
            ),
            (
                _request("GET", f"/{DEV_ACCOUNT}/eager(PartitionKey='p',RowKey='r')"),
                b"HTTP/1.1 200 ",
            ),
            (
                _request("GET", f"/{DEV_ACCOUNT}/eager(PartitionKey='p',RowKey='nope')"),
                b"HTTP/1.1 404 ",
            ),
        ]
        for data, status in steps:
            transport.written.clear()
            protocol.data_received(data)
            assert protocol.worker is None  # no task was needed
            assert bytes(transport.written).startswith(status), bytes(transport.written[:300])
        # a body still to come: the request waits for it in a task, then is answered
        body = b'{"PartitionKey":"p","RowKey":"later"}'
        data = _request("POST", f"/{DEV_ACCOUNT}/eager", body, "application/json")
        transport.written.clear()
        protocol.data_received(data[: -len(body)])
        worker = protocol.worker
        assert worker is not None
        assert not transport.written
        protocol.data_received(body)
        await worker
        assert bytes(transport.written).startswith(b"HTTP/1.1 201 "), bytes(transport.written[:300])
        assert _worker_of(protocol) is None
        protocol.connection_lost(None)
    finally:
        await runner.cleanup()


def _timed_app(*, opted_in: bool) -> web.Application:
    """An application whose handler needs its task (asyncio.timeout) before any wait."""

    async def handler(request: web.Request) -> web.Response:
        if opted_in:
            await asyncio.sleep(0)  # it waits first, as such an application must
        async with asyncio.timeout(5):
            current = asyncio.current_task()
            await request.read()
        return web.Response(text="task" if current is not None else "none")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    if opted_in:
        app[SERVES_WITHOUT_TASK] = True
    return app


@pytest.mark.parametrize("opted_in", [False, True])
async def test_a_handler_that_needs_its_task_has_one(opted_in: bool) -> None:
    runner = FrontAppRunner(_timed_app(opted_in=opted_in), handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = int(runner.addresses[0][1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        )
        answer = await asyncio.wait_for(reader.read(), timeout=10)
        writer.close()
        await writer.wait_closed()
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
        assert answer.endswith(b"task")
    finally:
        await runner.cleanup()
