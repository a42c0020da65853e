"""``azt update`` and ``azt delete`` on the bulk engine: every entity the filter selects
is changed or deleted (typed --set values), failures named, and an interrupted run
resumed from its --checkpoint."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import azt
from azt.cli import EXIT_USAGE
from azt_server_stub import ThreadedStubServer
from tests.bulk.support import rows, stored
from tests.cli.conftest import run


@pytest.fixture
def conn() -> Iterator[str]:
    with ThreadedStubServer() as server:
        yield server.connection_string


def table_of(conn: str, name: str) -> dict[tuple[str, str], dict[str, Any]]:
    async def read() -> dict[tuple[str, str], dict[str, Any]]:
        async with azt.TableClient.from_connection_string(conn, name) as table:
            return await stored(table)

    return asyncio.run(read())


def load_rows(conn: str, name: str, items: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(e) + "\n" for e in items)
    r = run("import", name, "--create", "--connection-string", conn, stdin=text)
    assert r.status == 0, r.err


def test_update_then_delete_by_filter(conn: str) -> None:
    items = list(rows(10, 30))
    load_rows(conn, "docs", items)
    common = ("--connection-string", conn, "--progress", "never")
    changes = '{"Flag": true, "Big@odata.type": "Edm.Int64", "Big": "7"}'
    r = run("update", "docs", "--filter", "R lt 10", "--set", changes, *common)
    assert r.status == 0, r.err
    assert "updated 100 entities in docs" in r.err
    stored_rows = table_of(conn, "docs")
    for e in items:
        got = stored_rows[(e["PartitionKey"], e["RowKey"])]
        if e["R"] < 10:
            assert got["Flag"] is True
            assert got["Big"] == 7
        else:
            assert "Flag" not in got
            assert got["Big"] == e["Big"]

    r = run("delete", "docs", "--filter", "R ge 20", *common)
    assert r.status == 0, r.err
    assert "deleted 100 entities in docs" in r.err
    assert len(table_of(conn, "docs")) == 200


def test_bad_arguments_are_usage_errors(conn: str, tmp_path: Path) -> None:
    common = ("--connection-string", conn)
    r = run("update", "docs", "--filter", "R lt 1", "--set", "[1]", *common)
    assert r.status == EXIT_USAGE
    assert "--set takes a JSON object" in r.err
    r = run("update", "docs", "--filter", "R lt 1", "--set", '{"RowKey": "x"}', *common)
    assert r.status == EXIT_USAGE
    r = run("delete", "docs", "--filter", "x", "--resume", *common)
    assert r.status == EXIT_USAGE
    assert "--resume needs --checkpoint" in r.err
    missing = str(tmp_path / "none.ckpt")
    r = run("delete", "docs", "--filter", "x", "--checkpoint", missing, "--resume", *common)
    assert r.status == EXIT_USAGE
    assert "no checkpoint" in r.err


def test_resume_goes_on_from_the_checkpoint(conn: str, tmp_path: Path) -> None:
    items = list(rows(5, 40))
    load_rows(conn, "later", items)
    ckpt = tmp_path / "u.ckpt"

    # as left by a run interrupted after the first page of the query (its first 80
    # entities in key order, and the service's continuation after them)
    async def first_page() -> str | None:
        async with azt.TableClient.from_connection_string(conn, "later") as table:
            pager = table.query_entities("R ge 0", results_per_page=80)
            async for page in pager.by_page():
                return str(page.continuation)
        return None

    token = asyncio.run(first_page())
    ckpt.write_text(
        json.dumps({"version": 1, "query": "merge", "continuation": token, "finished": False})
    )
    common = ("--connection-string", conn, "--progress", "never")
    args = ("update", "later", "--filter", "R ge 0", "--set", '{"S": "x"}', "--checkpoint")
    r = run(*args, str(ckpt), *common)
    assert r.status == EXIT_USAGE  # it exists: --resume or delete it
    r = run(*args, str(ckpt), "--resume", *common)
    assert r.status == 0, r.err
    assert "updated 120 entities in later" in r.err  # the 80 of the first page were done
    assert not ckpt.exists()
    changed = [k for k, e in table_of(conn, "later").items() if e.get("S") == "x"]
    assert len(changed) == 120
