"""The blocking bulk load and parallel scan: the same results, progress, checkpoints,
order, pages and resume tokens as :func:`azt.bulk.load` and :func:`azt.scan.parallel_scan`,
without ``await``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import azt.sync
from azt.bulk import BulkProgress, FileCheckpoint
from azt.dynamic import DynamicEntity, column
from azt.sync.bulk import delete_where, load, update_where
from azt.sync.scan import parallel_scan
from azt.testing import unique_table_name

N = 600


@pytest.fixture
def table(azt_connection_string: str) -> Iterator[azt.sync.TableClient]:
    name = unique_table_name("bs")
    with azt.sync.TableClient.from_connection_string(azt_connection_string, name) as client:
        client.create_table()
        yield client
        client.delete_table()


def rows() -> Iterator[dict[str, object]]:
    for i in range(N):
        yield {"PartitionKey": f"p{i % 12:02}", "RowKey": f"{i:05}", "n": i}


def test_blocking_load_then_scan(table: azt.sync.TableClient, tmp_path: Path) -> None:
    seen: list[BulkProgress] = []
    result = load(
        table,
        rows(),
        kind="upsert-replace",
        checkpoint=FileCheckpoint(tmp_path / "load.ckpt"),
        progress=seen.append,
    )
    result.raise_for_failures()
    assert result.written == N
    assert seen
    assert seen[-1].written == N

    with parallel_scan(table, ordered=True, concurrency=4, page_size=100) as scan:
        keys = [(e["PartitionKey"], e["RowKey"]) for e in scan]
    assert keys == sorted((r["PartitionKey"], r["RowKey"]) for r in rows())
    assert scan.token is None
    assert scan.stats.entities == N


def test_blocking_scan_pages_and_resume(table: azt.sync.TableClient) -> None:
    load(table, rows()).raise_for_failures()
    scan = parallel_scan(
        table, filter="n ge @low", parameters={"low": 100}, ordered=True, page_size=50
    )
    first: list[int] = []
    token = None
    for page in scan.by_page():
        first.extend(e["n"] for e in page.items)
        token = page.token
        if len(first) >= 150:
            break
    scan.close()
    assert token is not None
    rest = [
        e["n"]
        for e in parallel_scan(
            table, filter="n ge @low", parameters={"low": 100}, ordered=True, token=token
        )
    ]
    assert sorted(first + rest) == list(range(100, N))
    assert len(first) + len(rest) == N - 100


def test_blocking_update_and_delete_by_query(table: azt.sync.TableClient) -> None:
    load(table, rows()).raise_for_failures()
    n = column("n", int)
    updated = update_where(azt.sync.Query(DynamicEntity, table).where(n < 100), {"tag": "low"})
    assert updated.ok
    assert updated.written == 100
    tagged = [e for e in table.list_entities() if e.get("tag") == "low"]
    assert sorted(e["n"] for e in tagged) == list(range(100))
    deleted = delete_where(azt.sync.Query(DynamicEntity, table).where(n >= 500))
    assert deleted.ok
    assert deleted.written == 100
    assert len(list(table.list_entities())) == N - 100
