"""Run ``mypy --strict`` (the project's configuration) on the typing checks, so that their
``assert_type`` lines and their negative lines (each ``# type: ignore[code]`` must still
be needed: ``warn_unused_ignores``) are part of the test suite, not only of a lint step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKED = [
    "tests/typing/test_assert_types.py",
    "tests/typing/test_sync_assert_types.py",
    "tests/typing/test_domain_keys_types.py",
]


def test_typing_checks_pass_under_mypy_strict() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *CHECKED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout
