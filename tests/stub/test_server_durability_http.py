"""Server-level durability: acknowledged writes survive SIGKILL of ``python -m azt_server_stub``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp

from azt_server_stub import DEV_ACCOUNT, DEV_KEY

from .conftest import JSON_MINIMAL, JSON_NONE, RawClient, StubProcess, free_port


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


async def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    port = free_port()
    location = tmp_path / "store"
    args = ("--port", str(port), "--location", str(location), "--log-level", "WARNING")
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
