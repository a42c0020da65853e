"""The rows of ``frames_bench.py``: one table, 1,000 entities a partition, one property of
each of the eight EDM types (the stub seeding script and the benchmark share them).

Example::

    >>> entity(1001)["PartitionKey"], size_filter(2000)
    ('p0001', "PartitionKey lt 'p0002'")
"""

from __future__ import annotations

import uuid
from typing import Any

from azt.edm import EdmDateTime, EdmType, Typed

TABLE = "framesbench"
PER_PARTITION = 1000


def entity(i: int) -> dict[str, Any]:
    """Row ``i``: one property of each EDM type."""
    return {
        "PartitionKey": f"p{i // PER_PARTITION:04d}",
        "RowKey": f"r{i % PER_PARTITION:04d}",
        "Name": f"customer-{i:08d}",
        "Count": i % 100_000,
        "Total": Typed(i * 1_000_003, EdmType.INT64),
        "Price": i / 7,
        "Active": i % 3 == 0,
        "Seen": EdmDateTime.from_ticks(637_358_077_304_363_943 + i * 10_000_001),
        "Id": uuid.UUID(int=i * 2_654_435_761),
        "Blob": i.to_bytes(16, "little"),
    }


def size_filter(size: int) -> str:
    """The first ``size`` rows, as a PartitionKey range."""
    return f"PartitionKey lt 'p{size // PER_PARTITION:04d}'"
