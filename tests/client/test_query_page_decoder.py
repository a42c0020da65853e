"""Query page decoding: the ``page_decoder`` fast path and ETags for no-metadata rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

import azt
from azt._core.queries import etag_from_timestamp
from azt._core.transport import HttpRequest, HttpResponse, MockTransport

from .conftest import DEV_CREDENTIAL, ENDPOINT, ClientOptions, mock_table

TS1 = "2021-09-21T00:50:52.9204305Z"
TS2 = "2021-09-21T00:50:53.0000001Z"
ETAG1 = "W/\"datetime'2021-09-21T00%3A50%3A52.9204305Z'\""


def _table(handler: Any, fmt: azt.WireFormat = azt.WireFormat.JSON_MINIMAL) -> azt.TableClient:
    return mock_table(MockTransport(handler), wire_format=fmt)


def _pages(*bodies: dict[str, Any]) -> Any:
    """A handler answering successive GETs with the given JSON bodies; all but the last
    announce a continuation."""
    calls = {"n": 0}

    def handler(request: HttpRequest) -> HttpResponse:
        i = calls["n"]
        calls["n"] += 1
        headers = {"x-ms-request-id": f"rid{i}", "Content-Type": "application/json"}
        if i < len(bodies) - 1:
            headers["x-ms-continuation-NextPartitionKey"] = f"pk{i}"
            headers["x-ms-continuation-NextRowKey"] = f"rk{i}"
        return HttpResponse(200, headers, json.dumps(bodies[i]).encode())

    return handler


MINIMAL_ROW = {
    "odata.etag": ETAG1,
    "PartitionKey": "p",
    "RowKey": "r1",
    "Timestamp": TS1,
    "Big@odata.type": "Edm.Int64",
    "Big": "1099511627776",
    "Rating": 4.5,
}


def test_etag_from_timestamp_matches_the_service_form() -> None:
    assert etag_from_timestamp(TS1) == ETAG1


async def test_page_decoder_gets_the_raw_rows_and_types_the_pager() -> None:
    seen: list[list[dict[str, Any]]] = []

    def decoder(rows: list[dict[str, Any]]) -> list[tuple[str, int]]:
        seen.append(rows)
        return [(row["RowKey"], int(row["Big"])) for row in rows]

    second = dict(MINIMAL_ROW, RowKey="r2")
    handler = _pages({"value": [MINIMAL_ROW]}, {"value": []}, {"value": [second]})
    transport = MockTransport(handler)
    async with azt.TableClient(
        ENDPOINT,
        "movies",
        DEV_CREDENTIAL,
        transport=transport,
    ) as table:
        pager = table.query_entities(
            "PartitionKey eq @pk", parameters={"pk": "p"}, page_decoder=decoder
        )
        pages = [page async for page in pager.by_page()]
    assert [p.items for p in pages] == [[("r1", 2**40)], [], [("r2", 2**40)]]
    assert [p.request_id for p in pages] == ["rid0", "rid1", "rid2"]
    assert pages[0].continuation == azt.ContinuationToken(
        next_partition_key="pk0", next_row_key="rk0"
    )
    assert seen[0] == [MINIMAL_ROW]  # exactly what the service sent, annotations included
    urls = [r.url for r in transport.requests]
    assert "NextPartitionKey=pk0&NextRowKey=rk0" in urls[1]
    assert "NextPartitionKey=pk1&NextRowKey=rk1" in urls[2]
    assert all("$filter=PartitionKey%20eq%20%27p%27" in u for u in urls)


async def test_page_decoder_errors_propagate_and_bad_bodies_are_wire_errors() -> None:
    def boom(rows: list[dict[str, Any]]) -> list[int]:
        raise ValueError("decoder says no")

    async with _table(_pages({"value": [MINIMAL_ROW]})) as table:
        with pytest.raises(ValueError, match="decoder says no"):
            await table.query_entities(page_decoder=boom).to_list()

    def bad(request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, {"x-ms-request-id": "r"}, b'{"value": 3}')

    async with _table(bad) as table:
        with pytest.raises(azt.WireDecodeError, match="'value' list"):
            await table.query_entities(page_decoder=lambda rows: rows).to_list()

    def not_json(request: HttpRequest) -> HttpResponse:
        return HttpResponse(200, {"x-ms-request-id": "r"}, b"<feed/>")

    async with _table(not_json) as table:
        with pytest.raises(azt.WireDecodeError, match="not JSON"):
            await table.query_entities(page_decoder=lambda rows: rows).to_list()
        with pytest.raises(azt.ValidationError, match="callable"):
            table.query_entities(page_decoder=3)  # type: ignore[call-overload]


async def test_nometadata_rows_get_etags_from_their_timestamps() -> None:
    plain = {"PartitionKey": "p", "RowKey": "r1", "Timestamp": TS1, "Big": "1099511627776"}
    projected = {"PartitionKey": "p", "RowKey": "r2", "Big": "5"}  # $select without Timestamp
    body = {"value": [plain, projected]}
    async with _table(_pages(body), azt.WireFormat.JSON_NONE) as table:
        entities = await table.query_entities().to_list()
    assert entities[0].metadata.etag == ETAG1
    assert entities[0].metadata.timestamp is not None
    assert entities[1].metadata.etag is None
    async with _table(_pages(body), azt.WireFormat.JSON_NONE) as table:
        rows = await table.query_entities(page_decoder=lambda rows: rows).to_list()
    assert rows[0]["odata.etag"] == ETAG1
    assert "odata.etag" not in rows[1]


async def test_minimal_metadata_keeps_the_services_etag() -> None:
    row = dict(MINIMAL_ROW, **{"odata.etag": 'W/"opaque"'})
    async with _table(_pages({"value": [row]})) as table:
        entities = await table.query_entities().to_list()
    assert entities[0].metadata.etag == 'W/"opaque"'


ATOM_FEED = f"""<?xml version="1.0" encoding="utf-8"?>
<feed xml:base="http://127.0.0.1:10002/devstoreaccount1/"
  xmlns="http://www.w3.org/2005/Atom"
  xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices"
  xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata">
  <id>http://127.0.0.1:10002/devstoreaccount1/movies</id>
  <title type="text">movies</title>
  <updated>2021-09-21T00:50:53Z</updated>
  <entry m:etag="{ETAG1.replace('"', "&quot;")}">
    <id>http://127.0.0.1:10002/devstoreaccount1/movies(PartitionKey='p',RowKey='r1')</id>
    <title type="text"></title>
    <updated>2021-09-21T00:50:53Z</updated>
    <author><name /></author>
    <content type="application/xml">
      <m:properties>
        <d:PartitionKey>p</d:PartitionKey>
        <d:RowKey>r1</d:RowKey>
        <d:Timestamp m:type="Edm.DateTime">{TS1}</d:Timestamp>
        <d:Big m:type="Edm.Int64">1099511627776</d:Big>
        <d:Rating m:type="Edm.Double">4.5</d:Rating>
      </m:properties>
    </content>
  </entry>
</feed>""".encode()


async def test_atom_rows_reach_the_decoder_in_the_json_shape() -> None:
    def handler(request: HttpRequest) -> HttpResponse:
        return HttpResponse(
            200, {"x-ms-request-id": "r", "Content-Type": "application/atom+xml"}, ATOM_FEED
        )

    async with _table(handler, azt.WireFormat.ATOM) as table:
        rows = await table.query_entities(page_decoder=lambda rows: rows).to_list()
        plain = await table.query_entities().to_list()
    assert rows == [
        {
            "odata.etag": ETAG1,
            "PartitionKey": "p",
            "RowKey": "r1",
            "Timestamp": TS1,
            "Big@odata.type": "Edm.Int64",
            "Big": "1099511627776",
            "Rating@odata.type": "Edm.Double",
            "Rating": 4.5,
        }
    ]
    assert plain[0]["Big"] == 2**40


@pytest.mark.live
async def test_nometadata_etags_work_for_conditional_writes(
    connection_string: str, table: azt.TableClient, client_options: ClientOptions
) -> None:
    await table.insert_entity({"PartitionKey": "p", "RowKey": "r", "n": 1})
    async with azt.TableClient.from_connection_string(
        connection_string,
        table.table_name,
        wire_format=azt.WireFormat.JSON_NONE,
        **client_options,
    ) as plain:
        (entity,) = await plain.query_entities().to_list()
        (row,) = await plain.query_entities(page_decoder=lambda rows: rows).to_list()
        assert entity.metadata.etag == row["odata.etag"]
        etag = entity.metadata.etag
        assert etag is not None
        result = await plain.update_entity({"PartitionKey": "p", "RowKey": "r", "n": 2}, etag=etag)
        with pytest.raises(azt.PreconditionFailedError):
            await plain.update_entity({"PartitionKey": "p", "RowKey": "r", "n": 3}, etag=etag)
    assert result.etag != etag
    assert (await table.get_entity("p", "r"))["n"] == 2
