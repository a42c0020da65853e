"""Every code block of the documentation is run by a test, or says why it cannot be.

The pages are README.md, CONTRIBUTING.md and every page under docs/. A block's fence says
how the tests treat it:

* ```` ```python test ```` / ```` ```python test-sync ````: run against the stub by
  tests/docs/test_docs.py, or by the page's own runner (README.md's quick start,
  porting.md's tests/context/test_porting_doc.py, the programs of index.md and
  getting-started.md in tests/packaging);
* ```` ```python pytest ````: a user's test file, run by tests/plugin/test_fixtures.py;
* ```` ```bash test ````: run by bash against a stub (below; getting-started.md's shell
  tour by tests/docs/test_docs.py);
* ```` ```text ```` right after "It prints:" on the program pages (the output the
  programs must print) and the ```` ```toml ```` of the pytest configuration
  (tests/packaging);
* ```` ```LANG norun: REASON ````: not run, and why (a real Azure account, a server that
  runs until stopped, a picture). The reason is required.

A block with any other fence fails :func:`test_every_block_is_run_or_says_why_not`, so a
new example cannot slip in untested. Whatever the fence, every ``azt`` and ``azt-stub``
command line shown in a shell block is parsed by the command's own parser, and Python that
does not run still compiles and imports only names azt has.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import os
import re
import shlex
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

import azt.cli
import azt.sync
from azt_server_stub import ThreadedStubServer
from azt_server_stub.__main__ import build_parser as stub_parser
from azt_server_stub.__main__ import config_from_args
from tests.context.test_porting_doc import snippets as porting_snippets
from tests.docs import test_docs
from tests.packaging.programs import PAGES as PROGRAM_PAGES
from tests.packaging.programs import programs
from tests.plugin import test_fixtures

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted(p for p in DOCS.rglob("*.md") if "_hooks" not in p.parts),
]
_OPEN = re.compile(r"^( *)(`{3,})(.*)$")
_NORUN = re.compile(r"^[\w+-]+ norun: (?P<reason>.*\S)\s*$")
_RUN = ("python test", "python test-sync", "python pytest", "bash test")
#: getting-started.md's shell tour runs in tests/docs/test_docs.py (it starts its own stub).
_TOUR_PAGE = "docs/getting-started.md"


@dataclass(frozen=True)
class Block:
    """One fenced block: where it starts, its fence's info string, its text."""

    page: str
    line: int
    info: str
    body: str
    before: str  # the page's text before the fence

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: ```{self.info}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a page, in order (top-level and indented, as in tabs)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, info = m.groups()
        close = re.compile(rf"^{indent}{fence}\s*$")
        end = i + 1
        while end < len(lines) and not close.match(lines[end]):
            end += 1
        assert end < len(lines), f"{path}:{i + 1}: a fence that is never closed"
        body = textwrap.dedent("\n".join(lines[i + 1 : end]))
        page = path.relative_to(ROOT).as_posix()
        found.append(Block(page, i + 1, info.strip(), body, "\n".join(lines[:i])))
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]


def test_the_pages_are_found() -> None:
    names = {b.page for b in ALL}
    for page in ("README.md", "CONTRIBUTING.md", "docs/connecting.md", "docs/cli.md"):
        assert page in names
    assert len(ALL) > 100


def test_every_block_is_run_or_says_why_not() -> None:
    problems: list[str] = []
    for block in ALL:
        if block.info in _RUN:
            continue  # the runner's own count is checked below
        norun = _NORUN.match(block.info)
        if norun is not None:
            if len(norun["reason"].split()) < 4:
                problems.append(f"{block}: say why it cannot run, in a few words")
            continue
        if (
            block.info == "text"
            and block.page in {f"docs/{p}" for p in PROGRAM_PAGES}
            and block.before.rstrip().endswith("It prints:")
        ):
            continue  # the output the program above must print (tests/packaging)
        if block.info == "toml" and block.page in ("docs/getting-started.md", "docs/stub.md"):
            continue  # the pytest configuration (tests/packaging/test_doc_programs.py)
        problems.append(str(block))
    assert not problems, (
        "blocks no test runs: mark each ```python test (or test-sync, pytest), ```bash test, "
        "or ```LANG norun: REASON when it cannot run\n" + "\n".join(problems)
    )


def _ran_python(page: str, text: str) -> tuple[int, int]:
    """How many ``python test`` and ``python test-sync`` blocks the page's runner runs."""
    if page == "README.md":
        return len(test_docs._BLOCK.findall(text)), 0  # test_readme_quick_start_runs
    if page == "docs/porting.md":
        return len(porting_snippets()), 0
    if page.removeprefix("docs/") in PROGRAM_PAGES:
        n = len([p for p in programs() if p.page == page.removeprefix("docs/")]) // 2
        return n, n
    if page.startswith("docs/"):
        return len(test_docs._blocks(text, "test")), len(test_docs._blocks(text, "test-sync"))
    return 0, 0


def _pytest_pages() -> set[str]:
    """The pages whose ``python pytest`` blocks tests/plugin runs."""
    test = test_fixtures.test_documented_fixture_examples_pass
    marks: list[pytest.Mark] = getattr(test, "pytestmark", [])
    (mark,) = [m for m in marks if m.name == "parametrize"]
    return {f"docs/{page}" for page in mark.args[1]}


def test_each_run_marker_is_run_by_its_runner() -> None:
    """Every marked block is one its runner really runs: a block the runner's pattern
    misses (a wrong indent, a tab without its pair) fails here."""
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        text = page.read_text(encoding="utf-8")
        counts = Counter(b.info for b in blocks(page))
        ran = _ran_python(name, text)
        assert (counts["python test"], counts["python test-sync"]) == ran, name
        if counts["python pytest"]:
            assert name in _pytest_pages(), name
            assert len(test_fixtures._PYTEST_BLOCK.findall(text)) == counts["python pytest"]
        bash = len(_bash_blocks(name)) + (name == _TOUR_PAGE)
        assert counts["bash test"] == bash, name
    assert len(test_docs._SHELL_TOUR.findall((ROOT / _TOUR_PAGE).read_text())) == 1


# --- bash blocks ---------------------------------------------------------------------------


def _bash_blocks(page: str | None = None) -> list[Block]:
    """The ``bash test`` blocks run below (all but getting-started.md's shell tour)."""
    return [
        b
        for b in ALL
        if b.info == "bash test" and b.page != _TOUR_PAGE and (page is None or b.page == page)
    ]


_DEV = 'export AZT_CONNECTION_STRING="UseDevelopmentStorage=true"'


def _commands(tmp_path: Path) -> Path:
    """A bin directory with ``azt`` and ``azt-stub`` running this checkout's code."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, module in (("azt", "azt"), ("azt-stub", "azt_server_stub")):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        script.chmod(0o755)
    return bin_dir


@pytest.mark.parametrize("block", _bash_blocks(), ids=str)
def test_bash_block_runs(block: Block, tmp_path: Path) -> None:
    """The block as printed, in bash with ``set -euo pipefail``, against a fresh stub
    holding a ``movies`` table (the one the pages' commands read); the development
    connection string is replaced by the stub's (tests take free ports)."""
    work = tmp_path / "work"
    work.mkdir()
    with ThreadedStubServer() as stub:
        with azt.sync.TableServiceClient.from_connection_string(stub.connection_string) as svc:
            movies = svc.create_table("movies")
            for rk, rating in (("Heat", 4.6), ("Ronin", 4.0)):
                movies.insert_entity({"PartitionKey": "Action", "RowKey": rk, "Rating": rating})
        conn = stub.connection_string
        script = block.body.replace(_DEV, f'export AZT_CONNECTION_STRING="{conn}"')
        env = {
            **os.environ,
            "PATH": f"{_commands(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(ROOT),
            "AZT_CONNECTION_STRING": stub.connection_string,
        }
        proc = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert proc.returncode == 0, f"{block}\n{proc.stdout}\n{proc.stderr}"
        with azt.sync.TableServiceClient.from_connection_string(stub.connection_string) as svc:
            tables = svc.list_tables().to_list()
            copies = {
                name: len(svc.get_table_client(name).list_entities().to_list())
                for name in tables
                if name != "movies"
            }
    assert all(count > 0 for count in copies.values()), copies  # an import wrote its rows


# --- command lines -------------------------------------------------------------------------

_SHELL = ("bash", "console", "sh", "shell")
_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "2>", "2>&1"}


@dataclass(frozen=True)
class CommandLine:
    """An ``azt`` or ``azt-stub`` command shown on a page, as argv."""

    where: str
    program: str
    argv: list[str]

    def __str__(self) -> str:
        return f"{self.where}: {self.program} {shlex.join(self.argv)}"


def _segments(line: str) -> list[list[str]]:
    """The simple commands of a shell line (split at pipes, lists and redirections)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    segments: list[list[str]] = [[]]
    skip_next = False
    for token in lexer:
        if skip_next:  # the file a redirection names
            skip_next = False
            continue
        if token in _OPERATORS:
            skip_next = token in (">", ">>", "<", "2>")
            segments.append([])
            continue
        segments[-1].append(token)
    return [s for s in segments if s]


def command_lines() -> list[CommandLine]:
    """Every ``azt`` / ``azt-stub`` (or ``python -m azt...``) command of a shell block,
    and those typed after ``$ `` in a text block."""
    found: list[CommandLine] = []
    for block in ALL:
        language = block.info.split(" ", 1)[0]
        if language not in (*_SHELL, "text"):
            continue
        text = block.body.replace("\\\n", " ")
        for offset, raw in enumerate(text.splitlines()):
            line = raw.strip()
            if line.startswith("$ "):
                line = line[2:]
            elif language == "text":
                continue
            for words in _segments(line):
                program = Path(words[0]).name
                argv = words[1:]
                if program.startswith("python") and argv[:1] == ["-m"] and len(argv) > 1:
                    program = {"azt": "azt", "azt_server_stub": "azt-stub"}.get(argv[1], "")
                    argv = argv[2:]
                if program in ("azt", "azt-stub"):
                    where = f"{block.page}:{block.line + 1 + offset}"
                    found.append(CommandLine(where, program, argv))
    return found


def test_the_pages_show_command_lines() -> None:
    shown = command_lines()
    assert len([c for c in shown if c.program == "azt"]) > 20
    stub = [c for c in shown if c.program == "azt-stub"]
    assert any("--oauth-allow-http" in c.argv for c in stub)


@pytest.mark.parametrize("command", command_lines(), ids=str)
def test_every_command_line_shown_parses(command: CommandLine) -> None:
    """Each command line the pages show is one the command accepts (options that exist,
    values of the right form), whether or not its block runs."""
    parser = azt.cli.build_parser() if command.program == "azt" else stub_parser()
    quiet = io.StringIO()
    status: object = None
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        try:
            args = parser.parse_args(command.argv)
        except SystemExit as exit_:  # --help, --version: 0; a refused line: 2
            status = exit_.code
    if status is not None:
        assert status == 0, f"{command}\n{quiet.getvalue()}"
        return
    if command.program == "azt-stub":
        config_from_args(args)  # values the stub refuses raise here


# --- Python that does not run --------------------------------------------------------------

_NORUN_PYTHON = [b for b in ALL if b.info.startswith("python norun:")]


def test_there_is_python_that_does_not_run() -> None:
    assert len(_NORUN_PYTHON) >= 5  # the Entra ID examples, among others


@pytest.mark.parametrize("block", _NORUN_PYTHON, ids=str)
def test_python_that_does_not_run_still_compiles_and_imports_what_exists(block: Block) -> None:
    """A block that cannot run (a real account, a real identity) is still valid Python
    (top-level ``await`` allowed, as in an async REPL), and every name it imports from azt
    exists, so a rename breaks the page's test, not its reader."""
    tree = compile(
        block.body, str(block), "exec", flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            "azt",
            "azt_server_stub",
        ):
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                assert hasattr(module, alias.name), f"{block}: {node.module}.{alias.name}"
