"""Mutation testing for one module: how many deliberately broken versions do its tests catch?

Usage (from the repository root, with the project's virtualenv)::

    PYTHONPATH=$PWD .venv/bin/python scripts/mutate.py azt/_core/retry.py
    PYTHONPATH=$PWD .venv/bin/python scripts/mutate.py azt/_core/retry.py --list
    PYTHONPATH=$PWD .venv/bin/python scripts/mutate.py azt/_core/retry.py --only "RetryPolicy"

The script parses the module, makes small mutants of it (an operator swapped, a comparison
flipped or its boundary shifted, a number moved by one, a boolean inverted, a condition
negated, one statement deleted), and for each mutant runs the tests that cover the module
(`scripts/mutation-tests.toml` maps a module to its test files; `--tests` overrides). A mutant
is *killed* when a test fails (or the run passes its time limit), and *survives* when every
test still passes. The score is killed / (mutants - reviewed equivalents): the equivalents are
mutants that cannot change behaviour, each listed with its reason in
`scripts/mutation-equivalents.toml`.

The working tree is never written. A mutant lives only in memory: each run is a forked child
that installs an import hook serving the mutated source for the one module (and a
`sitecustomize` on `PYTHONPATH` does the same in any Python subprocess a test starts), so
runs can go in parallel (`--jobs`), and Ctrl-C or a kill leaves nothing to restore. The
parent imports pytest and the heavy third-party libraries once before forking, so a mutant
costs its tests, not an interpreter start.

A module yielding more than `--max` mutants is sampled deterministically (by a hash of each
mutant's id, so a given mutant is in or out of the sample whatever else changes). A line
ending in `# pragma: no mutate` (or `# pragma: no cover`: declared unreachable) is skipped.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import hashlib
import json
import os
import select
import signal
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS_MAP = HERE / "mutation-tests.toml"
EQUIVALENTS = HERE / "mutation-equivalents.toml"
ENV_VAR = "AZT_MUTANT_FILE"
NOT_IMPORTED = 97  # exit code of a child whose tests never imported the mutated module

# The import hook: installed in each forked child, and (through a generated sitecustomize)
# in any Python subprocess a test starts. Kept as source so both can use the same text.
HOOK_SOURCE = r"""
import importlib.abc, importlib.util, json, os, sys

class _MutantFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, spec_file):
        with open(spec_file, encoding="utf-8") as f:
            data = json.load(f)
        self.name = data["module"]
        self.path = data["path"]
        self.source = data["source"]
        self.is_package = data["is_package"]
        self.loaded = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.path, loader=self,
            submodule_search_locations=[os.path.dirname(self.path)] if self.is_package else None,
        )

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        self.loaded = True
        exec(compile(self.source, self.path, "exec"), module.__dict__)

def _install_mutant(spec_file):
    finder = _MutantFinder(spec_file)
    sys.meta_path.insert(0, finder)
    return finder
"""

_hook_namespace: dict[str, object] = {}
exec(compile(HOOK_SOURCE, "<mutate-hook>", "exec"), _hook_namespace)

SITECUSTOMIZE = (
    HOOK_SOURCE
    + "\nif os.environ.get('"
    + ENV_VAR
    + "'):\n    _install_mutant(os.environ['"
    + ENV_VAR
    + "'])\n"
)

# Third-party modules imported once before forking (children run with --assert=plain, so
# pytest has no plugin asserts to rewrite and does not mind them imported already).
PRELOAD = (
    "pytest",
    "_pytest.python",
    "aiohttp",
    "aiohttp.web",
    "hypothesis",
    "pytest_asyncio",
    "tenacity",
)


# --------------------------------------------------------------------------- mutants


@dataclass
class Mutant:
    """One mutation: where, what, and how to apply it to a fresh copy of the tree."""

    ident: str
    line: int
    description: str
    apply: Callable[[ast.AST], None] = field(repr=False)


_BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.BitXor: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
# A boundary shift (< to <=) and a flip (< to >=) for each ordering; equality and membership
# are negated.
_CMP_SWAPS: dict[type[ast.cmpop], tuple[type[ast.cmpop], ...]] = {
    ast.Lt: (ast.LtE, ast.GtE),
    ast.LtE: (ast.Lt, ast.Gt),
    ast.Gt: (ast.GtE, ast.LtE),
    ast.GtE: (ast.Gt, ast.Lt),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.In: (ast.NotIn,),
    ast.NotIn: (ast.In,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
}
# Not deleted: declarations, and `assert` (in this code base a note to the type checker,
# such as `assert x is not None`, not a check a caller relies on).
_SKIP_STATEMENTS = (
    ast.Pass,
    ast.Assert,
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Global,
    ast.Nonlocal,
)


def _snippet(node: ast.AST) -> str:
    text = ast.unparse(node).splitlines()[0]
    return text if len(text) <= 70 else text[:67] + "..."


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and isinstance(parent, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    )


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


class _Walker:
    """Numbers every node in a stable order and records which ones may be mutated."""

    def __init__(self, tree: ast.Module, skipped_lines: set[int]) -> None:
        self.nodes: list[ast.AST] = []
        self.parents: dict[int, tuple[int, str, int | None]] = {}
        self.scope: dict[int, str] = {}
        self.skipped_lines = skipped_lines
        self._visit(tree, None, "", "<module>")

    def _visit(self, node: ast.AST, parent: int | None, fname: str, scope: str) -> None:
        index = len(self.nodes)
        self.nodes.append(node)
        self.scope[index] = scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            scope = node.name if scope == "<module>" else f"{scope}.{node.name}"
        for name, value in ast.iter_fields(node):
            # annotations are types, not behaviour; a TYPE_CHECKING block never runs
            if name in ("annotation", "returns", "type_comment"):
                continue
            if isinstance(value, list):
                for position, item in enumerate(value):
                    if isinstance(item, ast.AST) and not _type_checking_block(item):
                        self.parents[len(self.nodes)] = (index, name, position)
                        self._visit(item, index, name, scope)
            elif isinstance(value, ast.AST):
                self.parents[len(self.nodes)] = (index, name, None)
                self._visit(value, index, name, scope)


def _at(index: int, action: Callable[[ast.AST], None]) -> Callable[[ast.AST], None]:
    def apply(tree: ast.AST) -> None:
        nodes = _Walker(tree, set()).nodes  # type: ignore[arg-type]
        action(nodes[index])

    return apply


def _set_op(index: int, op: type[ast.AST]) -> Callable[[ast.AST], None]:
    def action(node: ast.AST) -> None:
        node.op = op()  # type: ignore[attr-defined]

    return _at(index, action)


def _with_parent(
    walker: _Walker, index: int, action: Callable[[ast.AST, str, int | None], None]
) -> Callable[[ast.AST], None]:
    parent_index, fname, position = walker.parents[index]

    def apply(tree: ast.AST) -> None:
        nodes = _Walker(tree, set()).nodes  # type: ignore[arg-type]
        action(nodes[parent_index], fname, position)

    return apply


def generate(source: str) -> list[Mutant]:
    """Every mutant of `source`, in source order, each with a stable identifier."""
    tree = ast.parse(source)
    skipped = {
        number
        for number, text in enumerate(source.splitlines(), start=1)
        if text.rstrip().endswith(("# pragma: no mutate", "# pragma: no cover"))
    }
    walker = _Walker(tree, skipped)
    mutants: list[Mutant] = []
    seen: dict[str, int] = {}

    def add(index: int, node: ast.AST, what: str, apply: Callable[[ast.AST], None]) -> None:
        line = getattr(node, "lineno", 0)
        if line in skipped:
            return
        base = f"{walker.scope[index]}: {what}"
        seen[base] = seen.get(base, 0) + 1
        ident = base if seen[base] == 1 else f"{base} #{seen[base]}"
        mutants.append(Mutant(ident, line, what, apply))

    for index, node in enumerate(walker.nodes):
        parent_info = walker.parents.get(index)
        parent = walker.nodes[parent_info[0]] if parent_info else None
        if isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _BINOP_SWAPS:
            new_op = _BINOP_SWAPS[type(node.op)]
            arith = copy.copy(node)
            arith.op = new_op()
            add(index, node, f"`{_snippet(node)}` -> `{_snippet(arith)}`", _set_op(index, new_op))
        elif isinstance(node, ast.Compare):
            for position, op in enumerate(node.ops):
                for new_cmp in _CMP_SWAPS.get(type(op), ()):
                    compare = copy.copy(node)
                    compare.ops = list(node.ops)
                    compare.ops[position] = new_cmp()

                    def swap(n: ast.AST, p: int = position, c: type[ast.cmpop] = new_cmp) -> None:
                        assert isinstance(n, ast.Compare)
                        n.ops[p] = c()

                    what = f"`{_snippet(node)}` -> `{_snippet(compare)}`"
                    add(index, node, what, _at(index, swap))
        elif isinstance(node, ast.BoolOp):
            new_bool: type[ast.boolop] = ast.Or if isinstance(node.op, ast.And) else ast.And
            logic = copy.copy(node)
            logic.op = new_bool()
            add(index, node, f"`{_snippet(node)}` -> `{_snippet(logic)}`", _set_op(index, new_bool))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add(
                index,
                node,
                f"`{_snippet(node)}` -> `{_snippet(node.operand)}`",
                _with_parent(walker, index, _replace_with_operand),
            )
        elif isinstance(node, ast.Constant) and not _is_docstring_value(walker, index):
            value = node.value
            if isinstance(value, bool):
                add(
                    index,
                    node,
                    f"`{value!r}` -> `{not value!r}`",
                    _at(index, lambda n: setattr(n, "value", not n.value)),  # type: ignore[attr-defined]
                )
            elif isinstance(value, int | float) and not isinstance(value, bool):
                add(
                    index,
                    node,
                    f"`{value!r}` -> `{value + 1!r}`",
                    _at(index, lambda n: setattr(n, "value", n.value + 1)),  # type: ignore[attr-defined]
                )
        if isinstance(node, ast.If | ast.While | ast.IfExp):
            test = node.test
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                continue  # already mutated by dropping the `not`
            add(
                index,
                node,
                f"`{_snippet(test)}` -> `not ({_snippet(test)})`",
                _at(index, _negate_test),
            )
        if _declares_all(node):
            continue  # `__all__` names the public API; no behaviour to mutate
        if (
            isinstance(node, ast.stmt)
            and not isinstance(node, _SKIP_STATEMENTS)
            and not _is_docstring(node, parent)
            and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        ):
            add(
                index,
                node,
                f"delete `{_snippet(node)}`",
                _with_parent(walker, index, _delete_statement),
            )
    return mutants


def _declares_all(node: ast.AST) -> bool:
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    )


def _is_docstring_value(walker: _Walker, index: int) -> bool:
    parent_index = walker.parents.get(index, (None, "", None))[0]
    return parent_index is not None and isinstance(walker.nodes[parent_index], ast.Expr)


def _negate_test(node: ast.AST) -> None:
    node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)  # type: ignore[attr-defined]


def _replace_with_operand(parent: ast.AST, fname: str, position: int | None) -> None:
    value = getattr(parent, fname)
    if position is None:
        setattr(parent, fname, value.operand)
    else:
        value[position] = value[position].operand


def _delete_statement(parent: ast.AST, fname: str, position: int | None) -> None:
    body = getattr(parent, fname)
    assert position is not None
    body[position] = ast.Pass()


def mutated_source(source: str, mutant: Mutant) -> str:
    """The module's source with one mutant applied."""
    tree = ast.parse(source)
    mutant.apply(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


def sample(mutants: list[Mutant], limit: int) -> list[Mutant]:
    """At most `limit` mutants, chosen by a hash of their ids (stable, in source order)."""
    if limit <= 0 or len(mutants) <= limit:
        return mutants
    ranked = sorted(mutants, key=lambda m: hashlib.sha256(m.ident.encode()).hexdigest())
    keep = {m.ident for m in ranked[:limit]}
    return [m for m in mutants if m.ident in keep]


# --------------------------------------------------------------------------- configuration


def load_equivalents(module: str, path: Path = EQUIVALENTS) -> dict[str, str]:
    """The reviewed equivalent mutants of `module`: id -> reason."""
    if not path.exists():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for entry in data.get("equivalent", []):
        if entry["module"] == module:
            if not entry.get("reason", "").strip():
                raise SystemExit(f"{path}: equivalent {entry['id']!r} has no reason")
            found[entry["id"]] = entry["reason"]
    return found


def load_tests(module: str, path: Path = TESTS_MAP) -> tuple[list[str], int | None]:
    """The pytest arguments that cover `module` and its sample size, from the mapping kept
    in the repository (empty and None when it is not mapped)."""
    if not path.exists():
        return [], None
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entry = data.get("modules", {}).get(module)
    if entry is None:
        return [], None
    return list(entry["tests"]), entry.get("max")


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    relative = path.resolve().relative_to(root.resolve()).with_suffix("")
    parts = list(relative.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, timeout, survived, not-imported, equivalent
    seconds: float


def _child(spec_file: str, pytest_args: list[str], log: str) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.setsid()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.environ[ENV_VAR] = spec_file
    code = 3
    try:
        finder = _hook_namespace["_install_mutant"](spec_file)  # type: ignore[operator]
        import pytest

        code = int(pytest.main(pytest_args))
        if code == 0 and not finder.loaded and os.environ.get("AZT_MUTATE_REQUIRE_IMPORT"):
            code = NOT_IMPORTED
    except BaseException:  # a child reports through its exit code only
        import traceback

        traceback.print_exc()
        code = 4
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


@dataclass
class _Running:
    mutant: Mutant
    pid: int
    started: float
    spec_file: str


def run(
    source_path: Path,
    root: Path,
    mutants: list[Mutant],
    pytest_args: list[str],
    timeout: float,
    jobs: int,
    workdir: Path,
    progress: Callable[[Outcome], None],
) -> list[Outcome]:
    """Run each mutant's tests in a forked child, at most `jobs` at once."""
    name, is_package = module_name(source_path, root)
    source = source_path.read_text(encoding="utf-8")
    queue = list(mutants)
    running: dict[int, _Running] = {}
    outcomes: list[Outcome] = []
    try:
        while queue or running:
            while queue and len(running) < jobs:
                mutant = queue.pop(0)
                spec_file = str(workdir / f"mutant-{len(outcomes) + len(running)}.json")
                text = source if mutant.ident == "<original>" else mutated_source(source, mutant)
                Path(spec_file).write_text(
                    json.dumps(
                        {
                            "module": name,
                            "path": str(source_path.resolve()),
                            "source": text,
                            "is_package": is_package,
                        }
                    ),
                    encoding="utf-8",
                )
                log = spec_file[: -len(".json")] + ".log"
                pid = os.fork()
                if pid == 0:
                    _child(spec_file, pytest_args, log)
                running[pid] = _Running(mutant, pid, time.monotonic(), spec_file)
            for pid, item in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                elapsed = time.monotonic() - item.started
                if done == 0:
                    if elapsed > timeout:
                        _kill_group(pid)
                        os.waitpid(pid, 0)
                        result = Outcome(item.mutant, "timeout", elapsed)
                    else:
                        continue
                else:
                    code = os.waitstatus_to_exitcode(status)
                    kind = {0: "survived", NOT_IMPORTED: "not-imported"}.get(code, "killed")
                    if code == 5:  # pytest: no tests collected
                        kind = "no-tests"
                    result = Outcome(item.mutant, kind, elapsed)
                    _kill_group(pid)  # any server a test left behind
                del running[pid]
                outcomes.append(result)
                progress(result)
            if running:
                select.select([], [], [], 0.02)
    finally:
        for pid in running:
            _kill_group(pid)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return outcomes


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", help="path of the module to mutate, e.g. azt/_core/retry.py")
    parser.add_argument("--tests", nargs="+", help="pytest arguments (default: the mapping)")
    parser.add_argument(
        "--max", type=int, help="sample at most this many (default: the mapping's, else 150)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once")
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds per mutant")
    parser.add_argument("--only", help="run only mutants whose id contains this text")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--show", help="print the mutated source of the mutant with this id")
    parser.add_argument("--json", type=Path, help="write every outcome to this file")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="import root")
    parser.add_argument("--tests-map", type=Path, default=TESTS_MAP)
    parser.add_argument("--equivalents", type=Path, default=EQUIVALENTS)
    args = parser.parse_args(argv)

    # a kill (SIGTERM) unwinds like Ctrl-C, so the running children are killed too
    signal.signal(signal.SIGTERM, _terminate)
    root: Path = args.root.resolve()
    source_path = (root / args.module).resolve()
    module = source_path.relative_to(root).as_posix()
    source = source_path.read_text(encoding="utf-8")
    mapped_tests, mapped_max = load_tests(module, args.tests_map)
    every = generate(source)
    chosen = sample(every, args.max if args.max is not None else (mapped_max or 150))
    sampled = len(chosen) < len(every)
    equivalents = load_equivalents(module, args.equivalents)
    if args.only:
        chosen = [m for m in chosen if args.only in m.ident]
    if args.show:
        for mutant in every:
            if mutant.ident == args.show:
                print(mutated_source(source, mutant))
                return 0
        print(f"no mutant {args.show!r}", file=sys.stderr)
        return 2
    if args.list:
        for mutant in chosen:
            mark = "  [equivalent]" if mutant.ident in equivalents else ""
            print(f"{module}:{mutant.line}: {mutant.ident}{mark}")
        print(f"{len(chosen)} of {len(every)} mutants")
        return 0

    tests = args.tests or mapped_tests
    if not tests:
        print(f"no tests mapped for {module}: add it to {args.tests_map} or pass --tests")
        return 2
    pytest_args = ["-x", "-q", "--assert=plain", "-p", "no:cacheprovider", *tests]
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)

    with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
        workdir = Path(tmp)
        (workdir / "site").mkdir()
        (workdir / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(workdir / "site"), str(root), os.environ.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
        os.environ["AZT_MUTATE_REQUIRE_IMPORT"] = "1"
        original = Mutant("<original>", 0, "the unmutated module", lambda tree: None)
        [baseline] = run(source_path, root, [original], pytest_args, 600.0, 1, workdir, _quiet)
        if baseline.status != "survived":
            log = (workdir / "mutant-0.log").read_text(encoding="utf-8", errors="replace")
            print(log[-4000:])
            print(f"the tests fail ({baseline.status}) on the unmutated module: fix them first")
            return 2
        timeout = args.timeout or max(10.0, baseline.seconds * 4 + 5)
        runnable = [m for m in chosen if m.ident not in equivalents]
        print(
            f"{module}: {len(chosen)} mutants"
            + (f" (a deterministic sample of {len(every)})" if sampled else "")
            + f", {len(chosen) - len(runnable)} reviewed equivalent; tests: {' '.join(tests)};"
            f" baseline {baseline.seconds:.1f}s, timeout {timeout:.0f}s",
            flush=True,
        )
        outcomes = run(
            source_path, root, runnable, pytest_args, timeout, args.jobs, workdir, _report
        )
    killed = sum(o.status in ("killed", "timeout") for o in outcomes)
    survivors = [o for o in outcomes if o.status not in ("killed", "timeout")]
    score = 100.0 * killed / len(outcomes) if outcomes else 100.0
    print(f"\n{module}: score {score:.1f}% ({killed} killed of {len(outcomes)} non-equivalent)")
    for outcome in sorted(survivors, key=lambda o: o.mutant.line):
        print(f"  SURVIVED {module}:{outcome.mutant.line}: {outcome.mutant.ident}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "module": module,
                    "mutants": len(every),
                    "sampled": len(chosen),
                    "equivalent": len(chosen) - len(runnable),
                    "killed": killed,
                    "score": round(score, 1),
                    "outcomes": [
                        {"id": o.mutant.ident, "line": o.mutant.line, "status": o.status}
                        for o in outcomes
                    ],
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    return 0 if not survivors else 1


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _quiet(outcome: Outcome) -> None:
    pass


def _report(outcome: Outcome) -> None:
    mark = {"killed": ".", "timeout": "T", "survived": "S"}.get(outcome.status, "?")
    print(mark, end="", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
