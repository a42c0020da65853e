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

from azt.legacy import (
    AzureBatchValidationError,
    AzureConflictHttpError,
    AzureException,
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
from azt.legacy._wire import check_entity, entity_json, json_entity
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
    body = entity_json(
        {"PartitionKey": "p", "RowKey": "r", "n": 5, "etag": "W/x", "Timestamp": 1, "x": None}
    )
    assert body["n"] == "5"
    assert body["n@odata.type"] == "Edm.Int64"
    assert body["x"] is None  # sent as null, as the legacy SDK did (the service drops it)
    assert "etag" not in body
    assert "Timestamp" not in body
    with pytest.raises(TypeError):
        entity_json({"PartitionKey": "p", "RowKey": "r", "b": b"raw"})
    with pytest.raises(TypeError, match=r"too large to be cast to type Edm\.Int32"):
        entity_json({"PartitionKey": "p", "RowKey": "r", "n": EntityProperty(EdmType.INT32, 2**31)})
    with pytest.raises(ValueError, match="RowKey"):
        check_entity({"PartitionKey": "p"})


def test_typed_values_are_sent_as_the_legacy_sdk_sent_them() -> None:
    # EntityProperty(BOOLEAN, 'true') and (STRING, 5) go unannotated, as given; the service
    # then stores a string and an Int32, as it did for the legacy SDK
    body = entity_json(
        {
            "PartitionKey": "p",
            "RowKey": "r",
            "flag": EntityProperty(EdmType.BOOLEAN, "true"),
            "text": EntityProperty(EdmType.STRING, 5),
            "big": EntityProperty(EdmType.INT64, "1234567890"),
            "id": EntityProperty(EdmType.GUID, "not-a-guid"),
            "nan": float("nan"),
        }
    )
    assert body["flag"] == "true"
    assert "flag@odata.type" not in body
    assert body["text"] == 5
    assert (body["big"], body["big@odata.type"]) == ("1234567890", "Edm.Int64")
    assert (body["id"], body["id@odata.type"]) == ("not-a-guid", "Edm.Guid")
    assert (body["nan"], body["nan@odata.type"]) == ("NaN", "Edm.Double")


def test_datetimes_keep_their_microseconds() -> None:
    # the legacy SDK truncated written datetimes to whole seconds; azt keeps them
    when = datetime(2020, 1, 2, 3, 4, 5, 123456)
    body = entity_json({"PartitionKey": "p", "RowKey": "r", "d": when})
    assert body["d"] == "2020-01-02T03:04:05.123456Z"
    assert body["d@odata.type"] == "Edm.DateTime"


def test_reading_gives_the_legacy_shapes() -> None:
    row = {
        "odata.etag": "W/etag",
        "PartitionKey": "p",
        "RowKey": "r",
        "small": 1,
        "big": str(2**40),
        "big@odata.type": "Edm.Int64",
        "flag": True,
    }
    legacy = json_entity(row)
    assert isinstance(legacy["small"], EntityProperty)
    assert legacy["small"].type == EdmType.INT32
    assert legacy["big"] == 2**40
    assert legacy.etag == "W/etag"


def test_a_timestamp_gives_the_etag_as_the_legacy_sdk_derived_it() -> None:
    row = {"PartitionKey": "p", "RowKey": "r", "Timestamp": "2020-01-02T03:04:05.1234567Z"}
    legacy = json_entity(row)
    assert legacy.etag == "W/\"datetime'2020-01-02T03%3A04%3A05.1234567Z'\""
    assert legacy.Timestamp == datetime(2020, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def test_nometadata_rows_stay_untyped_unless_a_resolver_types_them() -> None:
    row = {"PartitionKey": "p", "RowKey": "r", "big": "39", "when": "1973-10-04T00:00:00Z"}
    assert json_entity(row).big == "39"
    seen: list[tuple[object, ...]] = []

    def resolver(pk: object, rk: object, name: str, value: object, edm: object) -> str | None:
        seen.append((pk, rk, name, value, edm))
        return {"big": EdmType.INT64, "when": EdmType.DATETIME}.get(name)

    typed = json_entity(row, resolver)
    assert typed.big == 39
    assert typed.when == datetime(1973, 10, 4, tzinfo=UTC)
    assert ("p", "r", "big", "39", None) in seen
    with pytest.raises(AzureException, match="Type not supported"):
        json_entity(row, lambda *args: "badType")
    with pytest.raises(AzureException, match="property resolver returned an invalid type"):
        json_entity({"PartitionKey": "p", "RowKey": "r", "s": "x"}, lambda *a: EdmType.INT64)


def test_batch_validation() -> None:
    batch = TableBatch()
    batch.insert_entity({"PartitionKey": "a", "RowKey": "1"})
    with pytest.raises(AzureBatchValidationError):
        batch.insert_entity({"PartitionKey": "b", "RowKey": "2"})
    with pytest.raises(AzureBatchValidationError):
        batch.delete_entity("a", "1")
    assert len(batch.requests) == 1


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
