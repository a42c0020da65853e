"""The release check: what ``python -m build`` makes is what PyPI should receive.

The distribution is ``azt-tables`` (the import names stay ``azt`` and ``azt_server_stub``;
``azt`` on PyPI is an unrelated project). Once per run, as CONTRIBUTING.md "Releasing"
does: build the sdist and, from it, the wheel (``python -m build``), and build a wheel
straight from the tree (``python -m build --wheel``). Then:

* ``twine check --strict`` passes on the sdist and the wheel (metadata, and the README
  rendering as the index page);
* the wheel built from the sdist is the wheel built from the tree, file for file and byte
  for byte (the sdist holds everything building needs);
* the sdist holds exactly the tracked files its include list names, and none of what a
  working checkout accumulates (caches, virtual environments, benchmark output, built
  sites), even with no ``.gitignore`` to hide them;
* the metadata: name, version, licence files, project URLs, extras, the commands and the
  pytest11 entry point.

The README's links are checked without building (they must be absolute: relative links
break on PyPI). ``AZT_SKIP_PACKAGING=1`` skips the builds on a developer's machine (never
when ``CI`` is set): they need PyPI (or pip's cache) for hatchling.
"""

from __future__ import annotations

import email.parser
import email.policy
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

import pytest

import azt
from tests.packaging.programs import ROOT

DIST_NAME = "azt-tables"
#: The file-name form of the distribution name (sdist and wheel files).
FILE_NAME = "azt_tables"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _run(*args: str | Path, cwd: Path = ROOT) -> str:
    proc = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# --- without building ----------------------------------------------------------------------


def test_the_distribution_name_and_the_import_names() -> None:
    project = PYPROJECT["project"]
    assert project["name"] == DIST_NAME
    wheel = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["azt", "azt_server_stub"]
    assert project["entry-points"]["pytest11"] == {"azt": "azt.testing"}
    assert set(project["optional-dependencies"]) == {
        "testing", "otel", "dev", "legacy-encryption", "arrow", "pandas", "polars", "dask", "stub",
    }  # fmt: skip
    for tool in ("build", "twine"):
        assert any(d.startswith(f"{tool}>=") for d in project["optional-dependencies"]["dev"])


def test_no_page_tells_anyone_to_pip_install_azt() -> None:
    """``pip install azt`` installs someone else's project: every install instruction
    names the distribution ``azt-tables`` (or a path or wheel)."""
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    sources = [*sorted((ROOT / "azt").rglob("*.py")), *sorted((ROOT / "scripts").glob("*"))]
    for path in [*pages, *sources]:
        text = path.read_text(encoding="utf-8")
        for line in text.splitlines():
            if "pip install" in line:
                assert not re.search(r"pip install\s+\"?azt(\[|\"|\s|$)", line), (path, line)
            assert "azt-0.1.0" not in line, (path, line)  # the wheel is azt_tables-...


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_links_are_absolute_and_lead_into_the_repository() -> None:
    """PyPI shows the README as the project's page, where a relative link leads nowhere:
    every link is absolute, and one into this repository names a file that exists."""
    urls = PYPROJECT["project"]["urls"]
    repository = urls["Repository"].rstrip("/")
    for name in ("Homepage", "Documentation", "Repository", "Issues", "Changelog"):
        assert urls[name].startswith("https://"), name
    links = _LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(links) > 10
    own = 0
    for link in links:
        assert link.startswith("https://"), f"a relative link in README.md: {link}"
        if link.startswith(repository + "/"):
            own += 1
            rest = link[len(repository) + 1 :].split("#")[0]
            kind, branch, path = rest.split("/", 2)
            assert kind in ("blob", "tree"), link
            assert branch == "main", link
            assert (ROOT / path).exists(), link
    assert own >= 10


# --- the built distributions ---------------------------------------------------------------


@dataclass(frozen=True)
class Built:
    """The sdist, the wheel built from it, and the wheel built from the tree."""

    sdist: Path
    wheel: Path
    tree_wheel: Path


def _needs_tools() -> None:
    if os.environ.get("AZT_SKIP_PACKAGING") == "1" and not os.environ.get("CI"):
        pytest.skip("AZT_SKIP_PACKAGING=1: the release check was not run")
    for module in ("build", "twine"):
        if importlib.util.find_spec(module) is None:
            if os.environ.get("CI"):
                raise AssertionError(f"{module} is missing: pip install -e '.[dev]'")
            pytest.skip(f"{module} is not installed (pip install -e '.[dev]' installs it)")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    _needs_tools()
    out = tmp_path_factory.mktemp("release")
    _run(sys.executable, "-m", "build", "--outdir", out / "dist", ROOT)  # sdist, then its wheel
    _run(sys.executable, "-m", "build", "--wheel", "--outdir", out / "tree", ROOT)
    version = azt.__version__
    sdist = out / "dist" / f"{FILE_NAME}-{version}.tar.gz"
    wheel = out / "dist" / f"{FILE_NAME}-{version}-py3-none-any.whl"
    tree_wheel = out / "tree" / wheel.name
    for path in (sdist, wheel, tree_wheel):
        assert path.is_file(), f"{path.name} was not built: {sorted(out.rglob('*'))}"
    return Built(sdist, wheel, tree_wheel)


slow = pytest.mark.slow


@slow
def test_twine_check_passes(built: Built) -> None:
    out = _run(sys.executable, "-m", "twine", "check", "--strict", built.sdist, built.wheel)
    assert out.count("PASSED") == 2, out


def _wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@slow
def test_the_wheel_from_the_sdist_is_the_wheel_from_the_tree(built: Built) -> None:
    from_sdist = _wheel_files(built.wheel)
    from_tree = _wheel_files(built.tree_wheel)
    assert sorted(from_sdist) == sorted(from_tree)
    differing = [name for name in from_tree if from_sdist[name] != from_tree[name]]
    assert differing == []
    assert f"{FILE_NAME}-{azt.__version__}.dist-info/licenses/LICENSE" in from_tree
    packages = {name.split("/")[0] for name in from_tree if not name.startswith(FILE_NAME)}
    assert packages == {"azt", "azt_server_stub"}


def _metadata(wheel: Path) -> Message:
    files = _wheel_files(wheel)
    text = files[f"{FILE_NAME}-{azt.__version__}.dist-info/METADATA"].decode("utf-8")
    return email.parser.Parser(policy=email.policy.compat32).parsestr(text)


@slow
def test_the_metadata(built: Built) -> None:
    meta = _metadata(built.wheel)
    assert meta["Name"] == DIST_NAME
    assert meta["Version"] == azt.__version__
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload() == (ROOT / "README.md").read_text(encoding="utf-8")
    urls: dict[str, str] = {}
    for entry in meta.get_all("Project-URL", []):
        label, url = str(entry).split(", ", 1)
        urls[label] = url
    assert urls == PYPROJECT["project"]["urls"]
    assert set(meta.get_all("Provides-Extra", [])) == {
        "testing", "otel", "dev", "legacy-encryption", "arrow", "pandas", "polars", "dask", "stub",
    }  # fmt: skip
    assert "Typing :: Typed" in meta.get_all("Classifier", [])
    files = _wheel_files(built.wheel)
    entry_points = files[f"{FILE_NAME}-{azt.__version__}.dist-info/entry_points.txt"]
    text = entry_points.decode("utf-8")
    assert "[console_scripts]\nazt = azt.cli:main\nazt-stub = azt_server_stub.__main__:main" in (
        text
    )
    assert "[pytest11]\nazt = azt.testing" in text


def _sdist_files(sdist: Path) -> set[str]:
    prefix = f"{FILE_NAME}-{azt.__version__}/"
    with tarfile.open(sdist) as archive:
        names = {m.name for m in archive.getmembers() if m.isfile()}
    assert all(name.startswith(prefix) for name in names)
    return {name[len(prefix) :] for name in names} - {"PKG-INFO"}


def _included(path: str) -> bool:
    """Whether the sdist's include list names ``path`` (a tracked file)."""
    patterns = PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    for pattern in patterns:
        pattern = pattern.lstrip("/")
        if "*" in pattern:
            folder, glob = pattern.rsplit("/", 1)
            if Path(path).parent == Path(folder) and Path(path).match(glob):
                return True
        elif path == pattern or path.startswith(pattern + "/"):
            return True
    return False


def _tracked() -> list[str]:
    """The checkout's files: tracked, or new and not ignored (what a commit would take)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    listed = _run("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return sorted({p for p in listed.strip("\0").split("\0") if (ROOT / p).is_file()})


@slow
def test_the_sdist_holds_the_tracked_files_it_names(built: Built) -> None:
    expected = {p for p in _tracked() if _included(p)}
    # hatchling always adds the .gitignore it honoured (harmless: one small text file).
    assert _sdist_files(built.sdist) == expected | {".gitignore"}
    for needed in ("pyproject.toml", "README.md", "LICENSE", "azt/__init__.py", "azt/py.typed"):
        assert needed in expected
    # Repository plumbing stays out (CI's script, hooks' configuration).
    assert not {p for p in expected if p.startswith(".")}


@slow
def test_the_sdist_leaves_a_checkouts_junk_out(tmp_path: Path) -> None:
    """Built from a copy of the tracked files plus what a working checkout accumulates,
    and without the .gitignore that would hide some of it, the sdist holds none of it."""
    _needs_tools()
    copy = tmp_path / "checkout"
    for path in _tracked():
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, copy / path)
    (copy / ".gitignore").unlink()
    junk = [
        ".cache/azurite/node_modules/azurite/package.json",
        ".cache/floor-venv/bin/python",
        ".venv/lib/python3.11/site-packages/x.py",
        ".hypothesis/examples/1",
        ".mypy_cache/3.11/azt.json",
        "benchmarks/results.json",
        "benchmarks/runs/stub_vs_azurite.csv",
        "azt/__pycache__/__init__.cpython-311.pyc",
        "tests/__pycache__/conftest.cpython-311.pyc",
        "site/index.html",
        "dist/azt_tables-0.0.1.tar.gz",
        "build/lib/azt/__init__.py",
        "azt_tables.egg-info/PKG-INFO",
    ]
    for path in junk:
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_text("junk\n", encoding="utf-8")
    _run(sys.executable, "-m", "build", "--sdist", "--outdir", tmp_path / "dist", copy)
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    files = _sdist_files(sdist)
    assert not files & set(junk)
    assert {p for p in _tracked() if _included(p)} == files
