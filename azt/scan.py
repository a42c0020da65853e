"""Parallel scans: read a whole table, or a PartitionKey range, with several requests in
flight; ordered or as pages arrive; resumable from a token.

The service has no "list partitions": the scan finds its ranges from the data (one reader
starts; as its pages come back, the rest of its range is split at keys found by ``$top=1``
probes, and each part gets a reader of its own). See ``docs/bulk.md``.

Example::

    from azt.scan import parallel_scan

    scan = parallel_scan(table, filter="Rating ge 4", concurrency=16, ordered=True)
    async for entity in scan:
        ...
    token = scan.token        # resume later with parallel_scan(table, ..., token=token)
"""

from azt._orm.scan import ParallelScan, ScanPage, ScanStats, parallel_scan
from azt._orm.scan_ranges import between

__all__ = ["ParallelScan", "ScanPage", "ScanStats", "between", "parallel_scan"]
