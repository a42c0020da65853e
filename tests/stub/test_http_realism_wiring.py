"""The realism modules (faults, throttle, range partitions) wired into the HTTP service."""

from __future__ import annotations

import json

import aiohttp

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer
from azt_server_stub.__main__ import build_parser, config_from_args
from azt_server_stub.realism.faults import FaultInjector, FaultKind
from azt_server_stub.realism.partitions import PartitionLayout, RangeLayout
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits

from .conftest import JSON_MINIMAL, JSON_NONE, RawClient
from .test_http_raw import insert, make_table


def _raw(stub: StubServer, session: aiohttp.ClientSession) -> RawClient:
    return RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)


async def test_injected_fault_has_the_service_shape() -> None:
    injector = FaultInjector(seed=1)
    async with StubServer(StubConfig(faults=injector)) as stub, aiohttp.ClientSession() as s:
        raw = _raw(stub, s)
        await make_table(raw)
        injector.fail_next(FaultKind.BUSY, 1)
        r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
        assert (r.status, r.code) == (503, "ServerBusy")
        assert r.json()["odata.error"]["code"] == "ServerBusy"
        assert "x-ms-request-id" in r.headers
        r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
        assert r.status == 200


async def test_range_partition_boundaries_break_pages() -> None:
    layout = PartitionLayout(RangeLayout(boundaries=("m",)))
    async with StubServer(StubConfig(partitions=layout)) as stub, aiohttp.ClientSession() as s:
        raw = _raw(stub, s)
        await make_table(raw)
        for pk in ("a", "k", "n", "z"):
            await insert(raw, "mytable", {"PartitionKey": pk, "RowKey": "1"})
        r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_NONE})
        assert [e["PartitionKey"] for e in r.json()["value"]] == ["a", "k"]
        token = r.headers["x-ms-continuation-NextPartitionKey"]
        # the continuation names the next range partition: "m", without a NextRowKey
        assert token == "1!4!bQ--"
        assert "x-ms-continuation-NextRowKey" not in r.headers
        r = await raw.request(
            "GET", "/mytable()", query={"NextPartitionKey": token}, headers={"Accept": JSON_NONE}
        )
        assert [e["PartitionKey"] for e in json.loads(r.body)["value"]] == ["n", "z"]
        assert "x-ms-continuation-NextPartitionKey" not in r.headers


async def test_throttle_answers_server_busy() -> None:
    limits = ThrottleLimits(partition_rate=2.0, account_rate=None, burst=1.0)
    config = StubConfig(throttle=Throttle(limits))
    async with StubServer(config) as stub, aiohttp.ClientSession() as s:
        raw = _raw(stub, s)
        await make_table(raw)
        codes = []
        for i in range(6):
            r = await raw.request(
                "POST",
                "/mytable",
                headers={"Accept": JSON_MINIMAL, "Content-Type": "application/json"},
                body=json.dumps({"PartitionKey": "hot", "RowKey": str(i)}),
            )
            codes.append(r.code)
        assert "ServerBusy" in codes


def test_cli_builds_the_realism_config() -> None:
    args = build_parser().parse_args(
        ["--fault", "503:next=2", "--throttle", "partition=500", "--range-boundary", "m"]
    )
    config = config_from_args(args)
    assert config.faults is not None
    assert config.throttle is not None
    assert config.partitions is not None
    assert config.partitions.default.boundaries == ("m",)
