"""The installed user's first ten minutes, from the built wheel.

Once per run: build the wheel (hatchling, as ``pip wheel`` does), create a fresh virtual
environment in a temporary directory outside the repository, and ``pip install
"<wheel>[testing]"`` there (plus mypy, which a user brings). Then, with nothing of the
checkout on the path:

* the programs of index.md and getting-started.md run as scripts and print what the pages
  say;
* a small user project (its only pytest configuration is the block getting-started.md
  shows, its tests those the page shows plus a few more) passes with the azt fixtures,
  found through the ``pytest11`` entry point;
* ``mypy --strict`` passes on that project and on the programs (``py.typed`` ships in both
  packages), and reports a wrong-typed assignment to an entity property.

This runs in CI as part of ``bash scripts/test.sh``. ``AZT_SKIP_PACKAGING=1`` skips it on a
developer's machine (never when ``CI`` is set): it needs PyPI (or pip's cache) and takes
about half a minute.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.programs import ROOT, Program, programs, user_pytest_config, user_test_files

pytestmark = pytest.mark.slow

PROGRAMS = programs()
#: What must not leak from the developer's environment into the user's.
_SCRUB = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "VIRTUAL_ENV",
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "MYPYPATH",
    "AZT_TEST_CONNECTION_STRING",
    "AZT_CONNECTION_STRING",
)


@dataclass(frozen=True)
class Installed:
    """A fresh virtual environment with the wheel installed, outside the repository."""

    python: Path
    env: dict[str, str]
    home: Path

    def run(
        self, *args: str | Path, cwd: Path, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """Runs the environment's python with ``args`` in ``cwd``."""
        return subprocess.run(
            [str(self.python), *map(str, args)],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _checked(proc: subprocess.CompletedProcess[str], what: str) -> str:
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    if os.environ.get("AZT_SKIP_PACKAGING") == "1" and not os.environ.get("CI"):
        pytest.skip("AZT_SKIP_PACKAGING=1: the installed-wheel check was not run")
    home = tmp_path_factory.mktemp("installed")
    assert ROOT not in home.parents  # outside the repository
    dist = home / "dist"
    _checked(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "-w",
                str(dist),
                str(ROOT),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        ),
        "building the wheel",
    )
    (wheel,) = dist.glob("azt_tables-*.whl")  # the distribution azt-tables
    env_dir = home / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(env_dir)
    env["MYPY_CACHE_DIR"] = str(home / "mypy-cache")
    user = Installed(python, env, home)
    _checked(
        user.run(
            "-m", "pip", "install", "--quiet", f"{wheel}[testing]", "mypy", cwd=home, timeout=600
        ),
        "pip install <wheel>[testing]",
    )
    return user


def test_the_wheel_is_what_is_imported(installed: Installed) -> None:
    out = _checked(
        installed.run(
            "-c",
            "import azt, azt_server_stub, importlib.metadata as md, pathlib\n"
            "print(azt.__file__)\n"
            "print(azt_server_stub.__file__)\n"
            "print(azt.__version__ == md.version('azt-tables'))\n"
            "print('Typing :: Typed' in md.metadata('azt-tables').get_all('Classifier'))\n"
            "print(md.metadata('azt-tables')['License-Expression'])\n"
            "for pkg in (azt, azt_server_stub):\n"
            "    print((pathlib.Path(pkg.__file__).parent / 'py.typed').is_file())\n",
            cwd=installed.home,
        ),
        "importing azt",
    )
    lines = out.splitlines()
    site = str(installed.home / "venv")
    assert lines[0].startswith(site), lines[0]
    assert lines[1].startswith(site), lines[1]
    assert lines[2:] == ["True", "True", "MIT", "True", "True"]


def test_the_commands_and_the_plugin_are_installed(installed: Installed) -> None:
    """``pip install azt-tables`` puts ``azt`` and ``azt-stub`` on the PATH and registers
    the pytest plugin (entry point ``azt`` in ``pytest11``) under the new name."""
    bin_dir = installed.python.parent
    version = _checked(
        installed.run("-c", "import azt; print(azt.__version__)", cwd=installed.home), "version"
    ).strip()
    proc = subprocess.run(
        [str(bin_dir / "azt"), "--version"],
        capture_output=True,
        text=True,
        env=installed.env,
        check=False,
    )
    assert proc.stdout == f"azt {version}\n", proc.stderr
    proc = subprocess.run(
        [str(bin_dir / "azt-stub"), "--help"],
        capture_output=True,
        text=True,
        env=installed.env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--oauth-allow-http" in proc.stdout
    out = _checked(
        installed.run(
            "-c",
            "import importlib.metadata as md\n"
            "(ep,) = [e for e in md.entry_points(group='pytest11') if e.name == 'azt']\n"
            "print(ep.value, ep.dist.name)\n",
            cwd=installed.home,
        ),
        "the pytest11 entry point",
    )
    assert out == "azt.testing azt-tables\n"


def test_the_explorer_page_ships_in_the_wheel(installed: Installed) -> None:
    """The data explorer's HTML, CSS and JavaScript are package data of the wheel."""
    out = _checked(
        installed.run(
            "-c",
            "from azt_server_stub.explorer.api import _static_files\n"
            "files = _static_files()\n"
            "print(sorted(files))\n"
            "print(b'azt stub explorer' in files[''][0],\n"
            "      min(len(body) for body, _ in files.values()) > 500)\n",
            cwd=installed.home,
        ),
        "loading the explorer's files",
    )
    assert out.splitlines() == ["['', 'explorer.css', 'explorer.js']", "True True"]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_documented_program_runs(installed: Installed, program: Program, tmp_path: Path) -> None:
    (tmp_path / program.name).write_text(program.source, encoding="utf-8")
    proc = installed.run("-W", "error", program.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == program.output
    assert proc.stderr == ""


MOVIES = '''\
"""A user's module: an entity class and a function that uses azt."""

from azt import TableClient
from azt.entity import Entity, Prop, prop
from azt.query import Query


class Movie(Entity):
    rating: Prop[float] = prop(name="Rating", default=0.0)
    year: Prop[int] = prop(name="ReleaseYear", default=2000)


async def best(table: TableClient, category: str) -> list[str]:
    query = Query(Movie, table).where(Movie.PartitionKey == category, Movie.rating >= 4.5)
    return [movie.RowKey for movie in await query.to_list()]
'''

USER_TESTS = """\
import pytest

from azt import RetryPolicy, ServerBusyError, TableClient, TableServiceClient
from azt.context import TableContext
from azt_server_stub import StubServer
from movies import Movie, best


async def test_best(azt_service_client: TableServiceClient, azt_table: TableClient) -> None:
    ctx = TableContext(azt_service_client)
    ctx.add(azt_table.table_name, Movie("Action", "Heat", rating=4.6, year=1995))
    ctx.add(azt_table.table_name, Movie("Action", "Speed", rating=3.9, year=1994))
    await ctx.save_changes()
    assert await best(azt_table, "Action") == ["Heat"]


async def test_tables_are_fresh(azt_table: TableClient) -> None:
    assert await azt_table.list_entities().to_list() == []


async def test_service_client(azt_service_client: TableServiceClient) -> None:
    await azt_service_client.create_table_if_not_exists("mine")
    assert "mine" in await azt_service_client.list_tables().to_list()


async def test_a_busy_service(azt_stub: StubServer) -> None:
    faults = azt_stub.config.faults
    assert faults is not None
    faults.fail_next("busy", 1)
    conn = azt_stub.connection_string
    async with TableServiceClient.from_connection_string(
        conn, retry=RetryPolicy.no_retries()
    ) as service:
        with pytest.raises(ServerBusyError):
            await service.list_tables().to_list()


def test_a_sync_test_gets_a_connection_string(azt_connection_string: str) -> None:
    assert "AccountName=devstoreaccount1" in azt_connection_string
"""

WRONG = """\
from movies import Movie

movie = Movie("Action", "Heat")
movie.rating = "five stars"
"""


@pytest.fixture(scope="module")
def project(installed: Installed) -> Path:
    """A user's project: the documented configuration, a module, tests."""
    root = installed.home / "userproject"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(user_pytest_config(), encoding="utf-8")
    (root / "movies.py").write_text(MOVIES, encoding="utf-8")
    for number, source in enumerate(user_test_files(), 1):
        (root / "tests" / f"test_from_the_docs_{number}.py").write_text(source, encoding="utf-8")
    (root / "tests" / "test_movies.py").write_text(USER_TESTS, encoding="utf-8")
    return root


def test_user_project_tests_pass_with_the_fixtures(installed: Installed, project: Path) -> None:
    proc = installed.run(
        "-m",
        "pytest",
        "-W",
        "error",
        "-p",
        "no:cacheprovider",
        "-rA",
        "--rootdir",
        project,
        cwd=project,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    expected = 5 + sum(s.count("\nasync def test_") for s in user_test_files())
    assert f"{expected} passed" in out, out
    assert "warning" not in out.lower(), out
    assert f"rootdir: {project}" in out  # the project's own configuration, nothing else


def test_mypy_strict_passes_on_the_user_project(installed: Installed, project: Path) -> None:
    programs_dir = installed.home / "programs"
    programs_dir.mkdir(exist_ok=True)
    for program in PROGRAMS:
        (programs_dir / program.name).write_text(program.source, encoding="utf-8")
    proc = installed.run("-m", "mypy", "--strict", "movies.py", "tests", programs_dir, cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout


def test_mypy_strict_reports_a_wrong_type_for_an_entity_property(
    installed: Installed, project: Path
) -> None:
    (project / "wrong.py").write_text(WRONG, encoding="utf-8")
    try:
        proc = installed.run("-m", "mypy", "--strict", "wrong.py", cwd=project)
    finally:
        (project / "wrong.py").unlink()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (error,) = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert error.startswith("wrong.py:4: error: Incompatible types in assignment"), error
    assert '"str"' in error, error
    assert '"float"' in error, error
    assert "py.typed" not in proc.stdout  # the types came from the package
