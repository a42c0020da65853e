"""Stands in for ``azure.cosmosdb.table.common``.

Example::

    from azt.legacy.cosmosdb_table.common import AccessPolicy, ResourceTypes, AccountPermissions
"""

from azt.legacy._models import AccessPolicy, AccountPermissions, ListGenerator, ResourceTypes
from azt.legacy._retry import ExponentialRetry, LinearRetry

__all__ = [
    "AccessPolicy",
    "AccountPermissions",
    "ExponentialRetry",
    "LinearRetry",
    "ListGenerator",
    "ResourceTypes",
]
