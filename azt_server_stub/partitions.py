"""Alias of :mod:`azt_server_stub.realism.partitions` (transitional: removed once importers moved).

Example::

    from azt_server_stub.realism.partitions import RangeLayout
"""

from __future__ import annotations

from .realism.partitions import PARTITIONS_KEY, PartitionLayout, RangeLayout, install

__all__ = ["PARTITIONS_KEY", "PartitionLayout", "RangeLayout", "install"]
