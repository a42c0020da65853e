"""Fault injection: rule syntax, triggers with a seeded RNG, matching, and the middleware
over HTTP (errors rendered as the service does, drops before and after apply, latency)."""

from __future__ import annotations

import argparse
import asyncio
import random
import re
from unittest import mock
from xml.etree import ElementTree

import aiohttp
import pytest
from aiohttp.streams import StreamReader
from aiohttp.test_utils import make_mocked_request

from azt_server_stub.addressing import Kind
from azt_server_stub.cli import add_fault_arguments, faults_from_args
from azt_server_stub.realism.fault_middleware import CONTROL_PATH
from azt_server_stub.realism.faults import (
    FaultInjector,
    FaultKind,
    FaultRule,
    RequestMatch,
    make_match,
    parse_duration,
    parse_fault,
)
from azt_server_stub.realism.inspection import BUSY_MESSAGES, RequestInfo, describe_request
from tests.realism.support import batch_body, raw_client, realism_stub

TABLE = "faulty"
METADATA_NS = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"


def info(method: str = "GET", table: str | None = "t", path: str | None = None) -> RequestInfo:
    raw_path = path or f"/devstoreaccount1/{table}()"
    kind = Kind.COLLECTION if table else Kind.TABLES
    return RequestInfo(method, raw_path, "devstoreaccount1", kind, table, None)


# --- syntax -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "kind", "rate", "nxt", "every"),
    [
        ("503:20%", FaultKind.BUSY, 0.2, None, None),
        ("busy:0.25", FaultKind.BUSY, 0.25, None, None),
        ("500:next=3", FaultKind.INTERNAL_ERROR, None, 3, None),
        ("internal-error:every=4", FaultKind.INTERNAL_ERROR, None, None, 4),
        ("timeout", FaultKind.TIMEOUT, None, None, None),
        ("OperationTimedOut:1", FaultKind.TIMEOUT, 1.0, None, None),
        ("timeout-after:next=1", FaultKind.TIMEOUT_AFTER, None, 1, None),
        ("drop-before:5%", FaultKind.DROP_BEFORE, 0.05, None, None),
        ("drop:0", FaultKind.DROP_BEFORE, 0.0, None, None),
        ("drop-after:0.1", FaultKind.DROP_AFTER, 0.1, None, None),
    ],
)
def test_parse_kinds_and_triggers(
    spec: str, kind: FaultKind, rate: float | None, nxt: int | None, every: int | None
) -> None:
    rule = parse_fault(spec)
    assert (rule.kind, rule.rate, rule.next, rule.every) == (kind, rate, nxt, every)
    assert rule.match == RequestMatch()
    assert parse_fault(rule.describe()).describe() == rule.describe()


def test_parse_conditions() -> None:
    rule = parse_fault("drop-after:next=2@writes,method=post|Put,table=Orders|items")
    assert rule.match.only == "writes"
    assert rule.match.methods == frozenset({"POST", "PUT"})
    assert rule.match.tables == frozenset({"orders", "items"})
    path_rule = parse_fault("busy@reads,path=t\\(PartitionKey='a,b'")
    assert path_rule.match.only == "reads"
    assert path_rule.match.path is not None
    assert path_rule.match.path.pattern == "t\\(PartitionKey='a,b'"


def test_parse_latency() -> None:
    rule = parse_fault("latency=50ms:0.5@method=GET")
    assert (rule.kind, rule.delay, rule.rate) == (FaultKind.LATENCY, 0.05, 0.5)
    assert rule.describe() == "latency=50ms:0.5@method=GET"
    assert parse_duration("1.5s") == 1.5
    assert parse_duration(".5") == 0.5


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty"),
        ("explode:0.1", "unknown fault kind"),
        ("busy:1.5", "out of range"),
        ("busy:abc", "not a probability"),
        ("busy:next=x", "integer"),
        ("busy:sometimes=3", "unknown trigger"),
        ("busy@weekends", "unknown condition"),
        ("latency", "needs a delay"),
        ("latency=fast", "not a duration"),
        ("busy=3", "unknown ServerBusy variant"),
        ("drop-after=3", "takes no"),
        ("busy:next=-1", "next must be"),
        ("busy:every=0", "every must be"),
        ("busy@path=(", "bad path pattern"),
    ],
)
def test_parse_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_fault(spec)


def test_rule_validation() -> None:
    with pytest.raises(ValueError, match="at most one"):
        FaultRule(FaultKind.BUSY, rate=0.5, next=2)
    with pytest.raises(ValueError, match="latency rules only"):
        FaultRule(FaultKind.BUSY, delay=1.0)
    with pytest.raises(ValueError, match="only must be"):
        RequestMatch(only="sometimes")  # type: ignore[arg-type]


def test_command_line() -> None:
    parser = argparse.ArgumentParser()
    add_fault_arguments(parser)
    assert faults_from_args(parser.parse_args([])) is None
    args = parser.parse_args(
        [
            *("--fault", "503:20%", "--fault", "drop-after:0.1@writes"),
            *("--latency", "50ms:0.5", "--fault-seed", "9"),
        ]
    )
    injector = faults_from_args(args)
    assert injector is not None
    assert [r.describe() for r in injector.rules] == [
        "busy:0.2",
        "drop-after:0.1@writes",
        "latency=50ms:0.5",
    ]
    with pytest.raises(ValueError):
        faults_from_args(parser.parse_args(["--fault", "nonsense"]))


# --- decisions ----------------------------------------------------------------------------


def test_next_n_then_spent() -> None:
    inj = FaultInjector()
    rule = inj.fail_next(FaultKind.TIMEOUT, 2)
    outcomes = [inj.decide(info()).outcome for _ in range(4)]
    assert outcomes == [rule, rule, None, None]
    assert (rule.injected, rule.spent, rule.remaining) == (2, True, 0)
    assert inj.counters == {FaultKind.TIMEOUT: 2}


def test_every_kth_counts_matching_requests_only() -> None:
    inj = FaultInjector()
    rule = inj.fail_every("busy", 3, methods=["PUT"])
    hits = []
    for i in range(12):
        method = "PUT" if i % 2 == 0 else "GET"
        hits.append(inj.decide(info(method)).outcome is rule)
    # PUTs are requests 0, 2, 4, ...; every third PUT is hit: PUT #3 (i=4), #6 (i=10)
    assert [i for i, hit in enumerate(hits) if hit] == [4, 10]
    assert (rule.seen, rule.injected) == (6, 2)


def test_rate_is_reproducible_with_a_seed() -> None:
    def run(seed: int) -> list[bool]:
        inj = FaultInjector(seed=seed)
        inj.fail_rate("503", 0.2)
        return [inj.decide(info()).outcome is not None for _ in range(500)]

    first, again, other = run(11), run(11), run(12)
    assert first == again
    assert first != other
    assert 60 < sum(first) < 140  # 20 % of 500 = 100; far outside this is a broken RNG use


def test_rate_uses_the_given_rng() -> None:
    class Fixed(random.Random):
        def random(self) -> float:
            return 0.3

    inj = FaultInjector(rng=Fixed())
    low = inj.fail_rate("busy", 0.3)  # 0.3 < 0.3 is false: never fires
    high = inj.fail_rate("timeout", 0.31)
    assert inj.decide(info()).outcome is high
    assert (low.seen, low.injected, high.injected) == (1, 0, 1)


def test_first_outcome_wins_and_latency_adds_up() -> None:
    inj = FaultInjector()
    slow = inj.add_latency(0.01)
    busy = inj.fail_next("busy", 1)
    timeout = inj.fail_next("timeout", 1)
    slower = inj.add_latency(0.02, methods=["GET"])
    first = inj.decide(info("GET"))
    assert first.outcome is busy
    assert first.delay == pytest.approx(0.03)
    assert timeout.seen == 0  # not consulted once busy decided the request
    second = inj.decide(info("PUT"))
    assert second.outcome is timeout
    assert second.delay == pytest.approx(0.01)
    assert (slow.injected, slower.injected) == (2, 1)
    assert inj.counters == {FaultKind.LATENCY: 3, FaultKind.BUSY: 1, FaultKind.TIMEOUT: 1}
    assert inj.total_delay == pytest.approx(0.04)
    assert [(f.kind, f.method) for f in inj.log][:2] == [
        (FaultKind.LATENCY, "GET"),
        (FaultKind.BUSY, "GET"),
    ]


def test_matching() -> None:
    m = make_match(tables=["Orders"], only="writes", path=r"PartitionKey='a'")
    put = RequestInfo(
        "PUT",
        "/acct/orders(PartitionKey='a',RowKey='1')",
        "acct",
        Kind.ENTITY,
        "ORDERS",
        ("a", "1"),
    )
    assert m.matches(put)
    assert not m.matches(RequestInfo("GET", put.raw_path, "acct", Kind.ENTITY, "orders", None))
    assert not m.matches(
        RequestInfo(
            "PUT", "/acct/orders(PartitionKey='b',RowKey='1')", "acct", Kind.ENTITY, "orders", None
        )
    )
    assert not m.matches(RequestInfo("PUT", put.raw_path, "acct", Kind.ENTITY, "other", None))
    assert not m.matches(RequestInfo("PUT", put.raw_path, "acct", Kind.BATCH, None, None))
    reads = make_match(only="reads")
    assert reads.matches(info("GET"))
    assert not reads.matches(info("MERGE"))
    assert make_match(table="x").tables == frozenset({"x"})


def test_suspended_and_disabled() -> None:
    inj = FaultInjector()
    rule = inj.fail_rate("busy", 1.0)
    with inj.suspended():
        assert inj.decide(info()).outcome is None
    assert rule.seen == 0
    assert inj.decide(info()).outcome is rule
    inj.clear()
    assert inj.decide(info()).outcome is None
    assert inj.counters[FaultKind.BUSY] == 1
    inj.reset_counters()
    assert not inj.counters
    assert not inj.log


# --- over HTTP ------------------------------------------------------------------------------


async def test_injected_errors_are_rendered_like_the_service() -> None:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        cases = [
            ("busy", 503, "ServerBusy", "The server is currently unable to receive requests."),
            ("internal-error", 500, "InternalError", "The server encountered an internal error."),
            ("timeout", 500, "OperationTimedOut", "The operation could not be completed within"),
        ]
        for n, (kind, status, code, text) in enumerate(cases):
            inj.fail_next(kind, 1, only="writes")
            answer = await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": str(n)})
            assert (answer.status, answer.code) == (status, code)
            body = answer.json()["odata.error"]
            assert body["code"] == code
            assert body["message"]["value"].startswith(text)
            assert "\nRequestId:" in body["message"]["value"]
            assert answer.headers["x-ms-request-id"]
            assert "Retry-After" not in answer.headers
            # not applied
            assert (await raw.get(TABLE, "p", str(n))).status == 404
        # a custom message (the account-limit variant of ServerBusy)
        inj.add(
            FaultRule(
                FaultKind.BUSY, next=1, message="Operations per second is over the account limit."
            )
        )
        answer = await raw.get(TABLE, "p", "0")
        assert answer.status == 503
        assert answer.json()["odata.error"]["message"]["value"].startswith("Operations per second")
    assert inj.counters == {FaultKind.BUSY: 2, FaultKind.INTERNAL_ERROR: 1, FaultKind.TIMEOUT: 1}


ERROR_TEXT = "The server is currently unable to receive requests. Please retry your request."


@pytest.mark.parametrize(
    ("accept", "ctype", "style"),
    [
        (
            "application/json;odata=minimalmetadata",
            "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
            "json",
        ),
        (
            "application/json;odata=nometadata",
            "application/json;odata=nometadata;streaming=true;charset=utf-8",
            "json",
        ),
        (
            "application/json;odata=fullmetadata",
            "application/json;odata=fullmetadata;streaming=true;charset=utf-8",
            "json",
        ),
        ("application/atom+xml", "application/xml;charset=utf-8", "odata-xml"),
        ("", "application/xml;charset=utf-8", "odata-xml"),
    ],
)
async def test_injected_busy_body_follows_accept_and_echoes_the_version(
    accept: str, ctype: str, style: str
) -> None:
    """The 503 is the service's for every negotiated format: status, x-ms-error-code, the
    body's code and message, the request's own x-ms-version (not the stub's newest)."""
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        inj.fail_next("busy", 1)
        answer = await raw.request("GET", f"/{TABLE}()", headers={"Accept": accept})
        assert (answer.status, answer.code) == (503, "ServerBusy")
        assert answer.headers["Content-Type"] == ctype
        assert answer.headers["x-ms-version"] == "2019-02-02"
        rid = answer.headers["x-ms-request-id"]
        if style == "json":
            error = answer.json()["odata.error"]
            assert error["code"] == "ServerBusy"
            assert error["message"]["lang"] == "en-US"
            text = error["message"]["value"]
        else:
            doc = ElementTree.fromstring(answer.body)
            assert doc.tag == f"{{{METADATA_NS}}}error"
            assert doc.findtext(f"{{{METADATA_NS}}}code") == "ServerBusy"
            text = doc.findtext(f"{{{METADATA_NS}}}message") or ""
        assert re.fullmatch(
            re.escape(ERROR_TEXT) + r"\nRequestId:" + re.escape(rid) + r"\nTime:\S+Z", text
        )


@pytest.mark.parametrize(
    ("path", "query"),
    [
        (f"/{TABLE}", {"comp": "acl"}),
        ("/", {"restype": "service", "comp": "properties"}),
        ("/", {"restype": "service", "comp": "stats"}),
    ],
)
async def test_injected_busy_on_storage_operations_is_storage_xml(
    path: str, query: dict[str, str]
) -> None:
    """ACL and service operations answer errors in the Storage XML style, injected ones too."""
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        inj.fail_next("busy", 1)
        answer = await raw.request("GET", path, query=query)
        assert (answer.status, answer.code) == (503, "ServerBusy")
        assert answer.headers["Content-Type"].startswith("application/xml")
        doc = ElementTree.fromstring(answer.body)
        assert doc.tag == "Error"
        assert doc.findtext("Code") == "ServerBusy"
        assert (doc.findtext("Message") or "").startswith(ERROR_TEXT + "\nRequestId:")
        inj.fail_next("busy", 1)
        head = await raw.request("HEAD", f"/{TABLE}()")
        assert (head.status, head.code, head.body) == (503, "ServerBusy", b"")


async def test_timeout_after_applies_the_write() -> None:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        inj.fail_next("timeout-after", 1, methods=["POST"])
        answer = await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": "r", "n": 1})
        assert (answer.status, answer.code) == (500, "OperationTimedOut")
        stored = await raw.get(TABLE, "p", "r")
        assert stored.status == 200
        assert stored.json()["n"] == 1


async def test_drop_before_does_not_apply_drop_after_does() -> None:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        before = inj.fail_next("drop-before", 1, only="writes")
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": "before"})
        assert (await raw.get(TABLE, "p", "before")).status == 404
        after = inj.fail_next("drop-after", 1, only="writes")
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": "after"})
        assert (await raw.get(TABLE, "p", "after")).status == 200
        # the retry of the lost insert meets the service's own conflict
        again = await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": "after"})
        assert (again.status, again.code) == (409, "EntityAlreadyExists")
        # a drop after a refused write still drops (the answer is lost either way)
        inj.fail_next("drop-after", 1, only="writes")
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": "after"})
        # the server keeps serving other connections
        assert (await raw.get(TABLE, "p", "after")).status == 200
    assert (before.injected, after.injected) == (1, 1)
    assert inj.counters[FaultKind.DROP_AFTER] == 2


async def test_drop_after_a_batch_applies_it() -> None:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        url = f"{stub.endpoint}/devstoreaccount1/{TABLE}"
        ctype, body = batch_body(url, [("POST", "b", str(i), {"i": i}) for i in range(5)])
        rule = inj.fail_next("drop-after", 1, table=TABLE.upper())  # matched from the body
        with pytest.raises(aiohttp.ServerDisconnectedError):
            await raw.request("POST", "/$batch", headers={"Content-Type": ctype}, body=body)
        assert rule.injected == 1
        for i in range(5):
            assert (await raw.get(TABLE, "b", str(i))).status == 200
        # a batch for another table does not match
        await raw.create_table("elsewhere")
        other_url = f"{stub.endpoint}/devstoreaccount1/elsewhere"
        ctype, body = batch_body(other_url, [("POST", "b", "1", {})])
        inj.fail_next("drop-before", 1, table=TABLE)
        answer = await raw.request("POST", "/$batch", headers={"Content-Type": ctype}, body=body)
        assert answer.status == 202


async def test_latency_uses_the_injected_sleep() -> None:
    slept: list[float] = []

    async def record(seconds: float) -> None:
        slept.append(seconds)

    inj = FaultInjector(sleep=record)
    inj.add_latency(0.25, methods=["GET"])
    inj.add("latency=100ms:every=2")
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)  # POST: every=2 rule sees it first (no hit)
        for _ in range(2):
            answer = await raw.request("GET", "/Tables")
            assert answer.status == 200
    assert slept == [pytest.approx(0.35), pytest.approx(0.25)]


async def test_tunnelled_method_is_matched_as_the_effective_one() -> None:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        await raw.upsert(TABLE, "p", "r", {"n": 1})
        inj.fail_next("busy", 1, methods=["MERGE"])
        answer = await raw.request(
            "POST",
            f"/{TABLE}(PartitionKey='p',RowKey='r')",
            headers={"X-HTTP-Method": "MERGE", "Content-Type": "application/json", "If-Match": "*"},
            body='{"m": 2}',
        )
        assert (answer.status, answer.code) == (503, "ServerBusy")
        assert "m" not in (await raw.get(TABLE, "p", "r")).json()


async def test_control_endpoint() -> None:
    inj = FaultInjector(control=True)
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        session = raw.session
        url = f"{stub.endpoint}{CONTROL_PATH}"
        async with session.post(url, data=b"busy:next=1@writes\nlatency=1ms:every=100\n") as r:
            assert r.status == 201
            state = await r.json()
        assert [rule["spec"] for rule in state["rules"]] == [
            "busy:next=1@writes",
            "latency=1ms:every=100",
        ]
        answer = await raw.request(
            "POST",
            "/Tables",
            headers={"Content-Type": "application/json"},
            body='{"TableName": "controlled"}',
        )
        assert (answer.status, answer.code) == (503, "ServerBusy")
        async with session.get(url) as r:
            state = await r.json()
        assert state["counters"] == {"busy": 1}
        assert state["rules"][0] == {"spec": "busy:next=1@writes", "seen": 1, "injected": 1}
        async with session.post(url, data=b"busy:often") as r:
            assert r.status == 400
            assert "not a probability" in (await r.json())["error"]
        assert len(inj.rules) == 2  # nothing added by the refused request
        async with session.put(url + "/enabled", data=b"false") as r:
            assert r.status == 200
        assert not inj.enabled
        async with session.put(url + "/enabled", data=b"maybe") as r:
            assert r.status == 400
        async with session.delete(url + "?counters=1") as r:
            assert r.status == 204
        assert inj.rules == []
        assert not inj.counters
        async with session.get(url + "/nothing") as r:
            assert r.status == 404
        async with session.patch(url) as r:
            assert r.status == 405


async def test_control_endpoint_is_off_by_default() -> None:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        async with raw.session.get(f"{stub.endpoint}{CONTROL_PATH}") as r:
            status, code = r.status, r.headers.get("x-ms-error-code")
        assert status >= 400
        assert code  # the service's own refusal: no control endpoint


def test_docstring_examples() -> None:
    import doctest

    from azt_server_stub.realism import faults as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 10


async def _insert_partition_key(body: bytes, content_type: str | None) -> str | None:
    """The PartitionKey the realism layers see in an insert request with ``body``."""
    reader = StreamReader(mock.Mock(), 2**16, loop=asyncio.get_running_loop())
    reader.feed_data(body)
    reader.feed_eof()
    headers = {"Content-Length": str(len(body))}
    if content_type is not None:
        headers["Content-Type"] = content_type
    request = make_mocked_request("POST", "/devstoreaccount1/t", headers=headers, payload=reader)
    info = await describe_request(request, inspect_body=True)
    assert (info.kind, info.table, info.inspected) == (Kind.COLLECTION, "t", True)
    return info.partition_key


async def test_insert_partition_key_from_json_and_atom_bodies() -> None:
    atom = (
        b'<?xml version="1.0" encoding="utf-8"?>'
        b'<entry xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" '
        b'xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" '
        b'xmlns="http://www.w3.org/2005/Atom"><title /><author><name /></author><id />'
        b'<content type="application/xml"><m:properties>'
        b"<d:PartitionKey>atom-pk</d:PartitionKey><d:RowKey>r</d:RowKey>"
        b"</m:properties></content></entry>"
    )
    assert await _insert_partition_key(atom, "application/atom+xml") == "atom-pk"
    json_pk = await _insert_partition_key(b'{"PartitionKey": "json-pk"}', "application/json")
    assert json_pk == "json-pk"
    assert await _insert_partition_key(b'{"PartitionKey": 3}', "application/json") is None
    assert await _insert_partition_key(b"[1, 2]", "application/json") is None
    assert await _insert_partition_key(b"not json", None) is None
    assert await _insert_partition_key(b"<entry", "application/atom+xml") is None


def test_schedule_trigger_fires_at_the_given_request_numbers() -> None:
    rule = parse_fault("timeout:at=2|5|6@writes")
    assert (rule.at, rule.match.only, rule.describe()) == (
        frozenset({2, 5, 6}),
        "writes",
        "timeout:at=2|5|6@writes",
    )
    inj = FaultInjector([rule])
    read, write = info("GET"), info("POST")
    fired = []
    for _ in range(8):
        assert inj.decide(read).outcome is None  # reads are not counted by a writes rule
        fired.append(inj.decide(write).outcome is rule)
    assert fired == [False, True, False, False, True, True, False, False]
    assert (rule.seen, rule.injected, rule.spent) == (6, 3, True)
    for bad in ("busy:at=", "busy:at=0|2", "busy:at=x", "busy:at=1:0.5"):
        with pytest.raises(ValueError):
            parse_fault(bad)
    with pytest.raises(ValueError, match="at most one"):
        FaultRule(FaultKind.BUSY, rate=0.5, at=frozenset({1}))
    parser = argparse.ArgumentParser()
    add_fault_arguments(parser)
    parsed = faults_from_args(parser.parse_args(["--fault", "drop-after:at=1|3@method=PUT"]))
    assert parsed is not None
    assert parsed.rules[0].at == frozenset({1, 3})


async def test_schedule_over_http() -> None:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        rule = inj.fail_at("busy", [2, 3], only="writes")
        statuses = [
            (await raw.insert(TABLE, {"PartitionKey": "p", "RowKey": str(n)})).status
            for n in range(5)
        ]
        assert statuses == [204, 503, 503, 204, 204]
        assert (rule.injected, rule.spent) == (2, True)
        assert inj.counters == {FaultKind.BUSY: 2}


async def test_server_busy_variants_carry_the_service_texts() -> None:
    inj = FaultInjector()
    async with realism_stub(faults=inj) as stub, raw_client(stub) as raw:
        await raw.create_table(TABLE)
        for variant, text in BUSY_MESSAGES.items():
            spec = "busy" if variant == "server" else f"busy={variant}"
            rule = inj.add(f"{spec}:next=1@reads")
            assert parse_fault(rule.describe()).message == rule.message
            answer = await raw.get(TABLE, "p", "r")
            assert (answer.status, answer.code) == (503, "ServerBusy")
            value = answer.json()["odata.error"]["message"]["value"]
            assert value.startswith(text + "\nRequestId:"), (variant, value)
    assert inj.counters == {FaultKind.BUSY: 4}
    with pytest.raises(ValueError, match="ServerBusy variant"):
        parse_fault("busy=tired")
    with pytest.raises(ValueError, match="no '=' argument"):
        parse_fault("timeout=account")
