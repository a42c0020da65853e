"""The replayer's rules on small made-up interactions (what is skipped, seeded, compared)."""

from __future__ import annotations

from tests.conformance.cassettes import (
    Interaction,
    Recording,
    Source,
    account_state,
    flavor_of,
    not_replayable,
)
from tests.conformance.compare import batch_parts, differences, media, view_of
from tests.conformance.replay import preexisting, runs

ROOT = "https://acct.table.core.windows.net"


def interaction(
    uri: str,
    *,
    method: str = "GET",
    status: int = 200,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    response: bytes = b"",
    response_headers: dict[str, str] | None = None,
) -> Interaction:
    return Interaction(
        index=0,
        method=method,
        uri=uri,
        headers=headers or {},
        body=body,
        status=status,
        response_headers=response_headers or {},
        response_body=response,
    )


def test_sas_bearer_foreign_hosts_and_throttled_answers_are_not_compared() -> None:
    assert not_replayable(interaction(f"{ROOT}/t?sv=2019-07-07&sig=abc")) == "sas"
    bearer = interaction(f"{ROOT}/t", headers={"Authorization": "Bearer xyz"})
    assert not_replayable(bearer) == "bearer"
    assert not_replayable(interaction("https://example.com/t")) == "other-account"
    assert not_replayable(interaction(f"{ROOT}/t()?$filter=a%20eq%201")) is None
    assert not_replayable(interaction(f"{ROOT}/Tables", method="POST", status=429)) == "throttled"


def test_service_properties_are_account_state() -> None:
    assert account_state(interaction(f"{ROOT}/?restype=service&comp=properties")) == "service"
    assert account_state(interaction(f"{ROOT}/Tables")) is None


def test_the_flavour_comes_from_the_host() -> None:
    assert flavor_of("https://x.table.cosmos.azure.com/Tables") == "cosmos"
    assert flavor_of(f"{ROOT}/Tables") == "storage"


def test_tables_the_account_had_are_found_from_their_first_appearance() -> None:
    source = Source("f.yaml", "r", "p", "c", "s")
    listing = b'{"value":[{"TableName":"old"},{"TableName":"mine"}]}'
    recording = Recording(
        source,
        "storage",
        [
            interaction(f"{ROOT}/Tables", method="POST", status=201, body=b'{"TableName": "mine"}'),
            interaction(f"{ROOT}/Tables", response=listing),
            interaction(
                f"{ROOT}/gone(PartitionKey='a',RowKey='b')",
                status=404,
                response=b'{"odata.error":{"code":"TableNotFound"}}',
            ),
            interaction(f"{ROOT}/used", method="POST", status=204, body=b"{}"),
        ],
    )
    assert preexisting(recording) == ["old", "used"]


def test_media_keeps_the_type_and_the_odata_level() -> None:
    assert media("application/json;odata=minimalmetadata;streaming=true;charset=utf-8") == (
        "application/json;odata=minimalmetadata"
    )
    assert media("application/xml;charset=utf-8") == "application/xml"
    assert media(None) is None


def test_an_xml_error_and_a_json_error_with_the_same_code_differ_only_in_content_type() -> None:
    xml = (
        b'<?xml version="1.0"?><error xmlns="x">'
        b"<code>ResourceNotFound</code><message>m</message></error>"
    )
    recorded = view_of(404, {"content-type": "application/xml"}, xml, "")
    live = view_of(
        404,
        {
            "content-type": "application/json;odata=minimalmetadata",
            "x-ms-error-code": "ResourceNotFound",
        },
        b'{"odata.error":{"code":"ResourceNotFound","message":{"value":"m"}}}',
        "",
    )
    assert [kind for kind, _, _ in differences(recorded, live)] == ["content-type"]


def test_entity_values_compare_by_type_and_instant_not_by_form() -> None:
    seven = b'{"d@odata.type":"Edm.DateTime","d":"2020-01-01T00:00:00.0000000Z","n":1}'
    plain = b'{"d@odata.type":"Edm.DateTime","d":"2020-01-01T00:00:00Z","n":1}'
    kinds = [
        kind
        for kind, _, _ in differences(
            view_of(200, {"content-type": "application/json"}, seven, ""),
            view_of(200, {"content-type": "application/json"}, plain, ""),
        )
    ]
    assert kinds == ["datetime-form"]
    other = b'{"d@odata.type":"Edm.DateTime","d":"2020-01-01T00:00:01Z","n":1}'
    kinds = [
        kind
        for kind, _, _ in differences(
            view_of(200, {"content-type": "application/json"}, plain, ""),
            view_of(200, {"content-type": "application/json"}, other, ""),
        )
    ]
    assert kinds == ["body"]


def test_batch_parts_are_read_from_nested_change_sets() -> None:
    body = (
        b"--batch_1\r\nContent-Type: multipart/mixed; boundary=cs_1\r\n\r\n"
        b"--cs_1\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\n"
        b'HTTP/1.1 204 No Content\r\nETag: W/"x"\r\n\r\n\r\n'
        b"--cs_1\r\nContent-Type: application/http\r\n\r\n"
        b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n\r\n"
        b'{"odata.error":{"code":"ResourceNotFound","message":{"value":"1:gone"}}}\r\n'
        b"--cs_1--\r\n--batch_1--\r\n"
    )
    parts = batch_parts(body, "batch_1")
    assert [(status, headers.get("content-id")) for status, headers, _ in parts] == [
        (204, "1"),
        (404, None),
    ]
    view = view_of(202, {"content-type": "multipart/mixed; boundary=batch_1"}, body, "")
    assert view.parts is not None
    assert (view.parts[1].error_code, view.parts[1].error_index) == ("ResourceNotFound", "1")


def _at(text: str) -> Interaction:
    return interaction(f"{ROOT}/Tables", headers={"x-ms-date": text})


def test_a_recording_of_appended_runs_is_split_where_the_dates_jump() -> None:
    source = Source("x.yaml", "r", "p", "c", "s")
    run = [
        _at("Tue, 03 Oct 2017 18:55:05 GMT"),
        _at("Tue, 03 Oct 2017 18:55:36 GMT"),  # 31 s: the longest pause inside a run
        _at("Tue, 03 Oct 2017 19:00:37 GMT"),  # minutes later: a second run
        _at("Tue, 03 Oct 2017 19:01:29 GMT"),  # 52 s later: a third run
    ]
    split = runs(Recording(source, "storage", run))
    assert [len(r.interactions) for r in split] == [2, 1, 1]
    one = Recording(source, "storage", run[:2])
    assert runs(one) == [one]
    undated = Recording(source, "storage", [interaction(f"{ROOT}/Tables")] * 2)
    assert runs(undated) == [undated]
