"""The command line: start, print the endpoint and connection string, stop on SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import weakref

import aiohttp
import pytest

from azt_server_stub.__main__ import build_parser, config_from_args

from .conftest import StubProcess, free_port


async def test_cli_prints_and_serves_then_stops_on_sigterm() -> None:
    port = free_port()
    proc = StubProcess("--port", str(port), "--account", "other:b3RoZXJrZXk=")
    proc.start()
    try:
        assert proc.endpoint == f"http://127.0.0.1:{port}"
        text = "\n".join(proc.lines)
        assert f"TableEndpoint=http://127.0.0.1:{port}/devstoreaccount1;" in text
        assert f"http://127.0.0.1:{port}/other" in text
        # every extra account gets a ready connection string too
        assert (
            f"AccountName=other;AccountKey=b3RoZXJrZXk=;TableEndpoint=http://127.0.0.1:{port}/other;"
            in text
        )
        async with (
            aiohttp.ClientSession() as session,
            session.get(
                f"{proc.endpoint}/devstoreaccount1/Tables", headers={"Accept": "application/json"}
            ) as resp,
        ):
            assert resp.status == 401
            assert resp.headers["x-ms-error-code"] == "NoAuthenticationInformation"
    finally:
        code = proc.stop()
    assert code == 0
    assert "azt-stub shutting down" in proc.lines


def test_cli_stops_on_sigint() -> None:
    proc = StubProcess("--port", "0").start()
    assert proc.proc is not None
    proc.proc.send_signal(signal.SIGINT)
    assert proc.proc.wait(timeout=30) == 0
    proc.stop()


def test_cli_arguments() -> None:
    args = build_parser().parse_args(
        ["--account", "a:QUFBQQ==:QkJCQg==", "--disable-clock-skew-check", "--oauth"]
    )
    config = config_from_args(args)
    assert config.accounts["a"] == ["QUFBQQ==", "QkJCQg=="]
    assert "devstoreaccount1" in config.accounts
    assert config.auth.check_clock_skew is False
    assert config.auth.allow_bearer is True
    assert config.table_deletion_seconds == 0.0
    args = build_parser().parse_args(["--table-deletion-delay", "40"])
    assert config_from_args(args).table_deletion_seconds == 40.0
    with pytest.raises(ValueError, match="NAME:KEY"):
        config_from_args(build_parser().parse_args(["--account", "nokey"]))
    with pytest.raises(ValueError, match="base64"):
        config_from_args(build_parser().parse_args(["--account", "a:not base64!"]))


def test_the_stub_process_collects_cyclic_garbage_less_often() -> None:
    """``azt-stub`` raises the youngest generation's threshold (not the others)."""
    from azt_server_stub import __main__ as cli

    before = gc.get_threshold()
    try:
        cli._tune_collector()
        assert gc.get_threshold() == (cli.GC_THRESHOLD, before[1], before[2])
    finally:
        gc.set_threshold(*before)


class _Node:
    """A weakly referable object for a garbage cycle."""

    def __init__(self) -> None:
        self.me = self


def test_the_stub_process_freezes_what_start_up_left_alive() -> None:
    """``azt-stub`` (``serve(..., freeze_startup=True)``, as ``main`` runs it) moves what
    is alive once it listens to the permanent generation; garbage made later is still
    collected; ``serve`` alone freezes nothing."""
    from azt_server_stub import __main__ as cli

    async def run(freeze: bool) -> int:
        args = cli.build_parser().parse_args(["--port", "0", "--log-level", "WARNING"])
        task = asyncio.ensure_future(cli.serve(args, freeze_startup=freeze))
        for _ in range(100):  # until it is frozen (or half a second, unfrozen)
            await asyncio.sleep(0.01 if freeze else 0.005)
            if gc.get_freeze_count():
                break
        frozen = gc.get_freeze_count()
        os.kill(os.getpid(), signal.SIGTERM)  # serve's own handler: a clean stop
        await asyncio.wait_for(task, 10)
        return frozen

    assert gc.get_freeze_count() == 0
    try:
        assert asyncio.run(run(False)) == 0
        assert asyncio.run(run(True)) > 1000
        ref = weakref.ref(_Node())  # a cycle made after the freeze: garbage, collected
        assert ref() is not None
        gc.collect()
        assert ref() is None
    finally:
        gc.unfreeze()
