"""A migration's rows per second against the bulk loader's, on the same stub.

The stub runs in its own process (as a service would), unthrottled and then throttled at
scaled-down targets (``--throttle``, default 200 entities/s per partition, 2,000 per
account). The data: ``--partitions`` x ``--rows`` entities of one small shape
(``--throttled-rows`` throttled: 100,000 and 10,000 by default). For each
setting, on fresh tables:

* **bulk load**: ``azt.bulk.load(kind="upsert-replace")`` writes the rows (the peer: the
  fastest way azt writes them);
* **migration**: the same rows, already stored (loaded, untimed), rewritten by a
  ``Migration`` renaming one property (``azt.migrate.run_migrations``): it reads every row
  (parallel scan) and replaces each, conditional on its ETag.

Each is run ``--repeat`` times (default 3), taking turns. Reported for each setting, in
the same run: the median seconds and rows per second of both, their CPU per row (this
process's, and the stub process's where ``/proc`` tells it: steadier than the wall clock
on a busy machine), and the ratio migration / bulk load: unthrottled, against issue 30's
goal (at least 0.8); throttled, against the bound no migration can pass there (a migration
reads every row it writes and the throttle counts an entity read as one written, so it
spends twice the loader's budget: :func:`throttled_bound`).

Usage::

    .venv/bin/python benchmarks/migrate_bench.py [--partitions 40] [--rows 2500]
        [--throttled-rows 250] [--repeat 3] [--only unthrottled|throttled]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scan_bench import free_port, start_stub
from stub_vs_azurite import cpu_seconds

from azt import RetryPolicy, TableServiceClient
from azt.bulk import BulkOptions, load
from azt.migrate import Migration, rename, run_migrations
from azt_server_stub import DEV_ACCOUNT, DEV_KEY


def rows(partitions: int, per: int) -> list[dict[str, Any]]:
    return [
        {"PartitionKey": f"p{p:03d}", "RowKey": f"r{r:05d}", "Name": f"n{p}/{r}", "N": r}
        for r in range(per)
        for p in range(partitions)
    ]


@dataclass
class Timed:
    """One timed run: wall seconds, this process's CPU seconds, the stub's CPU seconds."""

    wall: float
    client: float
    stub: float | None


class Clock:
    """Wall clock, this process's CPU and the stub's CPU over a ``with`` block."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __enter__(self) -> Clock:
        self._s, self._c, self._w = cpu_seconds(self.pid), time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        s = cpu_seconds(self.pid)
        stub = None if s is None or self._s is None else s - self._s
        self.timed = Timed(time.perf_counter() - self._w, time.process_time() - self._c, stub)


async def bulk(
    service: TableServiceClient, name: str, items: list[Any], opts: BulkOptions, pid: int
) -> Timed:
    table = await service.create_table(name)
    await asyncio.sleep(1.5)  # the stub's buckets refill (a burst of one second): a fair start
    with Clock(pid) as clock:
        result = await load(table, items, kind="upsert-replace", options=opts)
    assert result.ok, result
    assert result.written == len(items), result
    return clock.timed


async def migrate(
    service: TableServiceClient, name: str, items: list[Any], opts: BulkOptions, pid: int
) -> Timed:
    table = await service.create_table(name)
    await load(table, items, kind="upsert-replace", options=opts)  # untimed: the old rows
    migration = Migration("0001_full_name", name, [rename("Name", "FullName")])
    await asyncio.sleep(1.5)  # as for the bulk load
    with Clock(pid) as clock:
        [report] = await run_migrations(service, [migration], options=opts)
    assert report.ok, report
    assert report.written == len(items), report
    return clock.timed


async def run(
    conn: str, items: list[Any], opts: BulkOptions, tag: str, pid: int, repeat: int
) -> tuple[list[Timed], list[Timed]]:
    retry = RetryPolicy(max_attempts=100, base=0.01, minimum=0.01, maximum=0.2)
    loads, migrations = [], []
    async with TableServiceClient.from_connection_string(conn, retry=retry) as service:
        for i in range(repeat):  # taking turns, so a busy spell of the machine hits both
            loads.append(await bulk(service, f"bulk{tag}{i}", items, opts, pid))
            migrations.append(await migrate(service, f"migrate{tag}{i}", items, opts, pid))
            for name in (f"bulk{tag}{i}", f"migrate{tag}{i}"):
                await service.delete_table(name)
    return loads, migrations


def _line(label: str, runs: list[Timed], n: int) -> str:
    wall = statistics.median(t.wall for t in runs)
    client = statistics.median(t.client for t in runs) / n * 1e6
    stubs = [t.stub for t in runs if t.stub is not None]
    stub = f"{statistics.median(stubs) / n * 1e6:4.0f}" if stubs else " n/a"
    return (
        f"  {label:11s} {wall:7.2f} s {n / wall:9,.0f} rows/s   CPU per row:"
        f" client {client:4.0f} us, stub {stub} us"
    )


def report(label: str, loads: list[Timed], migrations: list[Timed], n: int) -> float:
    """Print one setting's figures; return the ratio of the median times."""
    ratios = sorted(b.wall / m.wall for b, m in zip(loads, migrations, strict=True))
    wall_b = statistics.median(t.wall for t in loads)
    wall_m = statistics.median(t.wall for t in migrations)
    ratio = wall_b / wall_m
    print(f"{n:,} rows, {label} (the median of {len(loads)} runs each):")
    print(_line("bulk load", loads, n))
    print(_line("migration", migrations, n))
    runs = ", ".join(f"{r:.2f}" for r in ratios)
    print(f"  ratio migration / bulk load (rows per second): {ratio:.2f}  (each run: {runs})")
    if all(t.stub is not None for t in (*loads, *migrations)):
        cpu_b = statistics.median(t.client + (t.stub or 0.0) for t in loads)
        cpu_m = statistics.median(t.client + (t.stub or 0.0) for t in migrations)
        print(f"  CPU (client + stub) per row, bulk load / migration: {cpu_b / cpu_m:.2f}")
    return ratio


#: issue 30's goal for the unthrottled ratio
GOAL = 0.8


def throttled_bound(spec: str, partitions: int, n: int) -> float:
    """The best ratio a migration of ``n`` rows can reach against the loader under the
    throttle ``spec``: both draw on the same entity budget (the account's rate, or the
    partitions' together, whichever is lower, with its burst); the loader spends ``n``
    entities, the migration ``2 n`` (it reads each row it writes, and the service counts
    entities read as it counts entities written); each takes (entities - burst) / rate.

    Example::

        >>> round(throttled_bound("partition=200,account=2000", 40, 10_000), 3)
        0.444
    """
    values = dict(part.split("=") for part in spec.split(","))
    burst = float(values.get("burst", 1.0))
    rates = []
    if values.get("account") != "off":
        rates.append(float(values.get("account", 20000)))
    if values.get("partition") != "off":
        rates.append(float(values.get("partition", 2000)) * partitions)
    if not rates:
        return 1.0
    b = min(rates) * burst
    return max(n - b, 0.0) / max(2 * n - b, 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=40)
    # 100,000 rows by default: issue 30's table. At 10,000 the migration's fixed work (its
    # records table, the plan, the first checkpoint: about 0.1 s) is a third of a 0.3 s run
    # and the ratio reads 0.72-0.82; at 50,000, 0.80-0.85; at 100,000, 0.96-1.00.
    ap.add_argument("--rows", type=int, default=2500, help="rows per partition, unthrottled")
    ap.add_argument(
        "--throttled-rows",
        type=int,
        default=250,
        help="rows per partition, throttled (the throttle makes each row cost ~2 ms)",
    )
    ap.add_argument("--throttle", default="partition=200,account=2000")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, taking turns")
    ap.add_argument(
        "--only", choices=("unthrottled", "throttled"), help="run one setting, not both"
    )
    args = ap.parse_args()
    # the client's retries of throttled reads are expected here: not worth a line each
    logging.getLogger("azt").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        for label, throttle, opts, tag in (
            ("unthrottled", None, BulkOptions(), "a"),
            (f"throttled ({args.throttle})", args.throttle, _told(args.throttle), "b"),
        ):
            if args.only is not None and args.only != label.split()[0]:
                continue
            items = rows(args.partitions, args.rows if throttle is None else args.throttled_rows)
            n = len(items)
            port = free_port()
            proc = start_stub(port, throttle, Path(tmp) / f"stub{tag}.log")
            try:
                conn = (
                    f"DefaultEndpointsProtocol=http;AccountName={DEV_ACCOUNT};"
                    f"AccountKey={DEV_KEY};TableEndpoint=http://127.0.0.1:{port}/{DEV_ACCOUNT};"
                )
                loads, migrations = asyncio.run(run(conn, items, opts, tag, proc.pid, args.repeat))
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            ratio = report(label, loads, migrations, n)
            if throttle is None:
                verdict = "met" if ratio >= GOAL else "NOT met"
                print(f"  goal (issue 30): at least {GOAL} unthrottled: {verdict}")
            else:
                bound = throttled_bound(throttle, args.partitions, n)
                if bound <= 0:  # the burst alone covers the load: the throttle never bites
                    print("  no bound under this throttle: its burst covers the whole load")
                    continue
                print(
                    f"  bound under this throttle: {bound:.2f} = (N - burst) / (2N - burst), with"
                    " both at the budget exactly:\n  a migration reads each row it writes and"
                    " the throttle counts an entity read as one written\n  (a loader below"
                    f" its budget lets the ratio pass it); reached: {ratio / bound:.0%} of it"
                )


def _told(spec: str) -> BulkOptions:
    """The loader told the stub's targets (as it is told Azure's by default)."""
    values = dict(part.split("=") for part in spec.split(","))
    return BulkOptions(
        partition_rate=float(values.get("partition", 2000)),
        account_rate=float(values.get("account", 20000)),
    )


if __name__ == "__main__":
    main()
