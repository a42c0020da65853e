"""How query results are decoded: a JSON table hands each page's JSON rows (any metadata
level) straight to the entity codec, an Atom table gives ``TableEntity`` rows; both paths
give the same objects and refuse the same malformed or differently typed values."""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from azt import TableClient
from azt._core.config import WireFormat
from azt._core.pagination import ContinuationToken
from azt._core.wire import WireDecodeError
from azt._core.wire.json import decode_entity
from azt._errors import ValidationError
from azt._orm.codec import MissingPropertyError, codec_for
from azt.dynamic import DynamicEntity, Resolver, by_property, by_row_key_prefix
from azt.edm import EdmType, Typed
from azt.entity import Entity, Int64, Prop, entity_info, prop
from azt.query import Query, page_decoder_for
from azt_server_stub.formats.negotiation import Fmt

from .conftest import BackendTable, Recording
from .models import AllTypes, Kinded, Member, Rental, Required
from .test_codec import SAMPLES


class PlainView:
    """The same table, reporting a non-JSON wire format (as Atom tables do), so that
    queries take the TableEntity path."""

    wire_format = WireFormat.ATOM

    def __init__(self, table: Any) -> None:
        self.table = table

    def query_entities(
        self,
        filter: str | None = None,
        *,
        select: Sequence[str] | None = None,
        results_per_page: int | None = None,
        continuation: ContinuationToken | None = None,
    ) -> Any:
        return self.table.query_entities(
            filter, select=select, results_per_page=results_per_page, continuation=continuation
        )


def _rows() -> list[AllTypes]:
    return [AllTypes(f"p{i % 2}", f"r{i:02d}", **v) for i, v in enumerate(SAMPLES * 3)]


async def _pair(fmt: Fmt, rows: Sequence[Entity]) -> tuple[Recording, Recording]:
    """(fast path, TableEntity path) over one table."""
    table = BackendTable(fmt)
    for r in rows:
        await table.insert(r)
    return Recording(table, max_page=4), Recording(PlainView(table), max_page=4)


def _same_objects(a: list[Any], b: list[Any]) -> None:
    assert a == b
    for x, y in zip(a, b, strict=True):
        assert x.ETag == y.ETag
        assert x.Timestamp == y.Timestamp
        for p in entity_info(type(x)).data_props:
            assert type(getattr(x, p.attr, None)) is type(getattr(y, p.attr, None)), p.attr


@pytest.mark.parametrize("fmt", [Fmt.NOMETADATA, Fmt.MINIMAL, Fmt.FULL])
async def test_every_edm_type_at_every_metadata_level(fmt: Fmt) -> None:
    rows = _rows()
    fast, plain = await _pair(fmt, rows)
    got = await Query(AllTypes, fast).to_list()
    want = await Query(AllTypes, plain).to_list()
    assert [r["page_decoder"] for r in fast.requests] == [True] * len(fast.requests)
    assert [r["page_decoder"] for r in plain.requests] == [False] * len(plain.requests)
    assert len(fast.requests) > 2  # several pages
    expected = sorted(rows, key=lambda r: (r.PartitionKey, r.RowKey))
    assert got == expected
    _same_objects(got, want)
    if fmt is Fmt.NOMETADATA:
        assert all(g.ETag is None for g in got)
    else:
        assert all(g.ETag and g.ETag.startswith('W/"') for g in got)
    assert all(g.Timestamp is not None for g in got)


@pytest.mark.parametrize("fmt", [Fmt.NOMETADATA, Fmt.FULL])
async def test_projection_and_fan_out_on_the_fast_path(fmt: Fmt) -> None:
    rows = _rows()
    fast, plain = await _pair(fmt, rows)
    q = Query(AllTypes).where(AllTypes.PartitionKey.in_(["p1", "p0"])).select(AllTypes.i64)
    got = await q.using(fast).to_list()
    want = await q.using(plain).to_list()
    assert all(r["page_decoder"] for r in fast.requests)
    assert [(g.PartitionKey, g.RowKey) for g in got] == sorted(
        (r.PartitionKey, r.RowKey) for r in rows
    )
    assert [g.i64 for g in got] == [w.i64 for w in want]
    for g in got:
        with pytest.raises(AttributeError):
            _ = g.s  # outside the projection: unset, as on the TableEntity path


async def test_resolvers_take_the_fast_path_and_choose_as_before() -> None:
    rows: list[Any] = [
        Member("m1", "Member", name="Ann"),
        Rental("m1", "Rental_Alien", movie="A"),
        DynamicEntity("m1", "Note", Text="hi", Big=Typed(5, EdmType.INT64)),
        Kinded("m2", "k1", kind="kinded", n=1),
        DynamicEntity("m2", "k2", Kind=Typed(5, EdmType.INT64)),
        DynamicEntity("m2", "k3", Kind="5"),
    ]
    resolvers: list[Resolver[Any]] = [
        by_row_key_prefix({"Member": Member, "Rental_": Rental}),
        by_property("Kind", {"kinded": Kinded, "5": Rental, 5: Member}),
    ]
    for fmt in (Fmt.NOMETADATA, Fmt.MINIMAL, Fmt.FULL):
        fast, plain = await _pair(fmt, rows)
        for resolver in resolvers:
            got = await Query(resolver, fast).to_list()
            want = await Query(resolver, plain).to_list()
            assert [type(g) for g in got] == [type(w) for w in want], fmt
            assert got == want
        assert all(r["page_decoder"] for r in fast.requests)
    # an Int64 discriminator is an int on the TableEntity path when annotated: same here
    kinds = [type(g).__name__ for g in await Query(resolvers[1], fast).to_list()]
    assert kinds == ["DynamicEntity"] * 3 + ["Kinded", "Member", "Rental"]


async def test_custom_resolvers_and_dynamic_entities_keep_the_table_entity_path() -> None:
    fast, _ = await _pair(Fmt.MINIMAL, [Member("m1", "Member", name="Ann")])
    custom: Resolver[Any] = Resolver(lambda row: Member if row["RowKey"] == "Member" else None)
    assert [type(g) for g in await Query(custom, fast).to_list()] == [Member]
    dyn = await Query(DynamicEntity, fast).to_list()
    assert dyn[0]["Name"] == "Ann"
    assert not any(r["page_decoder"] for r in fast.requests)


def test_resolver_page_decoder_errors() -> None:
    dec = by_row_key_prefix({"Rental_": Rental}, fallback=None).page_decoder(None)
    assert dec is not None
    with pytest.raises(ValidationError, match="no entity class"):
        dec([{"PartitionKey": "p", "RowKey": "Other"}])
    with pytest.raises(WireDecodeError, match="'Due'"):
        dec([{"PartitionKey": "p", "RowKey": "Rental_X", "Due": "soon"}])
    with pytest.raises(WireDecodeError, match="JSON object"):
        dec([[]])
    (r,) = dec([{"PartitionKey": "p", "RowKey": "Rental_X", "Movie": None}])
    assert r.movie == ""


async def test_no_page_decoder_for_atom_tables() -> None:
    table = BackendTable(Fmt.NOMETADATA)
    await table.insert(Member("m1", "Member", name="Ann"))
    atom, json_none = Recording(PlainView(table)), Recording(table)
    assert (atom.wire_format, json_none.wire_format) == (WireFormat.ATOM, WireFormat.JSON_NONE)
    for t in (atom, json_none):
        assert [m.name for m in await Query(Member, t).to_list()] == ["Ann"]
    assert [r["page_decoder"] for r in atom.requests] == [False]
    assert [r["page_decoder"] for r in json_none.requests] == [True]
    assert page_decoder_for(DynamicEntity, None) is None


def test_malformed_values_are_named() -> None:
    dec = codec_for(AllTypes).decode_rows
    good = {"PartitionKey": "p", "RowKey": "a", "i64": "5"}
    bad = {"PartitionKey": "p", "RowKey": "b", "i64": "five"}
    with pytest.raises(WireDecodeError, match=r"RowKey='b'.*'i64' = 'five'.*Edm.Int64"):
        dec([good, bad])
    with pytest.raises(WireDecodeError, match="'g'"):
        dec([{"PartitionKey": "p", "RowKey": "c", "g": "not-a-guid"}])
    with pytest.raises(WireDecodeError, match="'dt'"):
        dec([{"PartitionKey": "p", "RowKey": "c", "dt": "yesterday"}])
    with pytest.raises(WireDecodeError, match="'genre'"):
        dec([{"PartitionKey": "p", "RowKey": "c", "genre": "Opera"}])
    with pytest.raises(WireDecodeError, match="JSON object"):
        dec([good, ["PartitionKey", "p"]])
    with pytest.raises(MissingPropertyError, match="'title'"):
        codec_for(Required).decode_rows([{"PartitionKey": "p", "RowKey": "r"}])
    assert dec([good])[0].i64 == 5


def test_nulls_count_as_absent() -> None:
    row = {
        "PartitionKey": "p",
        "RowKey": "r",
        "s": None,
        "i64": None,
        "dt": None,
        "genre": None,
        "opt": None,
        "i32": 7,
    }
    for obj in (
        codec_for(AllTypes).decode_rows([row])[0],
        codec_for(AllTypes).from_json(row),
        AllTypes.from_entity(row),
    ):
        assert (obj.s, obj.i64, obj.dt, obj.opt, obj.i32) == ("", 0, None, None, 7)
    with pytest.raises(MissingPropertyError, match="'RowKey'"):
        codec_for(AllTypes).from_json({"PartitionKey": "p", "RowKey": None})


class WithFactory(Entity):
    """A property whose default comes from a factory."""

    token: Prop[uuid.UUID] = prop(factory=uuid.uuid4)


def test_factory_defaults_are_called_per_row() -> None:
    rows = [{"PartitionKey": "p", "RowKey": str(i)} for i in range(3)]
    got = codec_for(WithFactory).decode_rows(rows)
    assert len({g.token for g in got}) == 3
    u = "c9da6455-213d-42c9-9a79-3e9149a57833"
    assert codec_for(WithFactory).from_json({**rows[0], "token": u}).token == uuid.UUID(u)


@pytest.mark.parametrize(
    "wire_format",
    [WireFormat.JSON_NONE, WireFormat.JSON_MINIMAL, WireFormat.JSON_FULL, WireFormat.ATOM],
)
async def test_through_the_stub_at_every_wire_format(wire_format: WireFormat) -> None:
    from azt_server_stub import StubServer

    rows = _rows()
    async with StubServer() as stub:
        conn = stub.connection_string
        async with TableClient.from_connection_string(conn, "fast", wire_format=wire_format) as t:
            await t.create_table()
            for r in rows:
                await t.insert_entity(r.to_entity())
            fast = Recording(t, max_page=4)
            plain = Recording(PlainView(t), max_page=4)
            got = await Query(AllTypes, fast).to_list()
            want = await Query(AllTypes, plain).to_list()
    atom = wire_format is WireFormat.ATOM
    assert all(r["page_decoder"] is not atom for r in fast.requests)
    assert not any(r["page_decoder"] for r in plain.requests)
    assert got == sorted(rows, key=lambda r: (r.PartitionKey, r.RowKey))
    _same_objects(got, want)
    assert all(g.ETag and g.ETag.startswith('W/"') for g in got)


def test_numbers_of_another_edm_type_are_refused_not_truncated() -> None:
    dec = codec_for(AllTypes).decode_rows
    with pytest.raises(WireDecodeError, match=r"'i64' = 5\.5"):
        dec([{"PartitionKey": "p", "RowKey": "r", "i64": 5.5}])
    with pytest.raises(WireDecodeError, match="'i64' = True"):
        dec([{"PartitionKey": "p", "RowKey": "r", "i64": True}])
    with pytest.raises(WireDecodeError, match="'d' = False"):
        dec([{"PartitionKey": "p", "RowKey": "r", "d": False}])
    with pytest.raises(WireDecodeError, match=r"'i64' = 5\.5.*not an Edm\.Int64"):
        AllTypes.from_entity({"PartitionKey": "p", "RowKey": "r", "i64": 5.5})
    # what the wire legitimately carries still reads: Int64 text, an Int32 in an Int64
    # column, an integral Double as a JSON int, NaN as text
    (ok,) = dec([{"PartitionKey": "p", "RowKey": "r", "i64": 7, "d": 2}])
    assert (ok.i64, ok.d) == (7, 2.0)
    assert type(ok.d) is float


def test_a_column_stored_with_another_type_is_refused() -> None:
    dec = codec_for(AllTypes).decode_rows
    for prop_name, value in (("s", 5), ("i32", "5"), ("i32", True), ("b", 1), ("opt", 2.5)):
        row = {"PartitionKey": "p", "RowKey": "r", prop_name: value}
        with pytest.raises(WireDecodeError, match=f"'{prop_name}' = {value!r}.*{prop_name}"):
            dec([row])
        with pytest.raises(WireDecodeError, match=f"'{prop_name}' = {value!r}.*{prop_name}"):
            AllTypes.from_entity(row)
    with pytest.raises(WireDecodeError, match="'RowKey' = 7"):
        dec([{"PartitionKey": "p", "RowKey": 7}])
    with pytest.raises(WireDecodeError, match="'Movie' = 1"):
        codec_for(Rental, frozenset({"Movie"})).decode_rows(
            [{"PartitionKey": "p", "RowKey": "r", "Movie": 1}]
        )


class Tier(enum.IntEnum):
    GOLD = 1


def test_subclasses_of_the_declared_class_are_kept() -> None:
    # from_entity also serves user dicts: an IntEnum member is an int, a str subclass a str
    class Name(str):
        pass

    m = Member.from_entity({"PartitionKey": "p", "RowKey": "r", "RentalCount": Tier.GOLD})
    assert m.rental_count == 1
    m = Member.from_entity({"PartitionKey": Name("p"), "RowKey": "r", "Name": Name("Ann")})
    assert (m.PartitionKey, m.name) == ("p", "Ann")


class Typed8(Entity):
    """One property of each EDM type, for the stored-type agreement table."""

    s: Prop[str] = prop(default="")
    i32: Prop[int] = prop(default=0)
    i64: Prop[Int64] = prop(default=0)
    d: Prop[float] = prop(default=0.0)
    b: Prop[bool] = prop(default=False)
    dt: Prop[datetime | None] = prop(default=None)
    g: Prop[uuid.UUID | None] = prop(default=None)
    bin: Prop[bytes | None] = prop(default=None)


_GUID = "c9da6455-213d-42c9-9a79-3e9149a57833"
_ANN = "@odata.type"

# (property, JSON value, annotation or None): what a declared type reads. The stored type
# is known when annotated; a value of another stored type is refused on both decode paths,
# except the lossless widenings Int32 -> Int64 and Int32 -> Double. Unannotated text
# (nometadata: the type is unknown) is parsed by the declared type on both paths.
_STORED_OK = [
    ("s", "x", None),
    ("s", "x", "Edm.String"),
    ("i32", 5, None),
    ("i32", 5, "Edm.Int32"),
    ("i64", "5", "Edm.Int64"),
    ("i64", "5", None),
    ("i64", 5, None),
    ("d", 2.5, None),
    ("d", 5, None),
    ("d", "NaN", "Edm.Double"),
    ("d", "Infinity", None),
    ("b", True, None),
    ("dt", "2020-01-01T00:00:00Z", "Edm.DateTime"),
    ("dt", "2020-01-01T00:00:00Z", None),
    ("g", _GUID, "Edm.Guid"),
    ("g", _GUID, None),
    ("bin", "AAE=", "Edm.Binary"),
    ("bin", "AAE=", None),
]
_STORED_REFUSED = [
    ("s", "5", "Edm.Int64"),
    ("s", _GUID, "Edm.Guid"),
    ("s", "2020-01-01T00:00:00Z", "Edm.DateTime"),
    ("s", "AAE=", "Edm.Binary"),
    ("s", "NaN", "Edm.Double"),
    ("i32", "5", "Edm.Int64"),
    ("i64", "1234", "Edm.Binary"),
    ("i64", "5", "Edm.String"),
    ("i64", 5.5, None),
    ("d", "5", "Edm.Int64"),
    ("d", "1234", "Edm.Binary"),
    ("b", 1, None),
    ("dt", _GUID, "Edm.Guid"),
    ("dt", "2020-01-01T00:00:00Z", "Edm.String"),
    ("g", "2020-01-01T00:00:00Z", "Edm.DateTime"),
    ("g", "c9da6455213d42c99a793e9149a57833", "Edm.Binary"),
    ("bin", _GUID, "Edm.Guid"),
    ("bin", "1234", "Edm.Int64"),
    # unannotated text is parsed strictly: base64 decoders that skip what is not base64
    # would turn a Guid or DateTime into bytes
    ("bin", _GUID, None),
    ("bin", "2020-01-01T00:00:00Z", None),
    ("bin", "AAE", None),
]


def _typed_row(name: str, value: Any, annotation: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"PartitionKey": "p", "RowKey": "r"}
    if annotation is not None:
        row[name + _ANN] = annotation
    row[name] = value
    return row


@pytest.mark.parametrize(("name", "value", "annotation"), _STORED_OK)
def test_both_decode_paths_accept_the_declared_type_and_lossless_widenings(
    name: str, value: Any, annotation: str | None
) -> None:
    row = _typed_row(name, value, annotation)
    via_json = codec_for(Typed8).decode_rows([row])[0]
    via_value = Typed8.from_entity(decode_entity(row))
    a, b = getattr(via_json, name), getattr(via_value, name)
    assert a == b or (a != a and b != b)  # NaN
    assert type(a) is type(b)


@pytest.mark.parametrize(("name", "value", "annotation"), _STORED_REFUSED)
def test_both_decode_paths_refuse_a_column_stored_with_another_type(
    name: str, value: Any, annotation: str | None
) -> None:
    row = _typed_row(name, value, annotation)
    edm = entity_info(Typed8).by_attr[name].edm
    named = rf"^(?=.*RowKey='r')(?=.*'{name}')(?=.*Typed8\.{name}\b)(?=.*{edm.value})"
    with pytest.raises(WireDecodeError, match=named):
        codec_for(Typed8).decode_rows([row])
    with pytest.raises(WireDecodeError, match=named):
        codec_for(Typed8).from_json(row)
    with pytest.raises(WireDecodeError, match=named):
        Typed8.from_entity(decode_entity(row))
    resolver = by_row_key_prefix({"r": Typed8}, fallback=None)
    page = resolver.page_decoder(None)
    assert page is not None
    with pytest.raises(WireDecodeError, match=named):
        page([row])
    with pytest.raises(WireDecodeError, match=named):
        resolver.decoder(None)(decode_entity(row))


_STORED_VALUES: dict[EdmType, Any] = {
    EdmType.STRING: st.text(st.characters(codec="utf-8"), max_size=8),
    EdmType.INT32: st.integers(-(2**31), 2**31 - 1),
    EdmType.INT64: st.integers(-(2**63), 2**63 - 1),
    EdmType.DOUBLE: st.floats(allow_nan=False, width=64),
    EdmType.BOOLEAN: st.booleans(),
    EdmType.DATETIME: st.datetimes(
        min_value=datetime(1601, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
    ),
    EdmType.GUID: st.uuids(),
    EdmType.BINARY: st.binary(max_size=8),
}


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from([p.attr for p in entity_info(Typed8).data_props if not p.is_key]),
    stored=st.sampled_from(list(EdmType)).flatmap(
        lambda edm: st.tuples(st.just(edm), _STORED_VALUES[edm])
    ),
    fmt=st.sampled_from([Fmt.NOMETADATA, Fmt.MINIMAL, Fmt.FULL]),
)
def test_decode_paths_agree_on_any_stored_value(
    name: str, stored: tuple[EdmType, Any], fmt: Fmt
) -> None:
    """Whatever type a column was stored with, and at every metadata level, the JSON path
    and the TableEntity path give the same object or both refuse with a named error."""
    edm, value = stored
    table = BackendTable(fmt)
    asyncio.run(table.insert(DynamicEntity("p", "r", **{name: Typed(value, edm)})))
    (row,) = table._page(None, None, None, None, lambda rows: rows).items
    outcomes: list[Any] = []
    decoders: list[Callable[[], Typed8]] = [
        lambda: codec_for(Typed8).decode_rows([row])[0],
        lambda: Typed8.from_entity(decode_entity(row)),
    ]
    for decode in decoders:
        try:
            obj = decode()
        except WireDecodeError as exc:
            outcomes.append("refused" if f"'{name}'" in str(exc) else f"unnamed: {exc}")
        else:
            got = getattr(obj, name)
            outcomes.append((type(got), "nan" if got != got else got))
    assert outcomes[0] == outcomes[1], (edm, value, fmt, outcomes)
    declared = entity_info(Typed8).by_attr[name].edm
    if edm is declared:
        assert outcomes[0] != "refused"  # its own type always reads


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("g", "c9da_455-213d-42c9-9a79-3e9149a57833"),  # int() takes '_' inside a group
        ("g", "+9da6455-213d-42c9-9a79-3e9149a57833"),  # ... and a sign
        ("g", "{c9da6455-213d-42c9-9a79-3e9149a57833}"),  # uuid.UUID takes braces
        ("g", "c9da6455213d42c99a793e9149a57833"),  # ... and bare hex
        ("bin", "AA E=!"),  # a lenient base64 decoder skips what is not base64
    ],
)
@pytest.mark.parametrize("annotated", [True, False])
def test_every_decode_path_refuses_a_non_canonical_guid_or_base64_text(
    name: str, text: str, annotated: bool
) -> None:
    edm = entity_info(Typed8).by_attr[name].edm
    row = _typed_row(name, text, edm.value if annotated else None)
    with pytest.raises(WireDecodeError):
        codec_for(Typed8).decode_rows([row])
    with pytest.raises(WireDecodeError):
        Typed8.from_entity(decode_entity(row))
