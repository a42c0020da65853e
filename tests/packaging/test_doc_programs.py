"""The programs of index.md and getting-started.md, async and blocking (``azt.sync``) forms,
run as scripts and print what the pages say they print (from the checkout;
test_installed_wheel runs them from the wheel)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.programs import PAGES, ROOT, Program, programs, user_pytest_config

PROGRAMS = programs()


def test_the_pages_have_programs() -> None:
    assert {p.page for p in PROGRAMS} == set(PAGES)
    assert len([p for p in PROGRAMS if p.page == "getting-started.md"]) >= 4
    for program in PROGRAMS:  # a complete program: no top-level await
        compile(program.source, program.name, "exec")
        if program.form == "async":  # it runs its own loop
            assert "asyncio.run(main())" in program.source
        else:  # blocking: azt.sync, and no event loop or await anywhere
            assert program.form == "sync"
            assert "from azt.sync import" in program.source
            assert "asyncio" not in program.source
            assert "await" not in program.source
    forms = {(p.page, p.number, p.form) for p in PROGRAMS}
    assert {(page, n, "sync") for page, n, _ in forms} <= forms  # every program in both


def test_the_documented_configuration_is_one_line() -> None:
    lines = [line for line in user_pytest_config().splitlines() if line.strip()]
    assert lines == [
        "[tool.pytest.ini_options]",
        'asyncio_default_fixture_loop_scope = "function"',
    ]
    # The fixtures section of the stub page states the same line.
    stub_page = (ROOT / "docs" / "stub.md").read_text(encoding="utf-8")
    assert f"```toml\n{user_pytest_config()}```" in stub_page


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_runs_as_a_script(program: Program, tmp_path: Path) -> None:
    script = tmp_path / program.name
    script.write_text(program.source, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == program.output
    assert proc.stderr == ""
