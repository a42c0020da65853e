"""Request/response event hooks: user callables the pipeline calls around every HTTP
attempt with a read-only, redacted view of it (for metrics, tracing, audit), so nobody
needs to subclass a transport.

A hook is a plain function or an ``async def`` taking one argument: a request hook gets a
:class:`RequestInfo` just before the attempt is sent; a response hook gets a
:class:`ResponseInfo` when the attempt is over (an answer of any status, or a transport
failure). Hooks run in the order given. An exception raised by a hook is not caught: it
propagates out of the client call (a request hook's exception means the attempt is never
sent; a response hook's arrives after the service may have applied the request).

Example::

    >>> import asyncio
    >>> statuses = []
    >>> hooks = EventHooks.coerce({"response": [lambda info: statuses.append(info.status)]})
    >>> hooks.response[0](ResponseInfo(
    ...     RequestInfo("GET", "http://h/Tables", {}, attempt=1, body_size=0),
    ...     status=200, headers={}, duration=0.01, body_size=2))
    >>> statuses
    [200]
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType

import attrs
from multidict import CIMultiDict, CIMultiDictProxy

from azt._errors import TransportError, ValidationError

__all__ = [
    "EventHooks",
    "EventHooksArg",
    "RequestHook",
    "RequestInfo",
    "ResponseHook",
    "ResponseInfo",
]


def _read_only(headers: Mapping[str, str]) -> Mapping[str, str]:
    """A read-only view of ``headers`` (case-insensitive when they were)."""
    if isinstance(headers, CIMultiDictProxy | MappingProxyType):
        return headers
    if isinstance(headers, CIMultiDict):
        return CIMultiDictProxy(headers)
    return MappingProxyType(dict(headers))


@attrs.frozen(slots=True)
class RequestInfo:
    """A read-only view of one HTTP attempt about to be sent.

    ``url`` is the full URL with every secret redacted (a SAS credential's token is left
    out entirely); ``headers`` the request headers as sent, ``Authorization`` and other
    secret values replaced by ``REDACTED``; ``attempt`` counts from 1 (every send is a new
    attempt: a retry, and the single resend after a refused bearer token);
    ``body_size`` the payload's length in bytes.

    Example::

        >>> info = RequestInfo("DELETE", "http://h/Tables('t')", {"x-ms-version": "2019-02-02"},
        ...                    attempt=1, body_size=0)
        >>> info.method, info.headers["x-ms-version"]
        ('DELETE', '2019-02-02')
    """

    method: str
    url: str
    headers: Mapping[str, str] = attrs.field(converter=_read_only)
    attempt: int
    body_size: int

    @property
    def client_request_id(self) -> str | None:
        """The ``x-ms-client-request-id`` this attempt carries (a new one per attempt).

        Example::

            >>> RequestInfo("GET", "u", {"x-ms-client-request-id": "c1"}, attempt=1,
            ...             body_size=0).client_request_id
            'c1'
        """
        return self.headers.get("x-ms-client-request-id")


@attrs.frozen(slots=True)
class ResponseInfo:
    """A read-only view of one finished HTTP attempt.

    ``status`` is the HTTP status, or ``None`` when no answer came (then ``error`` is the
    :class:`azt.TransportError` the attempt failed with, about to be raised or retried);
    ``headers`` the response headers; ``duration`` the seconds from sending to the last
    byte of the answer; ``body_size`` the answer's length in bytes.

    Example::

        >>> req = RequestInfo("GET", "http://h/Tables", {}, attempt=1, body_size=0)
        >>> info = ResponseInfo(req, status=200, headers={"x-ms-request-id": "r1"},
        ...                     duration=0.004, body_size=17)
        >>> info.request_id, info.ok
        ('r1', True)
    """

    request: RequestInfo
    status: int | None
    headers: Mapping[str, str] = attrs.field(converter=_read_only)
    duration: float
    body_size: int
    error: TransportError | None = None

    @property
    def request_id(self) -> str | None:
        """The service's ``x-ms-request-id`` (``None`` without an answer).

        Example::

            >>> ResponseInfo(RequestInfo("GET", "u", {}, attempt=1, body_size=0), status=None,
            ...              headers={}, duration=1.0, body_size=0).request_id is None
            True
        """
        return self.headers.get("x-ms-request-id")

    @property
    def ok(self) -> bool:
        """True for a 2xx answer.

        Example::

            >>> ResponseInfo(RequestInfo("GET", "u", {}, attempt=1, body_size=0), status=404,
            ...              headers={}, duration=0.1, body_size=0).ok
            False
        """
        return self.status is not None and 200 <= self.status < 300


RequestHook = Callable[[RequestInfo], Awaitable[None] | None]
"""A request hook: ``def hook(info: RequestInfo) -> None`` or the ``async def`` form."""

ResponseHook = Callable[[ResponseInfo], Awaitable[None] | None]
"""A response hook: ``def hook(info: ResponseInfo) -> None`` or the ``async def`` form."""


def _callables(kind: str, value: object) -> tuple[Callable[..., object], ...]:
    if isinstance(value, tuple) and all(callable(hook) for hook in value):
        return value
    if callable(value) or isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValidationError(
            f"event_hooks[{kind!r}] must be a list of callables, got {type(value).__name__}"
        )
    for hook in value:
        if not callable(hook):
            raise ValidationError(f"event_hooks[{kind!r}] holds {hook!r}, which is not callable")
    return tuple(value)


def _request_hooks(value: object) -> tuple[RequestHook, ...]:
    return _callables("request", value)  # type: ignore[return-value]


def _response_hooks(value: object) -> tuple[ResponseHook, ...]:
    return _callables("response", value)  # type: ignore[return-value]


@attrs.frozen
class EventHooks:
    """The hooks a client calls around every HTTP attempt (see the module docs).

    Clients take ``event_hooks={"request": [...], "response": [...]}`` (either key may be
    left out) or an :class:`EventHooks`.

    Example::

        async def count(info: ResponseInfo) -> None:
            metrics.observe(info.request.method, info.status, info.duration)

        service = TableServiceClient.from_connection_string(
            conn_str, event_hooks={"response": [count]})
    """

    request: tuple[RequestHook, ...] = attrs.field(default=(), converter=_request_hooks)
    response: tuple[ResponseHook, ...] = attrs.field(default=(), converter=_response_hooks)

    @classmethod
    def coerce(cls, value: object) -> EventHooks | None:
        """An :class:`EventHooks` from a client's ``event_hooks`` argument, or ``None``
        when there is no hook at all (the pipeline then builds no views).

        Example::

            >>> EventHooks.coerce({"request": [print]}).request == (print,)
            True
            >>> EventHooks.coerce({}) is None
            True
            >>> EventHooks.coerce({"responses": []})
            Traceback (most recent call last):
            ...
            azt._errors.ValidationError: event_hooks has unknown keys ['responses']; ...
        """
        if value is None:
            return None
        if isinstance(value, EventHooks):
            hooks = value
        elif isinstance(value, Mapping):
            unknown = sorted(str(key) for key in value if key not in ("request", "response"))
            if unknown:
                raise ValidationError(
                    f"event_hooks has unknown keys {unknown}; use 'request' and 'response'"
                )
            hooks = cls(request=value.get("request", ()), response=value.get("response", ()))
        else:
            raise ValidationError(
                "event_hooks must be a mapping {'request': [...], 'response': [...]} or an "
                f"EventHooks, got {type(value).__name__}"
            )
        if not hooks.request and not hooks.response:
            return None
        return hooks

    async def on_request(self, info: RequestInfo) -> None:
        """Call every request hook with ``info`` (awaiting the async ones), in order.

        Example::

            await hooks.on_request(info)
        """
        for hook in self.request:
            result = hook(info)
            if result is not None and inspect.isawaitable(result):
                await result

    async def on_response(self, info: ResponseInfo) -> None:
        """Call every response hook with ``info`` (awaiting the async ones), in order.

        Example::

            await hooks.on_response(info)
        """
        for hook in self.response:
            result = hook(info)
            if result is not None and inspect.isawaitable(result):
                await result


EventHooksArg = EventHooks | Mapping[str, Sequence[RequestHook] | Sequence[ResponseHook]] | None
"""What clients take as ``event_hooks``: ``{"request": [...], "response": [...]}``, an
:class:`EventHooks`, or ``None``."""
