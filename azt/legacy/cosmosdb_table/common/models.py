"""Stands in for ``azure.cosmosdb.table.common.models``.

Example::

    from azt.legacy.cosmosdb_table.common.models import AccessPolicy, ListGenerator
"""

from azt.legacy._models import AccessPolicy, AccountPermissions, ListGenerator, ResourceTypes

__all__ = ["AccessPolicy", "AccountPermissions", "ListGenerator", "ResourceTypes"]
