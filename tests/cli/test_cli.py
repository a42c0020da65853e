"""Every ``azt`` sub-command against the in-process stub, with exit codes and errors."""

from __future__ import annotations

import argparse
import asyncio
import base64
import csv
import io
import json
import math
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from azt import EdmDateTime, EdmType, LocationMode, TableServiceClient, Typed, __version__
from azt._core.connection_string import parse_connection_string
from azt.cli import (
    EXIT_BROKEN_PIPE,
    EXIT_INCONSISTENT,
    EXIT_INPUT,
    EXIT_SERVICE,
    EXIT_USAGE,
    _retry,
    build_parser,
)
from azt_server_stub import StubConfig, ThreadedStubServer
from azt_server_stub.realism.faults import FaultInjector
from tests.migrate.models import TABLE as MIGRATED_TABLE

from .conftest import run


async def _with_service(conn: str, fn: Any) -> Any:
    async with TableServiceClient.from_connection_string(conn) as service:
        return await fn(service)


def service_call(conn: str, fn: Any) -> Any:
    return asyncio.run(_with_service(conn, fn))


def insert(conn: str, table: str, entities: list[dict[str, Any]]) -> None:
    async def go(service: TableServiceClient) -> None:
        t = await service.create_table_if_not_exists(table)
        if len(entities) < 50:
            for e in entities:
                await t.insert_entity(e)
            return
        by_partition: dict[str, list[dict[str, Any]]] = {}
        for e in entities:
            by_partition.setdefault(e["PartitionKey"], []).append(e)
        for group in by_partition.values():
            for start in range(0, len(group), 100):
                batch = t.batch()
                for e in group[start : start + 100]:
                    batch.create(e)
                await t.submit_transaction(batch)

    service_call(conn, go)


def read_all(conn: str, table: str) -> list[Any]:
    async def go(service: TableServiceClient) -> list[Any]:
        return await service.get_table_client(table).list_entities().to_list()

    result: list[Any] = service_call(conn, go)
    return result


# ------------------------------------------------------------------------------- tables


def test_tables_create_and_list(conn: str, table_name: str) -> None:
    r = run("tables", "create", table_name)
    assert r.status == 0, r.err
    r = run("tables", "list")
    assert r.status == 0
    assert table_name in r.out.splitlines()
    again = run("tables", "create", table_name)
    assert again.status == EXIT_SERVICE
    assert "TableAlreadyExists" in again.err
    assert run("tables", "create", table_name, "--if-not-exists").status == 0


def test_tables_list_prefix(conn: str) -> None:
    for name in ("pfxalpha", "pfxbeta", "pfyother"):
        assert run("tables", "create", name, "--if-not-exists").status == 0
    r = run("tables", "list", "--prefix", "pfx")
    assert r.status == 0
    assert r.out.splitlines() == ["pfxalpha", "pfxbeta"]


def test_connection_string_option_before_or_after_command(
    conn: str, monkeypatch: pytest.MonkeyPatch, table_name: str
) -> None:
    monkeypatch.delenv("AZT_CONNECTION_STRING")
    assert run("--connection-string", conn, "tables", "create", table_name).status == 0
    r = run("tables", "list", "--connection-string", conn)
    assert r.status == 0
    assert table_name in r.out.splitlines()


def test_missing_connection_string(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZT_CONNECTION_STRING", raising=False)
    r = run("tables", "list")
    assert r.status == EXIT_USAGE
    assert "AZT_CONNECTION_STRING" in r.err


def test_bad_connection_string() -> None:
    r = run("tables", "list", "--connection-string", "AccountName=x;Nonsense")
    assert r.status == EXIT_USAGE
    assert "bad connection string" in r.err


def test_unreachable_endpoint() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    conn = (
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
        f"TableEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"
    )
    r = run("tables", "list", "--connection-string", conn, "--retries", "0")
    assert r.status == EXIT_SERVICE
    assert "cannot reach the service" in r.err


def test_use_development_storage(stub: ThreadedStubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``UseDevelopmentStorage=true`` reaches the development account on 127.0.0.1:10002.
    The test does not take port 10002 (tests take free ports): it checks the endpoint the
    CLI's connection string gives, then runs the command against the stub on its own port."""
    real = TableServiceClient.from_connection_string
    given: list[str] = []

    def redirect(connection_string: str, **kwargs: Any) -> TableServiceClient:
        given.append(parse_connection_string(connection_string).endpoint)
        return real(stub.connection_string, **kwargs)

    service_call(
        stub.connection_string, lambda service: service.create_table_if_not_exists("devstorage")
    )
    monkeypatch.setattr(TableServiceClient, "from_connection_string", staticmethod(redirect))
    monkeypatch.delenv("AZT_CONNECTION_STRING", raising=False)
    r = run("tables", "list", "--connection-string", "UseDevelopmentStorage=true")
    assert r.status == 0, r.err
    assert "devstorage" in r.out.splitlines()
    assert given == ["http://127.0.0.1:10002/devstoreaccount1"]


def test_usage_errors() -> None:
    assert run().status == EXIT_USAGE
    assert run("query").status == EXIT_USAGE  # TABLE missing
    assert run("query", "t", "--format", "xml").status == EXIT_USAGE
    assert run("tables", "list", "--retries", "-1").status == EXIT_USAGE


def test_version_and_module_entry_point() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "azt", "--help"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    for command in ("tables", "query", "export", "import"):
        assert command in proc.stdout
    assert run("--version").status == 0
    # The version is azt.__version__ (one source, whatever the distribution is named).
    proc = subprocess.run(
        [sys.executable, "-m", "azt", "--version"], capture_output=True, text=True, check=False
    )
    assert proc.stdout == f"azt {__version__}\n"


# ------------------------------------------------------------------------------- query

MOVIES = [
    {"PartitionKey": "Action", "RowKey": "Heat", "Rating": 4.6, "Year": 1995},
    {"PartitionKey": "Action", "RowKey": "Speed", "Rating": 3.9, "Year": 1994},
    {"PartitionKey": "SciFi", "RowKey": "Alien", "Rating": 4.8, "Year": 1979, "Note": "a,b"},
    {"PartitionKey": "SciFi", "RowKey": "Gattaca", "Rating": 4.1, "Year": 1997},
]


def test_query_table_format(conn: str, table_name: str) -> None:
    insert(conn, table_name, MOVIES)
    r = run("query", table_name, "--filter", "Rating ge 4.5")
    assert r.status == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].split() == ["PartitionKey", "RowKey", "Timestamp", "Rating", "Year", "Note"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].split()[:2] == ["Action", "Heat"]
    assert lines[3].split()[:2] == ["SciFi", "Alien"]
    assert lines[-1] == "(2 entities)"


def test_query_select_top_csv(conn: str, table_name: str) -> None:
    insert(conn, table_name, MOVIES)
    r = run("query", table_name, "--select", "Year,Note", "--top", "3", "--format", "csv")
    assert r.status == 0, r.err
    rows = list(csv.reader(io.StringIO(r.out)))
    assert rows == [
        ["PartitionKey", "RowKey", "Year", "Note"],
        ["Action", "Heat", "1995", ""],
        ["Action", "Speed", "1994", ""],
        ["SciFi", "Alien", "1979", "a,b"],
    ]


def test_query_top_over_several_pages(conn: str, table_name: str) -> None:
    insert(conn, table_name, [{"PartitionKey": "p", "RowKey": f"{i:04d}"} for i in range(30)])
    r = run("query", table_name, "--top", "25", "--format", "jsonl")
    assert r.status == 0
    keys = [json.loads(line)["RowKey"] for line in r.out.splitlines()]
    assert keys == [f"{i:04d}" for i in range(25)]


def test_query_jsonl_is_typed(conn: str, table_name: str) -> None:
    insert(conn, table_name, [{"PartitionKey": "p", "RowKey": "r", "Big": Typed(7, "Edm.Int64")}])
    r = run("query", table_name, "--format", "jsonl")
    row = json.loads(r.out)
    assert row["Big"] == "7"
    assert row["Big@odata.type"] == "Edm.Int64"
    assert row["Timestamp@odata.type"] == "Edm.DateTime"


def test_query_errors(conn: str, table_name: str) -> None:
    r = run("query", "nosuchtable")
    assert r.status == EXIT_SERVICE
    assert "TableNotFound" in r.err
    insert(conn, table_name, MOVIES)
    bad = run("query", table_name, "--filter", "Rating ge")
    assert bad.status == EXIT_USAGE
    assert "400" in bad.err
    assert run("query", table_name, "--top", "0").status == EXIT_USAGE
    assert run("query", table_name, "--select", " , ").status == EXIT_USAGE


# ------------------------------------------------------------------------- export/import

EVERY_TYPE: list[dict[str, Any]] = [
    {
        "PartitionKey": "",
        "RowKey": "empty partition key",
        "S": 'naïve ☃ "quoted"\nline',
        "I32": -(2**31),
        "I64small": Typed(5, EdmType.INT64),
        "I64big": 2**62,
        "D": 2.0,
        "Dfrac": 0.1,
        "Dneg0": -0.0,
        "Dnan": math.nan,
        "Dinf": -math.inf,
        "B": False,
        "T": EdmDateTime.parse("2020-02-29T23:59:59.1234567Z"),
        "G": uuid.UUID("c9da6455-213d-42c9-9a79-3e9149a57833"),
        "Bin": bytes(range(256)),
        "EmptyBin": Typed(b"", EdmType.BINARY),
        "EmptyS": "",
    },
    {
        "PartitionKey": "p",
        "RowKey": "extremes",
        "I32max": 2**31 - 1,
        "I64min": Typed(-(2**63), EdmType.INT64),
        "I64max": Typed(2**63 - 1, EdmType.INT64),
        "I64neg1": Typed(-1, EdmType.INT64),
        "Dmax": 1.7976931348623157e308,
        "Dtiny": 5e-324,  # the smallest subnormal
        "Dpinf": math.inf,
        "Dpi": math.pi,  # 17 significant digits
        "Tmin": EdmDateTime.parse("1601-01-01T00:00:00.0000001Z"),
        "Tmax": EdmDateTime.parse("9999-12-31T23:59:59.9999999Z"),
        "Tticks": EdmDateTime.parse("2024-05-01T12:00:00.0000010Z"),
        "Gzero": uuid.UUID(int=0),
        "Bin1": b"\xff",
        "Bin64k": bytes(i % 251 for i in range(65536)),
        "Ctrl": "\x00\x1c\x1f\x85\u2028\u2029\ud7ff\ue000",
    },
    {"PartitionKey": "p", "RowKey": "r"},
]


def _typed_view(entity: Any) -> dict[str, tuple[str, str]]:
    """Every property as (EDM type, exact text), to compare types and values exactly."""
    view = {}
    for name, value in entity.items():
        t = entity.edm_types.get(name) or _infer(value)
        if isinstance(value, float):
            text = "nan" if math.isnan(value) else repr(value)
        elif isinstance(value, bytes):
            text = base64.b64encode(value).decode()
        elif isinstance(value, EdmDateTime):
            text = value.to_wire()
        else:
            text = repr(value)
        view[name] = (str(t), text)
    return view


def _infer(value: Any) -> EdmType:
    from azt.edm import infer_edm_type

    return infer_edm_type(value)


def test_export_import_round_trip_keeps_every_type(conn: str, table_name: str) -> None:
    insert(conn, table_name, EVERY_TYPE)
    exported = run("export", table_name, "--progress", "never")
    assert exported.status == 0, exported.err
    assert "exported 3 entities" in exported.err
    assert len(exported.out.splitlines()) == 3

    copy = table_name + "copy"
    imported = run("import", copy, "--create", "--progress", "never", stdin=exported.out)
    assert imported.status == 0, imported.err
    assert f"imported 3 entities into {copy}" in imported.err

    original = {
        (e["PartitionKey"], e["RowKey"]): _typed_view(e) for e in read_all(conn, table_name)
    }
    copied = {(e["PartitionKey"], e["RowKey"]): _typed_view(e) for e in read_all(conn, copy)}
    assert copied == original
    assert copied[("", "empty partition key")]["I64small"] == ("Edm.Int64", "5")
    assert copied[("", "empty partition key")]["D"] == ("Edm.Double", "2.0")
    extremes = copied[("p", "extremes")]
    assert extremes["I64min"] == ("Edm.Int64", repr(-(2**63)))
    assert extremes["I64max"] == ("Edm.Int64", repr(2**63 - 1))
    assert extremes["Dtiny"] == ("Edm.Double", "5e-324")
    assert extremes["Dpinf"] == ("Edm.Double", "inf")
    assert extremes["Tmax"] == ("Edm.DateTime", "9999-12-31T23:59:59.9999999Z")
    assert extremes["Tticks"] == ("Edm.DateTime", "2024-05-01T12:00:00.0000010Z")
    assert set(copied[("p", "extremes")]) == set(original[("p", "extremes")])
    # and exporting the copy gives the same lines, Timestamps aside
    again = run("export", copy, "--progress", "never")

    def strip(text: str) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in text.splitlines()]
        for row in rows:
            del row["Timestamp"]
        return rows

    assert strip(again.out) == strip(exported.out)


def test_export_import_files_and_batches(conn: str, table_name: str, tmp_path: Path) -> None:
    entities = [{"PartitionKey": f"p{i % 3}", "RowKey": f"{i:05d}", "N": i} for i in range(250)]
    insert(conn, table_name, entities)
    out_file = tmp_path / "t.jsonl"
    r = run("export", table_name, "-o", str(out_file), "--progress", "always")
    assert r.status == 0, r.err
    assert "250 entities" in r.err
    assert r.out == ""
    assert len(out_file.read_text().splitlines()) == 250

    copy = table_name + "copy"
    r = run("import", copy, "--create", "-i", str(out_file), "--progress", "always")
    assert r.status == 0, r.err
    assert "100%" in r.err
    assert "250 entities" in r.err
    got = sorted((e["PartitionKey"], e["RowKey"], e["N"]) for e in read_all(conn, copy))
    assert got == sorted((e["PartitionKey"], e["RowKey"], e["N"]) for e in entities)


def test_export_filter(conn: str, table_name: str) -> None:
    insert(conn, table_name, MOVIES)
    r = run("export", table_name, "--filter", "PartitionKey eq 'SciFi'", "--progress", "never")
    assert [json.loads(x)["RowKey"] for x in r.out.splitlines()] == ["Alien", "Gattaca"]


def test_import_bad_line_stops_and_reports(conn: str, table_name: str) -> None:
    lines = [
        '{"PartitionKey":"a","RowKey":"1"}',
        '{"PartitionKey":"a","RowKey":"2"}',
        "",
        '{"PartitionKey":"a","RowKey":"3","X@odata.type":"Edm.Int64","X":"12x"}',
        '{"PartitionKey":"a","RowKey":"4"}',
    ]
    r = run("import", table_name, "--create", "--progress", "never", stdin="\n".join(lines))
    assert r.status == EXIT_INPUT
    assert "line 4" in r.err
    assert "'X'" in r.err
    assert "imported 2 entities" in r.err
    assert sorted(e["RowKey"] for e in read_all(conn, table_name)) == ["1", "2"]


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("[1, 2]", "expected a JSON object"),
        ('{"PartitionKey":"a"}', "PartitionKey and RowKey"),
        ("{not json", "not valid JSON"),
        ('{"PartitionKey":"a","RowKey":"b","L":[1]}', "not a table value"),
        ('{"PartitionKey":"a","RowKey":"b","X@odata.type":"Edm.Money","X":1}', "unknown type"),
        ('{"PartitionKey":"a","RowKey":"b","X":9223372036854775808}', "outside"),
        ('{"PartitionKey":"a","RowKey":"b","X@odata.type":"Edm.Int32","X":2147483648}', "outside"),
        ('{"PartitionKey":"a","RowKey":"b","X@odata.type":"Edm.Binary","X":"@@"}', "'X'"),
        ('{"PartitionKey":"a","RowKey":"b","X@odata.type":"Edm.Guid","X":"nope"}', "'X'"),
        ('{"PartitionKey":"a","RowKey":"b","X@odata.type":"Edm.DateTime","X":"then"}', "'X'"),
        ('{"PartitionKey":"a","RowKey":"b","X@odata.type":"Edm.Double","X":"lots"}', "'X'"),
        ('{"PartitionKey":"a","RowKey":"b","X@odata.type":"Edm.Double"}', "has no value"),
    ],
)
def test_import_rejects_bad_values(conn: str, table_name: str, line: str, why: str) -> None:
    r = run("import", table_name, "--create", "--progress", "never", stdin=line + "\n")
    assert r.status == EXIT_INPUT
    assert "line 1" in r.err
    assert why in r.err
    assert read_all(conn, table_name) == []


CONFLICT_LINES = "\n".join(
    [
        '{"PartitionKey":"0","RowKey":"x"}',
        '{"PartitionKey":"a","RowKey":"1"}',
        '{"PartitionKey":"a","RowKey":"2"}',
        "",
        '{"PartitionKey":"b","RowKey":"3"}',
        '{"PartitionKey":"c","RowKey":"4"}',
    ]
)


def _keys(conn: str, table: str) -> list[tuple[str, str]]:
    return sorted((e["PartitionKey"], e["RowKey"]) for e in read_all(conn, table))


def test_import_conflict_one_transaction_at_a_time(conn: str, table_name: str) -> None:
    insert(conn, table_name, [{"PartitionKey": "a", "RowKey": "2"}])
    r = run("import", table_name, "--mode", "insert", "--concurrency", "1", stdin=CONFLICT_LINES)
    assert r.status == EXIT_SERVICE
    assert "azt import: line 3: 409 EntityAlreadyExists" in r.err
    # The refused line is reported and the import goes on: line 2, in the same
    # transaction, is sent again without it, and so are the lines after.
    assert f"imported 4 entities into {table_name}; 1 failed (not written: line 3)\n" in r.err
    assert _keys(conn, table_name) == [("0", "x"), ("a", "1"), ("a", "2"), ("b", "3"), ("c", "4")]


def test_import_conflict_with_transactions_in_flight(conn: str, table_name: str) -> None:
    insert(conn, table_name, [{"PartitionKey": "a", "RowKey": "2"}])
    r = run("import", table_name, "--mode", "insert", stdin=CONFLICT_LINES)
    assert r.status == EXIT_SERVICE
    assert "azt import: line 3: 409 EntityAlreadyExists" in r.err
    # Only the refused line is not written: the rest of its transaction is sent again.
    assert f"imported 4 entities into {table_name}; 1 failed (not written: line 3)\n" in r.err
    assert _keys(conn, table_name) == [("0", "x"), ("a", "1"), ("a", "2"), ("b", "3"), ("c", "4")]


def test_import_concurrency_must_be_positive(conn: str) -> None:
    assert run("import", "t", "--concurrency", "0", stdin="").status == EXIT_USAGE


def test_import_merge_and_replace(conn: str, table_name: str) -> None:
    insert(conn, table_name, [{"PartitionKey": "a", "RowKey": "1", "Old": 1, "Same": 1}])
    line = '{"PartitionKey":"a","RowKey":"1","Same":2}\n'
    assert run("import", table_name, "--mode", "merge", stdin=line).status == 0
    (merged,) = read_all(conn, table_name)
    assert (merged["Old"], merged["Same"]) == (1, 2)
    assert run("import", table_name, stdin=line).status == 0  # replace is the default
    (replaced,) = read_all(conn, table_name)
    assert "Old" not in replaced
    assert replaced["Same"] == 2


def test_import_duplicate_keys_in_one_partition(conn: str, table_name: str) -> None:
    lines = "\n".join(
        ['{"PartitionKey":"a","RowKey":"1","V":1}', '{"PartitionKey":"a","RowKey":"1","V":2}']
    )
    r = run("import", table_name, "--create", stdin=lines)
    assert r.status == 0, r.err
    (entity,) = read_all(conn, table_name)
    assert entity["V"] == 2  # later lines win, as with one-by-one upserts


def test_import_into_missing_table(conn: str) -> None:
    r = run("import", "missingtable", stdin='{"PartitionKey":"a","RowKey":"1"}\n')
    assert r.status == EXIT_SERVICE
    assert r.err == (
        "azt import: table 'missingtable' does not exist (404 TableNotFound): pass --create "
        "to create it\nimported nothing: no line was written\n"
    )


def test_import_missing_input_file(conn: str, tmp_path: Path) -> None:
    r = run("import", "whatever", "-i", str(tmp_path / "nope.jsonl"))
    assert r.status == EXIT_USAGE
    assert "nope.jsonl" in r.err


def test_export_into_a_closed_pipe(conn: str, table_name: str) -> None:
    insert(conn, table_name, [{"PartitionKey": "p", "RowKey": f"{i:05d}"} for i in range(3000)])
    proc = subprocess.Popen(
        [sys.executable, "-m", "azt", "export", table_name, "--progress", "never"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert json.loads(first)["RowKey"] == "00000"
    assert "Traceback" not in err
    assert "Exception ignored" not in err


def test_query_csv_without_select_has_every_column(conn: str, table_name: str) -> None:
    insert(conn, table_name, MOVIES)
    r = run("query", table_name, "--format", "csv")
    assert r.status == 0, r.err
    rows = list(csv.reader(io.StringIO(r.out)))
    assert rows[0] == ["PartitionKey", "RowKey", "Timestamp", "Rating", "Year", "Note"]
    assert [row[:2] for row in rows[1:]] == [[m["PartitionKey"], m["RowKey"]] for m in MOVIES]
    assert rows[3][5] == "a,b"
    assert rows[1][5] == ""


@pytest.fixture
def faulty() -> Any:
    """A stub of its own with a fault injector (the module's stub has none)."""
    injector = FaultInjector(seed=3)
    with ThreadedStubServer(StubConfig(faults=injector)) as server:
        yield server, injector


AMBIGUOUS_LINES = "\n".join(
    [
        '{"PartitionKey":"a","RowKey":"1"}',
        '{"PartitionKey":"b","RowKey":"2"}',
        '{"PartitionKey":"b","RowKey":"3"}',
        '{"PartitionKey":"c","RowKey":"4"}',
    ]
)


def test_import_ambiguous_transaction_is_resolved_by_reading_back(
    faulty: Any, table_name: str
) -> None:
    server, injector = faulty
    conn = server.connection_string
    insert(conn, table_name, [])
    # Every second write is applied and its answer dropped: the import reads those
    # entities back, finds them applied, and goes on (an insert sent again would have
    # met 409 EntityAlreadyExists caused by its own first attempt).
    injector.fail_every("drop-after", 2, only="writes")
    r = run(
        "import", table_name, "--mode", "insert", "--concurrency", "1", "--retries", "1",
        "--connection-string", conn, stdin=AMBIGUOUS_LINES,
    )  # fmt: skip
    assert r.status == 0, r.err
    assert "may have been applied" not in r.err
    assert r.err.startswith(f"imported 4 entities into {table_name} (")
    assert "found already applied by reading back" in r.err
    assert "EntityAlreadyExists" not in r.err
    assert _keys(conn, table_name) == [("a", "1"), ("b", "2"), ("b", "3"), ("c", "4")]


def test_import_lost_answer_on_every_attempt_is_resolved(faulty: Any, table_name: str) -> None:
    server, injector = faulty
    conn = server.connection_string
    insert(conn, table_name, [])
    injector.fail_next("drop-after", 2, only="writes")  # both attempts applied, no answer
    lines = '{"PartitionKey":"a","RowKey":"1"}\n{"PartitionKey":"a","RowKey":"2"}\n'
    r = run("import", table_name, "--retries", "1", "--connection-string", conn, stdin=lines)
    assert r.status == 0, r.err
    assert r.err == (
        f"imported 2 entities into {table_name} (2 entities found already applied by "
        "reading back)\n"
    )
    assert _keys(conn, table_name) == [("a", "1"), ("a", "2")]


def test_import_refused_transaction_is_not_ambiguous(faulty: Any, table_name: str) -> None:
    server, injector = faulty
    conn = server.connection_string
    insert(conn, table_name, [])
    injector.fail_next("busy", 2, only="writes")  # 503 ServerBusy: certainly not applied
    line = '{"PartitionKey":"a","RowKey":"1"}\n'
    r = run("import", table_name, "--retries", "1", "--connection-string", conn, stdin=line)
    assert r.status == EXIT_SERVICE
    assert "may have been applied" not in r.err
    assert r.err.endswith("imported nothing: no line was written\n")
    assert _keys(conn, table_name) == []


def test_server_timeout_and_location_mode_reach_the_client(
    conn: str, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    insert(conn, table_name, MOVIES)
    made: list[TableServiceClient] = []
    real = TableServiceClient.from_connection_string

    def spy(connection_string: str, **kwargs: Any) -> TableServiceClient:
        client = real(connection_string, **kwargs)
        made.append(client)
        return client

    monkeypatch.setattr(TableServiceClient, "from_connection_string", staticmethod(spy))
    r = run(
        "query", table_name, "--format", "jsonl", "--server-timeout", "7",
        "--location-mode", "secondary",
    )  # fmt: skip
    assert r.status == 0, r.err
    assert len(r.out.splitlines()) == len(MOVIES)  # read from the stub's secondary
    (client,) = made
    assert client.server_timeout == 7
    assert client.location_mode is LocationMode.SECONDARY
    r = run("export", table_name, "--location-mode", "primary-then-secondary")
    assert r.status == 0, r.err
    assert made[-1].location_mode is LocationMode.PRIMARY_THEN_SECONDARY
    assert made[-1].server_timeout is None


def test_server_timeout_must_be_positive(conn: str) -> None:
    r = run("tables", "list", "--server-timeout", "0")
    assert r.status == EXIT_USAGE
    assert "server_timeout" in r.err
    assert run("tables", "list", "--location-mode", "nearest").status == EXIT_USAGE


def _subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _subcommands(sub, (*prefix, name)) or [" ".join((*prefix, name))]
    return found


def test_every_subcommand_is_run_by_these_tests() -> None:
    """A guard for CI: a sub-command added to the parser must be exercised here."""
    commands = _subcommands(build_parser())
    assert sorted(commands) == [
        "delete",
        "export",
        "import",
        "index build",
        "index repair",
        "index verify",
        "migrate plan",
        "migrate status",
        "migrate up",
        "migrate verify",
        "query",
        "tables create",
        "tables list",
        "update",
    ]
    source = Path(__file__).read_text(encoding="utf-8")
    for command in commands:
        call = "run(" + ", ".join(f'"{word}"' for word in command.split())
        assert call in source, f"no test runs `azt {command}`"


def test_update_and_delete_commands(conn: str, table_name: str) -> None:
    """``azt update`` / ``azt delete`` by filter; tests/bulk/test_cli_by_query.py has the
    details (typed --set, checkpoints, resume)."""
    insert(conn, table_name, [{"PartitionKey": "a", "RowKey": str(i), "N": i} for i in range(5)])
    r = run("update", table_name, "--filter", "N lt 2", "--set", '{"Low": true}')
    assert r.status == 0, r.err
    assert "updated 2 entities" in r.err
    r = run("delete", table_name, "--filter", "N ge 3")
    assert r.status == 0, r.err
    assert "deleted 2 entities" in r.err
    rows = {e["RowKey"]: e for e in read_all(conn, table_name)}
    assert sorted(rows) == ["0", "1", "2"]
    assert [rows[k].get("Low") for k in ("0", "1", "2")] == [True, True, None]


def test_migrate_commands(conn: str) -> None:
    """``azt migrate``: status, plan, up and verify (exit 4 while rows are left);
    tests/migrate has the details."""
    insert(conn, MIGRATED_TABLE, [{"PartitionKey": "a", "RowKey": "1", "Name": "Ada", "Visits": 3}])
    mods = ("--migrations", "tests.migrate.models")
    r = run("migrate", "status", *mods)
    assert r.status == 0, r.err
    assert "0001_customer_v2" in r.out
    r = run("migrate", "verify", *mods)
    assert r.status == EXIT_INCONSISTENT
    r = run("migrate", "plan", *mods)
    assert r.status == 0, r.err
    assert "upgrade to the shape of Customer" in r.out
    r = run("migrate", "up", *mods)
    assert r.status == 0, r.err
    assert "rewrote 1 of 1 entity" in r.out
    r = run("migrate", "verify", *mods)
    assert r.status == 0, r.out


def test_index_commands(conn: str, table_name: str) -> None:
    """``azt index``: verify finds the rows an index declared after the data lacks (exit 4),
    build writes them, repair finds nothing left; tests/indexes has the details."""
    insert(conn, table_name, [{"PartitionKey": "a", "RowKey": "1", "color": "red"}])
    cls = ("--entity-class", "tests.indexes.models:Item")
    r = run("index", "verify", table_name, *cls)
    assert r.status == EXIT_INCONSISTENT
    assert "missing 2" in r.out
    r = run("index", "build", table_name, *cls)
    assert r.status == 0, r.err
    assert "wrote 2" in r.out
    r = run("index", "repair", table_name, *cls)
    assert r.status == 0, r.err
    assert "missing 0, stale 0, orphans 0, pending intents 0; wrote 0, deleted 0" in r.out


def test_an_explicit_retries_caps_throttled_requests_too() -> None:
    default = _retry(build_parser().parse_args(["tables", "list"]))
    assert (default.max_attempts, default.throttled_attempts) == (4, 10)  # Cosmos budget
    capped = _retry(build_parser().parse_args(["tables", "list", "--retries", "0"]))
    assert (capped.max_attempts, capped.throttled_attempts) == (1, 1)
