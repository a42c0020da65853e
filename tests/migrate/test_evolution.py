"""Evolution declared on the class: rows of the old shape read typed, writes store the new
one, queries built from the class see old rows where the service can (against the stub,
which compares typed values as Azure does), ``explain()`` says where they cannot, and a
class without an evolution keeps its plain generated codec."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest

import azt
from azt.context import TableContext
from azt.edm import EdmType, TableEntity, Typed
from azt.entity import Entity, EntityTable, Int64, Prop, prop
from azt.migrate import (
    Evolution,
    converted,
    defaulted,
    dropped,
    parsed,
    renamed,
    widened,
)
from azt.query import Query
from azt_server_stub import StubServer
from tests.migrate.models import Customer


class Plain(Entity):
    n: Prop[int] = prop(default=0)


class Priced(Entity):
    """Prices were dollars (a Double), now cents (an Int64): the marker tells them apart."""

    cents: Prop[Int64] = prop(name="Price", default=0)
    rating: Prop[float] = prop(name="Rating", default=0.0)

    class Meta:
        evolution = Evolution(
            converted("cents", lambda dollars: round(dollars * 100), stored=None),
            widened("rating"),
            marker="V",
            version=3,
        )


class Person(Entity):
    """Customer without indexes (its filters carry no main-rows bound)."""

    full_name: Prop[str] = prop(name="FullName", default="")
    visits: Prop[Int64] = prop(name="Visits", default=0)

    class Meta:
        evolution = Evolution(renamed("full_name", "Name"), widened("visits"))


OLD = {
    "PartitionKey": "c1",
    "RowKey": "1",
    "Name": "Ada",
    "Visits": 7,
    "Joined": "2020-01-02T03:04:05",
    "City": "Oslo",
    "Legacy": "x",
}


def test_a_class_without_evolution_keeps_its_plain_codec() -> None:
    from azt._orm.codec import EntityCodec, codec_for

    assert type(codec_for(Plain)) is EntityCodec  # no wrapper, no extra call per row
    assert type(codec_for(Customer)) is not EntityCodec


@pytest.mark.parametrize("form", ["json", "value"])
def test_old_rows_read_typed_and_write_the_new_shape(form: str) -> None:
    from azt._orm.codec import codec_for

    if form == "json":
        obj = codec_for(Customer).decode_rows([dict(OLD)])[0]
    else:
        obj = Customer.from_entity(TableEntity(OLD))
    assert obj.full_name == "Ada"
    assert obj.visits == 7
    assert obj.tier == "basic"
    assert obj.joined == datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC)
    wire = obj.to_entity()
    assert dict(wire) == {
        "PartitionKey": "c1",
        "RowKey": "1",
        "FullName": "Ada",
        "Visits": 7,
        "Joined": obj.joined,
        "Tier": "basic",
        "City": "Oslo",
        "Shape": 2,
    }
    assert wire.edm_types["Visits"] is EdmType.INT64
    # nothing the row held is "lost" by a replace: Name moved, Legacy is declared dropped
    assert getattr(obj, "_azt_partial", None) is None


def test_the_current_name_wins_and_the_new_shape_reads_as_is() -> None:
    both = {**OLD, "FullName": "Ada Lovelace", "Tier": "gold"}
    obj = Customer.from_entity(TableEntity(both))
    assert (obj.full_name, obj.tier) == ("Ada Lovelace", "gold")
    new = Customer("c1", "2", full_name="Bob", visits=2**40, tier="new")
    again = Customer.from_entity(new.to_entity())
    assert again == new


def test_a_marker_tells_old_rows_from_new_when_the_type_does_not() -> None:
    old = Priced.from_entity(TableEntity(PartitionKey="p", RowKey="r", Price=12.5, Rating=4))
    assert (old.cents, old.rating) == (1250, 4.0)
    stored = old.to_entity()
    assert stored["V"] == 3
    assert stored["Price"] == 1250
    assert Priced.from_entity(stored).cents == 1250  # not converted twice
    # the JSON body of a write carries the marker too, and reads back unconverted
    from azt._orm.codec import codec_for

    body = codec_for(Priced).to_json(old)
    assert (body["V"], body["Price"], body["Price@odata.type"]) == (3, "1250", "Edm.Int64")
    assert codec_for(Priced).from_json(body).cents == 1250
    with pytest.raises(TypeError, match="marker"):

        class NoMarker(Entity):
            cents: Prop[int] = prop(default=0)

            class Meta:
                evolution = Evolution(converted("cents", int, stored=None))


def test_declaration_errors_name_the_class() -> None:
    with pytest.raises(TypeError, match="has no property 'nope'"):

        class Bad(Entity):
            a: Prop[str] = prop(default="")

            class Meta:
                evolution = Evolution(renamed("nope", "Old"))

    with pytest.raises(TypeError, match="only Int32 widens"):

        class Bad2(Entity):
            a: Prop[str] = prop(default="")

            class Meta:
                evolution = Evolution(widened("a"))

    with pytest.raises(TypeError, match="stored name of the class"):

        class Bad3(Entity):
            a: Prop[str] = prop(default="")
            b: Prop[str] = prop(default="")

            class Meta:
                evolution = Evolution(renamed("a", "b"))


def test_filters_are_rewritten_for_old_names_and_types() -> None:
    q = Query(Person).where(Person.full_name == "Ada", Person.visits >= 5)
    assert q.compile().filter == "(FullName eq 'Ada' or Name eq 'Ada') and Visits ge 5"
    big = Query(Person).where(Person.visits < 2**40).compile().filter
    assert big == "Visits lt 1099511627776L or (Visits ge -2147483648 and Visits le 2147483647)"
    assert Query(Person).where(Person.visits > 2**40).compile().filter == (
        "Visits gt 1099511627776L"
    )
    half = Query(Priced).where(Priced.rating > 4.5).compile().filter
    assert half == "Rating gt 4.5 or Rating ge 5"  # a Double 4.2 passes neither
    assert Query(Priced).where(Priced.rating == 4.5).compile().filter == "Rating eq 4.5"
    assert Query(Priced).where(Priced.rating <= 4.0).compile().filter == "Rating le 4"
    assert Query(Priced).where(Priced.rating != 4.5).compile().filter == (
        "Rating ne 4.5 or Rating le 4 or Rating ge 5"
    )


def test_explain_names_the_filters_that_cannot_see_old_rows() -> None:
    joined = datetime(2021, 1, 1, tzinfo=UTC)
    plan = Query(Customer).where(Customer.joined > joined, Customer.tier == "gold").explain()
    assert len(plan.notes) == 2
    assert "Customer.joined (Joined) cannot see values stored as Edm.String" in plan.notes[0]
    assert "does not match rows without it (read as 'basic')" in plan.notes[1]
    assert "note: the filter on Customer.joined" in str(plan)
    # plans compare by what they send; the notes are commentary on it
    assert attrs.evolve(plan, notes=()) == plan
    assert attrs.evolve(plan, filter="x") != plan
    assert Query(Customer).where(Customer.full_name == "x").explain().notes == ()
    assert Query(Plain).where(Plain.n == 1).explain().notes == ()


async def test_queries_find_old_and_new_rows_on_the_service(azt_stub: StubServer) -> None:
    async with azt.TableServiceClient.from_connection_string(azt_stub.connection_string) as service:
        table = await service.create_table("evolving")
        await table.insert_entity(dict(OLD))  # version 1, as stored by old code
        await table.insert_entity(
            {**OLD, "RowKey": "2", "Name": "Eve", "Visits": Typed(9, EdmType.INT32)}
        )
        await EntityTable(Customer, table).insert(
            Customer("c1", "3", full_name="Ada", visits=2**40, tier="new")
        )
        found = await Query(Customer, table).where(Customer.full_name == "Ada").to_list()
        assert sorted(c.RowKey for c in found) == ["1", "3"]
        many = await Query(Customer, table).where(Customer.visits > 8).to_list()
        assert sorted(c.RowKey for c in many) == ["2", "3"]  # an Int32 9 and an Int64
        few = await Query(Customer, table).where(Customer.visits < 2**40).to_list()
        assert sorted(c.RowKey for c in few) == ["1", "2"]

        for rk, rating in (("a", 4.2), ("b", Typed(5, EdmType.INT32)), ("c", 4.7), ("d", 4)):
            await table.insert_entity({"PartitionKey": "r", "RowKey": rk, "Rating": rating})
        rq = Query(Priced, table).where(Priced.PartitionKey == "r")
        assert [p.RowKey for p in await rq.where(Priced.rating > 4.5).to_list()] == ["b", "c"]
        assert [p.RowKey for p in await rq.where(Priced.rating <= 4.0).to_list()] == ["d"]
        assert [p.RowKey for p in await rq.where(Priced.rating != 4.7).to_list()] == [
            "a",
            "b",
            "d",
        ]

        # the context MERGEs the whole object (and the marker) of an evolving class, so
        # an old row it updates reads in the new shape
        ctx = TableContext(service)
        [eve] = await ctx.query(Customer, table).where(Customer.RowKey == "2").to_list()
        eve.tier = "gold"
        await ctx.save_changes()
        stored = await table.get_entity("c1", "2")
        assert stored["Shape"] == 2
        assert stored["FullName"] == "Eve"
        assert "Name" in stored
        again = await EntityTable(Customer, table).get("c1", "2")
        assert (again.full_name, again.tier, again.visits) == ("Eve", "gold", 9)
        await EntityTable(Customer, table).save(again)  # a replace: Name is gone
        assert "Name" not in await table.get_entity("c1", "2")


def test_dropped_names_are_declared() -> None:
    assert dropped("A").kind == "dropped"
    with pytest.raises(TypeError):
        dropped()
    assert parsed("x").stored is EdmType.STRING
    assert defaulted("x", 1).value == 1
