"""Entity bodies written by msgspec (``formats/json_feed``) against a plain reference.

The reference below is written from the protocol, not from the stub's writer: each value's
text by its EDM type (``datetime`` for DateTimes, ``str(uuid)``, ``base64``, ``repr`` of
Doubles through ``json.dumps``), the members in each flavour's order, then ``json.dumps``
(compact, ASCII). Random entities over the eight EDM types with their edge values
(DateTimes with seven fractional digits, the first and last DateTime, NaN and infinite
Doubles, Doubles that ``repr`` writes with an exponent, empty Binary values, Int64 and
Int32 extremes, strings that need escapes, non-ASCII and U+007F), Cosmos key places, at
the three metadata levels, in both flavours, with and without ``$select``, read once and
again (the remembered texts).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import subprocess
import sys
import uuid
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as hs

from azt_server_stub.formats import json_feed
from azt_server_stub.formats.json import EntityWriter
from azt_server_stub.formats.json_form import COSMOS_FORM, STORAGE_FORM, JsonForm
from azt_server_stub.formats.negotiation import Fmt
from azt_server_stub.model import (
    INT64_MAX,
    INT64_MIN,
    MAX_DATETIME_TICKS,
    MIN_DATETIME_TICKS,
    Edm,
    Entity,
    key_places,
)

ENDPOINT = "http://127.0.0.1:10002/devstoreaccount1"
TABLE = "t"

# --- the reference ----------------------------------------------------------------------


def ref_datetime(ticks: int, fixed: bool) -> str:
    moment = dt.datetime(1, 1, 1) + dt.timedelta(seconds=ticks // 10_000_000)
    fraction = f"{ticks % 10_000_000:07d}"
    if not fixed:
        fraction = fraction.rstrip("0")
    return moment.isoformat(timespec="seconds") + ("." + fraction if fraction else "") + "Z"


def ref_value(edm: str, value: Any, fixed: bool) -> tuple[Any, bool]:
    """(the JSON value, whether it carries an ``@odata.type`` annotation)."""
    if edm in (Edm.STRING, Edm.INT32, Edm.BOOLEAN):
        return value, False
    if edm == Edm.DOUBLE:
        if math.isnan(value):
            return "NaN", True
        if math.isinf(value):
            return ("Infinity" if value > 0 else "-Infinity"), True
        return value, False
    if edm == Edm.INT64:
        return str(value), True
    if edm == Edm.DATETIME:
        return ref_datetime(value, fixed), True
    if edm == Edm.GUID:
        return str(value), True
    return base64.b64encode(value).decode("ascii"), True


def ref_entity(e: Entity, fmt: Fmt, form: JsonForm, select: list[str] | None) -> dict[str, Any]:
    meta, full = fmt is not Fmt.NOMETADATA, fmt is Fmt.FULL
    cosmos = form.cosmos_order
    ts = ref_datetime(e.timestamp, True)
    etag = "W/\"datetime'" + ts.replace(":", "%3A") + "'\""
    d: dict[str, Any] = {}
    if full:
        pk, rk = (key.replace("'", "''") for key in (e.pk, e.rk))
        path = f"{TABLE}(PartitionKey='{pk}',RowKey='{rk}')"
        d["odata.type"] = f"acct.{TABLE}"
        d["odata.id"] = f"{ENDPOINT}/{path}"
        if cosmos:
            d["odata.editLink"] = path
        d["odata.etag"] = etag
        if not cosmos:
            d["odata.editLink"] = path
    elif meta:
        d["odata.etag"] = etag

    def put(name: str, typed: tuple[str, Any] | None) -> None:
        if typed is None:
            d[name] = None
            return
        edm, value = typed
        if name == "Timestamp":
            if full:
                d["Timestamp@odata.type"] = "Edm.DateTime"
            d[name] = ts
            return
        text, annotated = ref_value(edm, value, form.fixed_fraction)
        if annotated and meta:
            d[name + "@odata.type"] = edm
        d[name] = text

    if select is not None:
        names = select
        if form.select_by_name:
            system = [n for n in ("PartitionKey", "RowKey", "Timestamp") if n in select]
            names = system + sorted(n for n in dict.fromkeys(select) if n not in system)
        for name in names:
            put(name, e.get(name))
        return d
    members: list[tuple[str, Any]] = list(e.props.items())
    keys = [("PartitionKey", (Edm.STRING, e.pk)), ("RowKey", (Edm.STRING, e.rk))]
    if form.key_places and e.keys_at:
        pk_at, rk_at = e.keys_at & 0xFFFF, e.keys_at >> 16 & 0xFFFF
        rk_first = rk_at < pk_at or (rk_at == pk_at and e.keys_at >> 32)
        order = (
            [(rk_at, keys[1]), (pk_at, keys[0])]
            if rk_first
            else [(pk_at, keys[0]), (rk_at, keys[1])]
        )
        members.insert(min(order[0][0], len(members)), order[0][1])
        members.insert(min(order[1][0], len(members) - 1) + 1, order[1][1])
    else:
        members = keys + ([] if cosmos else [("Timestamp", None)]) + members
    for name, typed in members:
        put(name, typed if name != "Timestamp" else (Edm.DATETIME, e.timestamp))
    if cosmos:
        put("Timestamp", (Edm.DATETIME, e.timestamp))
    return d


def ref_feed(entities: list[Entity], fmt: Fmt, form: JsonForm, select: list[str] | None) -> bytes:
    values = [ref_entity(e, fmt, form, select) for e in entities]
    page: dict[str, Any] = {"value": values}
    if fmt is not Fmt.NOMETADATA:
        url = f"{ENDPOINT}/$metadata#{TABLE}"
        if select is not None and form.select_by_name:
            url += "&$select=" + ",".join(select)
        page = (
            {"value": values, "odata.metadata": url}
            if form.cosmos_order
            else {
                "odata.metadata": url,
                "value": values,
            }
        )
    return json.dumps(page, separators=(",", ":"), ensure_ascii=True).encode("ascii")


# --- the entities -----------------------------------------------------------------------

EDGE_DATETIMES = [0, MIN_DATETIME_TICKS, MAX_DATETIME_TICKS, 637_358_077_304_363_943, 10_000_000]
EDGE_DOUBLES = [
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    1e16,
    9999999999999998.0,
    1e-4,
    9.99e-5,
    1e-5,
    5e-324,
    1.7976931348623157e308,
    -1e300,
    1 / 3,
    2.5,
    1e22,
    123456789.125,
]
texts = hs.text(
    alphabet=hs.sampled_from(
        [
            "a",
            "Z",
            "é",
            "日",
            '"',
            "\\",
            "\n",
            "\x00",
            "\x1f",
            "\x7f",
            "\U0001f600",
            "'",
            "<",
            "/",
            " ",
        ]
    ),
    max_size=6,
)
values = hs.one_of(
    hs.tuples(hs.just(Edm.STRING), texts),
    hs.tuples(
        hs.just(Edm.INT32),
        hs.integers(-(2**31), 2**31 - 1) | hs.sampled_from([-(2**31), 2**31 - 1]),
    ),
    hs.tuples(
        hs.just(Edm.INT64),
        hs.integers(INT64_MIN, INT64_MAX) | hs.sampled_from([INT64_MIN, INT64_MAX]),
    ),
    hs.tuples(hs.just(Edm.DOUBLE), hs.floats() | hs.sampled_from(EDGE_DOUBLES)),
    hs.tuples(hs.just(Edm.BOOLEAN), hs.booleans()),
    hs.tuples(
        hs.just(Edm.DATETIME),
        hs.integers(0, MAX_DATETIME_TICKS) | hs.sampled_from(EDGE_DATETIMES),
    ),
    hs.tuples(hs.just(Edm.GUID), hs.uuids()),
    hs.tuples(hs.just(Edm.BINARY), hs.binary(max_size=9)),
)
names = hs.sampled_from(["A", "Name", "Größe", "_x", "n2", "Zeta", "b"])


@hs.composite
def entities(draw: hs.DrawFn) -> list[Entity]:
    stamps = draw(hs.lists(hs.integers(0, MAX_DATETIME_TICKS), min_size=1, max_size=3))
    out = []
    for _ in range(draw(hs.integers(0, 4))):
        props = {draw(names): draw(values) for _ in range(draw(hs.integers(0, 8)))}
        e = Entity(draw(texts), draw(texts), draw(hs.sampled_from(stamps)), props)
        if draw(hs.booleans()):  # where the client sent the keys (Cosmos key places)
            sent = list(props)
            sent.insert(draw(hs.integers(0, len(sent))), "PartitionKey")
            sent.insert(draw(hs.integers(0, len(sent))), "RowKey")
            e.keys_at = key_places(sent, props)
        out.append(e)
    return out


@settings(max_examples=400, deadline=None)
@given(
    entities(),
    hs.sampled_from([Fmt.MINIMAL, Fmt.NOMETADATA, Fmt.FULL]),
    hs.sampled_from([STORAGE_FORM, COSMOS_FORM]),
    hs.sampled_from(
        [None, ["RowKey"], ["Timestamp", "A", "Missing", "PartitionKey"], ["Größe", "b"]]
    ),
)
def test_pages_match_the_reference(
    batch: list[Entity], fmt: Fmt, form: JsonForm, select: list[str] | None
) -> None:
    writer = EntityWriter(fmt, ENDPOINT, "acct", TABLE, select, form=form)
    select_text = ",".join(select) if select is not None and form.select_by_name else None
    expected = ref_feed(batch, fmt, form, select)
    try:
        for _ in range(3):  # written, asked for again (remembered), then the remembered text
            assert writer.feed(batch, select_text) == expected
    finally:
        json_feed.forget_texts()


def test_edge_values_in_one_page() -> None:
    props: dict[str, Any] = {}
    for i, ticks in enumerate(EDGE_DATETIMES):
        props[f"D{i}"] = (Edm.DATETIME, ticks)
    for i, value in enumerate(EDGE_DOUBLES):
        props[f"F{i}"] = (Edm.DOUBLE, value)
    props.update(
        E=(Edm.BINARY, b""),
        B=(Edm.BINARY, bytes(range(256))),
        L=(Edm.INT64, INT64_MIN),
        M=(Edm.INT64, INT64_MAX),
        G=(Edm.GUID, uuid.UUID(int=0)),
        H=(Edm.GUID, uuid.UUID(int=2**128 - 1)),
        S=(Edm.STRING, 'é\x7f\U0001f600"\\\n\x00'),
        T=(Edm.STRING, ""),
    )
    page = [Entity("p", "r", MAX_DATETIME_TICKS, props), Entity("é", "\x7f", 0, props)]
    for fmt in (Fmt.MINIMAL, Fmt.NOMETADATA, Fmt.FULL):
        for form in (STORAGE_FORM, COSMOS_FORM):
            writer = EntityWriter(fmt, ENDPOINT, "acct", TABLE, form=form)
            try:
                for _ in range(3):
                    assert writer.feed(page) == ref_feed(page, fmt, form, None)
                    assert writer.feed(page[:1]) == ref_feed(page[:1], fmt, form, None)
            finally:
                json_feed.forget_texts()


def test_msgspec_writes_ascii_as_json_dumps_but_for_0x7f() -> None:
    """What the module's check of a body rests on: every ASCII character but U+007F is
    written as ``json.dumps`` writes it (msgspec at any version the project accepts)."""
    differ = [c for c in range(128) if msgspec.json.encode(chr(c)) != json.dumps(chr(c)).encode()]
    assert differ == [0x7F]


def test_every_character_is_escaped_as_json_dumps_escapes_it() -> None:
    """Every character (lone surrogates too: msgspec cannot write them, the reference
    does), as a value, a key and a property name, in pages written again and remembered."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    surrogates = "".join(chr(c) for c in range(0xD800, 0xE000))
    page = [
        Entity("p", every[:5000], 0, {"S": (Edm.STRING, every)}),
        Entity(every[-3:], "r", 0, {"Größe\U0001f600": (Edm.STRING, "\x7f")}),
        Entity("p", "s", 0, {"S": (Edm.STRING, surrogates)}),
    ]
    for fmt in (Fmt.MINIMAL, Fmt.NOMETADATA, Fmt.FULL):
        writer = EntityWriter(fmt, ENDPOINT, "acct", TABLE)
        try:
            for _ in range(3):
                assert writer.feed(page) == ref_feed(page, fmt, STORAGE_FORM, None)
                for e in page:
                    assert writer.feed([e]) == ref_feed([e], fmt, STORAGE_FORM, None)
        finally:
            json_feed.forget_texts()


@settings(max_examples=2000, deadline=None)
@given(hs.floats(allow_nan=False, allow_infinity=False))
def test_doubles_without_an_exponent_are_written_as_repr(value: float) -> None:
    """msgspec's digits are ``repr``'s where ``repr`` writes no exponent; the others are
    written as ``repr``'s text."""
    e = Entity("p", "r", 0, {"x": (Edm.DOUBLE, value)})
    writer = EntityWriter(Fmt.NOMETADATA, ENDPOINT, "acct", TABLE)
    assert writer.feed([e]) == ref_feed([e], Fmt.NOMETADATA, STORAGE_FORM, None)
    assert f'"x":{value!r}}}'.encode() in writer.feed([e])
    json_feed.forget_texts()


@settings(max_examples=500, deadline=None)
@given(hs.integers(0, MAX_DATETIME_TICKS), hs.booleans())
def test_datetime_text(ticks: int, fixed: bool) -> None:
    assert json_feed.datetime_text(ticks, fixed) == ref_datetime(ticks, fixed)


# --- what is remembered -------------------------------------------------------------------


def _rows(n: int, tag: str = "") -> list[Entity]:
    return [Entity("p", f"{tag}{i:06d}", i, {"N": (Edm.INT64, i)}) for i in range(n)]


def test_a_table_read_again_is_remembered() -> None:
    writer = EntityWriter(Fmt.MINIMAL, ENDPOINT, "acct", TABLE)
    rows = _rows(50)
    try:
        writer.feed(rows)
        assert not json_feed._HELD  # written once: not remembered
        writer.feed(rows)
        assert set(json_feed._HELD) == {id(e) for e in rows}
        body = writer.feed(rows)
        assert body == ref_feed(rows, Fmt.MINIMAL, STORAGE_FORM, None)
    finally:
        json_feed.forget_texts()


def test_a_scan_larger_than_the_memory_remembers_nothing(monkeypatch: Any) -> None:
    monkeypatch.setattr(json_feed, "_MAX_REMEMBERED", 40)
    monkeypatch.setattr(json_feed, "_MAX_SEEN", 20)
    writer = EntityWriter(Fmt.NOMETADATA, ENDPOINT, "acct", TABLE)
    rows = _rows(100)
    try:
        for _ in range(3):  # each read of 100 rows: more than twice the ids kept
            for start in range(0, 100, 10):
                page = rows[start : start + 10]
                assert writer.feed(page) == ref_feed(page, Fmt.NOMETADATA, STORAGE_FORM, None)
            assert not json_feed._HELD
        few = _rows(15, "f")
        for _ in range(2):
            writer.feed(few)
        assert len(json_feed._HELD) == 15  # a table that fits is remembered again
    finally:
        json_feed.forget_texts()


def test_the_remembered_texts_are_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(json_feed, "_MAX_REMEMBERED", 8)
    monkeypatch.setattr(json_feed, "_MAX_SEEN", 100)
    writer = EntityWriter(Fmt.MINIMAL, ENDPOINT, "acct", TABLE)
    rows = _rows(30)
    try:
        for read in range(3):  # written; remembered (and forgotten, room for 8) twice
            assert writer.feed(rows) == ref_feed(rows, Fmt.MINIMAL, STORAGE_FORM, None)
            assert (read > 0) <= len(json_feed._HELD) <= 8
            # the bytes counted are those held (the count starts again when all is forgotten)
            held = sum(len(bytes(raw)) for texts in json_feed._TEXTS for raw in texts.values())
            assert json_feed._remembered_bytes == held
    finally:
        json_feed.forget_texts()


def _even_rows(n: int) -> list[Entity]:
    """Rows whose texts are all of one length."""
    return [Entity("p", f"{i:06d}", 10**17, {"N": (Edm.INT64, 100 + i)}) for i in range(n)]


def test_the_memory_of_texts_is_bounded_in_bytes(monkeypatch: Any) -> None:
    writer = EntityWriter(Fmt.NOMETADATA, ENDPOINT, "acct", TABLE)
    rows = _even_rows(10)
    size = len(writer.feed(rows[:1])) - len('{"value":[]}')
    json_feed.forget_texts()
    try:
        monkeypatch.setattr(json_feed, "_MAX_REMEMBERED_BYTES", 3 * size)
        for _ in range(2):  # the second read remembers: forgotten at the 4th, 7th and 10th
            assert writer.feed(rows) == ref_feed(rows, Fmt.NOMETADATA, STORAGE_FORM, None)
        assert len(json_feed._HELD) == 1
        assert json_feed._remembered_bytes == size
        json_feed.forget_texts()
        monkeypatch.setattr(json_feed, "_MAX_REMEMBERED_BYTES", size)  # room for one text
        for _ in range(2):
            writer.feed(rows[:1])
        assert len(json_feed._HELD) == 1
        json_feed.forget_texts()
        monkeypatch.setattr(json_feed, "_MAX_REMEMBERED_BYTES", size - 1)  # for none
        for _ in range(3):
            assert writer.feed(rows[:1]) == ref_feed(rows[:1], Fmt.NOMETADATA, STORAGE_FORM, None)
        assert not json_feed._HELD
    finally:
        json_feed.forget_texts()


def test_the_memory_of_texts_is_bounded_in_entities(monkeypatch: Any) -> None:
    monkeypatch.setattr(json_feed, "_MAX_REMEMBERED", 8)
    writer = EntityWriter(Fmt.NOMETADATA, ENDPOINT, "acct", TABLE)
    rows = _even_rows(20)
    try:
        for _ in range(2):
            for e in rows:
                writer.feed([e])
                assert len(json_feed._HELD) <= 8
        assert len(json_feed._HELD) == 20 % 8
    finally:
        json_feed.forget_texts()


def test_a_new_process_remembers_texts() -> None:
    """Before anything was forgotten (the module's own starting state)."""
    code = (
        "from azt_server_stub.formats import json_feed as f\n"
        "from azt_server_stub.model import Entity\n"
        "e = Entity('p', 'r', 0)\n"
        "texts = [f.write_entity(e, f.layout_for(meta=False), str) for _ in range(3)]\n"
        "assert len(set(texts)) == 1 and len(f._HELD) == 1, texts\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
