"""The legacy SDK's retry policies (``azure.cosmosdb.table.common.retry``) and the azt
:class:`~azt.RetryPolicy` each one maps onto.

``service.retry`` takes a policy's ``retry`` method (or ``no_retry``). azt's pipeline does
the retrying, so the legacy policy is translated: ``no_retry`` sends each request once;
``LinearRetry(backoff, max_attempts)`` retries ``max_attempts`` times ``backoff`` seconds
apart; ``ExponentialRetry(initial_backoff, increment_base, max_attempts)`` retries
``max_attempts`` times from ``initial_backoff`` up to ``initial_backoff +
increment_base ** max_attempts`` seconds (azt's exponential curve between those bounds,
not the legacy one step for step). Any other callable keeps azt's default policy. What is
retried (timeouts, 408, 429, 5xx) is azt's rule.

Example::

    service.retry = LinearRetry(backoff=1, max_attempts=2).retry
"""

from __future__ import annotations

from typing import Any

from azt._core.config import RetryPolicy

__all__ = ["ExponentialRetry", "LinearRetry", "no_retry", "retry_policy_for"]


def no_retry(context: Any) -> int | None:
    """The legacy SDK's ``no_retry`` policy: assign it to ``service.retry`` to send each
    request once.

    Example::

        service.retry = no_retry
    """
    return None


class LinearRetry:
    """Retries ``max_attempts`` times, ``backoff`` seconds apart.

    Example::

        >>> LinearRetry(backoff=1, max_attempts=2).policy.max_attempts
        3
    """

    def __init__(
        self,
        backoff: float = 15,
        max_attempts: int = 3,
        retry_to_secondary: bool = False,
        random_jitter_range: float = 3,
    ) -> None:
        self.backoff = backoff
        self.max_attempts = max_attempts
        self.retry_to_secondary = retry_to_secondary
        self.random_jitter_range = random_jitter_range
        self.policy = RetryPolicy(
            max_attempts=max_attempts + 1, base=0.0, minimum=backoff, maximum=backoff
        )

    def retry(self, context: Any) -> int | None:
        """The method assigned to ``service.retry`` (azt applies :attr:`policy`).

        Example::

            service.retry = LinearRetry().retry
        """
        return None


class ExponentialRetry:
    """Retries ``max_attempts`` times with growing waits from ``initial_backoff`` (the
    legacy default: 15 s, base 3, 3 retries).

    Example::

        >>> ExponentialRetry(initial_backoff=1, increment_base=2, max_attempts=3).policy.maximum
        9.0
    """

    def __init__(
        self,
        initial_backoff: float = 15,
        increment_base: float = 3,
        max_attempts: int = 3,
        retry_to_secondary: bool = False,
        random_jitter_range: float = 3,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.increment_base = increment_base
        self.max_attempts = max_attempts
        self.retry_to_secondary = retry_to_secondary
        self.random_jitter_range = random_jitter_range
        top = float(initial_backoff + increment_base**max_attempts)
        self.policy = RetryPolicy(
            max_attempts=max_attempts + 1,
            base=float(increment_base),
            minimum=float(initial_backoff),
            maximum=top,
        )

    def retry(self, context: Any) -> int | None:
        """The method assigned to ``service.retry`` (azt applies :attr:`policy`).

        Example::

            service.retry = ExponentialRetry().retry
        """
        return None


def retry_policy_for(retry: Any) -> RetryPolicy | None:
    """The azt policy for a ``service.retry`` value; ``None``: azt's default.

    Example::

        >>> retry_policy_for(no_retry).max_attempts
        1
    """
    if retry is no_retry:
        return RetryPolicy.no_retries()
    owner = getattr(retry, "__self__", None)
    if isinstance(owner, LinearRetry | ExponentialRetry):
        return owner.policy
    return None
