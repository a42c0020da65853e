"""The house rules of the layout, checked on the source (CONTRIBUTING.md, "The layout").

* no import cycle in ``azt`` or ``azt_server_stub`` (every import counts: module level,
  inside functions, under ``TYPE_CHECKING``);
* ``azt``'s layers only import downwards: ``_errors``/``_edm`` <- ``_core`` <- ``_orm`` <-
  ``_uow`` <- the faces, ``sync``, ``legacy``, ``cli``, ``testing``; internal modules never
  import the public faces;
* the stub never imports ``azt``;
* no module over 800 lines unless its first lines say why (``# Over 800 lines: ...``).

Example::

    .venv/bin/python -m pytest tests/test_layout.py
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("azt", "azt_server_stub")
MAX_LINES = 800
FACES = {"azt.entity", "azt.query", "azt.context", "azt.keys", "azt.dynamic", "azt.edm"}
#: Layer rank of azt's internal places: a module may import only ranks at or below its own.
RANKS = {
    "azt._azure_bases": 0,
    "azt._errors": 0,
    "azt._edm": 0,
    "azt._core": 1,
    "azt._orm": 2,
    "azt._uow": 3,
    "azt._frames": 3,
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every module ``name`` imports (resolving relative imports and ``from pkg import
    submodule``), restricted to the two packages."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            # ``from pkg import sub`` imports the submodule; ``from pkg import name``
            # imports the package (a submodule's own parent package is not an edge: it is
            # initialised before any of its submodules runs).
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in MODULES:
                    yield sub
                elif not name.startswith(module + "."):
                    yield module


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        targets = {t for t in _imports(name, path) if t in MODULES and t != name}
        # importing a.b.c runs a and a.b first: that is an edge to the package only when
        # the importer is not itself inside it (a package's own modules import siblings).
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over every import of both packages."""
    assert _cycles(_graph()) == []


def test_the_cycle_check_can_fail() -> None:
    """Guard the checker itself: a planted loop is found."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def _rank(module: str) -> int | None:
    for place, rank in RANKS.items():
        if module == place or module.startswith(place + "."):
            return rank
    return None


def test_layers_only_import_downwards() -> None:
    wrong = []
    for name, targets in _graph().items():
        if not name.startswith("azt."):
            continue
        mine = _rank(name)
        for target in targets:
            if mine is not None and target in FACES | {"azt"}:
                wrong.append(f"{name} imports the public face {target}")
            theirs = _rank(target)
            if mine is not None and theirs is not None and theirs > mine:
                wrong.append(f"{name} (layer {mine}) imports {target} (layer {theirs})")
    assert wrong == []


def test_the_stub_never_imports_the_client() -> None:
    wrong = [
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if name.startswith("azt_server_stub")
        for target in _imports(name, path)
        if target == "azt" or target.startswith("azt.")
    ]
    assert wrong == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_size(name: str) -> None:
    lines = MODULES[name].read_text(encoding="utf-8").splitlines()
    if len(lines) > MAX_LINES:
        head = "\n".join(lines[:5])
        assert "# Over 800 lines:" in head, (
            f"{name} has {len(lines)} lines: split it by responsibility, or say why in its "
            "first lines with '# Over 800 lines: <reason>'"
        )
