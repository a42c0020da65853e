"""A bulk load's pushed-back transaction waits as the client's retries do: a service hint
is a floor with jitter added, and a ``429`` (Cosmos DB's throttling) waits its hint, not
the policy's back-off (issue 35). No network, no timing: a fixed clock and ``uniform``."""

from __future__ import annotations

import pytest

from azt import RetryPolicy, TableClient
from azt._core.bulk.loader import _Loader, _Partition, _Send
from azt._errors import ServiceError, error_from_response
from azt.bulk import BulkOptions

CONN = (
    "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:9/a"
)


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
    part = _Partition(("bulk", "p"), loader._table("bulk"), loader._partition_pace(), 100.0)
    send = _Send([])
    send.attempts = 1
    loader._pushed_back(part, send, exc)
    return part.not_before - 100.0


def test_a_429_waits_its_hint_plus_jitter_not_the_back_off() -> None:
    throttled = error_from_response(
        429, "429", "Request rate is large", headers={"x-ms-retry-after-ms": "200"}
    )
    assert _wait_after(throttled) == pytest.approx(0.2 + 0.2)  # hint + span (drawn at hi)
    recorded = error_from_response(429, "429", "Request rate is large")  # 2020: no hint
    assert _wait_after(recorded) == pytest.approx(0.05)


def test_a_storage_hint_is_a_floor_under_the_back_off() -> None:
    busy = error_from_response(503, "ServerBusy", "busy", headers={"Retry-After": "7"})
    assert _wait_after(busy) == pytest.approx(7.0 + 7.0)  # longer than the 3 s back-off
    plain = error_from_response(503, "ServerBusy", "busy")
    assert _wait_after(plain) == pytest.approx(3.0)  # the policy's first wait
