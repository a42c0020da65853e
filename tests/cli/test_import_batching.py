"""``azt import`` cuts transactions on each entity's exact encoded size (hardening issue
11.4): as full as 100 operations and a 4 MiB body allow, never over."""

from __future__ import annotations

import json
from typing import Any

import pytest

from azt import TableBatch, TableClient
from azt._core.wire.batch import MAX_BATCH_BYTES

from .conftest import run


def _lines(n: int, chars: int) -> str:
    per = chars // 4
    return "".join(
        json.dumps(
            {"PartitionKey": "p", "RowKey": f"{i:03d}", **{f"S{j}": "x" * per for j in range(4)}}
        )
        + "\n"
        for i in range(n)
    )


@pytest.mark.parametrize(("n", "expected"), [(40, [40]), (45, [41, 4])])
def test_import_fills_transactions_to_the_exact_limit(
    conn: str, table_name: str, monkeypatch: pytest.MonkeyPatch, n: int, expected: list[int]
) -> None:
    sent: list[tuple[int, int]] = []
    real = TableClient.submit_transaction

    async def recording(self: TableClient, batch: Any) -> Any:
        assert isinstance(batch, TableBatch)
        assert batch.size is not None
        sent.append((len(batch), batch.size))
        return await real(self, batch)

    monkeypatch.setattr(TableClient, "submit_transaction", recording)
    # ~100 KB per entity: 41 fit one 4 MiB body (a 3 MiB budget on input bytes took 31)
    r = run("import", table_name, "--create", "--concurrency", "1", stdin=_lines(n, 100_000))
    assert r.status == 0, r.err
    assert [count for count, _ in sent] == expected
    assert all(size <= MAX_BATCH_BYTES for _, size in sent)
    assert f"imported {n} entities" in r.err
