"""A weak ETag written with a lower-case ``w/`` in ``If-Match`` (issue 18, point 4).

Decision: ``w/"..."`` is a well-formed weak ETag, so a stale one is ``412
UpdateConditionNotSatisfied`` like a stale ``W/"..."``; strong (``"..."``) or bare values
stay ``400 InvalidInput``. ETags compare exactly, so a ``w/`` copy of the current ETag
also gets 412 (no client writes ``w/``: they echo the service's ``W/`` value).

Evidence (medium): Azure/Azurite#1229 "Table service returns 400 not 412 for an unexpected
weak etag", filed from Azure's behaviour, fixed by Azurite PR #1231 whose tests
(tests/table/apis/table.entity.tests.issues.ts, "from issue #1229") expect 412 for
``w/"wrong"`` and ``w/"datetime'2015-01-01T23%3A14%3A33.4980000Z'"`` and 400 for
``"wrong"``, ``wrong`` and ``"``; Azurite#2013 / PR #2062 keep InvalidInput for malformed
ETags. No recording of a real account answering ``w/`` was found; matching a ``w/`` copy
of the current ETag is unverified (thin).
"""

from __future__ import annotations

import json

import pytest

from tests.stub.conftest import JSON_MINIMAL, RawClient
from tests.stub.test_http_batch import envelope, parts_of, post_batch, request_part
from tests.stub.test_http_raw import JSON_HEADERS, insert, make_table

PATH = "/mytable(PartitionKey='p',RowKey='r')"
STALE = "datetime'2015-01-01T23%3A14%3A33.4980000Z'"


async def _entity(raw: RawClient) -> str:
    await make_table(raw)
    return await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "a": 1})


async def _update(raw: RawClient, if_match: str) -> tuple[int, str | None]:
    headers = {**JSON_HEADERS, "If-Match": if_match}
    r = await raw.request("PUT", PATH, headers=headers, body='{"a":2}')
    return r.status, r.code


@pytest.mark.parametrize("if_match", ['w/"wrong"', f'w/"{STALE}"', f'W/"{STALE}"'])
async def test_stale_weak_etags_in_either_case_are_412(raw: RawClient, if_match: str) -> None:
    """Azurite#1229's table: a weak ETag that does not match -> 412."""
    await _entity(raw)
    assert await _update(raw, if_match) == (412, "UpdateConditionNotSatisfied")
    r = await raw.request("DELETE", PATH, headers={"Accept": JSON_MINIMAL, "If-Match": if_match})
    assert (r.status, r.code) == (412, "UpdateConditionNotSatisfied")


@pytest.mark.parametrize(
    "if_match", ['"wrong"', f'"{STALE}"', "wrong", STALE, '"', 'w"x"', 'V/"x"']
)
async def test_strong_or_bare_etags_are_400(raw: RawClient, if_match: str) -> None:
    """Azurite#1229's table: strong, bare or broken values -> 400 InvalidInput."""
    await _entity(raw)
    assert await _update(raw, if_match) == (400, "InvalidInput")


async def test_lowercase_copy_of_the_current_etag(raw: RawClient) -> None:
    """ETags compare exactly (Azurite's exact comparison; thin for Azure): only the
    service's own ``W/`` value matches."""
    etag = await _entity(raw)
    assert etag.startswith('W/"')
    assert await _update(raw, "w" + etag[1:]) == (412, "UpdateConditionNotSatisfied")
    assert await _update(raw, etag) == (204, None)


async def test_batch_parts_read_if_match_the_same_way(raw: RawClient) -> None:
    """A change set's If-Match goes through the same parser: w/"stale" -> 412 in the part."""
    await _entity(raw)
    part = request_part("PUT", "/mytable(PartitionKey='p',RowKey='r')", '{"a":3}')
    part = part.replace("Accept:", f'If-Match: w/"{STALE}"\r\nAccept:', 1)
    r = await post_batch(raw, envelope([part]))
    assert r.status == 202, r.body
    [(status, _headers, body)] = parts_of(r.body)
    assert status == 412
    assert json.loads(body)["odata.error"]["code"] == "UpdateConditionNotSatisfied"
