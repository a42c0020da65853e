"""Query pages written as JSON text read exactly as the dict-and-``json.dumps`` path wrote them.

``EntityWriter.feed`` writes minimal- and no-metadata pages without ``$select`` directly
as text (``formats/json_feed``); the reference below is the code it replaced: one dict
per entity by ``EntityWriter.entity``, then ``json.dumps``. Generated entities cover
every EDM type, special doubles, non-ASCII and escaped text, names the fast writer
leaves to the dict path, and values whose Python type is not their EDM type's.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as hs

from azt_server_stub.formats import json as jf
from azt_server_stub.formats import json_feed as jf_feed
from azt_server_stub.formats.negotiation import Fmt
from azt_server_stub.model import MAX_DATETIME_TICKS, Edm, Entity


def ref_feed(writer: jf.EntityWriter, entities: list[Entity], select_text: str | None) -> bytes:
    """``EntityWriter.feed`` as it was: dicts, then ``json.dumps``."""
    values = [writer.entity(e) for e in entities]
    if writer._fmt is Fmt.NOMETADATA:
        return json.dumps({"value": values}, separators=(",", ":")).encode("ascii")
    url = writer.metadata_url(element=False, select_text=select_text)
    return json.dumps({"odata.metadata": url, "value": values}, separators=(",", ":")).encode(
        "ascii"
    )


texts = hs.text(
    alphabet=hs.sampled_from(["a", "é", '"', "\\", "\n", "\x00", "\U0001f600", "'", "<"])
)
values = hs.one_of(
    hs.tuples(hs.just(Edm.STRING), texts),
    hs.tuples(hs.just(Edm.INT32), hs.integers(-(2**31), 2**31 - 1)),
    hs.tuples(hs.just(Edm.INT64), hs.integers(-(2**63), 2**63 - 1)),
    hs.tuples(hs.just(Edm.DOUBLE), hs.floats()),
    hs.tuples(hs.just(Edm.DOUBLE), hs.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e300])),
    hs.tuples(hs.just(Edm.BOOLEAN), hs.booleans()),
    hs.tuples(hs.just(Edm.DATETIME), hs.integers(0, MAX_DATETIME_TICKS)),
    hs.tuples(hs.just(Edm.GUID), hs.uuids()),
    hs.tuples(hs.just(Edm.BINARY), hs.binary(max_size=8)),
    # Python types that are not their EDM type's: left to the dict path
    hs.sampled_from(
        [
            (Edm.INT32, True),
            (Edm.INT32, 1.5),
            (Edm.DOUBLE, 3),
            (Edm.BOOLEAN, 0),
            (Edm.STRING, 5),
            (Edm.INT64, "7"),
            (Edm.GUID, "c9da6455-213d-42c9-9a79-3e9149a57833"),
            (Edm.BINARY, bytearray(b"x")),
            (Edm.DATETIME, 1.0),
        ]
    ),
)
names = hs.sampled_from(["A", "Name", "Größe", "_x", "n2"]) | hs.sampled_from(
    ["Timestamp", "PartitionKey", "RowKey", "odata.etag", "a@odata.type", "1a", "a b", ""]
)


@hs.composite
def entity_lists(draw: hs.DrawFn) -> list[Entity]:
    timestamps = draw(hs.lists(hs.integers(0, MAX_DATETIME_TICKS), min_size=1, max_size=3))
    out = []
    for _ in range(draw(hs.integers(0, 5))):
        props: dict[str, Any] = {}
        for _ in range(draw(hs.integers(0, 5))):
            props[draw(names)] = draw(values)
        out.append(Entity(draw(texts), draw(texts), draw(hs.sampled_from(timestamps)), props))
    return out


@settings(max_examples=500, deadline=None)
@given(
    entity_lists(),
    hs.sampled_from([Fmt.MINIMAL, Fmt.NOMETADATA, Fmt.FULL]),
    hs.sampled_from(["http://127.0.0.1:10002/devstoreaccount1", 'http://h/é"a']),
    hs.sampled_from(["t", "Tablé"]),
    hs.sampled_from([None, "RowKey", 'A,"é']),
)
def test_pages_write_as_before(
    entities: list[Entity], fmt: Fmt, endpoint: str, table: str, select_text: str | None
) -> None:
    writer = jf.EntityWriter(fmt, endpoint, "acct", table)
    assert outcome(writer.feed, entities, select_text) == outcome(
        ref_feed, writer, entities, select_text
    )


def outcome(fn: Callable[..., bytes], *args: Any) -> object:
    """The bytes written, or the type of what was raised (a value the writer cannot take)."""
    try:
        return fn(*args)
    except (ValueError, TypeError) as exc:
        return type(exc)


def test_a_page_of_many_entities_sharing_timestamps() -> None:
    entities = [
        Entity(
            "Q",
            f"{i:08d}",
            600_000_000_000_000_000 + i // 100,
            {
                "Name": (Edm.STRING, f"name-{i}"),
                "Count": (Edm.INT32, i),
                "Score": (Edm.DOUBLE, i * 0.5),
                "Active": (Edm.BOOLEAN, i % 2 == 0),
                "Big": (Edm.INT64, 2**40 + i),
                "When": (Edm.DATETIME, 638_396_640_000_000_000 + i * 10_000),
                "Id": (Edm.GUID, uuid.UUID(int=i)),
                "Note": (Edm.STRING, "x" * 40),
            },
        )
        for i in range(1000)
    ]
    for fmt in (Fmt.MINIMAL, Fmt.NOMETADATA):
        writer = jf.EntityWriter(fmt, "http://127.0.0.1:10002/devstoreaccount1", "acct", "t")
        assert writer.feed(entities) == ref_feed(writer, entities, None)


# --- remembered entity texts (formats/json_feed: an entity is encoded once) ------------------


@settings(max_examples=300, deadline=None)
@given(
    entity_lists(),
    hs.lists(hs.sampled_from([Fmt.MINIMAL, Fmt.NOMETADATA, Fmt.FULL]), min_size=2, max_size=5),
    hs.booleans(),
)
def test_pages_of_entities_written_before_read_as_before(
    entities: list[Entity], fmts: list[Fmt], small: bool
) -> None:
    """The same entity objects written again (remembered texts), at each metadata level in
    any order, with room for few texts or many, read exactly as the reference writes them."""
    saved = jf_feed._MAX_REMEMBERED
    if small:
        jf_feed._MAX_REMEMBERED = 2  # forgotten again and again within one page
    try:
        for fmt in fmts:
            writer = jf.EntityWriter(fmt, "http://h/acct", "acct", "t")
            assert outcome(writer.feed, entities, None) == outcome(ref_feed, writer, entities, None)
            # a page holding the same entity twice, and a shuffled copy of the page
            twice = entities + entities[:2] + entities[::-1]
            assert outcome(writer.feed, twice, None) == outcome(ref_feed, writer, twice, None)
    finally:
        jf_feed._MAX_REMEMBERED = saved
        jf_feed.forget_texts()


def test_remembered_texts_follow_the_stored_entities() -> None:
    """A page read after a write shows the new entity (a write stores a new object), and
    the memory of texts stays within its bounds."""
    from azt_server_stub.backend import Backend, WriteOp

    backend = Backend()
    backend.create_table("a", "Texts1")
    backend.write("a", "Texts1", WriteOp("insert", "p", "r", {"N": (Edm.INT64, 1)}))
    writer = jf.EntityWriter(Fmt.MINIMAL, "http://h/a", "a", "t")
    first = backend.query_entities("a", "Texts1", None, None, None).entities
    assert writer.feed(first) == ref_feed(writer, first, None)
    backend.write("a", "Texts1", WriteOp("merge", "p", "r", {"N": (Edm.INT64, 2)}, "*"))
    second = backend.query_entities("a", "Texts1", None, None, None).entities
    assert b'"N":"2"' in writer.feed(second)
    assert writer.feed(second) == ref_feed(writer, second, None)
    saved = jf_feed._MAX_REMEMBERED
    jf_feed.forget_texts()  # what earlier tests left remembered is not this bound's to keep
    jf_feed._MAX_REMEMBERED = 3
    try:
        many = [Entity("p", str(i), i, {"S": (Edm.STRING, "x" * i)}) for i in range(10)]
        for _ in range(3):  # written, then remembered (and forgotten: room for 3)
            assert writer.feed(many) == ref_feed(writer, many, None)
            assert len(jf_feed._HELD) <= 3
            assert set(jf_feed._HELD) >= set(jf_feed._TEXTS[0]) | set(jf_feed._TEXTS[1])
    finally:
        jf_feed._MAX_REMEMBERED = saved
        jf_feed.forget_texts()
    assert not jf_feed._HELD
    assert jf_feed._remembered_bytes == 0


# --- single-entity bodies (point reads, insert echoes) write the page text -------------------


def ref_single(writer: jf.EntityWriter, e: Entity) -> bytes:
    """``EntityWriter.single`` as it was: the entity's dict after the metadata URL."""
    d = writer.entity(e)
    if writer._fmt is not Fmt.NOMETADATA:
        d = {"odata.metadata": writer.metadata_url(element=True), **d}
    return json.dumps(d, separators=(",", ":")).encode("ascii")


@settings(max_examples=500, deadline=None)
@given(
    entity_lists(),
    hs.sampled_from([Fmt.MINIMAL, Fmt.NOMETADATA, Fmt.FULL]),
    hs.sampled_from(["http://127.0.0.1:10002/devstoreaccount1", 'http://h/é"a']),
    hs.sampled_from(["t", "Tablé"]),
    hs.sampled_from([None, ["RowKey"], ["A", "Größe", "Missing"]]),
)
def test_single_entities_write_as_before(
    entities: list[Entity], fmt: Fmt, endpoint: str, table: str, select: list[str] | None
) -> None:
    """Each entity alone, first and again (its remembered text), as the reference writes it."""
    writer = jf.EntityWriter(fmt, endpoint, "acct", table, select)
    try:
        for e in entities + entities[:2]:
            assert outcome(writer.single, e) == outcome(ref_single, writer, e)
    finally:
        jf_feed.forget_texts()
