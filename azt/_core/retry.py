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

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
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


class BackoffWait(wait_base):
    """tenacity wait: the policy's jittered exponential delay, at least ``Retry-After``.

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

        A ``429`` carrying ``x-ms-retry-after-ms`` (the Cosmos DB Table API's throttling
        answer) waits exactly that long: the service says when its request units are
        available again, and the policy's back-off (3 s at least by default) would idle far
        longer than the milliseconds it asks for. Any other hint is a lower bound.
        """
        if isinstance(exc, ServiceError):
            hint = exc.retry_after
            if hint is not None and exc.status == 429 and _has_ms_hint(exc):
                return hint
            delay = self.policy.backoff(retry_number, self.uniform)
            return hint if hint is not None and hint > delay else delay
        return self.policy.backoff(retry_number, self.uniform)

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        exc = outcome.exception() if outcome is not None else None
        return self.delay(retry_state.attempt_number, exc)


def _has_ms_hint(exc: ServiceError) -> bool:
    return any(name.lower() == "x-ms-retry-after-ms" for name in exc.headers)


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


class StopOnDelayBudget(stop_base):
    """tenacity stop: give up when the next wait would push the request's total back-off
    past ``budget`` seconds (counted from the waits, so an injected sleep counts too).

    Example::

        >>> StopOnDelayBudget(10.0).budget
        10.0
    """

    def __init__(self, budget: float) -> None:
        self.budget = budget

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.idle_for + retry_state.upcoming_sleep > self.budget


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
        >>> r.stop.max_attempt_number
        2
    """
    stop: stop_base = stop_after_attempt(policy.max_attempts)
    if policy.max_total_delay is not None:
        stop = stop | StopOnDelayBudget(policy.max_total_delay)
    return AsyncRetrying(
        stop=stop,
        wait=BackoffWait(policy, uniform),
        retry=_RETRY_PREDICATE,
        sleep=sleep,
        reraise=True,
        before_sleep=_log_retry(method, url),
    )
