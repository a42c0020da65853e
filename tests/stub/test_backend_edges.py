"""The backend's durability flags, each answer checked both ways: in memory, and on disk
at each durability."""

from __future__ import annotations

import sqlite3
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


def test_a_group_sees_its_own_earlier_writes_and_the_stored_rows(backend: Backend) -> None:
    backend.write("a", "Edges", WriteOp("insert", "p", "stored"))
    out = backend.commit_group(
        [
            GroupWrite("a", "Edges", [WriteOp("insert", "p", "new")]),
            # a change set after it: sees "new" (pending) and "stored" (on record)
            GroupWrite(
                "a",
                "Edges",
                [WriteOp("replace", "p", "new", if_match="*"), WriteOp("insert", "p", "x")],
                batch=True,
            ),
            GroupWrite("a", "Edges", [WriteOp("insert", "p", "stored")], batch=True),
        ]
    )
    first, second, third = out
    assert not isinstance(first, StubError)
    assert not isinstance(second, StubError)
    assert [r.created for r in second] == [False, True]
    assert isinstance(third, StubError)
    assert (third.status, third.code, third.index) == (409, "EntityAlreadyExists", 0)


def test_a_scan_budget_is_at_least_one(backend: Backend) -> None:
    for rk in "abc":
        backend.write("a", "Edges", WriteOp("insert", "p", rk))
    page = backend.query_entities("a", "Edges", None, 10, None, scan_budget=1)
    assert len(page.entities) <= 1
    with pytest.raises(ValueError, match="scan_budget must be at least 1"):
        backend.query_entities("a", "Edges", None, 10, None, scan_budget=0)


def test_a_lone_insert_on_disk_is_read_back_and_a_disk_error_is_a_500(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Backend(tmp_path) as backend:
        backend.create_table("a", "Disk")
        backend.commit_group([GroupWrite("a", "Disk", [WriteOp("insert", "p", "1")])])
        page = backend.query_entities("a", "Disk", None, 10, None)
        assert [e.rk for e in page.entities] == ["1"]
        store = backend._store
        assert store is not None

        def broken(*args: object) -> bool:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(store, "insert_new_entity", broken)
        with pytest.raises(StubError) as caught:
            backend.commit_group([GroupWrite("a", "Disk", [WriteOp("insert", "p", "2")])])
        assert (caught.value.status, caught.value.code) == (500, "InternalError")
        page = backend.query_entities("a", "Disk", None, 10, None)
        assert [e.rk for e in page.entities] == ["1"]
