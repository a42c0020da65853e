"""``read_body`` takes a body that has all arrived from its stream at once: the same bytes,
limits and errors as ``request.read()``'s loop, and a later ``request.read()`` (a realism
middleware, a flavour's check) answers the same bytes."""

from __future__ import annotations

import asyncio
from unittest import mock

import pytest
from aiohttp.streams import StreamReader
from aiohttp.test_utils import make_mocked_request
from aiohttp.web_protocol import RequestPayloadError

from azt_server_stub.errors import StubError
from azt_server_stub.handlers import parsing


def _request(chunks: list[bytes], *, eof: bool = True, client_max_size: int = 1024**2) -> object:
    loop = asyncio.get_running_loop()
    payload = StreamReader(mock.Mock(), 2**16, loop=loop)
    for chunk in chunks:
        payload.feed_data(chunk)
    if eof:
        payload.feed_eof()
    size = sum(map(len, chunks))
    return make_mocked_request(
        "POST",
        "/a/t",
        headers={"Content-Length": str(size)},
        payload=payload,
        client_max_size=client_max_size,
    )


@pytest.mark.parametrize(
    "chunks", [[b'{"PartitionKey":"p"}'], [b'{"Partition', b'Key":"p"}'], [b"x"], []]
)
async def test_an_arrived_body_is_read_whole_and_kept(chunks: list[bytes]) -> None:
    request = _request(chunks)
    body = await parsing.read_body(request)  # type: ignore[arg-type]
    assert body == b"".join(chunks)
    assert await request.read() == body  # type: ignore[attr-defined]
    assert await parsing.read_body(request) == body  # type: ignore[arg-type]


async def test_a_body_read_before_is_the_one_answered() -> None:
    request = _request([b"abc", b"def"])
    assert await request.read() == b"abcdef"  # type: ignore[attr-defined]
    assert await parsing.read_body(request) == b"abcdef"  # type: ignore[arg-type]


async def test_a_body_still_arriving_is_waited_for() -> None:
    request = _request([b"abc"], eof=False)
    reading = asyncio.ensure_future(parsing.read_body(request))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert not reading.done()
    payload = request.content  # type: ignore[attr-defined]
    payload.feed_data(b"def")
    payload.feed_eof()
    assert await reading == b"abcdef"


async def test_an_arrived_body_over_the_client_limit_is_refused_as_read_refuses_it() -> None:
    for chunks in ([b"x" * 10], [b"x" * 5, b"x" * 5]):
        request = _request(chunks, client_max_size=9)
        with pytest.raises(StubError) as got:
            await parsing.read_body(request)  # type: ignore[arg-type]
        assert (got.value.status, got.value.code) == (413, "RequestBodyTooLarge")
        with pytest.raises(StubError) as slow:
            await parsing.read_body(_request(chunks, eof=False, client_max_size=9))  # type: ignore[arg-type]
        assert (slow.value.status, slow.value.code) == (413, "RequestBodyTooLarge")


async def test_a_broken_body_stream_is_invalid_input() -> None:
    request = _request([b"abc"])
    request.content.set_exception(RequestPayloadError("broken"))  # type: ignore[attr-defined]
    with pytest.raises(StubError) as got:
        await parsing.read_body(request)  # type: ignore[arg-type]
    assert (got.value.status, got.value.code) == (400, "InvalidInput")


async def test_only_a_whole_unread_body_is_taken_at_once() -> None:
    assert parsing._arrived_body(_request([b"ab", b"c"])) == b"abc"  # type: ignore[arg-type]
    assert parsing._arrived_body(_request([b"abc"], eof=False)) is None  # type: ignore[arg-type]
    assert parsing._arrived_body(_request([])) is None  # type: ignore[arg-type]
    read_before = _request([b"abc"])
    assert await read_before.read() == b"abc"  # type: ignore[attr-defined]
    assert parsing._arrived_body(read_before) is None  # type: ignore[arg-type]


async def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    request = _request([b"x" * 10], eof=False)
    too_long = make_mocked_request(
        "POST",
        "/a/t",
        headers={"Content-Length": str(parsing.MAX_BODY_BYTES + 1)},
        payload=request.content,  # type: ignore[attr-defined]
    )
    with pytest.raises(StubError) as got:
        await parsing.read_body(too_long)
    assert (got.value.status, got.value.code) == (413, "RequestBodyTooLarge")
    assert too_long.content.read_nowait() == b"x" * 10  # (nothing was read)
