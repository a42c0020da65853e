"""``TableBatch`` encodes each operation once, when it is added, and sends those bytes;
a batch built elsewhere (or whose operations list was changed by hand) is encoded afresh
for the client that submits it."""

from __future__ import annotations

import pytest

import azt
from azt import BatchOperation, HttpRequest, HttpResponse, MockTransport, TableBatch

from .conftest import mock_table


def _recorder() -> tuple[MockTransport, list[HttpRequest]]:
    seen: list[HttpRequest] = []

    def handler(request: HttpRequest) -> HttpResponse:
        seen.append(request)
        return HttpResponse(400, {}, b"")  # the body is what the tests look at

    return MockTransport(handler), seen


async def _sent_body(batch: TableBatch) -> bytes:
    transport, seen = _recorder()
    async with mock_table(transport) as table:
        with pytest.raises(azt.AztError):
            await table.submit_transaction(batch)
    assert len(seen) == 1
    body = seen[0].body
    assert body is not None
    return bytes(body)


async def test_the_bytes_added_are_the_bytes_sent() -> None:
    transport, _ = _recorder()
    async with mock_table(transport) as table:
        batch = table.batch()
        entity = {"PartitionKey": "p", "RowKey": "1", "Note": "as added"}
        batch.create(entity)
        size = batch.size
        entity["Note"] = "changed later"
    body = await _sent_body(batch)
    assert b"as added" in body
    assert b"changed later" not in body
    assert len(body) == size


async def test_a_batch_built_without_a_client_or_changed_by_hand_is_encoded_afresh() -> None:
    loose = TableBatch("movies")
    loose.create({"PartitionKey": "p", "RowKey": "1"})
    assert loose.size is None
    assert b'RowKey":"1"' in await _sent_body(loose)

    transport, _ = _recorder()
    async with mock_table(transport) as table:
        bound = table.batch()
        bound.create({"PartitionKey": "p", "RowKey": "1"})
    bound.operations.append(BatchOperation("create", {"PartitionKey": "p", "RowKey": "2"}))
    body = await _sent_body(bound)
    assert b'RowKey":"2"' in body
    assert body.count(b"Content-ID:") == 2
