"""The realism flags on the command line reach a stub started as a process: scheduled
faults, throttling and range-partition page cuts, observed with the azt client."""

from __future__ import annotations

import logging

import aiohttp
import pytest

import azt
from azt_server_stub import DEV_ACCOUNT, DEV_KEY
from azt_server_stub.app import connection_string
from azt_server_stub.realism.fault_middleware import CONTROL_PATH

from .conftest import StubProcess, free_port


def client(endpoint: str, retry: azt.RetryPolicy) -> azt.TableClient:
    return azt.TableClient.from_connection_string(
        connection_string(endpoint, DEV_ACCOUNT, DEV_KEY), "clitable", retry=retry
    )


FAST = azt.RetryPolicy(max_attempts=5, base=0.001, minimum=0.0, maximum=0.005)


async def test_fault_and_partition_flags(caplog: pytest.LogCaptureFixture) -> None:
    args = [
        *("--port", str(free_port())),
        *("--fault", "busy:next=2@method=POST"),
        *("--fault", "drop-after:next=1@method=PUT|MERGE,table=clitable"),
        *("--latency", "1ms@reads", "--fault-seed", "3"),
        *("--range-boundary", "p2", "--scan-budget", "3"),
    ]
    caplog.set_level(logging.WARNING, logger="azt")
    with StubProcess(*args) as proc:
        async with client(proc.endpoint, FAST) as table:
            await table.create_table()  # two 503s first, then created
            await table.upsert_entity({"PartitionKey": "p1", "RowKey": "0", "n": 0})
            for pk in ("p1", "p2", "p3"):
                for rk in range(1, 3):
                    await table.insert_entity({"PartitionKey": pk, "RowKey": str(rk)})
            pages = [page async for page in table.list_entities().by_page()]
    retries = [r.getMessage() for r in caplog.records if r.name == "azt.retry"]
    assert sum("POST" in m and "503 ServerBusy" in m for m in retries) == 2
    assert sum("MERGE" in m and "ServerDisconnectedError" in m for m in retries) == 1
    assert len(retries) == 3
    # budget 3 per page; the first page stops at the boundary p2 (after 3 examined anyway),
    # the second examines p2/1, p2/2, p3/1
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [e["PartitionKey"] for e in pages[0]] == ["p1"] * 3
    keys = [(e["PartitionKey"], e["RowKey"]) for page in pages for e in page]
    assert keys == [("p1", "0"), ("p1", "1"), ("p1", "2")] + [
        (pk, str(rk)) for pk in ("p2", "p3") for rk in (1, 2)
    ]


async def test_throttle_flag() -> None:
    args = ["--port", str(free_port()), "--throttle", "partition=0.01,account=off"]
    with StubProcess(*args) as proc:
        async with client(proc.endpoint, azt.RetryPolicy.no_retries()) as table:
            await table.create_table()
            await table.insert_entity({"PartitionKey": "hot", "RowKey": "1"})
            with pytest.raises(azt.ServerBusyError) as info:
                await table.insert_entity({"PartitionKey": "hot", "RowKey": "2"})
            assert info.value.code == "ServerBusy"
            await table.insert_entity({"PartitionKey": "cold", "RowKey": "1"})


async def test_fault_control_endpoint_of_a_process() -> None:
    args = ["--port", str(free_port()), "--fault-control", "--fault-seed", "1"]
    with StubProcess(*args) as proc:
        control = f"{proc.endpoint}{CONTROL_PATH}"
        async with aiohttp.ClientSession() as session:
            async with session.get(control) as r:
                assert (await r.json())["rules"] == []
            async with client(proc.endpoint, FAST) as table:
                await table.create_table()
                async with session.post(control, data=b"drop-after:next=1@method=POST") as r:
                    assert r.status == 201
                with pytest.raises(azt.AmbiguousOutcomeError):
                    await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
            async with session.get(control) as r:
                state = await r.json()
    assert state["counters"] == {"drop-after": 1}
    assert state["rules"] == [{"spec": "drop-after:next=1@method=POST", "seen": 1, "injected": 1}]
