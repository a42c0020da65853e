"""Log entries spread over bucketed partition keys.

The seed's logging system: many instances of many components write log lines. A
PartitionKey of just the component makes one hot partition per component; adding the
instance helps; when one instance alone writes more than a partition serves, each write
goes to one of N random buckets:

    PartitionKey = <component>;<instance>;<bucket>      RowKey = <ticks>;<sequence>

The order of the parts follows the dominant queries: everything of a component and
everything of one instance are still prefix ranges of the PartitionKey. Reading one
instance in time order means reading its N buckets: the query builder runs them as
parallel sub-queries and merges them in key order. A query by instance across components
would be a full scan, which is why the component comes first.

Run it::

    python -m examples.logs [--connection-string CONN]
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from azt import TableServiceClient
from azt.context import SaveChangesOptions, TableContext
from azt.entity import Entity, Prop, prop
from azt.keys import (
    all_buckets,
    composite_key,
    composite_prefix,
    from_ticks_key,
    random_bucket,
    split_key,
    ticks_key,
)
from azt.query import Query

from ._common import Out, run_example, scratch_table

BUCKETS = 4
COMPONENTS = {"WebPortal": 3, "ReportingRole": 2}


class LogEntry(Entity):
    """One log line.

    Example::

        >>> e = LogEntry.create("ReportingRole", "Instance0002", "2",
        ...                     datetime(2024, 1, 1, tzinfo=UTC), 7, "WARN", "slow")
        >>> e.PartitionKey, e.RowKey[-4:]
        ('ReportingRole;Instance0002;2', '0007')
    """

    level: Prop[str] = prop(name="Level", default="INFO")
    message: Prop[str] = prop(name="Message", default="")

    @classmethod
    def create(
        cls,
        component: str,
        instance: str,
        bucket: str,
        when: datetime,
        seq: int,
        level: str,
        message: str,
    ) -> LogEntry:
        """A log entry in ``bucket``; the RowKey sorts by time, then by sequence."""
        return cls(
            composite_key(component, instance, bucket),
            composite_key(ticks_key(when), f"{seq:04d}"),
            level=level,
            message=message,
        )

    @property
    def when(self) -> datetime:
        """When it was logged (from the RowKey)."""
        return from_ticks_key(self.RowKey)


def instance_name(i: int) -> str:
    """``Instance0002`` for 2 (fixed width, so that instances sort numerically).

    Example::

        >>> instance_name(12)
        'Instance0012'
    """
    return f"Instance{i:04d}"


async def write_logs(
    service: TableServiceClient, table: str, rng: random.Random, start: datetime, n: int
) -> list[LogEntry]:
    """``n`` log lines from every instance, each in a random bucket; saved with BATCH
    (one transaction per partition that received lines)."""
    ctx = TableContext(service)
    written = []
    levels = ["INFO"] * 8 + ["WARN", "ERROR"]
    for seq in range(n):
        when = start + timedelta(milliseconds=250 * seq)
        for component, instances in COMPONENTS.items():
            for i in range(instances):
                entry = LogEntry.create(
                    component,
                    instance_name(i),
                    random_bucket(BUCKETS, rng),
                    when,
                    seq,
                    rng.choice(levels),
                    f"request {seq} handled",
                )
                ctx.add(table, entry)
                written.append(entry)
    await ctx.save_changes(SaveChangesOptions.BATCH, max_concurrency=4)
    return written


async def run(service: TableServiceClient, out: Out, *, keep: bool = False) -> dict[str, Any]:
    """Write bucketed logs and query them three ways; returns what the queries found."""
    rng = random.Random(20240501)
    start = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    found: dict[str, Any] = {}
    async with scratch_table(service, "logs", out, keep=keep) as table:
        written = await write_logs(service, table, rng, start, 40)
        per_partition = Counter(e.PartitionKey for e in written)
        out(f"wrote {len(written)} log lines into {len(per_partition)} partitions:")
        for pk, count in sorted(per_partition.items()):
            out(f"  {pk:<32} {count:3d}")
        found["written"] = [(e.PartitionKey, e.RowKey, e.level) for e in written]

        client = service.get_table_client(table)
        # 1. Everything of one component: a PartitionKey prefix (partition range scan).
        q1 = Query(LogEntry, client).where(
            LogEntry.PartitionKey.startswith(composite_prefix("ReportingRole"))
        )
        out("")
        out(f"ReportingRole: {q1.explain()}")
        rows = await q1.to_list()
        out(f"  {len(rows)} lines")
        found["component"] = [(e.PartitionKey, e.RowKey) for e in rows]

        # 2. One instance in time order: its buckets as parallel sub-queries, merged.
        buckets = all_buckets(BUCKETS, "WebPortal", instance_name(1))
        q2 = Query(LogEntry, client).where(
            LogEntry.PartitionKey.in_(buckets), LogEntry.level != "INFO"
        )
        out("")
        out(f"WebPortal Instance0001 warnings and errors: {q2.explain()}".replace("\n", "\n  "))
        rows = await q2.to_list()
        # Merged in key order = bucket, then time; re-sort by the time part of the RowKey.
        rows.sort(key=lambda e: e.RowKey)
        for e in rows[:5]:
            out(f"  {e.when:%H:%M:%S.%f} [{split_key(e.PartitionKey)[-1]}] {e.level} {e.message}")
        if len(rows) > 5:
            out(f"  ... {len(rows) - 5} more")
        found["instance_problems"] = [(e.PartitionKey, e.RowKey) for e in rows]

        # 3. A time window of one instance: each bucket is a row range, merged again.
        lo = ticks_key(start + timedelta(seconds=2))
        hi = ticks_key(start + timedelta(seconds=4))
        q3 = Query(LogEntry, client).where(
            LogEntry.PartitionKey.in_(buckets),
            LogEntry.RowKey >= lo,
            LogEntry.RowKey < hi,
        )
        rows = await q3.to_list()
        out("")
        out(f"WebPortal Instance0001 between 12:00:02 and 12:00:04: {len(rows)} lines")
        found["window"] = [(e.PartitionKey, e.RowKey) for e in rows]
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m examples.logs``."""
    return run_example("Logs: entries spread over bucketed partition keys", run, argv)


if __name__ == "__main__":
    sys.exit(main())
