"""Runs every ```python test block of docs/porting.md, in order, against the stub, and
every ```python test-sync block (the legacy Python ``TableService``, which blocks: it
needs a stub on another thread) against a threaded stub."""

from __future__ import annotations

import ast
import inspect
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from azt_server_stub import StubServer, ThreadedStubServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "porting.md"
_BLOCK = re.compile(r"^```python test\n(.*?)^```", re.S | re.M)
_BLOCKING = re.compile(r"^```python test-sync\n(.*?)^```", re.S | re.M)


def snippets() -> list[str]:
    """The tested Python blocks of the porting guide, in order."""
    return _BLOCK.findall(DOC.read_text(encoding="utf-8"))


def test_the_guide_has_tested_snippets_beside_csharp() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert len(snippets()) >= 10
    assert text.count("```csharp") >= 8


async def test_porting_guide_snippets_run(capsys: pytest.CaptureFixture[str]) -> None:
    async with StubServer() as stub:
        ns: dict[str, Any] = {"connection_string": stub.connection_string, "__name__": "porting"}
        try:
            for number, source in enumerate(snippets(), 1):
                code = compile(
                    source,
                    f"<porting.md snippet {number}>",
                    "exec",
                    flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                )
                result = eval(code, ns)  # the project's own documentation
                if inspect.iscoroutine(result):
                    await result
        finally:
            client = ns.get("table_client")
            if client is not None:
                await client.aclose()  # idempotent; the last snippet closes it itself
    assert "refused:" in capsys.readouterr().out


def test_blocking_legacy_snippets_run() -> None:
    blocks = _BLOCKING.findall(DOC.read_text(encoding="utf-8"))
    assert blocks, "the legacy TableService section has a tested block"
    # the switch puts legacy names into sys.modules: leave them as they were
    before = {name: mod for name, mod in sys.modules.items() if name.startswith("azure")}
    try:
        with ThreadedStubServer() as stub:
            ns: dict[str, Any] = {"connection_string": stub.connection_string}
            for number, source in enumerate(blocks, 1):
                exec(compile(source, f"<porting.md blocking snippet {number}>", "exec"), ns)
    finally:
        for name in [name for name in sys.modules if name.startswith("azure")]:
            if name not in before:
                del sys.modules[name]
        sys.modules.update(before)
        azure = sys.modules.get("azure")
        if azure is not None and "azure.cosmosdb" not in before:
            azure.__dict__.pop("cosmosdb", None)
