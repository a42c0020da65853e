"""Every bad-input path of every ``azt`` sub-command: the exit status docs/cli.md documents
and a message that says what went wrong and what to do (no raw ``[Errno]``, no traceback,
correct plurals), and nothing lost on the way."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest

from azt.cli import EXIT_INPUT, EXIT_SERVICE, EXIT_USAGE, build_parser, main

from .conftest import Run, run
from .test_cli import _subcommands, insert, read_all

OK_LINE = '{"PartitionKey":"a","RowKey":"1"}'


@attrs.frozen
class Case:
    """``azt *argv`` (``{t}`` is a fresh table, ``{dir}`` a temporary folder) with ``stdin``
    exits ``status`` and writes every one of ``says`` to stderr."""

    name: str
    argv: tuple[str, ...]
    status: int
    says: tuple[str, ...]
    stdin: str = ""
    table_exists: bool = False


CASES = [
    # -- every command: the account and the arguments
    Case("no table name", ("query",), EXIT_USAGE, ("the following arguments are required",)),
    Case(
        "unknown format",
        ("query", "{t}", "--format", "xml"),
        EXIT_USAGE,
        ("invalid choice: 'xml'",),
    ),
    Case(
        "negative retries",
        ("tables", "list", "--retries", "-1"),
        EXIT_USAGE,
        ("azt: --retries must be 0 or more",),
    ),
    Case(
        "invalid table name",
        ("tables", "create", "no_such!"),
        EXIT_USAGE,
        ("azt: invalid table name 'no_such!': 3-63 letters and digits",),
    ),
    # -- tables
    Case(
        "table exists",
        ("tables", "create", "{t}"),
        EXIT_SERVICE,
        ("409 TableAlreadyExists", "azt: pass --if-not-exists"),
        table_exists=True,
    ),
    # -- query
    Case(
        "query a missing table",
        ("query", "{t}"),
        EXIT_SERVICE,
        ("404 TableNotFound", "does not exist: `azt tables list` shows the account's tables"),
    ),
    Case(
        "query filter syntax",
        ("query", "{t}", "--filter", "PartitionKey eq"),
        EXIT_USAGE,
        ("400 InvalidInput: Syntax error at position", "azt: check --filter and --select"),
        table_exists=True,
    ),
    Case(
        "query bad select",
        ("query", "{t}", "--select", "a b"),
        EXIT_USAGE,
        ("'a b' is not a valid property name", "azt: check --filter and --select"),
        table_exists=True,
    ),
    Case("query top 0", ("query", "{t}", "--top", "0"), EXIT_USAGE, ("--top must be at least 1",)),
    Case(
        "query empty select",
        ("query", "{t}", "--select", " , "),
        EXIT_USAGE,
        ("--select needs at least one property name",),
    ),
    # -- export
    Case(
        "export a missing table",
        ("export", "{t}"),
        EXIT_SERVICE,
        ("404 TableNotFound", "`azt tables list` shows"),
    ),
    Case(
        "export filter syntax",  # documented as usage (2); it was 1
        ("export", "{t}", "--filter", "RowKey gt"),
        EXIT_USAGE,
        ("Syntax error at position", "azt: check --filter and --select"),
        table_exists=True,
    ),
    Case(
        "export into a missing folder",
        ("export", "{t}", "-o", "{dir}/nope/out.jsonl"),
        EXIT_USAGE,
        ("cannot open output file", "(-o): its folder", "does not exist"),
        table_exists=True,
    ),
    Case(
        "export onto a folder",
        ("export", "{t}", "-o", "{dir}"),
        EXIT_USAGE,
        ("(-o) is a folder: give a file name",),
        table_exists=True,
    ),
    # -- update and delete
    Case(
        "update with a --set that is not an object",
        ("update", "{t}", "--filter", "N lt 1", "--set", "[1]"),
        EXIT_USAGE,
        ("azt: --set takes a JSON object of properties",),
    ),
    Case(
        "delete from a missing table",
        ("delete", "{t}", "--filter", "N lt 1"),
        EXIT_SERVICE,
        ("404 TableNotFound", "does not exist"),
    ),
    # -- import: the arguments
    Case(
        "import from a missing file",
        ("import", "{t}", "-i", "{dir}/nope.jsonl"),
        EXIT_USAGE,
        ("cannot open input file", "nope.jsonl' (-i): there is no such file"),
    ),
    Case(
        "import from a folder",
        ("import", "{t}", "-i", "{dir}"),
        EXIT_USAGE,
        ("(-i) is a folder: give a file name",),
    ),
    Case(
        "import concurrency 0",
        ("import", "{t}", "--concurrency", "0"),
        EXIT_USAGE,
        ("--concurrency must be at least 1",),
    ),
    Case(
        "import into a missing table",
        ("import", "{t}"),
        EXIT_SERVICE,
        (
            "does not exist (404 TableNotFound): pass --create to create it\n"
            "imported nothing: no line was written\n",
        ),
        stdin=OK_LINE + "\n" + OK_LINE.replace('"a"', '"b"') + "\n",
    ),
    # -- import: bad lines (exit 3, with the line number, and what to do)
    *(
        Case(
            f"import {why}",
            ("import", "{t}", "--create"),
            EXIT_INPUT,
            (f"azt import: line 2: {says}", "imported 1 entity (every line before line 2;"),
            stdin=OK_LINE + "\n" + bad + "\n" + OK_LINE + "\n",
        )
        for why, bad, says in [
            ("a key with '#'", '{"PartitionKey":"a#","RowKey":"2"}', "PartitionKey 'a#' contains"),
            ("a key with '/'", '{"PartitionKey":"a","RowKey":"x/y"}', "RowKey 'x/y' contains '/'"),
            (
                "a control character in a key",
                '{"PartitionKey":"a","RowKey":"x\\u0001"}',
                "RowKey 'x\\x01' contains",
            ),
            (
                "an oversize key",
                '{"PartitionKey":"a","RowKey":"' + "k" * 1025 + '"}',
                "RowKey is 1025 UTF-16 code units long; the service limit is 1024",
            ),
            (
                "an oversize string",
                '{"PartitionKey":"a","RowKey":"2","S":"' + "s" * 40_000 + '"}',
                "property 'S': string is 40000 UTF-16 code units; the service limit is 32768",
            ),
            (
                "an oversize entity",
                '{"PartitionKey":"a","RowKey":"2",'
                + ",".join(f'"S{i}":"{"s" * 30_000}"' for i in range(20))
                + "}",
                "entity is about",
            ),
            (
                "a bad property name",
                '{"PartitionKey":"a","RowKey":"2","a b":1}',
                "property name 'a b' is invalid",
            ),
            (
                "a JSON list",
                '{"PartitionKey":"a","RowKey":"2","L":[1]}',
                "property 'L': a JSON list is not",
            ),
            ("not JSON", "{nope", "not valid JSON"),
        ]
    ),
    # -- index
    Case(
        "index build: an entity class that is not MODULE:CLASS",
        ("index", "build", "{t}", "--entity-class", "nocolon"),
        EXIT_USAGE,
        ("azt: --entity-class 'nocolon': give MODULE:CLASS",),
    ),
    Case(
        "index verify: a module that does not import",
        ("index", "verify", "{t}", "--entity-class", "no_such_module_x:Post"),
        EXIT_USAGE,
        ("azt: --entity-class 'no_such_module_x:Post': cannot import",),
    ),
    Case(
        "index repair: --resume without --checkpoint",
        ("index", "repair", "{t}", "--entity-class", "tests.indexes.models:Item", "--resume"),
        EXIT_USAGE,
        ("azt: --resume needs --checkpoint FILE",),
    ),
    Case(
        "index verify: a missing table",
        ("index", "verify", "{t}", "--entity-class", "tests.indexes.models:Item"),
        EXIT_SERVICE,
        ("404", "does not exist"),
    ),
    # -- migrate
    Case(
        "migrate status: migrations that do not import",
        ("migrate", "status", "--migrations", "no_such_module_x"),
        EXIT_USAGE,
        ("azt: --migrations 'no_such_module_x': cannot import it",),
    ),
    Case(
        "migrate plan: a module that defines no migrations",
        ("migrate", "plan", "--migrations", "azt.entity"),
        EXIT_USAGE,
        ("azt: --migrations 'azt.entity' defines no migrations",),
    ),
    Case(
        "migrate up: --concurrency 0",
        ("migrate", "up", "--migrations", "tests.migrate.models", "--concurrency", "0"),
        EXIT_USAGE,
        ("--concurrency must be at least 1",),
    ),
    Case(
        "migrate verify: no --migrations",
        ("migrate", "verify"),
        EXIT_USAGE,
        ("the following arguments are required: --migrations",),
    ),
    Case(
        "import a bad first line",
        ("import", "{t}", "--create"),
        EXIT_INPUT,
        (
            "azt import: line 1: PartitionKey and RowKey must both be strings\n"
            "imported nothing: no line was written\n"
            "fix line 1, then import again\n",
        ),
        stdin='{"PartitionKey":1,"RowKey":"1"}\n' + OK_LINE + "\n",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input_path(conn: str, table_name: str, tmp_path: Path, case: Case) -> None:
    if case.table_exists:
        insert(conn, table_name, [])
    argv = [a.replace("{t}", table_name).replace("{dir}", str(tmp_path)) for a in case.argv]
    r = run(*argv, stdin=case.stdin)
    assert r.status == case.status, r.err
    for text in case.says:
        assert text in r.err
    _reads_well(r)


def _reads_well(r: Run) -> None:
    assert r.err.endswith("\n")
    assert r.err.startswith(("azt: ", "azt import: ", "usage: azt")), r.err
    assert "Errno" not in r.err
    assert "Traceback" not in r.err
    assert not re.search(r"\b1 entities\b", r.err)
    assert "before line 1" not in r.err
    assert "0 entities (" not in r.err


def test_every_subcommand_has_bad_input_cases() -> None:
    commands = _subcommands(build_parser())
    walked = {
        " ".join(c.argv[:2]) if c.argv[0] in ("tables", "index", "migrate") else c.argv[0]
        for c in CASES
    }
    missing = [c for c in commands if c not in walked and c != "tables list"]
    assert not missing, f"no bad-input case for {missing}"
    assert any(c.argv[:2] == ("tables", "list") for c in CASES)


def test_bad_lines_are_caught_before_anything_is_sent(conn: str, table_name: str) -> None:
    """The line after a bad line is never sent, and neither is the bad line: the first
    line went in its own transaction, so the table holds exactly it."""
    lines = [OK_LINE, '{"PartitionKey":"a","RowKey":"b#"}', OK_LINE.replace('"1"', '"3"')]
    r = run("import", table_name, "--create", "--concurrency", "1", stdin="\n".join(lines))
    assert r.status == EXIT_INPUT
    assert r.err.endswith(
        "imported 1 entity (every line before line 2; nothing from line 2 on was written)\n"
        "fix line 2, then import again from line 2 on\n"
    )
    assert [e["RowKey"] for e in read_all(conn, table_name)] == ["1"]


def test_import_not_utf8_names_the_line(conn: str, table_name: str, tmp_path: Path) -> None:
    source = tmp_path / "latin1.jsonl"
    source.write_bytes(
        OK_LINE.encode() + b'\n{"PartitionKey":"a","RowKey":"2","S":"caf\xe9"}\n' + b"\n"
    )
    r = run("import", table_name, "--create", "-i", str(source))
    assert r.status == EXIT_INPUT
    assert (
        "azt import: line 2: not UTF-8 text (byte 42 of the line is 0xe9): save the file as UTF-8\n"
        in r.err
    )
    assert "fix line 2, then import again from line 2 on\n" in r.err
    assert [e["RowKey"] for e in read_all(conn, table_name)] == ["1"]


def test_import_accepts_a_byte_order_mark(conn: str, table_name: str, tmp_path: Path) -> None:
    source = tmp_path / "bom.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + OK_LINE.encode() + b"\r\n")
    r = run("import", table_name, "--create", "-i", str(source))
    assert r.status == 0, r.err
    assert r.err == f"imported 1 entity into {table_name}\n"
    assert run("import", table_name, stdin="\ufeff" + OK_LINE).status == 0


def test_failed_export_leaves_an_existing_file_alone(conn: str, tmp_path: Path) -> None:
    target = tmp_path / "keep.jsonl"
    target.write_text("precious\n", encoding="utf-8")
    r = run("export", "missingtable", "-o", str(target))
    assert r.status == EXIT_SERVICE
    assert target.read_text(encoding="utf-8") == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.jsonl"]  # no leftovers


def test_successful_export_replaces_the_file(conn: str, table_name: str, tmp_path: Path) -> None:
    insert(conn, table_name, [{"PartitionKey": "a", "RowKey": "1"}])
    target = tmp_path / "out.jsonl"
    target.write_text("old\n", encoding="utf-8")
    r = run("export", table_name, "-o", str(target))
    assert r.status == 0, r.err
    assert target.read_text(encoding="utf-8").startswith('{"PartitionKey":"a","RowKey":"1"')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_empty_import_says_so(conn: str, table_name: str) -> None:
    r = run("import", table_name, "--create", stdin="\n\n")
    assert r.status == 0
    assert r.err == f"imported 0 entities into {table_name} (the input has no entities)\n"


def test_main_with_real_files_closes_them(conn: str, table_name: str, tmp_path: Path) -> None:
    """``main`` reads ``-i`` through its binary buffer (a real file), as the console does."""
    source = tmp_path / "in.jsonl"
    source.write_text(OK_LINE + "\n", encoding="utf-8")
    assert main(["import", table_name, "--create", "-i", str(source), "--progress", "never"]) == 0
