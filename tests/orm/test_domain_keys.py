"""Keys with domain names (``customer_id`` as the PartitionKey): the class, its codec, its
queries and plans, and the declarations refused as ambiguous (no server)."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from typing import Any, cast

import attrs
import pytest

from azt import ValidationError
from azt._orm.codec import MissingPropertyError, codec_for
from azt._uow.access import access_for
from azt.dynamic import by_row_key_prefix
from azt.edm import TableEntity
from azt.entity import Entity, EntityBase, Int64, Prop, entity_info, partition_key, prop, row_key
from azt.keys import all_buckets, composite_key, composite_prefix
from azt.query import PlanKind, Query


class Order(EntityBase, table="orders"):
    """Keys named for the domain; one property renamed on the wire too."""

    customer_id: Prop[str] = partition_key()
    order_id: Prop[str] = row_key()
    total: Prop[float] = prop(default=0.0)
    items: Prop[Int64] = prop(name="ItemCount", default=0)
    note: Prop[str | None] = prop(default=None)
    placed: Prop[datetime | None] = prop(default=None)


class Positional(EntityBase):
    """Keys declared positional, as Entity's are."""

    tenant: Prop[str] = partition_key(kw_only=False)
    doc: Prop[str] = row_key(kw_only=False)
    body: Prop[str] = prop(default="")


class Spelled(EntityBase):
    """The keys declared with prop(name=...), the spelling the issue tried."""

    region: Prop[str] = prop(name="PartitionKey")
    code: Prop[str] = prop(name="RowKey")
    title: Prop[str]


class Big(Order):
    """A subclass inherits the domain keys."""

    rush: Prop[bool] = prop(default=False)


def test_construction_names_and_aliases() -> None:
    o = Order(customer_id="c-1", order_id="o-7", total=9.5)
    assert (o.customer_id, o.order_id, o.PartitionKey, o.RowKey) == ("c-1", "o-7", "c-1", "o-7")
    assert Order.PartitionKey is Order.customer_id
    assert Order.RowKey is Order.order_id
    assert repr(o) == (
        "Order(customer_id='c-1', order_id='o-7', Timestamp=None, ETag=None, total=9.5, "
        "items=0, note=None, placed=None)"
    )
    assert Positional("t", "d").tenant == "t"
    assert Spelled(region="eu", code="x1", title="T").PartitionKey == "eu"
    with pytest.raises(TypeError):
        cast(Any, Order)("c-1", "o-7")  # keyword-only, as mypy says too


def test_alias_assignment_is_checked_and_writes_the_slot() -> None:
    o = Order(customer_id="c-1", order_id="o-7")
    o.PartitionKey = "c-2"
    assert o.customer_id == "c-2"
    with pytest.raises(ValidationError, match=r"Order\.customer_id"):
        o.PartitionKey = "a/b"
    with pytest.raises(ValidationError, match=r"Order\.order_id"):
        o.order_id = "a#b"
    with pytest.raises(ValidationError, match=r"Order\.customer_id"):
        Order(customer_id="a?b", order_id="o")
    assert o.customer_id == "c-2"


def test_entity_classes_keep_plain_slots() -> None:
    """No alias (a Python property) on classes whose keys keep their names: their reads
    stay slot reads."""

    class Plain(Entity):
        n: Prop[int] = prop(default=0)

    for cls in (Plain, Entity):
        raw = type.__getattribute__(cls, "__dict__").get("PartitionKey")
        assert raw is None or not isinstance(raw, property)
    raw = type.__getattribute__(Order, "__dict__")["PartitionKey"]
    assert isinstance(raw, property)


def test_entity_info_keys_first() -> None:
    info = entity_info(Order)
    assert info.partition_key is Order.customer_id
    assert info.row_key is Order.order_id
    assert [p.attr for p in info.props][:4] == ["customer_id", "order_id", "Timestamp", "ETag"]
    assert info.by_wire["PartitionKey"].attr == "customer_id"
    assert Order.customer_id.is_key
    assert Order.customer_id.system
    assert not Order.total.is_key
    assert entity_info(Big).partition_key is Big.customer_id


def test_codec_round_trip() -> None:
    placed = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    o = Order(customer_id="c-1", order_id="o-7", total=9.5, items=2**40, placed=placed)
    e = o.to_entity()
    assert dict(e) == {
        "PartitionKey": "c-1",
        "RowKey": "o-7",
        "total": 9.5,
        "ItemCount": 2**40,
        "placed": placed,
    }
    assert "customer_id" not in e
    assert "order_id" not in e
    assert Order.from_entity(e) == o
    j = codec_for(Order).to_json(o)
    assert j["PartitionKey"] == "c-1"
    assert j["RowKey"] == "o-7"
    assert j["ItemCount@odata.type"] == "Edm.Int64"
    assert codec_for(Order).from_json(j) == o
    (back,) = codec_for(Order).decode_rows([j])
    assert back == o
    assert back.customer_id == "c-1"


def test_page_decoder_general_path_and_projection() -> None:
    rows: list[dict[str, Any]] = [
        {"PartitionKey": "c", "RowKey": "1", "total": 1},
        {"PartitionKey": "c", "RowKey": "2", "total": None},  # a null: the general path
    ]
    out = codec_for(Order).decode_rows(rows)
    assert [(o.customer_id, o.order_id, o.total) for o in out] == [
        ("c", "1", 1.0),
        ("c", "2", 0.0),
    ]
    projected = codec_for(Order, frozenset({"PartitionKey", "RowKey", "total"}))
    (p,) = projected.decode_rows([{"PartitionKey": "c", "RowKey": "3", "total": 2.0}])
    assert (p.customer_id, p.order_id, p.total) == ("c", "3", 2.0)
    assert "<not selected>" in repr(p)


def test_missing_required_property_names_the_row_by_its_keys() -> None:
    with pytest.raises(MissingPropertyError, match=r"PartitionKey='eu' RowKey='x1'.*'title'"):
        Spelled.from_entity({"PartitionKey": "eu", "RowKey": "x1"})
    with pytest.raises(MissingPropertyError, match=r"PartitionKey='eu' RowKey='x1'.*'title'"):
        codec_for(Spelled).decode_rows([{"PartitionKey": "eu", "RowKey": "x1"}])
    with pytest.raises(MissingPropertyError, match="'RowKey'"):
        Spelled.from_entity({"PartitionKey": "eu", "title": "t"})


def test_queries_plan_by_domain_key_names() -> None:
    q = Query(Order).where(Order.customer_id == "c-1", Order.total > 5.0)
    assert q.compile().filter == "PartitionKey eq 'c-1' and total gt 5.0"
    plan = q.explain()
    assert plan.kind is PlanKind.ROW_RANGE
    assert plan.partition_key == "c-1"
    assert "PartitionKey='c-1'" in str(plan)
    point = Query(Order).where(Order.customer_id == "c-1", Order.order_id == "o-7").explain()
    assert point.kind is PlanKind.POINT
    prefix = Query(Order).where(Order.customer_id == "c", Order.order_id.startswith("2024-"))
    plan = prefix.explain()
    assert plan.kind is PlanKind.ROW_RANGE
    assert plan.row_range is not None
    assert plan.row_range.low == "2024-"
    multi = Query(Order).where(Order.customer_id.in_(["a", "b"])).explain()
    assert multi.kind is PlanKind.MULTI
    scan = Query(Order).where(Order.total > 1.0).explain()
    assert scan.kind is PlanKind.FULL_SCAN
    # the composite key helpers (azt.keys) with domain-named columns
    ranged = Query(Order).where(Order.customer_id.startswith(composite_prefix("eu"))).explain()
    assert ranged.kind is PlanKind.PARTITION_RANGE
    assert ranged.filter == "PartitionKey ge 'eu;' and PartitionKey lt 'eu<'"
    buckets = Query(Order).where(Order.customer_id.in_(all_buckets(4, "c"))).explain()
    assert buckets.kind is PlanKind.MULTI
    assert Order(customer_id=composite_key("eu", "c-1"), order_id="o").PartitionKey == "eu;c-1"
    # the service's name builds the same condition
    assert str(Order.PartitionKey == "c") == str(Order.customer_id == "c")
    assert Query(Order).table_name == "orders"


def test_select_keeps_the_keys() -> None:
    cq = Query(Order).select(Order.total).compile()
    assert cq.select == ("PartitionKey", "RowKey", "Timestamp", "total")


def test_tracker_access_reads_keys_by_domain_name() -> None:
    o = Order(customer_id="c-1", order_id="o-7", total=2.0)
    acc = access_for(o)
    assert acc.keys(o) == ("c-1", "o-7")
    snap = acc.snapshot(o)
    assert "c-1" not in snap
    assert "o-7" not in snap
    o.total = 3.0
    assert acc.diff(snap, acc.snapshot(o)) == (["total"], [])
    payload = acc.payload(o, ["total"])
    assert dict(payload) == {"PartitionKey": "c-1", "RowKey": "o-7", "total": 3.0}


def test_resolvers_choose_domain_keyed_classes() -> None:
    r = by_row_key_prefix({"o-": Order})
    got = r.decoder(None)(TableEntity(PartitionKey="c", RowKey="o-1", total=1.0))
    assert isinstance(got, Order)
    assert got.order_id == "o-1"


def _declare(body: str, base: str = "EntityBase") -> None:
    src = f"class Bad({base}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    exec(
        src,
        {
            "Entity": Entity,
            "EntityBase": EntityBase,
            "Order": Order,
            "Prop": Prop,
            "prop": prop,
            "partition_key": partition_key,
            "row_key": row_key,
        },
    )


@pytest.mark.parametrize(
    ("base", "body", "message"),
    [
        # Entity already has its keys: a second one, with the way out named
        (
            "Entity",
            "customer_id: Prop[str] = prop(name='PartitionKey')",
            r"second PartitionKey: Bad has one, Entity.PartitionKey; .*EntityBase",
        ),
        ("Entity", "order_id: Prop[str] = row_key()", "second RowKey.*EntityBase"),
        # two in one class
        (
            "EntityBase",
            "a: Prop[str] = partition_key()\nb: Prop[str] = partition_key()",
            r"Bad.b would be a second PartitionKey: Bad has one, Bad.a$",
        ),
        # a subclass adds another
        ("Order", "other: Prop[str] = partition_key()", "second PartitionKey: Bad has one, "),
        ("Order", "customer_id: Prop[str] = partition_key()", "redefines a system property"),
        # keys are str
        ("EntityBase", "a: Prop[int] = prop(name='PartitionKey')", "non-optional str"),
        ("EntityBase", "a: Prop[str | None] = row_key()", "non-optional str"),
        # a domain name that is another property's stored name
        (
            "EntityBase",
            "customer_id: Prop[str] = partition_key()\nr: Prop[str] = row_key()\n"
            "other: Prop[str] = prop(name='customer_id')",
            r"Bad.customer_id \(the PartitionKey\) has the name Bad.other is stored under",
        ),
        # the key's own Python name stored under another name
        ("EntityBase", "PartitionKey: Prop[str] = prop(name='pk')", "key's own"),
        ("EntityBase", "RowKey: Prop[str] = prop(name='Code')", "key's own"),
        # the other system names stay reserved, as Python names and as stored names
        ("EntityBase", "stamp: Prop[str] = prop(name='Timestamp')", "reserved"),
        ("EntityBase", "Timestamp: Prop[str] = partition_key()", "redefines a system property"),
        ("EntityBase", "ETag: Prop[str] = row_key()", "redefines a system property"),
    ],
)
def test_ambiguous_declarations_are_refused(base: str, body: str, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        _declare(body, base)


def test_a_class_without_keys_cannot_be_stored() -> None:
    class Audited(EntityBase):
        created_by: Prop[str] = prop(default="")

    with pytest.raises(TypeError, match=r"declares no PartitionKey .* and no RowKey"):
        Audited().to_entity()

    class OnlyPk(EntityBase):
        tenant: Prop[str] = partition_key()

    with pytest.raises(TypeError, match=r"declares no RowKey \(row_key\(\)\)"):
        codec_for(OnlyPk)
    with pytest.raises(TypeError, match="declares no"):
        access_for(OnlyPk(tenant="t"))

    class Keyed(Audited):  # a mixin's properties, keys declared by the subclass
        tenant: Prop[str] = partition_key()
        doc: Prop[str] = row_key()

    k = Keyed(tenant="t", doc="d", created_by="me")
    assert k.to_entity() == {"PartitionKey": "t", "RowKey": "d", "created_by": "me"}


def test_subclass_inherits_domain_keys() -> None:
    b = Big(customer_id="c", order_id="o", rush=True)
    assert b.PartitionKey == "c"
    assert Big.PartitionKey is Big.customer_id
    assert b.to_entity() == {
        "PartitionKey": "c",
        "RowKey": "o",
        "total": 0.0,
        "ItemCount": 0,
        "rush": True,
    }
    assert Big.from_entity(b.to_entity()) == b


def test_field_order_keys_first_unless_a_positional_property_comes_before() -> None:
    class Plain(Entity):
        n: Prop[int] = prop(default=0)

    assert [a.name for a in attrs.fields(cast(Any, Plain))] == [
        "PartitionKey",
        "RowKey",
        "Timestamp",
        "ETag",
        "n",
    ]
    assert [a.name for a in attrs.fields(cast(Any, Order))][:4] == [
        "customer_id",
        "order_id",
        "Timestamp",
        "ETag",
    ]

    class Early(EntityBase):
        version: Prop[int] = prop(kw_only=False)
        tenant: Prop[str] = partition_key(kw_only=False)
        doc: Prop[str] = row_key(kw_only=False)

    # __init__ takes positional arguments in declaration order, as type checkers see it
    e = Early(3, "t", "d")
    assert (e.version, e.tenant, e.doc) == (3, "t", "d")
    assert repr(e) == "Early(tenant='t', doc='d', Timestamp=None, ETag=None, version=3)"
