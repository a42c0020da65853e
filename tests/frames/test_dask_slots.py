"""How many tasks run at once without a distributed client (the share of the account's
rate each task of write_dask gets): dask's local scheduler decides."""

from __future__ import annotations

import pytest

dask = pytest.importorskip("dask")
pytest.importorskip("distributed")

from azt.frames_dask import cluster_slots  # noqa: E402


def test_slots_without_a_distributed_client() -> None:
    with dask.config.set(scheduler="sync"):
        assert cluster_slots() == 1
    with dask.config.set(scheduler="threads", num_workers=3):
        assert cluster_slots() == 3
