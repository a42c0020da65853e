"""Retry decisions, back-off, Retry-After, logging and per-attempt freshness (no network)."""

from __future__ import annotations

import logging

import pytest

import azt
from azt._core.retry import BackoffWait, _describe, is_retryable, may_have_been_applied
from azt._core.transport import HttpRequest, HttpResponse, MockTransport
from azt._errors import error_from_response

from .conftest import DEV_CREDENTIAL, ENDPOINT, Sleeps


def error_response(
    status: int, code: str | None, headers: dict[str, str] | None = None
) -> HttpResponse:
    h = {"x-ms-request-id": f"req-{status}", "Content-Type": "application/json"}
    if code:
        h["x-ms-error-code"] = code
    h.update(headers or {})
    body = b'{"odata.error":{"code":"%s","message":{"lang":"en-US","value":"text"}}}' % (
        (code or "").encode()
    )
    return HttpResponse(status, h, body)


def ok_tables() -> HttpResponse:
    return HttpResponse(200, {"x-ms-request-id": "ok"}, b'{"value":[{"TableName":"t1"}]}')


def make_service(
    handler: object, *, sleeps: Sleeps, policy: azt.RetryPolicy | None = None
) -> tuple[azt.TableServiceClient, MockTransport]:
    transport = MockTransport(handler)  # type: ignore[arg-type]
    client = azt.TableServiceClient(
        ENDPOINT,
        DEV_CREDENTIAL,
        transport=transport,
        retry=policy or azt.RetryPolicy(),
        sleep=sleeps,
        uniform=lambda lo, hi: (lo + hi) / 2,
    )
    return client, transport


def sequence(*answers: HttpResponse | Exception) -> object:
    queue = list(answers)

    def handler(request: HttpRequest) -> HttpResponse:
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handler


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_retryable_statuses_are_retried_with_seed_backoff(status: int) -> None:
    sleeps = Sleeps()
    client, transport = make_service(
        sequence(error_response(status, None), error_response(status, None), ok_tables()),
        sleeps=sleeps,
    )
    async with client:
        assert await client.list_tables().to_list() == ["t1"]
    assert len(transport.requests) == 3
    if status == 429:
        # throttling: no hint here, so 0 plus jitter over 50 ms, then 100 ms (U at its
        # midpoint), not the back-off (tests/client/test_retry_throttled.py)
        assert sleeps.delays == [0.025, 0.05]
        return
    # Seed defaults: min(3 + U(24, 36) * (2**n - 1), 90), n from 0, U at its midpoint (30).
    assert sleeps.delays == [3.0, 33.0]


@pytest.mark.parametrize(
    ("status", "code", "exc_type"),
    [
        (400, "InvalidInput", azt.InvalidInputError),
        (403, "AuthenticationFailed", azt.AuthenticationError),
        (404, "TableNotFound", azt.TableNotFoundError),
        (409, "TableAlreadyExists", azt.TableAlreadyExistsError),
        (412, "UpdateConditionNotSatisfied", azt.PreconditionFailedError),
        (501, "NotImplemented", azt.ServiceNotImplementedError),
        (505, None, azt.ServerError),
    ],
)
async def test_other_errors_are_never_retried(
    status: int, code: str | None, exc_type: type[azt.ServiceError]
) -> None:
    sleeps = Sleeps()
    client, transport = make_service(sequence(error_response(status, code)), sleeps=sleeps)
    async with client:
        with pytest.raises(exc_type) as info:
            await client.list_tables().to_list()
    assert len(transport.requests) == 1
    assert sleeps.delays == []
    assert info.value.status == status
    assert info.value.request_id == f"req-{status}"
    assert info.value.attempts == 1


async def test_connection_errors_and_timeouts_are_retried() -> None:
    sleeps = Sleeps()
    client, transport = make_service(
        sequence(
            azt.ServiceConnectionError("refused", sent=False),
            azt.ServiceTimeoutError("slow"),
            ok_tables(),
        ),
        sleeps=sleeps,
    )
    async with client:
        assert await client.list_tables().to_list() == ["t1"]
    assert len(transport.requests) == 3


async def test_attempts_are_bounded_and_last_error_is_raised() -> None:
    sleeps = Sleeps()
    policy = azt.RetryPolicy(max_attempts=3, base=1.0, minimum=0.5, maximum=100.0)
    client, transport = make_service(
        sequence(*(error_response(503, "ServerBusy") for _ in range(3))),
        sleeps=sleeps,
        policy=policy,
    )
    async with client:
        with pytest.raises(azt.ServerBusyError) as info:
            await client.list_tables().to_list()
    assert len(transport.requests) == 3
    assert info.value.attempts == 3
    assert not info.value.earlier_attempt_may_have_applied  # 503 means "not processed"
    assert sleeps.delays == [0.5, 1.5]  # 0.5 + 1*(2**n - 1), n = 0, 1


async def test_retry_after_is_a_lower_bound() -> None:
    sleeps = Sleeps()
    policy = azt.RetryPolicy(base=0.1, minimum=0.0, maximum=1.0)
    client, _ = make_service(
        sequence(
            error_response(503, "ServerBusy", {"Retry-After": "7"}),
            error_response(503, "ServerBusy", {"x-ms-retry-after-ms": "2500"}),
            error_response(429, None, {"Retry-After": "0"}),
            ok_tables(),
        ),
        sleeps=sleeps,
        policy=policy,
    )
    async with client:
        await client.list_tables().to_list()
    # the policy alone would wait 0, 0.1, 0.3; a hint is a floor with jitter added (uniform
    # is the midpoint here): 7 + 1.0/2 (span capped at maximum), 2.5 + 1.0/2, and the 429
    # (throttling: no back-off) 0 + 0.2/2
    assert sleeps.delays == [7.5, 3.0, pytest.approx(0.1)]


async def test_every_attempt_gets_fresh_date_request_id_and_signature() -> None:
    sleeps = Sleeps()
    client, transport = make_service(
        sequence(error_response(500, "InternalError"), ok_tables()), sleeps=sleeps
    )
    async with client:
        await client.list_tables().to_list()
    first, second = transport.requests
    assert first.headers["x-ms-client-request-id"] != second.headers["x-ms-client-request-id"]
    assert first.headers is not second.headers
    for request in (first, second):
        assert request.headers["x-ms-date"] == request.headers["Date"]
        assert request.headers["Authorization"].startswith("SharedKey devstoreaccount1:")
        cred = DEV_CREDENTIAL
        copy = HttpRequest(request.method, request.url, dict(request.headers))
        cred.sign(copy, "/devstoreaccount1/Tables", None)
        assert copy.headers["Authorization"] == request.headers["Authorization"]


async def test_each_retry_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    sleeps = Sleeps()
    client, _ = make_service(
        sequence(error_response(503, "ServerBusy"), ok_tables()), sleeps=sleeps
    )
    with caplog.at_level(logging.WARNING, logger="azt"):
        async with client:
            await client.list_tables().to_list()
    records = [r for r in caplog.records if r.name == "azt.retry"]
    assert len(records) == 1
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == records
    message = records[0].getMessage()
    assert "GET" in message
    assert f"{ENDPOINT}/Tables" in message
    assert "attempt 1" in message
    assert "503 ServerBusy" in message
    assert "next attempt in 3.000 s" in message


def test_sas_signature_is_redacted_in_logged_urls() -> None:
    from azt._core.transport import redact_url

    assert redact_url("http://h/t?sv=1&sig=SECRET%3D") == "http://h/t?sv=1&sig=REDACTED"


def test_classification_helpers() -> None:
    err = azt.ServiceError
    assert is_retryable(azt.ServerError("x", status=507))
    assert not is_retryable(azt.ServerError("x", status=505))
    assert not is_retryable(err("x", status=404))
    assert not is_retryable(ValueError("x"))
    assert may_have_been_applied(azt.ServiceTimeoutError("t"))
    assert not may_have_been_applied(azt.ServiceConnectionError("refused", sent=False))
    assert not may_have_been_applied(azt.TooManyRequestsError("x", status=429))
    assert may_have_been_applied(azt.ServerError("x", status=502))


def test_backoff_policy_bounds_and_jitter() -> None:
    policy = azt.RetryPolicy()
    assert (policy.max_attempts, policy.base, policy.minimum, policy.maximum) == (
        4,
        30.0,
        3.0,
        90.0,
    )
    assert policy.backoff(1, uniform=lambda lo, hi: hi) == 3.0
    assert policy.backoff(2, uniform=lambda lo, hi: lo) == pytest.approx(27.0)
    assert policy.backoff(2, uniform=lambda lo, hi: hi) == pytest.approx(39.0)
    assert policy.backoff(3, uniform=lambda lo, hi: lo) == pytest.approx(75.0)
    assert policy.backoff(10) == 90.0
    for _ in range(200):
        assert 27.0 <= policy.backoff(2) <= 39.0
    wait = BackoffWait(azt.RetryPolicy(base=2, minimum=1, maximum=5), uniform=lambda lo, hi: hi)
    assert wait.delay(1, None) == 1.0
    assert wait.delay(2, None) == pytest.approx(3.4)
    # a hint is a floor, with jitter added (drawn at its high end: the span, capped at 5)
    assert wait.delay(1, azt.ServerBusyError("b", status=503, headers={"Retry-After": "9"})) == 14.0


# Retry n (from 0) waits min(maximum, minimum + (2**n - 1) * U(0.8 * base, 1.2 * base)):
# the storage client's ExponentialRetry (PROTOCOL.md 12.2, the partitioning guide's formula).
SEED_SCHEDULE_BOUNDS = {0: (3.0, 3.0), 1: (27.0, 39.0), 2: (75.0, 90.0), 3: (90.0, 90.0)}


@pytest.mark.parametrize("n", sorted(SEED_SCHEDULE_BOUNDS))
def test_default_schedule_follows_the_seed(n: int) -> None:
    policy = azt.RetryPolicy()
    low, high = SEED_SCHEDULE_BOUNDS[n]
    assert policy.backoff(n + 1, uniform=lambda lo, hi: lo) == pytest.approx(low)
    assert policy.backoff(n + 1, uniform=lambda lo, hi: hi) == pytest.approx(high)
    for _ in range(100):
        assert low - 1e-9 <= policy.backoff(n + 1) <= high + 1e-9


def test_schedule_uncapped_bounds() -> None:
    """With a high maximum the (2**n - 1) growth shows: 1, 1 + [0.8, 1.2], 1 + 3 * [..], ..."""
    policy = azt.RetryPolicy(base=1.0, minimum=1.0, maximum=1000.0)
    for n, (low, high) in enumerate([(1.0, 1.0), (1.8, 2.2), (3.4, 4.6), (6.6, 9.4)]):
        assert policy.backoff(n + 1, uniform=lambda lo, hi: lo) == pytest.approx(low)
        assert policy.backoff(n + 1, uniform=lambda lo, hi: hi) == pytest.approx(high)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"base": -1},
        {"minimum": 5, "maximum": 1},
        {"jitter": 1.5},
        {"max_attempts": True},
    ],
)
def test_retry_policy_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises(azt.ValidationError):
        azt.RetryPolicy(**kwargs)  # type: ignore[arg-type]


async def test_no_retries_policy_makes_one_attempt() -> None:
    sleeps = Sleeps()
    client, transport = make_service(
        sequence(error_response(503, "ServerBusy")),
        sleeps=sleeps,
        policy=azt.RetryPolicy.no_retries(),
    )
    async with client:
        with pytest.raises(azt.ServerBusyError):
            await client.list_tables().to_list()
    assert len(transport.requests) == 1


async def test_total_delay_budget_stops_retrying() -> None:
    sleeps = Sleeps()
    policy = azt.RetryPolicy(
        max_attempts=10, base=1.0, minimum=0.0, maximum=100.0, max_total_delay=10.0
    )
    client, transport = make_service(
        sequence(*(error_response(503, "ServerBusy") for _ in range(10))),
        sleeps=sleeps,
        policy=policy,
    )
    async with client:
        with pytest.raises(azt.ServerBusyError) as info:
            await client.list_tables().to_list()
    # waits 0, 1, 3 (total 4); the next, 7, would make 11 > 10: no fourth retry
    assert sleeps.delays == [0.0, 1.0, 3.0]
    assert len(transport.requests) == 4
    assert info.value.attempts == 4
    with pytest.raises(azt.ValidationError):
        azt.RetryPolicy(max_total_delay=-1)


@pytest.mark.parametrize(
    ("budget", "delays"),
    [
        (10.999, [0.0, 1.0, 3.0]),  # 4 + 7 would pass the budget
        (11.0, [0.0, 1.0, 3.0, 7.0]),  # 4 + 7 == 11: exactly the budget is allowed
        (11.001, [0.0, 1.0, 3.0, 7.0]),  # the next, 15, would make 26
    ],
)
async def test_a_total_delay_exactly_at_the_budget_is_allowed(
    budget: float, delays: list[float]
) -> None:
    sleeps = Sleeps()
    policy = azt.RetryPolicy(
        max_attempts=10, base=1.0, minimum=0.0, maximum=100.0, max_total_delay=budget
    )
    client, transport = make_service(
        sequence(*(error_response(503, "ServerBusy") for _ in range(10))),
        sleeps=sleeps,
        policy=policy,
    )
    async with client:
        with pytest.raises(azt.ServerBusyError) as info:
            await client.list_tables().to_list()
    assert sleeps.delays == delays
    assert len(transport.requests) == len(delays) + 1
    assert info.value.attempts == len(delays) + 1


def test_every_status_from_400_to_599_is_retried_or_not_as_documented() -> None:
    for status in range(400, 600):
        err = error_from_response(status, "Code", "text")
        expected = status in (408, 429) or (status >= 500 and status not in (501, 505))
        assert is_retryable(err) is expected, status


def test_only_transport_and_service_errors_are_retried() -> None:
    assert is_retryable(azt.ServiceConnectionError("reset", sent=False)) is True
    assert is_retryable(azt.ServiceTimeoutError("slow")) is True
    assert is_retryable(ValueError("x")) is False
    assert is_retryable(azt.ValidationError("x")) is False


def test_every_status_from_400_to_599_may_or_may_not_have_been_applied() -> None:
    # refused before processing: 408, 429, 503; every other 5xx leaves it open; 4xx never
    for status in range(400, 600):
        err = error_from_response(status, "Code", "text")
        assert may_have_been_applied(err) is (status >= 500 and status != 503), status
    assert may_have_been_applied(azt.ServiceConnectionError("refused", sent=False)) is False
    assert may_have_been_applied(azt.ServiceConnectionError("reset", sent=True)) is True
    assert may_have_been_applied(azt.ServiceTimeoutError("slow")) is True
    assert may_have_been_applied(ValueError("x")) is False


def _half(lo: float, hi: float) -> float:
    return (lo + hi) / 2


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        # a 429 waits its hint (0 without one) plus a random part: with the middle of the
        # range, hint + span / 2, span = min(maximum, max(hint, 50 ms) * 2 ** (retry - 1));
        # never the policy's back-off (1.0 s and more here), which would idle far longer
        (429, {"x-ms-retry-after-ms": "20"}, 0.02 + 0.05 * 4 / 2),
        (429, {"X-MS-Retry-After-Ms": "20"}, 0.02 + 0.05 * 4 / 2),
        (429, {"x-ms-retry-after-ms": "9000"}, 9.0 + 9.0 * 4 / 2),
        (429, {"Retry-After": "0"}, 0.0 + 0.05 * 4 / 2),
        (429, {"Retry-After": "9"}, 9.0 + 9.0 * 4 / 2),
        (429, {}, 0.0 + 0.05 * 4 / 2),
        # any other hint is a floor: the longer of the back-off and the hinted wait
        (503, {"x-ms-retry-after-ms": "20"}, None),
        (503, {"x-ms-retry-after-ms": "9000"}, 9.0 + 9.0 * 4 / 2),
    ],
)
def test_a_retry_after_hint(status: int, headers: dict[str, str], expected: float | None) -> None:
    policy = azt.RetryPolicy(base=1.0, minimum=0.0, maximum=100.0)
    wait = BackoffWait(policy, _half)
    backoff = policy.backoff(3, _half)
    assert backoff > 1.0
    err = error_from_response(status, "Code", "text", headers=headers)
    assert wait.delay(3, err) == pytest.approx(backoff if expected is None else expected)
    assert wait.delay(3, None) == backoff
    assert wait.delay(3, ValueError("x")) == backoff


def test_the_reason_each_retry_is_logged_with() -> None:
    assert _describe(None) == "no exception"
    assert _describe(error_from_response(503, "ServerBusy", "busy")) == "503 ServerBusy"
    assert _describe(error_from_response(500, None, "x")) == "500"
    assert _describe(azt.ServiceTimeoutError("slow")) == "ServiceTimeoutError: slow"
    secret = _describe(azt.ServiceConnectionError("GET https://a/t?sig=SECRET failed", sent=True))
    assert secret.startswith("ServiceConnectionError: ")
    assert "SECRET" not in secret
