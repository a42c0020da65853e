"""The benchmark-only seeding of ``benchmarks/_seeded_stub.py``: rows put in through the
stub's backend read back exactly as the same rows inserted over the wire do, so what
``benchmarks/frames_bench.py`` exports is what a loaded table would serve.

Example::

    .venv/bin/python -m pytest tests/frames/test_bench_seed.py
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from azt import TableClient
from azt_server_stub import StubServer

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks"


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"azt_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ROWS = _module("_frames_rows")
SEEDED = _module("_seeded_stub")


def _raw(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return rows


def _served(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as served, less what the service sets per write (Timestamp, ETag)."""
    return [{k: v for k, v in r.items() if k not in ("Timestamp", "odata.etag")} for r in rows]


async def test_seeded_rows_read_back_as_rows_inserted_over_the_wire() -> None:
    n = 2 * ROWS.PER_PARTITION + 150  # three partitions, the last one partly filled
    async with StubServer() as stub:
        seconds = SEEDED.seed(stub, n, ROWS)
        assert seconds >= 0
        async with TableClient.from_connection_string(stub.connection_string, "wire") as wire:
            await wire.create_table()
            for start in range(0, n, 100):
                stop = min(n, start + 100, (start // ROWS.PER_PARTITION + 1) * ROWS.PER_PARTITION)
                batch = wire.batch()
                for i in range(start, stop):
                    batch.create(ROWS.entity(i))
                await wire.submit_transaction(batch)
            wired = await wire.query_entities(page_decoder=_raw).to_list()
        async with TableClient.from_connection_string(stub.connection_string, ROWS.TABLE) as t:
            seeded = await t.query_entities(page_decoder=_raw).to_list()
    assert len(seeded) == n
    assert _served(seeded) == _served(wired)
    # one Timestamp per change set of 100 entities of a partition, as over the wire
    assert len({r["Timestamp"] for r in seeded}) == len({r["Timestamp"] for r in wired})
    assert seeded[0]["Total@odata.type"] == "Edm.Int64"
