"""Server-level durability: acknowledged writes survive SIGKILL of ``python -m azt_server_stub``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer

from .conftest import (
    JSON_MINIMAL,
    JSON_NONE,
    RawClient,
    StubProcess,
    free_port,
    row_keys,
)
from .test_http_batch import envelope, parts_of, post_batch, request_part
from .test_http_raw import JSON_HEADERS, insert, make_table


async def _write_until_killed(raw: RawClient, proc: StubProcess) -> tuple[set[str], set[str]]:
    """Eight concurrent writers (inserts and upserts, one entity per request)
    until the server is SIGKILLed with requests in flight.

    Returns (acknowledged row keys, row keys whose outcome is unknown).
    """
    acked: set[str] = set()
    unknown: set[str] = set()
    headers = {
        "Accept": JSON_MINIMAL,
        "Content-Type": "application/json",
        "Prefer": "return-no-content",
    }
    killed = asyncio.Event()

    async def writer(w: int) -> None:
        i = 0
        while not killed.is_set():
            rk = f"{w}-{i:06d}"
            verb, path = (
                ("POST", "/durable")
                if i % 2
                else ("PUT", f"/durable(PartitionKey='p',RowKey='{rk}')")
            )
            try:
                r = await raw.request(
                    verb,
                    path,
                    headers=headers,
                    body=json.dumps({"PartitionKey": "p", "RowKey": rk, "n": i}),
                )
            except (TimeoutError, aiohttp.ClientError):
                unknown.add(rk)
                return
            assert r.status == 204, r.body
            acked.add(rk)
            if len(acked) >= 300 and not killed.is_set():
                killed.set()
                proc.kill()  # SIGKILL while the other writers have requests in flight
            i += 1

    await asyncio.gather(*(writer(w) for w in range(8)))
    return acked, unknown


@pytest.mark.parametrize("durability", ["full", "process"])
async def test_acknowledged_writes_survive_sigkill(tmp_path: Path, durability: str) -> None:
    """Both durability levels keep every acknowledged write when the process is killed
    (``process`` leaves the commit to the OS, which outlives the process)."""
    port = free_port()
    location = tmp_path / "store"
    args: tuple[str, ...] = ("--port", str(port), "--location", str(location))
    args = (*args, "--log-level", "WARNING", "--durability", durability)
    with StubProcess(*args) as proc:
        async with aiohttp.ClientSession() as session:
            raw = RawClient(session, proc.endpoint, DEV_ACCOUNT, DEV_KEY)
            r = await raw.request(
                "POST",
                "/Tables",
                headers={"Accept": JSON_MINIMAL, "Content-Type": "application/json"},
                body='{"TableName":"durable"}',
            )
            assert r.status == 201
            acked, unknown = await _write_until_killed(raw, proc)
    assert len(acked) >= 300
    with StubProcess(*args) as proc2:
        async with aiohttp.ClientSession() as session:
            raw = RawClient(session, proc2.endpoint, DEV_ACCOUNT, DEV_KEY)
            stored: set[str] = set()
            query: dict[str, str] = {}
            while True:
                r = await raw.request(
                    "GET", "/durable()", query=query, headers={"Accept": JSON_NONE}
                )
                assert r.status == 200, r.body
                stored |= {e["RowKey"] for e in r.json()["value"]}
                npk = r.headers.get("x-ms-continuation-NextPartitionKey")
                if npk is None:
                    break
                query = {
                    "NextPartitionKey": npk,
                    "NextRowKey": r.headers["x-ms-continuation-NextRowKey"],
                }
    assert acked <= stored
    assert stored <= acked | unknown


async def test_sigterm_with_writes_in_flight_exits_cleanly_and_keeps_them(tmp_path: Path) -> None:
    """SIGTERM while durable writes are queued: the process answers or drops them, exits 0,
    and every acknowledged write is there after a restart."""
    port = free_port()
    location = tmp_path / "store"
    args = ("--port", str(port), "--location", str(location), "--log-level", "WARNING")
    headers = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
    proc = StubProcess(*args).start()
    acked: set[str] = set()
    enough = asyncio.Event()
    try:
        async with aiohttp.ClientSession() as session:
            raw = RawClient(session, proc.endpoint, DEV_ACCOUNT, DEV_KEY)
            r = await raw.request("POST", "/Tables", headers=headers, body='{"TableName":"term"}')
            assert r.status == 201

            async def write(i: int) -> None:
                body = json.dumps({"PartitionKey": "p", "RowKey": f"{i:04d}"})
                try:
                    r = await raw.request("POST", "/term", headers=headers, body=body)
                except aiohttp.ClientError:
                    return
                if r.status == 201:
                    acked.add(f"{i:04d}")
                    if len(acked) >= 20:
                        enough.set()

            tasks = [asyncio.ensure_future(write(i)) for i in range(200)]
            await enough.wait()
            assert proc.proc is not None
            proc.proc.terminate()
            await asyncio.gather(*tasks)
            code = await asyncio.to_thread(proc.proc.wait, 30)  # one signal, a clean exit
    finally:
        proc.stop()
    assert code == 0
    assert "azt-stub shutting down" in proc.lines
    with StubProcess(*args) as again:
        async with aiohttp.ClientSession() as session:
            raw = RawClient(session, again.endpoint, DEV_ACCOUNT, DEV_KEY)
            r = await raw.request("GET", "/term()", headers={"Accept": JSON_NONE})
            stored = {e["RowKey"] for e in r.json()["value"]}
    assert acked <= stored


async def test_durable_writes_are_atomic_ordered_and_read_after_ack(tmp_path: Path) -> None:
    """With --location, concurrent readers never see half a batch and see every
    acknowledged write; one client's writes apply in order; all of it survives a restart."""
    config = StubConfig(location=tmp_path / "store")
    async with StubServer(config) as stub, aiohttp.ClientSession() as session:
        raw = RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        t = "/devstoreaccount1/mytable"

        def generation(gen: int) -> str:
            return envelope(
                [
                    request_part(
                        "PUT", f"{t}(PartitionKey='p',RowKey='{i:02d}')", json.dumps({"gen": gen})
                    )
                    for i in range(40)
                ]
            )

        assert (await post_batch(raw, generation(0))).status == 202
        seen: set[int] = set()

        async def batch_writer() -> None:
            for gen in range(1, 9):
                r = await post_batch(raw, generation(gen))
                assert [p[0] for p in parts_of(r.body)] == [204] * 40

        async def reader() -> None:
            for _ in range(30):
                r = await raw.request(
                    "GET",
                    "/mytable()",
                    query={"$filter": "PartitionKey eq 'p'"},
                    headers={"Accept": JSON_MINIMAL},
                )
                gens = {e["gen"] for e in r.json()["value"]}
                assert len(gens) == 1, gens  # one whole generation, never a mix
                seen.update(gens)

        async def counter(w: int) -> None:
            path = f"/mytable(PartitionKey='c',RowKey='{w}')"
            for n in range(10):  # one client's writes apply in order; each is read back
                r = await raw.request("PUT", path, headers=JSON_HEADERS, body=json.dumps({"n": n}))
                assert r.status == 204, r.body
                got = await raw.request("GET", path, headers={"Accept": JSON_MINIMAL})
                assert got.json()["n"] == n

        await asyncio.gather(batch_writer(), reader(), reader(), *(counter(w) for w in range(4)))
        assert seen
    async with StubServer(config) as again, aiohttp.ClientSession() as session:
        raw = RawClient(session, again.endpoint, DEV_ACCOUNT, DEV_KEY)
        r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
        rows = {(e["PartitionKey"], e["RowKey"]): e for e in r.json()["value"]}
        assert {rows[("p", f"{i:02d}")]["gen"] for i in range(40)} == {8}
        assert [rows[("c", str(w))]["n"] for w in range(4)] == [9] * 4


async def test_durable_writes_are_group_committed(tmp_path: Path) -> None:
    """Writes that arrive while a group commits wait and go to disk together; each gets its
    own outcome (one insert wins, the rest conflict); reads are served meanwhile."""
    import threading

    from azt_server_stub.app import BACKEND_KEY
    from azt_server_stub.request_state import SERVICES_KEY

    async with (
        StubServer(StubConfig(location=tmp_path / "g")) as stub,
        aiohttp.ClientSession() as s,
    ):
        raw = RawClient(s, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "seed"})
        backend = stub.backend
        assert backend.durable
        app = stub._app
        assert app is not None
        assert app[BACKEND_KEY] is backend
        committer = app[SERVICES_KEY].committer
        assert committer is not None
        loop = asyncio.get_running_loop()
        gate = threading.Event()
        started = asyncio.Event()
        sizes: list[int] = []
        real = backend.commit_group

        loop_thread = threading.get_ident()

        def gated(items: Any) -> Any:
            sizes.append(len(items))
            if len(sizes) == 1:
                assert threading.get_ident() != loop_thread
                loop.call_soon_threadsafe(started.set)
                gate.wait(timeout=30)  # hold the first group on the writer thread
            return real(items)

        backend.commit_group = gated  # type: ignore[method-assign]
        queued = asyncio.Event()
        submitted = 0
        real_submit = committer.submit

        async def counting(item: Any) -> Any:
            nonlocal submitted
            submitted += 1
            if submitted == 11:
                queued.set()
            return await real_submit(item)

        committer.submit = counting  # type: ignore[method-assign]
        # As after a burst of concurrent writes: the next write goes to the writer thread
        # (a write that comes alone is committed at once on the loop; see _commit.py).
        committer._grouping = True
        first = asyncio.ensure_future(insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "0"}))
        await started.wait()

        async def racer() -> int:
            r = await raw.request(
                "POST", "/mytable", headers=JSON_HEADERS, body='{"PartitionKey":"p","RowKey":"x"}'
            )
            return r.status

        racers = [asyncio.ensure_future(racer()) for _ in range(10)]
        await queued.wait()
        # the writer thread is busy: reads are still served, and see the state before
        assert await row_keys(raw) == ["seed"]
        gate.set()
        await first
        statuses = sorted(await asyncio.gather(*racers))
        assert statuses == [201] + [409] * 9
        assert sizes == [1, 10]
        assert await row_keys(raw) == ["0", "seed", "x"]


async def test_durable_table_level_writes_survive_restart(tmp_path: Path) -> None:
    config = StubConfig(location=tmp_path / "t")
    acl = (
        "<SignedIdentifiers><SignedIdentifier><Id>readers</Id><AccessPolicy>"
        "<Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>"
    )
    props_doc = "<StorageServiceProperties><Cors/></StorageServiceProperties>"
    async with StubServer(config) as stub, aiohttp.ClientSession() as session:
        raw = RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        await make_table(raw, "dropped")
        r = await raw.request("PUT", "/mytable", query={"comp": "acl"}, body=acl)
        assert r.status == 204, r.body
        q = {"restype": "service", "comp": "properties"}
        r = await raw.request("PUT", "/", query=q, body=props_doc)
        assert r.status == 202, r.body
        r = await raw.request("DELETE", "/Tables('dropped')", headers={"Accept": JSON_MINIMAL})
        assert r.status == 204
    async with StubServer(config) as again, aiohttp.ClientSession() as session:
        raw = RawClient(session, again.endpoint, DEV_ACCOUNT, DEV_KEY)
        r = await raw.request("GET", "/Tables", headers={"Accept": JSON_MINIMAL})
        assert [t["TableName"] for t in r.json()["value"]] == ["mytable"]
        r = await raw.request("GET", "/mytable", query={"comp": "acl"})
        assert b"<Id>readers</Id>" in r.body
        r = await raw.request("GET", "/", query={"restype": "service", "comp": "properties"})
        assert r.status == 200


async def test_durable_disk_failure_answers_500_and_applies_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from azt_server_stub import _store

    async with (
        StubServer(StubConfig(location=tmp_path / "d")) as stub,
        aiohttp.ClientSession() as s,
    ):
        raw = RawClient(s, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "kept"})

        def full(*args: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(_store.SqliteStore, "write_entity_groups", full)
        monkeypatch.setattr(_store.SqliteStore, "insert_new_entity", full)  # a lone insert
        results = await asyncio.gather(
            *(
                raw.request(
                    "POST",
                    "/mytable",
                    headers=JSON_HEADERS,
                    body=json.dumps({"PartitionKey": "p", "RowKey": f"n{i}"}),
                    allow_internal_error=True,
                )
                for i in range(5)
            )
        )
        assert {(r.status, r.code) for r in results} == {(500, "InternalError")}
        monkeypatch.undo()
        assert await row_keys(raw) == ["kept"]
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "after"})  # recovers
        assert await row_keys(raw) == ["after", "kept"]


@pytest.mark.parametrize(("durability", "synchronous"), [("full", 2), ("process", 1)])
def test_durability_sets_when_sqlite_syncs(
    tmp_path: Path, durability: str, synchronous: int
) -> None:
    """``full`` fsyncs every commit (SQLite FULL); ``process`` leaves commits to the OS
    (NORMAL: in WAL mode durable across a killed process, not across power loss)."""
    from azt_server_stub._store import SqliteStore

    store = SqliteStore(tmp_path / "s", durability=durability)
    try:
        assert store.db.execute("PRAGMA synchronous").fetchone()[0] == synchronous
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()


def test_an_unknown_durability_is_refused(tmp_path: Path) -> None:
    from azt_server_stub._store import SqliteStore

    with pytest.raises(ValueError, match="durability"):
        SqliteStore(tmp_path / "s", durability="sometimes")
    assert StubConfig().durability == "full"
