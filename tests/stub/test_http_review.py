"""Review regressions: malformed requests get the service's code, never a 500 or a partial write.

Each test pins a gap found while checking issue 2 point by point against the stub.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, StubServer
from azt_server_stub.backend import QueryPage, WriteOp
from azt_server_stub.model import Edm

from .conftest import ATOM_VERSION, JSON_MINIMAL, RawClient
from .test_http_batch import envelope, parts_of, post_batch, request_part
from .test_http_raw import JSON_HEADERS, insert, make_table


async def _row_keys(raw: RawClient, table: str = "mytable") -> list[str]:
    r = await raw.request("GET", f"/{table}()", headers={"Accept": JSON_MINIMAL})
    assert r.status == 200, r.body
    return [e["RowKey"] for e in r.json()["value"]]


# --- text a store cannot hold -------------------------------------------------------------


async def test_lone_surrogates_are_refused_everywhere(raw: RawClient) -> None:
    await make_table(raw)
    bodies = [
        '{"PartitionKey":"\\ud800","RowKey":"r"}',
        '{"PartitionKey":"p","RowKey":"a\\udfff"}',
        '{"PartitionKey":"p","RowKey":"r","s":"x\\ud800y"}',
        '{"PartitionKey":"p","RowKey":"r","\\ud800name":1}',
    ]
    for body in bodies:
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=body)
        assert (r.status, r.code) == (400, "InvalidInput") or (r.status, r.code) == (
            400,
            "PropertyNameInvalid",
        ), (body, r.body)
    for body in bodies[2:]:  # update bodies: the keys come from the URL
        r = await raw.request(
            "PUT", "/mytable(PartitionKey='p',RowKey='u')", headers=JSON_HEADERS, body=body
        )
        assert r.status == 400, (body, r.body)
    # inside a batch the failing operation is named
    part_ok = request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"p","RowKey":"1"}')
    part_bad = request_part("POST", "/devstoreaccount1/mytable", bodies[1])
    r = await post_batch(raw, envelope([part_ok, part_bad]))
    [(status, _, payload)] = parts_of(r.body)
    assert status == 400
    err = json.loads(payload)["odata.error"]
    assert err["code"] == "InvalidInput"
    assert err["message"]["value"].startswith("1:")
    assert await _row_keys(raw) == []


async def test_undecodable_query_values_never_break_authentication(raw: RawClient) -> None:
    await make_table(raw)
    # a SAS whose table name is not UTF-8, and a signed request with such a comp value
    r = await raw.request(
        "GET",
        "/mytable()",
        headers={"Accept": JSON_MINIMAL},
        auth="none",
        raw_query="sv=2019-02-02&sig=x&tn=%FF&sp=r&se=2030-01-01",
    )
    assert (r.status, r.code) == (403, "AuthenticationFailed"), r.body
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_MINIMAL}, raw_query="comp=%FF"
    )
    assert r.status in (400, 403), r.body
    assert r.code is not None


# --- continuation tokens --------------------------------------------------------------------


async def test_empty_continuation_tokens_are_invalid_input(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r"})
    for query in (
        {"NextPartitionKey": "1!4!cA--", "NextRowKey": ""},
        {"NextPartitionKey": ""},
        {"NextPartitionKey": "", "NextRowKey": ""},
    ):
        r = await raw.request("GET", "/mytable()", query=query, headers={"Accept": JSON_MINIMAL})
        assert (r.status, r.code) == (400, "InvalidInput"), (query, r.body)
    r = await raw.request(
        "GET", "/Tables", query={"NextTableName": ""}, headers={"Accept": JSON_MINIMAL}
    )
    assert (r.status, r.code) == (400, "InvalidInput"), r.body


# --- the secondary endpoint ---------------------------------------------------------------------


async def test_query_only_batch_is_a_read_on_the_secondary(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "v": 5})
    query = (
        "--batch_b1\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n"
        + request_part("GET", "/devstoreaccount1-secondary/mytable(PartitionKey='p',RowKey='r')")
        + "\r\n--batch_b1--\r\n"
    )
    r = await raw.request(
        "POST",
        "/$batch",
        headers={"Content-Type": "multipart/mixed; boundary=batch_b1", "Accept": JSON_MINIMAL},
        body=query,
        account_segment="devstoreaccount1-secondary",
    )
    assert r.status == 202, r.body
    [(status, _, payload)] = parts_of(r.body)
    assert status == 200, payload
    assert json.loads(payload)["v"] == 5
    # a change set is still a write there
    write = envelope(
        [request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"p","RowKey":"n"}')]
    )
    r = await raw.request(
        "POST",
        "/$batch",
        headers={"Content-Type": "multipart/mixed; boundary=batch_b1", "Accept": JSON_MINIMAL},
        body=write,
        account_segment="devstoreaccount1-secondary",
    )
    assert (r.status, r.code) == (403, "AuthorizationFailure"), r.body
    assert await _row_keys(raw) == ["r"]


# --- query parameters and OData headers ---------------------------------------------------------


async def test_timeout_parameter_is_validated(raw: RawClient) -> None:
    await make_table(raw)
    for value in ("5", "30", "3600", "0030"):  # above 30 s the service uses 30 s
        r = await raw.request(
            "GET", "/mytable()", query={"timeout": value}, headers={"Accept": JSON_MINIMAL}
        )
        assert r.status == 200, (value, r.body)
    for value, code in (
        ("abc", "InvalidQueryParameterValue"),
        ("", "InvalidQueryParameterValue"),
        ("1.5", "InvalidQueryParameterValue"),
        ("0", "OutOfRangeQueryParameterValue"),
        ("-1", "OutOfRangeQueryParameterValue"),
    ):
        r = await raw.request(
            "POST",
            "/mytable",
            query={"timeout": value},
            headers=JSON_HEADERS,
            body='{"PartitionKey":"p","RowKey":"t"}',
        )
        assert (r.status, r.code) == (400, code), (value, r.body)
        assert r.json()["odata.error"]["QueryParameterName"] == "timeout"
    # service-level and ACL operations answer in storage XML
    r = await raw.request(
        "GET", "/", query={"restype": "service", "comp": "properties", "timeout": "x"}
    )
    assert (r.status, r.code) == (400, "InvalidQueryParameterValue"), r.body
    assert r.body.lstrip(b"\xef\xbb\xbf").startswith(b"<?xml")
    assert await _row_keys(raw) == []


async def test_select_needs_2011_08_18(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r", "a": 1})
    atom = {"Accept": "application/atom+xml"}
    for path in ("/mytable()", "/mytable(PartitionKey='p',RowKey='r')"):
        r = await raw.request(
            "GET", path, query={"$select": "a"}, headers=atom, version="2009-09-19"
        )
        assert (r.status, r.code) == (400, "UnsupportedQueryParameter"), r.body
        r = await raw.request(
            "GET", path, query={"$select": "a"}, headers=atom, version="2011-08-18"
        )
        assert r.status == 200, r.body
        # a client that can only read version 1.0 responses cannot get a projection
        r = await raw.request(
            "GET",
            path,
            query={"$select": "a"},
            headers={**atom, "MaxDataServiceVersion": "1.0;NetFx"},
            version="2011-08-18",
        )
        assert (r.status, r.code) == (400, "InvalidInput"), r.body


async def test_data_service_version_headers_are_validated(raw: RawClient) -> None:
    await make_table(raw)
    for name in ("DataServiceVersion", "MaxDataServiceVersion"):
        for value in ("3.0", "3.0;NetFx", "3.0;", "2.0;NetFx", "1.0", " 3.0 "):
            r = await raw.request(
                "GET", "/mytable()", headers={"Accept": JSON_MINIMAL, name: value}
            )
            assert r.status == 200, (name, value, r.body)
        for value in ("", "garbage", "3", "4.0", "3.x", "-1.0", "3.0.1"):
            r = await raw.request(
                "POST",
                "/mytable",
                headers={**JSON_HEADERS, name: value},
                body='{"PartitionKey":"p","RowKey":"d"}',
            )
            assert (r.status, r.code) == (400, "InvalidHeaderValue"), (name, value, r.body)
            assert r.json()["odata.error"]["HeaderName"] == name
    # inside a batch, the failing part is named
    parts = [
        request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"p","RowKey":"1"}'),
        request_part(
            "POST",
            "/devstoreaccount1/mytable",
            '{"PartitionKey":"p","RowKey":"2"}',
            {"DataServiceVersion": "9.9"},
        ),
    ]
    r = await post_batch(raw, envelope(parts))
    [(status, _, payload)] = parts_of(r.body)
    assert status == 400
    err = json.loads(payload)["odata.error"]
    assert err["code"] == "InvalidHeaderValue"
    assert err["message"]["value"].startswith("1:")
    assert await _row_keys(raw) == []


# --- the planner on the HTTP path -------------------------------------------------------------


async def test_http_key_queries_scan_only_their_ranges(stub: StubServer, raw: RawClient) -> None:
    """Point, partition and key-range filters sent over HTTP touch O(k) entities of 20,000."""
    await make_table(raw)
    backend = stub.backend
    for p in range(200):
        ops = [
            WriteOp("insert", f"p{p:04d}", f"r{r:04d}", {"n": (Edm.INT32, r)}) for r in range(100)
        ]
        backend.execute_batch(DEV_ACCOUNT, "mytable", ops)
    scans: list[int] = []
    real = backend.query_entities

    def spy(*args: Any, **kwargs: Any) -> QueryPage:
        page = real(*args, **kwargs)
        scans.append(page.scanned)
        return page

    backend.query_entities = spy  # type: ignore[method-assign]
    cases = [
        ("PartitionKey eq 'p0050' and RowKey eq 'r0005'", 1, 1),
        ("RowKey eq 'r0005' and PartitionKey eq 'p0050'", 1, 1),
        ("PartitionKey eq 'p0050'", 100, 100),
        ("PartitionKey eq 'p0050' and RowKey ge 'r0010' and RowKey lt 'r0020'", 10, 10),
        ("PartitionKey eq 'p0050' and n ge 90", 10, 100),
        ("PartitionKey ge 'p0050' and PartitionKey lt 'p0052'", 200, 200),
        ("(PartitionKey eq 'p0001' or PartitionKey eq 'p0199') and RowKey lt 'r0003'", 6, 6),
        ("PartitionKey eq 'nope'", 0, 0),
    ]
    for flt, matches, most_scanned in cases:
        scans.clear()
        r = await raw.request(
            "GET", "/mytable()", query={"$filter": flt}, headers={"Accept": JSON_MINIMAL}
        )
        assert r.status == 200, r.body
        assert len(r.json()["value"]) == matches, flt
        assert "x-ms-continuation-NextPartitionKey" not in r.headers, flt
        assert scans, flt
        assert sum(scans) <= most_scanned, (flt, scans)
    # a filter on a non-key property is a scan, which the counter shows
    scans.clear()
    r = await raw.request(
        "GET",
        "/mytable()",
        query={"$filter": "n eq 7", "$top": "5"},
        headers={"Accept": JSON_MINIMAL},
    )
    assert len(r.json()["value"]) == 5
    assert sum(scans) > 100


async def test_every_storable_property_name_can_be_selected_and_filtered(raw: RawClient) -> None:
    """Names follow one rule (validation's C# identifier rule) on write, $select and $filter."""
    await make_table(raw)
    names = ["e\u0301clair", "Größe", "\u2167x", "a_\u203f_b", "\u0915\u093f"]  # Mn, Nl, Pc, Mc
    entity: dict[str, object] = {"PartitionKey": "p", "RowKey": "r"}
    entity.update({name: i for i, name in enumerate(names)})
    await insert(raw, "mytable", entity)
    for i, name in enumerate(names):
        r = await raw.request(
            "GET",
            "/mytable()",
            query={"$select": name, "$filter": f"{name} eq {i}"},
            headers={"Accept": JSON_MINIMAL},
        )
        assert r.status == 200, (name, r.body)
        assert [e[name] for e in r.json()["value"]] == [i], name
    # Atom clients read the same names (they are XML names too)
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": "application/atom+xml"}, version=ATOM_VERSION
    )
    assert r.status == 200, r.body
    for name in names:
        assert f"<d:{name} ".encode() in r.body, name
    # a name Atom could not carry is refused on write, whatever the format
    r = await raw.request(
        "POST",
        "/mytable",
        headers=JSON_HEADERS,
        body='{"PartitionKey":"p","RowKey":"x","\u00aa":1}',
    )
    assert (r.status, r.code) == (400, "PropertyNameInvalid"), r.body
    # what cannot be a stored name cannot be selected either
    for bad in ("x\u00b2", "a\u200db", "1a"):
        r = await raw.request(
            "GET", "/mytable()", query={"$select": bad}, headers={"Accept": JSON_MINIMAL}
        )
        assert (r.status, r.code) == (400, "InvalidInput"), bad
        r = await raw.request(
            "GET", "/mytable()", query={"$filter": f"{bad} eq 1"}, headers={"Accept": JSON_MINIMAL}
        )
        assert (r.status, r.code) == (400, "InvalidInput"), bad


# --- durable store: writes off the event loop --------------------------------------------------


async def test_durable_writes_are_atomic_ordered_and_read_after_ack(tmp_path: Path) -> None:
    """With --location, concurrent readers never see half a batch and see every
    acknowledged write; one client's writes apply in order; all of it survives a restart."""
    config = StubConfig(location=tmp_path / "store")
    async with StubServer(config) as stub, aiohttp.ClientSession() as session:
        raw = RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        t = "/devstoreaccount1/mytable"

        def generation(gen: int) -> str:
            return envelope(
                [
                    request_part(
                        "PUT", f"{t}(PartitionKey='p',RowKey='{i:02d}')", json.dumps({"gen": gen})
                    )
                    for i in range(40)
                ]
            )

        assert (await post_batch(raw, generation(0))).status == 202
        seen: set[int] = set()

        async def batch_writer() -> None:
            for gen in range(1, 9):
                r = await post_batch(raw, generation(gen))
                assert [p[0] for p in parts_of(r.body)] == [204] * 40

        async def reader() -> None:
            for _ in range(30):
                r = await raw.request(
                    "GET",
                    "/mytable()",
                    query={"$filter": "PartitionKey eq 'p'"},
                    headers={"Accept": JSON_MINIMAL},
                )
                gens = {e["gen"] for e in r.json()["value"]}
                assert len(gens) == 1, gens  # one whole generation, never a mix
                seen.update(gens)

        async def counter(w: int) -> None:
            path = f"/mytable(PartitionKey='c',RowKey='{w}')"
            for n in range(10):  # one client's writes apply in order; each is read back
                r = await raw.request("PUT", path, headers=JSON_HEADERS, body=json.dumps({"n": n}))
                assert r.status == 204, r.body
                got = await raw.request("GET", path, headers={"Accept": JSON_MINIMAL})
                assert got.json()["n"] == n

        await asyncio.gather(batch_writer(), reader(), reader(), *(counter(w) for w in range(4)))
        assert seen
    async with StubServer(config) as again, aiohttp.ClientSession() as session:
        raw = RawClient(session, again.endpoint, DEV_ACCOUNT, DEV_KEY)
        r = await raw.request("GET", "/mytable()", headers={"Accept": JSON_MINIMAL})
        rows = {(e["PartitionKey"], e["RowKey"]): e for e in r.json()["value"]}
        assert {rows[("p", f"{i:02d}")]["gen"] for i in range(40)} == {8}
        assert [rows[("c", str(w))]["n"] for w in range(4)] == [9] * 4


async def test_host_style_secondary_is_read_only(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r"})
    host = "devstoreaccount1-secondary.table.localhost"
    for auth in ("SharedKey", "SharedKeyLite"):
        r = await raw.request(
            "GET",
            "/mytable(PartitionKey='p',RowKey='r')",
            headers={"Accept": JSON_MINIMAL},
            account_segment="",
            host=host,
            auth=auth,
        )
        assert r.status == 200, r.body
    r = await raw.request(
        "POST",
        "/mytable",
        headers=JSON_HEADERS,
        body='{"PartitionKey":"p","RowKey":"s"}',
        account_segment="",
        host=host,
    )
    assert (r.status, r.code) == (403, "AuthorizationFailure"), r.body
    r = await raw.request(
        "GET", "/", query={"restype": "service", "comp": "stats"}, account_segment="", host=host
    )
    assert r.status == 200, r.body
    assert await _row_keys(raw) == ["r"]


async def test_query_options_given_twice_or_unsupported(raw: RawClient) -> None:
    await make_table(raw)
    await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "r"})
    for raw_query in ("$filter=a&$filter=b", "$top=5&$top=7", "$select=a&$select=b"):
        for path in ("/mytable()", "/Tables"):
            r = await raw.request(
                "GET", path, raw_query=raw_query, headers={"Accept": JSON_MINIMAL}
            )
            assert (r.status, r.code) == (400, "InvalidQueryParameterValue"), (path, raw_query)
            assert r.json()["odata.error"]["QueryParameterName"] == raw_query.split("=")[0]
    r = await raw.request(
        "GET", "/Tables", query={"$orderby": "TableName"}, headers={"Accept": JSON_MINIMAL}
    )
    assert (r.status, r.code) == (400, "UnsupportedQueryParameter"), r.body


async def test_atom_bodies_survive_text_xml_cannot_carry(raw: RawClient) -> None:
    """JSON clients may store keys XML cannot carry, and any request may echo such text in
    an error message: Atom responses replace it, never fail."""
    await make_table(raw)
    for rk in ("a\uffff", "\ufffe", "b\U0010ffff"):
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": rk, "s": "x\u0001y"})
    atom = {"Accept": "application/atom+xml"}
    r = await raw.request("GET", "/mytable()", headers=atom, version=ATOM_VERSION)
    assert r.status == 200, r.body
    assert r.body.count(b"<entry") == 3
    r = await raw.request(
        "GET", "/mytable(PartitionKey='p',RowKey='a%EF%BF%BF')", headers=atom, version=ATOM_VERSION
    )
    assert r.status == 200, r.body
    for raw_query in ("$filter=PartitionKey%20eq%20%01", "$filter=%EF%BF%BE%20eq%201"):
        r = await raw.request(
            "GET", "/mytable()", raw_query=raw_query, headers=atom, version=ATOM_VERSION
        )
        assert (r.status, r.code) == (400, "InvalidInput"), r.body
        assert b"<code>InvalidInput</code>" in r.body


async def test_durable_writes_are_group_committed(tmp_path: Path) -> None:
    """Writes that arrive while a group commits wait and go to disk together; each gets its
    own outcome (one insert wins, the rest conflict); reads are served meanwhile."""
    import threading

    from azt_server_stub.app import BACKEND_KEY
    from azt_server_stub.request_state import SERVICES_KEY

    async with (
        StubServer(StubConfig(location=tmp_path / "g")) as stub,
        aiohttp.ClientSession() as s,
    ):
        raw = RawClient(s, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "seed"})
        backend = stub.backend
        assert backend.durable
        app = stub._app
        assert app is not None
        assert app[BACKEND_KEY] is backend
        committer = app[SERVICES_KEY].committer
        assert committer is not None
        loop = asyncio.get_running_loop()
        gate = threading.Event()
        started = asyncio.Event()
        sizes: list[int] = []
        real = backend.commit_group

        def gated(items: Any) -> Any:
            sizes.append(len(items))
            if len(sizes) == 1:
                loop.call_soon_threadsafe(started.set)
                gate.wait(timeout=30)  # hold the first group on the writer thread
            return real(items)

        backend.commit_group = gated  # type: ignore[method-assign]
        queued = asyncio.Event()
        submitted = 0
        real_submit = committer.submit

        async def counting(item: Any) -> Any:
            nonlocal submitted
            submitted += 1
            if submitted == 11:
                queued.set()
            return await real_submit(item)

        committer.submit = counting  # type: ignore[method-assign]
        first = asyncio.ensure_future(insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "0"}))
        await started.wait()

        async def racer() -> int:
            r = await raw.request(
                "POST", "/mytable", headers=JSON_HEADERS, body='{"PartitionKey":"p","RowKey":"x"}'
            )
            return r.status

        racers = [asyncio.ensure_future(racer()) for _ in range(10)]
        await queued.wait()
        # the writer thread is busy: reads are still served, and see the state before
        assert await _row_keys(raw) == ["seed"]
        gate.set()
        await first
        statuses = sorted(await asyncio.gather(*racers))
        assert statuses == [201] + [409] * 9
        assert sizes == [1, 10]
        assert await _row_keys(raw) == ["0", "seed", "x"]


# --- limits over HTTP --------------------------------------------------------------------------


async def test_every_limit_has_its_code_over_http(raw: RawClient) -> None:
    await make_table(raw)
    big = "x" * 30_000
    cases: dict[str, dict[str, object]] = {
        "KeyValueTooLarge": {"PartitionKey": "k" * 1025, "RowKey": "r"},
        "PropertyNameTooLong": {"PartitionKey": "p", "RowKey": "r", "n" * 256: 1},
        "TooManyProperties": {
            "PartitionKey": "p",
            "RowKey": "r",
            **{f"p{i}": i for i in range(253)},
        },
        "PropertyValueTooLarge": {"PartitionKey": "p", "RowKey": "r", "s": "x" * 32_769},
        "EntityTooLarge": {"PartitionKey": "p", "RowKey": "r", **{f"s{i}": big for i in range(18)}},
    }
    for code, entity in cases.items():
        r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(entity))
        assert (r.status, r.code) == (400, code), (code, r.body[:200])
        # the same refusal inside a batch names the operation
        ok = request_part("POST", "/devstoreaccount1/mytable", '{"PartitionKey":"p","RowKey":"0"}')
        bad = {**entity, "PartitionKey": "p", "RowKey": "1"}  # same partition as ``ok``
        if code == "KeyValueTooLarge":
            bad["RowKey"] = "r" * 1025
        part = request_part("POST", "/devstoreaccount1/mytable", json.dumps(bad))
        r = await post_batch(raw, envelope([ok, part]))
        [(status, _, payload)] = parts_of(r.body)
        err = json.loads(payload)["odata.error"]
        assert (status, err["code"]) == (400, code), code
        assert err["message"]["value"].startswith("1:")
    binary = {"PartitionKey": "p", "RowKey": "b", "b@odata.type": "Edm.Binary", "b": "A" * 87_384}
    r = await raw.request("POST", "/mytable", headers=JSON_HEADERS, body=json.dumps(binary))
    assert (r.status, r.code) == (400, "PropertyValueTooLarge"), r.body[:200]
    # a merge that would make the entity too large is refused as well, leaving it as it was
    await insert(
        raw, "mytable", {"PartitionKey": "p", "RowKey": "m", **{f"s{i}": big for i in range(9)}}
    )
    more = json.dumps({f"t{i}": big for i in range(9)})
    path = "/mytable(PartitionKey='p',RowKey='m')"
    r = await raw.request("MERGE", path, headers={**JSON_HEADERS, "If-Match": "*"}, body=more)
    assert (r.status, r.code) == (400, "EntityTooLarge"), r.body[:200]
    got = await raw.request("GET", path, headers={"Accept": JSON_MINIMAL})
    assert not any(k.startswith("t") for k in got.json())
    assert await _row_keys(raw) == ["m"]


async def test_table_being_deleted_when_configured() -> None:
    config = StubConfig(table_deletion_seconds=60.0)
    async with StubServer(config) as stub, aiohttp.ClientSession() as session:
        raw = RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        r = await raw.request("DELETE", "/Tables('mytable')", headers={"Accept": JSON_MINIMAL})
        assert r.status == 204
        r = await raw.request(
            "POST", "/Tables", headers=JSON_HEADERS, body='{"TableName":"MyTable"}'
        )
        assert (r.status, r.code) == (409, "TableBeingDeleted"), r.body
        assert "being deleted" in r.json()["odata.error"]["message"]["value"]
        await make_table(raw, "othertable")  # other names are free


async def test_durable_table_level_writes_survive_restart(tmp_path: Path) -> None:
    config = StubConfig(location=tmp_path / "t")
    acl = (
        "<SignedIdentifiers><SignedIdentifier><Id>readers</Id><AccessPolicy>"
        "<Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>"
    )
    props_doc = "<StorageServiceProperties><Cors/></StorageServiceProperties>"
    async with StubServer(config) as stub, aiohttp.ClientSession() as session:
        raw = RawClient(session, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        await make_table(raw, "dropped")
        r = await raw.request("PUT", "/mytable", query={"comp": "acl"}, body=acl)
        assert r.status == 204, r.body
        q = {"restype": "service", "comp": "properties"}
        r = await raw.request("PUT", "/", query=q, body=props_doc)
        assert r.status == 202, r.body
        r = await raw.request("DELETE", "/Tables('dropped')", headers={"Accept": JSON_MINIMAL})
        assert r.status == 204
    async with StubServer(config) as again, aiohttp.ClientSession() as session:
        raw = RawClient(session, again.endpoint, DEV_ACCOUNT, DEV_KEY)
        r = await raw.request("GET", "/Tables", headers={"Accept": JSON_MINIMAL})
        assert [t["TableName"] for t in r.json()["value"]] == ["mytable"]
        r = await raw.request("GET", "/mytable", query={"comp": "acl"})
        assert b"<Id>readers</Id>" in r.body
        r = await raw.request("GET", "/", query={"restype": "service", "comp": "properties"})
        assert r.status == 200


async def test_account_sas_for_another_service_is_refused(raw: RawClient) -> None:
    """An account SAS whose ss lacks t: 403 AuthorizationServiceMismatch (the SDK always
    signs ss=t, so this one is signed by hand)."""
    import base64
    import hashlib
    import hmac
    from urllib.parse import urlencode

    await make_table(raw)
    fields = {
        "sv": "2019-02-02",
        "ss": "bq",
        "srt": "sco",
        "sp": "rl",
        "se": "2099-01-01T00:00:00Z",
        "spr": "https,http",
    }
    sts = (
        "\n".join(
            [
                DEV_ACCOUNT,
                fields["sp"],
                fields["ss"],
                fields["srt"],
                "",
                fields["se"],
                "",
                fields["spr"],
                fields["sv"],
            ]
        )
        + "\n"
    )
    mac = hmac.new(base64.b64decode(DEV_KEY), sts.encode(), hashlib.sha256).digest()
    query = urlencode({**fields, "sig": base64.b64encode(mac).decode()})
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_MINIMAL}, auth="none", raw_query=query
    )
    assert (r.status, r.code) == (403, "AuthorizationServiceMismatch"), r.body
    fields["ss"] = "t"
    sts = sts.replace("\nbq\n", "\nt\n")
    mac = hmac.new(base64.b64decode(DEV_KEY), sts.encode(), hashlib.sha256).digest()
    query = urlencode({**fields, "sig": base64.b64encode(mac).decode()})
    r = await raw.request(
        "GET", "/mytable()", headers={"Accept": JSON_MINIMAL}, auth="none", raw_query=query
    )
    assert r.status == 200, r.body


async def test_durable_disk_failure_answers_500_and_applies_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from azt_server_stub import _store

    async with (
        StubServer(StubConfig(location=tmp_path / "d")) as stub,
        aiohttp.ClientSession() as s,
    ):
        raw = RawClient(s, stub.endpoint, DEV_ACCOUNT, DEV_KEY)
        await make_table(raw)
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "kept"})

        def full(*args: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(_store.SqliteStore, "write_entity_groups", full)
        results = await asyncio.gather(
            *(
                raw.request(
                    "POST",
                    "/mytable",
                    headers=JSON_HEADERS,
                    body=json.dumps({"PartitionKey": "p", "RowKey": f"n{i}"}),
                    allow_internal_error=True,
                )
                for i in range(5)
            )
        )
        assert {(r.status, r.code) for r in results} == {(500, "InternalError")}
        monkeypatch.undo()
        assert await _row_keys(raw) == ["kept"]
        await insert(raw, "mytable", {"PartitionKey": "p", "RowKey": "after"})  # recovers
        assert await _row_keys(raw) == ["after", "kept"]
