"""The backend's durability flags, each answer checked both ways: in memory, and on disk
at each durability."""

from __future__ import annotations

from pathlib import Path

import pytest

from azt_server_stub.backend import Backend


def test_in_memory_is_neither_durable_nor_fsynced() -> None:
    with Backend() as backend:
        assert (backend.durable, backend.fsyncs) == (False, False)


@pytest.mark.parametrize(("durability", "fsyncs"), [("full", True), ("process", False)])
def test_on_disk_fsyncs_only_at_full_durability(
    tmp_path: Path, durability: str, fsyncs: bool
) -> None:
    with Backend(tmp_path, durability=durability) as backend:
        assert (backend.durable, backend.fsyncs) == (True, fsyncs)
