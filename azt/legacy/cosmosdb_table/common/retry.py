"""Stands in for ``azure.cosmosdb.table.common.retry``: ``no_retry`` (assign it to
``service.retry``); other values of ``service.retry`` keep azt's default retry policy.

Example::

    from azt.legacy.cosmosdb_table.common.retry import no_retry
    service.retry = no_retry
"""

from azt.legacy.table_service import no_retry

__all__ = ["no_retry"]
