"""Dask: a table read as a dask DataFrame partitioned by PartitionKey ranges, and written
back through the bulk loader, on a LocalCluster of two worker processes (started and
closed here); the account's rate is shared by the workers, as the stub's throttle shows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import pandas as pd  # noqa: E402

import azt  # noqa: E402
from azt._frames.dask import cluster_slots, read_dask, write_dask  # noqa: E402
from azt.testing import stub_retry_policy  # noqa: E402
from azt_server_stub import StubConfig, ThreadedStubServer  # noqa: E402
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits  # noqa: E402
from tests.frames.support import sync_fill  # noqa: E402

PARTITIONS = 12
PER_PARTITION = 50
WRITE_PER_PARTITION = 150
#: the account's target in the throttled write (entities per second)
ACCOUNT_RATE = 600.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with (
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            host="127.0.0.1",
        ) as lc,
        distributed.Client(lc) as client,
    ):
        yield client


@pytest.fixture
def throttle() -> Throttle:
    t = Throttle(ThrottleLimits(partition_rate=None, account_rate=None))
    t.enabled = False
    return t


@pytest.fixture
def stub(throttle: Throttle) -> Iterator[ThreadedStubServer]:
    with ThreadedStubServer(StubConfig(throttle=throttle)) as server:
        yield server


OPTIONS = {"retry": stub_retry_policy()}


def test_read_is_partitioned_by_key_ranges_and_complete(cluster: Any, stub: Any) -> None:
    expected = sync_fill(stub.connection_string, "dasksrc", PARTITIONS, PER_PARTITION)
    assert cluster_slots() == 2
    ddf = read_dask(stub.connection_string, "dasksrc", partitions=4, client_options=OPTIONS)
    assert ddf.npartitions == 4
    parts = [p.compute() for p in ddf.partitions]
    # each partition is a PartitionKey range: disjoint, in order, every partition whole
    keys = [sorted(set(p["PartitionKey"])) for p in parts]
    flat = [k for ks in keys for k in ks]
    assert flat == sorted(flat)
    assert len(flat) == len(set(flat)) == PARTITIONS
    assert all(len(p) for p in parts)
    frame = pd.concat(parts)
    assert len(frame) == PARTITIONS * PER_PARTITION
    assert str(frame["Big"].dtype) == "int64[pyarrow]"
    assert str(frame["Small"].dtype) == "int32[pyarrow]"
    got = {(r.PartitionKey, r.RowKey): (r.Big, r.Small, r.Tag) for r in frame.itertuples()}
    assert got == {k: (v["Big"], v["Small"], v["Tag"]) for k, v in expected.items()}


def _throttled_copy(
    stub: Any, throttle: Throttle, source: Any, target: str, slots: int | None
) -> tuple[Any, float, int, int]:
    """Write ``source`` to ``target`` under the account throttle; (totals, seconds,
    requests refused, requests admitted)."""
    with azt.sync.TableServiceClient.from_connection_string(stub.connection_string) as svc:
        svc.create_table(target)
    throttle.set_limits(ThrottleLimits(partition_rate=None, account_rate=ACCOUNT_RATE))
    throttle.reset()
    throttle.enabled = True
    started = time.monotonic()
    try:
        totals = write_dask(
            source,
            stub.connection_string,
            target,
            kind="insert",
            account_rate=ACCOUNT_RATE,
            slots=slots,
            client_options=OPTIONS,
        )
    finally:
        throttle.enabled = False
    elapsed = time.monotonic() - started
    stats = throttle.stats
    return totals, elapsed, sum(stats.throttled.values()), stats.admitted


def test_write_shares_the_account_rate_across_workers(
    cluster: Any, stub: Any, throttle: Throttle
) -> None:
    sync_fill(stub.connection_string, "dasksrc2", PARTITIONS, WRITE_PER_PARTITION)
    n = PARTITIONS * WRITE_PER_PARTITION
    source = read_dask(stub.connection_string, "dasksrc2", partitions=2, client_options=OPTIONS)
    source = cast(Any, source).persist()  # read before the throttle: only writes count
    distributed.wait(source)
    totals, elapsed, refused, admitted = _throttled_copy(stub, throttle, source, "shared", None)
    assert totals.written == n, totals.failures
    assert totals.failed == 0
    assert totals.share == ACCOUNT_RATE / 2  # two worker slots: half the target each
    # together within the account's target: the stub refused (almost) nothing, and the
    # entities past the one-second burst took the time the target allows
    least = (n - ACCOUNT_RATE) / ACCOUNT_RATE * 0.9
    assert refused <= max(2, admitted // 20), (refused, admitted)
    assert elapsed >= least, elapsed
    back = read_dask(stub.connection_string, "shared", partitions=2, client_options=OPTIONS)
    assert len(cast(Any, back).compute()) == n
    # the control: each worker given the whole target (slots=1): together they go over it,
    # and the stub refuses what is over
    unshared, _, refused_unshared, _ = _throttled_copy(stub, throttle, source, "unshared", 1)
    assert unshared.written == n
    assert refused_unshared > refused, (refused_unshared, refused)
