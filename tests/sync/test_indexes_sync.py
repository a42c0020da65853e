"""The blocking forms of verify/build/repair: the same reports as the async functions, on
a blocking table client, with an index in the partition and one across partitions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import azt.sync
from azt.entity import Entity, Prop, prop
from azt.indexes import Index
from azt.sync.indexes import build_index, repair_index, verify_index
from azt.testing import unique_table_name


class Person(Entity):
    email: Prop[str | None] = prop(default=None)
    city: Prop[str] = prop(default="")


class IndexedPerson(Entity):
    email: Prop[str | None] = prop(default=None)
    city: Prop[str] = prop(default="")

    class Meta:
        indexes = (
            Index("by_city", "city"),
            Index("by_email", "email", across_partitions=True),
        )


@pytest.fixture
def table(azt_connection_string: str) -> Iterator[azt.sync.TableClient]:
    name = unique_table_name("ixs")
    with azt.sync.TableClient.from_connection_string(azt_connection_string, name) as client:
        client.create_table()
        yield client
        client.delete_table()


def test_adopt_verify_and_repair_blocking(table: azt.sync.TableClient) -> None:
    for i in range(4):
        table.insert_entity(Person(f"p{i % 2}", f"r{i}", email=f"e{i}@x.com", city="Oslo"))
    seen: list[str] = []
    before = verify_index(table, IndexedPerson, progress=lambda pk, report: seen.append(pk))
    assert (before.entities, before.missing, before.consistent) == (4, 8, False)
    assert seen == ["p0", "p1"]
    assert build_index(table, IndexedPerson).written == 8
    assert verify_index(table, IndexedPerson).consistent
    table.delete_entity("p0", "r0")  # a raw delete: its two index rows become orphans
    assert verify_index(table, IndexedPerson).orphans == 2
    assert repair_index(table, IndexedPerson).deleted == 2
    found = azt.sync.Query(IndexedPerson, table).where(IndexedPerson.email == "e1@x.com").to_list()
    assert [(p.PartitionKey, p.RowKey) for p in found] == [("p1", "r1")]
