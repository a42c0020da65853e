"""How long a bulk load's pushed-back transaction waits (issues 29 and 35): a throttled
one (``503 ServerBusy``, Cosmos's ``429``) waits for room in its cut pace, not the retry
policy's back-off (3 s, 33 s, ... would leave the partition idle); a hint the service
sends (Cosmos's ``x-ms-retry-after-ms``, ``Retry-After``) is a floor with jitter added, as
in the client's retries; any other retryable failure waits the policy's back-off, a hint
its floor. No network, no timing: a fixed clock and ``uniform``."""

from __future__ import annotations

from typing import cast

import pytest

from azt import RetryPolicy, TableClient
from azt._core.bulk.loader import _Loader
from azt._core.bulk.queues import Op, Partition, Send
from azt._errors import ServiceError, error_from_response
from azt.bulk import BulkOptions

CONN = (
    "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:9/a"
)


class _Ops:
    """Stands for one queued entity with nine index rows: ten operations."""

    count = 10


def _wait_after(exc: ServiceError) -> float:
    clock = lambda: 100.0  # noqa: E731
    table = TableClient.from_connection_string(
        CONN, "bulk", retry=RetryPolicy(), uniform=lambda lo, hi: hi
    )
    loader = _Loader(
        table,
        table=None,
        kind="insert",
        options=BulkOptions(),
        checkpoint=None,
        progress=None,
        on_result=None,
        clock=clock,
    )
    part = Partition(("bulk", "p"), loader._table("bulk"), loader._pacing.partition(100.0), 100.0)
    send = Send([cast(Op, _Ops())])
    send.attempts = 1
    loader._pushed_back(part, send, exc)
    return part.not_before - 100.0


def test_a_throttled_transaction_waits_for_its_pace_not_the_back_off() -> None:
    busy = _wait_after(error_from_response(503, "ServerBusy", "busy"))
    assert 0.0 < busy < 3.0  # room for its 10 operations in the cut pace, not 3 s
    recorded = _wait_after(error_from_response(429, "429", "Request rate is large"))
    assert 0.0 < recorded < 3.0  # Cosmos's 429 without a hint (recorded in 2020): the same


def test_a_service_hint_is_a_floor_with_jitter() -> None:
    hinted = error_from_response(
        429, "429", "Request rate is large", headers={"x-ms-retry-after-ms": "2000"}
    )
    assert _wait_after(hinted) == pytest.approx(2.0 + 2.0)  # hint + span (drawn at hi)
    busy = error_from_response(503, "ServerBusy", "busy", headers={"Retry-After": "7"})
    assert _wait_after(busy) == pytest.approx(7.0 + 7.0)


def test_other_failures_wait_the_policy_back_off_a_hint_its_floor() -> None:
    plain = error_from_response(500, "InternalError", "oops")
    assert _wait_after(plain) == pytest.approx(RetryPolicy().backoff(1, lambda lo, hi: hi))
    hinted = error_from_response(500, "InternalError", "oops", headers={"Retry-After": "9"})
    assert _wait_after(hinted) == pytest.approx(9.0 + 9.0)
