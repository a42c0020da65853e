"""What the stub answers where the real service's recorded traffic settles it (issue 35):
error bodies per flavour and ``Accept``, change-set answers (``Content-ID``, the failed
operation's index, an empty change set) and Cosmos's refusal of ``PATCH`` in a change set.

Each case names its recording in docs/stub.md ("Fidelity decisions") or docs/cosmos.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import pytest

from .conftest import JSON_MINIMAL, RawClient, raw_for
from .test_http_batch import BATCH_CT, envelope, parts_of, post_batch, request_part
from .test_http_raw import insert

ODATA_XML_ERROR = re.compile(
    rb'^<\?xml version="1.0" encoding="utf-8"\?><error xmlns="http://schemas.microsoft.com/'
    rb'ado/2007/08/dataservices/metadata"><code>ResourceNotFound</code><message xml:lang="en-US">'
)


@pytest.fixture(params=["storage", "cosmos"])
async def either(request: pytest.FixtureRequest) -> AsyncIterator[RawClient]:
    async for raw in raw_for(request.param):
        raw.flavor = request.param  # type: ignore[attr-defined]
        yield raw


MISSING = "/mytable(PartitionKey='nope',RowKey='nope')"


# -- error bodies ------------------------------------------------------------------------------


@pytest.mark.parametrize("accept", ["*/*", "application/*", None])
async def test_storage_errors_for_a_wildcard_or_no_accept_are_odata_xml(
    storage: RawClient, accept: str | None
) -> None:
    headers = {"If-Match": "*"} | ({"Accept": accept} if accept else {})
    r = await storage.request("DELETE", MISSING, headers=headers)
    assert r.status == 404
    assert r.headers["Content-Type"] == "application/xml;charset=utf-8"
    assert ODATA_XML_ERROR.match(r.body), r.body
    assert r.code == "ResourceNotFound"
    # the same Accept still gets JSON for a success (only errors differ)
    if accept is not None:
        ok = await storage.request("GET", "/Tables", headers={"Accept": accept})
        assert ok.headers["Content-Type"].startswith("application/json;odata=minimalmetadata")


@pytest.mark.parametrize(
    ("accept", "level"),
    [
        ("application/json", "minimalmetadata"),
        ("application/json;odata=nometadata", "nometadata"),
        ("application/json;odata=fullmetadata", "fullmetadata"),
    ],
)
async def test_storage_errors_for_a_json_accept_are_json(
    storage: RawClient, accept: str, level: str
) -> None:
    r = await storage.request("DELETE", MISSING, headers={"If-Match": "*", "Accept": accept})
    assert r.status == 404
    assert r.headers["Content-Type"].startswith(f"application/json;odata={level}")
    assert r.json()["odata.error"]["code"] == "ResourceNotFound"


@pytest.mark.parametrize(
    ("accept", "level"),
    [
        ("*/*", "fullmetadata"),
        ("application/json", "fullmetadata"),
        (None, "fullmetadata"),
        ("application/json;odata=minimalmetadata", "minimalmetadata"),
    ],
)
async def test_cosmos_errors_are_full_metadata_unless_a_level_is_named(
    cosmos: RawClient, accept: str | None, level: str
) -> None:
    headers = {"If-Match": "*"} | ({"Accept": accept} if accept else {})
    r = await cosmos.request("DELETE", MISSING, headers=headers)
    assert r.status == 404
    assert r.headers["Content-Type"] == f"application/json;odata={level}"
    assert "x-ms-error-code" not in r.headers
    assert r.body.endswith(b"}}}\r\n")
    error = r.json()["odata.error"]
    assert error["code"] == "ResourceNotFound"
    assert error["message"]["lang"] == "en-us"
    assert re.fullmatch(
        r"The specified resource does not exist\.\nRequestID:[0-9a-f-]{36}\n",
        error["message"]["value"],
    )


async def test_authentication_failures_follow_the_same_negotiation(either: RawClient) -> None:
    r = await either.request("GET", "/Tables", headers={"Accept": "*/*"}, auth="none")
    assert r.status == 401
    if either.flavor == "storage":  # type: ignore[attr-defined]
        assert r.headers["Content-Type"] == "application/xml;charset=utf-8"
        assert b"<code>NoAuthenticationInformation</code>" in r.body
    else:
        assert r.headers["Content-Type"] == "application/json;odata=fullmetadata"
        assert r.json()["odata.error"]["code"] == "NoAuthenticationInformation"


# -- change sets -------------------------------------------------------------------------------


def _mime_id_envelope(parts: list[str]) -> str:
    """A change set whose parts carry Content-ID as a MIME part header (azure-data-tables)."""
    out = ["--batch_b1\r\nContent-Type: multipart/mixed; boundary=changeset_c1\r\n\r\n"]
    for i, part in enumerate(parts):
        out.append(
            "--changeset_c1\r\nContent-Type: application/http\r\n"
            f"Content-Transfer-Encoding: binary\r\nContent-ID: {i}\r\n\r\n{part}\r\n"
        )
    out.append("--changeset_c1--\r\n\r\n--batch_b1--\r\n")
    return "".join(out)


def _header_names(body: bytes) -> list[list[str]]:
    """Each answer part's header names, in order."""
    names = []
    for chunk in body.decode().split("HTTP/1.1 ")[1:]:
        head = chunk.split("\r\n\r\n", 1)[0]
        names.append([line.split(":", 1)[0] for line in head.split("\r\n")[1:]])
    return names


T = "/devstoreaccount1/mytable"


async def test_content_ids_of_change_set_answers(either: RawClient) -> None:
    await insert(either, "mytable", {"PartitionKey": "p", "RowKey": "m"})
    writes = [
        request_part(
            "POST", T, '{"PartitionKey":"p","RowKey":"1"}', {"Prefer": "return-no-content"}
        ),
        request_part("DELETE", f"{T}(PartitionKey='p',RowKey='m')", "", {"If-Match": "*"}),
    ]
    # MIME part Content-IDs (0, 1): Storage echoes none; Cosmos numbers from 1, last
    r = await post_batch(either, _mime_id_envelope(writes))
    assert r.status == 202, r.body
    ids = [p[1].get("Content-ID") for p in parts_of(r.body)]
    if either.flavor == "storage":  # type: ignore[attr-defined]
        assert ids == [None, None]
    else:
        assert ids == ["1", "2"]
        assert all(names[-1] == "Content-ID" for names in _header_names(r.body))
    # inner Content-IDs (the legacy SDK's 1, 2): Storage echoes them first after the status
    await insert(either, "mytable", {"PartitionKey": "p", "RowKey": "m"})
    inner = [
        request_part("POST", T, '{"PartitionKey":"p","RowKey":"2"}', {"Content-ID": "7"}),
        request_part(
            "DELETE", f"{T}(PartitionKey='p',RowKey='m')", "", {"If-Match": "*", "Content-ID": "9"}
        ),
    ]
    r = await post_batch(either, envelope(inner))
    assert r.status == 202, r.body
    ids = [p[1].get("Content-ID") for p in parts_of(r.body)]
    if either.flavor == "storage":  # type: ignore[attr-defined]
        assert ids == ["7", "9"]
        assert all(names[0] == "Content-ID" for names in _header_names(r.body))
    else:
        assert ids == ["1", "2"]


async def test_a_failed_first_operation_has_no_index_prefix(either: RawClient) -> None:
    parts = [
        request_part(
            "PUT",
            f"{T}(PartitionKey='p',RowKey='x')",
            '{"a":1}',
            {"If-Match": "W/\"datetime'2012-06-15T22%3A51%3A44.9662825Z'\""},
        ),
        request_part("POST", T, '{"PartitionKey":"p","RowKey":"y"}'),
    ]
    r = await post_batch(either, _mime_id_envelope(parts))
    [(status, _headers, payload)] = parts_of(r.body)
    assert status == 404
    value = json.loads(payload)["odata.error"]["message"]["value"]
    assert value.startswith("The specified resource does not exist."), value
    # a later operation's failure keeps its index
    parts = [
        request_part("POST", T, '{"PartitionKey":"p","RowKey":"y"}'),
        request_part("POST", T, '{"PartitionKey":"p","RowKey":"y"}'),
    ]
    r = await post_batch(either, _mime_id_envelope(parts))
    [(status, _headers, payload)] = parts_of(r.body)
    assert status == 400
    assert json.loads(payload)["odata.error"]["message"]["value"].startswith("1:")


EMPTY_CHANGE_SET = (
    "--batch_b1\nContent-Type: multipart/mixed; boundary=changeset_c1\n\n"
    "--changeset_c1--\n--batch_b1--"
)


@pytest.mark.parametrize("nl", ["\n", "\r\n"])
async def test_an_empty_change_set_is_answered_with_an_empty_change_set(
    either: RawClient, nl: str
) -> None:
    before = await either.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    r = await post_batch(either, EMPTY_CHANGE_SET.replace("\n", nl))
    assert r.status == 202, r.body
    m = re.fullmatch(
        rb"--(batchresponse_[0-9a-f-]{36})\r\nContent-Type: multipart/mixed; "
        rb"boundary=(changesetresponse_[0-9a-f-]{36})\r\n\r\n--\2--\r\n--\1--\r\n",
        r.body,
    )
    assert m is not None, r.body
    assert r.headers["Content-Type"] == "multipart/mixed; boundary=" + m.group(1).decode()
    after = await either.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    assert after.json()["value"] == before.json()["value"]


async def test_cosmos_refuses_a_change_set_with_a_patch_part_whole(cosmos: RawClient) -> None:
    await insert(cosmos, "mytable", {"PartitionKey": "p", "RowKey": "m", "a": 1})
    parts = [
        request_part("POST", T, '{"PartitionKey":"p","RowKey":"new"}'),
        request_part("PATCH", f"{T}(PartitionKey='p',RowKey='m')", '{"a":2}', {"If-Match": "*"}),
    ]
    r = await cosmos.request(
        "POST",
        "/$batch",
        headers={"Content-Type": BATCH_CT, "Accept": "*/*", "DataServiceVersion": "3.0"},
        body=_mime_id_envelope(parts),
    )
    assert r.status == 400
    assert r.headers["Content-Type"] == "application/json;odata=fullmetadata"
    error = r.json()["odata.error"]
    assert error["code"] == "InvalidInput"
    value = error["message"]["value"]
    rid = r.headers["x-ms-request-id"]
    assert value == (
        f"One of the input values is invalid.\r\nActivityId: {rid}, documentdb-dotnet-sdk/2.11.0 "
        f"Host/64-bit MicrosoftWindowsNT/6.2.9200.0\nRequestID:{rid}\n"
    )
    # nothing was written
    got = await cosmos.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
    assert [(e["RowKey"], e.get("a")) for e in got.json()["value"]] == [("m", 1)]


async def test_storage_takes_a_patch_part(storage: RawClient) -> None:
    await insert(storage, "mytable", {"PartitionKey": "p", "RowKey": "m", "a": 1})
    parts = [
        request_part("PATCH", f"{T}(PartitionKey='p',RowKey='m')", '{"b":2}', {"If-Match": "*"})
    ]
    r = await post_batch(storage, _mime_id_envelope(parts))
    assert r.status == 202
    assert [p[0] for p in parts_of(r.body)] == [204]


# -- Preference-Applied on errors, ACL echo -------------------------------------------------

NO_CONTENT = {"Prefer": "return-no-content", "Content-Type": "application/json"}


async def test_preference_applied_is_sent_on_errors_too(storage: RawClient) -> None:
    headers = {"Accept": JSON_MINIMAL, **NO_CONTENT}
    exists = await storage.request(
        "POST", "/Tables", headers=headers, body='{"TableName":"mytable"}'
    )
    bad_name = await storage.request(
        "POST", "/Tables", headers=headers, body='{"TableName":"\\u554a\\u9f44"}'
    )
    row = '{"PartitionKey":"p","RowKey":"r"}'
    await storage.request("POST", "/mytable", headers=headers, body=row)
    conflict = await storage.request("POST", "/mytable", headers=headers, body=row)
    for r, status in ((exists, 409), (bad_name, 400), (conflict, 409)):
        assert r.status == status, r.body
        assert r.headers["Preference-Applied"] == "return-no-content"
    plain = {"Accept": JSON_MINIMAL, "Content-Type": "application/json"}
    r = await storage.request("POST", "/mytable", headers=plain, body=row)
    assert r.status == 409
    assert "Preference-Applied" not in r.headers
    # and on the failed insert of a change set
    parts = [
        request_part(
            "POST", T, '{"PartitionKey":"p","RowKey":"s"}', {"Prefer": "return-no-content"}
        ),
        request_part("POST", T, row, {"Prefer": "return-no-content"}),
    ]
    r = await post_batch(storage, _mime_id_envelope(parts))
    [(status, part_headers, _)] = parts_of(r.body)
    assert (status, part_headers.get("Preference-Applied")) == (409, "return-no-content")


ACL = (
    '<?xml version="1.0" encoding="utf-8"?><SignedIdentifiers>'
    "<SignedIdentifier><Id>none</Id></SignedIdentifier>"
    "<SignedIdentifier><Id>empty</Id><AccessPolicy /></SignedIdentifier>"
    "<SignedIdentifier><Id>partial</Id><AccessPolicy><Permission>r</Permission>"
    "</AccessPolicy></SignedIdentifier></SignedIdentifiers>"
)


async def test_an_empty_access_policy_is_not_written_back(storage: RawClient) -> None:
    put = await storage.request("PUT", "/mytable", query={"comp": "acl"}, body=ACL)
    assert put.status == 204, put.body
    got = await storage.request("GET", "/mytable", query={"comp": "acl"})
    assert got.status == 200
    assert got.body.endswith(
        b"<SignedIdentifiers><SignedIdentifier><Id>none</Id></SignedIdentifier>"
        b"<SignedIdentifier><Id>empty</Id></SignedIdentifier>"
        b"<SignedIdentifier><Id>partial</Id><AccessPolicy><Permission>r</Permission>"
        b"</AccessPolicy></SignedIdentifier></SignedIdentifiers>"
    ), got.body


async def test_one_negotiation_before_and_after_the_operation_chose_its_format(
    storage: RawClient,
) -> None:
    accept = "*/*, application/json"  # the wildcard ranks first: OData XML errors
    refused = await storage.request("GET", "/Tables", headers={"Accept": accept}, auth="none")
    missing = await storage.request("DELETE", MISSING, headers={"Accept": accept, "If-Match": "*"})
    for r in (refused, missing):
        assert r.headers["Content-Type"] == "application/xml;charset=utf-8", r.body
    # a change-set part's Accept is negotiated the same way
    part = request_part(
        "DELETE", f"{T}(PartitionKey='p',RowKey='none')", "", {"If-Match": "*", "Accept": "*/*"}
    )
    r = await post_batch(storage, _mime_id_envelope([part]))
    [(status, headers, payload)] = parts_of(r.body)
    assert status == 404
    assert headers["Content-Type"] == "application/xml;charset=utf-8"
    assert ODATA_XML_ERROR.match(payload), payload
