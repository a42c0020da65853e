"""Stands in for ``azure.cosmosdb.table.common``.

Example::

    from azt.legacy.cosmosdb_table.common import AccessPolicy
"""

from azt.legacy._models import AccessPolicy, ListGenerator

__all__ = ["AccessPolicy", "ListGenerator"]
