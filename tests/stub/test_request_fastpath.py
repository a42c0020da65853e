"""The per-request fast paths do what the straightforward code did.

Every request goes through the same few steps (the request date of a Shared Key
signature, the request id, the OData version headers, response negotiation, the
query). Each was made cheaper (a direct read of the common form with the general code
as the fallback, a memo of recent answers, a pool of request ids); each is compared
here with the code it replaced, kept below as the reference, on generated input: the
same result, or the same error.
"""

from __future__ import annotations

import datetime as dt
import gc
import os
import re
import uuid
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from random import Random
from typing import Any

import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as hs
from multidict import CIMultiDict

from azt_server_stub import addressing, flavors, model, read_limits
from azt_server_stub.auth import _common
from azt_server_stub.errors import StubError
from azt_server_stub.formats import negotiation
from azt_server_stub.formats.json_feed import entity_path
from azt_server_stub.formats.negotiation import Fmt
from azt_server_stub.handlers import call as call_mod
from azt_server_stub.handlers import parsing
from azt_server_stub.handlers.entities import entity_location
from azt_server_stub.request_state import ODATA_XML, parse_query
from azt_server_stub.versions import supports_format_option

# --- the reference: the code the fast paths replaced -------------------------------------


def ref_parse_http_date(value: str) -> dt.datetime | None:
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment


_REF_DSV_RE = re.compile(r"\s*([0-9]+)\.([0-9]+)\s*(?:;.*)?", re.ASCII | re.DOTALL)


def ref_data_service_version(headers: CIMultiDict[str], name: str) -> int | None:
    values = headers.getall(name, [])
    if not values:
        return None
    m = _REF_DSV_RE.fullmatch(values[0]) if len(values) == 1 else None
    if m is None or (int(m.group(1)), int(m.group(2))) not in {(1, 0), (2, 0), (3, 0)}:
        raise StubError(400, "InvalidHeaderValue", "ref")
    return int(m.group(1))


def outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return ("ok", fn(*args, **kwargs))
    except StubError as err:
        return ("error", (err.status, err.code, dict(err.details), err.message))


# --- the request date ---------------------------------------------------------------------

WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "mon", "Xyz", "Mon,"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
MONTHS += ["jan", "DEC", "Foo"]


@hs.composite
def http_dates(draw: hs.DrawFn) -> str:
    """Dates near the RFC 1123 form: valid ones, out-of-range fields, odd widths, other
    zones and separators, non-ASCII digits."""
    digits = hs.text(alphabet="0123456789\u0661 +-", min_size=1, max_size=5)
    number = hs.one_of(digits, hs.integers(0, 9999).map(str))
    day = draw(hs.one_of(hs.integers(0, 40).map(lambda d: f"{d:02d}"), number))
    years = hs.one_of(hs.integers(0, 200), hs.integers(0, 9999))
    year = draw(hs.one_of(years.map(lambda y: f"{y:04d}"), number))
    clock = [draw(hs.one_of(hs.integers(0, 70).map(lambda v: f"{v:02d}"), number)) for _ in "hms"]
    zone = draw(hs.sampled_from(["GMT", "GMT", "UTC", "+0000", "-0000", "+0130", "gmt", "EST"]))
    sep = draw(hs.sampled_from([", ", ", ", " ", ",  "]))
    weekday = draw(hs.sampled_from(WEEKDAYS))
    month = draw(hs.sampled_from(MONTHS))
    return f"{weekday}{sep}{day} {month} {year} {':'.join(clock)} {zone}"


@settings(max_examples=1500, deadline=None)
@given(hs.one_of(http_dates(), hs.text(max_size=40)))
def test_parse_http_date_matches_the_general_parser(value: str) -> None:
    assert _common.parse_http_date(value) == ref_parse_http_date(value)
    # the remembered last value answers the same
    assert _common.parse_http_date(value) == ref_parse_http_date(value)


@settings(max_examples=300, deadline=None)
@given(hs.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)))
def test_parse_http_date_reads_every_rfc1123_moment(moment: dt.datetime) -> None:
    value = moment.strftime("%a, %d %b ") + f"{moment.year:04d}" + moment.strftime(" %H:%M:%S GMT")
    parsed = _common.parse_http_date(value)
    assert parsed == ref_parse_http_date(value)
    if moment.year >= 100:
        assert parsed == moment.replace(microsecond=0, tzinfo=dt.UTC)
        assert parsed is not None
        assert parsed.tzinfo is dt.UTC


@pytest.mark.parametrize("year", ["0000", "0001", "0068", "0069", "0099", "0100", "1999", "9999"])
def test_parse_http_date_low_years(year: str) -> None:
    value = f"Fri, 01 Jan {year} 00:00:00 GMT"
    assert _common.parse_http_date(value) == ref_parse_http_date(value)


def test_parse_http_date_alternating_values() -> None:
    a, b = "Mon, 27 Jun 2016 15:25:14 GMT", "Mon, 27 Jun 2016 15:25:15 +0100"
    for value in (a, b, a, "not a date", a, b):
        assert _common.parse_http_date(value) == ref_parse_http_date(value)


# --- request ids --------------------------------------------------------------------------


def test_new_guid_is_a_random_uuid4_string() -> None:
    seen = {model.new_guid() for _ in range(3 * model._GUID_BATCH + 7)}
    assert len(seen) == 3 * model._GUID_BATCH + 7
    for guid in seen:
        parsed = uuid.UUID(guid)
        assert str(parsed) == guid
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_guid_batch_formats_like_uuid() -> None:
    for text in model._guid_batch():
        assert str(uuid.UUID(text, version=4)) == text


@settings(max_examples=50, deadline=None)
@given(hs.sampled_from([b"\0", b"\xff", b"\x0f\xf0"]) | hs.integers(0, 2**64))
def test_guid_batch_is_what_uuid4_makes_of_the_same_bytes(seed: bytes | int) -> None:
    """Each GUID of a batch is ``str(uuid.UUID(bytes=..., version=4))`` of its 16 random
    bytes, in order (the batch's version and variant bits and dashes are set in C)."""
    size = 16 * model._GUID_BATCH
    if isinstance(seed, bytes):  # every byte the same few: the bits' edges
        random = (seed * size)[:size]
    else:
        random = Random(seed).randbytes(size)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "urandom", lambda size: random[:size])
        batch = model._guid_batch()
    assert batch == [
        str(uuid.UUID(bytes=random[at : at + 16], version=4)) for at in range(0, len(random), 16)
    ]


# --- OData version headers ----------------------------------------------------------------

dsv_values = hs.one_of(
    hs.sampled_from(["3.0", "3.0;NetFx", "1.0;", " 2.0 ", "2.0;x", "4.0", "3.1", "3", "", "x"]),
    hs.text(alphabet="0123.; Nx\t", max_size=8),
)


@settings(max_examples=800, deadline=None)
@given(hs.lists(hs.lists(dsv_values, max_size=2), min_size=1, max_size=6))
def test_data_service_version_matches_the_reference(requests: list[list[str]]) -> None:
    for values in requests:
        headers: CIMultiDict[str] = CIMultiDict()
        for value in values:
            headers.add("DataServiceVersion", value)
        got = outcome(parsing.data_service_version, headers, "DataServiceVersion")
        want = outcome(ref_data_service_version, headers, "DataServiceVersion")
        if want[0] == "ok":
            assert got == want
        else:
            assert got[0] == "error"
            assert got[1][:2] == want[1][:2]
            details = {"HeaderName": "DataServiceVersion", "HeaderValue": ",".join(values)}
            assert got[1][2] == details


# --- response negotiation -----------------------------------------------------------------

accepts = hs.one_of(
    hs.none(),
    hs.sampled_from(
        [
            "application/json;odata=minimalmetadata",
            "application/json;odata=nometadata",
            "application/json;odata=fullmetadata",
            "application/json;odata=verbose",
            "application/json",
            "application/atom+xml",
            "application/xml;q=0.5, application/json;q=0.9",
            "*/*",
            "text/plain",
            "",
        ]
    ),
    hs.text(max_size=20),
)
versions_ = hs.sampled_from(["2009-09-19", "2013-08-15", "2015-04-05", "2015-12-11", "2019-02-02"])


@settings(max_examples=800, deadline=None)
@given(accepts, hs.one_of(hs.none(), hs.sampled_from(["json", "atom", "xml", "bad"])), versions_)
def test_negotiate_response_memo_matches_the_function(
    accept: str | None, format_param: str | None, version: str
) -> None:
    plain = negotiation.negotiate_response.__wrapped__
    for _ in range(2):
        assert outcome(negotiation.negotiate_response, accept, format_param, version) == outcome(
            plain, accept, format_param, version
        )


# --- the query ----------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["", "a=1", "$format=json&$format=atom"])
def test_parse_query_of_empty_and_present(raw: str) -> None:
    assert list(parse_query(raw).items()) == [tuple(i.split("=")) for i in raw.split("&") if i]


# --- OData response headers and the negotiated error style --------------------------------


def ref_odata_headers(fmt: Fmt, *, feed: bool = False, select: bool = False) -> dict[str, str]:
    ctype = fmt.content_type
    if fmt is Fmt.ATOM:
        ctype = "application/atom+xml;type=feed;charset=utf-8" if feed else ctype
        dsv = "2.0;" if select else "1.0;"
    else:
        dsv = "3.0;"
    return {"Content-Type": ctype, "DataServiceVersion": dsv, **call_mod.COMMON}


@pytest.mark.parametrize("fmt", list(Fmt))
@pytest.mark.parametrize("feed", [False, True])
@pytest.mark.parametrize("select", [False, True])
def test_odata_headers_match_the_reference(fmt: Fmt, feed: bool, select: bool) -> None:
    got = call_mod.odata_headers(fmt, feed=feed, select=select)
    assert got == ref_odata_headers(fmt, feed=feed, select=select)
    assert list(got) == list(ref_odata_headers(fmt, feed=feed, select=select))
    got["ETag"] = "x"  # a caller's copy: the next caller gets a clean one
    assert "ETag" not in call_mod.odata_headers(fmt, feed=feed, select=select)


def ref_negotiated(accept: str | None, fmt_param: str | None, version: str) -> tuple[Fmt, str]:
    if fmt_param is not None and not supports_format_option(version):
        fmt_param = None
    chosen = negotiation.negotiate_response.__wrapped__(accept, fmt_param, version)
    if chosen.implicit or chosen.wildcard:  # Storage: OData XML errors for */* (recorded)
        return chosen.fmt, ODATA_XML
    return chosen.fmt, chosen.fmt.value if chosen.fmt.is_json else ODATA_XML


@settings(max_examples=800, deadline=None)
@given(
    accepts, hs.one_of(hs.none(), hs.sampled_from(["json", "atom", "xml", "bad", ""])), versions_
)
def test_negotiated_style_matches_the_reference(
    accept: str | None, format_param: str | None, version: str
) -> None:
    for _ in range(2):
        got = outcome(call_mod._negotiated, accept, format_param, version)
        assert got == outcome(ref_negotiated, accept, format_param, version)


# --- addressing -----------------------------------------------------------------------------

path_pieces = hs.sampled_from(
    [
        "devstoreaccount1",
        "acct-secondary",
        "Tables",
        "Tables('t')",
        "t",
        "t()",
        "$batch",
        "%41",
        "%zz",
        "%C3%A9",
        "%FF",
        "t(PartitionKey='p',RowKey='r')",
        "t('p','r')",
        "t('x')",
        "",
        "/",
    ]
)
hosts = hs.one_of(
    hs.none(),
    hs.sampled_from(["127.0.0.1:10002", "acct.table.localhost", "[::1]:1", "localhost", ""]),
)


@settings(max_examples=800, deadline=None)
@given(hosts, hs.lists(hs.one_of(path_pieces, hs.text(max_size=6)), max_size=4), hs.booleans())
def test_addressing_memo_matches_the_functions(
    host: str | None, pieces: list[str], product_style: bool
) -> None:
    raw_path = "/" + "/".join(pieces)
    for _ in range(2):
        got = outcome(addressing.split_account, host, raw_path, product_style=product_style)
        plain = addressing.split_account.__wrapped__
        assert got == outcome(plain, host, raw_path, product_style=product_style)
        resource = "/".join(pieces)
        got = outcome(addressing.parse_resource, resource)
        assert got == outcome(addressing.parse_resource.__wrapped__, resource)


@settings(max_examples=300, deadline=None)
@given(
    endpoint=hs.sampled_from(["http://127.0.0.1:10002/acct", "https://h/a", "http://h:1/é"]),
    table=hs.from_regex(r"[A-Za-z][A-Za-z0-9]{2,10}", fullmatch=True),
    pk=hs.text(max_size=12),
    rk=hs.text(max_size=12),
)
def test_entity_location_is_the_entity_path_at_the_endpoint(
    endpoint: str, table: str, pk: str, rk: str
) -> None:
    """``entity_location`` writes ``entity_path``'s text itself: the same URL."""
    expected = call_mod.header_safe(f"{endpoint}/{entity_path(table, pk, rk)}")
    assert entity_location(endpoint, table, pk, rk) == expected


def test_flavor_of_remembers_the_last_application_and_nothing_stale() -> None:
    """``flavor_of`` remembers the application it answered last: another application,
    a flavour installed anew, or an application gone (a new one at its address) is
    looked up again."""
    storage_app, cosmos_app = web.Application(), web.Application()
    flavors.install(storage_app, flavors.STORAGE)
    flavors.install(cosmos_app, flavors.COSMOS)
    for _ in range(2):
        assert flavors.flavor_of(storage_app) is flavors.STORAGE
        assert flavors.flavor_of(cosmos_app) is flavors.COSMOS
    flavors.install(cosmos_app, flavors.STORAGE)  # (a flavour installed anew)
    assert flavors.flavor_of(cosmos_app) is flavors.STORAGE
    assert flavors.flavor_of(web.Application()) is flavors.STORAGE  # none installed
    for _ in range(20):  # an application gone: never taken for a new one
        gone = web.Application()
        flavors.install(gone, flavors.COSMOS)
        assert flavors.flavor_of(gone) is flavors.COSMOS
        del gone
        gc.collect()
        fresh = web.Application()
        assert flavors.flavor_of(fresh) is flavors.STORAGE


def ref_ends_head_with_more(data: bytes, body_bytes: int) -> bool:
    """``starts_next_head(..., with_head=True)`` for a body of known length, as it was:
    the bytes before the body's end do not end with (the arrival's share of) a blank line."""
    end = b"\r\n\r\n"
    before = len(data) - body_bytes
    if before <= 0:
        return False
    return data[max(0, before - len(end)) : before] != end[-min(before, len(end)) :]


@settings(max_examples=1500, deadline=None)
@given(
    hs.lists(hs.sampled_from([b"\r", b"\n", b"\r\n\r\n", b"G", b"x", b"{}"]), max_size=8),
    hs.integers(0, 40),
)
def test_starts_next_head_with_the_head_matches_the_reference(
    parts: list[bytes], body: int
) -> None:
    """The arrival that carried a whole request: a next head follows it exactly when the
    reference says so, for every split of the blank line and every body length."""
    data = b"".join(parts)
    got = read_limits.starts_next_head(data, body_bytes=body, chunked=False, with_head=True)
    assert got == ref_ends_head_with_more(data, body)
