"""The explorer's server side without a browser: sign-in, CSRF and origin checks, typed
values, ETag concurrency, exports, realism changes, recent requests, the bind rules."""

from __future__ import annotations

import base64
import csv
import doctest
import io
import json
import logging
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer, front
from azt_server_stub.__main__ import build_parser, config_from_args
from azt_server_stub.backend import WriteOp
from azt_server_stub.explorer import Sessions, api, is_loopback_host, live, sessions, values
from azt_server_stub.model import Edm, parse_datetime
from azt_server_stub.realism.faults import FaultInjector
from azt_server_stub.realism.partitions import PartitionLayout
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits

OTHER_KEY = base64.b64encode(b"other-key").decode()


@pytest.mark.parametrize("module", [api, live, sessions, values])
def test_docstring_examples(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


@dataclass
class Page:
    """A signed-in explorer session: its HTTP session, base URL and CSRF token."""

    http: aiohttp.ClientSession
    base: str
    csrf: str

    async def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        sent = {"X-CSRF-Token": self.csrf} if method != "GET" else {}
        sent.update(headers or {})
        async with self.http.request(
            method, self.base + "api/" + path, json=body, headers=sent
        ) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text


@pytest.fixture
async def stub() -> AsyncIterator[StubServer]:
    config = StubConfig(
        accounts={DEV_ACCOUNT: [DEV_KEY], "other": [OTHER_KEY]},
        faults=FaultInjector(),
        throttle=Throttle(ThrottleLimits(partition_rate=None, account_rate=None)),
        partitions=PartitionLayout(),
    )
    async with StubServer(config, explorer=True) as server:
        yield server


@pytest.fixture
async def page(stub: StubServer) -> AsyncIterator[Page]:
    jar = aiohttp.CookieJar(unsafe=True)  # the stub's address is an IP
    async with aiohttp.ClientSession(cookie_jar=jar) as http:
        base = stub.explorer_url
        assert base is not None
        async with http.post(
            base + "api/signin", json={"account": DEV_ACCOUNT, "key": DEV_KEY}
        ) as resp:
            assert resp.status == 200
            cookie = resp.headers["Set-Cookie"]
            assert "HttpOnly" in cookie
            assert "SameSite=Strict" in cookie
            assert "Path=/_explorer/" in cookie
            csrf = (await resp.json())["csrf"]
        yield Page(http, base, csrf)


async def test_everything_needs_a_session(stub: StubServer) -> None:
    stub.backend.create_table(DEV_ACCOUNT, "Secret")
    async with aiohttp.ClientSession() as http:
        base = stub.explorer_url
        assert base is not None
        for path in ("tables", "tables/Secret/entities", "realism", "requests", "session"):
            async with http.get(base + "api/" + path) as resp:
                assert resp.status == 401
                assert "Secret" not in await resp.text()
        async with http.get(base + "api/tables/Secret/export?format=csv") as resp:
            assert resp.status == 401
        async with http.get(base) as resp:  # the page itself: code, no data
            assert resp.status == 200
            assert "Secret" not in await resp.text()
            assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]


@pytest.mark.parametrize(
    ("account", "key"),
    [(DEV_ACCOUNT, OTHER_KEY), ("nobody", DEV_KEY), (DEV_ACCOUNT, "not base64!"), (DEV_ACCOUNT, 5)],
)
async def test_a_wrong_key_signs_nobody_in(stub: StubServer, account: str, key: object) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{stub.explorer_url}api/signin", json={"account": account, "key": key}) as r,
    ):
        assert r.status == 401
        assert "Set-Cookie" not in r.headers
        assert (await r.json())["code"] == "SignInFailed"


async def test_each_account_sees_its_own_tables(stub: StubServer, page: Page) -> None:
    stub.backend.create_table("other", "OtherOnly")
    assert (await page.call("GET", "tables"))[1] == {"tables": []}
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        http.post(f"{stub.explorer_url}api/signin", json={"account": "other", "key": OTHER_KEY}),
        http.get(f"{stub.explorer_url}api/tables") as resp,
    ):
        assert (await resp.json())["tables"] == [{"name": "OtherOnly", "count": 0, "more": False}]


async def test_state_changes_need_the_csrf_token(stub: StubServer, page: Page) -> None:
    for headers in ({"X-CSRF-Token": ""}, {"X-CSRF-Token": "forged"}):
        status, body = await page.call("POST", "tables", {"name": "Forged"}, headers)
        assert (status, body["code"]) == (403, "CsrfTokenMismatch")
    async with page.http.post(page.base + "api/tables", json={"name": "Forged"}) as resp:
        assert resp.status == 403  # no token at all
    assert stub.backend.table_name(DEV_ACCOUNT, "Forged") is None


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
async def test_cross_site_requests_are_refused_even_with_the_token(
    stub: StubServer, page: Page, headers: dict[str, str]
) -> None:
    status, body = await page.call("POST", "tables", {"name": "CrossSite"}, headers)
    assert (status, body["code"]) == (403, "CrossSiteRequest")
    assert stub.backend.table_name(DEV_ACCOUNT, "CrossSite") is None
    same = {
        "Origin": page.base.rstrip("/").removesuffix("/_explorer"),
        "Sec-Fetch-Site": "same-origin",
    }
    assert (await page.call("POST", "tables", {"name": "SameSite"}, same))[0] == 201


async def test_a_foreign_host_name_is_refused(stub: StubServer, page: Page) -> None:
    # a DNS-rebinding page reaches 127.0.0.1 under its own name
    async with page.http.get(page.base + "api/tables", headers={"Host": "evil.example"}) as r:
        assert r.status == 403
        assert (await r.json())["code"] == "HostRefused"


def test_loopback_names() -> None:
    assert all(map(is_loopback_host, ["127.0.0.1", "127.1.2.3:80", "localhost:1", "[::1]:9"]))
    assert not any(map(is_loopback_host, ["0.0.0.0", "10.0.0.1", "example.com", "[::]:1"]))


def test_the_explorer_stays_on_loopback_unless_told() -> None:
    with pytest.raises(ValueError, match="loopback"):
        StubServer(host="0.0.0.0", explorer=True)
    assert StubServer(host="0.0.0.0", explorer=True, explorer_remote=True).config.explorer_remote
    assert StubServer(host="0.0.0.0").explorer_url is None
    parse = build_parser().parse_args
    assert config_from_args(parse([])).explorer  # on by default on loopback
    assert not config_from_args(parse(["--host", "0.0.0.0"])).explorer
    assert not config_from_args(parse(["--no-explorer"])).explorer
    with pytest.raises(ValueError, match="--explorer-remote"):
        config_from_args(parse(["--host", "0.0.0.0", "--explorer"]))
    remote = config_from_args(parse(["--host", "0.0.0.0", "--explorer", "--explorer-remote"]))
    assert remote.explorer
    assert remote.explorer_remote


def test_sessions_expire_and_sign_out() -> None:
    now = [0.0]
    sessions = Sessions({"a": [b"k"]}, clock=lambda: now[0])
    session = sessions.sign_in("a", base64.b64encode(b"k").decode())
    assert sessions.get(session.token) is session
    now[0] += 9 * 3600
    assert sessions.get(session.token) is None
    again = sessions.sign_in("a", base64.b64encode(b"k").decode())
    sessions.sign_out(again.token)
    assert sessions.get(again.token) is None


TYPED = [
    {"name": "Big", "type": "Edm.Int64", "value": "9223372036854775807"},
    {"name": "Odd", "type": "Edm.Int64", "value": "-9007199254740993"},
    {"name": "Small", "type": "Edm.Int32", "value": "-2147483648"},
    {"name": "Nan", "type": "Edm.Double", "value": "NaN"},
    {"name": "Inf", "type": "Edm.Double", "value": "-Infinity"},
    {"name": "Max", "type": "Edm.Double", "value": "1.7976931348623157e+308"},
    {"name": "Tenth", "type": "Edm.Double", "value": "0.1"},
    {"name": "When", "type": "Edm.DateTime", "value": "2024-02-29T23:59:59.1234567Z"},
    {"name": "Id", "type": "Edm.Guid", "value": "0f8fad5b-d9cb-469f-a165-70867728950e"},
    {"name": "Bytes", "type": "Edm.Binary", "value": "AP8Q"},
    {"name": "Flag", "type": "Edm.Boolean", "value": "false"},
    {"name": "Text", "type": "Edm.String", "value": "<b>O'Brien</b> ☃ \U0001f600"},
]


async def test_typed_values_round_trip_exactly(stub: StubServer, page: Page) -> None:
    stub.backend.create_table(DEV_ACCOUNT, "Typed")
    entity = {"PartitionKey": "p", "RowKey": "r", "properties": TYPED}
    status, saved = await page.call("POST", "tables/Typed/entities", entity)
    assert status == 201, saved
    assert saved["properties"] == TYPED
    stored = stub.backend.get_entity(DEV_ACCOUNT, "Typed", "p", "r").props
    assert stored["Big"] == (Edm.INT64, 2**63 - 1)
    assert stored["Odd"] == (Edm.INT64, -(2**53) - 1)
    assert math.isnan(stored["Nan"][1])
    assert stored["Max"][1] == 1.7976931348623157e308
    assert stored["When"] == (Edm.DATETIME, parse_datetime("2024-02-29T23:59:59.1234567Z"))
    assert stored["Bytes"] == (Edm.BINARY, b"\x00\xff\x10")
    status, read = await page.call("GET", "tables/Typed/entity?pk=p&rk=r")
    assert read["properties"] == TYPED


@pytest.mark.parametrize(
    ("prop", "code"),
    [
        ({"name": "I", "type": "Edm.Int32", "value": "2147483648"}, "InvalidInput"),
        ({"name": "L", "type": "Edm.Int64", "value": "9223372036854775808"}, "InvalidInput"),
        ({"name": "D", "type": "Edm.Double", "value": "1e400"}, "InvalidInput"),
        ({"name": "G", "type": "Edm.Guid", "value": "not-a-guid"}, "InvalidInput"),
        ({"name": "B", "type": "Edm.Binary", "value": "%%%"}, "InvalidInput"),
        ({"name": "T", "type": "Edm.DateTime", "value": "1600-12-31T23:59:59Z"}, None),
        ({"name": "N", "type": "Edm.Int32", "value": 5}, "InvalidInput"),
        ({"name": "X", "type": "Edm.Single", "value": "1"}, "InvalidInput"),
    ],
)
async def test_bad_values_are_refused_and_nothing_is_written(
    stub: StubServer, page: Page, prop: dict[str, Any], code: str | None
) -> None:
    stub.backend.create_table(DEV_ACCOUNT, "Bad")
    status, body = await page.call(
        "POST", "tables/Bad/entities", {"PartitionKey": "p", "RowKey": "r", "properties": [prop]}
    )
    assert status == 400, body
    if code is not None:
        assert body["code"] == code
    assert stub.backend.query_entities(DEV_ACCOUNT, "Bad", None, None, None).entities == []


async def test_a_stale_edit_is_refused_with_412(stub: StubServer, page: Page) -> None:
    stub.backend.create_table(DEV_ACCOUNT, "Stale")
    _, read = await page.call(
        "POST", "tables/Stale/entities", {"PartitionKey": "p", "RowKey": "r", "properties": []}
    )
    stub.backend.write(DEV_ACCOUNT, "Stale", WriteOp("merge", "p", "r", {"V": (Edm.INT32, 1)}, "*"))
    edit = {"properties": [{"name": "V", "type": "Edm.Int32", "value": "2"}]}
    status, body = await page.call(
        "PUT", "tables/Stale/entity?pk=p&rk=r", edit, {"If-Match": read["etag"]}
    )
    assert (status, body["code"]) == (412, "UpdateConditionNotSatisfied")
    assert stub.backend.get_entity(DEV_ACCOUNT, "Stale", "p", "r").props["V"] == (Edm.INT32, 1)
    status, body = await page.call(
        "DELETE", "tables/Stale/entity?pk=p&rk=r", headers={"If-Match": read["etag"]}
    )
    assert status == 412
    current = stub.backend.get_entity(DEV_ACCOUNT, "Stale", "p", "r").etag
    status, body = await page.call(
        "PUT", "tables/Stale/entity?pk=p&rk=r", edit, {"If-Match": current}
    )
    assert status == 200
    assert body["properties"] == edit["properties"]
    assert (await page.call("PUT", "tables/Stale/entity?pk=p&rk=r", edit))[0] == 400  # no If-Match
    moved = {"PartitionKey": "q", **edit}
    status, _ = await page.call(
        "PUT", "tables/Stale/entity?pk=p&rk=r", moved, {"If-Match": body["etag"]}
    )
    assert status == 400


async def test_pages_follow_continuation_tokens(stub: StubServer, page: Page) -> None:
    stub.backend.create_table(DEV_ACCOUNT, "Paged")
    for n in range(12):
        stub.backend.write(DEV_ACCOUNT, "Paged", WriteOp("insert", f"p{n // 5}", f"r{n:02d}"))
    seen: list[str] = []
    query = "top=5"
    while True:
        status, body = await page.call("GET", f"tables/Paged/entities?{query}")
        assert status == 200, body
        seen += [e["RowKey"] for e in body["entities"]]
        if body["next"] is None:
            break
        query = f"top=5&npk={body['next']['npk']}&nrk={body['next']['nrk']}"
    assert seen == [f"r{n:02d}" for n in range(12)]
    status, body = await page.call("GET", "tables/Paged/entities?filter=RowKey%20ge%20'r10'")
    assert [e["RowKey"] for e in body["entities"]] == ["r10", "r11"]
    status, body = await page.call("GET", "tables/Paged/entities?filter=startswith(RowKey,'r')")
    assert (status, body["code"]) == (501, "NotImplemented")  # the service's own answer
    status, body = await page.call("GET", "tables/Paged/entities?filter=RowKey%20eq")
    assert (status, body["code"]) == (400, "InvalidInput")
    assert (await page.call("GET", "tables/Paged/entities?top=0"))[0] == 400
    assert (await page.call("GET", "tables/Missing/entities"))[1]["code"] == "TableNotFound"


async def test_exports_are_typed(stub: StubServer, page: Page) -> None:
    stub.backend.create_table(DEV_ACCOUNT, "Export")
    await page.call(
        "POST", "tables/Export/entities", {"PartitionKey": "a", "RowKey": "1", "properties": TYPED}
    )
    plain = [{"name": "Text", "type": "Edm.String", "value": 'x,"y"\nz'}]
    await page.call(
        "POST", "tables/Export/entities", {"PartitionKey": "b", "RowKey": "2", "properties": plain}
    )
    async with page.http.get(page.base + "api/tables/Export/export?format=jsonl") as resp:
        assert resp.headers["Content-Type"].startswith("application/x-ndjson")
        assert 'filename="Export.jsonl"' in resp.headers["Content-Disposition"]
        lines = (await resp.text()).splitlines()
    first = json.loads(lines[0])
    assert first["Big"] == "9223372036854775807"
    assert first["Big@odata.type"] == "Edm.Int64"
    assert first["Nan"] == "NaN"
    assert first["Max"] == 1.7976931348623157e308
    assert first["Small"] == -2147483648
    assert first["When"] == "2024-02-29T23:59:59.1234567Z"
    assert first["Flag"] is False
    assert json.loads(lines[1])["Text"] == 'x,"y"\nz'
    async with page.http.get(
        page.base + "api/tables/Export/export?format=csv&filter=PartitionKey%20eq%20'b'"
    ) as resp:
        rows = list(csv.reader(io.StringIO(await resp.text())))
    assert rows[0] == ["PartitionKey", "RowKey", "Timestamp", "Text", "Text@type"]
    assert rows[1][:2] == ["b", "2"]
    assert rows[1][3:] == ['x,"y"\nz', "Edm.String"]
    async with page.http.get(
        page.base + "api/tables/Export/export?format=csv&select=Big,Text"
    ) as resp:
        rows = list(csv.reader(io.StringIO(await resp.text())))
    assert rows[0][3:] == ["Big", "Big@type", "Text", "Text@type"]
    assert rows[1][3:5] == ["9223372036854775807", "Edm.Int64"]
    assert rows[2][3:5] == ["", ""]  # b has no Big: empty value and empty type
    status, body = await page.call("GET", "tables/Export/export?format=csv&filter=Big%20eq")
    assert (status, body["code"]) == (400, "InvalidInput")  # refused before the answer starts


async def test_tables_list_count_create_delete(stub: StubServer, page: Page) -> None:
    assert (await page.call("POST", "tables", {"name": "Counted"}))[0] == 201
    for n in range(3):
        stub.backend.write(DEV_ACCOUNT, "Counted", WriteOp("insert", "p", str(n)))
    assert (await page.call("GET", "tables"))[1]["tables"] == [
        {"name": "Counted", "count": 3, "more": False}
    ]
    status, body = await page.call("POST", "tables", {"name": "counted"})
    assert (status, body["code"]) == (409, "TableAlreadyExists")
    assert (await page.call("POST", "tables", {"name": "1bad"}))[0] == 400
    assert (await page.call("DELETE", "tables/Counted"))[0] == 200
    assert (await page.call("GET", "tables"))[1]["tables"] == []
    assert (await page.call("DELETE", "tables/Counted"))[0] == 404


async def test_realism_is_shown_and_changed_live(stub: StubServer, page: Page) -> None:
    status, state = await page.call("GET", "realism")
    assert state["faults"] == {"configured": True, "enabled": True, "rules": [], "counters": {}}
    status, state = await page.call("POST", "realism", {"faults": {"add": "busy:next=1@table=Hit"}})
    assert state["faults"]["rules"][0]["spec"] == "busy:next=1@table=hit"
    assert stub.config.faults is not None
    assert len(stub.config.faults.rules) == 1
    assert (await page.call("POST", "realism", {"faults": {"add": "nonsense"}}))[0] == 400
    status, state = await page.call(
        "POST", "realism", {"throttle": {"spec": "partition=5,account=off"}}
    )
    assert state["throttle"]["spec"] == "partition=5,account=off,burst=1,timeouts=0"
    assert stub.config.throttle is not None
    assert stub.config.throttle.limits.partition_rate == 5
    assert (await page.call("POST", "realism", {"throttle": {"spec": "partition=-1"}}))[0] == 400
    status, state = await page.call(
        "POST", "realism", {"partitions": {"boundaries": ["m"], "scan_budget": 3}}
    )
    assert state["partitions"]["boundaries"] == ["m"]
    assert stub.config.partitions is not None
    assert stub.config.partitions.default.scan_budget == 3
    assert (await page.call("POST", "realism", {"partitions": {"scan_budget": 0}}))[0] == 400
    status, state = await page.call("POST", "realism", {"faults": {"remove": 0}})
    assert (status, state["faults"]["rules"]) == (200, [])


async def test_faults_and_throttling_never_touch_the_explorer(stub: StubServer, page: Page) -> None:
    assert stub.config.faults is not None
    stub.config.faults.add("busy")  # every Table API request
    async with page.http.get(stub.endpoint + "/devstoreaccount1/Tables") as resp:
        assert resp.status == 503
    assert (await page.call("GET", "tables"))[0] == 200
    status, body = await page.call("GET", "requests?since=0")
    assert status == 200
    assert [(r["path"], r["status"], r["error"]) for r in body["requests"]] == [
        ("/devstoreaccount1/Tables", 503, "ServerBusy")
    ]
    _, later = await page.call("GET", f"requests?since={body['last']}")
    assert later["requests"] == []


async def test_a_stub_without_realism_says_so(page: Page) -> None:
    async with StubServer(explorer=True) as bare:
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as http:
            base = bare.explorer_url
            assert base is not None
            async with http.post(
                base + "api/signin", json={"account": DEV_ACCOUNT, "key": DEV_KEY}
            ) as r:
                csrf = (await r.json())["csrf"]
            async with http.get(base + "api/realism") as r:
                assert await r.json() == {
                    "faults": {"configured": False},
                    "throttle": {"configured": False},
                    "partitions": {"configured": False},
                }
            async with http.post(
                base + "api/realism",
                json={"faults": {"add": "busy"}},
                headers={"X-CSRF-Token": csrf},
            ) as r:
                assert r.status == 400
                assert "--fault" in (await r.json())["message"]


async def test_without_the_switch_there_is_no_explorer() -> None:
    async with (
        StubServer() as plain,
        aiohttp.ClientSession() as http,
        http.get(plain.endpoint + "/_explorer/") as resp,
    ):
        assert resp.status == 400  # the Table API's answer to a path it does not know
        assert "x-ms-error-code" in resp.headers


async def test_unknown_paths_and_methods(page: Page) -> None:
    async with page.http.get(page.base.rstrip("/"), allow_redirects=False) as resp:
        assert (resp.status, resp.headers["Location"]) == (302, "/_explorer/")
    assert (await page.call("GET", "nothing"))[0] == 404
    for odd in (
        "entities",
        "export",
        "tables/",
        "tables//entities",
        "tables/T/entities/x",
        "tables/T/nothing",
    ):
        status, body = await page.call("GET", odd)
        assert (status, body["code"]) == (404, "NotFound"), odd
    assert (await page.call("DELETE", "tables/"))[0] == 404
    assert (await page.call("PATCH", "tables"))[0] == 404
    async with page.http.get(page.base + "explorer.js") as resp:
        assert resp.headers["Content-Type"].startswith("text/javascript")
    async with page.http.post(
        page.base + "api/tables", data=b"{not json", headers={"X-CSRF-Token": page.csrf}
    ) as resp:
        assert resp.status == 400


async def test_switches_turn_layers_off_and_on(stub: StubServer, page: Page) -> None:
    assert stub.config.faults is not None
    assert stub.config.throttle is not None
    _, state = await page.call("POST", "realism", {"faults": {"enabled": False}})
    assert state["faults"]["enabled"] is False
    assert stub.config.faults.enabled is False
    _, state = await page.call("POST", "realism", {"throttle": {"enabled": False}})
    assert state["throttle"]["enabled"] is False
    assert stub.config.throttle.enabled is False
    bad_changes: list[dict[str, Any]] = [
        {"faults": {"enabled": "no"}},
        {"faults": {"remove": 5}},
        {},
        {"faults": []},
    ]
    for bad in bad_changes:
        assert (await page.call("POST", "realism", bad))[0] == 400, bad


async def test_a_durable_stub_is_explored_too(tmp_path: Path) -> None:
    async with StubServer(StubConfig(location=tmp_path), explorer=True) as stub:
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as http:
            base = stub.explorer_url
            assert base is not None
            async with http.post(
                base + "api/signin", json={"account": DEV_ACCOUNT, "key": DEV_KEY}
            ) as r:
                page = Page(http, base, (await r.json())["csrf"])
            assert (await page.call("POST", "tables", {"name": "Kept"}))[0] == 201
            entity = {"PartitionKey": "p", "RowKey": "r", "properties": TYPED}
            assert (await page.call("POST", "tables/Kept/entities", entity))[0] == 201
    async with StubServer(StubConfig(location=tmp_path)) as again:
        stored = again.backend.get_entity(DEV_ACCOUNT, "Kept", "p", "r").props
        assert stored["Big"] == (Edm.INT64, 2**63 - 1)


async def test_an_export_of_no_property_columns_keeps_the_keys(
    stub: StubServer, page: Page
) -> None:
    stub.backend.create_table(DEV_ACCOUNT, "Narrow")
    row = {"PartitionKey": "p", "RowKey": "r", "properties": TYPED[:1]}
    await page.call("POST", "tables/Narrow/entities", row)
    for select in ("", "PartitionKey,Timestamp"):
        async with page.http.get(
            f"{page.base}api/tables/Narrow/export?format=csv&select={select}"
        ) as resp:
            rows = list(csv.reader(io.StringIO(await resp.text())))
        assert rows[0] == ["PartitionKey", "RowKey", "Timestamp"]
        assert rows[1][:2] == ["p", "r"]
        async with page.http.get(
            f"{page.base}api/tables/Narrow/export?format=jsonl&select={select}"
        ) as resp:
            line = json.loads(await resp.text())
        assert "Big" not in line
        assert line["RowKey"] == "r"


async def test_the_cosmos_flavour_is_explored_too() -> None:
    async with StubServer(flavor="cosmos", explorer=True) as stub:
        jar = aiohttp.CookieJar(unsafe=True)
        async with aiohttp.ClientSession(cookie_jar=jar) as http:
            base = stub.explorer_url
            assert base is not None
            async with http.post(
                base + "api/signin", json={"account": DEV_ACCOUNT, "key": DEV_KEY}
            ) as r:
                page = Page(http, base, (await r.json())["csrf"])
            assert (await page.call("POST", "tables", {"name": "Cosmic"}))[0] == 201
            for rk in ("b", "a"):
                row = {"PartitionKey": "p", "RowKey": rk, "properties": TYPED[:2]}
                assert (await page.call("POST", "tables/Cosmic/entities", row))[0] == 201
            _, listing = await page.call("GET", "tables")
            assert listing["tables"] == [{"name": "Cosmic", "count": 2, "more": False}]
            _, first = await page.call("GET", "tables/Cosmic/entities?top=1")
            assert first["next"] is not None
            token = first["next"]
            _, second = await page.call(
                "GET", f"tables/Cosmic/entities?top=1&npk={token['npk']}&nrk={token['nrk']}"
            )
            keys = {e["RowKey"] for e in first["entities"] + second["entities"]}
            assert keys == {"a", "b"}
            assert second["next"] is None


async def test_two_stubs_keep_their_sessions_apart(stub: StubServer, page: Page) -> None:
    async with StubServer(explorer=True) as other:
        base = other.explorer_url
        assert base is not None
        async with page.http.post(
            base + "api/signin", json={"account": DEV_ACCOUNT, "key": DEV_KEY}
        ) as r:
            assert r.status == 200
        async with page.http.get(base + "api/tables") as r:
            assert r.status == 200
    assert (await page.call("GET", "tables"))[0] == 200  # the first stub's session still holds


ODD_BODIES = [
    b"",
    b"null",
    b"[]",
    b"5",
    b'"text"',
    b"{",
    b'{"PartitionKey": 5, "RowKey": "r"}',
    b'{"PartitionKey": "p", "RowKey": "r", "properties": {}}',
    b'{"PartitionKey": "p", "RowKey": "r", "properties": [5]}',
    b'{"PartitionKey": "p", "RowKey": "r", "properties": [{"name": "a"}]}',
    b'{"PartitionKey": "p", "RowKey": "r", "properties": [{"name": "", "type": "Edm.String",'
    b' "value": "x"}]}',
    b'{"PartitionKey": "p/q", "RowKey": "r"}',
    b'{"name": 5}',
    b'{"faults": {"remove": true}}',
    b'{"throttle": {"spec": 5}}',
    b'{"partitions": {"boundaries": "m"}}',
    b'{"account": ["a"], "key": {}}',
    b"\xff\xfe",
]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "signin"),
        ("POST", "tables"),
        ("POST", "tables/Odd/entities"),
        ("PUT", "tables/Odd/entity?pk=p&rk=r"),
        ("POST", "realism"),
    ],
)
async def test_malformed_bodies_get_a_clear_refusal(
    stub: StubServer, page: Page, method: str, path: str
) -> None:
    stub.backend.create_table(DEV_ACCOUNT, "Odd")
    stub.backend.write(DEV_ACCOUNT, "Odd", WriteOp("insert", "p", "r", {"Keep": (Edm.INT32, 1)}))
    headers = {"X-CSRF-Token": page.csrf, "If-Match": "*", "Content-Type": "application/json"}
    for body in ODD_BODIES:
        async with page.http.request(
            method, page.base + "api/" + path, data=body, headers=headers
        ) as resp:
            assert 400 <= resp.status < 500, (body, resp.status, await resp.text())
            assert "code" in await resp.json()
    assert stub.backend.get_entity(DEV_ACCOUNT, "Odd", "p", "r").props == {"Keep": (Edm.INT32, 1)}
    assert [
        e.key for e in stub.backend.query_entities(DEV_ACCOUNT, "Odd", None, None, None).entities
    ] == [("p", "r")]


async def test_served_through_aiohttps_own_handler_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the front end does not fit the installed aiohttp, the runner serves through
    aiohttp's connection handler: the explorer's gate is a middleware, so it still routes."""
    monkeypatch.setattr(front, "front_supported", lambda: False)
    async with StubServer(explorer=True) as stub:
        base = stub.explorer_url
        assert base is not None
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.post(
                base + "api/signin", json={"account": DEV_ACCOUNT, "key": DEV_KEY}
            ) as r:
                assert r.status == 200
            async with http.get(base + "api/tables") as r:
                assert await r.json() == {"tables": []}
            async with http.get(stub.endpoint + "/devstoreaccount1/Tables") as r:
                assert r.status == 401  # the Table API as before: unsigned
            async with http.get(base + "api/requests") as r:
                assert [e["status"] for e in (await r.json())["requests"]] == [401]


async def test_the_access_log_leaves_the_pages_own_calls_to_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with StubServer(explorer=True, access_log=True) as stub:
        base = stub.explorer_url
        assert base is not None
        async with aiohttp.ClientSession() as http:
            with caplog.at_level(logging.INFO, logger="azt_server_stub.access"):
                async with http.get(base + "api/requests"):
                    pass
                async with http.get(stub.endpoint + "/devstoreaccount1/Tables"):
                    pass
            paths = [r.getMessage().split()[1] for r in caplog.records]
            assert paths == ["/devstoreaccount1/Tables"]
            caplog.clear()
            with caplog.at_level(logging.DEBUG, logger="azt_server_stub.access"):
                async with http.get(base + "api/requests"):
                    pass
            assert [r.getMessage().split()[1] for r in caplog.records] == [
                "/_explorer/api/requests"
            ]
