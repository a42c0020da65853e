"""The rows of ``stub_vs_azurite.py``'s query figures (its ``make_entity``: a string, an
Int32, a Double, a Boolean, an Int64, a DateTime and a 40-character note) for the stub
seeding script (``_seeded_stub.py``): one partition of 3,000 rows, as that benchmark reads.

Example::

    >>> entity(5)["RowKey"], sorted(entity(5))[:3]
    ('00000005', ['Active', 'Big', 'Count'])
"""

from __future__ import annotations

from typing import Any

from stub_vs_azurite import QUERY_PK, QUERY_ROWS, make_entity

TABLE = "benchtable"
PER_PARTITION = QUERY_ROWS


def entity(i: int) -> dict[str, Any]:
    """Row ``i`` of the query partition (rows past it in partitions of their own)."""
    pk = QUERY_PK if i < QUERY_ROWS else f"{QUERY_PK}{i // QUERY_ROWS:04d}"
    return make_entity(pk, f"{i:08d}", i)
