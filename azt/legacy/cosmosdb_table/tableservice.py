"""Stands in for ``azure.cosmosdb.table.tableservice``.

Example::

    from azt.legacy.cosmosdb_table.tableservice import TableService
"""

from azt.legacy.table_service import TableService

__all__ = ["TableService"]
