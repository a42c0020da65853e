"""The backend's durability flags, each answer checked both ways: in memory, and on disk
at each durability."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from azt_server_stub.backend import Backend, GroupWrite, WriteOp
from azt_server_stub.errors import StubError


def test_in_memory_is_neither_durable_nor_fsynced() -> None:
    with Backend() as backend:
        assert (backend.durable, backend.fsyncs) == (False, False)


@pytest.mark.parametrize(("durability", "fsyncs"), [("full", True), ("process", False)])
def test_on_disk_fsyncs_only_at_full_durability(
    tmp_path: Path, durability: str, fsyncs: bool
) -> None:
    with Backend(tmp_path, durability=durability) as backend:
        assert (backend.durable, backend.fsyncs) == (True, fsyncs)


@pytest.fixture(params=["memory", "disk"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with Backend(None if request.param == "memory" else tmp_path) as b:
        b.create_table("a", "Edges")
        yield b


def test_a_failing_write_raises_its_error_in_memory_and_on_disk(backend: Backend) -> None:
    with pytest.raises(StubError) as caught:
        backend.write("a", "Edges", WriteOp("replace", "p", "r", if_match="*"))
    assert (caught.value.status, caught.value.code) == (404, "ResourceNotFound")
    assert backend.write("a", "Edges", WriteOp("insert", "p", "r")).created is True
    with pytest.raises(StubError) as caught:
        backend.write("a", "Edges", WriteOp("insert", "p", "r"))
    assert (caught.value.status, caught.value.code) == (409, "EntityAlreadyExists")


def test_a_group_of_one_insert_in_memory_and_on_disk(backend: Backend) -> None:
    [first] = backend.commit_group([GroupWrite("a", "Edges", [WriteOp("insert", "p", "1")])])
    assert not isinstance(first, StubError)
    assert first[0].created is True
    [again] = backend.commit_group([GroupWrite("a", "Edges", [WriteOp("insert", "p", "1")])])
    assert isinstance(again, StubError)
    assert (again.status, again.code) == (409, "EntityAlreadyExists")
    [missing] = backend.commit_group([GroupWrite("a", "Nope", [WriteOp("insert", "p", "1")])])
    assert isinstance(missing, StubError)
    assert missing.status == 404
