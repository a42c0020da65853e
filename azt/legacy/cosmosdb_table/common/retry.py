"""Stands in for ``azure.cosmosdb.table.common.retry``: ``no_retry``, ``LinearRetry`` and
``ExponentialRetry`` (assign ``no_retry`` or a policy's ``retry`` to ``service.retry``;
see :mod:`azt.legacy._retry` for how each maps onto azt's retry policy).

Example::

    from azt.legacy.cosmosdb_table.common.retry import LinearRetry
    service.retry = LinearRetry(backoff=1, max_attempts=2).retry
"""

from azt.legacy._retry import ExponentialRetry, LinearRetry, no_retry

__all__ = ["ExponentialRetry", "LinearRetry", "no_retry"]
