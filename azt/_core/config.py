"""Frozen option objects: retry policy, timeouts, pool limits, wire format, ambiguity policy.

All of them are immutable ``attrs`` classes validated on construction, so a client's
configuration cannot change under a running request.

Example::

    >>> policy = RetryPolicy(max_attempts=6, base=0.5, minimum=0.1, maximum=10.0)
    >>> policy.max_attempts
    6
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable

import attrs

from azt._edm.validation import COSMOS_LIMITS, STORAGE_LIMITS, ServiceLimits
from azt._errors import UnsupportedOperationError, ValidationError

DEFAULT_API_VERSION = "2019-02-02"
"""The ``x-ms-version`` sent by default (the current Table REST spec's version)."""

ATOM_API_VERSION = "2015-04-05"
"""The ``x-ms-version`` used for AtomPub requests (Atom needs a version before 2015-12-11)."""


class WireFormat(enum.Enum):
    """The payload format a client speaks.

    ``JSON_MINIMAL`` (default) asks for ``application/json;odata=minimalmetadata``;
    ``JSON_FULL`` for full metadata; ``JSON_NONE`` for no metadata (values come back as JSON
    gave them: Int64, DateTime, Guid and Binary arrive as plain strings); ``ATOM`` speaks
    AtomPub XML at ``x-ms-version`` 2015-04-05.

    Example::

        >>> WireFormat.JSON_MINIMAL.accept
        'application/json;odata=minimalmetadata'
    """

    JSON_MINIMAL = "application/json;odata=minimalmetadata"
    JSON_FULL = "application/json;odata=fullmetadata"
    JSON_NONE = "application/json;odata=nometadata"
    ATOM = "application/atom+xml"

    @property
    def accept(self) -> str:
        """The ``Accept`` header value for OData operations.

        Example::

            >>> WireFormat.ATOM.accept
            'application/atom+xml'
        """
        return self.value

    @property
    def is_json(self) -> bool:
        """True for the three JSON levels.

        Example::

            >>> WireFormat.JSON_NONE.is_json, WireFormat.ATOM.is_json
            (True, False)
        """
        return self is not WireFormat.ATOM


class Flavor(enum.Enum):
    """Which service an account is: Azure Table storage or the Azure Cosmos DB Table API.

    Clients derive it from the endpoint (:func:`azt.is_cosmos_endpoint`:
    ``*.table.cosmos.azure.com`` and the older ``*.table.cosmosdb.azure.com`` are Cosmos)
    unless ``flavor=`` says otherwise (a custom domain in front of Cosmos, or the stub's
    Cosmos flavour on 127.0.0.1). The flavour decides the client-side limits
    (:attr:`limits`), the table-name rule, and which operations are refused before
    sending with :class:`azt.UnsupportedOperationError` (:attr:`unsupported`); see
    ``docs/cosmos.md`` for the differences and their sources.

    Example::

        >>> Flavor("cosmos").limits.max_row_key_bytes
        255
        >>> "get_service_stats" in Flavor.COSMOS.unsupported
        True
    """

    STORAGE = "storage"
    COSMOS = "cosmos"

    @property
    def limits(self) -> ServiceLimits:
        """The flavour's entity and batch limits.

        Example::

            >>> Flavor.STORAGE.limits.max_batch_bytes
            4194304
        """
        return COSMOS_LIMITS if self is Flavor.COSMOS else STORAGE_LIMITS

    @property
    def unsupported(self) -> frozenset[str]:
        """Client operations the flavour lacks (refused before sending).

        Example::

            >>> sorted(Flavor.STORAGE.unsupported)
            []
        """
        return _COSMOS_UNSUPPORTED if self is Flavor.COSMOS else frozenset()

    @property
    def tunnels_merge(self) -> bool:
        """Whether a merge goes out as ``POST`` with ``X-HTTP-Method: MERGE`` (Cosmos DB,
        whose recorded answers accept that form and refuse ``PATCH``) instead of the
        ``MERGE`` verb (Azure Table storage), in a request and in a change set part.

        Example::

            >>> Flavor.COSMOS.tunnels_merge, Flavor.STORAGE.tunnels_merge
            (True, False)
        """
        return self is Flavor.COSMOS

    def require(self, operation: str) -> None:
        """Raise :class:`azt.UnsupportedOperationError` if the flavour lacks ``operation``.

        Example::

            >>> Flavor.STORAGE.require("get_access_policy")
            >>> Flavor.COSMOS.require("get_access_policy")
            Traceback (most recent call last):
            ...
            azt._errors.UnsupportedOperationError: get_access_policy is not supported by ...
        """
        if operation in self.unsupported:
            raise UnsupportedOperationError(
                operation, self.value, _COSMOS_REASONS.get(operation, "")
            )


_COSMOS_REASONS = {
    "get_service_properties": "CORS, logging and metrics are not configured through the "
    "Table API (the Cosmos DB FAQ lists Get/Set Table Service Properties as unsupported)",
    "set_service_properties": "CORS, logging and metrics are not configured through the "
    "Table API (the Cosmos DB FAQ lists Get/Set Table Service Properties as unsupported)",
    "get_service_stats": "there is no readable secondary to report on; Cosmos DB replicates "
    "as part of each write",
    "get_access_policy": "stored access policies (Get/Set Table ACL) are managed "
    "differently on Cosmos DB",
    "set_access_policy": "stored access policies (Get/Set Table ACL) are managed "
    "differently on Cosmos DB",
    "secondary endpoint": "Cosmos DB has no -secondary endpoint (it distributes globally "
    "instead); use LocationMode.PRIMARY",
    "WireFormat.ATOM": "the Cosmos DB Table API speaks JSON only",
}
_COSMOS_UNSUPPORTED = frozenset(_COSMOS_REASONS)


class AmbiguousOutcomePolicy(enum.Enum):
    """What to do when a retried write meets an error its own first attempt may have caused.

    The Table service may apply a write whose response is then lost (a dropped connection,
    a client timeout, ``500 OperationTimedOut``). The retry then meets
    ``409 EntityAlreadyExists`` (insert), ``404`` (delete or update) or ``412`` (a write
    conditional on an ETag the first attempt already changed).

    ``RAISE`` (default): raise :class:`azt.AmbiguousOutcomeError`, which says the first
    attempt may have succeeded and carries the final service error.

    ``ASSUME_SUCCEEDED``: resolve it: a delete that meets 404 is treated as done; an
    insert that meets 409, or an update that meets 412/404, reads the entity back and
    compares it with what was sent: if every sent property is there with the sent value
    (all of them and nothing else for insert/replace), the write is reported as succeeded
    with the stored ETag; otherwise the ordinary service error is raised, because somebody
    else's entity is in the way. An entity group transaction cannot be verified cheaply and
    always raises :class:`azt.AmbiguousOutcomeError`.

    ``REPORT_ERROR``: raise the ordinary service error (as if no retry had happened);
    ``exc.earlier_attempt_may_have_applied`` still tells the story.

    Example::

        >>> AmbiguousOutcomePolicy("raise") is AmbiguousOutcomePolicy.RAISE
        True
    """

    RAISE = "raise"
    ASSUME_SUCCEEDED = "assume_succeeded"
    REPORT_ERROR = "report_error"


class LocationMode(enum.Enum):
    """Where a client sends its reads (RA-GRS accounts).

    ``PRIMARY`` (default): everything goes to the primary endpoint. ``SECONDARY``: entity
    reads (``get_entity``, ``query_entities``) and table listings go to the read-only
    secondary endpoint; a ``404`` there (the data may not have replicated yet) is retried
    once against the primary. ``PRIMARY_THEN_SECONDARY``: reads go to the primary; when
    its retries are used up on a retryable failure (5xx, 408, 429, connection errors,
    timeouts), the read is tried on the secondary (with its own retries). Writes, ACLs and
    service properties always use the primary; ``get_service_stats`` always uses the
    secondary.

    Example::

        >>> LocationMode("secondary") is LocationMode.SECONDARY
        True
    """

    PRIMARY = "primary"
    SECONDARY = "secondary"
    PRIMARY_THEN_SECONDARY = "primary_then_secondary"


def validate_server_timeout(value: object) -> int | None:
    """Check a server-side ``timeout=`` value in seconds (an int >= 1, or ``None``).

    Example::

        >>> validate_server_timeout(5)
        5
    """
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValidationError(
            f"server_timeout must be an int >= 1 (seconds) or None, got {value!r}"
        )
    return value


def _positive_int(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValidationError(f"{attribute.name} must be an int >= 1, got {value!r}")


def _non_negative(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
        raise ValidationError(f"{attribute.name} must be a number >= 0, got {value!r}")


@attrs.frozen
class RetryPolicy:
    """Exponential back-off with ±20 % jitter, bounded below and above.

    The delay before retry ``n``, counted from 0, is the storage client's ``ExponentialRetry``
    schedule (the partitioning guide's formula, PROTOCOL.md 12.2):
    ``min(maximum, minimum + (2**n − 1) · U(0.8·base, 1.2·base))``. So the first retry
    waits exactly ``minimum``, the second ``minimum + base`` ± 20 %, the third
    ``minimum + 3·base`` ± 20 %, and so on up to ``maximum``. The defaults are that guide's
    (base 30 s, minimum 3 s, maximum 90 s: about 3 s, 33 s, 90 s) and the storage client's
    three retries, i.e. ``max_attempts=4`` in all. A ``Retry-After`` /
    ``x-ms-retry-after-ms`` sent by the service is a floor: the wait is at least the hint
    plus a random time (``hint + U(0, span)``, the span ``max(hint, 50 ms)`` doubling with
    each retry, at most ``maximum``), so that clients refused together do not retry
    together. A ``429`` (Cosmos DB's throttling, with or without ``x-ms-retry-after-ms``)
    waits that hinted time (hint 0 without one) instead of the back-off, whose 3 s would
    idle far longer than asked.

    A throttled request (``429``) gets its own budget, the Cosmos DB SDKs' defaults
    (``MaxRetryAttemptsOnRateLimitedRequests`` 9, ``MaxRetryWaitTimeOnRateLimitedRequests``
    30 s): ``throttled_attempts`` attempts in all (default 10) while its waits stay within
    ``throttled_total_delay`` seconds (default 30).

    Retried: 408, 429, 500, 502, 503, 504, connection errors and client timeouts. Never:
    other 4xx, 501, 505.

    ``max_total_delay`` (default ``None``: no budget) caps the back-off slept for one
    request: a retry whose wait would take the total past it is not made.

    Example::

        >>> fast = RetryPolicy(max_attempts=5, base=0.1, minimum=0.05, maximum=2.0)
        >>> fast.backoff(1)
        0.05
        >>> 0.05 + 0.08 <= fast.backoff(2) <= 0.05 + 0.12
        True
        >>> RetryPolicy.no_retries().max_attempts
        1
    """

    max_attempts: int = attrs.field(default=4, validator=_positive_int)
    base: float = attrs.field(default=30.0, validator=_non_negative)
    minimum: float = attrs.field(default=3.0, validator=_non_negative)
    maximum: float = attrs.field(default=90.0, validator=_non_negative)
    jitter: float = attrs.field(default=0.2, validator=_non_negative)
    max_total_delay: float | None = attrs.field(default=None)
    throttled_attempts: int = attrs.field(default=10, validator=_positive_int)
    throttled_total_delay: float = attrs.field(default=30.0, validator=_non_negative)

    def __attrs_post_init__(self) -> None:
        budget = self.max_total_delay
        if budget is not None and (
            not isinstance(budget, int | float) or isinstance(budget, bool) or not budget >= 0
        ):
            raise ValidationError(f"max_total_delay must be a number >= 0 or None, got {budget!r}")
        if self.minimum > self.maximum:
            raise ValidationError(
                f"RetryPolicy minimum ({self.minimum}) is greater than maximum ({self.maximum})"
            )
        if self.jitter >= 1:
            raise ValidationError(f"RetryPolicy jitter must be < 1, got {self.jitter}")

    @classmethod
    def no_retries(cls) -> RetryPolicy:
        """A policy that makes exactly one attempt.

        Example::

            >>> RetryPolicy.no_retries().max_attempts
            1
        """
        return cls(max_attempts=1, throttled_attempts=1)

    def backoff(
        self, retry_number: int, uniform: Callable[[float, float], float] = random.uniform
    ) -> float:
        """The delay in seconds before retry ``retry_number`` (1 for the first retry, as
        tenacity counts attempts): the schedule's ``n`` is ``retry_number - 1``.

        Example::

            >>> mid = lambda lo, hi: (lo + hi) / 2
            >>> [RetryPolicy().backoff(r, uniform=mid) for r in (1, 2, 3)]
            [3.0, 33.0, 90.0]
        """
        if retry_number < 1:
            raise ValidationError(f"retry_number must be >= 1, got {retry_number}")
        n = retry_number - 1
        factor = uniform((1.0 - self.jitter) * self.base, (1.0 + self.jitter) * self.base)
        # 2**n grows without bound; cap the exponent so huge attempt counts stay finite.
        increment = factor * (2.0 ** min(n, 64) - 1.0)
        return min(self.minimum + increment, self.maximum)


@attrs.frozen
class Timeouts:
    """Client-side timeouts in seconds (``None`` disables one).

    ``total`` bounds one HTTP attempt from start to the last byte of the answer;
    ``connect`` bounds getting a connection (from the pool or new); ``read`` bounds the
    wait for each chunk of the response. A timeout is retried like a lost connection.

    Example::

        >>> Timeouts(total=30).total
        30
    """

    total: float | None = attrs.field(default=120.0)
    connect: float | None = attrs.field(default=20.0)
    read: float | None = attrs.field(default=60.0)

    def __attrs_post_init__(self) -> None:
        for name in ("total", "connect", "read"):
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
                raise ValidationError(f"{name} must be a number > 0 or None, got {value!r}")


@attrs.frozen
class PoolLimits:
    """Connection pool limits for the client's single ``aiohttp`` connector.

    ``max_connections`` caps open connections (0 = unlimited), ``max_connections_per_host``
    caps them per host (0 = unlimited), ``keepalive_timeout`` closes idle pooled
    connections after that many seconds, ``dns_cache_ttl`` caches DNS answers.

    Example::

        >>> PoolLimits(max_connections=10).max_connections
        10
    """

    max_connections: int = attrs.field(default=100)
    max_connections_per_host: int = attrs.field(default=0)
    keepalive_timeout: float = attrs.field(default=15.0, validator=_non_negative)
    dns_cache_ttl: int | None = attrs.field(default=300)

    def __attrs_post_init__(self) -> None:
        for name in ("max_connections", "max_connections_per_host"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValidationError(f"{name} must be an int >= 0, got {value!r}")
