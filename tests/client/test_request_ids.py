"""Each attempt's ``x-ms-client-request-id``: the text of a version 4 UUID, written by
``pipeline.uuid4_text`` without building a ``uuid.UUID`` (differential test against it)."""

from __future__ import annotations

import asyncio
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from azt._core.auth import SharedKeyCredential
from azt._core.connection_string import DEV_ACCOUNT_KEY, Endpoint
from azt._core.pipeline import Pipeline, uuid4_text
from azt._core.transport import HttpRequest, HttpResponse, MockTransport


@settings(max_examples=2000)
@given(st.binary(min_size=16, max_size=16))
def test_uuid4_text_is_the_text_of_uuid_version_4(raw: bytes) -> None:
    assert uuid4_text(raw) == str(uuid.UUID(bytes=raw, version=4))


def test_every_attempt_sends_a_fresh_version_4_id() -> None:
    seen: list[str] = []

    def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request.headers["x-ms-client-request-id"])
        return HttpResponse(204)

    pipe = Pipeline(
        Endpoint.parse("http://127.0.0.1:10002/devstoreaccount1"),
        SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY),
        MockTransport(handler),
    )

    async def run() -> None:
        for _ in range(50):
            await pipe.send("DELETE", "/Tables('t')", resource="table")

    asyncio.run(run())
    assert len(set(seen)) == 50
    for text in seen:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
