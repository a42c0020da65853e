"""``Pipeline.send``: retry -> fresh date, request id and signature per attempt -> transport
-> typed errors.

Example::

    >>> import asyncio
    >>> from azt._core.transport import MockTransport, HttpResponse
    >>> from azt._core.connection_string import Endpoint, DEV_ACCOUNT_KEY
    >>> from azt._core.auth import SharedKeyCredential
    >>> seen = []
    >>> def handler(req):
    ...     seen.append(req.headers["Authorization"].split(":")[0])
    ...     return HttpResponse(204, {"x-ms-request-id": "r1"})
    >>> pipe = Pipeline(Endpoint.parse("http://127.0.0.1:10002/devstoreaccount1"),
    ...                 SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY),
    ...                 MockTransport(handler))
    >>> resp = asyncio.run(pipe.send("DELETE", "/Tables('t')", resource="table"))
    >>> resp.status, seen
    (204, ['SharedKey devstoreaccount1'])
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from collections.abc import Callable, Mapping
from os import urandom

from azt._core.auth import BearerTokenCredential, SasCredential, SharedKeyCredential
from azt._core.config import DEFAULT_API_VERSION, RetryPolicy
from azt._core.connection_string import Endpoint
from azt._core.hooks import EventHooks, RequestInfo, ResponseInfo
from azt._core.logs import HTTP_LOGGER, log_attempt, redact_headers, redact_text, redact_url
from azt._core.retry import Sleep, is_retryable, may_have_been_applied, new_retrying
from azt._core.signing import HttpDate
from azt._core.tracing import current_operation, traced_attempt
from azt._core.transport import HttpRequest, HttpResponse, Transport
from azt._core.wire import atom as wire_atom
from azt._core.wire import json as wire_json
from azt._core.wire import xml as wire_xml
from azt._errors import (
    ResourceKind,
    ServiceError,
    TransportError,
    ValidationError,
    error_from_response,
)

_DEBUG = logging.DEBUG

USER_AGENT = "azt/0.1.0 (Python)"

AnyCredential = SharedKeyCredential | SasCredential | BearerTokenCredential


class _Sends:
    """How many HTTP sends one logical request has made so far (retries and the resend
    after a bearer 401 alike): each send's attempt number is the count after it."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class Pipeline:
    """Sends requests for one endpoint with one credential over one transport.

    ``send`` returns the response of a successful (2xx) attempt or raises the typed error
    of the last attempt. ``sleep`` is injectable (tests pass a recorder instead of
    ``asyncio.sleep``) and so is ``uniform`` (the jitter source). ``event_hooks`` are
    called around every attempt (:class:`azt.EventHooks`); every attempt is logged at
    DEBUG on ``azt.http`` (:func:`azt._core.logs.log_attempt`); inside a traced operation
    every attempt is a span (:func:`azt._core.tracing.traced_attempt`).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        credential: AnyCredential,
        transport: Transport,
        *,
        retry: RetryPolicy | None = None,
        api_version: str = DEFAULT_API_VERSION,
        sleep: Sleep | None = None,
        uniform: Callable[[float, float], float] = random.uniform,
        user_agent: str | None = None,
        event_hooks: EventHooks | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.event_hooks = event_hooks
        self.credential = credential
        self.transport = transport
        self.retry = retry or RetryPolicy()
        self.api_version = api_version
        self.sleep: Sleep = sleep or asyncio.sleep
        self.uniform = uniform
        self.user_agent = user_agent or USER_AGENT
        self._base = endpoint.url
        self._prefix = endpoint.path
        self._date = HttpDate()
        if isinstance(credential, BearerTokenCredential) and endpoint.scheme != "https":
            host = endpoint.netloc.rsplit(":", 1)[0].strip("[]").lower()
            if host not in ("127.0.0.1", "localhost", "::1"):
                raise ValidationError(
                    "bearer tokens are only sent over https (or to a loopback emulator)"
                )

    def url_for(self, path: str, query: str = "") -> str:
        """The full request URL (without any SAS token) for ``path`` and ``query``."""
        url = self._base + path
        if query:
            url += "?" + query
        return url

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        comp: str | None = None,
        resource: ResourceKind | None = None,
    ) -> HttpResponse:
        """Send one logical request, retrying per the policy.

        ``path`` is relative to the endpoint and already percent-encoded (``"/Tables"``,
        ``"/t(PartitionKey='a',RowKey='b')"``); ``query`` an encoded query string without
        ``?``; ``comp`` the ``comp`` parameter included in SharedKey signatures;
        ``resource`` what was addressed (decides how a 404 is classified).
        """
        # The URL string is built here (endpoint + path + query, all already percent-encoded) so
        # the signed path is byte for byte the one on the wire. Every attempt gets a new
        # x-ms-date/Date, x-ms-client-request-id and signature; the final error of a retried
        # request records its attempts and whether an earlier attempt may have been applied.
        # ``plain_url`` is what logs and hooks show: never the SAS credential's token, which
        # each attempt adds (so that a rotated token is used by the next attempt).
        plain_url = url = self.url_for(path, query)
        base_headers = {
            "x-ms-version": self.api_version,
            "User-Agent": self.user_agent,
        }
        if headers:
            base_headers.update(headers)
        sign_path = self._prefix + path
        policy = self.retry
        # Attempt 1 runs without tenacity (the common, successful case costs nothing more);
        # only a retryable failure builds the request's fresh AsyncRetrying, whose first
        # "attempt" replays that failure so waits, logging and the stop rule stay tenacity's.
        # ``sends`` numbers every HTTP send of the request (the resend after a bearer 401
        # included): the number logs, hooks and spans show and ``attempts`` records.
        sends = _Sends()
        try:
            response = await self._attempt(
                method, url, plain_url, base_headers, body, sign_path, comp, resource, sends
            )
        except (ServiceError, TransportError) as exc:
            exc.attempts = sends.count
            if policy.max_attempts == 1 or not is_retryable(exc):
                raise
            first_failure: ServiceError | TransportError = exc
        else:
            response.attempts = sends.count
            return response

        maybe_applied = may_have_been_applied(first_failure)
        attempt_number = 0
        retrying = new_retrying(
            policy,
            sleep=self.sleep,
            method=method,
            url=redact_url(plain_url),
            uniform=self.uniform,
        )
        async for attempt in retrying:
            with attempt:
                attempt_number += 1
                if attempt_number == 1:
                    raise first_failure
                try:
                    response = await self._attempt(
                        method,
                        url,
                        plain_url,
                        base_headers,
                        body,
                        sign_path,
                        comp,
                        resource,
                        sends,
                    )
                    response.attempts = sends.count
                    response.earlier_attempt_may_have_applied = maybe_applied
                    return response
                except (ServiceError, TransportError) as exc:
                    exc.attempts = sends.count
                    exc.earlier_attempt_may_have_applied = maybe_applied
                    if may_have_been_applied(exc):
                        maybe_applied = True
                    raise
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    async def _attempt(
        self,
        method: str,
        url: str,
        plain_url: str,
        base_headers: dict[str, str],
        body: bytes | None,
        sign_path: str,
        comp: str | None,
        resource: ResourceKind | None,
        sends: _Sends,
        *,
        refresh_token_on_401: bool = True,
    ) -> HttpResponse:
        sends.count += 1
        attempt = sends.count
        headers = dict(base_headers)
        date = self._date.now()
        headers["x-ms-date"] = date
        headers["Date"] = date
        client_request_id = uuid4_text(urandom(16))
        headers["x-ms-client-request-id"] = client_request_id
        credential = self.credential
        # Credentials are read per attempt, so a key or SAS rotated meanwhile is used.
        if isinstance(credential, SasCredential):
            request = HttpRequest(method, credential.apply_to_url(url), headers, body)
        else:
            request = HttpRequest(method, url, headers, body)
        if isinstance(credential, SharedKeyCredential):
            credential.sign(request, sign_path, comp)
        elif isinstance(credential, BearerTokenCredential):
            headers["Authorization"] = await credential.get_header()
        hooks = self.event_hooks
        traced = current_operation()
        if traced is not None:
            # An attempt span, its context sent as ``traceparent`` (no Table signature covers it).
            observed = hooks is not None or HTTP_LOGGER.isEnabledFor(_DEBUG)
            response = await traced_attempt(
                traced,
                request,
                plain_url,
                attempt,
                functools.partial(
                    self._observed_send, plain_url=plain_url, attempt=attempt, hooks=hooks
                )
                if observed
                else self.transport.send,
            )
        elif hooks is None and not HTTP_LOGGER.isEnabledFor(_DEBUG):
            response = await self.transport.send(request)
        else:
            response = await self._observed_send(request, plain_url, attempt, hooks)
        if (
            response.status == 401
            and refresh_token_on_401
            and isinstance(credential, BearerTokenCredential)
        ):
            # The service refused the token (expired early, revoked, clock skew): fetch a
            # fresh one and try once more; a second 401 is the caller's error.
            HTTP_LOGGER.info(
                "%s %s: 401 with a bearer token; retrying once with a new token",
                method,
                redact_url(plain_url),
                extra={"method": method, "url": redact_url(plain_url), "attempt": attempt},
            )
            credential.invalidate(headers["Authorization"])
            return await self._attempt(
                method,
                url,
                plain_url,
                base_headers,
                body,
                sign_path,
                comp,
                resource,
                sends,
                refresh_token_on_401=False,
            )
        if response.status >= 300:
            raise self.error_for(response, resource, client_request_id)
        return response

    async def _observed_send(
        self,
        request: HttpRequest,
        plain_url: str,
        attempt: int,
        hooks: EventHooks | None,
    ) -> HttpResponse:
        """Send ``request`` with its DEBUG record and hooks (the slow path: only taken when
        a hook is set or ``azt.http`` is enabled for DEBUG)."""
        log_url = redact_url(plain_url)
        request_size = len(request.body) if request.body is not None else 0
        info: RequestInfo | None = None
        if hooks is not None:
            info = RequestInfo(
                request.method,
                log_url,
                redact_headers(request.headers),
                attempt=attempt,
                body_size=request_size,
            )
            await hooks.on_request(info)
        client_request_id = request.headers["x-ms-client-request-id"]
        start = time.perf_counter()
        try:
            response = await self.transport.send(request)
        except TransportError as exc:
            duration = time.perf_counter() - start
            reason = redact_text(f"{type(exc).__name__}: {exc}")
            if HTTP_LOGGER.isEnabledFor(_DEBUG):
                log_attempt(
                    request.method,
                    log_url,
                    attempt=attempt,
                    status=None,
                    duration=duration,
                    request_id=None,
                    client_request_id=client_request_id,
                    request_size=request_size,
                    response_size=None,
                    error=reason,
                )
            if hooks is not None and info is not None:
                await hooks.on_response(
                    ResponseInfo(info, None, {}, duration=duration, body_size=0, error=exc)
                )
            raise
        duration = time.perf_counter() - start
        if HTTP_LOGGER.isEnabledFor(_DEBUG):
            log_attempt(
                request.method,
                log_url,
                attempt=attempt,
                status=response.status,
                duration=duration,
                request_id=response.headers.get("x-ms-request-id"),
                client_request_id=client_request_id,
                request_size=request_size,
                response_size=len(response.body),
            )
        if hooks is not None and info is not None:
            await hooks.on_response(
                ResponseInfo(
                    info,
                    response.status,
                    response.headers,
                    duration=duration,
                    body_size=len(response.body),
                )
            )
        return response

    @staticmethod
    def error_for(
        response: HttpResponse,
        resource: ResourceKind | None = None,
        client_request_id: str | None = None,
    ) -> ServiceError:
        """The typed error for a failed response (code from ``x-ms-error-code``, then body)."""
        headers = response.headers
        code, message = decode_error_body(headers.get("Content-Type", ""), response.body)
        header_code = headers.get("x-ms-error-code")
        if header_code:
            code = header_code
        if not message:
            message = response.reason or f"HTTP {response.status}"
        return error_from_response(
            response.status,
            code,
            message,
            request_id=headers.get("x-ms-request-id"),
            client_request_id=headers.get("x-ms-client-request-id") or client_request_id,
            headers=headers,
            resource=resource,
        )


def uuid4_text(raw: bytes) -> str:
    """``str(uuid.UUID(bytes=raw, version=4))`` for 16 random bytes ``raw``: the text of a
    version 4 UUID (what ``str(uuid.uuid4())`` gives for the same bytes), written without
    building the ``UUID``. Each attempt's ``x-ms-client-request-id``.

    Example::

        >>> uuid4_text(bytes(range(16)))
        '00010203-0405-4607-8809-0a0b0c0d0e0f'
    """
    b = bytearray(raw)
    b[6] = (b[6] & 0x0F) | 0x40  # the version, 4
    b[8] = (b[8] & 0x3F) | 0x80  # the variant, RFC 4122
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def decode_error_body(content_type: str, body: bytes) -> tuple[str | None, str | None]:
    """``(code, message)`` from an error body in any of the service's three formats.

    JSON ``odata.error``, OData XML ``<m:error>`` and storage XML ``<Error>``, read by the
    wire codecs' own error decoders; a body that is none of them yields
    ``(None, <its text>)`` so nothing is lost.

    Example::

        >>> decode_error_body("application/json",
        ...     b'{"odata.error":{"code":"TableNotFound","message":{"value":"gone"}}}')
        ('TableNotFound', 'gone')
        >>> decode_error_body("application/xml",
        ...     b'<?xml version="1.0"?><Error><Code>AuthenticationFailed</Code>'
        ...     b'<Message>bad sig</Message></Error>')
        ('AuthenticationFailed', 'bad sig')
    """
    if not body:
        return None, None
    ctype = content_type.lower()
    start = body.lstrip()[:1]
    code: str | None = None
    message: str | None = None
    if "json" in ctype or start == b"{":
        code, message = wire_json.decode_error(body)
    elif "xml" in ctype or start in (b"<", b"\xef"):
        code, message = wire_atom.decode_error(body)  # OData <m:error>
        if code is None and message is None:
            code, message, _ = wire_xml.decode_storage_error(body)  # storage <Error>
    code = code.strip() or None if code else None
    message = message.strip() or None if message else None
    if code is None and message is None:
        text = body.decode("utf-8", "replace").strip()
        return None, text[:2000] or None
    return code, message
