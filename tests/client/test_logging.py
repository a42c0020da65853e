"""Production logging: the redaction functions, the ``azt.http`` DEBUG record of every
attempt (against the stub), the ``azt.retry`` WARNING, and the quiet fast path."""

from __future__ import annotations

import doctest
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import pytest

import azt
from azt._core import hooks as hooks_module
from azt._core import logs
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt._core.logs import redact_headers, redact_text, redact_url
from azt._core.pipeline import Pipeline
from azt_server_stub import StubServer
from azt_server_stub.app import StubConfig
from azt_server_stub.realism.faults import FaultInjector

from .conftest import FAST_TIMEOUTS, Sleeps

ATTEMPT_FIELDS = (
    "method",
    "url",
    "status",
    "duration",
    "request_id",
    "client_request_id",
    "attempt",
    "request_size",
    "response_size",
    "error",
)


class Capture(logging.Handler):
    """Keeps every record of the ``azt`` tree."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def named(self, name: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.name == name]


@pytest.fixture
def capture() -> Iterator[Capture]:
    handler = Capture()
    root = logging.getLogger("azt")
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


@pytest.fixture
async def faulty() -> AsyncIterator[tuple[StubServer, FaultInjector]]:
    injector = FaultInjector(seed=3)
    async with StubServer(StubConfig(faults=injector)) as stub:
        yield stub, injector


# --- redaction ----------------------------------------------------------------------------


def test_module_examples_run() -> None:
    for module in (logs, hooks_module):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
        assert result.failed == 0, module.__name__
        assert result.attempted > 0, module.__name__


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h/t?sv=1&sig=abc%3D&se=x", "http://h/t?sv=1&sig=REDACTED&se=x"),
        ("http://h/t?sig=abc", "http://h/t?sig=REDACTED"),
        ("http://h/t()?$filter=x&SIG=A%2Bb#frag", "http://h/t()?$filter=x&SIG=REDACTED#frag"),
        ("http://h/t?access_token=eyJ.a.b&x=1", "http://h/t?access_token=REDACTED&x=1"),
        ("https://user:pw@h/t?a=1", "https://REDACTED@h/t?a=1"),
        # a parameter that merely ends in "sig", and a value "sig=", are not secrets
        ("http://h/t?xsig=1&q=sig%3D", "http://h/t?xsig=1&q=sig%3D"),
        ("http://h/Tables", "http://h/Tables"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_url_is_the_one_the_transport_uses() -> None:
    from azt._core import transport

    assert transport.redact_url is redact_url


def test_redact_headers() -> None:
    headers = {
        "Authorization": "SharedKey devstoreaccount1:c2lnbmF0dXJl",
        "proxy-authorization": "Basic dXNlcjpwdw==",
        "x-ms-copy-source-authorization": "Bearer abc",
        "x-ms-encryption-key": "a2V5",
        "Cookie": "session=1",
        "x-ms-client-request-id": "c1",
        "x-ms-version": "2019-02-02",
        "Referer": "https://h/t?sig=leaked",
    }
    out = redact_headers(headers)
    assert out == {
        "Authorization": "REDACTED",
        "proxy-authorization": "REDACTED",
        "x-ms-copy-source-authorization": "REDACTED",
        "x-ms-encryption-key": "REDACTED",
        "Cookie": "REDACTED",
        "x-ms-client-request-id": "c1",
        "x-ms-version": "2019-02-02",
        "Referer": "https://h/t?sig=REDACTED",
    }
    assert headers["Authorization"].startswith("SharedKey")  # the input is left alone


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"DefaultEndpointsProtocol=http;AccountName=a;AccountKey={DEV_ACCOUNT_KEY};", None),
        ("TableEndpoint=http://h;SharedAccessSignature=sv=1&sig=c2ln%3D", "c2ln"),
        ("Authorization: Bearer eyJhbGciOi.eyJzdWIi.c2ln", "eyJ"),
        ("Authorization: SharedKey acct:c2lnbmF0dXJlMQ==", "c2lnbmF0dXJlMQ"),
        ("Authorization: SharedKeyLite acct:c2lnbmF0dXJlMg==", "c2lnbmF0dXJlMg"),
        ("GET https://u:hunter2@h/t failed", "hunter2"),
        ("accountkey = QUJD;", "QUJD"),
    ],
)
def test_redact_text(text: str, secret: str | None) -> None:
    out = redact_text(text)
    assert "REDACTED" in out
    assert (secret or DEV_ACCOUNT_KEY) not in out
    assert redact_text(out) == out  # idempotent


def test_redact_text_keeps_ordinary_text() -> None:
    text = "409 EntityAlreadyExists: The specified entity already exists. RequestId:r1"
    assert redact_text(text) == text


# --- one DEBUG record per attempt -----------------------------------------------------------


async def test_one_debug_record_per_attempt(capture: Capture) -> None:
    async with StubServer() as stub:
        conn = stub.connection_string
        async with azt.TableServiceClient.from_connection_string(conn) as service:
            table = await service.create_table("logged")
            entity = {"PartitionKey": "p", "RowKey": "r", "Name": "x" * 100}
            await table.insert_entity(entity)
            with pytest.raises(azt.EntityNotFoundError):
                await table.get_entity("p", "missing")
    records = capture.named("azt.http")
    assert [(r.method, r.status) for r in records] == [  # type: ignore[attr-defined]
        ("POST", 204),
        ("POST", 204),
        ("GET", 404),
    ]
    for record in records:
        assert record.levelno == logging.DEBUG
        for field in ATTEMPT_FIELDS:
            assert hasattr(record, field), field
        values = record.__dict__
        assert values["attempt"] == 1
        assert values["error"] is None
        assert values["request_id"]
        assert values["client_request_id"]
        assert values["duration"] > 0
        assert values["url"].startswith(stub.endpoint + "/" + stub.account)
        message = record.getMessage()
        for shown in (
            values["method"],
            values["url"],
            str(values["status"]),
            values["request_id"],
            values["client_request_id"],
            f"attempt {values['attempt']}",
            f"sent {values['request_size']} B",
            f"received {values['response_size']} B",
        ):
            assert shown in message
    insert = records[1].__dict__
    assert insert["request_size"] > 100
    assert insert["response_size"] == 0  # Prefer: return-no-content
    assert records[2].__dict__["response_size"] > 0  # the error body
    assert insert["url"].endswith("/logged")
    assert records[2].__dict__["url"].endswith("/logged(PartitionKey='p',RowKey='missing')")


async def test_retries_log_each_attempt_and_a_warning(
    capture: Capture, faulty: tuple[StubServer, FaultInjector]
) -> None:
    stub, injector = faulty
    sleeps = Sleeps()
    async with azt.TableServiceClient.from_connection_string(
        stub.connection_string, sleep=sleeps, timeouts=FAST_TIMEOUTS
    ) as service:
        table = await service.create_table("retried")
        capture.records.clear()
        injector.fail_next("busy", 1, methods={"POST"})
        injector.fail_next("drop-before", 1, methods={"POST"})
        await table.insert_entity({"PartitionKey": "p", "RowKey": "r"})
    attempts = capture.named("azt.http")
    values = [r.__dict__ for r in attempts]
    assert [v["attempt"] for v in values] == [1, 2, 3]
    assert values[0]["status"] == 503
    assert values[1]["status"] is None
    assert values[1]["response_size"] is None
    assert "ServiceConnectionError" in values[1]["error"]
    assert "no answer (ServiceConnectionError" in attempts[1].getMessage()
    assert values[2]["status"] == 204
    assert len({v["client_request_id"] for v in values}) == 3  # fresh per attempt
    warnings = capture.named("azt.retry")
    assert len(warnings) == 2
    for number, (record, wait) in enumerate(zip(warnings, sleeps.delays, strict=True), 1):
        assert record.levelno == logging.WARNING
        assert record.__dict__["attempt"] == number
        assert record.__dict__["wait"] == pytest.approx(wait)
        assert record.__dict__["method"] == "POST"
        assert f"next attempt in {wait:.3f} s" in record.getMessage()
    assert warnings[0].__dict__["reason"] == "503 ServerBusy"
    assert warnings[0].__dict__["status"] == 503
    assert "ServiceConnectionError" in warnings[1].__dict__["reason"]
    # nothing above WARNING: the caller saw every outcome
    assert all(r.levelno <= logging.WARNING for r in capture.records)


async def test_sas_credential_never_reaches_the_log(capture: Capture) -> None:
    async with StubServer() as stub:
        key = azt.SharedKeyCredential(stub.account, DEV_ACCOUNT_KEY)
        async with azt.TableServiceClient.from_connection_string(stub.connection_string) as service:
            await service.create_table("sassed")
        token = azt.generate_table_sas(
            key, "sassed", permission="raud", expiry=datetime(2099, 1, 1, tzinfo=UTC)
        )
        signature = token.split("sig=")[1].split("&")[0]
        capture.records.clear()
        endpoint = f"{stub.endpoint}/{stub.account}"
        async with azt.TableClient(endpoint, "sassed", token) as table:
            await table.upsert_entity({"PartitionKey": "p", "RowKey": "r"})
            assert (await table.get_entity("p", "r"))["RowKey"] == "r"
            with pytest.raises(azt.EntityNotFoundError):
                await table.get_entity("p", "nope")
    records = capture.named("azt.http")
    assert len(records) == 3
    for record in records:
        text = record.getMessage() + " ".join(str(v) for v in record.__dict__.values())
        assert signature not in text
        assert "sig=" not in text  # the SAS credential's token is left out entirely
        assert "sv=" not in record.__dict__["url"]


async def test_bearer_refresh_is_logged_without_the_token(capture: Capture) -> None:
    tokens = iter(["first-token-value", "second-token-value"])

    class Identity:
        async def get_token(self, *scopes: str, **kwargs: object) -> object:
            return type("T", (), {"token": next(tokens), "expires_on": 4e9})()

    def handler(request: azt.HttpRequest) -> azt.HttpResponse:
        if request.headers["Authorization"] == "Bearer first-token-value":
            return azt.HttpResponse(401, {"x-ms-error-code": "InvalidAuthenticationInfo"})
        return azt.HttpResponse(204, {"x-ms-request-id": "ok"})

    transport = azt.MockTransport(handler)
    async with azt.TableServiceClient(
        "http://127.0.0.1:10002/devstoreaccount1", Identity(), transport=transport
    ) as service:
        await service.delete_table("gone")
    http = capture.named("azt.http")
    assert [(r.levelno, r.__dict__.get("status")) for r in http] == [
        (logging.DEBUG, 401),
        (logging.INFO, None),
        (logging.DEBUG, 204),
    ]
    assert "new token" in http[1].getMessage()
    # The resend is a send of its own: attempt 2, not attempt 1 again.
    assert [r.__dict__["attempt"] for r in http] == [1, 1, 2]
    assert "(attempt 2," in http[2].getMessage()
    dump = " ".join(r.getMessage() + repr(r.__dict__) for r in capture.records)
    assert "token-value" not in dump


async def test_attempt_numbers_count_every_send_across_a_refresh_and_retries(
    capture: Capture,
) -> None:
    """A 401 resend, then two busy answers retried: the records and the hooks number the
    four sends 1 to 4 (the retry policy's three attempts are not spent by the resend)."""
    tokens = iter(["first-token-value", "second-token-value"])
    answers = iter([503, 503, 204])

    class Identity:
        async def get_token(self, *scopes: str, **kwargs: object) -> object:
            return type("T", (), {"token": next(tokens), "expires_on": 4e9})()

    def handler(request: azt.HttpRequest) -> azt.HttpResponse:
        if request.headers["Authorization"] == "Bearer first-token-value":
            return azt.HttpResponse(401, {"x-ms-error-code": "InvalidAuthenticationInfo"})
        status = next(answers)
        code = {"x-ms-error-code": "ServerBusy"} if status == 503 else {}
        return azt.HttpResponse(status, {"x-ms-request-id": "r", **code})

    hooked: list[int] = []

    async def on_request(info: azt.RequestInfo) -> None:
        hooked.append(info.attempt)

    async with azt.TableServiceClient(
        "http://127.0.0.1:10002/devstoreaccount1",
        Identity(),
        transport=azt.MockTransport(handler),
        event_hooks={"request": [on_request]},
        retry=azt.RetryPolicy(max_attempts=3, base=0.0, minimum=0.0, maximum=0.0, jitter=0.0),
    ) as service:
        await service.delete_table("gone")
    sent = [r for r in capture.named("azt.http") if r.levelno == logging.DEBUG]
    assert [(r.__dict__["attempt"], r.__dict__["status"]) for r in sent] == [
        (1, 401),
        (2, 503),
        (3, 503),
        (4, 204),
    ]
    assert hooked == [1, 2, 3, 4]
    retries = capture.named("azt.retry")
    assert [r.__dict__["attempt"] for r in retries] == [2, 3]  # the sends that failed
    assert "attempt 2 failed" in retries[0].getMessage()


async def test_nothing_is_built_when_debug_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger("azt")
    old = root.level
    root.setLevel(logging.INFO)
    observed: list[object] = []
    original = Pipeline._observed_send

    async def spy(self: Pipeline, *args: object, **kwargs: object) -> azt.HttpResponse:
        observed.append(args)
        return await original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Pipeline, "_observed_send", spy)
    transport = azt.MockTransport(lambda r: azt.HttpResponse(204, {"x-ms-request-id": "r"}))
    try:
        async with azt.TableServiceClient(
            "http://127.0.0.1:10002/devstoreaccount1",
            azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY),
            transport=transport,
        ) as service:
            await service.delete_table("quiet")
            assert observed == []
            root.setLevel(logging.DEBUG)
            await service.delete_table("loud")
            assert len(observed) == 1
    finally:
        root.setLevel(old)
