"""The legacy Python SDK drop-in (``azt.legacy.TableService`` and its models).

The end-to-end comparison with the real azure-cosmosdb-table 1.0.6 lives in
``tests/peers/legacy_dropin`` (``scripts/test-legacy-peer.sh dropin``); here the azt half
of those scripts runs on its own, plus the pieces that need no service.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from azt._edm.entity import EntityMetadata, TableEntity
from azt._edm.types import EdmType as AztEdm
from azt._edm.types import Typed
from azt.legacy import (
    AzureBatchValidationError,
    AzureConflictHttpError,
    AzureHttpError,
    AzureMissingResourceHttpError,
    EdmType,
    Entity,
    EntityProperty,
    ListGenerator,
    TableBatch,
    TableService,
)
from azt.legacy._loop import LoopThread
from azt.legacy._models import from_azt_entity, to_azt_entity
from azt.legacy.cosmosdb_table.tableservice import TableService as PathTableService

REPO = Path(__file__).resolve().parents[2]


def test_the_legacy_module_paths_give_the_same_classes() -> None:
    assert PathTableService is TableService


def test_entity_is_a_dict_with_attributes() -> None:
    e = Entity(PartitionKey="p")
    e.RowKey = "r"
    assert e == {"PartitionKey": "p", "RowKey": "r"}
    del e.RowKey
    with pytest.raises(AttributeError):
        _ = e.RowKey


def test_http_errors_pick_their_class_by_status() -> None:
    assert type(AzureHttpError("x", 404)) is AzureMissingResourceHttpError
    assert type(AzureHttpError("x", 409)) is AzureConflictHttpError
    err = AzureHttpError("x", 412)
    assert type(err) is AzureHttpError
    assert err.status_code == 412


def test_writing_follows_the_legacy_typing_rules() -> None:
    body = to_azt_entity(
        {"PartitionKey": "p", "RowKey": "r", "n": 5, "etag": "W/x", "Timestamp": 1, "x": None}
    )
    assert body["n"] == Typed(5, AztEdm.INT64)
    assert "etag" not in body
    assert "Timestamp" not in body
    with pytest.raises(TypeError):
        to_azt_entity({"PartitionKey": "p", "RowKey": "r", "b": b"raw"})
    with pytest.raises(TypeError):
        to_azt_entity(
            {"PartitionKey": "p", "RowKey": "r", "n": EntityProperty(EdmType.INT32, 2**31)}
        )
    with pytest.raises(ValueError, match="RowKey"):
        to_azt_entity({"PartitionKey": "p"})


def test_datetimes_keep_their_microseconds() -> None:
    # the legacy SDK truncated written datetimes to whole seconds; azt keeps them
    when = datetime(2020, 1, 2, 3, 4, 5, 123456)
    body = to_azt_entity({"PartitionKey": "p", "RowKey": "r", "d": when})
    assert body["d"] == when.replace(tzinfo=UTC)


def test_reading_gives_the_legacy_shapes() -> None:
    entity = TableEntity(PartitionKey="p", RowKey="r", small=1, big=2**40, flag=True)
    entity.edm_types["big"] = AztEdm.INT64
    entity.metadata = EntityMetadata(etag="W/etag")
    legacy = from_azt_entity(entity)
    assert isinstance(legacy["small"], EntityProperty)
    assert legacy["small"].type == EdmType.INT32
    assert legacy["big"] == 2**40
    assert legacy.etag == "W/etag"


def test_batch_validation() -> None:
    batch = TableBatch()
    batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})
    with pytest.raises(AzureBatchValidationError):
        batch.insert_entity({"PartitionKey": "b", "RowKey": "2"})
    with pytest.raises(AzureBatchValidationError):
        batch.delete_entity("a", "1")
    assert len(batch.operations) == 1


def test_list_generator_stops_at_num_results() -> None:
    pages = {"m1": (["c", "d"], "m2"), "m2": (["e"], None)}
    calls: list[tuple[object, int | None]] = []

    def fetch(marker: object, left: int | None) -> tuple[list[object], object]:
        calls.append((marker, left))
        items, nxt = pages[str(marker)]
        return list(items), nxt

    gen = ListGenerator(["a", "b"], "m1", fetch, 4)
    assert list(gen) == ["a", "b", "c", "d"]
    assert gen.next_marker == "m2"
    assert calls == [("m1", 2)]


def test_constructor_forms() -> None:
    with pytest.raises(ValueError, match="account name"):
        TableService()
    with TableService(is_emulated=True) as emulated:
        assert emulated.primary_endpoint == "127.0.0.1:10002/devstoreaccount1"
        assert emulated.account_name == "devstoreaccount1"
    with TableService(account_name="acct", sas_token="sv=2017-04-17&sig=x") as sas:
        assert sas.primary_endpoint == "acct.table.core.windows.net"
        with pytest.raises(ValueError, match="account_key"):
            sas.generate_table_shared_access_signature("t", "r", expiry="2030-01-01")


async def test_the_loop_thread_works_under_a_running_loop() -> None:
    async def double(x: int) -> int:
        await asyncio.sleep(0)
        return 2 * x

    runner = LoopThread()
    assert runner.run(double(21)) == 42  # called from inside this test's event loop
    runner.close()
    runner.close()
    with pytest.raises(RuntimeError):
        runner.run(double(1))


def test_the_azt_half_of_the_dropin_scripts() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tests/peers/legacy_dropin/run.py"), "--azt-only"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 scripts, 0 with differences" in done.stdout
