"""Retry decisions and waits for the pipeline (built on tenacity): what is retryable, what
may have been applied anyway, how long to wait, and a fresh ``AsyncRetrying`` per request.

Example::

    >>> from azt._errors import error_from_response
    >>> is_retryable(error_from_response(503, "ServerBusy", "busy"))
    True
    >>> is_retryable(error_from_response(501, "NotImplemented", "no"))
    False
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from azt._core.config import RetryPolicy
from azt._core.logs import RETRY_LOGGER, redact_text
from azt._errors import ServiceConnectionError, ServiceError, TransportError

RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses retried by name; other 5xx (except 501 and 505) are retried too."""

NEVER_RETRIED_5XX = frozenset({501, 505})

# Answers that say the request was refused before it was processed.
_NOT_APPLIED_STATUSES = frozenset({408, 429, 503})

Sleep = Callable[[float], Awaitable[None]]


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed attempt should be retried: 408, 429, every 5xx except 501 and 505,
    connection errors and client timeouts; never another 4xx.

    Example::

        >>> from azt._errors import ServiceTimeoutError
        >>> is_retryable(ServiceTimeoutError("slow"))
        True
    """
    if isinstance(exc, TransportError):
        return True
    if isinstance(exc, ServiceError):
        status = exc.status
        if status in RETRYABLE_STATUSES:
            return True
        return status >= 500 and status not in NEVER_RETRIED_5XX
    return False


def may_have_been_applied(exc: BaseException) -> bool:
    """Whether the service may have applied a request whose attempt failed with ``exc``.

    A refused connection (nothing sent), ``408``, ``429`` and ``503`` mean "not
    processed"; a lost or timed-out response and other 5xx answers leave it open.

    Example::

        >>> from azt._errors import ServiceConnectionError, error_from_response
        >>> may_have_been_applied(ServiceConnectionError("reset", sent=True))
        True
        >>> may_have_been_applied(error_from_response(503, "ServerBusy", "busy"))
        False
        >>> may_have_been_applied(error_from_response(500, "OperationTimedOut", "slow"))
        True
    """
    if isinstance(exc, ServiceConnectionError):
        return exc.sent
    if isinstance(exc, TransportError):
        return True
    if isinstance(exc, ServiceError):
        return exc.status >= 500 and exc.status not in _NOT_APPLIED_STATUSES
    return False


#: The least span (seconds) of the random time added to a service's retry hint.
HINT_JITTER_FLOOR = 0.05


def hinted_wait(
    hint: float,
    retry_number: int,
    maximum: float,
    uniform: Callable[[float, float], float] = random.uniform,
) -> float:
    """A wait that honours the service's hint as a floor, plus a random time so that
    clients throttled together do not come back together: ``hint + U(0, span)`` with
    ``span = min(maximum, max(hint, 0.05 s) * 2**(retry_number - 1))`` (the span doubles
    with each retry, as load that keeps being refused needs spreading further).

    Example::

        >>> hinted_wait(0.25, 1, 90.0, uniform=lambda lo, hi: hi)
        0.5
        >>> hinted_wait(0.25, 3, 90.0, uniform=lambda lo, hi: lo)
        0.25
        >>> hinted_wait(0.25, 3, 90.0, uniform=lambda lo, hi: hi)
        1.25
    """
    span = min(maximum, max(hint, HINT_JITTER_FLOOR) * 2.0 ** min(retry_number - 1, 32))
    return hint + uniform(0.0, span)


def is_throttled(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a ``429 Too Many Requests``: the Cosmos DB Table API's
    throttling, with ``x-ms-retry-after-ms`` or (as recorded in 2020) without it. Azure
    Table storage throttles with ``503 ServerBusy`` instead.

    Example::

        >>> from azt._errors import error_from_response
        >>> is_throttled(error_from_response(429, "429", "Request rate is large"))
        True
        >>> is_throttled(error_from_response(503, "ServerBusy", "busy"))
        False
    """
    return isinstance(exc, ServiceError) and exc.status == 429


class BackoffWait(wait_base):
    """tenacity wait: the policy's jittered exponential delay, or the service's retry hint
    plus jitter (:func:`hinted_wait`) when that is longer.

    Example::

        >>> wait = BackoffWait(RetryPolicy(base=1, minimum=0, maximum=10),
        ...                    uniform=lambda lo, hi: lo)
        >>> wait.delay(1, None), wait.delay(3, None)
        (0.0, 2.4000000000000004)
    """

    def __init__(
        self,
        policy: RetryPolicy,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self.policy = policy
        self.uniform = uniform

    def delay(self, retry_number: int, exc: BaseException | None) -> float:
        """The delay before retry ``retry_number`` (1 for the first) after ``exc``.

        A ``429`` (the Cosmos DB Table API's throttling answer) waits :func:`hinted_wait`
        of its hint (0 without one): never less than the service asks (its request units
        are not back before), and not the policy's back-off, which (3 s at least by
        default) would idle far longer than the milliseconds Cosmos asks for. Any other
        hint is a floor too: the wait is the longer of the policy's back-off and
        :func:`hinted_wait`. The random part keeps clients throttled together from coming
        back in lockstep.
        """
        policy = self.policy
        if isinstance(exc, ServiceError):
            hint = exc.retry_after
            if is_throttled(exc):
                floor = hint if hint is not None else 0.0
                return hinted_wait(floor, retry_number, policy.maximum, self.uniform)
            delay = policy.backoff(retry_number, self.uniform)
            if hint is None:
                return delay
            return max(delay, hinted_wait(hint, retry_number, policy.maximum, self.uniform))
        return policy.backoff(retry_number, self.uniform)

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        return self.delay(retry_state.attempt_number, exc)


def _log_retry(method: str, url: str) -> Callable[[RetryCallState], None]:
    def before_sleep(retry_state: RetryCallState) -> None:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        delay = retry_state.next_action.sleep if retry_state.next_action is not None else 0.0
        reason = _describe(exc)
        # The attempt number of azt.http's records: the pipeline's count of sends (a resend
        # after a refused bearer token included), which tenacity's count of tries is not.
        failed = (
            exc.attempts
            if isinstance(exc, ServiceError | TransportError)
            else retry_state.attempt_number
        )
        RETRY_LOGGER.warning(
            "retrying %s %s: attempt %d failed (%s); next attempt in %.3f s",
            method,
            url,
            failed,
            reason,
            delay,
            extra={
                "method": method,
                "url": url,
                "attempt": failed,
                "reason": reason,
                "wait": delay,
                "status": exc.status if isinstance(exc, ServiceError) else None,
            },
        )

    return before_sleep


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "no exception"
    if isinstance(exc, ServiceError):
        return f"{exc.status} {exc.code or ''}".strip()
    return redact_text(f"{type(exc).__name__}: {exc}")


_RETRY_PREDICATE = retry_if_exception(is_retryable)


class StopPolicy(stop_base):
    """tenacity stop: the policy's attempts (``max_attempts``; after a ``429``,
    :func:`is_throttled`, ``throttled_attempts``, with the waits within
    ``throttled_total_delay``, as the Cosmos DB SDKs budget rate-limited requests) and its
    ``max_total_delay``.

    Example::

        >>> StopPolicy(RetryPolicy()).policy.throttled_attempts
        10
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy

    def __call__(self, retry_state: RetryCallState) -> bool:
        policy = self.policy
        outcome = retry_state.outcome
        waited = retry_state.idle_for + retry_state.upcoming_sleep
        if is_throttled(outcome.exception() if outcome is not None else None):
            if retry_state.attempt_number >= policy.throttled_attempts:
                return True
            if waited > policy.throttled_total_delay:
                return True
        elif retry_state.attempt_number >= policy.max_attempts:
            return True
        return policy.max_total_delay is not None and waited > policy.max_total_delay


def new_retrying(
    policy: RetryPolicy,
    *,
    sleep: Sleep,
    method: str,
    url: str,
    uniform: Callable[[float, float], float] = random.uniform,
) -> AsyncRetrying:
    """A fresh ``AsyncRetrying`` for one request (``url`` should already be redacted),
    logging one WARNING per retry on ``azt.retry`` (method, URL, attempt, why, the wait;
    the same values in the record's ``extra``).

    Example::

        >>> import asyncio
        >>> async def no_sleep(_): pass
        >>> r = new_retrying(RetryPolicy(max_attempts=2), sleep=no_sleep, method="GET", url="u")
        >>> r.stop.policy.max_attempts
        2
    """
    return AsyncRetrying(
        stop=StopPolicy(policy),
        wait=BackoffWait(policy, uniform),
        retry=_RETRY_PREDICATE,
        sleep=sleep,
        reraise=True,
        before_sleep=_log_retry(method, url),
    )
