"""``azt import`` on the bulk loader, as docs/cli.md documents it: a bad line stops the
import there (nothing from it on is sent), lines the service refuses are named while the
rest is written, the progress bar shows the rate and the current concurrency, and an
import killed with SIGKILL resumes from its checkpoint without resending what the
checkpoint holds."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import azt
from azt._core.bulk.checkpoint import DonePositions
from azt._edm.entity import TableEntity
from azt.cli import EXIT_INPUT, EXIT_SERVICE, _import
from azt.cli._jsonl import loads_entity
from azt.cli._progress import Progress
from azt_server_stub import StubConfig, ThreadedStubServer
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits

from .conftest import run
from .test_cli import insert, read_all


def _line(pk: str, rk: str, **values: Any) -> str:
    return json.dumps({"PartitionKey": pk, "RowKey": rk, **values})


def _keys(conn: str, table: str) -> list[tuple[str, str]]:
    return sorted((e["PartitionKey"], e["RowKey"]) for e in read_all(conn, table))


def test_a_bad_entity_stops_the_import_at_its_line(conn: str, table_name: str) -> None:
    """Line 3 is refused before it is sent; no line after it is sent, in any partition,
    and every line before it is written."""
    lines = [_line("a", "1"), _line("b", "1"), _line("c", "x#"), _line("d", "1")]
    lines += [_line(f"p{i}", str(i)) for i in range(300)]
    r = run("import", table_name, "--create", stdin="\n".join(lines) + "\n")
    assert r.status == EXIT_INPUT
    assert r.err.startswith("azt import: line 3: RowKey 'x#' contains '#'"), r.err
    assert r.err.endswith(
        "imported 2 entities (every line before line 3; nothing from line 3 on was written)\n"
        "fix line 3, then import again from line 3 on\n"
    )
    assert _keys(conn, table_name) == [("a", "1"), ("b", "1")]


def test_an_entity_the_loader_refuses_is_a_bad_line(
    conn: str, table_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the line parser lets through, the loader checks each entity as it encodes
    it: one it refuses is a bad line too (exit 3, its line number, nothing after it sent)."""
    real = loads_entity

    def lenient(line: str, line_no: int | None = None) -> TableEntity:
        if line_no == 2:  # as if the parser had missed the '#'
            return TableEntity({"PartitionKey": "b", "RowKey": "x#"})
        return real(line, line_no)

    monkeypatch.setattr(_import, "loads_entity", lenient)  # what the feed calls
    lines = [_line("a", "1"), _line("b", "2"), *(_line(f"p{i}", "r") for i in range(200))]
    r = run("import", table_name, "--create", stdin="\n".join(lines) + "\n")
    assert r.status == EXIT_INPUT, r.err
    assert r.err.startswith("azt import: line 2: RowKey 'x#' contains '#'"), r.err
    assert r.err.endswith(
        "imported 1 entity (every line before line 2; nothing from line 2 on was written)\n"
        "fix line 2, then import again from line 2 on\n"
    )
    assert "failed" not in r.err  # reported once, as the bad line
    assert _keys(conn, table_name) == [("a", "1")]


def test_refused_lines_before_a_bad_line(conn: str, table_name: str) -> None:
    insert(conn, table_name, [{"PartitionKey": "a", "RowKey": "2"}])
    lines = [_line("a", "1"), _line("a", "2"), "{nope", _line("b", "3")]
    r = run("import", table_name, "--mode", "insert", stdin="\n".join(lines) + "\n")
    assert r.status == EXIT_INPUT  # the bad line decides the status
    assert r.err.startswith("azt import: line 2: 409 EntityAlreadyExists")
    assert "azt import: line 3: not valid JSON" in r.err
    assert r.err.endswith(
        "imported 1 entity (every line before line 3 but line 2; nothing from line 3 on was "
        "written)\n"
        "fix line 3, then import again from line 3 on (and the failed lines above)\n"
    )
    assert _keys(conn, table_name) == [("a", "1"), ("a", "2")]


def test_many_refused_lines_are_named_up_to_twenty(conn: str, table_name: str) -> None:
    existing = [{"PartitionKey": f"p{i % 3}", "RowKey": f"{i:03d}"} for i in range(0, 60, 2)]
    insert(conn, table_name, existing)
    lines = [_line(f"p{i % 3}", f"{i:03d}") for i in range(60)]
    r = run("import", table_name, "--mode", "insert", stdin="\n".join(lines) + "\n")
    assert r.status == EXIT_SERVICE
    named = [x for x in r.err.splitlines() if "409 EntityAlreadyExists" in x]
    assert len(named) == 20
    assert named[0].startswith("azt import: line 1: 409 EntityAlreadyExists")
    assert "azt import: ... and 10 more failed lines\n" in r.err
    assert f"imported 30 entities into {table_name}; 30 failed (not written: line 1, " in r.err
    assert len(read_all(conn, table_name)) == 60


def test_a_missing_table_is_named_once(conn: str) -> None:
    lines = "\n".join(_line(f"p{i}", "r") for i in range(5)) + "\n"
    r = run("import", "missingtable", "--concurrency", "3", stdin=lines)
    assert r.status == EXIT_SERVICE
    assert r.err == (
        "azt import: table 'missingtable' does not exist (404 TableNotFound): pass --create "
        "to create it\nimported nothing: no line was written\n"
    )


def test_default_is_adaptive_and_the_bar_shows_it(conn: str, table_name: str) -> None:
    lines = "\n".join(_line(f"p{i % 7}", f"{i:04d}", N=i) for i in range(700)) + "\n"
    r = run("import", table_name, "--create", "--progress", "always", stdin=lines)
    assert r.status == 0, r.err
    bar = r.err.split("\r")[-1]
    assert "700 entities" in bar
    assert "/s  concurrency " in bar
    assert r.err.endswith(f"imported 700 entities into {table_name}\n")
    assert len(read_all(conn, table_name)) == 700


def test_fixed_concurrency_keeps_the_number(conn: str, table_name: str) -> None:
    lines = "\n".join(_line(f"p{i % 5}", f"{i:04d}") for i in range(50)) + "\n"
    r = run(
        "import", table_name, "--create", "--concurrency", "2", "--progress", "always",
        stdin=lines,
    )  # fmt: skip
    assert r.status == 0, r.err
    assert "concurrency 2" in r.err
    assert "concurrency 3" not in r.err


def test_resumed_insert_finds_lines_written_after_the_last_save(
    conn: str, table_name: str, tmp_path: Path
) -> None:
    """Lines acknowledged after the checkpoint's last save (as when the import is killed)
    are sent again on --resume; with --mode insert they meet 409 caused by the earlier
    run, are read back, found applied, and count as written."""
    lines = [_line("a", f"{i:02d}", N=i) for i in range(20)]
    ckpt = tmp_path / "ins.ckpt"
    args = ("import", table_name, "--mode", "insert", "--checkpoint", str(ckpt))
    broken = [*lines[:10], "{nope", *lines[10:]]
    r = run(*args, "--create", stdin="\n".join(broken) + "\n")
    assert r.status == EXIT_INPUT, r.err
    assert "fix line 11, then import again with --resume\n" in r.err
    state = json.loads(ckpt.read_text(encoding="utf-8"))
    assert state["done_below"] == 10
    ckpt.write_text(json.dumps({**state, "done_below": 6}), encoding="utf-8")  # lost save
    r = run(*args, "--resume", stdin="\n".join(lines) + "\n")
    assert r.status == 0, r.err
    assert r.err.startswith(f"imported 14 entities into {table_name} (6 already written before)")
    assert "4 entities found already applied by reading back" in r.err
    assert "EntityAlreadyExists" not in r.err
    assert [e["N"] for e in read_all(conn, table_name)] == list(range(20))
    assert not ckpt.exists()


# ----------------------------------------------------------------------- killed and resumed


@pytest.fixture
def counting() -> Iterator[tuple[str, Throttle]]:
    """A stub of its own that counts the entities written (no limits: nothing throttled)."""
    throttle = Throttle(ThrottleLimits(partition_rate=None, account_rate=None))
    with ThreadedStubServer(StubConfig(throttle=throttle)) as server:
        yield server.connection_string, throttle


def _etags(conn: str, name: str) -> dict[tuple[str, str], str]:
    async def read() -> dict[tuple[str, str], str]:
        async with azt.TableClient.from_connection_string(conn, name) as table:
            return {
                (e["PartitionKey"], e["RowKey"]): str(e.metadata.etag)
                async for e in table.list_entities()
            }

    return asyncio.run(read())


def _done(path: Path) -> DonePositions | None:
    try:
        return DonePositions.from_state(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None  # not written yet (or being replaced)


def test_import_killed_halfway_resumes_without_resending(
    counting: tuple[str, Throttle], tmp_path: Path
) -> None:
    conn, throttle = counting
    n = 1200
    items: list[dict[str, Any]] = [
        {"PartitionKey": f"p{i % 12:02d}", "RowKey": f"{i:05d}", "N": i} for i in range(n)
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in items), encoding="utf-8")
    ckpt = tmp_path / "in.ckpt"
    args = ["import", "killed", "-i", str(source), "--checkpoint", str(ckpt)]
    args += ["--account-rate", "300", "--progress", "never", "--connection-string", conn]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "azt", *args, "--create"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # kill it once the checkpoint holds some lines, far from all
            done = _done(ckpt)
            if done is not None and done.count() >= 150:
                break
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    done = _done(ckpt)
    assert done is not None
    acknowledged = {i for i in range(n) if i in done}
    assert 150 <= len(acknowledged) < n
    before = _etags(conn, "killed")
    # what the checkpoint holds is in the table (written before the kill)
    assert {(items[i]["PartitionKey"], items[i]["RowKey"]) for i in acknowledged} <= set(before)

    written_before = throttle.stats.admitted_entities
    r = run(*args, "--resume")
    assert r.status == 0, r.err
    assert f"({len(acknowledged)} already written before)" in r.err
    # nothing the checkpoint holds was sent again; everything else exactly once
    assert throttle.stats.admitted_entities - written_before == n - len(acknowledged)
    after = _etags(conn, "killed")
    for i in acknowledged:
        key = (items[i]["PartitionKey"], items[i]["RowKey"])
        assert after[key] == before[key]
    stored = {(e["PartitionKey"], e["RowKey"]): e["N"] for e in read_all(conn, "killed")}
    assert stored == {(e["PartitionKey"], e["RowKey"]): e["N"] for e in items}
    assert not ckpt.exists()


_FRAME = re.compile(r"\] +(\d+)%  ([\d,]+) entities")


def _frames(err: str) -> list[tuple[int, int]]:
    """(percentage, entities) of every frame the bar drew."""
    found = [_FRAME.search(frame) for frame in err.split("\r")]
    return [(int(m[1]), int(m[2].replace(",", ""))) for m in found if m is not None]


@pytest.fixture
def every_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    """The import's bar redraws on every count (no 0.1 s throttle between frames)."""

    class Eager(Progress):
        def __init__(self, label: str, **kwargs: Any) -> None:
            super().__init__(label, **{**kwargs, "interval": 0.0})

    monkeypatch.setattr(_import, "Progress", Eager)


@pytest.mark.usefixtures("every_frame")
def test_the_percentage_counts_rows_written_not_input_read(
    conn: str, table_name: str, tmp_path: Path
) -> None:
    """The loader reads ahead of its writes; the bar follows the answers: lines of equal
    length, so each frame's percentage is the share of rows written, and 100% is shown
    only once every row is."""
    total = 600
    source = tmp_path / "in.jsonl"
    lines = [_line(f"p{i % 7}", f"{i:04d}", N=1000 + i) for i in range(total)]
    assert len({len(line) for line in lines}) == 1
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = run("import", table_name, "--create", "-i", str(source), "--progress", "always")
    assert r.status == 0, r.err
    frames = _frames(r.err)
    assert len(frames) > 10
    for percent, written in frames:
        assert 0 <= 100 * written / total - percent <= 1, (percent, written)  # rounded down
    assert frames[-1] == (100, total)
    assert [f for f in frames if f[0] == 100] == [f for f in frames if f[1] == total]


@pytest.mark.usefixtures("every_frame")
def test_the_percentage_ends_at_100_with_refused_and_resumed_lines(
    conn: str, table_name: str, tmp_path: Path
) -> None:
    """Lines the service refused are answered, lines an earlier run wrote are done: either
    way the bar ends at 100% while counting only the rows this run wrote."""
    insert(conn, table_name, [{"PartitionKey": "a", "RowKey": f"{i:02d}"} for i in (3, 4)])
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(_line("a", f"{i:02d}") for i in range(10)) + "\n\n")
    r = run("import", table_name, "--mode", "insert", "-i", str(source), "--progress", "always")
    assert r.status == EXIT_SERVICE, r.err
    assert _frames(r.err)[-1] == (100, 8)

    ckpt = tmp_path / "resume.ckpt"
    ckpt.write_text(json.dumps({"version": 1, "done_below": 6, "ranges": []}), encoding="utf-8")
    other = table_name + "b"
    args = ("import", other, "--create", "-i", str(source), "--checkpoint", str(ckpt))
    r = run(*args, "--resume", "--progress", "always")
    assert r.status == 0, r.err
    frames = _frames(r.err)
    assert frames[0][0] >= 60  # the six lines written before count as done when read
    assert frames[-1] == (100, 4)
    assert _keys(conn, other) == [("a", f"{i:02d}") for i in range(6, 10)]
