"""Running one client call against the stub and Azurite, and comparing what they did.

:class:`Targets` owns an event loop (``asyncio.Runner``), an in-process
``azt_server_stub.StubServer`` and a :class:`azt.TableServiceClient` per target. The
differential state machine (``test_stub_vs_azurite.py``) is synchronous (Hypothesis
drives it), so every client call goes through :meth:`Targets.run`.

An operation's result on one target is reduced to an :data:`Outcome`: a comparable,
printable value that keeps what Azure documents (success or the error class, status and
service error code; entity properties with their EDM types) and drops what legitimately
differs between two services (ETag and Timestamp values, request ids, continuation
tokens, error message texts).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import azt
from azt.edm import EdmType, TableEntity, resolved_type

_T = TypeVar("_T")

DIFF_ENV = "AZT_DIFF_AZURITE_CONNECTION_STRING"
"""The Azurite endpoint to compare the stub with (a storage connection string)."""

LIVE_ENV = "AZT_TEST_CONNECTION_STRING"
"""The live leg's endpoint (``scripts/test-azurite.sh``); used when it is a local Azurite."""

FAST_RETRY = azt.RetryPolicy(max_attempts=2, base=0.05, minimum=0.01, maximum=0.2)
"""A refused request is an outcome to compare, not something to wait out."""

TIMEOUTS = azt.Timeouts(total=10.0, connect=5.0, read=10.0)
"""A silent endpoint fails a call within seconds (the test must never hang)."""


def azurite_connection_string() -> str | None:
    """The Azurite connection string to compare against, or ``None`` (the test skips).

    ``AZT_DIFF_AZURITE_CONNECTION_STRING`` wins; otherwise ``AZT_TEST_CONNECTION_STRING``
    when it names a local endpoint (the Azurite leg of CI). A remote (real Azure)
    ``AZT_TEST_CONNECTION_STRING`` is not used: this test creates and drops many tables.
    """
    conn = os.environ.get(DIFF_ENV)
    if conn:
        return conn
    conn = os.environ.get(LIVE_ENV)
    if conn:
        lowered = conn.lower()
        if "127.0.0.1" in lowered or "localhost" in lowered or "usedevelopmentstorage" in lowered:
            return conn
    return None


JSON_FORMATS = (azt.WireFormat.JSON_MINIMAL, azt.WireFormat.JSON_NONE, azt.WireFormat.JSON_FULL)
"""The payload formats both targets speak (Azurite refuses AtomPub: PROTOCOL.md 14)."""

Outcome = tuple[Any, ...]
"""``("ok", value)`` or ``("error", class name, status, code[, index, inner code])``."""

TypedProps = tuple[tuple[str, str, Any], ...]
"""An entity's properties as sorted ``(name, EDM type, value)`` triples."""


def typed_props(entity: Mapping[str, Any], *, drop_null: bool = False) -> TypedProps:
    """The entity's properties with the EDM type each was decoded as (Timestamp is not a
    property of a decoded :class:`TableEntity`; PartitionKey and RowKey are).

    ``drop_null``: leave out ``None`` values, which only a ``$select`` of a property the
    entity lacks produces (Azure returns it as null, Azurite omits it: PROTOCOL.md 7.8, 14).
    """
    explicit = entity.edm_types if isinstance(entity, TableEntity) else {}
    out = []
    for name, value in entity.items():
        if value is None:
            if drop_null:
                continue
            out.append((name, "null", None))
            continue
        edm, bare = resolved_type(name, value, explicit.get(name))
        out.append((name, str(edm), _comparable(edm, bare)))
    return tuple(sorted(out))


def _comparable(edm: EdmType, value: Any) -> Any:
    if edm is EdmType.DATETIME:
        return value.to_wire() if isinstance(value, azt.EdmDateTime) else value.isoformat()
    if edm is EdmType.DOUBLE:
        value = float(value)
        return "NaN" if math.isnan(value) else value  # NaN != NaN
    return value


def error_outcome(exc: BaseException) -> Outcome:
    """The comparable part of an error: class, HTTP status, service code (and for a failed
    transaction the failing operation's index and the inner error's class and code)."""
    if isinstance(exc, azt.TransactionError):
        inner = exc.error
        return (
            "error",
            type(exc).__name__,
            exc.status,
            exc.code,
            exc.index,
            type(inner).__name__ if inner is not None else None,
        )
    if isinstance(exc, azt.ServiceError):
        return ("error", type(exc).__name__, exc.status, exc.code)
    return ("error", type(exc).__name__, repr(exc))


class Targets:
    """The stub and Azurite, each behind its own service client, on one private loop.

    Example::

        with Targets(azurite_conn) as targets:
            stub_result, azurite_result = targets.both(lambda svc: svc.create_table("t1"))
    """

    NAMES = ("stub", "azurite")

    def __init__(self, azurite_conn: str) -> None:
        self._azurite_conn = azurite_conn
        self._runner = asyncio.Runner()
        self._stub: Any = None
        self.services: dict[tuple[str, azt.WireFormat], azt.TableServiceClient] = {}

    def __enter__(self) -> Targets:
        self._runner.__enter__()
        try:
            self.run(self._start())
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    async def _start(self) -> None:
        from azt_server_stub import StubServer

        self._stub = await StubServer().start()
        for name, conn in (("stub", self._stub.connection_string), ("azurite", self._azurite_conn)):
            for fmt in JSON_FORMATS:
                self.services[name, fmt] = azt.TableServiceClient.from_connection_string(
                    conn, retry=FAST_RETRY, timeouts=TIMEOUTS, wire_format=fmt
                )

    async def _stop(self) -> None:
        for svc in self.services.values():
            await svc.aclose()
        self.services.clear()
        if self._stub is not None:
            await self._stub.stop()
            self._stub = None

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.run(self._stop())
        finally:
            self._runner.__exit__(None, None, None)

    def run(self, coro: Awaitable[_T]) -> _T:
        """Run ``coro`` to completion on the private loop."""

        async def wrapped() -> _T:
            async with asyncio.timeout(30):
                return await coro

        return self._runner.run(wrapped())

    def call(
        self,
        target: str,
        fn: Callable[[azt.TableServiceClient], Awaitable[_T]],
        wire_format: azt.WireFormat = azt.WireFormat.JSON_MINIMAL,
    ) -> tuple[Outcome | None, _T | None]:
        """``fn(service client of target)``: ``(error outcome, None)`` if it raised an azt
        error, else ``(None, result)``."""
        try:
            return None, self.run(fn(self.services[target, wire_format]))
        except azt.AztError as exc:
            return error_outcome(exc), None
