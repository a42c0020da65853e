"""Dask: a table as a dask DataFrame partitioned by PartitionKey ranges, and a dask
DataFrame written through the bulk loader, the account's rate shared by the cluster's
task slots (``pip install "azt-tables[dask]"``; see :mod:`azt._frames.dask`).

Example::

    from azt.frames_dask import read_dask, write_dask
    ddf = read_dask(conn, "movies", partitions=8)
    totals = write_dask(ddf, conn, "copy", account_rate=20_000)
"""

from azt._frames.dask import DaskWrite, cluster_slots, read_dask, to_pandas, write_dask
from azt._frames.ranges import plan_ranges

__all__ = ["DaskWrite", "cluster_slots", "plan_ranges", "read_dask", "to_pandas", "write_dask"]
