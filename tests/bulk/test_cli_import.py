"""``azt import`` on the bulk loader: ``--concurrency auto`` against a throttling stub
(the bar shows the rate and the concurrency), failures named by line while the rest is
written, and an interrupted import resumed from its ``--checkpoint``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import azt
from azt.cli import EXIT_INPUT, EXIT_SERVICE, EXIT_USAGE
from azt_server_stub import StubConfig, ThreadedStubServer
from azt_server_stub.realism.throttle import Throttle, ThrottleLimits
from tests.bulk.faults import chaos
from tests.bulk.support import expected, rows, stored
from tests.cli.conftest import run


@pytest.fixture
def throttled() -> Iterator[tuple[str, Throttle]]:
    throttle = Throttle(ThrottleLimits(partition_rate=100, account_rate=1000))
    with ThreadedStubServer(StubConfig(throttle=throttle)) as server:
        yield server.connection_string, throttle


@pytest.fixture
def chaotic() -> Iterator[str]:
    with ThreadedStubServer(StubConfig(faults=chaos(seed=5))) as server:
        yield server.connection_string


def jsonl(items: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(e) + "\n" for e in items)


def table_of(conn: str, name: str) -> dict[tuple[str, str], dict[str, Any]]:
    async def read() -> dict[tuple[str, str], dict[str, Any]]:
        async with azt.TableClient.from_connection_string(conn, name) as table:
            return await stored(table)

    return asyncio.run(read())


def test_auto_concurrency_import_under_throttling(throttled: tuple[str, Throttle]) -> None:
    conn, throttle = throttled
    items = list(rows(20, 60))
    r = run(
        "import", "loads", "--create", "--concurrency", "auto", "--partition-rate", "100",
        "--account-rate", "1000", "--progress", "always", "--connection-string", conn,
        stdin=jsonl(items),
    )  # fmt: skip
    assert r.status == 0, r.err
    assert "imported 1200 entities into loads" in r.err
    assert "concurrency " in r.err  # the bar's current concurrency
    assert "/s" in r.err
    throttle.enabled = False
    assert table_of(conn, "loads") == expected(items)
    assert throttle.stats.admitted_entities == 1 + 1200  # create table, then each entity once


def test_failed_lines_are_named_and_the_rest_is_written(chaotic: str) -> None:
    items = list(rows(10, 10))
    # the first 5 exist already with other values: an insert of them whose answer is
    # lost (the faults drop some) is read back and found not applied, never mistaken for
    # this import's own write (identical values could not be told apart)
    earlier = [{**e, "Tag": "earlier"} for e in items[:5]]
    first = run(
        "import", "chaos", "--create", "--mode", "insert", "--concurrency", "auto",
        "--connection-string", chaotic, stdin=jsonl(earlier),
    )  # fmt: skip
    assert first.status == 0, first.err
    r = run(
        "import", "chaos", "--mode", "insert", "--concurrency", "auto",
        "--connection-string", chaotic, stdin=jsonl(items),
    )  # fmt: skip
    assert r.status == EXIT_SERVICE
    for line in range(1, 6):
        assert f"azt import: line {line}: 409 EntityAlreadyExists" in r.err
    assert "imported 95 entities into chaos; 5 failed" in r.err
    assert table_of(chaotic, "chaos") == expected(earlier + items[5:])


def test_interrupted_import_resumes_from_its_checkpoint(chaotic: str, tmp_path: Path) -> None:
    items = list(rows(30, 20))
    text = jsonl(items).splitlines(keepends=True)
    broken = [*text[:300], '{"PartitionKey": "x"}\n', *text[300:]]  # line 301 is bad
    ckpt = tmp_path / "import.ckpt"
    args = ("import", "chaos", "--mode", "insert", "--checkpoint", str(ckpt))
    common = ("--connection-string", chaotic, "--progress", "never")
    r = run(*args, "--create", *common, stdin="".join(broken))
    assert r.status == EXIT_INPUT, r.err
    assert "line 301" in r.err
    assert "import again with --resume" in r.err
    assert json.loads(ckpt.read_text())["done_below"] == 300  # what was read was written
    assert len(table_of(chaotic, "chaos")) == 300

    again = run(*args, *common, stdin="".join(text))
    assert again.status == EXIT_USAGE  # the checkpoint exists: --resume or delete it
    assert "--resume" in again.err

    resumed = run(*args, "--resume", *common, stdin="".join(text))
    assert resumed.status == 0, resumed.err
    assert "imported 300 entities into chaos (300 already written before)" in resumed.err
    assert table_of(chaotic, "chaos") == expected(items)
    assert not ckpt.exists()  # done: removed


def test_resume_needs_a_checkpoint(chaotic: str, tmp_path: Path) -> None:
    r = run("import", "t", "--resume", "--connection-string", chaotic)
    assert r.status == EXIT_USAGE
    assert "--resume needs --checkpoint" in r.err
    missing = tmp_path / "none.ckpt"
    r = run("import", "t", "--resume", "--checkpoint", str(missing), "--connection-string", chaotic)
    assert r.status == EXIT_USAGE
    assert "no checkpoint" in r.err
    r = run("import", "ttt", "--account-rate", "0", "--connection-string", chaotic)
    assert r.status == EXIT_USAGE
    assert "a rate must be more than 0 entities per second" in r.err
    r = run("import", "t", "--concurrency", "lots", "--connection-string", chaotic)
    assert r.status == EXIT_USAGE


def test_import_killed_in_its_first_second_resumes(tmp_path: Path) -> None:
    # A real `azt import` process, SIGKILLed as soon as the stub admitted its first
    # transaction (well inside its first second, before its first periodic checkpoint
    # save): the checkpoint written before the first request lets --resume finish it,
    # exactly once (inserts: a row applied twice would be a 409 reported as a failure).
    throttle = Throttle(ThrottleLimits(partition_rate=100, account_rate=1000))
    items = list(rows(30, 100))  # 3,000 entities: about 3 s at the stub's account target
    source = tmp_path / "in.jsonl"
    source.write_text(jsonl(items))
    ckpt = tmp_path / "import.ckpt"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    with ThreadedStubServer(StubConfig(throttle=throttle)) as server:
        conn = server.connection_string
        args = ("import", "early", "--mode", "insert", "-i", str(source), "--checkpoint")
        common = ("--connection-string", conn, "--progress", "never")
        proc = subprocess.Popen(
            [sys.executable, "-m", "azt", *args, str(ckpt), "--create", *common],
            env=env,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 30
            while throttle.stats.admitted_entities <= 1:  # the table's creation counts 1
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline
                time.sleep(0.002)
            started = time.monotonic()
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(timeout=30)
            if proc.stderr is not None:
                proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        # killed before any periodic save: the checkpoint is the one written at the start
        assert json.loads(ckpt.read_text()) == {"version": 1, "done_below": 0, "ranges": []}
        assert time.monotonic() - started < 1.0
        throttle.enabled = False
        partial = table_of(conn, "early")
        assert 0 < len(partial) < len(items)  # it had written some rows

        resumed = run(*args, str(ckpt), "--resume", *common)
        assert resumed.status == 0, resumed.err
        assert "failed" not in resumed.err
        assert table_of(conn, "early") == expected(items)
        assert not ckpt.exists()
