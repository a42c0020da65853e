"""The lazy read timer's guard (``transport._lazy_read_timeout_fits``) and its fallback.

:class:`~azt._core.transport._LazyReadTimeout` overrides aiohttp's read-timer methods;
the guard reads aiohttp's ``ResponseHandler`` source for what the override relies on
(who arms and cancels ``_read_timeout_handle``, what ``_reschedule_timeout`` arms it
with, where ``set_response_params`` stores the timeout). Here: the guard accepts a
faithful copy of that shape and refuses each way it can change; whichever protocol the
transport takes (the lazy one, or aiohttp's where the guard refuses), read timeouts
behave the same. ``scripts/test-dependency-floor.sh`` runs this on the oldest aiohttp
declared.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest
from aiohttp.client_proto import ResponseHandler

import azt
from azt._core import transport as transport_module
from azt._core.transport import HttpRequest, _LazyReadTimeout

from .test_read_timeout import _transport, pooled_protocols, server  # noqa: F401 (the fixture)


class Faithful:
    """aiohttp 3.9 to 3.14's shape of the read timer."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._read_timeout: float | None = None
        self._read_timeout_handle: asyncio.TimerHandle | None = None

    def set_response_params(self, *, read_timeout: float | None = None) -> None:
        self._read_timeout = read_timeout

    def _drop_timeout(self) -> None:
        if self._read_timeout_handle is not None:
            self._read_timeout_handle.cancel()
            self._read_timeout_handle = None

    def _reschedule_timeout(self) -> None:
        timeout = self._read_timeout
        if self._read_timeout_handle is not None:
            self._read_timeout_handle.cancel()
        if timeout:
            self._read_timeout_handle = self._loop.call_later(timeout, self._on_read_timeout)
        else:
            self._read_timeout_handle = None

    def _on_read_timeout(self) -> None:
        pass

    def connection_lost(self, exc: BaseException | None) -> None:
        self._drop_timeout()


class ArmedElsewhere(Faithful):
    """Arms the timer outside the overridden methods (the override would never see it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._read_timeout: float | None = None
        self._read_timeout_handle: asyncio.TimerHandle | None = None

    def set_response_params(self, *, read_timeout: float | None = None) -> None:
        self._read_timeout = read_timeout

    def _drop_timeout(self) -> None:
        if self._read_timeout_handle is not None:
            self._read_timeout_handle.cancel()

    def _reschedule_timeout(self) -> None:
        if self._read_timeout:
            self._read_timeout_handle = self._loop.call_later(
                self._read_timeout, self._on_read_timeout
            )

    def _on_read_timeout(self) -> None:
        pass

    def data_received(self, data: bytes) -> None:
        if self._read_timeout_handle is not None:
            self._read_timeout_handle.cancel()
            self._read_timeout_handle = self._loop.call_later(1.0, self._on_read_timeout)


class CallbackTakesAnArgument(Faithful):
    """``_on_read_timeout`` wants an argument the lazy timer does not pass."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._read_timeout: float | None = None
        self._read_timeout_handle: asyncio.TimerHandle | None = None

    def set_response_params(self, *, read_timeout: float | None = None) -> None:
        self._read_timeout = read_timeout

    def _drop_timeout(self) -> None:
        if self._read_timeout_handle is not None:
            self._read_timeout_handle.cancel()

    def _reschedule_timeout(self) -> None:
        if self._read_timeout:
            self._read_timeout_handle = self._loop.call_later(
                self._read_timeout, self._on_read_timeout, None
            )

    def _on_read_timeout(self, exc: object) -> None:  # type: ignore[override]
        pass


class TimeoutStoredElsewhere(Faithful):
    """The read timeout kept under another name (the lazy timer reads ``_read_timeout``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._sock_read: float | None = None
        self._read_timeout_handle: asyncio.TimerHandle | None = None

    def set_response_params(self, *, read_timeout: float | None = None) -> None:
        self._sock_read = read_timeout

    def _drop_timeout(self) -> None:
        if self._read_timeout_handle is not None:
            self._read_timeout_handle.cancel()

    def _reschedule_timeout(self) -> None:
        if self._sock_read:
            self._read_timeout_handle = self._loop.call_later(
                self._sock_read, self._on_read_timeout
            )

    def _on_read_timeout(self) -> None:
        pass


class NoReadTimeoutParameter(Faithful):
    """``set_response_params`` no longer takes the read timeout."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._read_timeout: float | None = None
        self._read_timeout_handle: asyncio.TimerHandle | None = None

    def set_response_params(self, **kwargs: Any) -> None:
        self._read_timeout = kwargs.get("timeouts")

    def _drop_timeout(self) -> None:
        if self._read_timeout_handle is not None:
            self._read_timeout_handle.cancel()

    def _reschedule_timeout(self) -> None:
        if self._read_timeout:
            self._read_timeout_handle = self._loop.call_later(
                self._read_timeout, self._on_read_timeout
            )

    def _on_read_timeout(self) -> None:
        pass


def test_the_guard_accepts_the_installed_aiohttp_and_the_shape_it_expects() -> None:
    assert transport_module._lazy_read_timeout_fits(ResponseHandler), aiohttp.__version__
    assert transport_module._LAZY_READ_TIMEOUT_FITS
    assert transport_module._lazy_read_timeout_fits(Faithful)


@pytest.mark.parametrize(
    "handler",
    [ArmedElsewhere, CallbackTakesAnArgument, TimeoutStoredElsewhere, NoReadTimeoutParameter],
)
def test_the_guard_refuses_a_timer_that_changed_meaning(handler: type) -> None:
    assert not transport_module._lazy_read_timeout_fits(handler)


def test_the_guard_refuses_a_class_without_source() -> None:
    assert not transport_module._lazy_read_timeout_fits(type("Dynamic", (Faithful,), {}))


@pytest.mark.parametrize("lazy", [True, False], ids=["lazy timer", "aiohttp's timer"])
async def test_either_protocol_times_reads_out_the_same(
    server: tuple[str, list[int]],  # noqa: F811 (the fixture)
    monkeypatch: pytest.MonkeyPatch,
    lazy: bool,
) -> None:
    monkeypatch.setattr(transport_module, "_LAZY_READ_TIMEOUT_FITS", lazy)
    base, _ = server
    transport = _transport(0.3)
    try:
        assert (await transport.send(HttpRequest("GET", base + "/a", {}))).body == b"ok"
        pooled = pooled_protocols(transport)
        assert pooled
        assert all(type(p) is (_LazyReadTimeout if lazy else ResponseHandler) for p in pooled)
        await asyncio.sleep(0.5)  # idle past the read timeout: nothing times out
        resp = await transport.send(HttpRequest("GET", base + "/trickle/4/0.12", {}))
        assert resp.body == b"xxxx"
        start = time.monotonic()
        with pytest.raises(azt.ServiceTimeoutError):
            await transport.send(HttpRequest("GET", base + "/stall", {}))
        assert 0.25 <= time.monotonic() - start < 2.0
        assert (await transport.send(HttpRequest("GET", base + "/a", {}))).body == b"ok"
    finally:
        await transport.aclose()
