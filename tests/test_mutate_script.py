"""``scripts/mutate.py`` works: on a tiny module, the mutants a test catches are killed,
the one listed as equivalent is left out of the score, one no test catches survives and
fails the run, and the working tree is never written."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "mutate.py"

TINY = '''"""A tiny module."""

__all__ = ["clamp"]


def clamp(x: int, top: int) -> int:
    """The smaller of the two."""
    if x > top:
        return top
    return x


def label(n: int) -> str:
    return "many" if n > 1 else "one"  # pragma: no mutate


def double(n: int) -> int:
    return n + n
'''

TEST = """from tiny import clamp


def test_clamp():
    assert clamp(5, 3) == 3
    assert clamp(1, 3) == 1
"""

EQUIVALENT = """[[equivalent]]
module = "tiny.py"
id = "clamp: `x > top` -> `x >= top`"
reason = "at x == top both branches return the same value"
"""


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutate_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate_script"] = module
    spec.loader.exec_module(module)
    return module


def test_the_mutants_of_a_tiny_module() -> None:
    mutate = _script()
    ids = [m.ident for m in mutate.generate(TINY)]
    assert ids == [
        "clamp: `x > top` -> `not (x > top)`",
        "clamp: delete `if x > top:`",
        "clamp: `x > top` -> `x >= top`",
        "clamp: `x > top` -> `x <= top`",
        "clamp: delete `return top`",
        "clamp: delete `return x`",
        "double: delete `return n + n`",
        "double: `n + n` -> `n - n`",
    ]
    # the docstrings, __all__, annotations and the `# pragma: no mutate` line are left alone
    [boundary] = [m for m in mutate.generate(TINY) if "x >= top" in m.ident]
    text = mutate.mutated_source(TINY, boundary)
    assert "if x >= top:" in text
    assert text != TINY


def test_sampling_is_deterministic_and_keeps_source_order() -> None:
    mutate = _script()
    every = mutate.generate(TINY)
    picked = mutate.sample(every, 3)
    assert [m.ident for m in picked] == [m.ident for m in mutate.sample(every, 3)]
    assert len(picked) == 3
    assert [m.line for m in picked] == sorted(m.line for m in picked)
    assert mutate.sample(every, 0) == every


def _run(tmp_path: Path, *extra: str) -> tuple[int, str, dict[str, Any]]:
    out = tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "tiny.py",
            "--root",
            str(tmp_path),
            "--tests",
            "test_tiny.py",
            "--tests-map",
            str(tmp_path / "none.toml"),
            "--json",
            str(out),
            *extra,
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr, json.loads(out.read_text())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the runner forks")
def test_a_run_kills_catches_and_leaves_out_the_equivalent(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(TINY)
    (tmp_path / "test_tiny.py").write_text(TEST)
    (tmp_path / "eq.toml").write_text(EQUIVALENT)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")

    code, text, report = _run(tmp_path, "--equivalents", str(tmp_path / "eq.toml"))
    statuses = {o["id"]: o["status"] for o in report["outcomes"]}
    assert statuses == {
        "clamp: `x > top` -> `not (x > top)`": "killed",
        "clamp: delete `if x > top:`": "killed",
        "clamp: `x > top` -> `x <= top`": "killed",
        "clamp: delete `return top`": "killed",
        "clamp: delete `return x`": "killed",
        "double: `n + n` -> `n - n`": "survived",  # no test calls it
        "double: delete `return n + n`": "survived",
    }, text
    assert (report["equivalent"], report["killed"], report["score"]) == (1, 5, 71.4)
    assert code == 1
    assert "SURVIVED tiny.py:18: double: `n + n` -> `n - n`" in text
    assert (tmp_path / "tiny.py").read_text() == TINY  # the tree is never written

    # without the reviewed list, the equivalent mutant is one more survivor
    code, text, report = _run(tmp_path, "--only", "clamp")
    assert (report["equivalent"], report["killed"], report["score"]) == (0, 5, 83.3)
    assert len(report["outcomes"]) == 6
    assert code == 1
    assert "SURVIVED tiny.py:8: clamp: `x > top` -> `x >= top`" in text


def test_an_equivalent_needs_a_reason(tmp_path: Path) -> None:
    mutate = _script()
    path = tmp_path / "eq.toml"
    path.write_text('[[equivalent]]\nmodule = "m.py"\nid = "f: x"\nreason = " "\n')
    with pytest.raises(SystemExit, match="has no reason"):
        mutate.load_equivalents("m.py", path)
