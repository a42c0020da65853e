"""The single-entity request shortcuts answer as the general code does.

Each shortcut on the request path (the Shared Key check without the RequestView
layers, the HMAC over pre-keyed SHA-256 states, the memo of a request's addressing)
is compared here with the code it stands in for, on generated input: whenever the
shortcut answers, its answer equals the general code's (and the general code still
decides every refusal, with its own error).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import re
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as hs
from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy

from azt_server_stub.auth import Authenticator, AuthOptions, Principal, RequestView
from azt_server_stub.auth._common import Signer
from azt_server_stub.errors import StubError


def ref_signature(key: bytes, text: str) -> str:
    message = text.encode("utf-8", "surrogateescape")
    return base64.b64encode(hmac.new(key, message, hashlib.sha256).digest()).decode("ascii")


def outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args))
    except StubError as err:
        return ("error", (err.status, err.code, dict(err.details), err.message))


# --- the HMAC ------------------------------------------------------------------------------

keys = hs.binary(min_size=0, max_size=200)
texts = hs.text(max_size=300) | hs.sampled_from(["", "GET\n\n\nMon\n/a/a/t", "\udcff\udc80x"])


@settings(max_examples=600, deadline=None)
@given(hs.lists(keys, min_size=1, max_size=2), texts, hs.text(max_size=4))
def test_signer_matches_the_hmac_module(key_list: list[bytes], text: str, noise: str) -> None:
    signer = Signer(key_list)
    for key in key_list:
        assert signer.matches(text, ref_signature(key, text))
        assert signer.matches(text, ref_signature(key, text) + noise) is (noise == "")
        assert signer.matches(text + noise, ref_signature(key, text)) is (noise == "")
    other = ref_signature(b"another key" * 9, text)
    assert signer.matches(text, other) is any(ref_signature(k, text) == other for k in key_list)
    assert signer.matches(text, "") is False


@settings(max_examples=200, deadline=None)
@given(hs.integers(60, 70), texts)
def test_signer_keys_around_the_block_size(size: int, text: str) -> None:
    key = bytes(range(size))
    assert Signer([key]).matches(text, ref_signature(key, text))


# --- the Shared Key shortcut ---------------------------------------------------------------

KEY1, KEY2 = b"k" * 64, b"second key"
ACCOUNTS = {"acct": [KEY1, KEY2], "acct-secondary": [KEY1], "empty": [], "other": [KEY2]}
NOW = dt.datetime(2026, 11, 26, 1, 0, 0, tzinfo=dt.UTC)
DATES = [
    "Thu, 26 Nov 2026 01:00:00 GMT",
    "Thu, 26 Nov 2026 00:45:00 GMT",  # exactly the skew limit
    "Thu, 26 Nov 2026 00:44:59 GMT",  # past it
    "Thu, 26 Nov 2026 01:15:01 GMT",  # ahead
    "Thu, 26 Nov 2026 01:14:00 GMT",
    "26 Nov 2026 01:00:00 +0000",
    "not a date",
    "",
]
PATHS = [
    "/acct/t",
    "/acct/t(PartitionKey='p',RowKey='r')",
    "/acct-secondary/t",
    "/acct-secondary",
    "/acct-secondaryx/t",
    "/t()",
    "/other/Tables",
    "/acct/caf%C3%A9",
]


@hs.composite
def requests(draw: hs.DrawFn) -> tuple[Any, ...]:
    typical = draw(hs.booleans())  # a well-formed request: mostly accepted
    account = draw(hs.sampled_from(["acct", "other", "empty", "missing", "acct-secondary"]))
    if typical:
        account = "acct"
    method = draw(hs.sampled_from(["GET", "POST", "PUT", "MERGE", "DELETE"]))
    raw_path = draw(hs.sampled_from(PATHS))
    query: MultiDict[str] = MultiDict()
    for name in draw(hs.lists(hs.sampled_from(["comp", "sig", "sv", "$top", "comp"]), max_size=3)):
        query.add(name, draw(hs.sampled_from(["acl", "1", "", "x y"])))
    headers: CIMultiDict[str] = CIMultiDict()
    date = draw(hs.sampled_from(DATES[:2] if typical else DATES))
    where = draw(hs.sampled_from(["x-ms-date", "Date", "both", "empty-x-ms-date"]))
    if typical and where == "empty-x-ms-date":
        where = "x-ms-date"
    if where in ("x-ms-date", "both"):
        headers["x-ms-date"] = date
    if where in ("Date", "both"):
        headers["Date"] = draw(hs.sampled_from(DATES))
    if where == "empty-x-ms-date":
        headers["x-ms-date"] = ""
        headers["Date"] = date
    for name in ("Content-Type", "Content-MD5"):
        if draw(hs.booleans()):
            headers[name] = draw(hs.sampled_from(["application/json", "", "x"]))
    lite = draw(hs.booleans())
    signed_date = headers.get("x-ms-date") or headers.get("Date") or ""
    form = "sent" if typical else draw(hs.sampled_from(["sent", "dropped", "wrong-account"]))
    prefix = {"sent": "/acct", "dropped": "/acct", "wrong-account": "/other"}[form]
    path = raw_path
    if form == "dropped" and raw_path.startswith("/acct-secondary"):
        path = "/acct" + raw_path[len("/acct-secondary") :]
    comp = query.get("comp")
    resource = prefix + path + ("" if comp is None else "?comp=" + comp)
    if lite:
        sts = signed_date + "\n" + resource
    else:
        sts = "\n".join(
            [
                method,
                headers.get("Content-MD5", ""),
                headers.get("Content-Type", ""),
                signed_date,
                resource,
            ]
        )
    key = draw(hs.sampled_from([KEY1, KEY2] if typical else [KEY1, KEY2, b"wrong"]))
    signature = ref_signature(key, sts)
    name = account if typical else draw(hs.sampled_from([account, "acct", "other", "", "ACCT"]))
    scheme = draw(
        hs.sampled_from(
            ["SharedKey", "SharedKeyLite"] if lite else ["SharedKey", "sharedkey", "Bearer"]
        )
    )
    shapes = ["plain", "plain", "spaces", "trailing", "no-colon", "none"]
    shape = "plain" if typical else draw(hs.sampled_from(shapes))
    if shape != "none":
        value = {
            "plain": f"{scheme} {name}:{signature}",
            "spaces": f"  {scheme}   {name}:{signature} ",
            "trailing": f"{scheme} {name}:{signature}\t",
            "no-colon": f"{scheme} {name}{signature}",
        }[shape]
        headers["Authorization"] = value
        if draw(hs.integers(0, 9)) == 0:
            headers.add("Authorization", value)
    skew_check = draw(hs.booleans())
    return account, method, raw_path, query, headers, skew_check


@settings(max_examples=3000, deadline=None)
@given(requests())
def test_shared_key_shortcut_agrees_with_authenticate(request: tuple[Any, ...]) -> None:
    account, method, raw_path, query, headers, skew_check = request
    options = AuthOptions(check_clock_skew=skew_check)
    auth = Authenticator(ACCOUNTS, lambda a, t: [], options, clock=lambda: NOW)
    query_proxy = MultiDictProxy(query)
    header_proxy = CIMultiDictProxy(headers)
    view = RequestView(method, raw_path, query_proxy, header_proxy, "http", "127.0.0.1")
    general = outcome(auth.authenticate, view, account, None)
    for _ in range(2):  # and again, from the memo of the last verified signature
        fast = auth.shared_key(method, raw_path, query_proxy, header_proxy, account)
        if fast is not None:
            assert general == ("ok", fast)
            assert isinstance(fast, Principal)


def test_shared_key_shortcut_takes_the_common_request() -> None:
    auth = Authenticator(ACCOUNTS, lambda a, t: [], clock=lambda: NOW)
    date = "Thu, 26 Nov 2026 01:00:00 GMT"
    sts = f"POST\n\napplication/json\n{date}\n/acct/acct/t"
    headers = CIMultiDict(
        {
            "x-ms-date": date,
            "Content-Type": "application/json",
            "Authorization": "SharedKey acct:" + ref_signature(KEY2, sts),
        }
    )
    query = MultiDictProxy(MultiDict[str]())
    got = auth.shared_key("POST", "/acct/t", query, CIMultiDictProxy(headers), "acct")
    assert got == Principal("acct", "SharedKey")
    # a key rotated away is no longer accepted, not even from the memo
    proxy = CIMultiDictProxy(headers)
    keys = {"acct": [KEY2]}
    live = Authenticator(keys, lambda a, t: [], clock=lambda: NOW)
    assert live.shared_key("POST", "/acct/t", query, proxy, "acct") is not None
    keys["acct"] = [KEY1]
    assert live.shared_key("POST", "/acct/t", query, proxy, "acct") is None
    # also a key list changed in place (the signer is kept with a copy of the keys)
    keys["acct"] = [KEY2]
    assert live.shared_key("POST", "/acct/t", query, proxy, "acct") is not None
    keys["acct"][0] = KEY1
    assert live.shared_key("POST", "/acct/t", query, proxy, "acct") is None
    keys["acct"].append(KEY2)
    assert live.shared_key("POST", "/acct/t", query, proxy, "acct") is not None


def test_shared_key_shortcut_with_the_real_clock() -> None:
    """The default clock: dates well inside the skew window pass, well outside do not,
    both as authenticate decides; the remembered window follows a changed limit."""
    from email.utils import formatdate

    auth = Authenticator(ACCOUNTS, lambda a, t: [])
    query = MultiDictProxy(MultiDict[str]())
    now = dt.datetime.now(dt.UTC).timestamp()
    for limit in (900, 900, 60, 900):
        auth.options.max_clock_skew_seconds = limit
        cases = [(0, True), (limit - 5, True), (5 - limit, True)]
        cases += [(limit + 5, False), (-limit - 5, False)]
        for offset, accepted in cases:
            date = formatdate(now - offset, usegmt=True)
            sts = f"GET\n\n\n{date}\n/acct/acct/t()"
            signed = "SharedKey acct:" + ref_signature(KEY1, sts)
            headers = CIMultiDictProxy(CIMultiDict({"x-ms-date": date, "Authorization": signed}))
            view = RequestView("GET", "/acct/t()", query, headers, "http", "127.0.0.1")
            general = outcome(auth.authenticate, view, "acct", None)
            fast = auth.shared_key("GET", "/acct/t()", query, headers, "acct")
            assert (general[0] == "ok") is accepted
            assert (fast is not None) is accepted
            if fast is not None:
                assert general == ("ok", fast)


# --- the addressing memo -------------------------------------------------------------------

ROUTE_HOSTS = ["127.0.0.1:10002", "acct.table.localhost", "ACCT-secondary.table.x:1", "[::1]:9"]
ROUTE_HOSTS += ["localhost", "host.docker.internal:10002", "", "a..b"]
ROUTE_PIECES = ["devstoreaccount1", "acct-secondary", "Tables", "t()", "t", "$batch", "", "%C3%A9"]
ROUTE_PIECES += ["Tables('t')", "t(PartitionKey='a%27%27b',RowKey='')", "t('x')", "%ZZ", "a b"]
ROUTE_PIECES += ["t(PartitionKey='p',RowKey='r')", "t(RowKey='r',PartitionKey='p')", "$metadata"]
ROUTE_QUERIES = ["", "?", "?comp=acl", "?$filter=a+eq+%27b%27&$top=1", "?sv=x&sv=y", "#f", "?a#f"]
ROUTE_FRONTS = ["", "", "http://acct.table.core:1", "https://127.0.0.1:5"]


def general_route(request: Any, raw_target: str, product_style: bool) -> Any:
    from azt_server_stub.addressing import parse_resource, split_account
    from azt_server_stub.handlers.parsing import split_target
    from azt_server_stub.request_state import parse_query

    url_host, raw_path, _ = split_target(raw_target)
    addr = split_account.__wrapped__(
        url_host or request.host, raw_path, product_style=product_style
    )
    resource = parse_resource.__wrapped__(addr.resource)
    query = parse_query(request.rel_url.raw_query_string)
    return raw_path, addr, resource, list(query.items()), f"://{request.host}{addr.prefix}"


@settings(max_examples=1500, deadline=None)
@given(
    hs.sampled_from(ROUTE_HOSTS),
    hs.sampled_from(ROUTE_FRONTS),
    hs.lists(hs.sampled_from(ROUTE_PIECES) | hs.text(max_size=5), max_size=3),
    hs.sampled_from(ROUTE_QUERIES),
    hs.booleans(),
)
def test_addressing_memo_matches_the_general_steps(
    host: str, front: str, pieces: list[str], query: str, product_style: bool
) -> None:
    from aiohttp.test_utils import make_mocked_request

    from azt_server_stub.auth import Authenticator
    from azt_server_stub.backend import Backend
    from azt_server_stub.handlers import dispatch
    from azt_server_stub.request_state import ACCOUNT, Services

    raw_target = front + "/" + "/".join(pieces) + query
    services = Services(Backend(), Authenticator({}, lambda a, t: []))
    services.product_style_urls = product_style
    answers = []
    for _ in range(3):  # a miss, then the memo
        try:
            request = make_mocked_request("GET", raw_target, headers={"Host": host})
        except ValueError:
            return  # not a target aiohttp builds a request for
        expected = outcome(general_route, request, raw_target, product_style)
        request = make_mocked_request("GET", raw_target, headers={"Host": host})
        key = (raw_target, request.host, product_style)
        remembered = dispatch._ROUTES.get(key)
        try:
            route = remembered or dispatch._resolve(
                request, raw_target, request.host, services, "GET"
            )
        except StubError as err:
            got: tuple[str, Any] = ("error", (err.status, err.code, dict(err.details), err.message))
        else:
            got = (
                "ok",
                (
                    route.raw_path,
                    route.addr,
                    route.resource,
                    list(route.query.items()),
                    route.endpoint_tail,
                ),
            )
            if remembered is None:
                assert request.get(ACCOUNT) == route.addr.account
        assert got == expected
        answers.append(got)
    assert answers[0] == answers[1] == answers[2]


# --- single-entity bodies and ETags --------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(hs.lists(hs.integers(0, 3_155_378_975_999_999_999), max_size=4))
def test_entity_etag_matches_the_model(ticks: list[int]) -> None:
    from azt_server_stub.formats.json_feed import entity_etag
    from azt_server_stub.model import etag_for

    for value in ticks + ticks:  # then remembered
        assert entity_etag(value) == etag_for(value)


def ref_entity_body(call: Any, table: str, entity: Any, fmt: Any) -> bytes:
    """``entities._entity_body`` as it was: a writer's ``single``."""
    from azt_server_stub.formats import atom as atom_fmt
    from azt_server_stub.formats import json as json_fmt
    from azt_server_stub.formats.negotiation import Fmt
    from azt_server_stub.handlers import entities

    select, select_text = entities._select(call) if call.method == "GET" else (None, None)
    if fmt is Fmt.ATOM:
        return atom_fmt.AtomWriter(call.endpoint, call.account, table, select).single(entity)
    writer = json_fmt.EntityWriter(
        fmt, call.endpoint, call.account, table, select, form=call.flavor.json_form
    )
    return writer.single(entity, select_text)


def any_outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args))
    except Exception as err:  # the writers' own refusals (ValueError...) too
        return ("error", (type(err), str(err)))


def _entity_lists() -> Any:
    from tests.stub.test_page_fastpath import entity_lists

    return entity_lists()


@settings(max_examples=400, deadline=None)
@given(
    _entity_lists(),
    hs.sampled_from(["minimalmetadata", "nometadata", "fullmetadata", "atom"]),
    hs.sampled_from(["http://127.0.0.1:10002/devstoreaccount1", 'http://h/é"a', "https://a"]),
    hs.sampled_from(
        ["t", "Tablé", 'q"'],
    ),
    hs.sampled_from(["", "$select=RowKey", "$select=A,Größe,Missing", "$select=*", "$select="]),
    hs.sampled_from(["GET", "POST"]),
    hs.sampled_from(["storage", "cosmos"]),
)
def test_single_entity_bodies_match_the_writers(
    entities_: list[Any],
    fmt_name: str,
    endpoint: str,
    table: str,
    query: str,
    method: str,
    flavor: str,
) -> None:
    from types import SimpleNamespace

    from azt_server_stub.flavors import flavor_named
    from azt_server_stub.formats import atom as atom_fmt
    from azt_server_stub.formats import json_feed
    from azt_server_stub.formats.negotiation import Fmt
    from azt_server_stub.handlers import entities
    from azt_server_stub.request_state import parse_query

    call = SimpleNamespace(
        method=method,
        query=parse_query(query),
        version="2019-02-02",
        request=SimpleNamespace(headers=CIMultiDict[str]()),
        endpoint=endpoint,
        account="acct",
        flavor=flavor_named(flavor),
    )
    fmt = Fmt(fmt_name)
    # An AtomPub entry's <updated> is the clock's second: one second for both writers, or
    # a second that ticks between the two renders would tell them apart.
    now = atom_fmt._now_text()
    try:
        with mock.patch.object(atom_fmt, "_now_text", return_value=now):
            for e in entities_ + entities_[:2]:  # and again, from the remembered texts
                got = any_outcome(entities._entity_body, call, table, e, fmt)
                assert got == any_outcome(ref_entity_body, call, table, e, fmt)
    finally:
        json_feed.forget_texts()


# --- the response head ---------------------------------------------------------------------


def ref_render(request: Any, response: Any) -> tuple[bytes, bytes, bool]:
    """``front.render`` as it was: one f-string per line, from the request's properties."""
    from aiohttp import hdrs
    from aiohttp.helpers import rfc822_formatted_time
    from aiohttp.http import HttpVersion10, HttpVersion11

    from azt_server_stub.front_render import _EMPTY_BODY_STATUSES, web_server_software

    status = response.status
    method = request.method
    headers = response.headers
    body = response._body
    empty = status in _EMPTY_BODY_STATUSES or method == hdrs.METH_HEAD
    if status in _EMPTY_BODY_STATUSES:
        headers.popall(hdrs.CONTENT_LENGTH, None)
        length = 0
    elif hdrs.CONTENT_LENGTH in headers:
        length = int(headers[hdrs.CONTENT_LENGTH])
    else:
        length = len(body) if body else 0
        if length or method != hdrs.METH_HEAD:
            headers[hdrs.CONTENT_LENGTH] = str(length)
    if empty:
        headers.popall(hdrs.TRANSFER_ENCODING, None)
    elif length != 0:
        headers.setdefault(hdrs.CONTENT_TYPE, "application/octet-stream")
    if hdrs.DATE not in headers:
        headers[hdrs.DATE] = rfc822_formatted_time()
    headers.setdefault(hdrs.SERVER, web_server_software())
    keep_alive = response._keep_alive
    if keep_alive is None:
        keep_alive = request.keep_alive
    version = request.version
    if hdrs.CONNECTION not in headers:
        if keep_alive:
            if version == HttpVersion10:
                headers[hdrs.CONNECTION] = "keep-alive"
        elif version == HttpVersion11:
            headers[hdrs.CONNECTION] = "close"
    lines = [f"HTTP/{version[0]}.{version[1]} {status} {response.reason}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    text = "\r\n".join(lines)
    breaks = len(lines) - 1
    if text.count("\n") != breaks or text.count("\r") != breaks:
        raise ValueError("Newline or carriage return character detected in a header")
    head = (text + "\r\n\r\n").encode("utf-8")
    return head, (b"" if empty or not body else body), bool(keep_alive)


header_names = hs.sampled_from(["X-A", "x-a", "Content-Type", "Server", "Date", "Connection"])
header_names |= hs.sampled_from(["Content-Length", "Transfer-Encoding", "é", "A\nB", ""])
header_values = hs.sampled_from(["v", "", "a\r\nb", "close", "é", "0", "5"]) | hs.integers(0, 9)


@settings(max_examples=1500, deadline=None)
@given(
    hs.lists(hs.tuples(header_names, header_values), max_size=6),
    hs.sampled_from([200, 201, 204, 304, 404, 101]),
    hs.sampled_from(["GET", "HEAD", "POST"]),
    hs.sampled_from([None, b"", b"{}"]),
    hs.sampled_from([None, "Custom Reason"]),
    hs.booleans(),
    hs.booleans(),
    hs.booleans(),
)
def test_render_matches_the_reference(
    fields: list[tuple[str, Any]],
    status: int,
    method: str,
    body: bytes | None,
    reason: str | None,
    http10: bool,
    closing: bool,
    force_close: bool,
) -> None:
    from aiohttp import web
    from aiohttp.http import HttpVersion10, HttpVersion11
    from aiohttp.test_utils import make_mocked_request

    from azt_server_stub.front import render

    def front_render(request: Any, response: Any) -> tuple[bytes, bytes, bool]:
        return render(request._message, response)  # (the message the request was made of)

    outcomes = []
    for fn in (front_render, ref_render, front_render):  # (and the remembered status line)
        headers = {"Connection": "close"} if closing else None
        request = make_mocked_request(
            method, "/a/t", headers=headers, version=HttpVersion10 if http10 else HttpVersion11
        )
        response = web.Response(status=status, reason=reason, body=body)
        for name, value in fields:
            response.headers.add(name, value)
        if force_close:
            response.force_close()
        try:
            got: Any = fn(request, response)
        except Exception as err:
            got = (type(err), str(err))
        outcomes.append(got)
    masked_ = [
        x if not isinstance(x[0], bytes) else (re.sub(rb"Date: [^\r]*", b"", x[0]), *x[1:])
        for x in outcomes
    ]
    assert masked_[0] == masked_[1] == masked_[2]
