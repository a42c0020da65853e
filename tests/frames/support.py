"""Shared helpers of the frames tests: typed rows written to a stub table."""

from __future__ import annotations

from typing import Any

import azt
import azt.sync
from azt.edm import EdmType, Typed


def rows(partitions: int, per_partition: int) -> list[dict[str, Any]]:
    """Entities over ``partitions`` PartitionKeys, with an Int64, an Int32 and a String."""
    out = []
    for p in range(partitions):
        for r in range(per_partition):
            out.append(
                {
                    "PartitionKey": f"p{p:03d}",
                    "RowKey": f"r{r:05d}",
                    "Big": Typed(p * 1_000_003 + r, EdmType.INT64),
                    "Small": r,
                    "Tag": f"{p}/{r}",
                }
            )
    return out


def sync_fill(
    connection_string: str, table: str, partitions: int, per_partition: int
) -> dict[tuple[str, str], dict[str, Any]]:
    """Create ``table`` and fill it with :func:`rows` (batches); the rows by keys, bare."""
    items = rows(partitions, per_partition)
    with azt.sync.TableClient.from_connection_string(connection_string, table) as t:
        t.create_table()
        for p in range(partitions):
            group = items[p * per_partition : (p + 1) * per_partition]
            for start in range(0, len(group), 100):
                batch = t.batch()
                for e in group[start : start + 100]:
                    batch.create(e)
                t.submit_transaction(batch)
    return {
        (e["PartitionKey"], e["RowKey"]): {
            k: (v.value if isinstance(v, Typed) else v) for k, v in e.items()
        }
        for e in items
    }
