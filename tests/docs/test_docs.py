"""The documentation: the site builds with warnings as errors, and every tested snippet
(a ```python test block) of the pages written for the guide runs against the stub."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import doctest
import importlib.util
import inspect
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import azt.sync
from azt import TableClient, TableServiceClient
from azt_server_stub import StubServer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"^```python test\n(.*?)^```", re.S | re.M)
#: A tested block inside a content tab (indented): ``test`` is the async form, ``test-sync``
#: the blocking one (azt.sync), run in a thread of its own with no event loop.
_TABBED = re.compile(r"^( +)```python (test|test-sync)\n(.*?)^\1```", re.S | re.M)


def _blocks(text: str, marker: str) -> list[str]:
    """A page's tested blocks of one form, in page order (top-level and tabbed)."""
    found: list[tuple[int, str]] = []
    if marker == "test":
        found += [(m.start(), m.group(1)) for m in _BLOCK.finditer(text)]
    for m in _TABBED.finditer(text):
        if m.group(2) == marker:
            found.append((m.start(), textwrap.dedent(m.group(3))))
    return [source for _, source in sorted(found)]


#: Pages with their own runner: porting.md (tests/context/test_porting_doc.py); the complete
#: programs of index.md and getting-started.md run as scripts (tests/packaging), from the
#: checkout and from the installed wheel.
_OWN_RUNNER = {"porting.md", "index.md", "getting-started.md"}


def _pages_with_snippets() -> list[Path]:
    return sorted(
        p
        for p in DOCS.rglob("*.md")
        if p.name not in _OWN_RUNNER and _blocks(p.read_text(encoding="utf-8"), "test")
    )


def test_guide_pages_carry_tested_snippets() -> None:
    names = {p.name for p in _pages_with_snippets()}
    for page in ("connecting.md", "entities.md", "queries.md", "context.md", "batches.md"):
        assert page in names
    for page in _OWN_RUNNER:  # these run elsewhere, but they too carry tested blocks
        assert _blocks((DOCS / page).read_text(encoding="utf-8"), "test"), page


@pytest.mark.parametrize(
    ("name", "blocks"),
    [(p.name, _blocks(p.read_text(encoding="utf-8"), "test")) for p in _pages_with_snippets()],
)
async def test_snippets_run(name: str, blocks: list[str]) -> None:
    """Each page's blocks run in order in one namespace, on a fresh stub."""
    async with StubServer() as stub:
        ns: dict[str, Any] = {"connection_string": stub.connection_string, "__name__": "doc"}
        try:
            for number, source in enumerate(blocks, 1):
                code = compile(
                    source,
                    f"<{name} snippet {number}>",
                    "exec",
                    flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                )
                result = eval(code, ns)  # the project's own documentation
                if inspect.iscoroutine(result):
                    await result
        finally:  # a failing snippet must not also leak the clients it opened
            for value in list(ns.values()):
                if isinstance(value, TableServiceClient | TableClient) and not value.closed:
                    await value.aclose()


@pytest.mark.parametrize(
    ("name", "blocks"),
    [
        (p.name, _blocks(p.read_text(encoding="utf-8"), "test-sync"))
        for p in _pages_with_snippets()
        if _blocks(p.read_text(encoding="utf-8"), "test-sync")
    ],
)
async def test_sync_snippets_run(name: str, blocks: list[str]) -> None:
    """The blocking form of a page's examples (the ``sync`` tabs) runs too, in order in one
    namespace, on a fresh stub, from a thread without an event loop (as in a script)."""
    async with StubServer() as stub:
        ns: dict[str, Any] = {"connection_string": stub.connection_string, "__name__": "doc"}

        def run_all() -> None:
            try:
                for number, source in enumerate(blocks, 1):
                    code = compile(source, f"<{name} sync snippet {number}>", "exec")
                    exec(code, ns)  # the project's own documentation
            finally:
                for value in list(ns.values()):
                    if isinstance(value, azt.sync.TableServiceClient | azt.sync.TableClient):
                        value.close()

        await asyncio.to_thread(run_all)


def test_tabbed_pages_show_both_forms() -> None:
    """Every tabbed page pairs each async example with its blocking form."""
    for page in DOCS.rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        if _TABBED.search(text):
            assert len(_blocks(text, "test-sync")) == len(
                [m for m in _TABBED.finditer(text) if m.group(2) == "test"]
            ), page.name


def _missing_docs_tools() -> str | None:
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return module
    return None


def test_site_builds_strictly(tmp_path: Path) -> None:
    missing = _missing_docs_tools()
    if missing is not None:
        pytest.skip(f"{missing} is not installed (pip install -e '.[dev]' installs it)")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    site = tmp_path / "site"
    for page in ("index.html", "partition-keys/index.html", "reference/query/index.html"):
        assert (site / page).is_file(), page
    sync_reference = (site / "reference" / "sync" / "index.html").read_text(encoding="utf-8")
    for name in ("TableServiceClient", "TableClient", "Query", "TableContext", "Pager"):
        assert f'id="azt.sync.{name}"' in sync_reference, name  # the blocking twins
    queries = (site / "queries" / "index.html").read_text(encoding="utf-8")
    assert "tabbed-set" in queries  # the examples' async / sync tabs
    reference = (site / "reference" / "query" / "index.html").read_text(encoding="utf-8")
    assert "PlanKind" in reference  # the API reference is generated from the docstrings
    # The docstrings' reStructuredText conventions are turned into Markdown (the
    # rst_docstrings extension): no literal "Example::", role or table border is left.
    for html in (site / "reference").rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        for leftover in (
            "Example::",
            ":class:",
            ":meth:",
            ":func:",
            "=====",
            "<autoref",
            "doctest:",
        ):
            assert leftover not in text, f"{leftover!r} in {html}"
    testing = (site / "reference" / "testing" / "index.html").read_text(encoding="utf-8")
    assert "<table>" in testing  # the fixtures table
    assert 'href="../azt/#azt.TableServiceClient"' in testing  # a role became a link
    assert '<span class="gp">&gt;&gt;&gt; </span>' in reference  # doctests as pycon
    for html in site.rglob("*.html"):
        assert "```" not in html.read_text(encoding="utf-8"), f"an unrendered fence in {html}"
    assert not (site / "_hooks").exists()


def test_fence_hook() -> None:
    spec = importlib.util.spec_from_file_location("fences", DOCS / "_hooks" / "fences.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert doctest.testmod(module).failed == 0
    page = "```python test\na\n```\n\n```python pytest\nb\n```\n```python\nc\n```\n"
    assert (
        module.strip_markers(page) == "```python\na\n```\n\n```python\nb\n```\n```python\nc\n```\n"
    )


def _hook(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, DOCS / "_hooks" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rst_docstrings_extension() -> None:
    module = _hook("rst_docstrings")
    assert doctest.testmod(module).failed == 0
    convert = module.rst_to_markdown
    doc = (
        "Intro.\n\n"
        "=====  ==========\n"
        "kind   effect\n"
        "=====  ==========\n"
        "``a``  first line\n"
        "       and more\n"
        "``b``  :class:`X`\n"
        "=====  ==========\n\n"
        "Shell::\n\n"
        "    $ azt tables list\n\n"
        "Example::\n\n"
        "    >>> 1\n"
        "    1\n"
        "\n"
        "After."
    )
    assert convert(doc, "m").split("\n") == [
        "Intro.",
        "",
        "| kind | effect |",
        "|---|---|",
        "| ``a`` | first line and more |",
        '| ``b`` | <autoref identifier="m.X" optional><code>X</code></autoref> |',
        "",
        "Shell:",
        "",
        "```console",
        "$ azt tables list",
        "```",
        "",
        "Example:",
        "",
        "```pycon",
        ">>> 1",
        "1",
        "```",
        "",
        "After.",
    ]
    # Doctest directives are dropped from what the reader sees.
    shown = convert(
        "Example::\n\n    >>> f(1)  # doctest: +SKIP\n    >>> g(\n    ...   2)\n"
        "    ... # doctest: +ELLIPSIS\n    '...'\n"
    )
    assert shown.split("\n") == [
        "Example:",
        "",
        "```pycon",
        ">>> f(1)",
        ">>> g(",
        "...   2)",
        "'...'",
        "```",
        "",
    ]
    # A headerless table gets an empty header; fenced blocks are left alone.
    assert convert("==  ==\na   b\n==  ==").split("\n") == ["|  |  |", "|---|---|", "| a | b |"]
    assert convert("```\nx::\n    y\n```") == "```\nx::\n    y\n```"


def test_readme_quick_start_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's quick start is a complete program (it runs its own event loop)."""
    (source,) = _BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    exec(compile(source, "<README.md quick start>", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "row range: PartitionKey='Action'" in out
    assert "['Heat']" in out


_SHELL_TOUR = re.compile(
    r"## Look at a table from the shell\n.*?^```bash test\n(.*?)^```", re.S | re.M
)


def _tour_venv(tmp_path: Path) -> None:
    """``tmp_path/.venv`` as the tour expects it: this interpreter's virtual environment when
    it has the installed ``azt`` and ``azt-stub``, else one made of small scripts running
    ``python -m`` (the commands are the same code; only their installation differs)."""
    venv = Path(sys.prefix)
    if all((venv / "bin" / name).is_file() for name in ("activate", "azt", "azt-stub")):
        (tmp_path / ".venv").symlink_to(venv)
        return
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n', encoding="utf-8")
    for name, module in (("azt", "azt"), ("azt-stub", "azt_server_stub")):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        script.chmod(0o755)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_getting_started_shell_tour_runs(tmp_path: Path) -> None:
    """The shell tour of getting-started.md, pasted into bash as printed, but for the port:
    tests take free ports, so the stub it starts listens on one and the connection string
    names it (``UseDevelopmentStorage=true`` meaning 127.0.0.1:10002, azt-stub's default
    port, is checked apart)."""
    (script,) = _SHELL_TOUR.findall((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    port = _free_port()
    stub_line = "azt-stub & sleep 1"
    dev_line = 'export AZT_CONNECTION_STRING="UseDevelopmentStorage=true"'
    assert stub_line in script
    assert dev_line in script
    script = script.replace(stub_line, f"azt-stub --port {port} & sleep 1")
    script = script.replace(
        dev_line,
        f'export AZT_CONNECTION_STRING="{StubServer(port=port).connection_string}"',
    )
    _tour_venv(tmp_path)  # the tour runs from a checkout with .venv
    proc = subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the stub goes with it below
        env={k: v for k, v in os.environ.items() if k != "AZT_CONNECTION_STRING"},
    )
    try:
        out, err = proc.communicate(timeout=120)
    finally:  # whatever happened, nothing the tour started outlives the test
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 0, out + err
    assert f"azt-stub listening on http://127.0.0.1:{port}" in out
    assert "\nmovies\n" in out  # azt tables list
    table = out[out.index("PartitionKey  RowKey") :].splitlines()
    assert table[2].split() == ["Action", "Heat", "4.6"]
    assert table[3] == "(1 entity)"
    assert "azt-stub shutting down" in out  # kill %1 stopped it
    exported = (tmp_path / "movies.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["Rating"] for line in exported] == [4.6]


def test_the_shell_tour_defaults_meet_on_the_development_port() -> None:
    """What the printed tour relies on and its run above substitutes: azt-stub listens on
    127.0.0.1:10002 by default, where UseDevelopmentStorage=true points."""
    from azt._core.connection_string import parse_connection_string
    from azt_server_stub.__main__ import build_parser

    args = build_parser().parse_args([])
    assert (args.host, args.port) == ("127.0.0.1", 10002)
    dev = parse_connection_string("UseDevelopmentStorage=true").endpoint
    assert dev == f"http://{args.host}:{args.port}/devstoreaccount1"
