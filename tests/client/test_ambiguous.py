"""Ambiguous outcomes: a write applied by the service whose answer was lost, then retried."""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any

import pytest

import azt
from azt._core.transport import HttpRequest, HttpResponse, MockTransport

from .conftest import mock_table

_ENTITY_URL = re.compile(r"/tb1\(PartitionKey='(.*)',RowKey='(.*)'\)")


class FakeTable:
    """A tiny in-memory table service for one table ``tb1`` that can lose answers.

    ``drop`` lists the request numbers (1-based) whose effect is applied but whose
    response is lost (the transport raises a connection error after the write).
    """

    def __init__(self, drop: set[int] | None = None, drop_before: set[int] | None = None) -> None:
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        self.version = 0
        self.count = 0
        self.drop = drop or set()
        self.drop_before = drop_before or set()

    def _etag(self) -> str:
        self.version += 1
        return f'W/"v{self.version}"'

    def __call__(self, request: HttpRequest) -> HttpResponse:
        self.count += 1
        if self.count in self.drop_before:
            raise azt.ServiceConnectionError("refused", sent=False)
        response = self._handle(request)
        if self.count in self.drop:
            raise azt.ServiceConnectionError("connection reset by peer after the write")
        return response

    def _error(self, status: int, code: str) -> HttpResponse:
        body = json.dumps({"odata.error": {"code": code, "message": {"value": code}}}).encode()
        return HttpResponse(
            status,
            {
                "x-ms-error-code": code,
                "x-ms-request-id": f"r{self.count}",
                "Content-Type": "application/json",
            },
            body,
        )

    def _handle(self, request: HttpRequest) -> HttpResponse:
        path = urllib.parse.urlsplit(request.url).path.removeprefix("/devstoreaccount1")
        rid = {"x-ms-request-id": f"r{self.count}"}
        if request.method == "POST" and path == "/tb1":
            assert request.body is not None
            entity = json.loads(request.body)
            key = (entity["PartitionKey"], entity["RowKey"])
            if key in self.rows:
                return self._error(409, "EntityAlreadyExists")
            etag = self._etag()
            self.rows[key] = {**entity, "odata.etag": etag}
            return HttpResponse(204, {**rid, "ETag": etag})
        match = _ENTITY_URL.fullmatch(path)
        assert match, path
        key = (urllib.parse.unquote(match.group(1)), urllib.parse.unquote(match.group(2)))
        row = self.rows.get(key)
        if request.method == "GET":
            if row is None:
                return self._error(404, "ResourceNotFound")
            return HttpResponse(200, {**rid, "ETag": row["odata.etag"]}, json.dumps(row).encode())
        if request.method == "DELETE":
            if row is None:
                return self._error(404, "ResourceNotFound")
            del self.rows[key]
            return HttpResponse(204, rid)
        if request.method in ("MERGE", "PUT"):
            if row is None:
                return self._error(404, "ResourceNotFound")
            if_match = request.headers.get("If-Match")
            if if_match != "*" and if_match != row["odata.etag"]:
                return self._error(412, "UpdateConditionNotSatisfied")
            assert request.body is not None
            body = json.loads(request.body)
            new = {**row, **body} if request.method == "MERGE" else dict(body)
            etag = self._etag()
            new["odata.etag"] = etag
            self.rows[key] = new
            return HttpResponse(204, {**rid, "ETag": etag})
        raise AssertionError(request.method)


async def no_sleep(_: float) -> None:
    return None


def table_client(
    fake: FakeTable, policy: azt.AmbiguousOutcomePolicy = azt.AmbiguousOutcomePolicy.RAISE
) -> azt.TableClient:
    return mock_table(MockTransport(fake), "tb1", sleep=no_sleep, ambiguous_outcome=policy)


ENTITY = {"PartitionKey": "p", "RowKey": "r", "n": 1, "s": "x"}


async def test_insert_with_lost_response_raises_ambiguous_by_default() -> None:
    fake = FakeTable(drop={1})
    async with table_client(fake) as table:
        with pytest.raises(azt.AmbiguousOutcomeError) as info:
            await table.insert_entity(ENTITY)
    err = info.value
    assert "may have succeeded" in str(err)
    assert isinstance(err.error, azt.EntityAlreadyExistsError)
    assert err.attempts == 2
    assert err.request_id == "r2"
    assert fake.rows[("p", "r")]["n"] == 1  # the first attempt did insert it


async def test_insert_conflict_without_lost_response_is_a_plain_conflict() -> None:
    fake = FakeTable()
    async with table_client(fake) as table:
        await table.insert_entity(ENTITY)
        with pytest.raises(azt.EntityAlreadyExistsError) as info:
            await table.insert_entity(ENTITY)
    assert not isinstance(info.value, azt.AmbiguousOutcomeError)
    assert not info.value.earlier_attempt_may_have_applied


async def test_refused_connection_is_not_ambiguous() -> None:
    fake = FakeTable(drop_before={2})
    async with table_client(fake) as table:
        await table.insert_entity(ENTITY)
        # attempt 1 of this insert is refused before sending, attempt 2 meets the conflict
        with pytest.raises(azt.EntityAlreadyExistsError):
            await table.insert_entity(ENTITY)


async def test_insert_assume_succeeded_reads_back_and_compares() -> None:
    fake = FakeTable(drop={1})
    async with table_client(fake, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as table:
        result = await table.insert_entity(ENTITY)
    assert result.ambiguity_resolved
    assert result.etag == 'W/"v1"'
    assert fake.count == 3  # insert (lost), insert (409), read back
    fake2 = FakeTable(drop={1})
    async with table_client(fake2, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as table:
        echoed = await table.insert_entity(ENTITY, return_content=True)
    assert echoed.entity is not None
    assert echoed.entity["s"] == "x"


async def test_insert_assume_succeeded_detects_someone_elses_entity() -> None:
    fake = FakeTable(drop={2})
    async with table_client(fake, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as table:
        fake.rows[("p", "r")] = {"PartitionKey": "p", "RowKey": "r", "n": 99, "odata.etag": 'W/"x"'}
        fake.count = 1
        # attempt 1 (#2) meets 409 but its answer is lost; attempt 2 meets 409 again
        with pytest.raises(azt.EntityAlreadyExistsError):
            await table.insert_entity(ENTITY)


async def test_insert_report_error_policy_raises_the_service_error() -> None:
    fake = FakeTable(drop={1})
    async with table_client(fake, azt.AmbiguousOutcomePolicy.REPORT_ERROR) as table:
        with pytest.raises(azt.EntityAlreadyExistsError) as info:
            await table.insert_entity(ENTITY)
    assert info.value.earlier_attempt_may_have_applied
    assert info.value.attempts == 2


async def test_delete_with_lost_response() -> None:
    fake = FakeTable(drop={2})
    async with table_client(fake) as table:
        await table.insert_entity(ENTITY)
        with pytest.raises(azt.AmbiguousOutcomeError) as info:
            await table.delete_entity("p", "r")
        assert isinstance(info.value.error, azt.EntityNotFoundError)
    fake2 = FakeTable(drop={2})
    async with table_client(fake2, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as table:
        await table.insert_entity(ENTITY)
        result = await table.delete_entity("p", "r")
        assert result.ambiguity_resolved
        assert result.etag is None
    assert fake2.rows == {}


async def test_conditional_update_with_lost_response() -> None:
    fake = FakeTable(drop={2})
    async with table_client(fake, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as table:
        first = await table.insert_entity(ENTITY)
        assert first.etag is not None
        result = await table.update_entity(
            {"PartitionKey": "p", "RowKey": "r", "n": 2}, azt.UpdateMode.MERGE, etag=first.etag
        )
        assert result.ambiguity_resolved
        assert result.etag == fake.rows[("p", "r")]["odata.etag"]
    fake2 = FakeTable(drop={2})
    async with table_client(fake2) as table:
        first = await table.insert_entity(ENTITY)
        assert first.etag is not None
        with pytest.raises(azt.AmbiguousOutcomeError) as info:
            await table.update_entity({"PartitionKey": "p", "RowKey": "r", "n": 2}, etag=first.etag)
        assert isinstance(info.value.error, azt.PreconditionFailedError)


async def test_replace_verification_requires_exact_match() -> None:
    fake = FakeTable(drop={2})
    async with table_client(fake, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as table:
        first = await table.insert_entity(ENTITY)
        assert first.etag is not None
        # Replace applied (first attempt lost); the stored entity is exactly what we sent.
        result = await table.update_entity(
            {"PartitionKey": "p", "RowKey": "r", "m": 5}, azt.UpdateMode.REPLACE, etag=first.etag
        )
        assert result.ambiguity_resolved
        assert "n" not in fake.rows[("p", "r")]


async def test_unconditional_writes_are_idempotent_and_not_ambiguous() -> None:
    fake = FakeTable(drop={2})
    async with table_client(fake) as table:
        await table.insert_entity(ENTITY)
        result = await table.update_entity({"PartitionKey": "p", "RowKey": "r", "n": 7})
        assert not result.ambiguity_resolved
    assert fake.rows[("p", "r")]["n"] == 7


async def _judged_done(
    stored: dict[str, Any], sent: dict[str, Any], mode: azt.UpdateMode | None = None
) -> bool:
    """Whether a write of ``sent`` whose first answer was lost, and whose retry then met a
    conflict, is judged done (read back and compared) when the service holds ``stored``:
    an insert (``mode=None``, compared exactly) or a conditional update in ``mode``."""
    fake = FakeTable(drop={1})
    fake.rows[("p", "r")] = {**stored, "odata.etag": 'W/"stored"'}
    async with table_client(fake, azt.AmbiguousOutcomePolicy.ASSUME_SUCCEEDED) as table:
        try:
            if mode is None:
                result = await table.insert_entity(sent)
            else:
                result = await table.update_entity(sent, mode, etag='W/"old"')
        except (azt.EntityAlreadyExistsError, azt.PreconditionFailedError):
            assert fake.count == 3  # write (lost), write (conflict), read back
            return False
    assert result.ambiguity_resolved
    assert fake.count == 3
    return True


async def test_ambiguity_verification_compares_typed_values() -> None:
    sent = {"PartitionKey": "p", "RowKey": "r", "n": 5, "x": float("nan"), "s": None}
    nan = {"x": "NaN", "x@odata.type": "Edm.Double"}
    keys = {"PartitionKey": "p", "RowKey": "r"}
    assert await _judged_done({**keys, "n": 5, **nan}, sent)
    assert not await _judged_done({**keys, "n": 5.0, "n@odata.type": "Edm.Double", **nan}, sent)
    assert not await _judged_done({**keys, "n": True, **nan}, sent)
    extra = {**keys, "n": 5, **nan, "other": 1}
    assert not await _judged_done(extra, sent)  # an insert must match exactly
    assert await _judged_done(extra, sent, azt.UpdateMode.MERGE)  # a merge need not
    assert not await _judged_done(extra, sent, azt.UpdateMode.REPLACE)
    assert await _judged_done({**keys, "n": 5}, {**keys, "n": azt.Typed(5, azt.EdmType.INT64)})
