"""The blocking batch writer: the same grouping, limits, write-back and failure report as
:class:`azt.BatchWriter`, used with ``with`` and without ``await``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import azt
import azt.sync
from azt.dynamic import DynamicEntity
from azt.entity import Entity, Prop, prop
from azt.testing import unique_table_name


class Film(Entity):
    """PartitionKey = shelf, RowKey = number."""

    year: Prop[int] = prop(name="Year", default=0)


@pytest.fixture
def table(azt_connection_string: str) -> Iterator[azt.sync.TableClient]:
    name = unique_table_name("bw")
    with azt.sync.TableClient.from_connection_string(azt_connection_string, name) as client:
        client.create_table()
        yield client
        client.delete_table()


def test_blocking_writer_groups_sends_and_writes_back(table: azt.sync.TableClient) -> None:
    films = [Film("p", f"{i:03d}", year=1900 + i) for i in range(120)]
    dyn = DynamicEntity("q", "d", Year=1979)
    with table.batch_writer() as writer:
        assert isinstance(writer, azt.sync.BatchWriter)
        for film in films:
            writer.upsert(film)
        writer.insert(dyn)
        writer.insert({"PartitionKey": "q", "RowKey": "m"})
    assert writer.transactions == 3  # p: 100 + 20, q: 2
    assert all(o.ok for o in writer.results)
    assert all(f.ETag is not None and f.Timestamp is not None for f in films)
    assert dyn.ETag is not None
    assert dyn.Timestamp is not None
    assert table.get_entity("p", "007").metadata.etag == films[7].ETag
    assert len(list(table.query_entities("PartitionKey eq 'p'"))) == 120


def test_blocking_writer_raises_failures_on_exit(table: azt.sync.TableClient) -> None:
    table.insert_entity({"PartitionKey": "p", "RowKey": "1"})
    writer = table.batch_writer()
    writer.__enter__()
    writer.insert({"PartitionKey": "p", "RowKey": "1"})  # exists: the transaction fails
    writer.insert({"PartitionKey": "p", "RowKey": "2"})
    with pytest.raises(azt.BatchWriteError) as info:
        writer.__exit__(None, None, None)
    failed = [f for f in info.value.failures if f.caused_failure]
    assert [(f.index, f.row_key) for f in failed] == [(0, "1")]
    assert isinstance(failed[0].error, azt.TransactionError)
    assert failed[0].error.code == "EntityAlreadyExists"
    with pytest.raises(azt.EntityNotFoundError):
        table.get_entity("p", "2")  # same transaction: not applied
