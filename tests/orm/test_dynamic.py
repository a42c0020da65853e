"""Dynamic entities and resolvers: the seeds' member/rental table."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from azt._errors import ValidationError
from azt.dynamic import DynamicEntity, Resolver, by_property, by_row_key_prefix, column
from azt.edm import EdmDateTime, EdmType, TableEntity, Typed
from azt.entity import Entity
from azt.query import Query

from .conftest import Recording
from .models import Kinded, Member, Rental


def test_property_bag_types_and_validation() -> None:
    e = DynamicEntity("m-1", "Member", Name="Ann", Big=2**40, Small=Typed(5, EdmType.INT64))
    assert e.types == {"Name": EdmType.STRING, "Big": EdmType.INT64, "Small": EdmType.INT64}
    e["When"] = datetime(2020, 1, 1, tzinfo=UTC)
    assert isinstance(e["When"], EdmDateTime)
    e["Name"] = None  # not stored
    assert "Name" not in e
    with pytest.raises(ValidationError, match="naive"):
        e["When"] = datetime(2020, 1, 1)
    with pytest.raises(ValidationError):
        e["bad-name"] = 1
    with pytest.raises(ValidationError, match="system property"):
        e["RowKey"] = "x"
    with pytest.raises(ValidationError):
        e["x"] = [1, 2]
    with pytest.raises(ValidationError):
        DynamicEntity("a/b", "r")
    ent = e.to_entity()
    assert ent.edm_types["Small"] is EdmType.INT64
    assert dict(ent) == {
        "PartitionKey": "m-1",
        "RowKey": "Member",
        "Big": 2**40,
        "Small": 5,
        "When": e["When"],
    }


def test_keys_and_strings_are_validated_on_assignment_too() -> None:
    e = DynamicEntity("p", "r", Name="Ann")
    for bad in ("a/b", 5, "\ud800"):
        with pytest.raises(ValidationError):
            e.PartitionKey = bad  # type: ignore[assignment]
        with pytest.raises(ValidationError):
            e.RowKey = bad  # type: ignore[assignment]
    assert (e.PartitionKey, e.RowKey) == ("p", "r")  # nothing lost
    e.RowKey = "Member"
    assert e.to_entity()["RowKey"] == "Member"
    with pytest.raises(ValidationError, match="lone surrogate"):
        e["Name"] = "a\ud800"
    with pytest.raises(ValidationError, match="lone surrogate"):
        e.set("Name", "\udc00", EdmType.STRING)
    assert e["Name"] == "Ann"


def test_from_entity_keeps_types_for_read_modify_write() -> None:
    ent = TableEntity(PartitionKey="p", RowKey="r", N=5, F=1.0)
    ent.edm_types = {"N": EdmType.INT64}
    d = DynamicEntity.from_entity(ent)
    assert d.types == {"N": EdmType.INT64, "F": EdmType.DOUBLE}
    assert d.to_entity().edm_types["N"] is EdmType.INT64


async def test_dynamic_round_trip_through_the_backend(orm_table: Recording) -> None:
    rows = [
        DynamicEntity("p", "1", A=1, B="x", C=Typed(7, EdmType.INT64)),
        DynamicEntity("p", "2", D=b"\x00", E=2.5, F=True),
    ]
    for r in rows:
        await orm_table.insert(r)
    got = await Query(DynamicEntity, orm_table).to_list()
    assert got == rows
    assert all(g.ETag for g in got)
    filtered = await Query(DynamicEntity, orm_table).where(column("E", float) > 2).to_list()
    assert [g.RowKey for g in filtered] == ["2"]
    big = (
        await Query(DynamicEntity, orm_table).where(column("C", int, EdmType.INT64) == 7).to_list()
    )
    assert [g.RowKey for g in big] == ["1"]


async def test_member_and_rentals_in_one_partition(orm_table: Recording) -> None:
    due = datetime(2024, 1, 1, tzinfo=UTC)
    rows: list[Entity | DynamicEntity] = [
        Member("m-17", "Member", name="Ann", rental_count=2),
        Rental("m-17", "Rental_Alien", movie="Alien", due=due),
        Rental("m-17", "Rental_Heat", movie="Heat", due=due),
        Member("m-18", "Member", name="Bob"),
        DynamicEntity("m-17", "Note_1", Text="late twice"),
    ]
    for r in rows:
        await orm_table.insert(r)
    resolver: Resolver[Member | Rental | DynamicEntity] = by_row_key_prefix(
        {"Member": Member, "Rental_": Rental}
    )
    got = await Query(resolver, orm_table).where(Entity.PartitionKey == "m-17").to_list()
    assert [type(g).__name__ for g in got] == ["Member", "DynamicEntity", "Rental", "Rental"]
    assert got[0] == rows[0]
    assert got[2] == rows[1]
    assert got[1] == rows[4]
    # just the rentals: a RowKey range within the partition
    q = Query(resolver, orm_table).where(
        Entity.PartitionKey == "m-17", Entity.RowKey.startswith("Rental_")
    )
    assert q.explain().kind.value == "row range"
    assert [g.RowKey for g in await q.to_list()] == ["Rental_Alien", "Rental_Heat"]
    strict = by_row_key_prefix({"Member": Member}, fallback=None)
    with pytest.raises(ValidationError, match="no entity class"):
        await Query(strict, orm_table).to_list()


async def test_resolver_by_type_property(orm_table: Recording) -> None:
    await orm_table.insert(Kinded("p", "1", n=3))
    await orm_table.insert(DynamicEntity("p", "2", Kind="other"))
    r = by_property("Kind", {"kinded": Kinded})
    got = await Query(r, orm_table).to_list()
    assert got[0] == Kinded("p", "1", n=3)
    assert isinstance(got[1], DynamicEntity)
    assert got[1]["Kind"] == "other"
    # a projection keeps the discriminator, or every row would fall back
    q = Query(r, orm_table).select(Kinded.n)
    assert q.compile().select == ("PartitionKey", "RowKey", "Timestamp", "n", "Kind")
    projected = await q.to_list()
    assert [type(g) for g in projected] == [Kinded, DynamicEntity]
    assert projected[0] == Kinded("p", "1", n=3)
