"""Change sets of plain parts take one loop (``handlers.batch._plain_changeset``): the same
answers and the same stored result as the general loop.

Two stubs (in memory, and on disk) receive the same generated change sets, one with the
plain loop and one without (``PLAIN_CHANGESETS``), from the same starting state: valid
and invalid, mixed kinds, conflicts, ETag mismatches, bad values, oversize entities,
duplicate keys, another partition, odd headers. Answers are compared byte for byte once
the parts that differ by nature (boundaries, request ids, times, ETags) are masked; then
both tables are read back and compared. The one-loop conversion and its validation
verdict are compared with ``entity_from_members`` and ``validate_entity`` directly.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from azt_server_stub import DEV_ACCOUNT, DEV_KEY, StubConfig, ThreadedStubServer
from azt_server_stub.errors import StubError
from azt_server_stub.formats import json as jf
from azt_server_stub.handlers import batch as hb
from azt_server_stub.handlers import batch_plain as bp
from azt_server_stub.handlers import entities
from azt_server_stub.handlers.batch_plain import plain_entity
from azt_server_stub.validation import validate_entity, validate_property_name

from .conftest import JSON_FULL, JSON_MINIMAL, JSON_NONE, RawClient
from .test_auth_sas import service_sas
from .test_http_batch import BATCH_CT, envelope
from .test_write_fastpath import annotation_values, member_dicts, raw_values

# --- the one-loop conversion ---------------------------------------------------------------


def _ref(members: dict[str, Any], keys_required: bool) -> tuple[object, ...] | None:
    try:
        return jf.entity_from_members(members, keys_required=keys_required)
    except StubError:
        return None


@settings(max_examples=1500, deadline=None)
@given(member_dicts(), hs.booleans())
def test_plain_entities_convert_and_check_as_the_general_path(
    members: dict[str, Any], insert: bool
) -> None:
    ref = _ref(members, insert)
    url = (None, None) if insert else ("p", "r")
    got = plain_entity(members, *url)
    if ref is None:
        assert got is None
        return
    if got is None:
        return  # unusual: the general path decides
    pk, rk, props, checked = got
    if insert:
        assert (pk, rk, props) == ref
    else:
        assert (pk, rk, props) == ("p", "r", ref[2])
    try:
        validate_entity(pk, rk, props)
        valid = True
    except StubError:
        valid = False
    if checked:
        assert valid


def _same(a: object, b: object) -> bool:
    """Equal answers, NaN values counting as equal (``repr`` tells them apart from others)."""
    return a == b or repr(a) == repr(b)


@settings(max_examples=1500, deadline=None)
@given(
    member_dicts(),
    hs.sampled_from([(None, None), ("p", "r"), ("p", None), (None, "r")]),
    hs.booleans(),
)
def test_planned_shapes_convert_as_member_by_member(
    members: dict[str, Any], url: tuple[str | None, str | None], learn: bool
) -> None:
    """A body converted by its shape's plan (names known to validation, or not yet; the
    shape seen before or not) answers what the member-by-member loop answers."""
    if learn:
        for name in members:
            with contextlib.suppress(StubError):
                validate_property_name(name)
    expected = bp._general_entity(members, *url)
    assert _same(plain_entity(members, *url), expected)
    assert _same(plain_entity(members, *url), expected)  # the shape's plan remembered
    plan = bp._SHAPES.get(tuple(members))
    if plan is not None:
        assert _same(bp._planned_entity(members, plan, *url), expected)


_usual = hs.one_of(
    hs.tuples(hs.none(), hs.text(max_size=5) | hs.sampled_from(["\u00e9t\u00e9", "y" * 33_000])),
    hs.tuples(hs.none(), hs.integers(-(2**31), 2**31 - 1) | hs.booleans()),
    hs.tuples(hs.none(), hs.floats(allow_nan=False, allow_infinity=False)),
    hs.tuples(hs.just("Edm.Int64"), hs.integers(-(2**64), 2**64).map(str)),
    hs.tuples(hs.just("Edm.Double"), hs.floats(allow_nan=False, allow_infinity=False)),
    hs.tuples(
        hs.just("Edm.DateTime"),
        hs.sampled_from(["2024-01-01T12:00:00.313Z", "1600-01-01T00:00:00Z", "2024-01-01"]),
    ),
    hs.tuples(
        hs.sampled_from(["Edm.Guid", "Edm.Binary", "Edm.Int32", "Edm.String", "Edm.Boolean"]),
        hs.sampled_from(["c9da6455-213d-42c9-9a79-3e9149a57833", "AAE=", 5, "x", True]),
    ),
)


#: Values just outside what a compiled plan takes for a member of the usual types.
_near_misses = hs.sampled_from(
    [2**31, -(2**31) - 1, 2**63, -(2**63) - 1, None, math.nan, math.inf, "1e5", 1.0, 1, True]
) | hs.sampled_from(["9" * 20, "-9223372036854775809", "0001-01-01T00:00:00Z", "x\u00e9"])


@hs.composite
def usual_entities(draw: hs.DrawFn) -> dict[str, Any]:
    """Entities such as SDKs send: string keys, then properties of the common types, some
    annotated (the shapes the compiled plans are made for)."""
    # (keys with each character a key may not hold, and the printable ones around them)
    odd_keys = ["a\\b", "a#b", "a?b", "a\x1fb", "a\x7f", "\x00", "a b", "~", "a\x85b"]
    members: dict[str, Any] = {
        "PartitionKey": draw(hs.sampled_from(["p", "p'q", "\u00e9", *odd_keys]))
    }
    members["RowKey"] = draw(hs.sampled_from(["r", "00000001", "a/b", "x" * 600, *odd_keys]))
    for name in draw(hs.lists(hs.sampled_from(["A", "B", "C", "Größe", "Name"]), unique=True)):
        annotation, value = draw(_usual)
        if annotation is not None:
            members[name + "@odata.type"] = annotation
        members[name] = value
    return members


@settings(max_examples=700, deadline=None)
@given(
    usual_entities() | member_dicts(),
    hs.data(),
    hs.sampled_from([(None, None), ("p", "r"), ("p", None), (None, "r")]),
)
def test_a_compiled_plan_answers_any_entity_of_its_shape(
    first: dict[str, Any], data: hs.DataObject, url: tuple[str | None, str | None]
) -> None:
    """A shape's plan is compiled for the types and annotations of its first entity; a
    later entity of that shape (the same member names, any values) answers what the
    member-by-member loop answers, whether or not it is like the first."""
    for name in first:
        with contextlib.suppress(StubError):
            validate_property_name(name)
    bp._COMPILED.pop(tuple(first), None)
    plain_entity(first, *url)  # compiles the plan (when the shape has one)
    later: dict[str, Any] = {}
    for name, value in first.items():
        change = data.draw(hs.integers(0, 9 if name in ("PartitionKey", "RowKey") else 2))
        if change > 1:
            later[name] = value
        elif name.endswith("@odata.type"):
            later[name] = data.draw(annotation_values)
        elif change:
            later[name] = data.draw(_usual.map(lambda pair: pair[1]))
        else:
            later[name] = data.draw(raw_values | _near_misses)
    assert _same(plain_entity(later, *url), bp._general_entity(later, *url))
    assert _same(plain_entity(first, *url), bp._general_entity(first, *url))


_EVERY_KIND = {
    "PartitionKey": "p",
    "RowKey": "r",
    "S": "text",
    "I": 7,
    "F": 0.5,
    "T": True,
    "L@odata.type": "Edm.Int64",
    "L": "1099511627777",
    "D@odata.type": "Edm.Double",
    "D": 2.5,
    "W@odata.type": "Edm.DateTime",
    "W": "2024-01-01T12:00:00.313Z",
    "G@odata.type": "Edm.Guid",
    "G": "c9da6455-213d-42c9-9a79-3e9149a57833",
    "B@odata.type": "Edm.Binary",
    "B": "AAE=",
}
_SUBSTITUTES = [
    *[2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 2**64, None, math.nan, math.inf, -0.0, 1, 1.0],
    *[True, False, "", "x" * 33_000, "\u00e9", "1e5", "9" * 20, "-9223372036854775809"],
    *["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.9999999Z", "AAE", [], {}],
    *["Edm.Int32", "Edm.String", "Edm.Int64", "Edm.Bogus"],
]


@pytest.mark.parametrize("name", list(_EVERY_KIND))
def test_a_compiled_plan_refers_entities_unlike_its_first(name: str) -> None:
    """Each member of an entity of every usual kind replaced by values just outside what
    its compiled plan takes (and by others): the loop's answer every time."""
    for member in _EVERY_KIND:
        with contextlib.suppress(StubError):
            validate_property_name(member)
    for url in ((None, None), ("p", "r")):
        bp._COMPILED.pop(tuple(_EVERY_KIND), None)
        assert plain_entity(_EVERY_KIND, *url) == bp._general_entity(_EVERY_KIND, *url)
        assert bp._COMPILED[tuple(_EVERY_KIND)] is not bp._planned_unsure
        for value in _SUBSTITUTES:
            later = {**_EVERY_KIND, name: value}
            assert _same(plain_entity(later, *url), bp._general_entity(later, *url)), value


def test_a_compiled_plan_counts_the_size_of_strings() -> None:
    """Seventeen strings of 32,000 characters: over the entity size limit only when each
    character counts two bytes (UTF-16), as validation counts it."""
    big = {"PartitionKey": "p", "RowKey": "r"}
    big.update({f"S{i}": "x" * 32_000 for i in range(17)})
    for member in big:
        with contextlib.suppress(StubError):
            validate_property_name(member)
    bp._COMPILED.pop(tuple(big), None)
    got = plain_entity(big, None, None)
    assert got is not None
    assert got == bp._general_entity(big, None, None)
    assert got[3] is False
    assert bp._COMPILED[tuple(big)] is not bp._planned_unsure


def test_a_benchmark_entity_is_plain_and_checked() -> None:
    members = json.loads(
        '{"PartitionKey":"pk","RowKey":"00000001","Name":"name-1","Count":1,'
        '"Score@odata.type":"Edm.Double","Score":0.5,"Active":false,'
        '"Big@odata.type":"Edm.Int64","Big":"1099511627777",'
        '"When@odata.type":"Edm.DateTime","When":"2024-01-01T12:00:00.0010000Z",'
        '"Note":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}'
    )
    ref = jf.entity_from_members(members, keys_required=True)
    validate_entity(*ref)
    got = plain_entity(members, None, None)
    assert got == (*ref, True)


# --- whole change sets: the plain loop against the general loop --------------------------

_ACCOUNT_PATH = f"/{DEV_ACCOUNT}"
_STALE = "W/\"datetime'2001-01-01T00%3A00%3A00.0000000Z'\""
_ROWS = ["a", "b", "c", "d", "e", "f", "O'k", "\u00e9 h"]

_good_values = hs.one_of(
    hs.integers(-(2**31), 2**31 - 1),
    hs.text(max_size=6),
    hs.sampled_from(["x" * 40, "\u00e9t\u00e9"]),
    hs.floats(allow_nan=False, allow_infinity=False),
    hs.booleans(),
)
_odd_values = hs.one_of(
    hs.integers(-(2**64), 2**64),
    hs.sampled_from(["y" * 33_000]),
    hs.none(),
    hs.lists(hs.integers(), max_size=1),
)
_values = hs.integers(0, 9).flatmap(lambda n: _odd_values if n == 0 else _good_values)
_annotated = hs.sampled_from(
    [
        ("Edm.Int64", "1099511627777"),
        ("Edm.Int64", "99999999999999999999"),
        ("Edm.Int64", "123456789012345678901"),  # (21 digits: not a number the regex takes)
        ("Edm.Int64", "-12"),
        ("Edm.Int64", "+12"),
        ("Edm.Int64", ""),
        ("Edm.Int64", "\u0661\u0662"),  # (digits, not ASCII ones)
        ("Edm.Int64", "12\n"),
        ("Edm.Int64", 5),
        ("Edm.Double", 0.5),
        ("Edm.Double", "NaN"),
        ("Edm.Double", 3),
        ("Edm.DateTime", "2024-01-01T12:00:00.0010000Z"),
        ("Edm.DateTime", "1500-01-01T00:00:00Z"),
        ("Edm.DateTime", "yesterday"),
        ("Edm.Guid", "c9da6455-213d-42c9-9a79-3e9149a57833"),
        ("Edm.Binary", base64.b64encode(b"\x00\x01").decode()),
        ("Edm.Binary", "not base64"),
        ("Edm.String", "s"),
        ("Edm.Int32", "12"),
        ("Edm.Boolean", "true"),
        ("Edm.Unknown", 1),
    ]
)
_names = hs.sampled_from(["A", "B", "Name", "_x", "Größe"] * 12 + ["1bad", "odata.x", "Timestamp"])


@hs.composite
def _bodies(draw: hs.DrawFn, pk: str, rk: str) -> str:
    shape = draw(hs.integers(0, 59))
    if shape == 0:
        return "{bad json"
    if shape == 1:
        return ""
    if shape == 2:  # past 1 MiB in all
        return json.dumps(
            {"PartitionKey": pk, "RowKey": rk, **{f"S{i}": "z" * 32_000 for i in range(17)}}
        )
    members: dict[str, Any] = {}
    if draw(hs.integers(0, 29)):
        members["PartitionKey"] = pk
    if draw(hs.integers(0, 29)):
        members["RowKey"] = rk if draw(hs.integers(0, 29)) else 7
    for name in draw(hs.lists(_names, max_size=4)):
        if not draw(hs.integers(0, 3)):
            edm, value = draw(_annotated)
            members[name + "@odata.type"] = edm
            members[name] = value
        else:
            members[name] = draw(_values)
    text = json.dumps(members)
    if shape == 3 and len(members) > 1:  # a member twice
        text = text[:-1] + ', "A": 1}'
    return text


_EXTRA = [
    *([{}] * 120),
    {"Prefer": "return-content"},
    {"Accept": JSON_FULL},
    {"Accept": JSON_NONE},
    {"Accept": "application/atom+xml"},
    {"Content-Type": "application/atom+xml"},
    {"DataServiceVersion": "9.0"},
    {"MaxDataServiceVersion": "3.0;NetFx"},
    {"If-None-Match": "*"},
    {"Content-Encoding": "gzip"},
    {"X-HTTP-Method": "MERGE"},
    {"X-Custom": "1"},
]


@hs.composite
def change_sets(draw: hs.DrawFn) -> tuple[list[str], list[str]]:
    """(seeded RowKeys, parts: {BASE}, {TABLE} and {ETAG:rk} stand for what each stub has)."""
    seeded = draw(hs.lists(hs.sampled_from(_ROWS[:4]), unique=True, max_size=4))
    parts: list[str] = []
    # (a PartitionKey that may not travel in a header as it is: the answers' Location)
    main = draw(hs.sampled_from(["p", "p", "p", "\u00e9 p"]))
    for _ in range(draw(hs.integers(1, 4))):
        kind = draw(hs.sampled_from(["insert"] * 3 + ["put", "merge", "patch", "delete"]))
        pk = main if draw(hs.integers(0, 29)) else "q"
        near = _ROWS[4:] if kind == "insert" else seeded or _ROWS[:4]
        rk = (
            draw(hs.sampled_from(near)) if draw(hs.integers(0, 4)) else draw(hs.sampled_from(_ROWS))
        )
        table = "{TABLE}" if draw(hs.integers(0, 49)) else draw(hs.sampled_from(["t", "Other"]))
        headers: dict[str, str] = {"DataServiceVersion": "3.0"}
        if draw(hs.booleans()):
            headers["Prefer"] = "return-no-content"
        headers.update(draw(hs.sampled_from(_EXTRA)))
        base = "{BASE}"
        if kind == "insert":
            target = f"{base}/{table}"
            method = "POST"
        else:
            target = f"{base}/{table}(PartitionKey='{pk}',RowKey='{rk}')"
            method = {"put": "PUT", "merge": "MERGE", "patch": "PATCH", "delete": "DELETE"}[kind]
            if_match = draw(
                hs.sampled_from(["*", "*", "{ETAG}", "{ETAG}", "{ETAG}", _STALE, "bad", None])
            )
            if if_match is not None:
                headers["If-Match"] = if_match.replace("{ETAG}", "{ETAG:" + rk + "}")
        body = "" if kind == "delete" else draw(_bodies(pk, rk))
        if body:
            headers.setdefault("Content-Type", "application/json")
        parts.append(_part(method, target, body, headers))
    return seeded, parts


def _part(method: str, target: str, body: str, headers: dict[str, str]) -> str:
    lines = [f"{method} {target} HTTP/1.1", f"Accept: {headers.pop('Accept', JSON_MINIMAL)}"]
    if body:
        headers["Content-Length"] = str(len(body.encode()))
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return "\r\n".join(lines) + "\r\n\r\n" + body


_MASKS = [
    (re.compile(rb"(batchresponse|changesetresponse)_[0-9a-f-]{36}"), rb"\1_B"),
    (re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), b"U"),
    (re.compile(rb"datetime'[^']*'"), b"datetime'D'"),
    (re.compile(rb"Time:[0-9T:.Z-]+"), b"Time:T"),
    (re.compile(rb'"Timestamp":"[^"]*"'), b'"Timestamp":"T"'),
    (re.compile(rb"<d:Timestamp[^<]*</d:Timestamp>"), b"<d:Timestamp/>"),
    (re.compile(rb"<updated>[^<]*</updated>"), b"<updated/>"),
    (re.compile(rb'"odata.etag":"[^"]*"'), b'"odata.etag":"E"'),
]


def _masked(body: bytes) -> bytes:
    for pattern, replacement in _MASKS:
        body = pattern.sub(replacement, body)
    return body


class _Pair:
    """The two stubs of one store kind and a counter for fresh table names."""

    def __init__(self, plain: ThreadedStubServer, general: ThreadedStubServer) -> None:
        self.servers = {True: plain, False: general}
        self.names = itertools.count()


def _pair(locations: tuple[Path, Path] | None) -> Iterator[_Pair]:
    configs = [StubConfig(location=loc) for loc in locations] if locations else [None, None]
    with ThreadedStubServer(configs[0]) as a, ThreadedStubServer(configs[1]) as b:
        yield _Pair(a, b)


@pytest.fixture(scope="module")
def memory_pair() -> Iterator[_Pair]:
    yield from _pair(None)


@pytest.fixture(scope="module")
def disk_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Pair]:
    root = tmp_path_factory.mktemp("plain")
    (root / "a").mkdir()
    (root / "b").mkdir()
    yield from _pair((root / "a", root / "b"))


async def _run(
    plain: bool,
    server: ThreadedStubServer,
    table: str,
    seeded: list[str],
    parts: list[str],
    sas: str | None = None,
) -> tuple[int, bytes, bytes]:
    async with aiohttp.ClientSession() as session:
        raw = RawClient(session, server.endpoint, DEV_ACCOUNT, DEV_KEY)
        json_headers = {
            "Accept": JSON_MINIMAL,
            "Content-Type": "application/json",
            "DataServiceVersion": "3.0",
        }
        r = await raw.request(
            "POST", "/Tables", headers=json_headers, body=json.dumps({"TableName": table})
        )
        assert r.status == 201, r.body
        etags: dict[str, str] = {}
        for rk in seeded:
            r = await raw.request(
                "POST",
                f"/{table}",
                headers={**json_headers, "Prefer": "return-no-content"},
                body=json.dumps({"PartitionKey": "p", "RowKey": rk, "A": 1, "Old": "o"}),
            )
            assert r.status == 204, r.body
            etags[rk] = r.headers["ETag"]
        texts = []
        for part in parts:
            part = part.replace("{BASE}", server.endpoint + _ACCOUNT_PATH).replace("{TABLE}", table)
            for rk in _ROWS:
                part = part.replace("{ETAG:" + rk + "}", etags.get(rk, _STALE))
            texts.append(part)
        hb.PLAIN_CHANGESETS = plain
        try:
            signed: dict[str, Any] = {}
            if sas is not None:  # a service SAS: these permissions, RowKeys b to f of p
                params = {**_SAS, "tn": table, "sp": sas}
                signed = {"auth": "none", "raw_query": service_sas(params)}
            answer = await raw.request(
                "POST",
                "/$batch",
                **signed,
                headers={
                    "Content-Type": BATCH_CT,
                    "Accept": JSON_MINIMAL,
                    "DataServiceVersion": "3.0",
                },
                body=envelope(texts),
            )
        finally:
            hb.PLAIN_CHANGESETS = True
        rows = await raw.request("GET", f"/{table}()", headers={"Accept": JSON_NONE})
        assert rows.status == 200
        stored = [
            {k: v for k, v in row.items() if k != "Timestamp"} for row in rows.json()["value"]
        ]
        return (
            answer.status,
            _masked(answer.body.replace(server.endpoint.encode(), b"BASE")),
            json.dumps(stored).encode(),
        )


_SAS = {"sv": "2019-02-02", "se": "2030-01-01T00:00:00Z", "spk": "p", "srk": "b"}
_SAS |= {"epk": "p", "erk": "f"}


def _compare(pair: _Pair, seeded: list[str], texts: list[str], sas: str | None = None) -> None:
    table = f"plain{next(pair.names)}"
    plain = asyncio.run(_run(True, pair.servers[True], table, seeded, texts, sas))
    general = asyncio.run(_run(False, pair.servers[False], table, seeded, texts, sas))
    assert plain == general


_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@_SETTINGS
@given(change_sets())
def test_change_sets_answer_as_the_general_path_in_memory(
    memory_pair: _Pair, case: tuple[list[str], list[str]]
) -> None:
    _compare(memory_pair, *case)


@_SETTINGS
@given(change_sets(), hs.sampled_from(["au", "raud", "u"]))
def test_change_sets_under_a_service_sas_answer_as_the_general_path(
    memory_pair: _Pair, case: tuple[list[str], list[str]], permissions: str
) -> None:
    """A principal with a SAS: the plain loop asks it about each part as the general does."""
    _compare(memory_pair, *case, sas=permissions)


@_SETTINGS
@given(change_sets())
def test_change_sets_answer_as_the_general_path_on_disk(
    disk_pair: _Pair, case: tuple[list[str], list[str]]
) -> None:
    _compare(disk_pair, *case)


def _plain_loop_answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each run of the plain loop answered (True) or left it to the general loop."""
    taken: list[bool] = []
    plain_loop = hb._plain_changeset

    async def spy(*args: Any) -> Any:
        answer = await plain_loop(*args)
        taken.append(answer is not None)
        return answer

    monkeypatch.setattr(hb, "_plain_changeset", spy)
    return taken


def test_the_benchmark_change_set_takes_the_plain_loop(
    memory_pair: _Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _plain_loop_answers(monkeypatch)
    body = json.dumps({"PartitionKey": "p", "RowKey": "{RK}", "N": 1, "S": "x" * 40})
    headers = {
        "DataServiceVersion": "3.0",
        "Prefer": "return-no-content",
        "Content-Type": "application/json",
    }
    parts = [
        _part("POST", "{BASE}/{TABLE}", body.replace("{RK}", f"{i:03d}"), dict(headers))
        for i in range(100)
    ]
    _compare(memory_pair, [], parts)
    assert taken == [True]


@pytest.mark.parametrize("pk", ["p", "\u00e9 p", "a b", "p'q", "\u00a0"])
def test_no_content_inserts_locate_any_keys_as_the_general_path(
    memory_pair: _Pair, monkeypatch: pytest.MonkeyPatch, pk: str
) -> None:
    """The Location of an insert answered without content, whatever its keys hold that
    may not travel in a header as they are (non-ASCII, a space, a quote, a character
    that is not printable): the plain loop's is the general loop's."""
    taken = _plain_loop_answers(monkeypatch)
    headers = {
        "DataServiceVersion": "3.0",
        "Prefer": "return-no-content",
        "Content-Type": "application/json",
    }
    rks = ["r", "\u00e9 h", "a b", "O'k", "x\u00a0"]
    parts = [
        _part("POST", "{BASE}/{TABLE}", json.dumps({"PartitionKey": pk, "RowKey": rk}), headers)
        for rk in rks
    ]
    _compare(memory_pair, [], parts)
    assert taken == [True]  # (the general loop ran with PLAIN_CHANGESETS off)


def _insert_outcome(read: Any, body: bytes, ctype: str) -> Any:
    try:
        return read(body, ctype, "2019-02-02")
    except StubError as err:
        return (err.status, err.code, str(err))


@settings(max_examples=800, deadline=None)
@given(
    usual_entities() | member_dicts(),
    hs.sampled_from(["application/json", "application/json;odata=nometadata"]),
    hs.booleans(),
)
def test_an_insert_write_is_what_parse_insert_reads(
    members: dict[str, Any], ctype: str, learn: bool
) -> None:
    """A single insert's write (``insert_op``, the one-pass conversion when the entity is
    plain) carries what ``parse_insert`` reads, or fails with its error; when it says the
    entity is checked, validation accepts it."""
    if learn:
        for name in members:
            with contextlib.suppress(StubError):
                validate_property_name(name)
    body = json.dumps(members).encode()
    op = _insert_outcome(entities.insert_op, body, ctype)
    expected = _insert_outcome(entities.parse_insert, body, ctype)
    if isinstance(expected, tuple) and len(expected) == 3 and isinstance(expected[0], int):
        assert op == expected
        return
    assert _same((op.kind, op.pk, op.rk, op.props), ("insert", *expected))
    if op.checked:
        validate_entity(op.pk, op.rk, op.props)


def test_an_atom_insert_is_read_as_before() -> None:
    body = (
        b'<?xml version="1.0" encoding="utf-8"?><entry xmlns="http://www.w3.org/2005/Atom" '
        b'xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" '
        b'xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices"><content '
        b'type="application/xml"><m:properties><d:PartitionKey>p</d:PartitionKey>'
        b'<d:RowKey>r</d:RowKey><d:N m:type="Edm.Int64">5</d:N></m:properties></content></entry>'
    )
    op = entities.insert_op(body, "application/atom+xml", "2013-08-15")
    assert (op.pk, op.rk, op.props, op.checked) == (
        *entities.parse_insert(body, "application/atom+xml", "2013-08-15"),
        False,
    )
