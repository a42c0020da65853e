"""``azt export`` on parallel scans, against a stub whose query pages never hold two
PartitionKeys: --concurrency, --ordered/--unordered, and --resume across an interruption
(nothing lost, nothing twice, a partly written tail cut)."""

from __future__ import annotations

import io
import json
import secrets
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from azt.cli import EXIT_USAGE, main
from azt.cli._progress import Progress
from azt_server_stub import StubConfig, ThreadedStubServer
from azt_server_stub.realism.partitions import PartitionLayout, RangeLayout
from tests.cli.conftest import Run, run
from tests.cli.test_cli import insert

N_PK, N_RK = 30, 40


@pytest.fixture(scope="module")
def stub() -> Iterator[ThreadedStubServer]:
    layout = PartitionLayout(RangeLayout(partition_pages=True))
    with ThreadedStubServer(StubConfig(partitions=layout)) as server:
        yield server


@pytest.fixture
def loaded(stub: ThreadedStubServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new table of N_PK x N_RK entities; the stub's connection string is exported."""
    monkeypatch.setenv("AZT_CONNECTION_STRING", stub.connection_string)
    name = f"exp{secrets.token_hex(5)}"
    rows = [
        {"PartitionKey": f"p{p:03d}", "RowKey": f"r{r:03d}", "v": p * 100 + r}
        for p in range(N_PK)
        for r in range(N_RK)
    ]
    insert(stub.connection_string, name, rows)
    return name


def key_lines(text: str) -> list[tuple[str, str]]:
    return [(d["PartitionKey"], d["RowKey"]) for d in map(json.loads, text.splitlines())]


def all_keys() -> list[tuple[str, str]]:
    return [(f"p{p:03d}", f"r{r:03d}") for p in range(N_PK) for r in range(N_RK)]


def test_export_ordered_and_unordered(loaded: str) -> None:
    sequential = run("export", loaded, "--concurrency", "1")
    assert sequential.status == 0, sequential.err
    assert key_lines(sequential.out) == all_keys()
    ordered = run("export", loaded, "--concurrency", "6")
    assert ordered.status == 0, ordered.err
    assert ordered.out == sequential.out  # the same lines in the same order
    unordered = run("export", loaded, "--concurrency", "auto", "--unordered")
    assert unordered.status == 0, unordered.err
    assert Counter(unordered.out.splitlines()) == Counter(sequential.out.splitlines())
    assert f"exported {N_PK * N_RK} entities from {loaded}" in unordered.err
    filtered = run("export", loaded, "--filter", "v ge 2900", "--unordered")
    assert sorted(key_lines(filtered.out)) == [k for k in all_keys() if k[0] == "p029"]


def test_progress_shows_the_concurrency(loaded: str) -> None:
    r = run("export", loaded, "--concurrency", "3", "--progress", "always")
    assert r.status == 0
    assert "concurrency 3" in r.err
    assert f"{N_PK * N_RK:,} entities" in r.err


def interrupted(monkeypatch: pytest.MonkeyPatch, after: int, *argv: str) -> Run:
    """Run ``azt *argv`` with a Ctrl-C once ``after`` entities were written."""
    advance = Progress.advance

    def stop(self: Progress, *, entities: int = 0, nbytes: int = 0) -> None:
        advance(self, entities=entities, nbytes=nbytes)
        if self.entities >= after:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(Progress, "advance", stop)
        out, err = io.StringIO(), io.StringIO()
        status = main(list(argv), stdout=out, stderr=err)
    return Run(status, out.getvalue(), err.getvalue())


@pytest.mark.parametrize("order", ["--ordered", "--unordered"])
def test_resume_after_an_interruption(
    loaded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    out, token = tmp_path / "out.jsonl", tmp_path / "export.token"
    argv = ["export", loaded, "-o", str(out), "--resume", str(token), order, "--concurrency", "5"]
    first = interrupted(monkeypatch, 300, *argv)
    assert first.status == 130
    assert f"--resume {token}" in first.err
    state: dict[str, Any] = json.loads(token.read_text())
    written = out.read_bytes()
    assert state["output_bytes"] == len(written)
    assert 300 <= len(written.splitlines()) < N_PK * N_RK
    with out.open("a") as f:  # a page written after the last save: the resume cuts it
        f.write('{"PartitionKey":"half a li')
    second = run(*argv)
    assert second.status == 0, second.err
    assert "resumed" in second.err
    assert not token.exists()  # done: the resume file is gone
    got = key_lines(out.read_text())
    assert Counter(got) == Counter(all_keys())  # every entity exactly once
    if order == "--ordered":
        assert got == all_keys()


def test_resume_files_that_do_not_fit_are_refused(
    loaded: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, token = tmp_path / "out.jsonl", tmp_path / "export.token"
    token.write_text("not json\n")
    r = run("export", loaded, "-o", str(out), "--resume", str(token))
    assert r.status == EXIT_USAGE
    assert "not one azt export wrote" in r.err
    token.write_text(json.dumps({"token": "eyJ2IjoxfQ", "output_bytes": 0}))
    r = run("export", loaded, "-o", str(out), "--resume", str(token))
    assert r.status == EXIT_USAGE
    assert "different scan" in r.err
    argv = ["export", loaded, "-o", str(out), "--resume", str(token)]
    token.unlink()
    assert interrupted(monkeypatch, 50, *argv).status == 130
    out.write_text("")  # the output lost what the resume file covers
    r = run(*argv)
    assert r.status == EXIT_USAGE
    assert "missing or shorter" in r.err
    r = run("export", loaded, "--filter", "v ge 5", "-o", str(out), "--resume", str(token))
    assert r.status == EXIT_USAGE  # another filter: another scan
    assert "different scan" in r.err
    r = run("export", loaded, "--concurrency", "0")
    assert r.status == EXIT_USAGE
    assert "--concurrency" in r.err


def test_a_fresh_resumable_export_finishes_without_leaving_a_file(
    loaded: str, tmp_path: Path
) -> None:
    out, token = tmp_path / "out.jsonl", tmp_path / "export.token"
    r = run("export", loaded, "-o", str(out), "--resume", str(token), "--unordered")
    assert r.status == 0, r.err
    assert not token.exists()
    assert Counter(key_lines(out.read_text())) == Counter(all_keys())
