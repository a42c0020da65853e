"""Static typing of the client core's query surface, checked by ``mypy --strict``
(``assert_type``); the functions also run, against a mock transport."""

from __future__ import annotations

import json
from typing import Any, assert_type

import azt
from azt._core.connection_string import DEV_ACCOUNT_KEY
from azt._core.transport import HttpRequest, HttpResponse, MockTransport

ROWS = {"value": [{"PartitionKey": "p", "RowKey": "r", "n": 1}]}


def _handler(request: HttpRequest) -> HttpResponse:
    return HttpResponse(200, {"x-ms-request-id": "r"}, json.dumps(ROWS).encode())


def _row_keys(rows: list[dict[str, Any]]) -> list[str]:
    return [str(row["RowKey"]) for row in rows]


async def test_the_page_type_follows_the_decoder() -> None:
    async with azt.TableClient(
        "http://127.0.0.1:10002/devstoreaccount1",
        "movies",
        azt.SharedKeyCredential("devstoreaccount1", DEV_ACCOUNT_KEY),
        transport=MockTransport(_handler),
    ) as table:
        plain = table.query_entities()
        assert_type(plain, azt.AsyncPager[azt.TableEntity])
        keys = table.query_entities(page_decoder=_row_keys)
        assert_type(keys, azt.AsyncPager[str])
        page = await keys.first_page()
        assert_type(page, azt.Page[str])
        for key in page:
            assert_type(key, str)
        assert page.items == ["r"]
        entities = await plain.to_list()
        assert_type(entities, list[azt.TableEntity])
        assert entities[0]["n"] == 1
        acl_result = table.with_options(server_timeout=3)
        assert_type(acl_result, azt.TableClient)
