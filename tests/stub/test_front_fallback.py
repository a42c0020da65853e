"""Which path :class:`FrontAppRunner` serves through, and that the other one answers the same.

The front end (front.py) reads aiohttp internals; on an aiohttp where they are missing or
mean something else the runner must notice it at setup and serve through aiohttp's own
connection handler, with the same answers. aiohttp 3.13's ``BaseProtocol`` took no
parser: :class:`FrontProtocol` could not even be built, asyncio dropped that error
silently and every connection was closed unanswered, while the old name-only check
passed. These tests force each way a check can fail and compare the answers byte for
byte with aiohttp's handler (``ServiceAppRunner``), as test_front.py does for the front
end; ``scripts/test-dependency-floor.sh`` runs them on the oldest aiohttp declared.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict

from azt_server_stub import front
from azt_server_stub.app import StubConfig, create_app
from azt_server_stub.connection import ServiceAppRunner, ServiceServer
from azt_server_stub.front import FrontAppRunner, FrontServer, front_supported

from .test_front import CASES, Served, _serve, exchange, masked

#: The cases compared through a fallen-back runner (pipelining, bodies, refusals, HTTP/1.0).
FALLBACK_CASES = [
    "create, insert, read, query pipelined in one write",
    "requests one after another on one connection",
    "HTTP/1.0, closed after the answer",
    "Expect: 100-continue",
    "chunked body",
    "request line over the limit",
]


@contextlib.asynccontextmanager
async def served_pair() -> AsyncIterator[tuple[Served, Served, web.AppRunner]]:
    """aiohttp's handler, and a ``FrontAppRunner`` set up under the test's patches."""
    old = _serve(ServiceAppRunner(create_app(StubConfig()), handle_signals=False))
    runner = FrontAppRunner(create_app(StubConfig()), handle_signals=False)
    new = _serve(runner)
    a = await old.__anext__()
    b = await new.__anext__()
    try:
        yield a, b, runner
    finally:
        for gen in (old, new):
            with pytest.raises(StopAsyncIteration):
                await gen.__anext__()


async def _same_answers(old: Served, new: Served) -> None:
    for name in FALLBACK_CASES:
        expected = await exchange(old, CASES[name])
        got = await exchange(new, CASES[name])
        assert expected, name
        assert masked(got) == masked(expected), name


async def test_the_installed_aiohttp_serves_through_the_path_its_checks_choose() -> None:
    async with served_pair() as (old, new, runner):
        if front_supported():
            assert isinstance(runner.server, FrontServer)
        else:
            assert type(runner.server) is ServiceServer
        await _same_answers(old, new)


def test_the_checks_pass_on_the_declared_aiohttp() -> None:
    # The floor leg runs this on the oldest aiohttp pyproject.toml declares: the front
    # end serves there too (a fallback is for an aiohttp outside the declared range).
    assert front_supported(), aiohttp.__version__
    assert front._responses_fit()
    assert front._protocol_fits()


class _OldBaseProtocol(asyncio.Protocol):
    """aiohttp 3.9 to 3.13's ``BaseProtocol``: the loop only, no parser."""

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def pause_reading(self) -> None:
        """Pause the transport only."""

    def resume_reading(self) -> None:
        """Resume the transport only."""


def test_a_base_protocol_without_the_parser_does_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    assert front._protocol_fits()
    monkeypatch.setattr(front, "BaseProtocol", _OldBaseProtocol)
    assert not front._protocol_fits()


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("_chunked", lambda r: None),  # a flag that no longer follows its call
        ("_compression", lambda r: None),
        ("_keep_alive", lambda r: None),
        ("_body", lambda r: setattr(r, "_body", None)),
        ("_compressed_body", lambda r: setattr(r, "_compressed_body", b"")),
        ("_status", lambda r: setattr(r, "_status", 0)),
        ("_reason", lambda r: setattr(r, "_reason", "")),
    ],
)
def test_a_response_attribute_that_changed_meaning_does_not_fit(
    monkeypatch: pytest.MonkeyPatch, name: str, change: Any
) -> None:
    assert front._responses_fit()
    calls = {
        "_chunked": "enable_chunked_encoding",
        "_compression": "enable_compression",
        "_keep_alive": "force_close",
    }
    if name in calls:  # the call no longer sets the flag the front end reads
        monkeypatch.setattr(web.Response, calls[name], change)
    else:  # the attribute no longer holds what the constructor was given
        original = web.Response.__init__

        def init(self: web.Response, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            change(self)

        monkeypatch.setattr(web.Response, "__init__", init)
    assert not front._responses_fit()


@pytest.mark.parametrize(
    ("name", "replacement"),
    [
        ("set_status", lambda self, status, reason=None: None),  # no longer sets _status
        ("headers", property(lambda self: CIMultiDict())),  # not the _headers render writes
    ],
)
def test_a_response_status_or_headers_elsewhere_does_not_fit(
    monkeypatch: pytest.MonkeyPatch, name: str, replacement: Any
) -> None:
    assert front._responses_fit()
    monkeypatch.setattr(web.Response, name, replacement)
    assert not front._responses_fit()


async def test_when_the_checks_fail_the_runner_falls_back_and_answers_the_same(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(front, "front_supported", lambda: False)
    caplog.set_level(logging.WARNING, logger="azt_server_stub")
    async with served_pair() as (old, new, runner):
        assert type(runner.server) is ServiceServer
        assert any("lacks what the stub's front end needs" in r.message for r in caplog.records)
        await _same_answers(old, new)


async def test_a_protocol_that_cannot_be_built_falls_back(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # what aiohttp 3.13 did: BaseProtocol.__init__() takes 2 positional arguments
    def old_init(self: front.FrontProtocol, server: FrontServer) -> None:
        raise TypeError("BaseProtocol.__init__() takes 2 positional arguments but 3 were given")

    monkeypatch.setattr(front.FrontProtocol, "__init__", old_init)
    caplog.set_level(logging.WARNING, logger="azt_server_stub")
    async with served_pair() as (old, new, runner):
        assert type(runner.server) is ServiceServer
        assert any("parses requests unlike" in r.message for r in caplog.records)
        await _same_answers(old, new)


class _TwoTupleParser:
    """A parser whose ``feed_data`` answers in another shape (messages, upgraded)."""

    def feed_data(self, data: bytes) -> tuple[list[Any], bool]:
        return [], False


async def test_the_parser_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = FrontAppRunner(create_app(StubConfig()), handle_signals=False)
    await runner.setup()
    try:
        server = runner.server
        assert isinstance(server, FrontServer)
        assert front._parser_fits(server())
        protocol = server()
        protocol._parser = _TwoTupleParser()  # type: ignore[assignment]
        assert not front._parser_fits(protocol)
        protocol._parser = None
        assert not front._parser_fits(protocol)
        # a probe parsed into other fields (here: another target) does not fit either
        monkeypatch.setattr(front, "_PROBE", front._PROBE.replace(b"/a/Tables", b"/a/T", 1))
        assert not front._parser_fits(server())
    finally:
        await runner.cleanup()
