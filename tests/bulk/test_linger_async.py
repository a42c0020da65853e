"""A partition's partial transaction goes out after ``linger`` even while an async input
pauses: the loader does not wait for more input (or its end) to start the timer. (A
migration feeds the loader page by page, and waits for a page's rows to be written.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from azt.bulk import BulkOptions, load
from tests.bulk.support import stub, table_on


async def test_a_paused_input_does_not_hold_back_what_it_gave() -> None:
    answered = asyncio.Event()

    async def items() -> AsyncIterator[dict[str, Any]]:
        yield {"PartitionKey": "p", "RowKey": "1"}
        await asyncio.wait_for(answered.wait(), timeout=10)  # the row is written first
        yield {"PartitionKey": "p", "RowKey": "2"}

    async with stub() as server, table_on(server, "paused") as table:
        await table.create_table()
        result = await load(
            table,
            items(),
            options=BulkOptions(linger=0.05),
            on_result=lambda index, outcome: answered.set(),
        )
        assert result.ok
        assert result.written == 2
