"""Stands in for ``azure.cosmosdb.table.tablebatch``.

Example::

    from azt.legacy.cosmosdb_table.tablebatch import TableBatch
"""

from azt.legacy._requests import TableBatch

__all__ = ["TableBatch"]
