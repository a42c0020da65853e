"""OpenTelemetry tracing against the stub, recorded with the SDK's in-memory exporter:
span trees (operation -> attempts) of point operations, query pages, transactions and
saves, retries, errors, the partition-key option, ``traceparent`` as the server receives it
under every credential kind, and the disabled paths (no provider, ``enabled=False``, no
OpenTelemetry installed at all)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import SpanKind, StatusCode

import azt
from azt.entity import Entity, Prop, prop
from azt.query import Query
from azt_server_stub.app import DEV_ACCOUNT, DEV_KEY, StubConfig, connection_string, create_app
from azt_server_stub.realism.faults import FaultInjector

from .conftest import FAST_TIMEOUTS, Sleeps

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Song(Entity):
    """A row for the context and ORM traces."""

    plays: Prop[int] = prop(name="Plays", default=0)


class Recorder:
    """An SDK tracer provider whose finished spans land in memory."""

    def __init__(self, **provider_args: Any) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(**provider_args)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        sid = parent.context.span_id
        return [s for s in self.spans() if s.parent is not None and s.parent.span_id == sid]

    def clear(self) -> None:
        self.exporter.clear()


class CapturingStub:
    """The stub's application behind a runner of our own, recording each request's
    ``traceparent`` (``None`` when absent) and response status."""

    def __init__(self, faults: FaultInjector | None = None) -> None:
        self.app = create_app(StubConfig(faults=faults) if faults else StubConfig())
        self.seen: list[tuple[str, str | None, int]] = []
        self.app.on_response_prepare.append(self._record)
        self.runner = web.AppRunner(self.app, handle_signals=False)
        self.port = 0

    async def _record(self, request: web.Request, response: web.StreamResponse) -> None:
        self.seen.append((request.method, request.headers.get("traceparent"), response.status))

    async def start(self) -> None:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self.runner.addresses[0][1])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{DEV_ACCOUNT}"

    @property
    def connection_string(self) -> str:
        return connection_string(f"http://127.0.0.1:{self.port}", DEV_ACCOUNT, DEV_KEY)


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def injector() -> FaultInjector:
    return FaultInjector(seed=3)


@pytest.fixture
async def stub(injector: FaultInjector) -> AsyncIterator[CapturingStub]:
    server = CapturingStub(injector)
    await server.start()
    try:
        yield server
    finally:
        await server.runner.cleanup()


def service_for(
    stub: CapturingStub, rec: Recorder | None, **options: Any
) -> azt.TableServiceClient:
    tracing = options.pop("tracing", None)
    if tracing is None and rec is not None:
        tracing = azt.TracingOptions(tracer_provider=rec.provider)
    return azt.TableServiceClient.from_connection_string(
        stub.connection_string, tracing=tracing, timeouts=FAST_TIMEOUTS, **options
    )


def traceparent_ids(header: str | None) -> tuple[str, str, str]:
    """(trace id, parent span id, flags) of a W3C traceparent."""
    assert header is not None
    version, trace_id, span_id, flags = header.split("-")
    assert version == "00"
    return trace_id, span_id, flags


def hexid(value: int, width: int) -> str:
    return format(value, f"0{width}x")


# --- span trees ---------------------------------------------------------------------------


async def test_insert_is_an_operation_span_over_one_attempt_span(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        table = await service.create_table("songs")
        rec.clear()
        stub.seen.clear()
        await table.insert_entity({"PartitionKey": "alice", "RowKey": "1", "Plays": 3})
    (op,) = rec.named("insert_entity")
    (attempt,) = rec.children(op)
    assert rec.spans() == [attempt, op]
    assert op.name == "insert_entity songs"
    assert op.kind is SpanKind.INTERNAL
    assert op.parent is None
    assert op.status.status_code is StatusCode.UNSET
    assert dict(op.attributes or {}) == {
        "db.system.name": "azure.tables",
        "db.system": "azure.tables",
        "az.namespace": "Microsoft.Tables",
        "db.namespace": DEV_ACCOUNT,
        "server.address": "127.0.0.1",
        "server.port": stub.port,
        "db.operation.name": "insert_entity",
        "db.collection.name": "songs",
        "db.response.status_code": "204",
        "azt.entity_count": 1,
        "azt.retry_count": 0,
    }
    assert attempt.name == "POST"
    assert attempt.kind is SpanKind.CLIENT
    attrs = dict(attempt.attributes or {})
    assert attrs["http.request.method"] == "POST"
    assert attrs["url.full"] == f"{stub.endpoint}/songs"
    assert attrs["server.address"] == "127.0.0.1"
    assert attrs["server.port"] == stub.port
    assert attrs["http.response.status_code"] == 204
    assert attrs["az.client_request_id"]
    assert attrs["az.service_request_id"]
    assert "http.request.resend_count" not in attrs
    assert "error.type" not in attrs
    # The server received the attempt span's context.
    ((method, header, status),) = stub.seen
    assert (method, status) == ("POST", 204)
    trace_id, parent_id, flags = traceparent_ids(header)
    assert trace_id == hexid(attempt.context.trace_id, 32) == hexid(op.context.trace_id, 32)
    assert parent_id == hexid(attempt.context.span_id, 16)
    assert int(flags, 16) & 1 == 1  # sampled


async def test_merge_is_reported_as_other_with_the_original_method(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        table = await service.create_table("merged")
        rec.clear()
        await table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
    (op,) = rec.named("upsert_entity")
    (attempt,) = rec.children(op)
    attrs = dict(attempt.attributes or {})
    assert attempt.name == "MERGE"
    assert attrs["http.request.method"] == "_OTHER"
    assert attrs["http.request.method_original"] == "MERGE"


async def test_a_query_of_three_pages_is_three_page_spans(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        table = await service.create_table("paged")
        for i in range(5):
            await table.insert_entity({"PartitionKey": "secret-pk", "RowKey": str(i)})
        rec.clear()
        rows = await table.query_entities(
            "PartitionKey eq @pk", parameters={"pk": "secret-pk"}, results_per_page=2
        ).to_list()
    assert len(rows) == 5
    pages = rec.named("query_entities")
    assert [p.name for p in pages] == ["query_entities paged"] * 3
    assert [(p.attributes or {})["azt.entity_count"] for p in pages] == [2, 2, 1]
    assert len({p.context.trace_id for p in pages}) == 3  # one root per page fetch
    urls = []
    for page in pages:
        (attempt,) = rec.children(page)
        assert attempt.name == "GET"
        assert (attempt.attributes or {})["http.response.status_code"] == 200
        urls.append(str((attempt.attributes or {})["url.full"]))
    # Filter values and continuation keys are personal data: not in the spans by default.
    assert all("secret-pk" not in url for url in urls)
    assert "$filter=REDACTED" in urls[0]
    assert "NextPartitionKey=REDACTED" in urls[1]
    assert "NextRowKey=REDACTED" in urls[2]
    assert "$top=2" in urls[0]


async def test_query_tables_pages_are_traced(stub: CapturingStub, rec: Recorder) -> None:
    async with service_for(stub, rec) as service:
        for name in ("tone", "ttwo", "tthree"):
            await service.create_table(name)
        rec.clear()
        names = [t async for t in service.list_tables(results_per_page=2)]
    assert len(names) == 3
    pages = rec.named("query_tables")
    assert [p.name for p in pages] == ["query_tables", "query_tables"]
    assert [(p.attributes or {})["azt.entity_count"] for p in pages] == [2, 1]
    assert all("db.collection.name" not in (p.attributes or {}) for p in pages)


async def test_orm_query_pages_are_the_clients_page_spans(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        table = await service.create_table("ormsongs")
        for i in range(3):
            await table.insert_entity(Song("p", str(i), plays=i))
        rec.clear()
        songs = await Query(Song, table).page_size(2).to_list()
    assert len(songs) == 3
    pages = rec.named("query_entities")
    assert [(p.attributes or {})["azt.entity_count"] for p in pages] == [2, 1]
    assert all(len(rec.children(p)) == 1 for p in pages)


async def test_a_transaction_is_one_span_with_its_entity_count(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        table = await service.create_table("batched")
        rec.clear()
        batch = table.batch()
        for i in range(3):
            batch.create({"PartitionKey": "p", "RowKey": str(i)})
        results = await table.submit_transaction(batch)
    assert len(results) == 3
    (op,) = rec.named("submit_transaction")
    assert op.name == "submit_transaction batched"
    attrs = dict(op.attributes or {})
    assert attrs["azt.entity_count"] == 3
    assert attrs["db.response.status_code"] == "202"
    assert "azt.partition_key" not in attrs
    (attempt,) = rec.children(op)
    assert (attempt.attributes or {})["url.full"] == f"{stub.endpoint}/$batch"


async def test_save_changes_has_its_transactions_as_children(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        await service.create_table("saved")
        rec.clear()
        ctx = azt.TableContext(service)
        for pk in ("a", "b"):
            for i in range(2):
                ctx.add("saved", Song(pk, str(i)))
        result = await ctx.save_changes(azt.SaveChangesOptions.BATCH)
    assert len(result) == 4
    (save,) = rec.named("save_changes")
    assert save.parent is None
    assert (save.attributes or {})["azt.entity_count"] == 4
    assert (save.attributes or {})["db.operation.name"] == "save_changes"
    transactions = rec.children(save)
    assert [t.name for t in transactions] == ["submit_transaction saved"] * 2
    for tx in transactions:
        assert (tx.attributes or {})["azt.entity_count"] == 2
        (attempt,) = rec.children(tx)
        assert attempt.kind is SpanKind.CLIENT
    assert {s.context.trace_id for s in rec.spans()} == {save.context.trace_id}


async def test_save_changes_one_by_one_has_an_operation_span_per_change(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        await service.create_table("singles")
        ctx = azt.TableContext(service)
        ctx.add("singles", Song("p", "1"))
        ctx.add("singles", Song("p", "2"))
        rec.clear()
        await ctx.save_changes()
    (save,) = rec.named("save_changes")
    assert [c.name for c in rec.children(save)] == ["insert_entity singles"] * 2


# --- retries and errors -------------------------------------------------------------------


async def test_a_retried_operation_has_an_attempt_span_per_try(
    stub: CapturingStub, rec: Recorder, injector: FaultInjector
) -> None:
    async with service_for(stub, rec, sleep=Sleeps()) as service:
        table = await service.create_table("retried")
        rec.clear()
        stub.seen.clear()
        injector.fail_next("busy", 2, methods={"POST"})
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    (op,) = rec.named("insert_entity")
    attempts = rec.children(op)
    assert [(a.attributes or {})["http.response.status_code"] for a in attempts] == [503, 503, 204]
    assert [(a.attributes or {}).get("http.request.resend_count") for a in attempts] == [
        None,
        1,
        2,
    ]
    assert [(a.attributes or {}).get("error.type") for a in attempts] == ["503", "503", None]
    assert [a.status.status_code for a in attempts] == [
        StatusCode.ERROR,
        StatusCode.ERROR,
        StatusCode.UNSET,
    ]
    assert (op.attributes or {})["azt.retry_count"] == 2
    assert (op.attributes or {})["db.response.status_code"] == "204"
    assert op.status.status_code is StatusCode.UNSET
    # Each attempt carried its own span's context.
    sent = [traceparent_ids(header)[1] for _, header, _ in stub.seen]
    assert sent == [hexid(a.context.span_id, 16) for a in attempts]


async def test_a_transport_failure_is_recorded_on_the_attempt(
    stub: CapturingStub, rec: Recorder, injector: FaultInjector
) -> None:
    async with service_for(stub, rec, sleep=Sleeps()) as service:
        table = await service.create_table("dropped")
        rec.clear()
        injector.fail_next("drop-before", 1, methods={"GET"})
        with pytest.raises(azt.EntityNotFoundError):
            await table.get_entity("p", "r")
    (op,) = rec.named("get_entity")
    first, second = rec.children(op)
    assert "http.response.status_code" not in (first.attributes or {})
    assert (first.attributes or {})["error.type"] == "azt.ServiceConnectionError"
    assert [e.name for e in first.events] == ["exception"]
    assert (second.attributes or {})["http.request.resend_count"] == 1


async def test_an_error_is_recorded_on_the_operation_span(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        table = await service.create_table("errors")
        rec.clear()
        with pytest.raises(azt.EntityNotFoundError):
            await table.get_entity("alice", "nope")
    (op,) = rec.named("get_entity")
    assert op.status.status_code is StatusCode.ERROR
    attrs = dict(op.attributes or {})
    assert attrs["error.type"] == "azt.EntityNotFoundError"
    assert attrs["db.response.status_code"] == "404"
    assert attrs["azt.error_code"] == "ResourceNotFound"
    (event,) = op.events
    assert event.name == "exception"
    assert str((event.attributes or {})["exception.type"]).endswith("EntityNotFoundError")
    (attempt,) = rec.children(op)
    assert (attempt.attributes or {})["http.response.status_code"] == 404
    assert (attempt.attributes or {})["error.type"] == "404"
    assert "alice" not in str((attempt.attributes or {})["url.full"])


async def test_a_refused_argument_is_recorded_and_nothing_is_sent(
    stub: CapturingStub, rec: Recorder
) -> None:
    async with service_for(stub, rec) as service:
        table = service.get_table_client("refused")
        with pytest.raises(azt.ValidationError):
            await table.insert_entity({"PartitionKey": "p"})
    (op,) = rec.spans()
    assert op.name == "insert_entity refused"
    assert (op.attributes or {})["error.type"] == "azt.ValidationError"
    assert rec.children(op) == []
    assert "db.response.status_code" not in (op.attributes or {})


async def test_the_resend_after_a_refused_bearer_token_is_an_attempt_of_its_own(
    rec: Recorder,
) -> None:
    """A 401 to a bearer token, then the resend with a fresh one: two attempt spans, the
    second a resend (as azt.http numbers it attempt 2)."""
    tokens = iter(["first", "second"])

    class Identity:
        async def get_token(self, *scopes: str, **kwargs: object) -> object:
            return type("T", (), {"token": next(tokens), "expires_on": 4e9})()

    def handler(request: azt.HttpRequest) -> azt.HttpResponse:
        if request.headers["Authorization"] == "Bearer first":
            return azt.HttpResponse(401, {"x-ms-error-code": "InvalidAuthenticationInfo"})
        return azt.HttpResponse(204, {"x-ms-request-id": "ok"})

    async with azt.TableServiceClient(
        "http://127.0.0.1:10002/devstoreaccount1",
        Identity(),
        transport=azt.MockTransport(handler),
        tracing=azt.TracingOptions(tracer_provider=rec.provider),
    ) as service:
        await service.delete_table("gone")
    (op,) = rec.named("delete_table")
    attempts = rec.children(op)
    assert [(a.attributes or {})["http.response.status_code"] for a in attempts] == [401, 204]
    assert [(a.attributes or {}).get("http.request.resend_count") for a in attempts] == [None, 1]
    assert (op.attributes or {})["azt.retry_count"] == 1


async def test_a_failed_operation_carries_no_entity_count(
    stub: CapturingStub, rec: Recorder
) -> None:
    """Whatever way an operation fails, and whether its count is fixed (point operations)
    or read from its result (transactions, saves, pages), its span counts no entities: a
    failed get_entity read none, a refused insert wrote none."""
    async with service_for(stub, rec) as service:
        table = await service.create_table("failing")
        await table.insert_entity({"PartitionKey": "p", "RowKey": "taken"})
        rec.clear()
        with pytest.raises(azt.EntityNotFoundError):
            await table.get_entity("p", "absent")
        with pytest.raises(azt.EntityAlreadyExistsError):
            await table.insert_entity({"PartitionKey": "p", "RowKey": "taken"})
        with pytest.raises(azt.EntityNotFoundError):
            await table.update_entity({"PartitionKey": "p", "RowKey": "absent"})
        with pytest.raises(azt.ValidationError):  # refused before sending
            await table.upsert_entity({"PartitionKey": "p"})
        batch = table.batch()
        batch.create({"PartitionKey": "p", "RowKey": "new"})
        batch.create({"PartitionKey": "p", "RowKey": "taken"})
        with pytest.raises(azt.TransactionError):
            await table.submit_transaction(batch)
        ctx = azt.TableContext(service)
        ctx.add("failing", Song("p", "taken"))
        with pytest.raises(azt.AztError):
            await ctx.save_changes()
        with pytest.raises(azt.TableNotFoundError):
            await service.get_table_client("nosuchtable").list_entities().to_list()
        await table.get_entity("p", "taken")  # and a success still counts its entity
    failed = [
        s
        for s in rec.spans()
        if s.kind is SpanKind.INTERNAL and s.status.status_code is StatusCode.ERROR
    ]
    names = [str((s.attributes or {})["db.operation.name"]) for s in failed]
    assert sorted(set(names)) == [
        "get_entity",
        "insert_entity",
        "query_entities",
        "save_changes",
        "submit_transaction",
        "update_entity",
        "upsert_entity",
    ]
    for span in failed:
        assert "azt.entity_count" not in (span.attributes or {}), span.name
    (ok,) = [s for s in rec.named("get_entity") if s.status.status_code is StatusCode.UNSET]
    assert (ok.attributes or {})["azt.entity_count"] == 1


# --- partition keys -----------------------------------------------------------------------


async def test_partition_key_is_absent_by_default_and_present_when_asked(
    stub: CapturingStub,
) -> None:
    quiet, loud = Recorder(), Recorder()
    for rec, keep in ((quiet, False), (loud, True)):
        options = azt.TracingOptions(tracer_provider=rec.provider, trace_partition_key=keep)
        async with service_for(stub, None, tracing=options) as service:
            table = await service.create_table_if_not_exists("keyed")
            await table.upsert_entity({"PartitionKey": "alice", "RowKey": "1"})
            await table.insert_entity(Song("bob", "2"))
            await table.get_entity(partition_key="alice", row_key="1")
            await table.delete_entity(Song("bob", "2"))
            batch = table.batch()
            batch.upsert({"PartitionKey": "carol", "RowKey": "3"})
            await table.submit_transaction(batch)
    ops = ["upsert_entity", "insert_entity", "get_entity", "delete_entity", "submit_transaction"]
    for span in quiet.spans():
        assert "azt.partition_key" not in (span.attributes or {})
        for value in (span.attributes or {}).values():
            assert not any(name in str(value) for name in ("alice", "bob", "carol"))
    got = {
        str((s.attributes or {})["db.operation.name"]): (s.attributes or {}).get(
            "azt.partition_key"
        )
        for s in loud.spans()
        if s.kind is SpanKind.INTERNAL
    }
    assert got == {
        "create_table_if_not_exists": None,
        "upsert_entity": "alice",
        "insert_entity": "bob",
        "get_entity": "alice",
        "delete_entity": "bob",
        "submit_transaction": "carol",
    }
    assert sorted(got) == sorted([*ops, "create_table_if_not_exists"])
    (get,) = loud.named("get_entity")
    (attempt,) = loud.children(get)
    assert "PartitionKey='alice'" in str((attempt.attributes or {})["url.full"])


# --- traceparent and signatures -----------------------------------------------------------


def _credential(kind: str) -> tuple[str, object]:
    if kind == "sharedkey":
        return "", azt.SharedKeyCredential(DEV_ACCOUNT, DEV_KEY)
    if kind == "sharedkeylite":
        return "", azt.SharedKeyLiteCredential(DEV_ACCOUNT, DEV_KEY)
    sas = azt.generate_account_sas(
        azt.SharedKeyCredential(DEV_ACCOUNT, DEV_KEY),
        resource_types="sco",
        permission="rwdlacu",
        expiry=datetime.now(UTC) + timedelta(hours=1),
    )
    return sas, None


@pytest.mark.parametrize("kind", ["sharedkey", "sharedkeylite", "sas"])
async def test_traceparent_reaches_the_server_and_signatures_still_verify(
    stub: CapturingStub, rec: Recorder, kind: str
) -> None:
    sas, credential = _credential(kind)
    endpoint = f"{stub.endpoint}?{sas}" if sas else stub.endpoint
    options = azt.TracingOptions(tracer_provider=rec.provider)
    async with azt.TableServiceClient(endpoint, credential, tracing=options) as service:
        table = await service.create_table("signed")
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
        await table.get_entity("p", "r")
        await table.query_entities(results_per_page=1).to_list()
    assert [status for _, _, status in stub.seen] == [204, 204, 200, 200]
    attempts = [s for s in rec.spans() if s.kind is SpanKind.CLIENT]
    assert [traceparent_ids(h)[1] for _, h, _ in stub.seen] == [
        hexid(a.context.span_id, 16) for a in attempts
    ]
    for attempt in attempts:
        assert "sig=" not in str((attempt.attributes or {})["url.full"])


async def test_hooks_and_debug_logging_see_the_traceparent(
    stub: CapturingStub, rec: Recorder
) -> None:
    seen: list[str | None] = []

    def on_request(info: azt.RequestInfo) -> None:
        seen.append(info.headers.get("traceparent"))

    async with service_for(stub, rec, event_hooks={"request": [on_request]}) as service:
        await service.create_table("hooked")
    (attempt,) = [s for s in rec.spans() if s.kind is SpanKind.CLIENT]
    assert [traceparent_ids(h)[1] for h in seen] == [hexid(attempt.context.span_id, 16)]
    assert stub.seen[0][1] == seen[0]


# --- off --------------------------------------------------------------------------------


async def test_without_a_provider_nothing_is_traced_or_sent(
    stub: CapturingStub, rec: Recorder
) -> None:
    # The global provider is the API's default here (tests never set one in-process).
    async with service_for(stub, None) as service:
        table = await service.create_table("untraced")
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    assert [header for _, header, _ in stub.seen] == [None, None]
    disabled = azt.TracingOptions(tracer_provider=rec.provider, enabled=False)
    async with service_for(stub, None, tracing=disabled) as service:
        await service.get_table_client("untraced").get_entity("p", "r")
    assert rec.spans() == []
    assert stub.seen[-1][1] is None


async def test_a_sampled_out_operation_sends_an_unsampled_traceparent(
    stub: CapturingStub,
) -> None:
    rec = Recorder(sampler=ALWAYS_OFF)
    async with service_for(stub, rec) as service:
        await service.create_table("sampled")
    assert rec.spans() == []
    (_, header, status), *_ = stub.seen
    assert status == 204
    assert int(traceparent_ids(header)[2], 16) & 1 == 0  # not sampled


def test_options_are_checked() -> None:
    with pytest.raises(azt.ValidationError, match="trace_partition_key"):
        azt.TracingOptions(trace_partition_key="yes")  # type: ignore[arg-type]
    with pytest.raises(azt.ValidationError, match="TracerProvider"):
        azt.TracingOptions(tracer_provider=object())
    with pytest.raises(azt.ValidationError, match="TracingOptions"):
        azt.TableClient(
            "http://127.0.0.1:1/devstoreaccount1",
            "movies",
            azt.SharedKeyCredential(DEV_ACCOUNT, DEV_KEY),
            tracing=True,  # type: ignore[arg-type]
        )


def _run(code: str, **environ: str) -> str:
    env = dict(os.environ, PYTHONPATH=REPO, **environ)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_azt_runs_without_opentelemetry_installed() -> None:
    out = _run(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if the extra were not installed
        import asyncio
        import azt
        from azt._core import tracing

        assert not tracing.HAVE_OTEL
        seen = []

        def answer(request):
            seen.append(request.headers.get("traceparent"))
            return azt.HttpResponse(204, {"ETag": 'W/"x"'})

        async def main():
            options = azt.TracingOptions(trace_partition_key=True)
            async with azt.TableClient(
                "http://127.0.0.1:1/devstoreaccount1", "movies",
                azt.SharedKeyCredential("devstoreaccount1", "a2V5"),
                transport=azt.MockTransport(answer), tracing=options,
            ) as table:
                await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
                await table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
        asyncio.run(main())
        print(seen, "opentelemetry" in sys.modules and sys.modules["opentelemetry"])
        """
    )
    assert out.strip() == "[None, None] None"


def test_the_global_tracer_provider_is_used_once_set() -> None:
    out = _run(
        """
        import asyncio
        import azt
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        seen = []

        def answer(request):
            seen.append(request.headers.get("traceparent") is not None)
            return azt.HttpResponse(204, {})

        async def main():
            async with azt.TableClient(
                "http://127.0.0.1:1/devstoreaccount1", "movies",
                azt.SharedKeyCredential("devstoreaccount1", "a2V5"),
                transport=azt.MockTransport(answer),
            ) as table:
                await table.delete_entity("p", "before")
                exporter = InMemorySpanExporter()
                provider = TracerProvider()
                provider.add_span_processor(SimpleSpanProcessor(exporter))
                trace.set_tracer_provider(provider)
                await table.delete_entity("p", "after")
                with trace.get_tracer("app").start_as_current_span("request handler"):
                    await table.delete_entity("p", "nested")
            names = [s.name for s in exporter.get_finished_spans()]
            print(seen, names)

        asyncio.run(main())
        """
    )
    assert out.strip() == (
        "[False, True, True] ['DELETE', 'delete_entity movies', 'DELETE', "
        "'delete_entity movies', 'request handler']"
    )


def test_a_provider_named_by_the_environment_is_used() -> None:
    out = _run(
        """
        import asyncio
        import os
        import azt

        assert os.environ["OTEL_PYTHON_TRACER_PROVIDER"] == "sdk_tracer_provider"
        seen = []

        def answer(request):
            seen.append(request.headers.get("traceparent") is not None)
            return azt.HttpResponse(204, {})

        async def main():
            async with azt.TableClient(
                "http://127.0.0.1:1/devstoreaccount1", "movies",
                azt.SharedKeyCredential("devstoreaccount1", "a2V5"),
                transport=azt.MockTransport(answer),
            ) as table:
                await table.delete_entity("p", "first")  # loads the provider
            print(seen)

        asyncio.run(main())
        """,
        OTEL_PYTHON_TRACER_PROVIDER="sdk_tracer_provider",
    )
    assert out.strip() == "[True]"


@pytest.fixture(autouse=True)
def _no_global_provider() -> Iterator[None]:
    """These tests pass providers explicitly: the process-wide one must stay unset."""
    before = trace.get_tracer_provider()
    yield
    assert trace.get_tracer_provider() is before
