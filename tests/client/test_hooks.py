"""Event hooks: typed request/response views around every HTTP attempt, against the stub."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

import pytest

import azt
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt_server_stub import StubServer
from azt_server_stub.app import StubConfig
from azt_server_stub.realism.faults import FaultInjector

from .conftest import FAST_TIMEOUTS, Sleeps


class Recorder:
    """Sync request hook and async response hook, recording what they saw."""

    def __init__(self) -> None:
        self.requests: list[azt.RequestInfo] = []
        self.responses: list[azt.ResponseInfo] = []

    def on_request(self, info: azt.RequestInfo) -> None:
        self.requests.append(info)

    async def on_response(self, info: azt.ResponseInfo) -> None:
        self.responses.append(info)

    def hooks(self) -> dict[str, Sequence[azt.RequestHook] | Sequence[azt.ResponseHook]]:
        return {"request": [self.on_request], "response": [self.on_response]}


@pytest.fixture
async def faulty() -> AsyncIterator[tuple[StubServer, FaultInjector]]:
    injector = FaultInjector(seed=5)
    async with StubServer(StubConfig(faults=injector)) as stub:
        yield stub, injector


async def test_hooks_see_every_request_and_response() -> None:
    seen = Recorder()
    async with (
        StubServer() as stub,
        azt.TableServiceClient.from_connection_string(
            stub.connection_string, event_hooks=seen.hooks()
        ) as service,
    ):
        table = await service.create_table("hooked")
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "N": 1})
        with pytest.raises(azt.EntityNotFoundError):
            await table.get_entity("p", "nope")
    assert [(r.method, r.attempt) for r in seen.requests] == [
        ("POST", 1),
        ("POST", 1),
        ("GET", 1),
    ]
    assert [r.status for r in seen.responses] == [204, 204, 404]
    assert [r.ok for r in seen.responses] == [True, True, False]
    for request, response in zip(seen.requests, seen.responses, strict=True):
        assert response.request is request
        assert request.url.startswith(f"{stub.endpoint}/{stub.account}/")
        assert request.headers["Authorization"] == "REDACTED"
        assert request.headers["x-ms-version"] == "2019-02-02"
        assert request.client_request_id
        assert response.headers["x-ms-client-request-id"] == request.client_request_id
        assert response.request_id
        assert response.duration > 0
        assert response.error is None
    assert seen.requests[1].body_size > 0
    assert seen.requests[2].body_size == 0
    assert seen.responses[2].body_size > 0  # the 404's error body
    # read-only views
    with pytest.raises(TypeError):
        seen.requests[0].headers["x"] = "y"  # type: ignore[index]
    with pytest.raises(TypeError):
        seen.responses[0].headers["x"] = "y"  # type: ignore[index]
    with pytest.raises(AttributeError):
        seen.responses[0].status = 1  # type: ignore[misc]


async def test_hooks_see_each_retry_and_transport_failures(
    faulty: tuple[StubServer, FaultInjector],
) -> None:
    stub, injector = faulty
    seen = Recorder()
    async with azt.TableServiceClient.from_connection_string(
        stub.connection_string,
        event_hooks=azt.EventHooks(request=[seen.on_request], response=[seen.on_response]),
        sleep=Sleeps(),
        timeouts=FAST_TIMEOUTS,
    ) as service:
        table = await service.create_table("retried")
        seen.requests.clear()
        seen.responses.clear()
        injector.fail_next("busy", 1, methods={"POST"})
        injector.fail_next("drop-before", 1, methods={"POST"})
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    assert [r.attempt for r in seen.requests] == [1, 2, 3]
    assert [r.status for r in seen.responses] == [503, None, 204]
    failed = seen.responses[1]
    assert isinstance(failed.error, azt.ServiceConnectionError)
    assert failed.request_id is None
    assert failed.body_size == 0
    assert len({r.client_request_id for r in seen.requests}) == 3


async def test_sas_credential_token_is_not_in_the_view() -> None:
    seen = Recorder()
    async with StubServer() as stub:
        async with azt.TableServiceClient.from_connection_string(stub.connection_string) as service:
            await service.create_table("sassy")
        token = azt.generate_table_sas(
            azt.SharedKeyCredential(stub.account, DEV_ACCOUNT_KEY),
            "sassy",
            permission="r",
            expiry=datetime(2099, 1, 1, tzinfo=UTC),
        )
        async with azt.TableClient(
            f"{stub.endpoint}/{stub.account}", "sassy", token, event_hooks=seen.hooks()
        ) as table:
            assert await table.list_entities().to_list() == []
    assert len(seen.requests) == 1
    assert "sig" not in seen.requests[0].url
    assert seen.requests[0].url.endswith("/sassy()")
    assert "Authorization" not in seen.requests[0].headers


async def test_request_hook_exception_propagates_and_nothing_is_sent() -> None:
    class Refused(Exception):
        pass

    def refuse(info: azt.RequestInfo) -> None:
        if info.method == "DELETE":
            raise Refused(info.url)

    responses: list[azt.ResponseInfo] = []
    async with (
        StubServer() as stub,
        azt.TableServiceClient.from_connection_string(
            stub.connection_string,
            event_hooks={"request": [refuse], "response": [responses.append]},
        ) as service,
    ):
        await service.create_table("kept")
        with pytest.raises(Refused):
            await service.delete_table("kept")
        assert "kept" in await service.list_tables().to_list()  # never sent
    assert [r.request.method for r in responses] == ["POST", "GET"]


async def test_response_hook_exception_propagates_after_the_write() -> None:
    async def explode(info: azt.ResponseInfo) -> None:
        if info.request.method == "POST" and "Tables" not in info.request.url:
            raise RuntimeError("metrics backend down")

    async with (
        StubServer() as stub,
        azt.TableServiceClient.from_connection_string(
            stub.connection_string, event_hooks={"response": [explode]}
        ) as service,
    ):
        table = await service.create_table("applied")
        with pytest.raises(RuntimeError, match="metrics backend down"):
            await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
        # the service applied it: the hook's failure came after the answer
        assert (await table.get_entity("p", "r"))["RowKey"] == "r"


async def test_hooks_reach_table_clients_copies_and_the_context() -> None:
    seen = Recorder()
    async with (
        StubServer() as stub,
        azt.TableServiceClient.from_connection_string(
            stub.connection_string, event_hooks=seen.hooks()
        ) as service,
    ):
        await service.create_table("shared")
        table = service.get_table_client("shared")
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "1"})
        quick = table.with_options(server_timeout=5)
        await quick.get_entity("p", "1")
        ctx = azt.TableContext(service)
        ctx.add("shared", azt.DynamicEntity("p", "2"))
        await ctx.save_changes()
    methods = [r.method for r in seen.requests]
    assert methods == ["POST", "MERGE", "GET", "POST"]
    assert "timeout=5" in seen.requests[2].url
    assert seen.responses[3].ok


def test_hooks_are_checked() -> None:
    endpoint = "http://127.0.0.1:10002/devstoreaccount1"
    cred = azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY)
    bad: list[object] = [
        {"responses": []},
        {"request": print},  # a bare callable, not a list
        {"request": ["print"]},
        [print],
        "request",
    ]
    for hooks in bad:
        with pytest.raises(azt.ValidationError, match="event_hooks"):
            azt.TableServiceClient(endpoint, cred, event_hooks=hooks)  # type: ignore[arg-type]
    with pytest.raises(azt.ValidationError, match="not callable"):
        azt.EventHooks(response=[42])
    assert azt.EventHooks.coerce({"request": [], "response": []}) is None
    assert azt.EventHooks.coerce(azt.EventHooks()) is None


def test_hook_types_accept_sync_and_async_functions() -> None:
    def sync_hook(info: azt.ResponseInfo) -> None:
        pass

    async def async_hook(info: azt.ResponseInfo) -> None:
        pass

    hooks = azt.EventHooks(response=[sync_hook, async_hook])
    assert hooks.response == (sync_hook, async_hook)
